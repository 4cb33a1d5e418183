"""The property suite judged: full marks for the reference, zero for the stubs, every cataloged bug caught."""
from pathlib import Path

import pytest

from autograder.bugs import catalog, make_submission
from autograder.components import NAMES
from autograder.properties import core
from autograder.target import InProcessTarget

ROOT = Path(__file__).resolve().parent.parent
PROPERTIES = core.load(include_hidden=True)


def run(target, component):
    return [core.run_property(p, target) for p in PROPERTIES if p.component == component]


@pytest.fixture(scope="module")
def reference():
    return InProcessTarget(ROOT / "solutions", "reference")


@pytest.fixture(scope="module")
def stubs():
    return InProcessTarget(ROOT / "exercises", "stubs")


@pytest.mark.parametrize("component", NAMES)
def test_reference_scores_full_marks(reference, component):
    outcomes = run(reference, component)
    assert outcomes, f"no properties for {component}"
    failed = [f"{o.property.name}: {o.status}: {o.message} | {o.example}" for o in outcomes if not o.passed]
    assert not failed, "\n".join(failed)


@pytest.mark.parametrize("component", NAMES)
def test_stubs_score_zero(stubs, component):
    outcomes = run(stubs, component)
    earned = [o.property.name for o in outcomes if o.passed]
    assert not earned, f"the untouched stub earns points in {component}: {earned}"
    assert all(o.status in ("not_implemented", "missing") or "NotImplementedError" in o.message
               for o in outcomes), [o.message for o in outcomes]


@pytest.fixture(scope="module")
def pass_stubs(tmp_path_factory):
    """The stubs with every `raise NotImplementedError` replaced by `pass`: code that does nothing."""
    folder = tmp_path_factory.mktemp("pass_stubs")
    for f in (ROOT / "exercises").glob("*.py"):
        (folder / f.name).write_text(f.read_text().replace("raise NotImplementedError", "pass"))
    return InProcessTarget(folder, "pass-stubs")


@pytest.mark.parametrize("component", NAMES)
def test_stubs_that_pass_score_zero(pass_stubs, component):
    """Scored as check, grade and nbgrader score (core.require_behaviour): no static point without behaviour."""
    outcomes = core.require_behaviour(run(pass_stubs, component))
    earned = [o.property.name for o in outcomes if o.passed]
    assert not earned, f"a stub that does nothing earns points in {component}: {earned}"
    static = [o for o in outcomes if core.is_static(o.property)]
    assert all("by-hand point only together" in o.message or o.status != "failed" for o in static)


@pytest.mark.parametrize("bug", catalog(), ids=lambda b: b.id)
def test_bug_is_caught_and_named(bug, tmp_path):
    target = InProcessTarget(make_submission(bug, ROOT / "solutions", tmp_path / "sub"), bug.name)
    outcomes = run(target, bug.component)
    failed = [o for o in outcomes if not o.passed]
    assert failed, f"{bug.id} ({bug.description}) loses no points in {bug.component}"
    hints = [o.hint for o in failed]
    assert any(bug.hint.lower() in h.lower() for h in hints), (
        f"{bug.id}: no failing property's hint mentions {bug.hint!r}; hints were:\n" + "\n".join(hints))


def test_catalog_is_broad():
    bugs = catalog()
    assert len(bugs) >= 30
    assert {b.component for b in bugs} == set(NAMES), "every component needs cataloged bugs"
