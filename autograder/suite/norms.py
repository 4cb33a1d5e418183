"""What add_norm's visible and hidden properties share: LayerNorm and AddAndNorm built with the kit's weights
and run, the checking side's LayerNorm with a mistake as flags (models/layer_norm.py, by hand where the graded
side's diagnoses are), the eps a submission uses read back, the hints that name a LayerNorm's or an AddAndNorm's
mistake, and the check that dropout acts on the sublayer's output alone. The properties live in
properties/add_norm.py.
"""

from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F

from ..i18n import N_, _
from ..properties.models import layer_norm as layer_norm_models
from ..properties.models.layer_norm import (
    NORM_HINTS,
    NormMistake,
    layer_norm_model,
    library_variance,
)
from ..student_code import Call
from . import expected_values
from .checks import (
    close,
    diagnose,
    fail,
    is_close,
    tensor,
)
from .graded import matches
from .strategies import norm_state, randn

# LayerNorm by hand with its usual mistakes: the graded side's; None in the student bundle (docs/bundle.md).
mistake_models = layer_norm_models.BY_HAND

C = "add_norm"


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


def layer_norm(student, h, x, strict=False, seed=0):
    """strict: the one property that owns LayerNorm's dtype and device. seed: the generators' seed for the call
    (an invariance calls twice with two seeds: seeded noise is no LayerNorm that agrees with itself)."""
    return tensor(
        student.run(Call(h, "forward", (x,), {}, seed=seed)).value,
        "LayerNorm(x)",
        like=x,
        check_dtype=strict,
        nan_hint=_(LAYER_NORM_NAN),
    )


def standardized(shape, seed, dtype, std=1.0, mean=0.0):
    """Rows (last dim) with exactly mean `mean` and biased std `std` (before the cast to dtype)."""
    z = randn(shape, seed)
    z = F.layer_norm(z, z.shape[-1:], eps=0.0)  # torch's, not standardised by hand (issue 35)
    return (z * std + mean).to(dtype)


def ln_variant(x, weight=None, bias=None, eps=1e-5, mistake=NormMistake.NONE, dim=-1):
    """models.layer_norm's LayerNorm in float64, with this module's mistake_models (None in the student bundle)."""
    return layer_norm_model(x, weight, bias, eps, mistake, dim, mistake_models)


def their_eps(x, y, weight, bias, eps, inside: bool) -> float | None:
    """The eps that y was computed with, if y is a LayerNorm with eps inside (or outside) the square root and an
    eps other than the contract's `eps`; else None. Solved per element from y = c / sqrt(var + e) * w + b
    (c = x - mean), the median taken, then checked: the whole of y must agree with it. The row's moments come
    from F.layer_norm alone (forbidden in add_norm.py: no LayerNorm by hand ships, issue 35): with eps 0 it is
    c / sigma, with eps 1 c / sqrt(sigma^2 + 1), so their ratio r gives sigma^2 = 1 / (r^2 - 1)."""
    x64, y64, w, b = x.double(), y.double(), weight.double(), bias.double()
    var = library_variance(x64, x64.shape[-1:])
    c = F.layer_norm(x64, x64.shape[-1:], eps=0.0) * var.sqrt()  # a constant row: NaN, never usable
    z = (y64 - b) / torch.where(w.abs() > 1e-3, w, torch.ones_like(w))
    usable = (w.abs() > 1e-3) & (c.abs() > 1e-3 * var.sqrt()) & (z.abs() > 1e-9) & c.isfinite()
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


# long: the table of LayerNorm's mistakes and their hints, one entry each, tried in order
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
    same = lambda mistake: matches(y, ln_variant(x, w, b, eps, mistake), dt)  # noqa: E731
    return diagnose(
        default,
        *NORM_HINTS.candidates(same, component=C),  # NORM_HINTS' order for add_norm
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
