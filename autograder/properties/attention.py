"""Properties of attention.softmax and attention.scaled_dot_product_attention (visible to students)."""

from __future__ import annotations

import math

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from ..i18n import N_, _
from ..student_code import Call
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
    tensor,
    written_by_hand,
    wrong_shape,
)
from ..suite.clauses import Attention
from ..suite.core import Evidence, Kind, named, prop
from ..suite.numpy_warmup import (
    ATTENTION_HINTS,
    BLOCKED_KEY_WEIGHT,
    FULLY_MASKED_HINT,
    FULLY_MASKED_NOT_ZERO,
    INVERTED_MASK,
    MASK_IGNORED,
    MULTIPLIED_BY_SQRT_D_K,
    NEGATIVE_WEIGHTS,
    NOT_A_PAIR,
    NOT_A_TUPLE,
    OUTPUT_FIRST,
    PAIR_SWAPPED,
    RETURN_THE_PAIR,
    SCALED_BY_D_V,
    SCORES_SCALED,
    WEIGHT_OF_KEY_0,
    AttentionMistake,
)
from ..suite.strategies import (
    AttentionInputs,
    MaskedAttentionInputs,
    attention_inputs,
    composite,
    dtypes,
    masks,
    tensors,
)
from .attention_numpy import (
    ALL_NEG_INF_ROW,
    LARGE_LOGITS,
    LARGE_LOGITS_NOT_FINITE,
    ROW_OF_ZEROS,
)

C = "attention"


SOFTMAX_NAN = N_(
    "a NaN in softmax comes from exp overflow (exp(1000) is inf, and inf / inf is NaN: subtract the row "
    "max before exp) or from a row that is all -inf (its max is -inf and -inf - (-inf) is NaN: replace a "
    "-inf max by 0 and a zero sum by 1)."
)


def softmax(student, x, dim=-1, strict=False):
    """strict: the one property that owns softmax's dtype and device."""
    return tensor(
        student.call(C, "softmax", x, dim=dim),
        f"softmax(x, dim={dim})",
        like=x,
        check_dtype=strict,
        nan_hint=_(SOFTMAX_NAN),
    )


def shape_of(x):
    return tuple(x.shape) if isinstance(x, torch.Tensor) else None


def attend(student, q, k, v, mask=None, strict=False):
    """(output, weights) of the student's attention.

    strict: the shape property, which alone checks the tuple's order, the dtype and the device, and earns its
    points on shapes (NaN included). Elsewhere a (weights, output) tuple is put back in order, so that one slip
    costs one property (the strategies draw d_v != m_k, so the two shapes always tell the order).
    """
    out = student.call(C, "scaled_dot_product_attention", q, k, v, mask=mask)
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        fail(_(NOT_A_PAIR).format(type=type(out).__name__), _(RETURN_THE_PAIR))
    lead, m_q, m_k, d_v = q.shape[:-2], q.shape[-2], k.shape[-2], v.shape[-1]
    w_shape, o_shape = (*lead, m_q, m_k), (*lead, m_q, d_v)
    output, weights = out
    if w_shape != o_shape and shape_of(output) == w_shape and shape_of(weights) == o_shape:
        if strict:
            fail(
                _(PAIR_SWAPPED).format(weights_shape=w_shape, output_shape=o_shape),
                _(OUTPUT_FIRST),
            )
        output, weights = weights, output
    if strict and not isinstance(out, tuple):
        fail(_(NOT_A_TUPLE).format(type=type(out).__name__), _(RETURN_THE_PAIR))
    if shape_of(weights) == (*lead, m_k, m_q) and m_q != m_k:
        wrong_shape(
            "weights",
            w_shape,
            tuple(weights.shape),
            _("the scores are (m_q × m_k): query @ key^T, not key @ query^T (Q and K swapped?)"),
        )
    weights = tensor(
        weights,
        "weights",
        shape=w_shape,
        dtype=q.dtype,
        like=q if strict else None,
        check_dtype=strict,
        shape_only=strict,
    )
    output = tensor(
        output,
        "output",
        shape=o_shape,
        dtype=q.dtype,
        like=q if strict else None,
        check_dtype=strict,
        shape_only=strict,
    )
    return output, weights


