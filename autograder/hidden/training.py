"""Hidden properties of training.py (graded, never shipped to students)."""

from __future__ import annotations

import math

import torch
from hypothesis import given
from hypothesis import strategies as st

from ..i18n import _
from ..properties.models.trainer import schedule, smoothed_loss
from ..suite.checks import close, expect, is_close
from ..suite.clauses import Training
from ..suite.core import prop
from ..suite.training_cases import (
    BUILD_ERROR,
    PAD_COUNTED,
    SCHEDULE,
    C,
    batch_cases,
    expect_trained_in_train_mode,
    explain_loss,
    label_smoothed_cross_entropy,
    learning_rate,
    loss_inputs,
)


@prop(C, points=1, examples=6, visible=False, clauses=(Training.LOSS,))
@given(inputs=loss_inputs())
def smoothed_loss_accepts_flat_logits(student, inputs):
    """Logits (N, V) and targets (N,) (positions already flattened) give the same loss as (batch, m, V)."""
    flat = inputs.replace(logits=inputs.logits.flatten(0, 1), target=inputs.target.flatten())
    got, _reply, what = label_smoothed_cross_entropy(student, flat)
    expected = smoothed_loss(flat.logits, flat.target, flat.smoothing, flat.pad_id)
    if not is_close(got, expected, flat.logits.dtype):
        close(
            got,
            expected,
            _("{what} with logits (N, V)").format(what=what),
            explain_loss(
                got,
                flat,
                _("work on the last dim only (dim=-1), whatever the leading shape"),
            ),
            flat.logits.dtype,
        )


@prop(C, points=1, examples=3, visible=False, clauses=(Training.PADDING,))
@given(inputs=loss_inputs())
def smoothed_loss_of_all_padding_is_zero(student, inputs):
    """A batch whose targets are all padding costs 0.0 (not NaN from 0 / 0); one real token costs its own loss."""
    one = torch.full_like(inputs.target, inputs.pad_id)
    one[0, 0] = inputs.target[0, 0]
    single = inputs.replace(target=one)
    got, _reply, what = label_smoothed_cross_entropy(student, single)
    expected = smoothed_loss(inputs.logits, one, inputs.smoothing, inputs.pad_id)
    if not is_close(got, expected, inputs.logits.dtype):
        close(
            got,
            expected,
            _("{what} with a single non-padding position").format(what=what),
            explain_loss(got, single, _(PAD_COUNTED)),
            inputs.logits.dtype,
        )
    target = torch.full_like(inputs.target, inputs.pad_id)
    got, _reply, what = label_smoothed_cross_entropy(student, inputs.replace(target=target))
    expect(
        torch.isfinite(got) and float(got) == 0.0,
        _("{what} with every target = pad_id gave {got}, expected 0.0").format(
            what=what, got=float(got)
        ),
        _("with no non-padding position the loss is 0: divide by max(count, 1). {cause}").format(
            cause=_(PAD_COUNTED)
        ),
    )


@prop(C, points=1, examples=6, visible=False, clauses=(Training.SCHEDULE,))
@given(
    step=st.integers(1, 10_000), d_model=st.sampled_from([8, 32, 128]), warmup=st.integers(1, 4000)
)
def learning_rate_scales_as_inverse_sqrt_d_model(student, step, d_model, warmup):
    """Four times the width, half the rate, at every step."""
    small, what = learning_rate(student, step, d_model, warmup)
    expect(
        math.isclose(small, schedule(step, d_model, warmup), rel_tol=1e-9),
        _("{what} = {got:.6g}, expected {expected:.6g}").format(
            what=what, got=small, expected=schedule(step, d_model, warmup)
        ),
        _(SCHEDULE),
    )
    large = learning_rate(student, step, 4 * d_model, warmup)[0]
    expect(
        math.isclose(large, small / 2, rel_tol=1e-9),
        _(
            "{what} = {small:.6g} but with d_model={d_model} {large:.6g}, expected half of it"
        ).format(what=what, small=small, d_model=4 * d_model, large=large),
        _("scale by d_model^-0.5. {schedule}").format(schedule=_(SCHEDULE)),
    )


@prop(
    C, points=1, examples=1, visible=False, error_hint=BUILD_ERROR, clauses=(Training.TRAIN_MODE,)
)
@given(case=batch_cases())
def train_runs_the_model_in_train_mode(student, case):
    """A model built in eval mode is trained in train mode (dropout on when it has any); the losses are returned."""
    expect_trained_in_train_mode(student, case, steps=2)
