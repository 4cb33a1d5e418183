"""What multi_head's visible and hidden properties share: the layer built with the kit's weights and run, its
output and stored weights read and checked against nn.MultiheadAttention, the cases they draw, and the diagnosis
that names the mistake (heads split or merged without a transpose, a strided split, projections swapped, w_o
missing, the mask ignored...) whose checking-side output matches the submission's. The properties and their hints
live in properties/multi_head.py.
"""

from __future__ import annotations

import torch
from hypothesis import strategies as st

from ..i18n import _
from ..properties.models import multi_head as multi_head_models
from ..properties.models.multi_head import MHA_HINTS, MhaMistake, torch_multi_head
from ..student_code import Call
from . import expected_values
from .checks import (
    close,
    diagnose,
    fail,
    hint_text,
    is_close,
    tensor,
)
from .strategies import (
    MultiHeadInputs,
    composite,
    dtypes,
    masks,
    mha_state,
    model_sizes,
    randn,
    seeds,
    tensors,
)

# The mistake models (by-hand multi-head attention): the graded side's; None in the student bundle.
mistake_models = multi_head_models.BY_HAND

C = "multi_head"
CLASS = "MultiHeadAttention"


def mistaken(state, heads, query, key, value, mask, mistake, i):
    """Output (i=0) or weights (i=1) of multi-head attention with `mistake`: by hand where the graded side's
    diagnoses are, else torch's layer with other weights (models.multi_head), else None."""
    if mistake_models is not None:
        return mistake_models.expected_multi_head(state, heads, query, key, value, mask, mistake)[i]
    out = torch_multi_head(state, heads, query, key, value, mask, mistake)
    return None if out is None else out[i]


# long: the table of multi-head attention's mistakes and their hints, one entry each
def explain(got, state, heads, query, key, value, mask=None, default="", what="output"):
    """The hint naming the mistake whose checking-side output matches `got`."""
    i = 0 if what == "output" else 1
    mask_of_case = mask

    def same(mistake=MhaMistake.NONE, mask=mask):
        def test():
            expected = mistaken(state, heads, query, key, value, mask, mistake, i)
            if expected is None or expected.shape != got.shape:
                return False
            if i == 1:
                return is_close(got, expected)
            # torch's layer gives NaN for a row that the mistake masks fully: such rows say nothing. The
            # mistake is evidence only where it explains a row on which the output is wrong (an inverted padding
            # mask masks every row of a sequence with no padding: compared on no row, it matched anything).
            keep = ~torch.isnan(expected).any(-1)
            right = mistaken(state, heads, query, key, value, mask_of_case, MhaMistake.NONE, 0)
            wrong = keep & ~torch.isclose(got, right, rtol=1e-4, atol=1e-6).all(-1)
            return bool(wrong.any()) and is_close(got[keep], expected[keep])

        return test

    candidates = MHA_HINTS.candidates(
        lambda m: same(m)()
    )  # every mistake model, in the order declared
    if mask is not None:
        candidates += [
            (
                same(mask=None),
                _("the mask is ignored: pass it on to scaled_dot_product_attention"),
            ),
            (same(mask=~mask), _("inverted mask: True means may attend")),
        ]
    return diagnose(default, *candidates)


# ------------------------------------------------------------------------------------------------- plumbing
def build(student, d_model, heads, seed, dtype, bias=True, dropout=0.0, train=False):
    state = mha_state("", d_model, seed, dtype, bias)
    h = student.build(
        C,
        CLASS,
        state=state,
        train=train,
        dtype=dtype,
        d_model=d_model,
        num_heads=heads,
        dropout=dropout,
        bias=bias,
    )
    return h, state


def forward(student, h, query, key, value, mask=None, read=False, seed=0, strict=False):
    """The output (and the attention_weights attribute read after the call, if read).

    strict: the shape property, which alone owns the dtype, the device and a detached attention_weights, and
    earns its points on shapes (NaN included); elsewhere a dtype slip is judged by the values.
    """
    kwargs = {} if mask is None else {"mask": mask}
    reply = student.run(
        Call(
            h,
            "forward",
            (query, key, value),
            kwargs,
            seed=seed,
            read=("attention_weights",) if read else (),
        )
    )
    out = tensor(
        reply.value,
        "MultiHeadAttention.forward(query, key, value)",
        shape=(query.shape[0], query.shape[1], query.shape[2]),
        dtype=query.dtype,
        like=query if strict else None,
        check_dtype=strict,
        shape_only=strict,
    )
    if strict and read and reply.attrs_require_grad.get("attention_weights"):
        fail(
            _("attention_weights is still attached to the autograd graph"),
            _(
                "store a detached copy: self.attention_weights = weights.detach() (a graph kept alive "
                "holds memory)"
            ),
        )
    return (out, reply.attrs.get("attention_weights")) if read else out


