"""From the LMS download to files that import (issue 31): a Canvas download still zipped and a Moodle download
in folders, each graded with its LMS's roster, give lms-canvas.csv / lms-moodle.csv that each importer takes
whole (tests/test_lms_roster.py's importer models), a roster student with no submission at 0, lateness and
the problems shown, and the console in the course's language."""

import csv
import io
import json
import subprocess
import sys
import zipfile

import pytest

from autograder import KIT
from autograder.judge import sample
from autograder.lms.identity import read_index
from tests.lms_fixtures import CANVAS_ROSTER, MOODLE_ROSTER
from tests.test_lms_roster import canvas_import, moodle_import


def files_of(recipe: str, tmp) -> dict[str, bytes]:
    folder = sample.make(recipe, tmp / recipe) or tmp / recipe
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.py"))}


def grade(subs, out, roster, *extra):
    # --jobs 1: a small class (docs/speed.md, "One grading process for a small class")
    cmd = [sys.executable, "-m", "autograder", "grade", str(subs), "--out", str(out), "--jobs", "1"]
    cmd += ["--roster", str(roster), "--timeout", "3", *extra]
    return subprocess.run(cmd, cwd=KIT, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("lms")
    reference, stubs = files_of("reference", base), files_of("stubs", base)
    # Canvas: one zip of flat files; Ana late, with a re-upload; Íñigo on time; Luis submitted nothing
    with zipfile.ZipFile(base / "submissions.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in reference.items():
            zf.writestr(f"garcialopezana_late_4242_{880000 + len(name)}_{name}", data)
        zf.writestr("garcialopezana_late_4242_880100_mask-1.py", reference["mask.py"])
        for name, data in stubs.items():
            zf.writestr(f"onateinigo_4343_{881000 + len(name)}_{name}", data)
    (base / "canvas.csv").write_text(CANVAS_ROSTER, encoding="utf-8")
    canvas = grade(base / "submissions.zip", base / "canvas", base / "canvas.csv", "--lang", "es")
    # Moodle: a folder per student
    moodle_subs = base / "moodle_subs"
    for full, n, files in (("Ana García López", 11, reference), ("Íñigo Oñate", 12, stubs)):
        folder = moodle_subs / f"{full}_{n}_assignsubmission_file_"
        folder.mkdir(parents=True)
        for name, data in files.items():
            (folder / name).write_bytes(data)
    (base / "moodle.csv").write_text(MOODLE_ROSTER, encoding="utf-8")
    moodle = grade(moodle_subs, base / "moodle", base / "moodle.csv", "--scale", "10")
    return {"base": base, "canvas": canvas, "moodle": moodle}


def rows(path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))


def test_a_zipped_canvas_download_imports_into_canvas(graded):
    base, done = graded["base"], graded["canvas"]
    assert done.returncode == 0, done.stderr[-3000:]
    out = base / "canvas"
    export = rows(out / "lms-canvas.csv")
    assert export[0] == [
        "Student",
        "ID",
        "SIS User ID",
        "SIS Login ID",
        "Section",
        "Práctica 2 (777)",
    ]
    grades, unknown = canvas_import(export, CANVAS_ROSTER)
    assert unknown == []
    assert grades == {
        "4242": export[1][5],
        "4343": "0",
        "4444": "0",
    }  # Ana full marks, Luis no submission
    index = read_index(out)
    ana = next(m for m in index.members if m.user_id == "4242")
    assert ana.late is True and ana.display == "García López, Ana"
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    luis = next(s for s in report["students"] if s["name"] == "Pérez, Luis")
    assert luis["missing"] and luis["total"] == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Pérez, Luis (sin entrega)" in page and "García López, Ana (con retraso)" in page
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as f:
        book = {r["student"]: r for r in csv.DictReader(f)}
    assert (
        book["García López, Ana"]["late"] == "late"
        and book["Pérez, Luis"]["note"] == "no submission"
    )
    # the console, in Spanish (its table folds long names at 80 columns: a word at a time)
    assert "retraso" in done.stdout and "libro de notas" in done.stdout


def test_a_moodle_download_imports_into_moodle_on_a_scale_of_ten(graded):
    base, done = graded["base"], graded["moodle"]
    assert done.returncode == 0, done.stderr[-3000:]
    export = rows(base / "moodle" / "lms-moodle.csv")
    assert export[0] == ["Email address", "Transformer"]
    assert moodle_import(export, MOODLE_ROSTER) == {
        "ana@uni.es": "10",
        "inigo@uni.es": "0",
        "luis@uni.es": "0",
    }
    sheet = (base / "moodle" / "lms-moodle-spreadsheet.csv").read_bytes()
    assert sheet == b"\xef\xbb\xbf" + (base / "moodle" / "lms-moodle.csv").read_bytes()
