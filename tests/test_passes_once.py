"""An outcome is finished once (issue 36): on every route (`check`, the bundle's pytest through its plugin, the
judge's outputs, a notebook's check cell) each outcome goes through each pass of autograder/passes.py once, at
one point, and a second pass is an error (core.PassError), never a silent no-op.

One submission has all that the passes act on: a failure with a glossary sentence (multi_head calls its output
projection `attention`), add_norm's code doing nothing (its failures, and its static by-hand point refused for
want of a passed behavioural one) and encoder, which uses both, failing because of them (pending: blamed).
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from types import SimpleNamespace

import pytest

from autograder import KIT, i18n, passes, registry
from autograder.check import run_suite
from autograder.suite import core

COMPONENTS = ["multi_head", "add_norm", "encoder"]  # in the suite's order
SENTENCE = "`attention` is `w_o` here."


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("once") / "sub"
    shutil.copytree(KIT / "solutions", folder, ignore=shutil.ignore_patterns("__pycache__"))
    path = folder / "multi_head.py"
    path.write_text(
        path.read_text().replace("return self.w_o(merged)", "return self.attention(merged)")
    )
    stub = (KIT / "exercises" / "add_norm.py").read_text()
    (folder / "add_norm.py").write_text(stub.replace("raise NotImplementedError", "pass"))
    return folder


@pytest.fixture(scope="module")
def checked(folder):
    with i18n.chosen("en"):
        outcomes, _ = run_suite(folder, COMPONENTS, include_hidden=False, jobs=1)
    return [o for o in outcomes if not o.property.integration]


def once_each(o: core.Outcome, blame: bool = True) -> None:
    """o went through each pass once; a failure through blame once (a passed outcome has nothing to blame)."""
    counts = Counter(o.passes)
    expected = {"names": 1, "words": 1, "require_behaviour": 1, "rank": 1}
    if blame and not o.passed:
        expected["blame"] = 1
    assert counts == expected, (o.property.id, o.passes)


FAILING = re.compile(r"which fails? \d+ propert")


def words(o: core.Outcome, but: re.Pattern | None = None) -> tuple:
    message = but.sub("", o.message) if but else o.message
    return (o.property.id, str(o.status), message, o.hint, o.example)


def test_the_submission_has_what_every_pass_acts_on(checked):
    by = {o.property.id: o for o in checked}
    glossary = by["multi_head::multi_head_equals_torch"]
    assert glossary.hint.count(SENTENCE) == 1, glossary.hint
    refused = by["add_norm::add_norm_is_written_by_hand"]
    assert refused.status == core.Status.FAILED
    assert refused.message == core.NO_BEHAVIOUR.format(component="add_norm")
    blocked = [o for o in checked if o.status == core.Status.BLOCKED]
    assert blocked and {o.property.component for o in blocked} == {"encoder"}
    assert all(o.message.count("encoder uses your") == 1 for o in blocked)


def test_check_finishes_each_outcome_once(checked):
    for o in checked:
        once_each(o)


def test_a_second_finish_is_an_error_not_a_no_op(checked):
    with pytest.raises(core.PassError):
        passes.finish(checked[:1])
    made = passes.made(core.Outcome(checked[0].property, core.Status.FAILED, "m"))
    with pytest.raises(core.PassError):
        passes.made(made)
    with pytest.raises(core.PassError, match="made"):  # finished before it was made
        passes.finish([core.Outcome(checked[0].property, core.Status.FAILED, "m")])


def test_the_plugin_finishes_each_component_once_with_checks_words(folder, checked, monkeypatch):
    """The bundle's pytest (pytest_plugin.KitPlugin): each component's outcomes finished once, at its first
    test, whatever the number of its tests; each test reports what `check` says."""
    from autograder.pytest_plugin import KitPlugin

    monkeypatch.setenv("KIT_SUBMISSION", str(folder))
    finishes = []
    real = passes.finish

    def counted(outcomes, blame=None):
        finishes.append([o.property.id for o in outcomes])
        return real(outcomes, blame)

    monkeypatch.setattr(passes, "finish", counted)
    props = registry.load(include_hidden=False, components=COMPONENTS)
    config = SimpleNamespace(getoption=lambda name: 1 if name == "jobs" else None)
    kit = KitPlugin(config)
    items = [SimpleNamespace(callspec=SimpleNamespace(params={"prop": p})) for p in props]
    with i18n.chosen("en"):
        kit.pytest_collection_finish(SimpleNamespace(items=items))
        try:
            for p in props:
                try:
                    kit.check(p)
                except (pytest.skip.Exception, pytest.fail.Exception):
                    pass
        finally:
            kit.pytest_unconfigure(config)
    assert [ids[0].split("::")[0] for ids in finishes] == COMPONENTS
    assert sorted(i for ids in finishes for i in ids) == sorted(p.id for p in props)
    for o in kit.outcomes:
        once_each(o)
    # the same words as `check` but the count of the dependencies' failures: the plugin finishes add_norm
    # before encoder is blamed, and its refused static point is counted among them (as before issue 36)
    assert [words(o, FAILING) for o in kit.outcomes] == [words(o, FAILING) for o in checked]


def test_the_judges_outputs_finish_each_outcome_once(checked):
    """outputs.assemble finishes what the grading process made (judge/grading_process: passes.made as it
    writes each record); the judge blames nothing (it grades each component with the reference's files)."""
    from autograder.judge import outputs
    from autograder.judge.records import OutcomeRecord, SectionResult

    made = [passes.made(core.Outcome(o.property, core.Status.FAILED, o.message)) for o in checked]
    section = SimpleNamespace(key="k", label="all", name="all", picture=False)
    done = {"k": SectionResult("k", [OutcomeRecord.of(o) for o in made])}
    r = outputs.StudentResult("s")
    outputs.assemble(r, [section], done)
    assert len(r.outcomes) == len(made)
    for o in r.outcomes:
        once_each(o, blame=False)
    with pytest.raises(core.PassError):
        passes.finish(r.outcomes)


def test_a_notebook_check_cell_finishes_copies_once(folder, monkeypatch, tmp_path):
    """A notebook's cells run one at a time, in any order, again: each check cell finishes copies of the
    outcomes its code's cells made so far, each copy once; what it keeps is only made."""
    import json

    from autograder.notebooks import cells, course, kernel

    finished = []
    real = passes.finish

    def spied(outcomes, blame=None):
        done = real(outcomes, blame)
        finished.append(done)
        return done

    monkeypatch.setattr(passes, "finish", spied)
    monkeypatch.setattr(kernel, "reference_dir", lambda: None)  # a student's environment
    props = registry.load(include_hidden=False, components=["multi_head"])
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for number, name in enumerate(("attention", "multi_head")):
        nb = course.notebook(name, registry.load(include_hidden=False, components=[name]), number)
        if name == "multi_head":
            for c in cells.solution_cells(nb):
                text = cells.source_text(c)
                c["source"] = text.replace(
                    "return self.w_o(merged)", "return self.attention(merged)"
                )
        (notebooks / f"{name}.ipynb").write_text(json.dumps(nb))
    monkeypatch.chdir(notebooks)
    with i18n.chosen("en"):
        for p in props[:3] + props[:1]:  # the first cell again
            try:
                kernel.check("multi_head", p.name)
            except kernel.PropertyFailed as failed:
                assert failed.text.count(SENTENCE) <= 1
    assert [len(done) for done in finished] == [1, 2, 3, 3]
    for done in finished:
        for o in done:
            once_each(o)
    for seen in kernel._outcomes.values():
        for o in seen.values():
            assert "require_behaviour" not in o.passes and o.passes.count("words") == 1, o.passes
