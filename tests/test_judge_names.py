"""The judge owns its namespace (issue 32): whatever a student's folder is called, the batch finishes, every
output names every student, and their files live under an id the judge made. The names are the hostile example
examples/hostile/names.toml, made into folders at test time (some cannot be committed)."""

import csv
import json
import os
import shutil
import subprocess
import sys
import tomllib

import pytest

from autograder import KIT
from autograder.judge import sample
from autograder.judge.outputs import read_gradebook
from autograder.lms.identity import ID_PATTERN, display, read_index, submission_id

RECIPE = KIT / "examples" / "hostile" / "names.toml"
ENTRIES = tomllib.loads(RECIPE.read_text())["folder"]
# the judge's own names in OUT: nothing else may sit beside them but the students' ids
JUDGE_FILES = {
    "gradebook.csv",
    "timing.json",
    "class.json",
    "report.html",
    "report.json",
    "lms-canvas.csv",
    "lms-moodle.csv",
    "lms-canvas-spreadsheet.csv",
    "lms-moodle-spreadsheet.csv",
    "logs",
}

STUDENT_FILES = {"feedback.html", "feedback.md", "results.json", "attention_weights.png"}


def folder_name(entry: dict) -> str:
    """The entry's name as os.listdir gives it (bytes that are not UTF-8 decoded with surrogateescape)."""
    if "hex" in entry:
        return os.fsdecode(bytes.fromhex(entry["hex"]))
    return entry["name"]


GRADED = [folder_name(e) for e in ENTRIES if e.get("expect") != "problem"]
REFERENCE = [folder_name(e) for e in ENTRIES if e.get("reference")]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("names")
    subs, out = base / "subs", base / "out"
    subs.mkdir()
    for entry in ENTRIES:
        name = folder_name(entry)
        sample.make("reference" if entry.get("reference") else "stubs", subs / name)
    # --jobs 1: a small class (docs/speed.md, "One grading process for a small class")
    cmd = [sys.executable, "-m", "autograder", "grade", str(subs), "--out", str(out), "--jobs", "1"]
    cmd += ["--lang", "es", "--timeout", "3"]
    done = subprocess.run(cmd, cwd=KIT, capture_output=True, text=True, timeout=900)
    return {"base": base, "subs": subs, "out": out, "done": done}


def test_the_batch_finishes_and_every_student_has_their_files_under_an_id(graded):
    out, done = graded["out"], graded["done"]
    assert done.returncode == 0, done.stderr[-3000:]
    index = read_index(out)
    assert index is not None
    by_source = {m.source: m for m in index.members}
    assert set(by_source) == set(GRADED)
    for name in GRADED:
        sid = by_source[name].id
        assert ID_PATTERN.match(sid) and sid == submission_id(name)
        files = {p.name for p in (out / sid).iterdir()}
        assert {"feedback.html", "feedback.md", "results.json"} <= files <= STUDENT_FILES
        assert (out / "logs" / f"{sid}.txt").is_file()
    # nothing in OUT but the judge's files and the ids; nothing in OUT/logs but the ids' logs
    ids = {m.id for m in index.members}
    assert {p.name for p in out.iterdir()} == JUDGE_FILES | ids
    assert {p.name for p in (out / "logs").iterdir()} == {f"{i}.txt" for i in ids}
    # the case twins are two students, and said to be alike
    assert by_source["Ana"].id != by_source["ana"].id
    assert any("Ana" in p and "ana" in p for p in index.problems)
    # the hidden folder is not graded, but said
    assert any(".hidden" in p for p in index.problems)


def test_every_student_is_in_the_gradebook_the_report_and_the_lms_files(graded):
    out = graded["out"]
    index = read_index(out)
    ids = {m.id for m in index.members}
    book = read_gradebook(out / "gradebook.csv")
    assert set(book) == ids  # the (max) row has no id; a student called "(max)" has one
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows[0]["student"] == "(max)" and not rows[0]["id"] and len(rows) == 1 + len(ids)
    for m in index.members:
        full = float(rows[0]["total"]) if m.source in REFERENCE else 0.0
        assert float(book[m.id]["total"]) == full, m.source
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert {s["id"] for s in report["students"]} == ids
    page = (out / "report.html").read_text(encoding="utf-8")
    for m in index.members:
        assert f'href="{m.id}/feedback.html"' in page
    assert "<img src=x" not in page
    with open(out / "lms-canvas.csv", newline="", encoding="utf-8") as f:
        canvas = list(csv.reader(f))
    assert len(canvas) == 2 + len(ids)
    # one row Canvas reads as the maxima: its own (gradebook_importer.rb: a first cell with "Points Possible")
    assert [r[0] for r in canvas if "Points Possible" in r[0]] == ["    Points Possible"]
    assert not any(c.startswith(("=", "+", "@")) for row in canvas for c in row)
    assert (out / "lms-canvas-spreadsheet.csv").read_bytes().startswith(b"\xef\xbb\xbf")


def test_names_are_shown_escaped(graded):
    out, done = graded["out"], graded["done"]
    index = read_index(out)
    shown = {m.display for m in index.members}
    assert "\\x1b]0;PWNED\\x07red" in shown and "two\\nlines" in shown and "caf\\xe9" in shown
    assert all(len(s) <= 80 for s in shown)
    # the console: no control character of a name reaches the terminal
    assert "\x1b]0;PWNED" not in done.stdout and "\\x1b]0;PWNED" in done.stdout
    assert display("a\u202eb") == "a\\u202eb"  # a direction change is a control too


def test_the_console_summary_speaks_the_course_language(graded):
    stdout = graded["done"].stdout
    assert "libro de notas" in stdout and "estudiante" in stdout
    assert "entregas calificadas" in stdout


def test_grade_only_finds_a_student_by_their_folder_name(graded, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(graded["out"], out)
    before = read_gradebook(out / "gradebook.csv")
    cmd = [sys.executable, "-m", "autograder", "grade", str(graded["subs"]), "--out", str(out)]
    cmd += ["--only", "(max)", "--no-report", "--quiet", "--timeout", "3"]
    done = subprocess.run(cmd, cwd=KIT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    after = read_gradebook(out / "gradebook.csv")
    assert set(after) == set(before)
    assert after[submission_id("(max)")]["student"] == "(max)"
