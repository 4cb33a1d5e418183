"""Hidden properties of add_norm.LayerNorm and add_norm.AddAndNorm."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from autograder.i18n import _
from autograder.properties.add_norm import (
    C,
    build_norm,
    check_dropout_on_the_sublayer_output,
    check_layer_norm,
    layer_norm,
    layer_norm_hint,
)
from autograder.suite import expected_values
from autograder.suite.checks import close, close_input_grad, expect, tensor
from autograder.suite.core import prop
from autograder.suite.strategies import dtypes, norm_state, randn, seeds


@prop(C, points=1, examples=2, visible=False)
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


@prop(C, points=1, examples=2, visible=False)
@given(d=st.integers(2, 6), eps=st.sampled_from([0.1, 1.0]), seed=seeds(), dtype=dtypes())
def layer_norm_uses_its_eps(student, d, eps, seed, dtype):
    """LayerNorm(d, eps=...) uses the eps it was built with."""
    state = norm_state("", d, seed, dtype)
    x = randn((2, 2, d), seed + 2, dtype)
    check_layer_norm(
        student,
        build_norm(student, d, dtype, state, eps=eps),
        x,
        state["weight"],
        state["bias"],
        eps,
        f"LayerNorm(d, eps={eps})(x)",
        _("store eps (self.eps = eps) and use it in forward"),
    )


@prop(C, points=1, examples=2, visible=False)
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


@prop(C, points=1, examples=2, visible=False)
@given(d=st.integers(2, 6), seed=seeds(), dtype=dtypes())
def layer_norm_gradients_match_torch(student, d, seed, dtype):
    """Gradients of LayerNorm with respect to x, weight and bias equal torch's."""
    from autograder.student_code.interface import Call, cotangent

    state = norm_state("", d, seed, dtype)
    h = build_norm(student, d, dtype, state)
    x = randn((2, 3, d), seed + 2, dtype)
    reply = student.run(Call(h, "forward", (x,), seed=seed, backward=True))
    xr = x.double().requires_grad_(True)
    w, b = (
        state["weight"].double().requires_grad_(True),
        state["bias"].double().requires_grad_(True),
    )
    out = expected_values.layer_norm(xr, w, b)
    y = tensor(reply.value, "LayerNorm(x)", like=x)
    close(
        y,
        out.detach(),
        "LayerNorm(x)",
        lambda: layer_norm_hint(
            x,
            y,
            state["weight"],
            state["bias"],
            1e-5,
            _("(x - mean) / sqrt(var + eps) * weight + bias"),
        ),
        dtype=dtype,
    )
    (out * cotangent(out.shape, dtype, seed + 1).double()).sum().backward()
    hint = _(
        "keep everything in the autograd graph: no .detach(), .data or .item() on the mean or the "
        "variance"
    )
    rtol, atol = (1e-3, 1e-4) if dtype == torch.float32 else (1e-6, 1e-8)
    grads = reply.param_grads or {}
    close_input_grad(reply, xr.grad, hint, rtol, atol)
    for name, expected_grad in (("weight", w.grad), ("bias", b.grad)):
        expect(
            grads.get(name) is not None,
            _("no gradient reached LayerNorm.{name}").format(name=name),
            _("use the parameters in forward (y = normalised * self.weight + self.bias)"),
        )
        close(
            grads[name],
            expected_grad,
            _("d loss / d {name}").format(name=name),
            hint,
            rtol=rtol,
            atol=atol,
        )


@prop(C, points=2, examples=2, visible=False)
@given(seed=seeds(), dtype=dtypes())
def add_and_norm_dropout_acts_on_the_sublayer_output(student, seed, dtype):
    """In training mode, AddAndNorm(x, s) = LayerNorm(x + dropout(s)) for some dropout pattern of s."""
    check_dropout_on_the_sublayer_output(student, (2, 4, 3), seed, dtype)
