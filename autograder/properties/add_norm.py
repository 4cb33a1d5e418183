"""Properties of add_norm.LayerNorm and add_norm.AddAndNorm (visible to students).

Expected values come from torch's F.layer_norm with the same weight and bias copied in (float64 on this side).
"""

from __future__ import annotations

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from ..i18n import N_, _
from ..student_code import Call
from ..suite import expected_values
from ..suite.checks import (
    close,
    close_input_grad,
    expect,
    fail,
    is_close,
    not_constant,
    tensor,
    written_by_hand,
)
from ..suite.clauses import AddNorm
from ..suite.core import Kind, default_hint, prop
from ..suite.norms import (
    C,
    add_norm_hint,
    build_add_norm,
    build_norm,
    check_add_norm,
    check_dropout_on_the_sublayer_output,
    check_layer_norm,
    layer_norm,
    layer_norm_hint,
    standardized,
)
from ..suite.strategies import dtypes, norm_state, randn, seeds, tensors
from .models.layer_norm import library_variance

ERROR_HINT = N_(
    "LayerNorm needs parameters named weight and bias of shape (d_model,), AddAndNorm a LayerNorm "
    "named norm; forward must work on any (..., d_model)"
)
default_hint(C, ERROR_HINT)


# ---------------------------------------------------------------------------------------------- LayerNorm
@prop(C, points=1, examples=2, kind=Kind.SHAPE, clauses=(AddNorm.PARAMETERS,))
@given(d=st.integers(1, 8))
def layer_norm_init_weight_ones_bias_zeros(student, d):
    """LayerNorm(d) has parameters weight (ones) and bias (zeros), both of shape (d,)."""
    info = student.inspect(student.build(C, "LayerNorm", d_model=d))
    state, params = info["state"], info["params"]
    for name, fill in (("weight", 1.0), ("bias", 0.0)):
        if name not in state:
            fail(
                _("LayerNorm has no `{name}` (it has {names})").format(
                    name=name, names=", ".join(state) or _("nothing")
                ),
                _(
                    "name them exactly: self.weight = nn.Parameter(torch.ones(d_model)), "
                    "self.bias = nn.Parameter(torch.zeros(d_model))"
                ),
            )
        expect(
            name in params,
            _("LayerNorm.{name} is a buffer or a plain tensor, not a parameter").format(name=name),
            _("wrap it in nn.Parameter so it is learned"),
        )
        value = state[name]
        expect(
            tuple(value.shape) == (d,),
            _("LayerNorm.{name} has shape {shape}, expected ({d},)").format(
                name=name, shape=tuple(value.shape), d=d
            ),
            _("one weight and one bias per feature: shape (d_model,)"),
        )
        expect(
            torch.equal(value, torch.full((d,), fill, dtype=value.dtype)),
            _("LayerNorm.{name} starts as {values}, expected all {fill:g}").format(
                name=name, values=value.tolist(), fill=fill
            ),
            _(
                "initialise weight to ones and bias to zeros: the layer starts as a pure normalisation"
            ),
        )


