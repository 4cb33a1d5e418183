"""The checking side's encoder and decoder layers, shared by the encoder and decoder properties (and their hidden
twins): what a post-norm layer with the kit's weights computes, written the right way or with one of the usual
mistakes made on purpose (`LayerMistake`), and the diagnoses that compare a submission's output with each.
"""

from __future__ import annotations

import enum

import torch.nn.functional as F

from ..i18n import N_, _
from .checks import diagnose, expect, fail, is_close
from .multi_head import expected_multi_head


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


# ------------------------------------------------------------------------------------------ checking-side layers
def expected_layer_norm(x, state, prefix):
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


# ------------------------------------------------------------------------------------------------- diagnoses
# Marked N_: translated where they are used, `_(PRE_NORM)`.
PRE_NORM = N_(
    "pre-norm: the kit's layers are post-norm, x = add_norm(x, sublayer(x)) = norm(x + sublayer(x)); "
    "normalise after adding the residual, not before the sub-layer"
)
AFTER_NORM = N_(
    "the residual is added after the norm (x + norm(sublayer(x))): add first, then normalise: "
    "add_norm(x, sublayer(x)) = norm(x + sublayer(x))"
)
NO_RESIDUAL = N_(
    "the residual is missing: add_norm(x, sublayer(x)) adds the sub-layer's input x back"
)
LAYER_0 = N_(
    "every step applies layers[0]: loop over the layers, for layer in self.layers: x = layer(x, ...)"
)


def same_layer_hint(cls="EncoderLayer"):
    return _(
        "the same layer is applied at every step ([layer] * N or ModuleList([layer] * N) repeats one "
        "module): build N separate {cls} instances, e.g. [{cls}(...) for _ in range(N)]"
    ).format(cls=cls)


def explain_stack(got, n, expected_stack, default, masks_hint, cls, masked=True):
    """expected_stack(order=..., masked=...) recomputes the stack with layer order[i] at step i, masks at the steps
    in `masked`."""

    def same(**kw):
        return lambda: is_close(got, expected_stack(**kw))

    candidates = [
        (same(order=[0] * n), _(LAYER_0)),
        (same(order=[n - 1] * n), same_layer_hint(cls)),
        (
            same(order=list(range(n))[::-1]),
            _("the layers run in reverse order: layers[0] comes first"),
        ),
        (
            same(order=[n - 1]),
            _("only the last layer is applied: each layer's output feeds the next one"),
        ),
        (same(order=[0]), _("only the first layer is applied: loop over all of self.layers")),
    ]
    if masked:
        candidates += [(same(masked=()), masks_hint), (same(masked=(0,)), masks_hint)]
    return diagnose(default, *candidates)


def stack_has_n_distinct_layers(student, component: str, stack: str, layer: str, n: int) -> None:
    """Shared by Encoder and Decoder: N layers, each with its own parameters, each a `layer`."""
    info = student.inspect(
        student.build(component, stack, num_layers=n, d_model=4, num_heads=2, d_ff=8)
    )
    have = sorted({int(p.split(".")[1]) for p in info["params"] if p.startswith("layers.")})
    if have != list(range(n)):
        # listed, but no own parameters
        shared = any(k.startswith(f"layers.{n - 1}.") for k in info["state"])
        fail(
            _("{built} has parameters for layers {have}, expected {expected}").format(
                built=f"{stack}(num_layers={n})", have=have, expected=list(range(n))
            ),
            same_layer_hint(layer)
            if shared
            else _("build num_layers {layer} instances in an nn.ModuleList").format(layer=layer),
        )
    parameter = f"layers.{n - 1}.self_attention.w_q.weight"
    expect(
        any(p == parameter for p in info["params"]),
        _("{parameter} not found").format(parameter=parameter),
        _("each layer is a {layer}").format(layer=layer),
    )
