"""Hidden properties of feed_forward.FeedForward."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from autograder.i18n import _
from autograder.properties.feed_forward import (
    C,
    build_ffn,
    check_dropout_on_the_hidden_layer,
    check_ffn,
)
from autograder.suite.core import prop
from autograder.suite.strategies import dtypes, ffn_state, randn, seeds

from ..suite.clauses import FeedForward


@prop(C, points=2, examples=2, visible=False, clauses=(FeedForward.DROPOUT,))
@given(seed=seeds(), dtype=dtypes())
def feed_forward_dropout_acts_on_the_hidden_layer(student, seed, dtype):
    """In training mode, each position equals linear_2(dropout(relu(linear_1(x)))) for some dropout pattern."""
    check_dropout_on_the_hidden_layer(student, (2, 4, 2), 3, seed, dtype)


@prop(C, points=1, examples=2, visible=False, clauses=(FeedForward.VALUE,))
@given(d=st.integers(2, 4), d_ff=st.integers(2, 6), seed=seeds(), dtype=dtypes())
def feed_forward_dead_hidden_layer_gives_the_output_bias(student, d, d_ff, seed, dtype):
    """With linear_1's bias far below zero every ReLU is off, and the output is exactly linear_2's bias."""
    state = ffn_state("", d, d_ff, seed, dtype)
    state["linear_1.bias"] = torch.full((d_ff,), -50.0, dtype=dtype)
    h = build_ffn(student, d, d_ff, seed, dtype, state=state)[0]
    x = randn((2, 3, d), seed + 20, dtype)
    check_ffn(
        student,
        h,
        state,
        x,
        _("FeedForward(x) with every hidden pre-activation < 0"),
        _("ReLU is exactly 0 for negative inputs, so the output is linear_2's bias"),
    )
