"""Properties of add_norm.LayerNorm and add_norm.AddAndNorm (visible to students).

Expected values come from torch's F.layer_norm with the same weight and bias copied in (float64 on this side).
"""

from __future__ import annotations

import itertools

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from ..i18n import N_, _
from ..student_code import Call
from ..suite import expected_values, graded
from ..suite.checks import (
    close,
    close_input_grad,
    diagnose,
    expect,
    fail,
    is_close,
    not_constant,
    tensor,
    written_by_hand,
)
from ..suite.clauses import AddNorm
from ..suite.core import Kind, default_hint, prop
from ..suite.graded import matches
from ..suite.strategies import dtypes, norm_state, randn, seeds, tensors
from .models.layer_norm import NormMistake, layer_norm_model

ERROR_HINT = N_(
    "LayerNorm needs parameters named weight and bias of shape (d_model,), AddAndNorm a LayerNorm "
    "named norm; forward must work on any (..., d_model)"
)
# LayerNorm by hand with its usual mistakes: the graded side's; None in the student bundle (docs/bundle.md).
mistake_models = graded.diagnosis("layer_norm")

C = "add_norm"
default_hint(C, ERROR_HINT)


# ------------------------------------------------------------------------------------------- local helpers
def unit_state(d, dtype) -> dict:
    """weight = 1, bias = 0: the normalisation alone."""
    return {"weight": torch.ones(d, dtype=dtype), "bias": torch.zeros(d, dtype=dtype)}


def build_norm(student, d, dtype, state=None, eps=None):
    kwargs = {"d_model": d} if eps is None else {"d_model": d, "eps": eps}
    return student.build(
        C,
        "LayerNorm",
        state=unit_state(d, dtype) if state is None else state,
        dtype=dtype,
        **kwargs,
    )


LAYER_NORM_NAN = N_(
    "a NaN in LayerNorm comes from a position with variance 0 (a constant row): 0 / sqrt(0) is NaN; "
    "add eps inside the square root, sqrt(var + eps)."
)


def layer_norm(student, h, x, strict=False):
    """strict: the one property that owns LayerNorm's dtype and device."""
    return tensor(
        student.method(h, "forward", x),
        "LayerNorm(x)",
        like=x,
        check_dtype=strict,
        nan_hint=_(LAYER_NORM_NAN),
    )


def standardized(shape, seed, dtype, std=1.0, mean=0.0):
    """Rows (last dim) with exactly mean `mean` and biased std `std` (before the cast to dtype)."""
    z = randn(shape, seed)
    z = (z - z.mean(-1, keepdim=True)) / z.std(-1, unbiased=False, keepdim=True).clamp_min(1e-12)
    return (z * std + mean).to(dtype)


def ln_variant(x, weight=None, bias=None, eps=1e-5, mistake=NormMistake.NONE, dim=-1):
    """models.layer_norm's LayerNorm in float64, with this module's mistake_models (None in the student bundle)."""
    return layer_norm_model(x, weight, bias, eps, mistake, dim, mistake_models)


def their_eps(x, y, weight, bias, eps, inside: bool) -> float | None:
    """The eps that y was computed with, if y is a LayerNorm with eps inside (or outside) the square root and an
    eps other than the contract's `eps`; else None. Solved per element from y = c / sqrt(var + e) * w + b
    (c = x - mean), the median taken, then checked: the whole of y must agree with it."""
    x64, y64, w, b = x.double(), y.double(), weight.double(), bias.double()
    c = x64 - x64.mean(-1, keepdim=True)
    var = (c**2).mean(-1, keepdim=True)
    z = (y64 - b) / torch.where(w.abs() > 1e-3, w, torch.ones_like(w))
    usable = (w.abs() > 1e-3) & (c.abs() > 1e-3 * var.sqrt()) & (z.abs() > 1e-9)
    if not bool(usable.any()):
        return None
    ratio = (c / z)[usable]
    e = (
        (ratio**2 - var.expand_as(c)[usable])
        if inside
        else (ratio - var.sqrt().expand_as(c)[usable])
    )
    found = float(e.median())
    if not found > 0 or abs(found - eps) <= 0.05 * eps:
        return None
    outside = NormMistake.NONE if inside else NormMistake.EPS_OUTSIDE
    return found if is_close(y, ln_variant(x, w, b, found, outside), y.dtype) else None


