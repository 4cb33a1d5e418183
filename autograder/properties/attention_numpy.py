"""Properties of the NumPy warm-up: attention_numpy.softmax, scaled_dot_product_attention and layer_norm.

NumPy arrays in and out (float32 or float64, kept). Expected values come from torch in float64 on the
checking side, so they do not share code, or mistakes, with a NumPy implementation.
"""

from __future__ import annotations

import enum
import math

import numpy as np
import torch
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ..i18n import N_, _
from ..suite import expected_values, graded
from ..suite.checks import (
    VERSUS,
    array,
    close,
    consistent,
    diagnose,
    expect,
    fail,
    is_close,
    nearest,
    not_constant,
    written_by_hand,
    wrong_shape,
)
from ..suite.clauses import AttentionNumpy
from ..suite.core import Evidence, Kind, named, prop
from ..suite.error_hints import ELEMENTWISE_HINT
from ..suite.graded import matches
from ..suite.strategies import MaskedAttentionInputs, arrays, composite
from .models.layer_norm import NormMistake, layer_norm_model

# LayerNorm by hand with its usual mistakes: the graded side's; None in the student bundle (docs/bundle.md).
mistake_models = graded.diagnosis("layer_norm")

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


def softmax(student, x, axis=-1, strict=False):
    """strict: the one property that owns softmax's dtype."""
    return array(
        student.call(C, "softmax", x, axis=axis),
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


def layer_norm(student, x, eps=None, strict=False):
    """strict: the one property that owns layer_norm's dtype."""
    kwargs = {} if eps is None else {"eps": eps}
    what = "layer_norm(x)" if eps is None else f"layer_norm(x, eps={eps})"
    return array(
        student.call(C, "layer_norm", x, **kwargs),
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


EPS_INSIDE = N_(
    "eps goes inside the square root: (x - mean) / sqrt(var + eps), not / (sqrt(var) + eps)"
)


def layer_norm_hint(x, y, eps, default: str) -> str:
    """Name the LayerNorm mistake that explains y, if one does."""
    return diagnose(
        default,
        (
            lambda: np.isnan(y).any() and not np.isnan(ln_variant(x, eps).numpy()).any(),
            _(
                "NaN for a constant row: its variance is 0, add eps inside the square root: sqrt(var + eps)"
            ),
        ),
        (
            lambda: matches(y, ln_variant(x, eps, NormMistake.UNBIASED), y.dtype),
            _("unbiased variance (ddof=1): LayerNorm uses the biased variance mean((x - mean)^2)"),
        ),
        (
            lambda: matches(y, ln_variant(x, eps, NormMistake.EPS_OUTSIDE), y.dtype),
            _(EPS_INSIDE),
        ),
        (
            lambda: x.ndim > 1 and matches(y, ln_variant(x, eps, axis=0), y.dtype),
            _(
                "normalised over axis 0: the wrong axis; mean and variance are over the last axis "
                "(axis=-1, keepdims=True)"
            ),
        ),
        (
            lambda: matches(y, ln_variant(x, eps, NormMistake.VAR_NOT_STD), y.dtype),
            _("divided by the variance: divide by the standard deviation sqrt(var + eps)"),
        ),
        (
            lambda: eps != 1e-5 and matches(y, ln_variant(x, 1e-5), y.dtype),
            _("ignores the eps argument: use the eps it is called with"),
        ),
        (
            lambda: is_close(
                y, t64(x) / (t64(x).var(-1, unbiased=False, keepdim=True) + eps).sqrt(), y.dtype
            ),
            _("the mean is not subtracted: (x - mean) / sqrt(var + eps)"),
        ),
    )


# ------------------------------------------------------------------------------------------------- softmax
# Shared with attention.py.
LARGE_LOGITS = N_("softmax of large logits")
LARGE_LOGITS_NOT_FINITE = N_("softmax of large logits gives inf or NaN")
ALL_NEG_INF_ROW = N_("softmax of an all -inf row")
ROW_OF_ZEROS = N_("softmax of a row of zeros")


@prop(C, points=2, examples=5, clauses=(AttentionNumpy.SOFTMAX,))
@given(
    x=st.integers(1, 3)
    .flatmap(lambda r: st.lists(st.integers(2, 4), min_size=r, max_size=r))
    .flatmap(lambda shape: arrays(tuple(shape))),
    dtype=np_dtypes(),
)
@example(x=np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]), dtype=np.float64)
def np_softmax_rows_sum_to_one(student, x, dtype):
    """softmax(x) is non-negative and sums to 1 along the last axis, in x's dtype."""
    x = x.astype(dtype)
    y = softmax(student, x, strict=True)
    expect(
        (y >= 0).all(),
        _("softmax has negative entries"),
        _("exp(...) is never negative: is np.exp missing?"),
    )
    sums = np.atleast_1d(y.astype(np.float64).sum(-1))
    if not is_close(sums, np.ones_like(sums), dtype):
        fail(
            _("values do not sum to 1 along the last axis (sums: {sums})").format(
                sums=sums.ravel()[:4].tolist()
            ),
            diagnose(
                _("divide exp(x - max) by its sum along the same axis (keepdims=True)"),
                (
                    lambda: x.ndim > 1 and is_close(y.sum(0), np.ones(y.shape[1:]), dtype),
                    _("sums to 1 along axis 0, not along `axis`: softmax over the wrong axis"),
                ),
                (
                    lambda: is_close(y.sum(), np.float64(1.0), dtype),
                    _(
                        "the whole array sums to 1: sum along the axis with keepdims=True, not over "
                        "everything"
                    ),
                ),
            ),
        )
    close(
        y,
        expected_softmax(x),
        "softmax(x)",
        _("softmax = exp(x - max) / sum(exp(x - max)) along the axis"),
        dtype=dtype,
    )


