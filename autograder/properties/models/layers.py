"""torch's encoder and decoder layers with the kit's weights, alone or in a stack, right or with one of the
mistakes that torch's layer can make with other weights or masks (answer-free: the layers are forbidden in
encoder.py and decoder.py). A case is an EncoderInputs (x, mask) or a DecoderInputs (x, memory, target_mask,
memory_mask). LayerMistake names every usual mistake of a layer; the layer by hand with each of them is the graded
side's (this module's graded-only region)."""

from __future__ import annotations

import enum
from dataclasses import replace
from types import SimpleNamespace

import torch
import torch.nn.functional as F

from ...i18n import N_
from ...suite import expected_values
from ...suite.mistakes import Hints
from ...suite.strategies import EncoderInputs
from . import multi_head as multi_head_models


class LayerMistake(enum.Flag):
    """The usual mistakes in an encoder or decoder layer, one flag each."""

    NONE = 0
    # the residual sub-layer, right: norm(x + sublayer(x))
    PRE_NORM = enum.auto()  # x + sublayer(norm(x))
    NORM_INSIDE_RESIDUAL = enum.auto()  # x + norm(sublayer(x))
    NO_RESIDUAL = enum.auto()  # norm(sublayer(x))
    # the sub-layers
    NO_SELF_ATTENTION = enum.auto()
    NO_CROSS_ATTENTION = enum.auto()
    NO_FEED_FORWARD = enum.auto()
    CROSS_ATTENTION_FIRST = enum.auto()  # before the self-attention
    CROSS_KEYS_FROM_X = enum.auto()  # the cross-attention's keys and values from x, not the memory
    NORMS_1_2_SWAPPED = enum.auto()
    NORMS_2_3_SWAPPED = enum.auto()
    # the masks
    NO_SELF_MASK = enum.auto()  # the encoder's mask, the decoder's target_mask, not passed on
    NO_CROSS_MASK = enum.auto()  # memory_mask not passed on
    SELF_GETS_MEMORY_MASK = enum.auto()
    CROSS_GETS_TARGET_MASK = enum.auto()


