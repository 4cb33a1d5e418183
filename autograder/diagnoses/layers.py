"""The encoder and decoder layers by hand, with each usual mistake as a flag (graded side, never shipped): the
diagnoses of the encoder and decoder properties name the mistake whose output matches a submission's."""

from __future__ import annotations

import torch.nn.functional as F

from ..properties.models.layers import LayerMistake
from ..suite.layers import expected_layer_norm
from .multi_head import expected_multi_head


def expected_feed_forward_sublayer(x, state, prefix):
    hidden = F.relu(F.linear(x, state[f"{prefix}linear_1.weight"], state[f"{prefix}linear_1.bias"]))
    return F.linear(hidden, state[f"{prefix}linear_2.weight"], state[f"{prefix}linear_2.bias"])


def expected_sublayer(x, sublayer, norm, mistake=LayerMistake.NONE):
    """One residual sub-layer, post-norm, or with the residual mistake in `mistake`."""
    if LayerMistake.PRE_NORM in mistake:
        return x + sublayer(norm(x))
    if LayerMistake.NORM_INSIDE_RESIDUAL in mistake:
        return x + norm(sublayer(x))
    if LayerMistake.NO_RESIDUAL in mistake:
        return norm(sublayer(x))
    return norm(x + sublayer(x))


def _expected_layer(state, x, steps, mistake, prefix):
    """steps: (the mistake that skips it, sub-layer function), in order; step i gets add_norm_(i+1)'s norm."""
    norms = [1, 2, 3][: len(steps)]
    if LayerMistake.NORMS_1_2_SWAPPED in mistake:
        norms[0], norms[1] = norms[1], norms[0]
    if LayerMistake.NORMS_2_3_SWAPPED in mistake:
        norms[1], norms[2] = norms[2], norms[1]
    for (skipped, sublayer), i in zip(steps, norms):
        if skipped not in mistake:
            x = expected_sublayer(
                x,
                sublayer,
                lambda y, i=i: expected_layer_norm(y, state, f"{prefix}add_norm_{i}.norm."),
                mistake,
            )
    return x


def expected_encoder_layer(state, heads, x, mask=None, mistake=LayerMistake.NONE, prefix=""):
    """An encoder layer (self-attention, feed-forward) on the checking side, optionally with `mistake`."""
    m = None if LayerMistake.NO_SELF_MASK in mistake else mask

    def self_attention(y):
        return expected_multi_head(state, heads, y, y, y, m, prefix=f"{prefix}self_attention.")[0]

    steps = [
        (LayerMistake.NO_SELF_ATTENTION, self_attention),
        (
            LayerMistake.NO_FEED_FORWARD,
            lambda y: expected_feed_forward_sublayer(y, state, f"{prefix}feed_forward."),
        ),
    ]
    return _expected_layer(state, x, steps, mistake, prefix)


def expected_decoder_layer(
    state,
    heads,
    x,
    memory,
    target_mask=None,
    memory_mask=None,
    mistake=LayerMistake.NONE,
    prefix="",
):
    """A decoder layer (masked self-attention, cross-attention, feed-forward) on the checking side, optionally
    with `mistake`."""
    self_mask = memory_mask if LayerMistake.SELF_GETS_MEMORY_MASK in mistake else target_mask
    cross_mask = target_mask if LayerMistake.CROSS_GETS_TARGET_MASK in mistake else memory_mask
    self_mask = None if LayerMistake.NO_SELF_MASK in mistake else self_mask
    cross_mask = None if LayerMistake.NO_CROSS_MASK in mistake else cross_mask

    def self_attention(y):
        return expected_multi_head(
            state, heads, y, y, y, self_mask, prefix=f"{prefix}self_attention."
        )[0]

    def cross_attention(y):
        kv = y if LayerMistake.CROSS_KEYS_FROM_X in mistake else memory
        return expected_multi_head(
            state, heads, y, kv, kv, cross_mask, prefix=f"{prefix}cross_attention."
        )[0]

    steps = [
        (LayerMistake.NO_SELF_ATTENTION, self_attention),
        (LayerMistake.NO_CROSS_ATTENTION, cross_attention),
        (
            LayerMistake.NO_FEED_FORWARD,
            lambda y: expected_feed_forward_sublayer(y, state, f"{prefix}feed_forward."),
        ),
    ]
    if LayerMistake.CROSS_ATTENTION_FIRST in mistake:
        steps[0], steps[1] = steps[1], steps[0]
    return _expected_layer(state, x, steps, mistake, prefix)