@prop(C, points=1, examples=4, clauses=(AttentionNumpy.SOFTMAX,))
@given(x=arrays((2, 3, 4)), axis=st.sampled_from([0, 1, 2, -2, -1]))
def np_softmax_respects_axis(student, x, axis):
    """softmax(x, axis) normalises along `axis`, whichever it is."""
    y = softmax(student, x, axis)
    expected = expected_softmax(x, axis)
    close(
        y,
        expected,
        f"softmax(x, axis={axis})",
        lambda: diagnose(
            _("take max and sum along `axis` with keepdims=True"),
            (
                lambda: is_close(y, expected_softmax(x, -1)),
                _("ignores the axis argument: always the last axis?"),
            ),
            (
                lambda: is_close(y, expected_softmax(x, 0)),
                _("always axis 0: the wrong axis; use axis=axis"),
            ),
        ),
    )


@prop(C, points=2, examples=4, clauses=(AttentionNumpy.SOFTMAX,))
@given(x=arrays((2, 4), lo=-1e4, hi=1e4), dtype=np_dtypes())
@example(x=np.array([[1e4, 0.0, -1e4, 5.0], [1000.0, 1000.0, 999.0, -1e4]]), dtype=np.float32)
@example(x=np.array([[-1e4, -1e4, -9999.0, -1e4], [800.0, 0.0, 0.0, 0.0]]), dtype=np.float64)
def np_softmax_is_stable_for_large_logits(student, x, dtype):
    """Logits of ±1e4 give finite, exact probabilities (no overflow, no 0/0)."""
    x = x.astype(dtype)
    y = softmax(student, x)
    expect(
        np.isfinite(y).all(),
        _(LARGE_LOGITS_NOT_FINITE),
        _(
            "np.exp(1e4) overflows and np.exp(-1e4) underflows to 0: subtract the max along the axis "
            "before exp (it cancels in the ratio)"
        ),
    )
    close(
        y,
        expected_softmax(x),
        _(LARGE_LOGITS),
        _("subtract the max along the same axis"),
        dtype=dtype,
    )


@prop(C, points=1, examples=3, clauses=(AttentionNumpy.SOFTMAX,))
@given(dtype=np_dtypes(), n=st.integers(1, 4))
def np_softmax_of_all_neg_inf_row_is_zero(student, dtype, n):
    """A slice that is entirely -inf gives all zeros, not NaN."""
    x = np.zeros((2, n), dtype=dtype)
    x[1] = -np.inf
    y = softmax(student, x)
    close(
        y[1],
        np.zeros(n),
        _(ALL_NEG_INF_ROW),
        _("the max is -inf, so x - max is NaN: replace a -inf max by 0, and a zero sum by 1"),
        dtype=dtype,
    )
    close(y[0], np.full(n, 1 / n), _(ROW_OF_ZEROS), dtype=dtype)


# ----------------------------------------------------------------------------------------------- attention
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