_KV_FROM_X = N_(
    "the cross-attention ignores the memory: its keys and values come from the encoder memory, "
    "cross_attention(x, memory, memory, memory_mask) (queries from the decoder)"
)
# A layer's mistakes by name; the sub-layers' numbering differs in the encoder (two) and the decoder (three)
LAYER_HINTS = Hints(
    LayerMistake,
    {
        LayerMistake.PRE_NORM: N_(
            "pre-norm: the kit's layers are post-norm, x = add_norm(x, sublayer(x)) = norm(x "
            "+ sublayer(x)); normalise after adding the residual, not before the sub-layer"
        ),
        LayerMistake.NORM_INSIDE_RESIDUAL: N_(
            "the residual is added after the norm (x + norm(sublayer(x))): add first, then "
            "normalise: add_norm(x, sublayer(x)) = norm(x + sublayer(x))"
        ),
        LayerMistake.NO_RESIDUAL: N_(
            "the residual is missing: add_norm(x, sublayer(x)) adds the sub-layer's input x back"
        ),
        LayerMistake.CROSS_KEYS_FROM_X: _KV_FROM_X,
        # memory's keys left out makes the cross-attention's mask the target's too: the same slip
        LayerMistake.CROSS_KEYS_FROM_X | LayerMistake.CROSS_GETS_TARGET_MASK: _KV_FROM_X,
        LayerMistake.CROSS_GETS_TARGET_MASK: N_(
            "the cross-attention gets target_mask: it takes memory_mask, the self-attention "
            "target_mask"
        ),
        LayerMistake.SELF_GETS_MEMORY_MASK | LayerMistake.CROSS_GETS_TARGET_MASK: N_(
            "target_mask and memory_mask swapped: the self-attention takes target_mask, the "
            "cross-attention memory_mask"
        ),
        LayerMistake.NO_CROSS_MASK: N_(
            "memory_mask is ignored: pass it to the cross-attention, cross_attention(x, "
            "memory, memory, memory_mask)"
        ),
        LayerMistake.NORMS_2_3_SWAPPED: N_(
            "add_norm_2 and add_norm_3 swapped: add_norm_2 follows the cross-attention, "
            "add_norm_3 the feed-forward"
        ),
        LayerMistake.CROSS_ATTENTION_FIRST: N_(
            "the cross-attention runs before the self-attention: the order is masked "
            "self-attention, cross-attention, feed-forward"
        ),
        LayerMistake.NO_CROSS_ATTENTION: N_(
            "the cross-attention sub-layer is skipped: x = add_norm_2(x, cross_attention(x, "
            "memory, memory, memory_mask))"
        ),
    },
    worded={
        "encoder": {
            LayerMistake.NO_FEED_FORWARD: N_(
                "the feed-forward sub-layer is skipped: return add_norm_2(x, feed_forward(x))"
            ),
            LayerMistake.NO_SELF_ATTENTION: N_(
                "the self-attention sub-layer is skipped: first x = add_norm_1(x, "
                "self_attention(x, x, x, mask))"
            ),
            LayerMistake.NORMS_1_2_SWAPPED: N_(
                "add_norm_1 and add_norm_2 swapped: add_norm_1 follows the self-attention, "
                "add_norm_2 the feed-forward"
            ),
            LayerMistake.NO_SELF_MASK: N_(
                "the mask is ignored: pass it to the self-attention, self_attention(x, x, x, mask)"
            ),
        },
        "decoder": {
            LayerMistake.NO_FEED_FORWARD: N_(
                "the feed-forward sub-layer is skipped: return add_norm_3(x, feed_forward(x))"
            ),
            LayerMistake.NORMS_1_2_SWAPPED: N_(
                "add_norm_1 and add_norm_2 swapped: add_norm_1 follows the self-attention, "
                "add_norm_2 the cross-attention, add_norm_3 the feed-forward"
            ),
            LayerMistake.NO_SELF_MASK: N_(
                "target_mask is ignored: pass it to the self-attention, self_attention(x, x, "
                "x, target_mask)"
            ),
        },
    },
    # The order each layer's diagnosis tries them (properties/encoder.py, decoder.py): an encoder has no
    # cross-attention; the decoder's mask and memory slips first, where a shape error would otherwise hide them
    order={
        "encoder": (
            LayerMistake.PRE_NORM,
            LayerMistake.NORM_INSIDE_RESIDUAL,
            LayerMistake.NO_RESIDUAL,
            LayerMistake.NO_FEED_FORWARD,
            LayerMistake.NO_SELF_ATTENTION,
            LayerMistake.NORMS_1_2_SWAPPED,
            LayerMistake.NO_SELF_MASK,
        ),
        "decoder": (
            LayerMistake.CROSS_KEYS_FROM_X,
            LayerMistake.CROSS_KEYS_FROM_X | LayerMistake.CROSS_GETS_TARGET_MASK,
            LayerMistake.CROSS_GETS_TARGET_MASK,
            LayerMistake.SELF_GETS_MEMORY_MASK | LayerMistake.CROSS_GETS_TARGET_MASK,
            LayerMistake.NO_SELF_MASK,
            LayerMistake.NO_CROSS_MASK,
            LayerMistake.NORMS_1_2_SWAPPED,
            LayerMistake.NORMS_2_3_SWAPPED,
            LayerMistake.CROSS_ATTENTION_FIRST,
            LayerMistake.PRE_NORM,
            LayerMistake.NORM_INSIDE_RESIDUAL,
            LayerMistake.NO_RESIDUAL,
            LayerMistake.NO_CROSS_ATTENTION,
            LayerMistake.NO_FEED_FORWARD,
        ),
    },
)


# The mistakes that are torch's layer with other weights or masks: the student bundle's layer mistake models
# (the graded side has every mistake by hand, below).
TORCH_MISTAKES = (
    LayerMistake.NORMS_1_2_SWAPPED
    | LayerMistake.NORMS_2_3_SWAPPED
    | LayerMistake.NO_SELF_MASK
    | LayerMistake.NO_CROSS_MASK
)


def swapped_norms(state: dict, a: int, b: int) -> dict:
    """state with add_norm_{a} and add_norm_{b}'s weights exchanged: the norms-swapped mistake."""
    a, b = f"add_norm_{a}.norm.", f"add_norm_{b}.norm."
    return {
        k.replace(a, "#", 1).replace(b, a, 1).replace("#", b, 1) if k.startswith((a, b)) else k: v
        for k, v in state.items()
    }