def sums_to_one(x, dim):
    return is_close(x.sum(dim), torch.ones_like(x.sum(dim)))


@prop(C, points=2, examples=6, clauses=(Attention.SOFTMAX,))
@given(
    x=st.integers(1, 3)
    .flatmap(lambda r: st.lists(st.integers(2, 4), min_size=r, max_size=r))
    .flatmap(lambda shape: tensors(shape)),
    dtype=dtypes(),
)
def softmax_rows_sum_to_one(student, x, dtype):
    """softmax(x) is non-negative and sums to 1 along the last dim, in x's dtype."""
    x = x.to(dtype)
    y = softmax(student, x, strict=True)
    expect(
        (y >= 0).all(),
        _("softmax has negative entries"),
        _("exp(...) is never negative: is exp missing?"),
    )
    if not sums_to_one(y, -1):
        fail(
            _("rows do not sum to 1 along the last dim (sums: {sums})").format(
                sums=y.sum(-1).flatten()[:4].tolist()
            ),
            diagnose(
                _("divide exp(x - max) by its sum along the same dim"),
                (
                    x.dim() > 1 and sums_to_one(y, 0),
                    _(
                        "rows sum to 1 along dim 0, not along the last dim: softmax over the wrong "
                        "axis?"
                    ),
                ),
                (
                    lambda: any(sums_to_one(y, d) for d in range(x.dim() - 1)),
                    _("normalised over another dim: softmax over the wrong axis? use dim=dim"),
                ),
                (
                    lambda: is_close(y.sum(), torch.tensor(1.0, dtype=y.dtype)),
                    _(
                        "the whole tensor sums to 1: sum along dim with keepdim=True, not over "
                        "everything"
                    ),
                ),
            ),
        )


@prop(C, points=1, examples=6, clauses=(Attention.SOFTMAX,))
@given(x=tensors((2, 3, 4)), dim=st.sampled_from([0, 1, -2, 2]))
def softmax_respects_dim(student, x, dim):
    """softmax(x, dim) normalises along `dim`, whichever it is."""
    y = softmax(student, x, dim)
    close(
        y,
        torch.softmax(x, dim),
        f"softmax(x, dim={dim})",
        lambda: diagnose(
            _("compute max, exp and sum along `dim` with keepdim=True"),
            (
                lambda: is_close(y, torch.softmax(x, -1)),
                _("ignores the dim argument: always the last dim?"),
            ),
        ),
    )


@prop(C, points=2, examples=6, clauses=(Attention.SOFTMAX,))
@given(x=tensors((3, 5), lo=-1e4, hi=1e4), dtype=dtypes())
@example(
    x=torch.tensor([[1e4, 0.0, -1e4], [1000.0, 1000.0, 999.0]], dtype=torch.float64),
    dtype=torch.float32,
)
def softmax_is_stable_for_large_logits(student, x, dtype):
    """Logits of ±1e4 give finite, exact probabilities (no overflow)."""
    x = x.to(dtype)
    y = softmax(student, x)
    expect(
        torch.isfinite(y).all(),
        _(LARGE_LOGITS_NOT_FINITE),
        _("exp(1e4) overflows: subtract the row max before exp (it cancels in the ratio)"),
    )
    close(
        y,
        torch.softmax(x.double(), -1),
        _(LARGE_LOGITS),
        _("subtract the max along the same dim"),
        dtype=dtype,
    )