@prop(
    C,
    points=2,
    examples=5,
    clauses=(
        AddNorm.LAYER_NORM,
        AddNorm.EPS,
    ),
)
@given(
    x=st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(2, 6)).flatmap(
        lambda s: tensors(s)
    ),
    dtype=dtypes(),
)
@example(x=torch.tensor([[[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 5.0]]]), dtype=torch.float64)
def layer_norm_normalises_each_position(student, x, dtype):
    """With weight 1 and bias 0, every position has mean 0 and variance σ²/(σ² + eps) over the last dim, in x's
    dtype."""
    x = x.to(dtype)
    d = x.shape[-1]
    y = layer_norm(student, build_norm(student, d, dtype), x, strict=True)
    y64, x64 = y.double(), x.double()
    atol = 1e-4 if dtype == torch.float32 else 1e-9
    ones, zeros = torch.ones(d, dtype=torch.float64), torch.zeros(d, dtype=torch.float64)
    hint = lambda default: layer_norm_hint(x, y, ones, zeros, 1e-5, default)  # noqa: E731
    mean = y64.mean(-1)
    if not torch.allclose(mean, torch.zeros_like(mean), atol=atol):
        fail(
            _("a position of LayerNorm(x) has mean {mean:.3g}, expected 0").format(
                mean=mean.flatten()[mean.abs().argmax()]
            ),
            hint(_("subtract the mean over the last dim (dim=-1, keepdim=True)")),
        )
    # the variances from torch's layer norm (library_variance): no variance by hand ships (issue 35)
    s2 = library_variance(x64, x64.shape[-1:]).squeeze(-1)
    expected = s2 / (s2 + 1e-5)
    var = library_variance(y64, y64.shape[-1:]).squeeze(-1)
    if not torch.allclose(var, expected, rtol=1e-4 if dtype == torch.float32 else 1e-7, atol=atol):
        i = int((var - expected).abs().argmax())
        fail(
            _(
                "variance of an output position {variance:.6g}, expected σ²/(σ² + eps) = {expected:.6g}"
            ).format(variance=var.flatten()[i], expected=expected.flatten()[i]),
            hint(_("divide by sqrt(var + eps), var the biased variance over the last dim")),
        )


@prop(C, points=1, examples=4, clauses=(AddNorm.LAYER_NORM,))
@given(
    d=st.integers(2, 8),
    seed=seeds(),
    std=st.sampled_from([1.0, 5.0]),
    scale=st.floats(0.5, 4.0),
    shift=st.floats(-5.0, 5.0),
    dtype=dtypes(),
)
def layer_norm_is_shift_and_scale_invariant(student, d, seed, std, scale, shift, dtype):
    """LayerNorm(a·x + b) ≈ LayerNorm(x) for a > 0 (exact up to eps, tiny at variance ≫ eps)."""
    x = standardized((2, 3, d), seed, dtype, std)
    h = build_norm(student, d, dtype)
    y = layer_norm(student, h, x)
    # x is standardized already: LayerNorm(x) is x but for eps, so returning x is no placeholder here
    not_constant(y, expected_values.layer_norm(x.double()), "LayerNorm(x)")
    shifted = layer_norm(student, h, x + shift, seed=1)
    expect(
        is_close(shifted, y, dtype, rtol=1e-4, atol=1e-4),
        _("LayerNorm(x + {shift:g}) differs from LayerNorm(x)").format(shift=shift),
        _(
            "subtract the mean over the last dim: adding a constant to a position must change nothing"
        ),
    )
    scaled = layer_norm(student, h, x * scale, seed=2)
    expect(
        is_close(scaled, y, dtype, rtol=1e-4, atol=1e-4),
        _("LayerNorm({scale:g}·x) differs from LayerNorm(x)").format(scale=scale),
        _(
            "divide by the standard deviation sqrt(var + eps): scaling a position must change nothing"
        ),
    )


@prop(C, points=3, examples=6, clauses=(AddNorm.LAYER_NORM,))
@given(
    b=st.integers(1, 2),
    m=st.integers(1, 3),
    d=st.sampled_from([2, 3, 5, 8, 16, 64]),
    seed=seeds(),
    scale=st.sampled_from([1.0, 3.0, 3e-3]),
    offset=st.floats(-2.0, 2.0),
    dtype=dtypes(),
)
@example(b=2, m=3, d=64, seed=0, scale=1.0, offset=0.5, dtype=torch.float32)
@example(b=2, m=2, d=8, seed=1, scale=3e-3, offset=0.0, dtype=torch.float64)
def layer_norm_equals_torch(student, b, m, d, seed, scale, offset, dtype):
    """LayerNorm with copied weight and bias equals F.layer_norm (float32 and float64, d up to 64)."""
    state = norm_state("", d, seed, dtype)
    x = randn((b, m, d), seed + 2, dtype, scale) + offset * scale
    check_layer_norm(
        student, build_norm(student, d, dtype, state), x, state["weight"], state["bias"], 1e-5
    )