def torch_layer(state: dict, case, mistake=LayerMistake.NONE):
    """torch's encoder layer (an EncoderInputs case: its mask) or decoder layer (a DecoderInputs case: its
    target_mask and memory_mask) with the weights `state` on the case's inputs, with `mistake` (within
    TORCH_MISTAKES)."""
    assert mistake in TORCH_MISTAKES, mistake
    if LayerMistake.NORMS_1_2_SWAPPED in mistake:
        state = swapped_norms(state, 1, 2)
    if LayerMistake.NORMS_2_3_SWAPPED in mistake:
        state = swapped_norms(state, 2, 3)
    if LayerMistake.NO_SELF_MASK in mistake:
        case = replace(case, **{"mask" if isinstance(case, EncoderInputs) else "target_mask": None})
    if LayerMistake.NO_CROSS_MASK in mistake:
        case = replace(case, memory_mask=None)
    x, heads = case.x, case.num_heads
    n, m, d = x.shape
    d_ff = state["feed_forward.linear_1.weight"].shape[0]
    with torch.no_grad():
        if isinstance(case, EncoderInputs):
            mask = expected_values.to_torch_mask(case.mask, n, heads, m, m)
            return expected_values.torch_encoder_layer(state, d, heads, d_ff, x.dtype)(
                x, src_mask=mask
            )
        m_e = case.memory.shape[1]
        tm = expected_values.to_torch_mask(case.target_mask, n, heads, m, m)
        mm = expected_values.to_torch_mask(case.memory_mask, n, heads, m, m_e)
        layer = expected_values.torch_decoder_layer(state, d, heads, d_ff, x.dtype)
        return layer(x, case.memory, tgt_mask=tm, memory_mask=mm)


class StackMistake(enum.Flag):
    """The usual mistakes in a stack of layers (Encoder, Decoder), one flag each."""

    NONE = 0
    FIRST_LAYER_EVERY_STEP = enum.auto()  # layers[0] applied n times
    LAST_LAYER_EVERY_STEP = enum.auto()  # one module listed n times: the same layer at every step
    REVERSED = enum.auto()
    ONLY_LAST = enum.auto()
    ONLY_FIRST = enum.auto()
    NO_MASK = enum.auto()  # the mask (a decoder's memory_mask) reaches no layer
    MASK_AT_FIRST_ONLY = enum.auto()
    NO_TARGET_MASK = enum.auto()  # a decoder's target_mask reaches no layer
    TARGET_MASK_AT_FIRST_ONLY = enum.auto()


_ENCODER_MASK = N_("the mask must reach every layer: pass it to each layer inside the loop")
_DECODER_MASKS = N_(
    "both masks must reach every layer: pass target_mask and memory_mask to each layer inside the loop"
)
# A stack's mistakes by name: {cls} is the layer's class (EncoderLayer, DecoderLayer), formatted where shown
STACK_HINTS = Hints(
    StackMistake,
    {
        StackMistake.FIRST_LAYER_EVERY_STEP: N_(
            "every step applies layers[0]: each step must apply its own layer of self.layers, in turn"
        ),
        StackMistake.LAST_LAYER_EVERY_STEP: N_(
            "the same layer is applied at every step ([layer] * N or ModuleList([layer] * N) repeats one "
            "module): build N separate {cls} instances, e.g. [{cls}(...) for _ in range(N)]"
        ),
        StackMistake.REVERSED: N_("the layers run in reverse order: layers[0] comes first"),
        StackMistake.ONLY_LAST: N_(
            "only the last layer is applied: each layer's output feeds the next one"
        ),
        StackMistake.ONLY_FIRST: N_(
            "only the first layer is applied: loop over all of self.layers"
        ),
    },
    worded={
        "encoder": {
            StackMistake.NO_MASK: _ENCODER_MASK,
            StackMistake.MASK_AT_FIRST_ONLY: _ENCODER_MASK,
        },
        "decoder": {
            StackMistake.NO_MASK: _DECODER_MASKS,
            StackMistake.MASK_AT_FIRST_ONLY: _DECODER_MASKS,
            StackMistake.NO_TARGET_MASK: _DECODER_MASKS,
            StackMistake.TARGET_MASK_AT_FIRST_ONLY: _DECODER_MASKS,
        },
    },
)


def torch_stack(state: dict, case, n: int, mistake=StackMistake.NONE):
    """n torch layers of the case's kind in a row (no final norm), on the case's inputs, with `mistake`."""
    order = {
        StackMistake.FIRST_LAYER_EVERY_STEP: [0] * n,
        StackMistake.LAST_LAYER_EVERY_STEP: [n - 1] * n,
        StackMistake.REVERSED: list(range(n))[::-1],
        StackMistake.ONLY_LAST: [n - 1],
        StackMistake.ONLY_FIRST: [0],
    }
    steps = next((o for m, o in order.items() if m in mistake), range(n))
    masked = () if StackMistake.NO_MASK in mistake else range(n)
    masked = (0,) if StackMistake.MASK_AT_FIRST_ONLY in mistake else masked
    if isinstance(case, EncoderInputs):
        return encoder_stack(state, n, case.num_heads, case.x, case.mask, "", steps, masked)
    target_masked = () if StackMistake.NO_TARGET_MASK in mistake else range(n)
    target_masked = (0,) if StackMistake.TARGET_MASK_AT_FIRST_ONLY in mistake else target_masked
    return decoder_stack(
        state,
        n,
        case.num_heads,
        case.x,
        case.memory,
        case.target_mask,
        case.memory_mask,
        "",
        steps,
        masked,
        target_masked,
    )