@prop(C, points=1, examples=6, clauses=(Attention.SOFTMAX,))
@given(x=tensors((2, 4)), shift=st.floats(-100, 100, width=32))
def softmax_is_shift_invariant(student, x, shift):
    """softmax(x + c) = softmax(x) for a constant c per row."""
    consistent(
        softmax(student, x + shift),
        softmax(student, x),
        _(VERSUS).format(left="softmax(x + c)", right="softmax(x)"),
        _("subtracting the row max should make adding a constant irrelevant"),
        expected=torch.softmax(x, -1),
    )


@prop(C, points=1, examples=3, clauses=(Attention.SOFTMAX,))
@given(dtype=dtypes(), n=st.integers(1, 4))
def softmax_of_all_neg_inf_row_is_zero(student, dtype, n):
    """A row that is entirely -inf gives all zeros, not NaN."""
    x = torch.zeros(2, n, dtype=dtype)
    x[1] = float("-inf")
    y = softmax(student, x)
    close(
        y[1],
        torch.zeros(n, dtype=dtype),
        _(ALL_NEG_INF_ROW),
        _("max is -inf, so x - max is NaN: replace a -inf max by 0 and a zero denominator by 1"),
    )
    close(y[0], torch.full((n,), 1 / n, dtype=dtype), _(ROW_OF_ZEROS))


@prop(
    C,
    points=2,
    examples=6,
    error_hint=N_(
        "a shape error with m_q != m_k: Q and K swapped (key @ query^T), or a transpose "
        "on the wrong dims? scores = query @ key.transpose(-2, -1)"
    ),
    kind=Kind.SHAPE,
    clauses=(Attention.SHAPES,),
)
@given(qkv=attention_inputs(distinct_lengths=True))
def attention_shapes_for_cross_attention(student, qkv):
    """m_q != m_k: returns (output, weights), output (..., m_q, d_v), weights (..., m_q, m_k), dtype kept."""
    attend(student, qkv.query, qkv.key, qkv.value, strict=True)


@prop(C, points=2, examples=6, clauses=(Attention.SCORES,))
@given(qkv=attention_inputs())
def attention_weights_are_a_distribution(student, qkv):
    """Without a mask, weights are >= 0 and each query's weights sum to 1 over the keys."""
    w = attend(student, qkv.query, qkv.key, qkv.value)[1]
    expect(
        (w >= 0).all(),
        _(NEGATIVE_WEIGHTS),
        _("weights come out of a softmax: is it applied?"),
    )
    if not sums_to_one(w, -1):
        fail(
            _("each query's weights should sum to 1 over the keys (last dim)"),
            diagnose(
                _("softmax over the keys: dim=-1 of the (m_q × m_k) scores"),
                (
                    lambda: sums_to_one(w, -2),
                    _(
                        "weights sum to 1 over the queries: softmax over dim -2 instead of the last "
                        "dim?"
                    ),
                ),
            ),
        )


@prop(C, points=3, examples=6, clauses=(Attention.SCORES,))
@given(
    q=tensors((1, 1, 4), lo=-2, hi=2),
    k=tensors((1, 2, 4), lo=-2, hi=2),
    d_k=st.integers(2, 4),
    dtype=dtypes(),
)
@example(
    q=torch.ones(1, 1, 4, dtype=torch.float64),
    k=torch.tensor([[[1.0, 1, 1, 1], [0, 0, 0, 0]]], dtype=torch.float64),
    d_k=4,
    dtype=torch.float64,
)
def attention_two_keys_closed_form(student, q, k, d_k, dtype):
    """With two keys, w0 = sigmoid((q·k0 - q·k1) / sqrt(d_k)): the scale is exactly 1/sqrt(d_k)."""
    q, k = q[..., :d_k].to(dtype), k[..., :d_k].to(dtype)
    v = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], dtype=dtype)
    w = attend(student, q, k, v)[1]
    delta = float((q[0, 0] @ k[0, 0] - q[0, 0] @ k[0, 1]).double())
    expected = 1 / (1 + math.exp(-delta / math.sqrt(d_k)))
    got = float(w[0, 0, 0])
    if abs(got - expected) > 1e-4:
        sig = lambda s: 1 / (1 + math.exp(-delta * s))  # noqa: E731
        fail(
            _(WEIGHT_OF_KEY_0).format(got=f"{got:.6g}", d_k=d_k, expected=f"{expected:.6g}"),
            nearest(
                got,
                diagnose(
                    _(SCORES_SCALED),
                    (
                        lambda: (
                            abs(got - float(expected_values.attention(q, viewed(k), v)[1][0, 0, 0]))
                            < 1e-4
                        ),
                        _(VIEW_NOT_TRANSPOSE),
                    ),
                ),
                (sig(1.0), ATTENTION_HINTS(AttentionMistake.NO_SCALE)),
                (sig(1 / d_k), ATTENTION_HINTS(AttentionMistake.SCALED_BY_D_K)),
                (sig(math.sqrt(d_k)), _(MULTIPLIED_BY_SQRT_D_K)),
                (sig(1 / math.sqrt(3)), _(SCALED_BY_D_V)),
            ),
        )