@prop(
    C,
    points=3,
    examples=5,
    clauses=(
        AttentionNumpy.ATTENTION,
        AttentionNumpy.MASK,
    ),
)
@given(inputs=np_attention_inputs())
@example(
    inputs=MaskedAttentionInputs(
        query=np.ones((1, 2, 2)),
        key=np.array([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]]),
        value=np.arange(6.0).reshape(1, 3, 2),
        mask=np.array([[True, False, True], [False, False, False]]),
    )
)
def np_attention_equals_expected(student, inputs):
    """Output and weights equal softmax(q k^T / sqrt(d_k)) v in float64 (masks, m_q != m_k, leading dims)."""
    q, k, v, m = inputs.query, inputs.key, inputs.value, inputs.mask
    out, w = attend(student, q, k, v, m)
    expected_out, expected_w = expected_attention(q, k, v, m)
    if is_close(w, expected_w, q.dtype) and is_close(out, expected_out, q.dtype):
        return
    hint = attention_hint(
        q,
        k,
        v,
        m,
        out,
        w,
        _(
            "compare the weights first: softmax(q @ k^T / sqrt(d_k)) with blocked scores at -inf, then "
            "weights @ v"
        ),
    )
    close(w, expected_w, "weights", hint, dtype=q.dtype)
    close(out, expected_out, "output", hint, dtype=q.dtype)


# The usual attention mistakes, named alike here and in attention.py.
INVERTED_MASK = N_("inverted mask: True means may attend, False is blocked")
MASK_IGNORED = N_("the mask is ignored")
NO_SCALING = N_("no scaling: divide the scores by sqrt(d_k)")
DIVIDED_BY_D_K = N_("divided by d_k: the scale is 1/sqrt(d_k)")
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

    def weights_with(mistake):
        return expected_attention(q, k, v, m, mistake)[1]

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
        (
            lambda: d_k > 1 and is_close(w, weights_with(AttentionMistake.NO_SCALE), q.dtype),
            _(NO_SCALING),
        ),
        (
            lambda: d_k > 1 and is_close(w, weights_with(AttentionMistake.SCALED_BY_D_K), q.dtype),
            _(DIVIDED_BY_D_K),
        ),
        (
            lambda: is_close(w, weights_with(AttentionMistake.SOFTMAX_OVER_QUERIES), q.dtype),
            _(
                "softmax over the queries (axis -2): each query's weights sum to 1 over the keys "
                "(axis -1)"
            ),
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


@prop(C, points=1, examples=3, kind=Kind.SHAPE, clauses=(AttentionNumpy.ATTENTION,))
@given(inputs=np_attention_inputs())
def np_attention_shapes_and_dtype(student, inputs):
    """Returns (output, weights): output (..., m_q, d_v), weights (..., m_q, m_k), both in q's dtype."""
    attend(student, inputs.query, inputs.key, inputs.value, inputs.mask, strict=True)


@prop(C, points=1, examples=4, clauses=(AttentionNumpy.ATTENTION,))
@given(inputs=np_attention_inputs(mask="none"))
def np_attention_weights_are_a_distribution(student, inputs):
    """Without a mask, weights are >= 0 and each query's weights sum to 1 over the keys."""
    q, k, v = inputs.query, inputs.key, inputs.value
    w = attend(student, q, k, v)[1]
    expect(
        (w >= 0).all(),
        _(NEGATIVE_WEIGHTS),
        _("the weights come out of a softmax: is it applied?"),
    )
    sums = np.atleast_1d(w.astype(np.float64).sum(-1))
    if not is_close(sums, np.ones_like(sums), q.dtype):
        fail(
            _("each query's weights should sum to 1 over the keys (last axis)"),
            diagnose(
                _("softmax over the keys: axis=-1 of the (m_q × m_k) scores"),
                (
                    lambda: is_close(w.sum(-2), np.ones(w.sum(-2).shape), q.dtype),
                    _(
                        "weights sum to 1 over the queries: softmax over axis -2 instead of the last "
                        "axis?"
                    ),
                ),
            ),
        )


@prop(C, points=2, examples=4, clauses=(AttentionNumpy.ATTENTION,))
@given(
    q=arrays((1, 4), lo=-2, hi=2),
    k=arrays((2, 4), lo=-2, hi=2),
    d_k=st.integers(2, 4),
    dtype=np_dtypes(),
)
@example(q=np.ones((1, 4)), k=np.array([[1.0, 1, 1, 1], [0, 0, 0, 0]]), d_k=4, dtype=np.float64)
def np_attention_two_keys_closed_form(student, q, k, d_k, dtype):
    """With two keys, w0 = sigmoid((q·k0 - q·k1) / sqrt(d_k)): the scale is exactly 1/sqrt(d_k)."""
    q, k = q[:, :d_k].astype(dtype), k[:, :d_k].astype(dtype)
    v = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype=dtype)
    w = attend(student, q, k, v)[1]
    delta = float(
        q[0].astype(np.float64) @ k[0].astype(np.float64)
        - q[0].astype(np.float64) @ k[1].astype(np.float64)
    )
    sig = lambda s: 1 / (1 + math.exp(-delta * s))  # noqa: E731
    expected, got = sig(1 / math.sqrt(d_k)), float(w[0, 0])
    if abs(got - expected) > 1e-4:
        fail(
            _(WEIGHT_OF_KEY_0).format(got=f"{got:.6g}", d_k=d_k, expected=f"{expected:.6g}"),
            diagnose(
                nearest(
                    got,
                    _(SCORES_SCALED),
                    (sig(1.0), _(NO_SCALING)),
                    (sig(1 / d_k), _(DIVIDED_BY_D_K)),
                    (sig(math.sqrt(d_k)), _(MULTIPLIED_BY_SQRT_D_K)),
                    (sig(1 / math.sqrt(3)), _(SCALED_BY_D_V)),
                ),
                (
                    got == 1.0 and float(w[0, 1]) == 1.0,
                    _(
                        "every weight is 1: with a single query that is a softmax over the queries "
                        "(axis -2); use axis=-1"
                    ),
                ),
            ),
        )