DEFAULT_EPS = 1e-5  # LayerNorm's default eps in the contract (solutions/add_norm.py)


def _short(value: float) -> str:
    """1e-06 -> 1e-6, as a student writes it in code."""
    text = f"{value:.2g}"
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    return f"{mantissa}e{int(exponent)}"


EPS_VALUE = N_(
    "your LayerNorm uses eps = {theirs} where the contract's is {ours}: the default is eps={ours} "
    "(def __init__(self, d_model, eps={ours})), and forward uses self.eps inside the square root; "
    "eps is there, with another value"
)
EPS_EITHER = N_(
    "your LayerNorm's eps is not the contract's {ours}, or it sits outside the square root: the contract "
    "is (x - mean) / sqrt(var + eps), with eps={ours} by default (def __init__(self, d_model, eps={ours}))"
)
EPS_VALUE_OUTSIDE = N_(
    "your LayerNorm adds eps = {theirs} outside the square root; the contract adds eps={ours} (the "
    "default: def __init__(self, d_model, eps={ours})) inside it: (x - mean) / sqrt(var + eps)"
)


def layer_norm_hint(x, y, weight, bias, eps, default: str) -> str:
    """Name the LayerNorm mistake that explains y, if one does."""
    dt = y.dtype
    w, b = weight, bias
    ones, zeros = torch.ones_like(weight), torch.zeros_like(bias)
    found = {}  # inside / outside -> the eps y fits, each solved once, on failure only

    def fits(inside: bool):
        # eps passed explicitly: another value there is the "ignores the eps argument" hint's case
        if eps != DEFAULT_EPS:
            return None
        if inside not in found:
            found[inside] = their_eps(x, y, w, b, eps, inside)
        return found[inside]

    # Rows of one variance fit both forms (with two eps): only a form that fits alone is named. A model with no
    # free parameter that fits is stronger evidence than an eps solved from y (eps = 1e-5 outside the root once
    # fitted "eps = 3.2e-8 inside" on rows of one tiny variance, an unbiased variance "eps not the contract's"),
    # so every one of those comes first and the fitted eps last.
    return diagnose(
        default,
        (
            lambda: matches(y, ln_variant(x, w, b, eps, NormMistake.EPS_OUTSIDE), dt),
            _(
                "eps goes inside the square root: (x - mean) / sqrt(var + eps), not / (sqrt(var) + eps)"
            ),
        ),
        (
            lambda: matches(y, ln_variant(x, w, b, eps, NormMistake.NO_EPS), dt),
            _("eps is missing: (x - mean) / sqrt(var + eps)"),
        ),
        (
            lambda: matches(y, ln_variant(x, w, b, eps, NormMistake.UNBIASED), dt),
            _(
                "unbiased variance (torch.var's default, unbiased=True): LayerNorm uses the biased "
                "variance mean((x - mean)^2), i.e. x.var(-1, unbiased=False)"
            ),
        ),
        (
            lambda: torch.isnan(y).any() and not torch.isnan(ln_variant(x, w, b, eps)).any(),
            _(
                "NaN for a constant row: its variance is 0, add eps inside the square root: "
                "sqrt(var + eps)"
            ),
        ),
        (
            lambda: x.dim() > 1 and matches(y, ln_variant(x, w, b, eps, dim=0), dt),
            _(
                "wrong dim: normalised over dim 0 (the batch); mean and variance are over the last "
                "dim, dim=-1"
            ),
        ),
        (
            lambda: x.dim() > 1 and matches(y, ln_variant(x, w, b, eps, dim=-2), dt),
            _(
                "wrong dim: normalised over dim -2 (the positions); mean and variance are over the last "
                "dim, dim=-1"
            ),
        ),
        (
            lambda: (
                x.dim() > 1 and matches(y, ln_variant(x, w, b, eps, dim=tuple(range(x.dim()))), dt)
            ),
            _(
                "wrong dim: normalised over the whole tensor; mean and variance are over the last dim "
                "only, per position"
            ),
        ),
        (
            lambda: matches(y, ln_variant(x, w, b, eps, NormMistake.VAR_NOT_STD), dt),
            _("divided by the variance: divide by the standard deviation sqrt(var + eps)"),
        ),
        (
            lambda: not torch.equal(w, ones) and matches(y, ln_variant(x, eps=eps), dt),
            _("weight and bias are not applied: y = normalised * weight + bias"),
        ),
        (
            lambda: not torch.equal(w, ones) and matches(y, ln_variant(x, b, w, eps), dt),
            _("weight and bias swapped: y = normalised * weight + bias"),
        ),
        (
            lambda: not torch.equal(b, zeros) and matches(y, ln_variant(x, w, zeros, eps), dt),
            _("the bias is not added: y = normalised * weight + bias"),
        ),
        (
            lambda: not torch.equal(w, ones) and matches(y, ln_variant(x, ones, b, eps), dt),
            _("the weight is not applied: y = normalised * weight + bias"),
        ),
        (
            lambda: eps != 1e-5 and matches(y, ln_variant(x, w, b, 1e-5), dt),
            _("ignores the eps argument: store it (self.eps = eps) and use it in forward"),
        ),
        (
            lambda: fits(True) and fits(False),
            lambda: _(EPS_EITHER).format(ours=_short(eps)),
        ),
        (
            lambda: fits(True),
            lambda: _(EPS_VALUE).format(theirs=_short(fits(True)), ours=_short(eps)),
        ),
        (
            lambda: fits(False),
            lambda: _(EPS_VALUE_OUTSIDE).format(theirs=_short(fits(False)), ours=_short(eps)),
        ),
    )


