"""What the encoder and decoder properties (and their hidden twins) share: the checking side's LayerNorm (torch's),
the diagnoses' texts and the stack's diagnosis. The layers by hand, right or with a usual mistake made on purpose,
are the graded side's (autograder/oracles/layers.py): the student bundle does not ship them.
"""

from __future__ import annotations

import torch.nn.functional as F

from ..i18n import N_, _
from .checks import diagnose, expect, fail, is_close


# ------------------------------------------------------------------------------------------ checking-side layers
def expected_layer_norm(x, state, prefix):
    return F.layer_norm(x, (x.shape[-1],), state[f"{prefix}weight"], state[f"{prefix}bias"], 1e-5)


def torch_layer_with(state, heads, x, memory=None, target_mask=None, memory_mask=None, swap=None):
    """torch's encoder layer (memory None: target_mask is its mask) or decoder layer with the weights `state`,
    add_norm_{a} and add_norm_{b} swapped if swap=(a, b): the student bundle's mistake models, each a mistake
    that is torch's layer with other weights or masks (answer-free: torch's layers are forbidden in encoder.py
    and decoder.py). The graded side has every mistake by hand (autograder/oracles/layers.py)."""
    import torch

    from . import expected_values

    if swap is not None:
        a, b = (f"add_norm_{i}.norm." for i in swap)
        state = {
            k.replace(a, "#", 1).replace(b, a, 1).replace("#", b, 1)
            if k.startswith((a, b))
            else k: v
            for k, v in state.items()
        }
    n, m, d = x.shape
    d_ff = state["feed_forward.linear_1.weight"].shape[0]
    tm = expected_values.to_torch_mask(target_mask, n, heads, m, m)
    with torch.no_grad():
        if memory is None:
            return expected_values.torch_encoder_layer(state, d, heads, d_ff, x.dtype)(
                x, src_mask=tm
            )
        mm = expected_values.to_torch_mask(memory_mask, n, heads, m, memory.shape[1])
        layer = expected_values.torch_decoder_layer(state, d, heads, d_ff, x.dtype)
        return layer(x, memory, tgt_mask=tm, memory_mask=mm)


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
