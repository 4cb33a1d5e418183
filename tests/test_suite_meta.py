"""The property suite judged: full marks for the reference, zero for the stubs, every cataloged bug caught."""

import pytest
import suite_runs

from autograder import KIT, registry
from autograder.bugs import catalog, make_submission
from autograder.components import NAMES
from autograder.student_code import InProcessStudentCode
from autograder.suite import core


@pytest.fixture
def run(tmp_path_factory):
    """run(label, component): the component's English outcomes on a submission (tests/suite_runs.py: once per
    session, shared with the Spanish check)."""
    return lambda label, component: suite_runs.english(label, component, tmp_path_factory)


@pytest.mark.parametrize("component", NAMES)
def test_reference_scores_full_marks(run, component):
    outcomes = run("reference", component)
    assert outcomes, f"no properties for {component}"
    failed = [
        f"{o.property.name}: {o.status}: {o.message} | {o.example}"
        for o in outcomes
        if not o.passed
    ]
    assert not failed, "\n".join(failed)


@pytest.mark.parametrize("component", NAMES)
def test_stubs_score_zero(run, component):
    outcomes = run("stubs", component)
    earned = [o.property.name for o in outcomes if o.passed]
    assert not earned, f"the untouched stub earns points in {component}: {earned}"
    assert all(
        o.status in ("not_implemented", "missing") or "NotImplementedError" in o.message
        for o in outcomes
    ), [o.message for o in outcomes]


@pytest.mark.parametrize("component", NAMES)
def test_stubs_that_pass_score_zero(run, component):
    """The stubs with every `raise NotImplementedError` replaced by `pass` (code that does nothing), scored as
    check, grade and nbgrader score (core.require_behaviour): no static point without behaviour."""
    outcomes = core.require_behaviour(run("pass-stubs", component))
    earned = [o.property.name for o in outcomes if o.passed]
    assert not earned, f"a stub that does nothing earns points in {component}: {earned}"
    static = [o for o in outcomes if core.is_static(o.property)]
    assert all("by-hand point only together" in o.message or o.status != "failed" for o in static)


@pytest.mark.parametrize("bug", catalog(), ids=lambda b: b.id)
def test_bug_is_caught_and_named(bug, run):
    outcomes = run(bug.id, bug.component)
    failed = [o for o in outcomes if not o.passed]
    assert failed, f"{bug.id} ({bug.description}) loses no points in {bug.component}"
    hints = [o.hint for o in failed]
    assert any(bug.hint.lower() in h.lower() for h in hints), (
        f"{bug.id}: no failing property's hint mentions {bug.hint!r}; hints were:\n"
        + "\n".join(hints)
    )


@pytest.mark.parametrize("bug", catalog(), ids=lambda b: b.id)
def test_the_reports_signature_of_the_bug_is_current(bug, run):
    """The class report groups a student's messages by what each bug makes the suite say
    (autograder/report/signatures.json): the file says what the suite says today."""
    from autograder.report import signatures

    recorded = sorted(signatures.load().get(bug.id, ()))
    assert recorded == signatures.of_outcomes(run(bug.id, bug.component)), (
        "stale: python -m autograder.report.signatures --write"
    )


def test_catalog_is_broad():
    bugs = catalog()
    assert len(bugs) >= 30
    assert {b.component for b in bugs} == set(NAMES), "every component needs cataloged bugs"


# One mistake, one deduction (Bug.one_deduction): a slip that cuts across a function fails the one property
# that owns it, not every property that reads the result.
@pytest.mark.parametrize("bug", [b for b in catalog() if b.one_deduction], ids=lambda b: b.id)
def test_cross_cutting_slip_costs_one_property(bug, run):
    failed = [o.property.name for o in run(bug.id, bug.component) if not o.passed]
    assert failed == [bug.one_deduction], failed


# Mistakes a student must be able to see in the self-check (Bug.caught_visibly), not only in the grade.
@pytest.mark.parametrize("bug", [b for b in catalog() if b.caught_visibly], ids=lambda b: b.id)
def test_bug_is_caught_by_a_visible_property(bug, run):
    failed = [o for o in run(bug.id, bug.component) if not o.passed and o.property.visible]
    assert any(bug.hint.lower() in o.hint.lower() for o in failed), [
        (o.property.name, o.hint) for o in failed
    ]


def test_bug_expectations_name_real_properties():
    """A bug's one_deduction names a visible-or-hidden property of its own component (a typo would make its
    test fail for the wrong reason)."""
    ids = {p.id for p in registry.load(include_hidden=True)}
    wrong = [
        b.id
        for b in catalog()
        if b.one_deduction and core.property_id(b.component, b.one_deduction) not in ids
    ]
    assert not wrong, wrong


def test_nan_is_reported_as_nan_before_any_other_diagnosis(run):
    """Issue 7 item 2: an unguarded softmax (a fully masked row gives NaN) used by multi_head is reported as a NaN,
    never as "dropout is active in eval mode" (NaN != NaN made two equal runs look different)."""
    failed = [o for o in run("attention:fully_masked_nan", "multi_head") if not o.passed]
    assert any(o.property.name == "multi_head_dropout_is_off_in_eval" for o in failed)
    for o in failed:
        assert "your output has NaN at [" in o.message, (o.property.name, o.message)
        assert "fully masked row" in o.hint and "dropout" not in o.hint, (o.property.name, o.hint)


@pytest.mark.parametrize(
    "bug_id, prop_name, words",
    [
        (
            "attention_numpy:attention_no_scale",
            "np_attention_equals_expected",
            ["query=np.array(", "key=np.array(", "value=np.array(", "mask="],
        ),
        (
            "multi_head:merge_without_transpose",
            "multi_head_masks_equal_torch",
            ["query=torch.tensor(", "key=", "value=", "mask=", "d_model=", "num_heads="],
        ),
        (
            "mask:padding_inverted",
            "padding_mask_marks_real_tokens",
            ["tokens=torch.tensor(", "pad_id="],
        ),
    ],
)
def test_failing_inputs_are_labelled_code(bug_id, prop_name, words, tmp_path):
    """Issue 7 item 8: a failing example names each input (query=, mask=, d_model=...) and is written as code:
    NumPy inputs as np.array(...), torch inputs as torch.tensor(...)."""
    bug = next(b for b in catalog() if b.id == bug_id)
    student = InProcessStudentCode(
        make_submission(bug, KIT / "solutions", tmp_path / "sub"), bug.name
    )
    outcome = core.run_property(core.REGISTRY[f"{bug.component}::{prop_name}"], student)
    assert not outcome.passed
    for word in words:
        assert word in outcome.example, (word, outcome.example)
    assert "array(" not in outcome.example.replace("np.array(", "")
