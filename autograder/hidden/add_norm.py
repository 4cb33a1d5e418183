"""Hidden properties of add_norm.LayerNorm and add_norm.AddAndNorm."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from autograder.i18n import _
from autograder.suite.checks import close, expect
from autograder.suite.core import prop
from autograder.suite.norms import (
    C,
    build_norm,
    check_dropout_on_the_sublayer_output,
    check_layer_norm,
    layer_norm,
    layer_norm_hint,
)
from autograder.suite.strategies import dtypes, norm_state, randn, seeds

from ..suite.clauses import AddNorm


@prop(
    C,
    points=1,
    examples=2,
    visible=False,
    clauses=(
        AddNorm.LAYER_NORM,
        AddNorm.EPS,
    ),
)
@given(d=st.integers(1, 6), c=st.floats(-3, 3), seed=seeds(), dtype=dtypes())
def layer_norm_constant_position_maps_to_bias(student, d, c, seed, dtype):
    """A constant position (variance 0) comes out as the bias: finite, no NaN."""
    state = norm_state("", d, seed, dtype)
    x = torch.full((1, 2, d), c, dtype=dtype)
    y = layer_norm(student, build_norm(student, d, dtype, state), x)
    expect(
        torch.isfinite(y).all(),
        _("LayerNorm of a constant position gives inf or NaN"),
        layer_norm_hint(
            x,
            y,
            state["weight"],
            state["bias"],
            1e-5,
            _("its variance is 0: add eps inside the square root, sqrt(var + eps)"),
        ),
    )
    close(
        y,
        state["bias"].expand(1, 2, d),
        _("LayerNorm of a constant position"),
        _("x - mean is 0 there, so the output is the bias"),
        dtype=dtype,
    )


@prop(C, points=1, examples=2, visible=False, clauses=(AddNorm.LAYER_NORM,))
@given(shape=st.sampled_from([(4,), (3, 4), (2, 1, 2, 5)]), seed=seeds(), dtype=dtypes())
def layer_norm_any_leading_dims(student, shape, seed, dtype):
    """LayerNorm works on (..., d_model): no leading dim, one, or several."""
    d = shape[-1]
    state = norm_state("", d, seed, dtype)
    x = randn(shape, seed + 2, dtype, 2.0)
    check_layer_norm(
        student,
        build_norm(student, d, dtype, state),
        x,
        state["weight"],
        state["bias"],
        1e-5,
        _("LayerNorm(x) for x of shape {shape}").format(shape=shape),
        _("normalise over dim=-1 with keepdim=True: no assumption on the number of leading dims"),
    )


@prop(C, points=2, examples=2, visible=False, clauses=(AddNorm.DROPOUT,))
@given(seed=seeds(), dtype=dtypes())
def add_and_norm_dropout_acts_on_the_sublayer_output(student, seed, dtype):
    """In training mode, AddAndNorm(x, s) = LayerNorm(x + dropout(s)) for some dropout pattern of s."""
    check_dropout_on_the_sublayer_output(student, (2, 4, 3), seed, dtype)