@prop(C, points=2, examples=4, clauses=(AttentionNumpy.MASK,))
@given(inputs=np_attention_inputs(mask="full"))
@example(
    inputs=MaskedAttentionInputs(
        query=np.ones((2, 2)),
        key=np.ones((3, 2)),
        value=np.ones((3, 2)),
        mask=np.array([[True, True, False], [False, False, False]]),
    )
)
def np_attention_fully_masked_rows_are_zero(student, inputs):
    """A query whose keys are all masked gets all-zero weights and output: never NaN."""
    q, k, v, m = inputs.query, inputs.key, inputs.value, inputs.mask
    out, w = attend(student, q, k, v, m)
    not_constant(w, expected_attention(q, k, v, m)[1], "weights")
    dead = ~np.broadcast_to(m, w.shape).any(-1)
    expect(
        (w[dead] == 0).all() and (out[dead] == 0).all(),
        _(FULLY_MASKED_NOT_ZERO),
        _(FULLY_MASKED_HINT),
    )
    blocked = ~np.broadcast_to(m, w.shape)
    expect(
        (w[blocked] == 0).all(),
        _(BLOCKED_KEY_WEIGHT),
        diagnose(
            _("set blocked scores (where the mask is False) to -inf before the softmax"),
            (
                lambda: (w[np.broadcast_to(m, w.shape)] == 0).all(),
                _(INVERTED_MASK),
            ),
        ),
    )


# ---------------------------------------------------------------------------------------------- layer norm
@prop(
    C,
    points=2,
    examples=5,
    clauses=(
        AttentionNumpy.LAYER_NORM,
        AttentionNumpy.EPS,
    ),
)
@given(
    x=st.tuples(st.integers(1, 3), st.integers(2, 8)).flatmap(lambda s: arrays(s)),
    dtype=np_dtypes(),
)
@example(x=np.array([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 5.0]]), dtype=np.float64)
@example(
    x=np.array([[0.0, 0.002, 0.004, 0.006, 0.008, 0.0], [3.0, -3.0, 3.0, -3.0, 3.0, 1.0]]),
    dtype=np.float32,
)
def np_layer_norm_rows_have_mean_zero_and_variance(student, x, dtype):
    """Each row of layer_norm(x) has mean 0 and biased variance σ²/(σ² + eps) (≈ 1 when σ² ≫ eps), in x's dtype."""
    x = x.astype(dtype)
    y = layer_norm(student, x, strict=True)
    y64, x64 = y.astype(np.float64), x.astype(np.float64)
    atol = atol_for(dtype)
    hint = lambda default: layer_norm_hint(x, y, 1e-5, default)  # noqa: E731
    mean = y64.mean(-1)
    if not np.allclose(mean, 0, atol=atol):
        fail(
            _("a row of layer_norm(x) has mean {mean}, expected 0").format(
                mean=f"{mean.ravel()[np.argmax(np.abs(mean.ravel()))]:.3g}"
            ),
            hint(_("subtract the mean over the last axis (axis=-1, keepdims=True)")),
        )
    s2 = x64.var(-1)
    expected = s2 / (s2 + 1e-5)
    var = y64.var(-1)
    if not np.allclose(var, expected, rtol=1e-4 if dtype == np.float32 else 1e-7, atol=atol):
        i = int(np.argmax(np.abs(var - expected)))
        fail(
            _(
                "row {row}: variance of the output {got}, expected σ²/(σ² + eps) = {expected}"
            ).format(row=i, got=f"{var.ravel()[i]:.6g}", expected=f"{expected.ravel()[i]:.6g}"),
            hint(_("divide by sqrt(var + eps), var the biased variance over the last axis")),
        )


