"""What the encoder and decoder properties (and their hidden twins) share: building and running the student's
layer or stack for a case (an EncoderInputs or a DecoderInputs), the checking side's LayerNorm (torch's), the
diagnoses' texts and the stack's diagnosis. torch's layers with the kit's weights are models/layers.py; the layers
by hand, right or with a usual mistake made on purpose, are the graded side's (models/layers.py's graded-only
region): the student bundle does not ship them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch.nn.functional as F

from ..i18n import _
from ..properties.models.layers import (
    STACK_HINTS,
    TORCH_MISTAKES,
    StackMistake,
    torch_layer,
    torch_stack,
)
from .checks import diagnose, expect, fail, is_close, tensor
from .strategies import (
    DecoderInputs,
    EncoderInputs,
    decoder_layer_state,
    encoder_layer_state,
    stack_state,
)


# ------------------------------------------------------------------------------------------ the student's layers
@dataclass(frozen=True)
class LayerKind:
    """What the encoder's and the decoder's properties build: the component, its layer and stack classes and the
    weights of one layer (strategies.encoder_layer_state or decoder_layer_state)."""

    component: str
    layer: str
    stack: str
    layer_state: Callable


KINDS = {
    EncoderInputs: LayerKind("encoder", "EncoderLayer", "Encoder", encoder_layer_state),
    DecoderInputs: LayerKind("decoder", "DecoderLayer", "Decoder", decoder_layer_state),
}


def build_layer(student, case, state=None, **kw):
    """The student's EncoderLayer or DecoderLayer (the case's kind), in x's dtype, with the case's weights (or
    `state`); returns (handle, state)."""
    kind, dtype = KINDS[type(case)], case.x.dtype
    if state is None:
        state = kind.layer_state("", case.d_model, case.d_ff, case.seed, dtype)
    sizes = dict(d_model=case.d_model, num_heads=case.num_heads, d_ff=case.d_ff)
    return student.build(kind.component, kind.layer, state=state, dtype=dtype, **sizes, **kw), state


def build_stack(student, case, n, **kw):
    """The student's Encoder or Decoder of n layers for `case`, with the case's weights; returns (handle, state)."""
    kind, dtype = KINDS[type(case)], case.x.dtype
    state = stack_state(kind.layer_state, n, case.d_model, case.d_ff, case.seed, dtype)
    sizes = dict(num_layers=n, d_model=case.d_model, num_heads=case.num_heads, d_ff=case.d_ff)
    return student.build(kind.component, kind.stack, state=state, dtype=dtype, **sizes, **kw), state


def run_layer(student, handle, case, what=None, strict=False):
    """The layer's (or stack's) forward on the case's inputs; what: the call the report names (default the
    layer's forward). strict: the one property that owns an encoder layer's dtype and device (elsewhere values
    are compared)."""
    if isinstance(case, EncoderInputs):
        x, mask = case.x, case.mask
        out = (
            student.method(handle, "forward", x)
            if mask is None
            else student.method(handle, "forward", x, mask=mask)
        )
        return tensor(out, what or "EncoderLayer.forward(x, mask)", like=x, check_dtype=strict)
    x, memory = case.x, case.memory
    kwargs = {
        k: v
        for k, v in (("target_mask", case.target_mask), ("memory_mask", case.memory_mask))
        if v is not None
    }
    out = student.method(handle, "forward", x, memory, **kwargs)
    return tensor(
        out,
        _("{call}(x, memory, ...) with x {x_shape}, memory {memory_shape}").format(
            call=what or "DecoderLayer.forward",
            x_shape=tuple(x.shape),
            memory_shape=tuple(memory.shape),
        ),
        like=x,
    )


def explain_layer_with(got, state, case, candidates, default, by_hand_layer=None) -> str:
    """The hint of the first (mistake, hint) candidate whose layer, recomputed with that LayerMistake, gives
    `got`: the graded side's layer by hand (by_hand_layer(mistake)), or in the student bundle (None) torch's layer
    for the mistakes it can make (models.layers.TORCH_MISTAKES); `default` when none does."""
    if by_hand_layer is None:
        candidates = [(m, hint) for m, hint in candidates if m in TORCH_MISTAKES]

        def by_hand_layer(mistake):
            return torch_layer(state, case, mistake)

    return diagnose(
        default,
        *[(lambda m=m: is_close(got, by_hand_layer(m)), hint) for m, hint in candidates],
    )


def expected_layer_norm(x, state, prefix):
    return F.layer_norm(x, (x.shape[-1],), state[f"{prefix}weight"], state[f"{prefix}bias"], 1e-5)


# ------------------------------------------------------------------------------------------------- diagnoses
def same_layer_hint(cls="EncoderLayer"):
    return STACK_HINTS(StackMistake.LAST_LAYER_EVERY_STEP).format(cls=cls)


def explain_stack(got, state, case, n, default):
    """The hint naming the stack mistake (StackMistake) whose output, torch's layers in a row on the case's
    inputs, matches `got`."""
    # every stack mistake declared for the stack's component, the (memory) mask's only where the case has one
    # (a case without a target mask makes the target mask's mistakes the right stack: never the failing output)
    decoder = isinstance(case, DecoderInputs)
    mask = case.memory_mask if decoder else case.mask
    without = StackMistake.NO_MASK | StackMistake.MASK_AT_FIRST_ONLY if mask is None else None
    kind = KINDS[type(case)]
    flags = STACK_HINTS.tried(kind.component, without)
    candidates = [(m, STACK_HINTS(m, kind.component).format(cls=kind.layer)) for m in flags]
    return diagnose(
        default,
        *[(lambda m=m: is_close(got, torch_stack(state, case, n, m)), h) for m, h in candidates],
    )


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