@prop(C, points=1, examples=3, clauses=(AddNorm.EPS,))
@given(d=st.integers(2, 8), seed=seeds(), ratio=st.sampled_from([0.25, 1.0, 4.0]), dtype=dtypes())
def layer_norm_eps_inside_the_square_root(student, d, seed, ratio, dtype):
    """At variance comparable to eps, the output variance is σ²/(σ² + eps): eps sits inside the square root."""
    x = standardized((2, 2, d), seed, dtype, std=(ratio * 1e-5) ** 0.5, mean=0.1)
    ones, zeros = torch.ones(d, dtype=dtype), torch.zeros(d, dtype=dtype)
    check_layer_norm(
        student,
        build_norm(student, d, dtype),
        x,
        ones,
        zeros,
        1e-5,
        _("LayerNorm(x) at variance {ratio:g}·eps").format(ratio=ratio),
        _("eps goes inside the square root: (x - mean) / sqrt(var + eps)"),
    )


@prop(C, points=1, examples=3, clauses=(AddNorm.LAYER_NORM,))
@given(
    d=st.integers(2, 6),
    seed=seeds(),
    pos=st.tuples(st.integers(0, 1), st.integers(0, 2)),
    dtype=dtypes(),
)
def layer_norm_normalises_the_last_dim_only(student, d, seed, pos, dtype):
    """Changing the features of one position changes only that position's output."""
    h = build_norm(student, d, dtype)
    x = randn((2, 3, d), seed, dtype)
    x2 = x.clone()
    x2[pos] = randn((d,), seed + 1, dtype, 4.0) + 3
    y, y2 = layer_norm(student, h, x), layer_norm(student, h, x2)
    not_constant(y, expected_values.layer_norm(x.double()), "LayerNorm(x)", given=x)
    keep = torch.ones(2, 3, dtype=torch.bool)
    keep[pos] = False
    if not is_close(y2[keep], y[keep], dtype):
        fail(
            _("changing position {position} changed the output at other positions").format(
                position=pos
            ),
            _(
                "wrong dim: the mean and variance are over the last dim only (dim=-1, keepdim=True), "
                "separately for every position"
            ),
        )


# --------------------------------------------------------------------------------------------- AddAndNorm
@prop(C, points=3, examples=5, clauses=(AddNorm.ADD_NORM,))
@given(
    b=st.integers(1, 2),
    m=st.integers(1, 3),
    d=st.sampled_from([3, 4, 8, 16]),
    seed=seeds(),
    dtype=dtypes(),
)
def add_and_norm_equals_norm_of_the_sum(student, b, m, d, seed, dtype):
    """AddAndNorm(x, s) = LayerNorm(x + s), with the norm's weight and bias copied in (norm.weight, norm.bias), in
    x's dtype."""
    h, state = build_add_norm(student, d, seed, dtype)
    x, s = randn((b, m, d), seed + 2, dtype), randn((b, m, d), seed + 3, dtype)
    check_add_norm(
        student,
        h,
        state,
        x,
        s,
        "AddAndNorm(x, sublayer_output)",
        _("out = self.norm(x + self.dropout(sublayer_output)): add the residual, then normalise"),
        strict=True,
    )


@prop(C, points=1, examples=2, clauses=(AddNorm.DROPOUT,))
@given(d=st.integers(3, 6), seed=seeds(), dtype=dtypes())
def add_and_norm_dropout_is_off_in_eval(student, d, seed, dtype):
    """In eval mode, AddAndNorm(d, dropout=0.5) is deterministic: exactly LayerNorm(x + s)."""
    h, state = build_add_norm(student, d, seed, dtype, dropout=0.5, train=False)
    x, s = randn((2, 3, d), seed + 2, dtype), randn((2, 3, d), seed + 3, dtype)

    def hint():
        other = student.run(Call(h, "forward", (x, s), seed=seed + 1)).value
        first = student.method(h, "forward", x, s)
        if isinstance(other, torch.Tensor) and not torch.equal(other, first):
            return _(
                "the output is random in eval mode: in eval mode dropout is the identity; use "
                "self.dropout = nn.Dropout(dropout), which follows .eval(), not F.dropout(..., "
                "training=True)"
            )
        return add_norm_hint(
            student,
            x,
            s,
            first,
            state["norm.weight"],
            state["norm.bias"],
            _("out = norm(x + dropout(sublayer_output)), and dropout is off in eval mode"),
        )

    check_add_norm(
        student,
        h,
        state,
        x,
        s,
        _("AddAndNorm(x, sublayer_output) in eval mode with dropout=0.5"),
        hint,
    )


