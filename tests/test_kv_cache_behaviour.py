"""The KV cache is judged by behaviour, never by a count the student's process keeps (issue 20, item 3).

A decoder with no cache at all, hidden four ways from a work counter (products as multiply-then-sum, products in
NumPy, torch._C._DisableTorchDispatch, the counter zeroed) or a copy of the model taken at start, loses the three
behavioural properties in plain sight and hidden alike (examples/hostile/kv_*); the graded side's decoder with
weights that change between steps equals the expected model when they do not."""

from __future__ import annotations

import pytest
import torch

from autograder import i18n, registry
from autograder.hidden.kv_cache import ExpectedCache
from autograder.judge import sample
from autograder.properties.kv_cache import fixed_steps, full_logits
from autograder.student_code import InProcessStudentCode
from autograder.suite import core

# hostile example -> its kv_cache score (of 26); its control, the same decoder in plain sight, gets 13
EXPECTED = {
    "kv_multiply_then_sum": 13,
    "kv_numpy_products": 13,
    "kv_disable_dispatch": 12,  # the static scan also names torch._C
    "kv_counter_zeroed": 12,  # and the dispatch mode's import
    "kv_model_snapshot": 13,
}
BEHAVIOUR = {
    "kv_cache_keeps_the_memory_of_start",
    "kv_cache_keeps_the_keys_of_earlier_steps",
    "kv_cache_keeps_the_self_keys_of_earlier_steps",  # issue 33's visible twin of a hidden clause
}


def kv_cache_outcomes(folder):
    student = InProcessStudentCode(folder, folder.name)
    props = [p for p in registry.load(include_hidden=True) if p.component == "kv_cache"]
    with i18n.chosen("en"):
        return [core.run_property(p, student) for p in props]


def score(outcomes):
    return sum(o.property.points for o in outcomes if o.passed)


@pytest.mark.parametrize("name", EXPECTED)
def test_no_cache_loses_the_behaviour_points_however_hidden(tmp_path, name):
    hostile = kv_cache_outcomes(sample.make(f"hostile:{name}", tmp_path / "hostile"))
    assert score(hostile) == EXPECTED[name], [(o.property.name, o.message) for o in hostile]
    lost = {o.property.name for o in hostile if not o.passed}
    assert BEHAVIOUR <= lost


def test_the_same_decoder_in_plain_sight_gets_13(tmp_path):
    control = kv_cache_outcomes(sample.make("control:kv_multiply_then_sum", tmp_path / "control"))
    assert score(control) == 13
    assert {o.property.name for o in control if not o.passed} == BEHAVIOUR


def test_a_decoder_with_no_cache_earns_half_at_most(tmp_path):
    """The cache is the exercise (issue 35): what it keeps weighs at least what a decoder that recomputes every
    position earns with every other property."""
    control = kv_cache_outcomes(sample.make("control:kv_multiply_then_sum", tmp_path / "control"))
    total = sum(o.property.points for o in control)
    kept = sum(o.property.points for o in control if o.property.name in BEHAVIOUR)
    assert 2 * score(control) <= total and kept >= score(control), (score(control), kept, total)


def test_the_graded_sides_cache_equals_the_expected_model_when_weights_stay():
    for seed, chunks, layers in ((3, (1, 3, 1, 2), 2), (5, (2, 2), 1)):
        inputs = fixed_steps(seed, chunks, n=layers, lengths=[2, 4])
        case, state = inputs.case, inputs.case.config.state()
        cache, done = ExpectedCache(case, state), 0
        expected = full_logits(case, state, inputs.tgt)
        for n in chunks:
            got = cache.step(state, inputs.tgt[:, done : done + n])
            torch.testing.assert_close(got, expected[:, done : done + n])
            done += n