@composite
def masked_inputs(draw, fully_masked=False):
    qkv = draw(attention_inputs(lead=draw(st.lists(st.integers(1, 2), min_size=1, max_size=2))))
    q, k, v = qkv.query, qkv.key, qkv.value
    shape = (*q.shape[:-1], k.shape[-2])
    m = draw(masks(shape, p_fully_masked_row=fully_masked))
    if draw(st.booleans()):  # a mask that broadcasts over the leading dims
        m = m.reshape(-1, *shape[-2:])[0]
        if not fully_masked:
            m[..., 0] = True
    return MaskedAttentionInputs(query=q, key=k, value=v, mask=m)


WEIGHTS_READ_VALUE = N_(
    "your weights change when only value changes (its width d_v): the weights depend on query and key only, "
    "softmax(q k^T / sqrt(d_k)) with d_k = query.shape[-1]"
)
MASK_MULTIPLIED = N_(
    "the scores are multiplied by the mask: a blocked score becomes 0, which still gets weight after the "
    "softmax; set blocked scores (where the mask is False) to -inf instead"
)


VIEW_NOT_TRANSPOSE = N_(
    "your scores use key reshaped to (..., d_k, m_k) with view or reshape: a view is not a transpose (it keeps "
    "the memory order and refills the shape, so each score mixes coordinates of several keys); use "
    "key.transpose(-2, -1)"
)


def weights_read_value(student, q, k, v, m, w) -> bool:
    """The student's weights change when value alone is widened (its columns repeated): a scale read from d_v."""
    return not is_close(attend(student, q, k, torch.cat([v, v, v], -1), m)[1], w)


def scaled_by_value(q, k, v, m, w) -> str:
    """SCALED_BY_D_V where the weights are exactly that, else the plain fact (WEIGHTS_READ_VALUE)."""
    d_k, d_v = q.shape[-1], v.shape[-1]
    by_d_v = expected_values.attention(q * math.sqrt(d_k) / math.sqrt(d_v), k, v, m)[1]
    return named(
        _(SCALED_BY_D_V) if is_close(w, by_d_v) else _(WEIGHTS_READ_VALUE), Evidence.DIRECT
    )


