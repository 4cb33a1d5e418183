"""Multi-head attention by hand, with each usual mistake as a flag (graded side, never shipped): the diagnoses of
the multi_head properties name the mistake whose output matches a submission's."""

from __future__ import annotations

import math

import torch.nn.functional as F

from ..properties.models.multi_head import MhaMistake
from ..suite import expected_values

_PROJECTIONS = {
    MhaMistake.Q_K_SWAPPED: ("w_k", "w_q", "w_v"),
    MhaMistake.K_V_SWAPPED: ("w_q", "w_v", "w_k"),
    MhaMistake.Q_V_SWAPPED: ("w_v", "w_k", "w_q"),
    MhaMistake.V_FROM_W_K: ("w_q", "w_k", "w_k"),
}


def expected_multi_head(
    state, heads, query, key, value, mask=None, mistake=MhaMistake.NONE, prefix=""
):
    """Multi-head attention on the checking side with the weights `state`, optionally with `mistake` made on
    purpose. Returns (output, weights); fully masked rows give zero weights (the kit's convention)."""
    b, m_q, d = query.shape
    m_k, d_k = key.shape[1], d // heads
    proj = next((names for m, names in _PROJECTIONS.items() if m in mistake), ("w_q", "w_k", "w_v"))

    def linear(x, name):
        return F.linear(x, state[f"{prefix}{name}.weight"], state.get(f"{prefix}{name}.bias"))

    def split_heads(x, m):
        if MhaMistake.SPLIT_WITHOUT_TRANSPOSE in mistake:
            return x.reshape(b, heads, m, d_k)
        if MhaMistake.SPLIT_STRIDED in mistake:
            return x.reshape(b, m, d_k, heads).permute(0, 3, 1, 2)
        return x.reshape(b, m, heads, d_k).transpose(1, 2)

    q = split_heads(linear(query, proj[0]), m_q)
    k = split_heads(linear(key, proj[1]), m_k)
    v = split_heads(linear(value, proj[2]), m_k)
    if MhaMistake.SCALED_BY_D_MODEL in mistake:
        q = q * math.sqrt(d_k / d)
    o, w = expected_values.attention(q, k, v, mask)
    if MhaMistake.MERGE_WITHOUT_TRANSPOSE in mistake:
        merged = o.reshape(b, m_q, d)
    else:
        merged = o.transpose(1, 2).reshape(b, m_q, d)
    return (merged if MhaMistake.NO_W_O in mistake else linear(merged, "w_o")), w
