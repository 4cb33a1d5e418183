"""The property suite judged: full marks for the reference, zero for the stubs, every cataloged bug caught."""

import pytest
import suite_runs

from autograder import KIT
from autograder.bugs import catalog, make_submission
from autograder.components import NAMES
from autograder.properties import core
from autograder.student_code.executor import InProcessStudentCode


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


def test_catalog_is_broad():
    bugs = catalog()
    assert len(bugs) >= 30
    assert {b.component for b in bugs} == set(NAMES), "every component needs cataloged bugs"


# One mistake, one deduction: a slip that cuts across a function (its dtype, the order of a returned tuple, a
# missing attribute) fails the one property that owns it, not every property that reads the result.
ONE_DEDUCTION = {
    "attention_numpy:attention_scale_promotes_to_float64": "np_attention_shapes_and_dtype",
    "attention:returns_weights_first": "attention_shapes_for_cross_attention",
    "multi_head:no_attention_weights_attribute": "multi_head_cross_attention_shape",
    "mask:causal_float_mask": "causal_mask_shape_and_dtype",
    # issue 21: the fields of beam_search's return value, and its score alone
    "beam_search:returns_scores_first": "beam_search_returns_sequences_and_scores",
    "beam_search:scores_in_float64": "beam_search_returns_sequences_and_scores",
    "beam_search:returns_raw_logp": "beam_search_scores_are_log_prob_sums",
}


@pytest.mark.parametrize("bug_id", sorted(ONE_DEDUCTION))
def test_cross_cutting_slip_costs_one_property(bug_id, run):
    bug = suite_runs.BUGS[bug_id]
    failed = [o.property.name for o in run(bug_id, bug.component) if not o.passed]
    assert failed == [ONE_DEDUCTION[bug_id]], failed


# Mistakes a student must be able to see in the self-check (visible properties), not only in the grade.
CAUGHT_VISIBLY = [
    "multi_head:no_dropout_on_weights",
    "add_norm:no_dropout",
    "add_norm:dropout_after_norm",
    "positional_encoding:exponent_doubled_loop_index",
    "positional_encoding:cos_at_next_pair_frequency",
    # issue 10 (kvbeam): the cache's growth and the counted work are visible properties
    "kv_cache:cache_appended_twice",
    "kv_cache:memory_projected_every_step",
    "beam_search:rows_mixed",
    "beam_search:length_penalty_twice",
    # issue 21: each rule of the search under a length penalty, and beams wider than the vocabulary
    "beam_search:final_choice_by_raw_logp",
    "beam_search:stops_when_top_finished",
    "beam_search:finished_length_grows",
    "beam_search:length_counts_bos",
    "beam_search:ranked_without_penalty",
    "beam_search:topk_per_beam_first",
]


@pytest.mark.parametrize("bug_id", CAUGHT_VISIBLY)
def test_bug_is_caught_by_a_visible_property(bug_id, run):
    bug = suite_runs.BUGS[bug_id]
    failed = [o for o in run(bug_id, bug.component) if not o.passed and o.property.visible]
    assert any(bug.hint.lower() in o.hint.lower() for o in failed), [
        (o.property.name, o.hint) for o in failed
    ]


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
            "np_attention_equals_oracle",
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
