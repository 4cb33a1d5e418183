"""Hidden properties of multi_head.MultiHeadAttention (graded, never shipped to students)."""

from __future__ import annotations

import torch
from hypothesis import example, given

from ..i18n import _
from ..properties.models.multi_head import expected_multi_head
from ..suite import expected_values
from ..suite.checks import close, expect, fail, is_close
from ..suite.clauses import MultiHead
from ..suite.core import prop
from ..suite.heads import (
    build,
    cases,
    check_output,
    explain,
    fixed_case,
    forward,
    live_rows,
    stored_weights,
)
from ..suite.strategies import MultiHeadInputs

C = "multi_head"


@prop(C, points=2, examples=3, visible=False, clauses=(MultiHead.FULLY_MASKED,))
@given(case=cases(mask="full"))
@example(
    case=MultiHeadInputs(
        query=torch.ones(1, 2, 4, dtype=torch.float64),
        key=torch.ones(1, 3, 4, dtype=torch.float64),
        value=torch.ones(1, 3, 4, dtype=torch.float64),
        mask=torch.tensor([[[[True, False, True], [False] * 3], [[False] * 3, [False] * 3]]]),
        d_model=4,
        num_heads=2,
        seed=0,
    )
)
def multi_head_fully_masked_rows_are_finite(student, case):
    """A query row masked for every key in a head gets zero weights there; the output is finite and exact."""
    q, k, v, m = case.query, case.key, case.value, case.mask
    d, h, seed = case.d_model, case.num_heads, case.seed
    handle, state = build(student, d, h, seed, q.dtype)
    # NaN in the output is reported here, first
    out, w = forward(student, handle, q, k, v, m, read=True)
    w = stored_weights(w, (q.shape[0], h, q.shape[1], k.shape[1]), q.dtype)
    expected, expected_w = expected_multi_head(state, h, q, k, v, m)
    if w is not None:
        close(
            w,
            expected_w,
            _("attention_weights with fully masked rows"),
            lambda: explain(
                w,
                state,
                h,
                q,
                k,
                v,
                m,
                _("fully masked rows hold zero weights; the others sum to 1"),
                what="weights",
            ),
        )
    close(
        out,
        expected,
        _("output with fully masked rows"),
        lambda: explain(
            out, state, h, q, k, v, m, _("a fully masked head contributes zeros before w_o")
        ),
    )


@prop(
    C,
    points=1,
    examples=2,
    visible=False,
    clauses=(
        MultiHead.PARAMETERS,
        MultiHead.HEADS,
    ),
)
@given(case=cases(mask="pad"))
def multi_head_bias_false_equals_torch(student, case):
    """Built with bias=False, the output equals nn.MultiheadAttention(bias=False) with the same weights."""
    q, k, v, m = case.query, case.key, case.value, case.mask
    d, h, seed = case.d_model, case.num_heads, case.seed
    handle, state = build(student, d, h, seed, q.dtype, bias=False)
    out = forward(student, handle, q, k, v, m)
    expected = expected_values.multi_head(state, d, h, q, k, v, m)[0]
    keep = live_rows(expected)
    close(
        out[keep],
        expected[keep],
        _("output with bias=False vs nn.MultiheadAttention(bias=False)"),
        lambda: explain(
            out,
            state,
            h,
            q,
            k,
            v,
            m,
            _("pass bias=bias to the four nn.Linear and add no bias of your own"),
        ),
    )


@prop(C, points=1, examples=2, visible=False, clauses=(MultiHead.MASK,))
@given(case=cases(mask="full"))
@example(case=fixed_case(batch=1, m_q=2, m_k=3, d_model=4, num_heads=2, seed=2, mask="full"))
def multi_head_per_head_mask_reaches_its_head(student, case):
    """With a (batch, h, m_q, m_k) mask, head j's weights are zero exactly where mask[:, j] is False."""
    q, k, v, m = case.query, case.key, case.value, case.mask
    d, h, seed = case.d_model, case.num_heads, case.seed
    handle, state = build(student, d, h, seed, q.dtype)
    out, w = forward(student, handle, q, k, v, m, read=True)
    w = stored_weights(w, (q.shape[0], h, q.shape[1], k.shape[1]), q.dtype)
    # no attribute: the shape property says so; the output must still use the per-head mask
    if w is None:
        return check_output(
            out,
            state,
            h,
            q,
            k,
            v,
            m,
            _("output with a {shape} mask").format(shape=tuple(m.shape)),
            _("the mask's dim 1 indexes the heads: pass the mask unchanged"),
        )
    if (w[~m] != 0).any():
        fail(
            _("a key blocked for head j (mask[:, j] False) got weight in head j"),
            explain(
                w,
                state,
                h,
                q,
                k,
                v,
                m,
                _(
                    "the mask's dim 1 indexes the heads: split the heads to "
                    "(batch, h, m, d_k) (view as (batch, m, h, d_k), then transpose(1, 2)) and pass "
                    "the mask unchanged"
                ),
                what="weights",
            ),
        )
    keep = m.any(-1)
    expect(
        is_close(w.sum(-1)[keep], torch.ones_like(w.sum(-1)[keep])),
        _("with a per-head mask, allowed weights do not sum to 1"),
        _("each head's rows are a distribution"),
    )