def check_layer_norm(student, h, x, weight, bias, eps, what="LayerNorm(x)", default=None):
    """y = LayerNorm(x) ≈ F.layer_norm(x, weight, bias, eps) in float64, or a named mistake."""
    y = layer_norm(student, h, x)
    expected = expected_values.layer_norm(x.double(), weight.double(), bias.double(), eps)
    close(
        y,
        expected,
        what,
        lambda: layer_norm_hint(
            x,
            y,
            weight,
            bias,
            eps,
            default
            or _("(x - mean) / sqrt(var + eps) * weight + bias over the last dim, biased variance"),
        ),
        dtype=x.dtype,
    )
    return y


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
    s2 = x64.var(-1, unbiased=False)
    expected = s2 / (s2 + 1e-5)
    var = y64.var(-1, unbiased=False)
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
    not_constant(y, expected_values.layer_norm(x.double()), "LayerNorm(x)")
    shifted = layer_norm(student, h, x + shift)
    expect(
        is_close(shifted, y, dtype, rtol=1e-4, atol=1e-4),
        _("LayerNorm(x + {shift:g}) differs from LayerNorm(x)").format(shift=shift),
        _(
            "subtract the mean over the last dim: adding a constant to a position must change nothing"
        ),
    )
    scaled = layer_norm(student, h, x * scale)
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
    not_constant(y, expected_values.layer_norm(x.double()), "LayerNorm(x)")
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
def add_norm_hint(student, x, s, y, weight, bias, default):
    """Name the AddAndNorm mistake that explains y. The variants use the student's own LayerNorm (with the same
    weight and bias), so a wrong residual is named even when LayerNorm is wrong too, and a correct AddAndNorm
    around a wrong LayerNorm is told apart."""
    d, dt = x.shape[-1], y.dtype
    cache = {}

    # The student's LayerNorm, built on first use (a failing build only skips the candidates).
    def ln(z):
        if "h" not in cache:
            cache["h"] = build_norm(student, d, dt, {"weight": weight, "bias": bias})
        return layer_norm(student, cache["h"], z)

    def expected_norm(z):
        return expected_values.layer_norm(z.double(), weight.double(), bias.double())

    x_plus_s = x + s
    return diagnose(
        default,
        (
            lambda: is_close(y, ln(x_plus_s), dt) and not is_close(y, expected_norm(x_plus_s), dt),
            _(
                "AddAndNorm itself is right, but your LayerNorm is not: fix LayerNorm first (see the "
                "layer_norm properties)"
            ),
        ),
        (
            lambda: is_close(y, ln(x) + s, dt),
            _(
                "the residual is added after the norm: norm(x + sublayer_output), not norm(x) + "
                "sublayer_output"
            ),
        ),
        (
            lambda: is_close(y, x + ln(s), dt),
            _(
                "the residual is added after the norm (of the sublayer output): norm(x + sublayer_output)"
            ),
        ),
        (
            lambda: is_close(y, ln(s), dt),
            _("the residual is missing: norm(x + sublayer_output), not norm(sublayer_output)"),
        ),
        (
            lambda: is_close(y, ln(x), dt),
            _("the sublayer output is dropped: norm(x + sublayer_output)"),
        ),
        (
            lambda: is_close(y, ln(x) + ln(s), dt),
            _("norm(x) + norm(sublayer_output): add first (the residual), then normalise once"),
        ),
        (lambda: is_close(y, ln(x - s), dt), _("x - sublayer_output: the residual is a sum")),
    )


