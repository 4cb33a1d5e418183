"""Every route gives a student the same words (issue 25): one failing submission, one property, the same hint,
glossary sentence included, from `check`, the bundle's pytest, `grade` (results.json and feedback.md) and a
notebook's check cell. They share one pipeline of outcome passes (autograder/passes.py)."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from autograder import KIT, i18n, registry, release
from autograder.check import run_suite
from autograder.judge.limits import Limits
from autograder.judge.scheduler import Options, grade
from autograder.lms.identity import folder_of
from autograder.notebooks import cells, course, kernel
from autograder.suite import core

# The course notebooks call multi_head's output projection `attention` (autograder/glossary.py).
EDIT = ("return self.w_o(merged)", "return self.attention(merged)")
PROPERTY = "multi_head::multi_head_equals_torch"
SENTENCE = "`attention` is `w_o` here."


def env():
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "KIT_"))} | {
        "COLUMNS": "250"
    }


@pytest.fixture
def english():
    i18n.set_language("en")
    yield
    i18n.set_language(None)


def test_check_pytest_grade_and_a_notebook_cell_give_the_same_hint(tmp_path, monkeypatch, english):
    folder = tmp_path / "subs" / "course_names"
    shutil.copytree(KIT / "solutions", folder, ignore=shutil.ignore_patterns("__pycache__"))
    path = folder / "multi_head.py"
    path.write_text(path.read_text().replace(*EDIT))

    outcomes, _ = run_suite(folder, ["multi_head"], include_hidden=False)
    checked = next(o for o in outcomes if o.property.id == PROPERTY)
    hint = checked.hint
    assert hint.startswith(SENTENCE + " "), hint

    # grade: the outcome, results.json's hint and feedback.md
    graded = grade(
        tmp_path / "subs", tmp_path / "out", Options(jobs=1, limits=Limits(op_timeout=3), lang="en")
    )
    judged = next(o for o in graded["course_names"].outcomes if o.property.id == PROPERTY)
    assert judged.hint == hint
    tests = json.loads((folder_of(tmp_path / "out", "course_names") / "results.json").read_text())[
        "tests"
    ]
    assert next(t for t in tests if t["name"] == PROPERTY)["extra_data"]["hint"] == hint
    assert SENTENCE in (folder_of(tmp_path / "out", "course_names") / "feedback.md").read_text()

    # the bundle's pytest on the same folder
    bundle = release.build(tmp_path / "bundle")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--lang", "en", "-k", PROPERTY.split("::")[1]],
        cwd=bundle,
        env=env() | {"KIT_SUBMISSION": str(folder)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1 and f"hint: {hint}" in proc.stdout, proc.stdout[-3000:]

    # a notebook's check cell (the kernel), with the same edit in its solution cell
    p = core.REGISTRY[PROPERTY]
    nb = course.notebook("multi_head", [p], 4)
    for c in cells.solution_cells(nb):
        if EDIT[0] in cells.source_text(c):
            c["source"] = cells.source_text(c).replace(*EDIT)
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    (notebooks / "multi_head.ipynb").write_text(json.dumps(nb))
    monkeypatch.chdir(notebooks)
    with pytest.raises(kernel.PropertyFailed) as failed:
        kernel.check("multi_head", p.name)
    assert f"hint: {hint}" in failed.value.text


def test_the_judges_outcome_record_crosses_whole():
    """An Outcome -> OutcomeRecord -> (a trusted pickle, as frames.write_trusted sends it) -> Outcome keeps
    every field the feedback shows; the record is the one typed home of those fields."""
    import dataclasses
    import pickle

    from autograder.judge.records import OutcomeRecord

    p = registry.load(include_hidden=False, components=["multi_head"])[0]
    o = core.Outcome(p, core.Status.ERROR, "message", "hint", "example", "detail", 0.25)
    back = pickle.loads(pickle.dumps(OutcomeRecord.of(o))).outcome()
    fields = [f.name for f in dataclasses.fields(core.Outcome) if f.name != "property"]
    assert [getattr(back, f) for f in fields] == [getattr(o, f) for f in fields]
    assert (
        back.property.id,
        back.property.points,
        back.property.visible,
        back.property.summary,
    ) == (
        p.id,
        p.points,
        p.visible,
        p.summary,
    )
