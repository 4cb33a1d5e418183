"""Properties of the NumPy warm-up: attention_numpy.softmax, scaled_dot_product_attention and layer_norm.

NumPy arrays in and out (float32 or float64, kept). Expected values come from torch in float64 on the
checking side, so they do not share code, or mistakes, with a NumPy implementation.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from ..i18n import N_, _
from ..suite import expected_values
from ..suite.checks import (
    VERSUS,
    close,
    consistent,
    diagnose,
    expect,
    fail,
    is_close,
    nearest,
    not_constant,
    written_by_hand,
)
from ..suite.clauses import AttentionNumpy
from ..suite.core import Kind, prop
from ..suite.numpy_warmup import (
    ATTENTION_HINTS,
    BLOCKED_KEY_WEIGHT,
    FULLY_MASKED_HINT,
    FULLY_MASKED_NOT_ZERO,
    INVERTED_MASK,
    MULTIPLIED_BY_SQRT_D_K,
    NEGATIVE_WEIGHTS,
    SCALED_BY_D_V,
    SCORES_SCALED,
    WEIGHT_OF_KEY_0,
    AttentionMistake,
    C,
    atol_for,
    attend,
    attention_hint,
    expected_attention,
    expected_softmax,
    layer_norm,
    layer_norm_hint,
    np_attention_inputs,
    np_dtypes,
    softmax,
    t64,
)
from ..suite.strategies import MaskedAttentionInputs, arrays
from .models.layer_norm import library_variance

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
                    (sig(1.0), ATTENTION_HINTS(AttentionMistake.NO_SCALE)),
                    (sig(1 / d_k), ATTENTION_HINTS(AttentionMistake.SCALED_BY_D_K)),
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
    # the variances from torch's layer norm (library_variance): no variance by hand ships (issue 35)
    s2, var = (
        library_variance(torch.from_numpy(a), a.shape[-1:]).squeeze(-1).numpy() for a in (x64, y64)
    )
    expected = s2 / (s2 + 1e-5)
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
        given=-x,
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
