"""Hidden properties of feed_forward.FeedForward."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from autograder.i18n import _
from autograder.properties.feed_forward import (
    C,
    build_ffn,
    check_dropout_on_the_hidden_layer,
    check_ffn,
)
from autograder.student_code import Call, cotangent
from autograder.suite.checks import close, close_input_grad, expect
from autograder.suite.core import prop
from autograder.suite.strategies import dtypes, ffn_state, randn, seeds


@prop(C, points=2, examples=2, visible=False)
@given(seed=seeds(), dtype=dtypes())
def feed_forward_dropout_acts_on_the_hidden_layer(student, seed, dtype):
    """In training mode, each position equals linear_2(dropout(relu(linear_1(x)))) for some dropout pattern."""
    check_dropout_on_the_hidden_layer(student, (2, 4, 2), 3, seed, dtype)


@prop(C, points=1, examples=2, visible=False)
@given(d=st.integers(2, 4), d_ff=st.integers(2, 6), seed=seeds(), dtype=dtypes())
def feed_forward_gradients_match_torch(student, d, d_ff, seed, dtype):
    """Gradients with respect to x and every weight equal torch's."""
    h, state = build_ffn(student, d, d_ff, seed, dtype)
    x = randn((2, 3, d), seed + 20, dtype)
    check_ffn(student, h, state, x)
    reply = student.run(Call(h, "forward", (x,), seed=seed, backward=True))
    xr = x.double().requires_grad_(True)
    params = {k: v.double().requires_grad_(True) for k, v in state.items()}
    out = F.linear(
        F.relu(F.linear(xr, params["linear_1.weight"], params["linear_1.bias"])),
        params["linear_2.weight"],
        params["linear_2.bias"],
    )
    (out * cotangent(out.shape, dtype, seed + 1).double()).sum().backward()
    hint = _("keep the computation in the autograd graph: no .detach(), .data or numpy round trips")
    rtol, atol = (1e-3, 1e-4) if dtype == torch.float32 else (1e-6, 1e-8)
    close_input_grad(reply, xr.grad, hint, rtol, atol)
    grads = reply.param_grads or {}
    for name, p in params.items():
        expect(
            grads.get(name) is not None,
            _("no gradient reached {name}").format(name=name),
            _("use both linear layers in forward"),
        )
        close(
            grads[name],
            p.grad,
            _("d loss / d {name}").format(name=name),
            hint,
            rtol=rtol,
            atol=atol,
        )


@prop(C, points=1, examples=2, visible=False)
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
