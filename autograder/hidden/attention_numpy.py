"""Hidden properties of the NumPy warm-up (attention_numpy)."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.i18n import _
from autograder.suite import expected_values
from autograder.suite.checks import (
    VERSUS,
    close,
    consistent,
    expect,
    fail,
    is_close,
    not_constant,
)
from autograder.suite.core import prop
from autograder.suite.numpy_warmup import (
    C,
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
from autograder.suite.strategies import arrays, composite

from ..suite.clauses import AttentionNumpy


@prop(C, points=1, examples=3, visible=False, clauses=(AttentionNumpy.SOFTMAX,))
@given(x=arrays((2, 4)), shift=st.floats(-100, 100, width=32), dtype=np_dtypes())
def np_softmax_is_shift_invariant(student, x, shift, dtype):
    """softmax(x + c) = softmax(x) for a constant c."""
    x = x.astype(dtype)
    consistent(
        softmax(student, (x + shift).astype(dtype), seed=1),
        softmax(student, x),
        _(VERSUS).format(left="softmax(x + c)", right="softmax(x)"),
        _("subtract the max along the axis: adding a constant to every logit must change nothing"),
        dtype=dtype,
        expected=expected_softmax(x),
        given=x,
    )


@composite
def partly_broadcast_masks(draw):
    """(q, k, v, mask), a plain tuple (as the reports print it), with leading dims (2, h) and a mask of shape
    (2, 1, m_q, m_k) or (1, h, 1, m_k)."""
    h = draw(st.integers(1, 2))
    qkv = draw(np_attention_inputs(mask="none", lead=(2, h)))
    q, k, v = qkv.query, qkv.key, qkv.value
    m_q, m_k = q.shape[-2], k.shape[-2]
    shape = draw(st.sampled_from([(2, 1, m_q, m_k), (1, h, 1, m_k), (m_k,)]))
    return q, k, v, draw(hnp.arrays(np.bool_, shape, elements=st.booleans()))


@prop(C, points=2, examples=8, visible=False, clauses=(AttentionNumpy.MASK,))
@given(inputs=partly_broadcast_masks())
def np_attention_mask_broadcasts(student, inputs):
    """A mask broadcastable to (..., m_q, m_k) (padding-style, per batch) is applied by broadcasting."""
    q, k, v, m = inputs
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
        _("combine the mask with the scores by broadcasting: blocked scores (False) become -inf"),
    )
    close(
        w,
        expected_w,
        _("weights with a mask of shape {shape}").format(shape=m.shape),
        hint,
        dtype=q.dtype,
    )
    close(
        out,
        expected_out,
        _("output with a mask of shape {shape}").format(shape=m.shape),
        hint,
        dtype=q.dtype,
    )


@prop(
    C,
    points=1,
    examples=3,
    visible=False,
    clauses=(
        AttentionNumpy.ATTENTION,
        AttentionNumpy.MASK,
    ),
)
@given(inputs=np_attention_inputs(mask="full", lead=()), seed=st.integers(0, 100))
def np_attention_is_key_permutation_invariant(student, inputs, seed):
    """Permuting keys, values and mask columns together leaves the output unchanged and permutes the weights."""
    q, k, v, m = inputs.query, inputs.key, inputs.value, inputs.mask
    perm = np.random.default_rng(seed).permutation(k.shape[-2])
    out, w = attend(student, q, k, v, m)
    out_p, w_p = attend(student, q, k[perm], v[perm], m[:, perm])
    hint = _(
        "each key's score is q·k / sqrt(d_k) with its own mask entry: nothing may depend on the key "
        "order"
    )
    expected_out, expected_w = expected_attention(q, k, v, m)
    consistent(
        out_p,
        out,
        _("output with keys and values permuted"),
        hint,
        dtype=q.dtype,
        expected=expected_out,
    )
    consistent(
        w_p,
        w[:, perm],
        _("weights with keys permuted"),
        hint,
        dtype=q.dtype,
        expected=expected_w[:, perm],
    )


@prop(C, points=1, examples=3, visible=False, clauses=(AttentionNumpy.EPS,))
@given(c=st.floats(-5, 5, width=32), d=st.integers(1, 6), dtype=np_dtypes())
@example(c=3.0, d=4, dtype=np.float32)
def np_layer_norm_constant_rows_are_zero(student, c, d, dtype):
    """A constant row (variance 0) maps to zeros: eps keeps the division finite."""
    x = np.full((2, d), c, dtype=dtype)
    x[1] = np.arange(d, dtype=dtype)
    y = layer_norm(student, x)
    expect(
        np.isfinite(y).all(),
        _("layer_norm of a constant row gives inf or NaN"),
        _("a constant row has variance 0: add eps inside the square root, sqrt(var + eps)"),
    )
    not_constant(y, expected_values.layer_norm(t64(x)), "layer_norm(x)", given=x)
    close(
        y[0],
        np.zeros(d),
        _("layer_norm of a constant row"),
        _("x - mean is 0 for a constant row"),
        dtype=dtype,
    )


@prop(C, points=1, examples=3, visible=False, clauses=(AttentionNumpy.EPS,))
@given(x=arrays((2, 4)), eps=st.sampled_from([0.1, 1.0, 10.0]), dtype=np_dtypes())
@example(x=np.array([[1.0, -1.0, 1.0, -1.0], [0.0, 1.0, 2.0, 3.0]]), eps=1.0, dtype=np.float64)
def np_layer_norm_uses_eps_argument(student, x, eps, dtype):
    """layer_norm(x, eps) uses the eps it is given: variance σ²/(σ² + eps)."""
    x = x.astype(dtype)
    y = layer_norm(student, x, eps)
    expected = expected_values.layer_norm(t64(x), eps=eps)
    close(
        y,
        expected,
        f"layer_norm(x, eps={eps})",
        lambda: layer_norm_hint(
            x, y, eps, _("add the eps argument to the variance: sqrt(var + eps)")
        ),
        dtype=dtype,
    )


@prop(C, points=1, examples=3, visible=False, clauses=(AttentionNumpy.LAYER_NORM,))
@given(x=arrays((3, 4)), row=st.integers(0, 2), new=arrays((4,), lo=-10, hi=10), dtype=np_dtypes())
def np_layer_norm_rows_are_independent(student, x, row, new, dtype):
    """Changing one row of x changes only that row of layer_norm(x)."""
    x = x.astype(dtype)
    x2 = x.copy()
    x2[row] = new.astype(dtype)
    y, y2 = layer_norm(student, x), layer_norm(student, x2, seed=1)
    not_constant(y, expected_values.layer_norm(t64(x)), "layer_norm(x)", given=x)
    keep = np.arange(3) != row
    if not is_close(y2[keep], y[keep], dtype):
        fail(
            _("changing row {row} changed the other rows").format(row=row),
            _(
                "the wrong axis: mean and variance are per row, over the last axis (axis=-1, "
                "keepdims=True)"
            ),
        )