def encoder_stack(state, n, heads, x, mask=None, prefix="", order=None, masked=None):
    """torch encoder layers `{prefix}layers.{i}.` in torch's own stack: layer `order[i]` at step i (default
    0..n-1), the mask (kit polarity, broadcastable to (b, 1|h, m, m)) given at the steps in `masked` (default all).
    A mistake that gives the mask to some steps only is two stacks in a row, each of its run of steps."""
    order = range(n) if order is None else order
    masked = range(n) if masked is None else masked
    b, m, d = x.shape
    d_ff = state[f"{prefix}layers.0.feed_forward.linear_1.weight"].shape[0]
    torch_mask = expected_values.to_torch_mask(mask, b, heads, m, m)
    layers = [
        expected_values.torch_encoder_layer(state, d, heads, d_ff, x.dtype, f"{prefix}layers.{i}.")
        for i in order
    ]
    with torch.no_grad():
        for (with_mask,), run in _runs(layers, [(step in masked,) for step in range(len(layers))]):
            x = expected_values.torch_stack(run)(x, mask=torch_mask if with_mask else None)
    return x


def _runs(layers, settings):
    """(setting, the layers of a run of consecutive steps with that setting), in order."""
    out = []
    for layer, setting in zip(layers, settings, strict=True):
        if out and out[-1][0] == setting:
            out[-1][1].append(layer)
        else:
            out.append((setting, [layer]))
    return out


def decoder_stack(
    state,
    n,
    heads,
    x,
    memory,
    target_mask=None,
    memory_mask=None,
    prefix="",
    order=None,
    masked=None,
    target_masked=None,
):
    """torch decoder layers `{prefix}layers.{i}.` in torch's own stack: layer `order[i]` at step i (default
    0..n-1), memory_mask given at the steps in `masked`, target_mask at those in `target_masked` (default all), a
    run of steps with the same masks one stack."""
    order = range(n) if order is None else order
    masked = range(n) if masked is None else masked
    target_masked = range(n) if target_masked is None else target_masked
    b, m_d, d = x.shape
    d_ff = state[f"{prefix}layers.0.feed_forward.linear_1.weight"].shape[0]
    tgt = expected_values.to_torch_mask(target_mask, b, heads, m_d, m_d)
    mem = expected_values.to_torch_mask(memory_mask, b, heads, m_d, memory.shape[1])
    layers = [
        expected_values.torch_decoder_layer(state, d, heads, d_ff, x.dtype, f"{prefix}layers.{i}.")
        for i in order
    ]
    settings = [(step in target_masked, step in masked) for step in range(len(layers))]
    with torch.no_grad():
        for (with_target, with_memory), run in _runs(layers, settings):
            x = expected_values.torch_stack(run)(
                x,
                memory,
                tgt_mask=tgt if with_target else None,
                memory_mask=mem if with_memory else None,
            )
    return x


# The by-hand mistake models: the graded side's; None in the student bundle (suite/graded.py).
BY_HAND: SimpleNamespace | None = None


# >>> graded only: an answer, which `release` strips (suite/graded.py, docs/bundle.md)
def _layer_norm(x, state, prefix):
    return F.layer_norm(x, (x.shape[-1],), state[f"{prefix}weight"], state[f"{prefix}bias"], 1e-5)


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
                lambda y, i=i: _layer_norm(y, state, f"{prefix}add_norm_{i}.norm."),
                mistake,
            )
    return x


def expected_encoder_layer(state, heads, x, mask=None, mistake=LayerMistake.NONE, prefix=""):
    """An encoder layer (self-attention, feed-forward) on the checking side, optionally with `mistake`."""
    m = None if LayerMistake.NO_SELF_MASK in mistake else mask

    def self_attention(y):
        return multi_head_models.expected_multi_head(
            state, heads, y, y, y, m, prefix=f"{prefix}self_attention."
        )[0]

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
        return multi_head_models.expected_multi_head(
            state, heads, y, y, y, self_mask, prefix=f"{prefix}self_attention."
        )[0]

    def cross_attention(y):
        kv = y if LayerMistake.CROSS_KEYS_FROM_X in mistake else memory
        return multi_head_models.expected_multi_head(
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


BY_HAND = SimpleNamespace(
    expected_encoder_layer=expected_encoder_layer, expected_decoder_layer=expected_decoder_layer
)
# <<< graded only
