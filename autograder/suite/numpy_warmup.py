"""What the NumPy warm-up's (attention_numpy's) visible and hidden properties share, and the hints attention.py
names its mistakes with alike: the calls into softmax, scaled_dot_product_attention and layer_norm with their
replies read, the expected values (float64, by closed form), the checking side's layer norm with a mistake as
flags, the inputs drawn, and the hints that name a softmax's, an attention's or a layer norm's mistake. The
properties live in properties/attention_numpy.py.
"""

from __future__ import annotations

import enum
import math

import numpy as np
import torch
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ..i18n import N_, _
from ..properties.models import layer_norm as layer_norm_models
from ..properties.models.layer_norm import (
    NORM_HINTS,
    NormMistake,
    layer_norm_model,
    library_variance,
)
from ..student_code import Call
from .checks import (
    array,
    diagnose,
    fail,
    is_close,
    wrong_shape,
)
from .core import Evidence, named
from .error_hints import ELEMENTWISE_HINT
from .graded import matches
from .mistakes import Hints
from .strategies import MaskedAttentionInputs, arrays, composite

# LayerNorm by hand with its usual mistakes: the graded side's; None in the student bundle (docs/bundle.md).
mistake_models = layer_norm_models.BY_HAND

C = "attention_numpy"
NP_DTYPES = (np.float32, np.float64)


# ------------------------------------------------------------------------------------------- local helpers
def np_dtypes():
    return st.sampled_from(NP_DTYPES)


def t64(x) -> torch.Tensor:
    """A NumPy array (or bool mask) as a torch tensor; floats go to float64."""
    x = np.asarray(x)
    return torch.from_numpy(x.copy() if x.dtype == np.bool_ else x.astype(np.float64))


def atol_for(dtype) -> float:
    return 1e-4 if np.dtype(dtype) == np.float32 else 1e-9


SOFTMAX_NAN = N_(
    "a NaN in softmax comes from exp overflow (np.exp(1000) is inf, and inf / inf is NaN: subtract the "
    "max along the axis before exp) or from a slice that is all -inf (its max is -inf and -inf - (-inf) "
    "is NaN: replace a -inf max by 0 and a zero sum by 1)."
)
LAYER_NORM_NAN = N_(
    "a NaN in layer_norm comes from a row with variance 0 (a constant row): 0 / sqrt(0) is NaN; add "
    "eps inside the square root, sqrt(var + eps)."
)


def softmax(student, x, axis=-1, strict=False, seed=0):
    """strict: the one property that owns softmax's dtype. seed: the generators' seed for the call (an invariance
    calls twice with two seeds: noise from the seeded generators is no softmax that agrees with itself)."""
    return array(
        student.run(Call(C, "softmax", (x,), dict(axis=axis), seed=seed)).value,
        f"softmax(x, axis={axis})",
        shape=x.shape,
        dtype=x.dtype,
        check_dtype=strict,
        nan_hint=_(SOFTMAX_NAN),
    )


def shape_of(x):
    return tuple(x.shape) if isinstance(x, np.ndarray) else None


# What attention returns, checked alike here and in attention.py (the same messages).
NOT_A_PAIR = N_("scaled_dot_product_attention returned {type}, expected a tuple (output, weights)")
NOT_A_TUPLE = N_(
    "scaled_dot_product_attention returned a {type}, expected a tuple (output, weights)"
)
PAIR_SWAPPED = N_(
    "scaled_dot_product_attention returned (weights, output): shapes {weights_shape} then {output_shape}"
)
RETURN_THE_PAIR = N_("return output, weights")
OUTPUT_FIRST = N_("return output, weights: the output first, then the weights")


def attend(student, q, k, v, mask=None, strict=False):
    """(output, weights) of the student's attention.

    strict: the shape property, which alone checks the tuple's order and the dtype, and earns its points on
    shapes (NaN included). Elsewhere a (weights, output) tuple is put back in order and a float64 result for
    float32 inputs is judged by its values, so that one slip costs one property (d_v != m_k is always drawn).
    """
    out = student.call(C, "scaled_dot_product_attention", q, k, v, mask=mask)
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        fail(_(NOT_A_PAIR).format(type=type(out).__name__), _(RETURN_THE_PAIR))
    lead, m_q, m_k, d_v = q.shape[:-2], q.shape[-2], k.shape[-2], v.shape[-1]
    w_shape, o_shape = (*lead, m_q, m_k), (*lead, m_q, d_v)
    o, w = out
    if w_shape != o_shape and shape_of(o) == w_shape and shape_of(w) == o_shape:
        if strict:
            fail(
                _(PAIR_SWAPPED).format(weights_shape=w_shape, output_shape=o_shape),
                _(OUTPUT_FIRST),
            )
        o, w = w, o
    if strict and not isinstance(out, tuple):
        fail(_(NOT_A_TUPLE).format(type=type(out).__name__), _(RETURN_THE_PAIR))
    if m_q != m_k and shape_of(w) == (*lead, m_k, m_q):
        wrong_shape(
            "weights",
            w_shape,
            tuple(w.shape),
            _("the scores are (m_q × m_k): q @ k^T, not k @ q^T (q and k swapped?)"),
        )
    w = array(w, "weights", shape=w_shape, dtype=q.dtype, check_dtype=strict, shape_only=strict)
    if shape_of(o) != o_shape and shape_of(o) == _broadcast(w_shape, v.shape):  # weights * v
        wrong_shape("output", o_shape, tuple(o.shape), _(ELEMENTWISE_HINT))
    o = array(o, "output", shape=o_shape, dtype=q.dtype, check_dtype=strict, shape_only=strict)
    return o, w


