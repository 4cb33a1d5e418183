"""LayerNorm on the checking side, right or with one of its usual mistakes given as flags: the one model behind
the add_norm (torch) and attention_numpy (NumPy) diagnoses. Right, it is torch's F.layer_norm; with a mistake it
is the graded side's LayerNorm by hand (this module's graded-only region, BY_HAND) where the caller has it, and in
the student bundle the same mistake written with F.layer_norm (a rescaled eps, a moved axis or a factor: equal to
the by-hand one to 7e-16, docs/bundle.md), which the LayerNorm exercises forbid."""

from __future__ import annotations

import enum
import math
from types import SimpleNamespace

import torch
import torch.nn.functional as F

from ...i18n import N_
from ...suite.mistakes import Hints


class NormMistake(enum.Flag):
    """The usual mistakes in writing LayerNorm, one flag each (the wrong axis is the model's `dim`)."""

    NONE = 0
    UNBIASED = enum.auto()  # the variance divided by n - 1
    EPS_OUTSIDE = enum.auto()  # (x - mean) / (sqrt(var) + eps)
    NO_EPS = enum.auto()  # (x - mean) / sqrt(var)
    VAR_NOT_STD = enum.auto()  # (x - mean) / (var + eps)


NORM_HINTS = Hints(
    NormMistake,
    {
        NormMistake.EPS_OUTSIDE: N_(
            "eps goes inside the square root: (x - mean) / sqrt(var + eps), not / (sqrt(var) + eps)"
        ),
        NormMistake.NO_EPS: N_("eps is missing: (x - mean) / sqrt(var + eps)"),
        NormMistake.VAR_NOT_STD: N_(
            "divided by the variance: divide by the standard deviation sqrt(var + eps)"
        ),
    },
    # the variance's name in each exercise's library
    worded={
        "add_norm": {
            NormMistake.UNBIASED: N_(
                "unbiased variance (torch.var's default, unbiased=True): LayerNorm uses the biased "
                "variance mean((x - mean)^2), i.e. x.var(-1, unbiased=False)"
            )
        },
        "attention_numpy": {
            NormMistake.UNBIASED: N_(
                "unbiased variance (ddof=1): LayerNorm uses the biased variance mean((x - mean)^2)"
            )
        },
    },
    # The order each diagnosis tries them (suite/norms.py, suite/numpy_warmup.py), before the checks that have
    # no mistake model (the axis, weight and bias, the eps argument) and, in add_norm, before any eps solved
    # from y. The NumPy warm-up names a missing eps by the NaN of a constant row, checked first there.
    order={
        "add_norm": (
            NormMistake.EPS_OUTSIDE,
            NormMistake.NO_EPS,
            NormMistake.UNBIASED,
            NormMistake.VAR_NOT_STD,
        ),
        "attention_numpy": (
            NormMistake.UNBIASED,
            NormMistake.EPS_OUTSIDE,
            NormMistake.VAR_NOT_STD,
        ),
    },
)


def library_variance(y, shape) -> torch.Tensor:
    """The biased variance of y over its trailing `shape`, kept as dims of size 1, from F.layer_norm alone
    (forbidden in the LayerNorm exercises: no variance by hand ships, issue 35): with eps 0 the norm is c / sigma,
    with eps 1 c / sqrt(sigma^2 + 1), so the ratio r of the two at a row's largest element gives
    sigma^2 = 1 / (r^2 - 1); a constant row's is 0."""
    dims = tuple(range(-len(shape), 0))
    at_0, at_1 = (F.layer_norm(y, shape, eps=e) for e in (0.0, 1.0))
    flat_0, flat_1 = at_0.flatten(-len(shape)), at_1.flatten(-len(shape))
    largest = flat_1.abs().argmax(
        -1, keepdim=True
    )  # a row's ratio is the same at every element: its clearest
    top_0, top_1 = flat_0.gather(-1, largest), flat_1.gather(-1, largest)
    var = torch.where(top_1 == 0, 0.0, 1 / ((top_0 / top_1) ** 2 - 1))
    return var.reshape(var.shape[:-1] + (1,) * len(dims))


def layer_norm_model(
    x, weight=None, bias=None, eps=1e-5, mistake=NormMistake.NONE, dim=-1, mistake_models=None
):
    """LayerNorm of x in float64 over `dim` (an int, or every dim of x as a tuple: anything but -1 is the
    wrong-axis mistake), with `mistake`; weight and bias (or None) applied after. mistake_models: the graded side's
    layer_norm module, or None (the student bundle)."""
    x = x.double()
    w = None if weight is None else weight.double()
    b = None if bias is None else bias.double()
    if mistake == NormMistake.NONE and dim == -1:
        return F.layer_norm(x, (x.shape[-1],), w, b, eps)
    if mistake_models is not None:
        return mistake_models.ln_variant(x, w, b, eps, mistake, dim)
    whole = isinstance(dim, tuple)
    y = x if whole else x.movedim(dim, -1)
    shape = tuple(y.shape) if whole else (y.shape[-1],)
    n = math.prod(shape)
    var = library_variance(y, shape)
    if NormMistake.UNBIASED in mistake:  # n/(n-1)·var: the same norm of a rescaled eps, rescaled
        out = math.sqrt((n - 1) / n) * F.layer_norm(y, shape, eps=eps * (n - 1) / n)
    elif NormMistake.EPS_OUTSIDE in mistake:
        out = F.layer_norm(y, shape, eps=0.0) * var.sqrt() / (var.sqrt() + eps)
    elif NormMistake.NO_EPS in mistake:
        out = F.layer_norm(y, shape, eps=0.0)
    elif NormMistake.VAR_NOT_STD in mistake:
        out = F.layer_norm(y, shape, eps=eps) / (var + eps).sqrt()
    else:
        out = F.layer_norm(y, shape, eps=eps)
    out = out if whole else out.movedim(-1, dim)
    return out if w is None else out * w + b


# The by-hand mistake models: the graded side's; None in the student bundle (suite/graded.py).
BY_HAND: SimpleNamespace | None = None


# >>> graded only: an answer, which `release` strips (suite/graded.py, docs/bundle.md)
def ln_variant(x, weight=None, bias=None, eps=1e-5, mistake=NormMistake.NONE, dim=-1):
    """LayerNorm in float64 over dim (an int or a tuple), or with `mistake`."""
    x = x.double()
    mean = x.mean(dim, keepdim=True)
    n = 1
    for i in (dim,) if isinstance(dim, int) else dim:
        n *= x.shape[i]
    ddof = 1 if NormMistake.UNBIASED in mistake else 0
    var = ((x - mean) ** 2).sum(dim, keepdim=True) / (n - ddof)
    if NormMistake.VAR_NOT_STD in mistake:
        y = (x - mean) / (var + eps)
    elif NormMistake.NO_EPS in mistake:
        y = (x - mean) / var.sqrt()
    elif NormMistake.EPS_OUTSIDE in mistake:
        y = (x - mean) / (var.sqrt() + eps)
    else:
        y = (x - mean) / (var + eps).sqrt()
    if weight is not None:
        y = y * weight.double() + bias.double()
    return y


BY_HAND = SimpleNamespace(ln_variant=ln_variant)
# <<< graded only
