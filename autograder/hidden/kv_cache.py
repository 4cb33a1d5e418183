"""Hidden properties of kv_cache.CachedDecoder and cached_greedy_decode (graded, never shipped to students)."""

from __future__ import annotations

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from ..i18n import _
from ..oracles.greedy import expected_greedy_decode
from ..properties.checks import close, consistent, fail, is_close
from ..properties.core import prop
from ..properties.decoding import build_model, decoding_cases, fixed_case
from ..properties.kv_cache import (
    BUILD_ERROR,
    DEFAULT_HINT,
    SHARED_HINT,
    StepInputs,
    cached_decoder,
    decode_in_steps,
    fixed_steps,
    full_logits,
    greedy_call,
    start,
    step,
    step_inputs,
)
from ..properties.transformer import expect_run_in_eval_and_restored

C = "kv_cache"


@prop(C, points=1, examples=2, visible=False, error_hint=BUILD_ERROR)
@given(inputs=step_inputs(batch=(2, 3), mask=True, dtypes=(torch.float64, torch.float32)))
@example(inputs=fixed_steps(11, (2, 1, 3), b=3, me=5, lengths=[5, 2, 3]))
def kv_cache_with_padding_equals_full_decode(student, inputs):
    """With a padding src_mask and 2-3 rows, every step equals recomputing every position."""
    decode_in_steps(student, inputs)


@prop(C, points=1, examples=2, visible=False, error_hint=BUILD_ERROR)
@given(
    inputs=step_inputs(batch=(2, 3), chunk=(1, 2), steps=(2, 3)),
    order=st.randoms(use_true_random=False),
)
@example(inputs=fixed_steps(12, (1, 2), b=3, me=4, lengths=[4, 1, 3]), order=None)
def kv_cache_rows_are_independent(student, inputs, order):
    """Permuting the batch permutes each step's logits: a row never reads another row's cache."""
    case = inputs.case
    b = case.src.shape[0]
    perm = (
        torch.roll(torch.arange(b), 1) if order is None else torch.tensor(order.sample(range(b), b))
    )
    moved = StepInputs(
        case.replace(
            src=case.src[perm], src_mask=None if case.src_mask is None else case.src_mask[perm]
        ),
        inputs.tgt[perm],
        inputs.chunks,
    )
    decoder, _model, state = cached_decoder(student, case)
    other = cached_decoder(student, moved.case, state)[0]
    start(student, decoder, case)
    start(student, other, moved.case)
    expected = full_logits(case, state, inputs.tgt)
    done = 0
    for n in inputs.chunks:
        got = step(student, decoder, case, inputs.tgt[:, done : done + n]).value
        permuted = step(student, other, moved.case, moved.tgt[:, done : done + n]).value
        consistent(
            permuted,
            got[perm],
            _("the step at positions {first}..{last} with the batch permuted").format(
                first=done, last=done + n - 1
            ),
            _(SHARED_HINT),
            dtype=case.dtype,
            expected=expected[:, done : done + n],
        )
        done += n


@prop(C, points=1, examples=1, visible=False, error_hint=BUILD_ERROR)
@given(inputs=step_inputs(steps=(2, 3), mask=False))
def kv_cache_start_resets_the_cache(student, inputs):
    """start() on a second sequence empties the cache: its steps equal decoding it from scratch."""
    case = inputs.case
    decoder, _model, state = cached_decoder(student, case)
    start(student, decoder, case)
    step(student, decoder, case, inputs.tgt[:, :2])
    other = case.replace(src=case.src.flip(1))
    start(student, decoder, other)
    expected = full_logits(other, state, inputs.tgt)
    done = 0
    for n in inputs.chunks:
        got = step(student, decoder, other, inputs.tgt[:, done : done + n]).value
        want = expected[:, done : done + n]
        if not is_close(got, want, case.dtype):
            close(
                got,
                want,
                _("after start() on a new source, the step at positions {first}..{last}").format(
                    first=done, last=done + n - 1
                ),
                _(
                    "start resets everything: length = 0, empty self_keys/self_values, the new memory's "
                    "keys/values"
                )
                if done == 0
                else _(DEFAULT_HINT),
                dtype=case.dtype,
            )
        done += n


@prop(C, points=1, examples=1, visible=False, error_hint=BUILD_ERROR)
@given(case=decoding_cases(mask=False, layers=(1, 1)))
@example(case=fixed_case(6, n=1))
def cached_greedy_decode_runs_in_eval_and_restores_mode(student, case):
    """A model in train mode decodes in eval mode, without gradients, and is left in train mode.

    With dropout=0.5 the tokens equal the dropout-free expected model's."""
    state = case.state(2, 0.5)
    model = build_model(student, case, state, dropout=0.5, train=True)[0]
    ys, reply = greedy_call(student, model, case, 5, 1, 2)
    expect_run_in_eval_and_restored(student, model, reply, "cached_greedy_decode")
    expected = expected_greedy_decode(state, case, 5, 1, 2)
    if not (ys.shape == expected.shape and torch.equal(ys, expected)):
        fail(
            _(
                "cached_greedy_decode of a model in train mode gave {got}, expected {expected}"
            ).format(got=ys.tolist(), expected=expected.tolist()),
            _(
                "call model.eval() while decoding (dropout off), then restore the model's "
                "train/eval mode"
            ),
        )