def _broadcast(a: tuple, b: tuple):
    """The shape of an element-wise product of shapes a and b, or None where they do not broadcast."""
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def layer_norm(student, x, eps=None, strict=False, seed=0):
    """strict: the one property that owns layer_norm's dtype; seed: as softmax's."""
    kwargs = {} if eps is None else {"eps": eps}
    what = "layer_norm(x)" if eps is None else f"layer_norm(x, eps={eps})"
    return array(
        student.run(Call(C, "layer_norm", (x,), kwargs, seed=seed)).value,
        what,
        shape=x.shape,
        dtype=x.dtype,
        check_dtype=strict,
        nan_hint=_(LAYER_NORM_NAN),
    )


def expected_softmax(x, axis=-1):
    return torch.softmax(t64(x), dim=axis).nan_to_num(0.0)


class AttentionMistake(enum.Flag):
    """The usual mistakes in scaled dot-product attention, one flag each (a mask inverted or ignored is the
    model's `mask` argument)."""

    NONE = 0
    NO_SCALE = enum.auto()  # the scores not divided at all
    SCALED_BY_D_K = enum.auto()  # divided by d_k, not sqrt(d_k)
    SOFTMAX_OVER_QUERIES = enum.auto()  # softmax over axis -2


ATTENTION_HINTS = Hints(
    AttentionMistake,
    {
        AttentionMistake.NO_SCALE: N_("no scaling: divide the scores by sqrt(d_k)"),
        AttentionMistake.SCALED_BY_D_K: N_("divided by d_k: the scale is 1/sqrt(d_k)"),
        AttentionMistake.SOFTMAX_OVER_QUERIES: N_(
            "softmax over the queries (axis -2): each query's weights sum to 1 over the keys "
            "(axis -1)"
        ),
    },
)


def expected_attention(q, k, v, mask=None, mistake=AttentionMistake.NONE):
    """(output, weights) in float64, or with `mistake`."""
    q, k, v = t64(q), t64(k), t64(v)
    d_k = q.shape[-1]
    scale = 1 / math.sqrt(d_k)
    if AttentionMistake.NO_SCALE in mistake:
        scale = 1.0
    if AttentionMistake.SCALED_BY_D_K in mistake:
        scale = 1 / d_k
    s = q @ k.transpose(-2, -1) * scale
    if mask is not None:
        s = s.masked_fill(~t64(mask), float("-inf"))
    axis = -2 if AttentionMistake.SOFTMAX_OVER_QUERIES in mistake else -1
    w = torch.softmax(s, dim=axis).nan_to_num(0.0)
    return w @ v, w


def ln_variant(x, eps=1e-5, mistake=NormMistake.NONE, axis=-1):
    """models.layer_norm's LayerNorm of the array x in float64, with this module's mistake_models (None in the student
    bundle)."""
    return layer_norm_model(
        t64(x), eps=eps, mistake=mistake, dim=axis, mistake_models=mistake_models
    )


def layer_norm_hint(x, y, eps, default: str) -> str:
    """Name the LayerNorm mistake that explains y, if one does."""
    same = lambda mistake: matches(y, ln_variant(x, eps, mistake), y.dtype)  # noqa: E731
    return diagnose(
        default,
        (
            lambda: np.isnan(y).any() and not np.isnan(ln_variant(x, eps).numpy()).any(),
            _(
                "NaN for a constant row: its variance is 0, add eps inside the square root: sqrt(var + eps)"
            ),
        ),
        *NORM_HINTS.candidates(same, component=C),  # NORM_HINTS' order for the warm-up
        (
            lambda: x.ndim > 1 and matches(y, ln_variant(x, eps, axis=0), y.dtype),
            _(
                "normalised over axis 0: the wrong axis; mean and variance are over the last axis "
                "(axis=-1, keepdims=True)"
            ),
        ),
        (
            lambda: eps != 1e-5 and matches(y, ln_variant(x, 1e-5), y.dtype),
            _("ignores the eps argument: use the eps it is called with"),
        ),
        (
            lambda: is_close(
                y, t64(x) / (library_variance(t64(x), x.shape[-1:]) + eps).sqrt(), y.dtype
            ),
            _("the mean is not subtracted: (x - mean) / sqrt(var + eps)"),
        ),
    )