@prop(C, points=1, examples=2, clauses=(AddNorm.DROPOUT,))
@given(seed=seeds(), dtype=dtypes())
def add_and_norm_dropout_acts_in_training(student, seed, dtype):
    """In training mode with dropout=0.5 the output differs from the same module's with dropout=0 (same weights,
    same seed): dropout acts on the sublayer output before the residual add, so no entry is zeroed outright."""
    d = 8
    x, s = randn((2, 4, d), seed + 2, dtype), randn((2, 4, d), seed + 3, dtype, 2.0)
    plain_handle = build_add_norm(student, d, seed, dtype, dropout=0.0, train=True)[0]
    plain = tensor(
        student.run(Call(plain_handle, "forward", (x, s), seed=seed)).value,
        _("AddAndNorm(x, sublayer_output) in training mode with dropout=0"),
        like=x,
    )
    h = build_add_norm(student, d, seed, dtype, dropout=0.5, train=True)[0]
    y = tensor(
        student.run(Call(h, "forward", (x, s), seed=seed)).value,
        _("AddAndNorm(x, sublayer_output) in training mode with dropout=0.5"),
        like=x,
    )
    changed = (
        1.0
        - torch.isclose(y.double(), plain.double(), rtol=1e-4, atol=1e-6)
        .all(-1)
        .double()
        .mean()
        .item()
    )
    # Each position drops about half of its 8 features of s (and doubles the rest): every position moves.
    if changed < 0.5:
        fail(
            _(
                "in training mode with dropout=0.5, {changed:.0%} of the positions differ from the same "
                "module built with dropout=0: dropout is never applied"
            ).format(changed=changed),
            _(
                "dropout is never applied to the sublayer output: out = self.norm(x + "
                "self.dropout(sublayer_output)), with self.dropout = nn.Dropout(dropout) (it follows "
                "train()/eval())"
            ),
        )
    zeros = (y == 0).double().mean().item()
    if zeros > 0.2:
        fail(
            _(
                "in training mode with dropout=0.5, {zeros:.0%} of the output entries are exactly 0"
            ).format(zeros=zeros),
            _(
                "dropout goes on the sublayer output, before the residual add: norm(x + "
                "dropout(sublayer_output)), not dropout of the normalised sum"
            ),
        )


@prop(C, points=1, examples=2, clauses=(AddNorm.DROPOUT,))
@given(seed=seeds(), dtype=dtypes())
def add_and_norm_dropout_on_the_sublayer_output_only(student, seed, dtype):
    """In training mode each position of AddAndNorm(x, s) is LayerNorm(x + dropout(s)) for some dropout pattern
    of s: not dropout of the sum x + s, nor of the norm's output."""
    check_dropout_on_the_sublayer_output(student, (3, 2, 4), seed, dtype)


@prop(C, points=1, examples=2, clauses=(AddNorm.EPS,))
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


@prop(C, points=1, examples=2, clauses=(AddNorm.GRADIENTS,))
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


# The only static property with a hint on error (static ones take no default): kept as it was
@prop(C, points=1, examples=1, kind=Kind.STATIC, error_hint=ERROR_HINT)
def add_norm_is_written_by_hand(student):
    """add_norm.py calls no library layer norm (static check; the run-time check is in every test)."""
    written_by_hand(
        student,
        C,
        _(
            "write LayerNorm from mean, a biased variance and sqrt: no nn.LayerNorm, F.layer_norm "
            "or getattr tricks"
        ),
    )