def multiplied_by_mask(q, k, m):
    """The weights of softmax((q k^T / sqrt(d_k)) * mask): blocked scores 0 instead of -inf."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]) * m
    return torch.softmax(scores, -1)


@prop(
    C,
    points=3,
    examples=6,
    clauses=(
        Attention.SCORES,
        Attention.MASK,
    ),
)
@given(inputs=masked_inputs())
def attention_equals_torch(student, inputs):
    """Weights and output equal torch's scaled_dot_product_attention (mask True = may attend)."""
    q, k, v, m = inputs.query, inputs.key, inputs.value, inputs.mask
    out, w = attend(student, q, k, v, m)
    expected_out, expected_w = (
        expected_values.sdpa(q, k, v, m),
        expected_values.attention(q, k, v, m)[1],
    )
    d_k = q.shape[-1]
    hint = lambda: diagnose(  # noqa: E731 - run only when a comparison fails
        _(
            "weights = softmax(q k^T / sqrt(d_k)) with blocked scores at -inf; output = weights @ value"
        ),
        (lambda: is_close(w, expected_values.attention(q, k, v)[1]), _(MASK_IGNORED)),
        (
            lambda: is_close(w, expected_values.attention(q, k, v, ~m)[1]),
            _("inverted mask: True means may attend"),
        ),
        # the cause tested directly, before a scale that fits this input (d_v = 1 is no scaling here)
        (
            lambda: weights_read_value(student, q, k, v, m, w),
            lambda: scaled_by_value(q, k, v, m, w),
        ),
        (lambda: is_close(w, multiplied_by_mask(q, k, m)), _(MASK_MULTIPLIED)),
        (
            lambda: is_close(w, expected_values.attention(q, viewed(k), v, m)[1]),
            _(VIEW_NOT_TRANSPOSE),
        ),
        (
            lambda: is_close(w, expected_values.attention(q * math.sqrt(d_k), k, v, m)[1]),
            ATTENTION_HINTS(AttentionMistake.NO_SCALE),
        ),
        (
            lambda: is_close(w, expected_values.attention(q / math.sqrt(d_k), k, v, m)[1]),
            ATTENTION_HINTS(AttentionMistake.SCALED_BY_D_K),
        ),
        (
            lambda: is_close(w, expected_w) and is_close(out, expected_w.transpose(-2, -1) @ v),
            _("weights transposed before @ value"),
        ),
        (
            lambda: is_close(w, expected_w),
            _("the weights are right but the output is not: output = weights @ value"),
        ),
    )
    close(w, expected_w, "weights", hint)
    close(
        out,
        expected_out,
        _("output (vs {expected})").format(
            expected="torch.nn.functional.scaled_dot_product_attention"
        ),
        hint,
    )


@prop(C, points=2, examples=6, clauses=(Attention.MASK,))
@given(inputs=masked_inputs())
def attention_masked_keys_get_zero_weight(student, inputs):
    """Where the mask is False, the weight is exactly 0; allowed weights still sum to 1."""
    q, k, v, m = inputs.query, inputs.key, inputs.value, inputs.mask
    w = attend(student, q, k, v, m)[1]
    blocked = (~m).expand(w.shape)
    if (w[blocked] != 0).any():
        allowed_zero = (w[m.expand(w.shape)] == 0).all()
        fail(
            _(BLOCKED_KEY_WEIGHT),
            diagnose(
                _("set blocked scores (where the mask is False) to -inf before the softmax"),
                (lambda: bool(allowed_zero), _(INVERTED_MASK)),
                (lambda: is_close(w, multiplied_by_mask(q, k, m)), _(MASK_MULTIPLIED)),
                (
                    lambda: bool((w[blocked] < 1e-6).all()),
                    _("a large negative number (-1e9) leaks weight in float32: use -inf"),
                ),
            ),
        )
    if not sums_to_one(w, -1):
        fail(
            _("with a mask, each query's weights should still sum to 1 over the allowed keys"),
            _(
                "mask applied after the softmax? Zeroing weights after normalising leaves rows that sum "
                "to < 1"
            ),
        )