def stored_weights(w, shape, dtype, strict=False):
    """attention_weights as read after a forward: a tensor (batch, h, m_q, m_k).

    A missing attribute (None, or not a tensor) fails only the strict caller, the shape property: the others get
    None back and check the output instead, so that the missing attribute costs one property.
    """
    if not isinstance(w, torch.Tensor) and not strict:
        return None
    if w is None:
        fail(
            _("attention_weights is None after a forward"),
            _("store the weights in forward: self.attention_weights = weights.detach()"),
        )
    if (
        isinstance(w, torch.Tensor)
        and w.dim() == 3
        and tuple(w.shape) == (shape[0], shape[2], shape[3])
    ):
        fail(
            _("attention_weights: expected shape {expected}, got {got}").format(
                expected=tuple(shape), got=tuple(w.shape)
            ),
            _(
                "averaged over the heads? keep one weight matrix per head: (batch, num_heads, m_q, m_k)"
            ),
        )
    return tensor(
        w, "attention_weights", shape=shape, dtype=dtype, check_dtype=strict, shape_only=strict
    )


def check_output(out, state, heads, q, k, v, m, what, default):
    """The output against nn.MultiheadAttention on rows that are not fully masked (torch gives NaN there)."""
    expected = expected_values.multi_head(state, q.shape[-1], heads, q, k, v, m)[0]
    keep = live_rows(expected)
    close(
        out[keep],
        expected[keep],
        what,
        lambda: explain(out, state, heads, q, k, v, m, hint_text(default)),
    )


def live_rows(expected):
    """Query rows where torch gives numbers (it gives NaN for fully masked rows): (batch, m_q) bool."""
    return ~torch.isnan(expected).any(-1)


# ------------------------------------------------------------------------------------------------- strategies
@composite
def cases(draw, min_heads=2, max_heads=2, distinct_lengths=True, mask=None, dtype=None):
    """(query, key, value, mask, d_model, heads, seed): keys and values distinct, m_q != m_k if asked.

    mask: None, "2d" (m_q, m_k), "pad" (batch, 1, 1, m_k), "full" (batch, h, m_q, m_k), or "any".
    """
    d, h = draw(model_sizes(max_heads=max_heads, min_heads=min_heads))
    dtype = dtype or draw(dtypes())
    b, m_q, m_k = draw(st.integers(1, 2)), draw(st.integers(2, 3)), draw(st.integers(1, 4))
    if distinct_lengths and m_k == m_q:
        m_k = m_q + 1
    q = draw(tensors((b, m_q, d), dtype))
    k = draw(tensors((b, m_k, d), dtype))
    v = draw(tensors((b, m_k, d), dtype))
    kind = draw(st.sampled_from(["2d", "pad", "full"])) if mask == "any" else mask
    shape = {None: None, "2d": (m_q, m_k), "pad": (b, 1, 1, m_k), "full": (b, h, m_q, m_k)}[kind]
    m = None if shape is None else draw(masks(shape, p_fully_masked_row=True))
    return MultiHeadInputs(
        query=q, key=k, value=v, mask=m, d_model=d, num_heads=h, seed=draw(seeds())
    )


def fixed_case(batch, m_q, m_k, d_model, num_heads, seed, dtype=torch.float64, mask=None):
    """A case with dense random inputs: the explicit examples that make every mistake visible."""
    shapes = [(batch, m_q, d_model), (batch, m_k, d_model), (batch, m_k, d_model)]
    q, k, v = (randn(s, seed + i, dtype) for i, s in enumerate(shapes))
    shape = {
        None: None,
        "2d": (m_q, m_k),
        "pad": (batch, 1, 1, m_k),
        "full": (batch, num_heads, m_q, m_k),
    }[mask]
    m = None if shape is None else randn(shape, seed + 9) > -0.5
    return MultiHeadInputs(
        query=q, key=k, value=v, mask=m, d_model=d_model, num_heads=num_heads, seed=seed
    )