# ------------------------------------------------------------------------------------- attention's inputs
@composite
def np_attention_inputs(draw, mask: str = "any", lead=None):
    """(q, k, v, mask): leading dims, m_q != m_k, a bool mask (full or broadcast) or None."""
    dtype = draw(np_dtypes())
    lead = draw(st.lists(st.integers(1, 2), min_size=0, max_size=2)) if lead is None else list(lead)
    m_q = draw(st.integers(1, 3))
    m_k = draw(st.integers(1, 4).filter(lambda m: m != m_q))
    # The tuple's order shows.
    d_k, d_v = (
        draw(st.integers(1, 3)),
        draw(st.integers(1, 3).filter(lambda d: d != m_k)),
    )
    q = draw(arrays((*lead, m_q, d_k))).astype(dtype)
    k = draw(arrays((*lead, m_k, d_k))).astype(dtype)
    v = draw(arrays((*lead, m_k, d_v))).astype(dtype)
    kind = draw(st.sampled_from(["none", "full", "broadcast"])) if mask == "any" else mask
    m = None
    if kind != "none":
        shape = (*lead, m_q, m_k) if kind == "full" else (m_q, m_k)
        m = draw(hnp.arrays(np.bool_, shape, elements=st.booleans()))
    return MaskedAttentionInputs(query=q, key=k, value=v, mask=m)


# The usual attention mistakes, named alike here and in attention.py.
INVERTED_MASK = N_("inverted mask: True means may attend, False is blocked")
MASK_IGNORED = N_("the mask is ignored")
MULTIPLIED_BY_SQRT_D_K = N_("multiplied by sqrt(d_k): divide instead")
SCALED_BY_D_V = N_("scaled by sqrt(d_v): the scale uses d_k, the size of queries and keys")
SCORES_SCALED = N_("the scores are q·k / sqrt(d_k) before the softmax")
WEIGHT_OF_KEY_0 = N_(
    "weight of key 0: got {got}, expected sigmoid((q·k0 - q·k1)/sqrt({d_k})) = {expected}"
)
NEGATIVE_WEIGHTS = N_("negative attention weights")
FULLY_MASKED_NOT_ZERO = N_("a fully masked query row is not all zeros")
FULLY_MASKED_HINT = N_("fully masked rows must give all-zero weights and output")
BLOCKED_KEY_WEIGHT = N_("a blocked key (mask False) got non-zero weight")


def attention_hint(q, k, v, m, out, w, default: str) -> str:
    """Name the attention mistake that explains (out, w), if one does."""
    d_k = q.shape[-1]
    expected_out, expected_w = expected_attention(q, k, v, m)

    def same(mistake):
        return is_close(w, expected_attention(q, k, v, m, mistake)[1], q.dtype)

    return diagnose(
        default,
        (
            lambda: np.isnan(w).any() or np.isnan(out).any(),
            _(
                "NaN where a query's keys are all masked: a fully masked row must give zero weights and "
                "output (replace a -inf max by 0 and a zero sum by 1 in softmax)"
            ),
        ),
        (
            lambda: m is not None and is_close(w, expected_attention(q, k, v, ~m)[1], q.dtype),
            _(INVERTED_MASK),
        ),
        (
            lambda: m is not None and is_close(w, expected_attention(q, k, v)[1], q.dtype),
            _(MASK_IGNORED),
        ),
        # every mistake model, in the order declared; a scale of 1, 1/sqrt(d_k) and 1/d_k are one when
        # d_k = 1: no scale mistake to name there
        *ATTENTION_HINTS.candidates(
            same,
            without=AttentionMistake.NO_SCALE | AttentionMistake.SCALED_BY_D_K
            if d_k == 1
            else None,
        ),
        (
            lambda: rounded(w, expected_w) is not None,
            lambda: rounded_hint(w, expected_w, "weights"),
        ),
        (
            lambda: rounded(out, expected_out) is not None,
            lambda: rounded_hint(out, expected_out, "output"),
        ),
        (
            lambda: is_close(w, expected_w, q.dtype),
            _("weights are right but the output is not: output = weights @ v"),
        ),
    )


ROUNDED = N_(
    "your {what} is rounded to {decimals} decimals (np.around, round): return it unrounded, the checker "
    "compares full precision"
)


def rounded(got, expected) -> int | None:
    """The number of decimals d where `got` is `expected` rounded to d decimals (and not merely close), else
    None: the cause tested directly on the output."""
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    if got.shape != expected.shape or np.allclose(got, expected, rtol=1e-9, atol=1e-12):
        return None
    for decimals in range(0, 8):
        if np.allclose(got, np.around(expected, decimals), rtol=0, atol=1e-6 * 10.0**-decimals):
            return decimals
    return None


def rounded_hint(got, expected, what: str) -> str:
    # the output compared with a rounded copy of the right one: the cause shown directly
    return named(_(ROUNDED).format(what=what, decimals=rounded(got, expected)), Evidence.DIRECT)
