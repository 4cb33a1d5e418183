"""Hidden properties of decoder.DecoderLayer and decoder.Decoder (graded, never shipped to students)."""

from __future__ import annotations

from dataclasses import replace

import torch
from hypothesis import example, given

from ..i18n import _
from ..properties.decoder import (
    fixed_layer_case,
    layer_cases,
)
from ..properties.models.layers import (
    LAYER_HINTS,
    STACK_HINTS,
    LayerMistake,
    StackMistake,
    torch_stack,
)
from ..suite.checks import close, consistent, diagnose, is_close
from ..suite.clauses import Decoder
from ..suite.core import prop
from ..suite.layers import (
    build_layer,
    build_stack,
    expected_layer_norm,
    run_layer,
)
from ..suite.strategies import decoder_layer_state, randn

C = "decoder"


@prop(C, points=2, examples=2, visible=False, clauses=(Decoder.LAYER,))
@given(case=layer_cases(memory_mask=False))
@example(
    case=fixed_layer_case(
        batch=1, m_d=3, m_e=2, d_model=4, num_heads=2, d_ff=8, seed=6, memory_mask=False
    )
)
def decoder_layer_post_norm_closed_form(student, case):
    """With both attentions' w_o and linear_2 zeroed, every sub-layer outputs 0: layer(x) = LN3(LN2(LN1(x)))."""
    x = case.x
    d, d_ff, seed = case.d_model, case.d_ff, case.seed
    state = decoder_layer_state("", d, d_ff, seed, x.dtype)
    for name in (
        "self_attention.w_o.weight",
        "self_attention.w_o.bias",
        "cross_attention.w_o.weight",
        "cross_attention.w_o.bias",
        "feed_forward.linear_2.weight",
        "feed_forward.linear_2.bias",
    ):
        state[name] = torch.zeros_like(state[name])
    handle = build_layer(student, case, state=state)[0]
    out = run_layer(student, handle, case)
    n = {
        i: (lambda y, i=i: expected_layer_norm(y, state, f"add_norm_{i}.norm.")) for i in (1, 2, 3)
    }
    expected = n[3](n[2](n[1](x)))
    zero = torch.zeros_like(x)
    close(
        out,
        expected,
        _("DecoderLayer with zeroed output projections vs LN3(LN2(LN1(x)))"),
        lambda: diagnose(
            _("each of the three sub-layers is x = norm(x + sublayer(x))"),
            (lambda: is_close(out, x), LAYER_HINTS(LayerMistake.PRE_NORM)),
            (
                lambda: is_close(out, x + n[1](zero) + n[2](zero) + n[3](zero)),
                LAYER_HINTS(LayerMistake.NORM_INSIDE_RESIDUAL),
            ),
            (lambda: is_close(out, n[2](n[1](x))), _("the feed-forward sub-layer is skipped")),
            (lambda: is_close(out, n[3](n[1](x))), _("the cross-attention sub-layer is skipped")),
            (lambda: is_close(out, n[3](n[1](n[2](x)))), _("add_norm_1 and add_norm_2 swapped")),
            (lambda: is_close(out, n[2](n[3](n[1](x)))), _("add_norm_2 and add_norm_3 swapped")),
            (lambda: is_close(out, n[3](n[2](n[1](zero)))), LAYER_HINTS(LayerMistake.NO_RESIDUAL)),
        ),
    )


@prop(C, points=1, examples=2, visible=False, clauses=(Decoder.CAUSAL,))
@given(case=layer_cases(memory_mask="maybe"))
@example(case=fixed_layer_case(batch=2, m_d=3, m_e=2, d_model=4, num_heads=2, d_ff=8, seed=8))
def decoder_stack_is_causal(student, case):
    """A 2-layer Decoder with a causal target_mask: changing the last target position changes no earlier output."""
    x = case.x
    handle, state = build_stack(student, case, 2)
    out = run_layer(student, handle, case, "Decoder.forward")
    changed = x.clone()
    changed[:, -1] = randn(changed[:, -1].shape, case.seed + 6, x.dtype, 2.0)
    out2 = run_layer(student, handle, replace(case, x=changed), "Decoder.forward")
    consistent(
        out2[:, :-1],
        out[:, :-1],
        _("Decoder outputs before the last position after changing the last target"),
        f"{LAYER_HINTS(LayerMistake.NO_SELF_MASK, C)}; {STACK_HINTS(StackMistake.NO_MASK, C)}",
        expected=torch_stack(state, case, 2)[:, :-1],
        given=x[:, :-1],
    )


@prop(C, points=1, examples=2, visible=False, clauses=(Decoder.MEMORY,))
@given(case=layer_cases())
@example(case=fixed_layer_case(batch=2, m_d=2, m_e=4, d_model=4, num_heads=2, d_ff=8, seed=2))
def decoder_stack_memory_mask_reaches_every_layer(student, case):
    """In a 2-layer Decoder, changing the memory at positions memory_mask blocks leaves the output unchanged."""
    x, memory = case.x, case.memory
    handle, state = build_stack(student, case, 2)
    padded = ~case.memory_mask[:, 0, 0]
    changed = torch.where(
        padded[..., None], randn(memory.shape, case.seed + 4, x.dtype, 2.0), memory
    )
    out = run_layer(student, handle, case, "Decoder.forward")
    out2 = run_layer(student, handle, replace(case, memory=changed), "Decoder.forward")
    consistent(
        out2,
        out,
        _("Decoder output after changing the memory at blocked positions"),
        f"{STACK_HINTS(StackMistake.NO_MASK, C)} ({LAYER_HINTS(LayerMistake.NO_CROSS_MASK)})",
        expected=torch_stack(state, case, 2),
        given=x,
    )
