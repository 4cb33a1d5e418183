"""Multi-head attention on the checking side with its usual mistakes as flags (MhaMistake): torch's
nn.MultiheadAttention with the kit's weights, with other weights for the mistakes that are weight surgery (a
strided head split, projections swapped or copied, no w_o, the sqrt(d_model) scale: equal to the by-hand models to
4e-16, docs/bundle.md). nn.MultiheadAttention is forbidden in multi_head.py, so this is no answer; the graded side
has every mistake by hand (this module's graded-only region)."""

from __future__ import annotations

import enum
import math
from types import SimpleNamespace

import torch
import torch.nn.functional as F

from ...i18n import N_
from ...suite import expected_values
from ...suite.mistakes import Hints


class MhaMistake(enum.Flag):
    """The usual mistakes in multi-head attention, one flag each; `expected_multi_head` makes them on purpose so
    that a diagnosis can name the one whose output matches the submission's."""

    NONE = 0
    # heads viewed as (b, h, m, d_k) directly: positions mixed across heads
    SPLIT_WITHOUT_TRANSPOSE = enum.auto()
    SPLIT_STRIDED = enum.auto()  # head i reads columns i::h
    MERGE_WITHOUT_TRANSPOSE = enum.auto()  # heads merged back with a view and no transpose
    Q_K_SWAPPED = enum.auto()  # q = w_k(query), k = w_q(key)
    K_V_SWAPPED = enum.auto()
    Q_V_SWAPPED = enum.auto()
    V_FROM_W_K = enum.auto()  # the values projected with w_k
    NO_W_O = enum.auto()  # the merged heads returned unprojected
    SCALED_BY_D_MODEL = enum.auto()  # scores divided by sqrt(d_model), not sqrt(d_k)


_STRIDED = N_(
    "wrong head split: head h must read the contiguous columns h*d_k:(h+1)*d_k of each projection, not "
    "every h-th column"
)
# In the order a diagnosis tries them (suite/heads.py): the transposes first, then the weights
MHA_HINTS = Hints(
    MhaMistake,
    {
        MhaMistake.SPLIT_WITHOUT_TRANSPOSE: N_(
            "heads split by a reshape straight to (batch, h, m, d_k): that regroups numbers across "
            "positions; a head is d_k features of each position, so the heads' axis is moved ahead of the "
            "positions, not reshaped there"
        ),
        MhaMistake.MERGE_WITHOUT_TRANSPOSE: N_(
            "heads merged without a transpose back: bring (batch, h, m_q, d_k) back to (batch, m_q, h, d_k) "
            "before merging the heads into (batch, m_q, d_model)"
        ),
        MhaMistake.SPLIT_WITHOUT_TRANSPOSE | MhaMistake.MERGE_WITHOUT_TRANSPOSE: N_(
            "heads split and merged by reshapes alone: that regroups numbers across positions; the "
            "heads' axis is moved ahead of the positions to split and moved back to merge"
        ),
        MhaMistake.SPLIT_STRIDED: _STRIDED,
        MhaMistake.SPLIT_STRIDED | MhaMistake.MERGE_WITHOUT_TRANSPOSE: _STRIDED,
        MhaMistake.Q_K_SWAPPED: N_("Q and K projections swapped: q = w_q(query), k = w_k(key)"),
        MhaMistake.K_V_SWAPPED: N_("K and V projections swapped: k = w_k(key), v = w_v(value)"),
        MhaMistake.Q_V_SWAPPED: N_("Q and V projections swapped: q = w_q(query), v = w_v(value)"),
        MhaMistake.V_FROM_W_K: N_("the values are projected with w_k: v = w_v(value)"),
        MhaMistake.NO_W_O: N_("w_o is missing: project the merged heads with w_o"),
        MhaMistake.SCALED_BY_D_MODEL: N_(
            "scaled by sqrt(d_model): each head's scores are divided by sqrt(d_k)"
        ),
    },
)


def _swapped(state, a, b):
    s = dict(state)
    for part in ("weight", "bias"):
        if f"{a}.{part}" in s:
            s[f"{a}.{part}"], s[f"{b}.{part}"] = state[f"{b}.{part}"], state[f"{a}.{part}"]
    return s


def _copied(state, into, source):
    return {
        **state,
        **{k.replace(source, into, 1): v for k, v in state.items() if k.startswith(source)},
    }


def _scaled_q(state, heads):
    d = state["w_q.weight"].shape[0]
    c = math.sqrt(d // heads / d)
    return {**state, **{k: v * c for k, v in state.items() if k.startswith("w_q.")}}


def _no_w_o(state):
    w = state["w_o.weight"]
    out = {**state, "w_o.weight": torch.eye(w.shape[0], dtype=w.dtype)}
    if "w_o.bias" in state:
        out["w_o.bias"] = torch.zeros_like(state["w_o.bias"])
    return out


def _strided(state, heads):
    """Head i reading columns i::h is head i of a layer whose projections' rows are permuted so."""
    d = state["w_q.weight"].shape[0]
    perm = [j * heads + i for i in range(heads) for j in range(d // heads)]
    return {
        **state,
        **{k: v[perm] for k, v in state.items() if k.startswith(("w_q.", "w_k.", "w_v."))},
    }


# The mistakes that are torch's layer with other weights: the student bundle's mistake models. Mixing positions
# (a split or merge without a transpose) has no such form.
SURGERY = {
    MhaMistake.SPLIT_STRIDED: _strided,
    MhaMistake.Q_K_SWAPPED: lambda s, h: _swapped(s, "w_q", "w_k"),
    MhaMistake.K_V_SWAPPED: lambda s, h: _swapped(s, "w_k", "w_v"),
    MhaMistake.Q_V_SWAPPED: lambda s, h: _swapped(s, "w_q", "w_v"),
    MhaMistake.V_FROM_W_K: lambda s, h: _copied(s, "w_v.", "w_k."),
    MhaMistake.NO_W_O: lambda s, h: _no_w_o(s),
    MhaMistake.SCALED_BY_D_MODEL: _scaled_q,
}


def torch_multi_head(state, heads, query, key, value, mask=None, mistake=MhaMistake.NONE):
    """(output, weights) of nn.MultiheadAttention with the kit's weights, with `mistake` if it is one of SURGERY's
    (None otherwise). torch gives NaN weights in a fully masked row: zero in the kit."""
    if mistake != MhaMistake.NONE and mistake not in SURGERY:
        return None
    s = SURGERY[mistake](state, heads) if mistake else state
    out, w = expected_values.multi_head(s, query.shape[-1], heads, query, key, value, mask)
    return out, torch.nan_to_num(w, nan=0.0)


# The by-hand mistake models: the graded side's; None in the student bundle (suite/graded.py).
BY_HAND: SimpleNamespace | None = None

# >>> graded only: an answer, which `release` strips (suite/graded.py, docs/bundle.md)
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


BY_HAND = SimpleNamespace(expected_multi_head=expected_multi_head)
# <<< graded only
