"""The judge in Spanish (issue 8): `grade --lang es` gives the same grades as `--lang en`, and what a student
reads (feedback.md, feedback.html, results.json) is in Spanish, including the messages made inside the sandboxed
workers (a stub's NotImplementedError, a forbidden call) and by the judge about them (a worker that exited)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from autograder import KIT
from autograder.judge import sample
from autograder.judge.limits import Limits
from autograder.judge.scheduler import Options, grade
from autograder.lms.identity import folder_of

CLASS = {
    "reference": "reference",
    "stubs": "stubs",
    "merge": "bug:multi_head:merge_without_transpose",  # the picture's caption: weights match, output not
    "forbidden": "hostile:forbidden_direct",  # refused inside the worker, by the by-hand guard
    "exit": "hostile:exit_at_import",  # the judge's own words about a worker that exited
}
# English frames of messages, feedback and results.json that a Spanish student must not read. (Properties'
# summaries are the suite's and are checked by tests/test_i18n_suite.py.)
ENGLISH_FRAMES = (
    "is not implemented yet",
    "raises NotImplementedError)",
    "is forbidden in",
    "this exercise asks for it by hand",
    "the process exited",
    "during import of",
    "hint:",
    "Hint:",
    "smallest failing input",
    "Smallest failing input",
    "your code:",
    "Your code:",
    ", line ",
    "Transformer kit: feedback",
    "properties passed",
    "Your multi-head attention, pictured",
    "Graded with the reference",
    "the process died",
    "Your attention weights match the reference",
)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The class graded twice: in Spanish through the command line, in English through the API."""
    base = tmp_path_factory.mktemp("judge_i18n")
    subs = sample.materialize(CLASS, base / "subs")
    cmd = [sys.executable, "-m", "autograder", "grade", str(subs), "--out", str(base / "es")]
    # --jobs 1: a small class (docs/speed.md, "One grading process for a small class")
    cmd += ["--jobs", "1", "--timeout", "3", "--quiet", "--lang", "es"]
    done = subprocess.run(cmd, cwd=KIT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    grade(subs, base / "en", Options(jobs=1, limits=Limits(op_timeout=3), lang="en"))
    return base


def read(base, lang: str, student: str, name: str) -> str:
    return (folder_of(base / lang, student) / name).read_text()


def verdicts(base, lang: str, student: str) -> tuple[float, dict]:
    res = json.loads(read(base, lang, student, "results.json"))
    return res["score"], {t["name"]: (t["score"], t["status"]) for t in res["tests"]}


@pytest.mark.parametrize("student", CLASS)
def test_the_same_grades_in_both_languages(graded, student):
    assert verdicts(graded, "es", student) == verdicts(graded, "en", student)
    assert (graded / "es" / "gradebook.csv").read_text() == (
        graded / "en" / "gradebook.csv"
    ).read_text()


@pytest.mark.parametrize("student", CLASS)
def test_what_a_student_reads_is_spanish(graded, student):
    texts = {
        "feedback.md": read(graded, "es", student, "feedback.md"),
        "feedback.html": read(graded, "es", student, "feedback.html"),
        "results.json": "\n".join(
            t["output"] for t in json.loads(read(graded, "es", student, "results.json"))["tests"]
        ),
    }
    for name, text in texts.items():
        found = [frame for frame in ENGLISH_FRAMES if frame in text]
        assert not found, f"{student}/{name} has English: {found}"
    assert '<html lang="es">' in texts["feedback.html"]
    assert "Kit del Transformer: comentarios para" in texts["feedback.md"]


def test_messages_made_in_the_workers_and_about_them_are_spanish(graded):
    stubs = read(graded, "es", "stubs", "feedback.md")
    assert "todavía no está implementado (lanza NotImplementedError)" in stubs
    # a stub's message is the judge's own (no traceback: docs/judge.md, the kit's kinds); a student's code
    # shows in a forbidden call's frames
    assert "pista: " in stubs
    forbidden = read(graded, "es", "forbidden", "feedback.md")
    assert "tu código:" in forbidden and ", línea " in forbidden
    outputs = json.loads(read(graded, "es", "stubs", "results.json"))["tests"]
    assert any("pista: " in t["output"] for t in outputs)
    assert "está prohibido usar" in forbidden and "este ejercicio pide hacerlo a mano" in forbidden
    exited = read(graded, "es", "exit", "feedback.md")
    assert "el proceso salió (sys.exit) durante la importación de attention.py" in exited
    merge = read(graded, "es", "merge", "feedback.md")
    assert "Tus pesos de atención coinciden con la referencia, pero tu salida no" in merge


def test_english_stays_english(graded):
    stubs = read(graded, "en", "stubs", "feedback.md")
    assert "is not implemented yet (raises NotImplementedError)" in stubs
    assert "  - hint: " in stubs
    assert '<html lang="en">' in read(graded, "en", "stubs", "feedback.html")
    exited = read(graded, "en", "exit", "feedback.md")
    assert "the process exited (sys.exit) during import of attention.py" in exited
    assert "está" not in read(graded, "en", "forbidden", "feedback.md")
