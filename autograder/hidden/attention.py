"""Hidden properties of attention: the same contract on other inputs, through invariances."""

from __future__ import annotations

import torch
from hypothesis import given
from hypothesis import strategies as st

from ..i18n import _
from ..properties.attention import C, attend, masked_inputs, softmax
from ..suite import expected_values
from ..suite.checks import VERSUS, close, consistent
from ..suite.clauses import Attention
from ..suite.core import Kind, prop
from ..suite.strategies import attention_inputs, randn, seeds, tensors


@prop(C, points=2, visible=False, examples=5, clauses=(Attention.SCORES,))
@given(inputs=masked_inputs(), c=tensors((4,), lo=-2, hi=2))
def attention_invariant_to_key_translation(student, inputs, c):
    """Adding the same vector to every key leaves the attention unchanged: A(q, k + 1cᵀ, v) = A(q, k, v)."""
    q, k, v, m = inputs.query, inputs.key, inputs.value, inputs.mask
    out, w = attend(student, q, k, v, m)
    out2, w2 = attend(student, q, k + c[: k.shape[-1]].to(k.dtype), v, m)
    expected_out, expected_w = expected_values.attention(q, k, v, m)
    consistent(
        w2,
        w,
        _("weights after translating every key"),
        _(
            "each query's scores shift by one constant, which the softmax over the keys cancels: "
            "normalise over the last dim"
        ),
        expected=expected_w,
    )
    consistent(out2, out, _("output after translating every key"), expected=expected_out)


@prop(C, points=2, visible=False, examples=5, clauses=(Attention.SCORES,))
@given(inputs=masked_inputs(), seed=seeds())
def attention_is_linear_in_values(student, inputs, seed):
    """A(q, k, v W) = A(q, k, v) W and A(q, k, v + 1cᵀ) = A + 1cᵀ on rows that attend somewhere."""
    q, k, v, m = inputs.query, inputs.key, inputs.value, inputs.mask
    out = attend(student, q, k, v, m)[0]
    # d_v != m_k: the order shows
    W = randn((v.shape[-1], 3 if k.shape[-2] != 3 else 2), seed, v.dtype)
    out_w = attend(student, q, k, v @ W, m)[0]
    consistent(
        out_w,
        out @ W,
        _(VERSUS).format(left="A(q, k, v W)", right="A(q, k, v) W"),
        _("output = weights @ value, nothing else"),
        expected=expected_values.attention(q, k, v, m)[0] @ W,
    )


@prop(
    C,
    points=1,
    visible=False,
    examples=8,
    clauses=(
        Attention.SCORES,
        Attention.MASK,
    ),
)
@given(inputs=masked_inputs(), seed=seeds())
def attention_ignores_key_order(student, inputs, seed):
    """Permuting keys and values together (and the mask's key dim) changes nothing."""
    q, k, v, m = inputs.query, inputs.key, inputs.value, inputs.mask
    out, w = attend(student, q, k, v, m)
    perm = torch.randperm(k.shape[-2], generator=torch.Generator().manual_seed(seed))
    out2, w2 = attend(student, q, k[..., perm, :], v[..., perm, :], m[..., perm])
    expected_out, expected_w = expected_values.attention(q, k, v, m)
    consistent(
        out2,
        out,
        _("output with keys and values permuted together"),
        _("the weights must follow the keys: softmax over the keys of q k^T"),
        expected=expected_out,
    )
    consistent(
        w2,
        w[..., perm],
        _("weights with keys and values permuted together"),
        expected=expected_w[..., perm],
    )


@prop(C, points=1, visible=False, examples=5, clauses=(Attention.SCORES,))
@given(qkv=attention_inputs(lead=(2,)))
def attention_identical_keys_average_values(student, qkv):
    """When every key is the same, each output is the mean of the value rows."""
    q, k, v = qkv.query, qkv.key, qkv.value
    k = k[..., :1, :].expand(k.shape).contiguous()
    out = attend(student, q, k, v)[0]
    close(
        out,
        v.mean(-2, keepdim=True).expand(out.shape),
        _("output with identical keys"),
        _("equal scores give equal weights 1/m_k: is the softmax over the keys?"),
    )


@prop(C, points=1, visible=False, examples=4, kind=Kind.SHAPE, clauses=(Attention.SOFTMAX,))
@given(x=tensors((2, 3)), dtype=st.sampled_from([torch.float32, torch.float64]))
def softmax_keeps_shape(student, x, dtype):
    """softmax keeps the input's shape (its dtype is the visible softmax_rows_sum_to_one's business)."""
    softmax(student, x.to(dtype))