def build_add_norm(student, d, seed, dtype, dropout=None, train=False):
    state = norm_state("norm.", d, seed, dtype)
    kwargs = {"d_model": d} if dropout is None else {"d_model": d, "dropout": dropout}
    return student.build(C, "AddAndNorm", state=state, train=train, dtype=dtype, **kwargs), state


def check_add_norm(student, h, state, x, s, what, default, strict=False):
    """y = AddAndNorm(x, s) ≈ LayerNorm(x + s) with the copied weights, or a named mistake.
    strict: the one property that owns AddAndNorm's dtype and device."""
    y = tensor(
        student.method(h, "forward", x, s),
        what,
        like=x,
        check_dtype=strict,
        nan_hint=_(LAYER_NORM_NAN),
    )
    w, b = state["norm.weight"], state["norm.bias"]
    expected = expected_values.layer_norm((x + s).double(), w.double(), b.double())
    close(
        y,
        expected,
        what,
        lambda: default() if callable(default) else add_norm_hint(student, x, s, y, w, b, default),
        dtype=x.dtype,
    )
    return y


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


def check_dropout_on_the_sublayer_output(student, shape, seed, dtype, p=0.5):
    """In training mode every position of AddAndNorm(x, s) is LayerNorm(x + pattern * s) for one of the 2^d
    dropout patterns of s (each feature kept and scaled by 1/(1-p), or zeroed): dropout of the sum, of the
    norm's output or of nothing matches none. Eval mode is checked first (its own mistake, its own hint)."""
    d = shape[-1]
    x, s = randn(shape, seed + 2, dtype), randn(shape, seed + 3, dtype, 2.0)
    h_eval, state = build_add_norm(student, d, seed, dtype, dropout=p, train=False)
    check_add_norm(
        student,
        h_eval,
        state,
        x,
        s,
        _("AddAndNorm(x, sublayer_output) in eval mode"),
        _("out = norm(x + dropout(sublayer_output)); get eval mode right first"),
    )
    h, state = build_add_norm(student, d, seed, dtype, dropout=p, train=True)
    y = tensor(
        student.method(h, "forward", x, s),
        _("AddAndNorm(x, sublayer_output) in training mode"),
        like=x,
    )
    w, b = state["norm.weight"].double(), state["norm.bias"].double()
    # (2^d, d): every way dropout can treat the d features of one position
    patterns = torch.tensor(
        list(itertools.product([0.0, 1 / (1 - p)], repeat=d)), dtype=torch.float64
    )
    lead = (None,) * (len(shape) - 1)
    candidates = expected_values.layer_norm(
        x.double() + patterns[(slice(None), *lead)] * s.double(), w, b
    )
    err = (candidates - y.double()).abs().amax(-1)  # (2^d, *lead)
    atol = 1e-4 if dtype == torch.float32 else 1e-8
    matched = err.amin(0) <= atol
    plain = expected_values.layer_norm((x + s).double(), w, b)
    if is_close(y, plain, dtype):
        fail(
            _(
                "in training mode with dropout=0.5 nothing was dropped: the output is exactly "
                "LayerNorm(x + s)"
            ),
            _(
                "apply self.dropout (an nn.Dropout) to the sublayer output: norm(x + "
                "dropout(sublayer_output))"
            ),
        )
    if not matched.all():
        fail(
            _(
                "in training mode an output position is not LayerNorm(x + dropout(s)) for any dropout "
                "pattern of s"
            ),
            _(
                "dropout goes on the sublayer output only, before the residual add: "
                "norm(x + dropout(sublayer_output)), not dropout of the sum or of the norm"
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