@prop(
    C,
    points=2,
    examples=6,
    clauses=(
        AttentionNumpy.LAYER_NORM,
        AttentionNumpy.EPS,
    ),
)
@given(
    x=st.tuples(st.lists(st.integers(1, 2), max_size=2), st.integers(2, 6)).flatmap(
        lambda s: arrays((*s[0], s[1]))
    ),
    scale=st.sampled_from([1.0, 1e-2, 2e-3]),
    eps=st.sampled_from([None, 1e-5, 1e-3, 0.5]),
    dtype=np_dtypes(),
)
@example(
    x=np.array([[0.0, 1.0, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0]]), scale=2e-3, eps=None, dtype=np.float64
)
def np_layer_norm_equals_expected(student, x, scale, eps, dtype):
    """layer_norm(x, eps) equals torch's layer_norm over the last axis (no affine), at large and small variance."""
    x = (x * scale).astype(dtype)
    y = layer_norm(student, x, eps)
    e = 1e-5 if eps is None else eps
    expected = expected_values.layer_norm(t64(x), eps=e)
    close(
        y,
        expected,
        "layer_norm(x)" if eps is None else f"layer_norm(x, eps={eps})",
        lambda: layer_norm_hint(
            x, y, e, _("(x - mean) / sqrt(var + eps) over the last axis, biased variance")
        ),
        dtype=dtype,
    )


@prop(C, points=1, examples=4, clauses=(AttentionNumpy.LAYER_NORM,))
@given(x=arrays((2, 5)), dtype=np_dtypes())
def np_layer_norm_is_odd(student, x, dtype):
    """layer_norm(-x) = -layer_norm(x)."""
    x = x.astype(dtype)
    consistent(
        layer_norm(student, -x),
        -layer_norm(student, x),
        _(VERSUS).format(left="layer_norm(-x)", right="-layer_norm(x)"),
        _(
            "subtract the mean and divide by the standard deviation: both flip or keep with the sign "
            "of x"
        ),
        dtype=dtype,
        expected=-expected_values.layer_norm(t64(x)),
    )


@prop(C, points=2, examples=4, clauses=(AttentionNumpy.LAYER_NORM,))
@given(
    x=st.tuples(st.lists(st.integers(2, 3), min_size=2, max_size=3), st.integers(2, 5)).flatmap(
        lambda s: arrays((*s[0], s[1]))
    ),
    dtype=np_dtypes(),
)
@example(x=np.arange(24.0).reshape(2, 3, 4) % 5, dtype=np.float64)
def np_layer_norm_normalises_the_last_axis_of_any_rank(student, x, dtype):
    """On 3-D and 4-D inputs (every axis longer than 1) layer_norm normalises the last axis: a mistaken axis shows
    as wrong values here, never as a shrunk 1-D input that crashes."""
    x = x.astype(dtype)
    y = layer_norm(student, x)
    close(
        y,
        expected_values.layer_norm(t64(x), eps=1e-5),
        _("layer_norm(x) for x of shape {shape}").format(shape=x.shape),
        lambda: layer_norm_hint(
            x,
            y,
            1e-5,
            _(
                "mean and variance over the wrong axis: use axis=-1 (the last), whatever the number of "
                "dims"
            ),
        ),
        dtype=dtype,
    )


@prop(C, points=1, examples=1, kind=Kind.STATIC)
def attention_numpy_is_written_by_hand(student):
    """attention_numpy.py calls no library softmax, attention or layer norm (static check)."""
    written_by_hand(
        student,
        C,
        _(
            "write softmax from np.exp, np.max and np.sum, and layer_norm from np.mean: no "
            "scipy.special.softmax, torch or getattr tricks"
        ),
    )