@prop(C, points=2, examples=5, clauses=(Attention.FULLY_MASKED,))
@given(inputs=masked_inputs(fully_masked=True))
@example(
    inputs=MaskedAttentionInputs(
        query=torch.ones(1, 2, 2, dtype=torch.float64),
        key=torch.ones(1, 3, 2, dtype=torch.float64),
        value=torch.ones(1, 3, 2, dtype=torch.float64),
        mask=torch.tensor([[[True, True, False], [False] * 3]]),
    )
)
def attention_fully_masked_rows_are_zero(student, inputs):
    """A query whose keys are all masked gets all-zero weights and output: never NaN."""
    q, k, v, m = inputs.query, inputs.key, inputs.value, inputs.mask
    out, w = attend(student, q, k, v, m)
    dead = ~m.expand(w.shape).any(-1)  # (..., m_q)
    not_constant(w, expected_values.attention(q, k, v, m)[1], "weights")
    if not ((w[dead] == 0).all() and (out[dead] == 0).all()):
        uniform = is_close(w[dead], torch.full_like(w[dead], 1 / w.shape[-1]))
        # -1e9 gives a blocked key of a live row no weight; a mask that multiplies the scores gives it some
        blocked_live = ~m.expand(w.shape) & ~dead[..., None]
        fail(
            _(FULLY_MASKED_NOT_ZERO),
            diagnose(
                _(FULLY_MASKED_HINT),
                (lambda: is_close(w, multiplied_by_mask(q, k, m)), _(MASK_MULTIPLIED)),
                (
                    lambda: uniform and bool((w[blocked_live] < 1e-6).all()),
                    _(
                        "a large negative number (-1e9) instead of -inf makes a fully masked row uniform: "
                        "use -inf and zero the row"
                    ),
                ),
            ),
        )


@prop(
    C,
    points=2,
    examples=6,
    clauses=(
        Attention.SCORES,
        Attention.MASK,
    ),
)
@given(inputs=masked_inputs())
def attention_output_in_convex_hull_of_values(student, inputs):
    """Each output coordinate lies between the min and max of the allowed value rows."""
    q, k, v, m = inputs.query, inputs.key, inputs.value, inputs.mask
    out = attend(student, q, k, v, m)[0]
    not_constant(out, expected_values.attention(q, k, v, m)[0], "output")
    allowed = m.expand((*q.shape[:-1], k.shape[-2])).unsqueeze(-1)  # (..., m_q, m_k, 1)
    vals = v.unsqueeze(-3)  # (..., 1, m_k, d_v)
    hi = torch.where(allowed, vals, torch.tensor(float("-inf"), dtype=v.dtype)).amax(-2)
    lo = torch.where(allowed, vals, torch.tensor(float("inf"), dtype=v.dtype)).amin(-2)
    eps = 1e-5 if q.dtype == torch.float32 else 1e-9
    ok = ((out <= hi + eps) & (out >= lo - eps)) | ~allowed.any(-2)
    expect(
        ok.all(),
        _("an output lies outside the range of the value rows it attends to"),
        _(
            "the output must be a weighted average of value rows: weights >= 0 summing to 1, times "
            "value"
        ),
    )


@prop(C, points=2, examples=4, clauses=(Attention.FULLY_MASKED,))
@given(inputs=masked_inputs(fully_masked=True))
def attention_gradients_are_finite(student, inputs):
    """Backpropagating through attention, fully masked rows included, gives finite gradients."""
    q, k, v, m = inputs.query, inputs.key, inputs.value, inputs.mask
    reply = student.run(
        Call(C, "scaled_dot_product_attention", (q, k, v), {"mask": m}, backward=True)
    )
    first = reply.value[0] if isinstance(reply.value, (tuple, list)) and reply.value else None
    # (weights, output) returned: the backward ran from the weights, which do not depend on v; the order is the
    # shape property's business, so judge the gradients that exist.
    swapped = (
        isinstance(first, torch.Tensor)
        and tuple(first.shape) == (*q.shape[:-1], k.shape[-2])
        and k.shape[-2] != v.shape[-1]
    )
    # gradients of a constant are finite too: the result must be computed
    if isinstance(first, torch.Tensor):
        expected_out, expected_w = expected_values.attention(q, k, v, m)
        not_constant(first, expected_w if swapped else expected_out, "output")
    for name, g in zip("qk" if swapped else "qkv", reply.input_grads):
        expect(
            g is not None,
            _("no gradient reaches {name}").format(name=name),
            _("do not detach or leave autograd (no .numpy(), .data)"),
        )
        expect(
            torch.isfinite(g).all(),
            _("the gradient of {name} has NaN or inf").format(name=name),
            _(
                "NaN in the backward pass: use torch.where / masked_fill so fully masked rows never "
                "compute -inf - -inf or 0/0"
            ),
        )


