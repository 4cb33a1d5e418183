"""Each component's properties run once per test session on each submission the suite is judged on: the
meta-tests (test_suite_meta.py) and the Spanish check (test_i18n_suite.py) read the same English runs.

A submission is named by a label: "reference", "stubs", "pass-stubs" (the stubs with every `raise
NotImplementedError` replaced by `pass`: code that does nothing) or a cataloged bug's id (the reference with
that one bug planted). Runs are deterministic (derandomized Hypothesis, fixed seeds), so one run stands for all.
"""

from __future__ import annotations

import copy

from autograder import KIT, i18n, registry
from autograder.bugs import catalog, make_submission
from autograder.report.signatures import fixed_copy_task
from autograder.student_code import InProcessStudentCode, StudentCode
from autograder.suite import core

PROPERTIES = registry.load(include_hidden=True)
BUGS = {b.id: b for b in catalog()}
_students: dict[str, StudentCode] = {}
_runs: dict[tuple[str, str], list[core.Outcome]] = {}


def student(label: str, tmp_path_factory) -> StudentCode:
    """The submission a label names, made once per session (bugs and pass-stubs in a session temp folder)."""
    if label not in _students:
        if label == "reference":
            folder = KIT / "solutions"
        elif label == "stubs":
            folder = KIT / "exercises"
        elif label == "pass-stubs":
            folder = tmp_path_factory.mktemp("pass_stubs")
            for f in (KIT / "exercises").glob("*.py"):
                (folder / f.name).write_text(
                    f.read_text().replace("raise NotImplementedError", "pass")
                )
        else:
            bug = BUGS[label]
            folder = make_submission(
                bug, KIT / "solutions", tmp_path_factory.mktemp(bug.name) / "sub"
            )
        _students[label] = InProcessStudentCode(folder, label)
    return _students[label]


def run(code: StudentCode, component: str) -> list[core.Outcome]:
    """One component's properties, visible and hidden, in the current language."""
    return [core.run_property(p, code) for p in PROPERTIES if p.component == component]


def english(label: str, component: str, tmp_path_factory) -> list[core.Outcome]:
    """The component's outcomes on the labelled submission, in English (copies: a caller may score them)."""
    key = (label, component)
    if key not in _runs:
        with i18n.chosen("en"), fixed_copy_task():
            _runs[key] = run(student(label, tmp_path_factory), component)
    return [copy.copy(o) for o in _runs[key]]