SCALED_BY_HEADS = N_(
    "the scale counts the heads: divide by sqrt(d_k) with d_k the size of query's last dim only (not "
    "num_heads * d_k, nor a size read off another dim)"
)


def viewed(k):
    """The keys as `key.view(..., d_k, m_k)` reads them, transposed back: the scores `query @ key.view(...)`
    compute. Equal to k when m_k or d_k is 1, else another matrix (square ones included)."""
    return k.reshape(*k.shape[:-2], k.shape[-1], k.shape[-2]).transpose(-2, -1)


@composite
def head_inputs(draw):
    """4-D (batch, heads >= 2, m_q, m_k >= 2) inputs: where a scale or an axis that depends on a leading dim
    shows (one head, or one key, hides it)."""
    b, h = draw(st.integers(1, 2)), draw(st.integers(2, 3))
    return draw(attention_inputs(lead=(b, h), distinct_lengths=True, min_d_k=2))


@prop(C, points=2, examples=4, clauses=(Attention.SCORES,))
@given(qkv=head_inputs())
@example(
    qkv=AttentionInputs(
        query=torch.tensor([[[[1.0, 0.0]], [[0.0, 2.0]]]], dtype=torch.float64),
        key=torch.tensor(
            [[[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [0.0, 1.0]]]], dtype=torch.float64
        ),
        value=torch.tensor([[[[1.0], [0.0]], [[0.0], [1.0]]]], dtype=torch.float64),
    )
)
def attention_each_head_is_attention_alone(student, qkv):
    """Each (batch, head) slice of a 4-D call equals attention on that slice alone (2-D), and torch's: the scale
    is 1/sqrt(d_k) whatever the leading dims."""
    q, k, v = qkv.query, qkv.key, qkv.value
    w = attend(student, q, k, v)[1]
    b, h = q.shape[:2]
    alone = torch.stack(
        [
            torch.stack([attend(student, q[i, j], k[i, j], v[i, j])[1] for j in range(h)])
            for i in range(b)
        ]
    )
    expected_w = expected_values.attention(q, k, v)[1]
    d_k = q.shape[-1]
    hint = lambda: diagnose(  # noqa: E731 - run only when a comparison fails
        _("weights = softmax(q k^T / sqrt(d_k)) over the last two dims, whatever the leading dims"),
        (
            lambda: is_close(w, expected_values.attention(q / math.sqrt(h), k, v)[1]),
            _(SCALED_BY_HEADS),
        ),
        (
            lambda: is_close(w, expected_values.attention(q * math.sqrt(d_k), k, v)[1]),
            ATTENTION_HINTS(AttentionMistake.NO_SCALE),
        ),
        (lambda: is_close(w, expected_values.attention(q, viewed(k), v)[1]), _(VIEW_NOT_TRANSPOSE)),
    )
    close(w, alone, _("weights of the 4-D call vs each slice alone"), hint)
    close(w, expected_w, "weights", hint)


@prop(C, points=1, examples=1, kind=Kind.STATIC)
def attention_is_written_by_hand(student):
    """attention.py calls no library softmax or attention (static check; the run-time check is in every test)."""
    written_by_hand(
        student,
        C,
        _(
            "write softmax from exp, max and sum, and attention from matmul: no torch.softmax, "
            "F.scaled_dot_product_attention or getattr tricks"
        ),
    )
