"""Properties of decoder.DecoderLayer and decoder.Decoder (visible to students).

Expected values: torch's nn.TransformerDecoderLayer (post-norm, ReLU, dropout 0) with the same weights copied
in, with m_E != m_D, a causal target mask and a memory padding mask. Invariants tell the masks apart: causality (later
target positions cannot change earlier outputs), the cross-attention reading the memory, and padded memory
positions being invisible under memory_mask. Mismatches are diagnosed by recomputing the layer with one
mistake at a time.
"""

from __future__ import annotations

from dataclasses import replace

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from ..i18n import N_, _
from ..student_code import Call
from ..suite.checks import (
    close,
    consistent,
    diagnose,
    expect,
    fail,
    is_close,
    not_constant,
    stack_tolerance,
    tensor,
    written_by_hand,
)
from ..suite.clauses import Decoder
from ..suite.core import Kind, default_hint, prop
from ..suite.expected_values import expected_causal_mask
from ..suite.layers import (
    build_layer,
    build_stack,
    explain_layer_with,
    explain_stack,
    run_layer,
    stack_has_n_distinct_layers,
)
from ..suite.strategies import (
    DecoderInputs,
    composite,
    dtypes,
    masks,
    model_sizes,
    randn,
    seeds,
    tensors,
)
from .models import layers as layer_models
from .models.layers import LAYER_HINTS, LayerMistake, torch_layer, torch_stack

# The layer by hand with its usual mistakes: the graded side's; None in the student bundle (docs/bundle.md).
mistake_models = layer_models.BY_HAND

C = "decoder"
LAYER_ERROR = N_(
    "a shape error with m_E != m_D? In the cross-attention the queries come from the decoder (x) and "
    "the keys and values from the encoder memory, cross_attention(x, memory, memory, memory_mask): its "
    "mask is memory_mask (m_D or 1, m_E); the self-attention takes target_mask. Sub-modules: "
    "self_attention, add_norm_1, cross_attention, add_norm_2, feed_forward, add_norm_3, layers"
)
default_hint(C, LAYER_ERROR)


# ------------------------------------------------------------------------------------------------- diagnoses
def explain_layer(got, state, case, default=""):
    """The hint naming the layer mistake whose output matches `got` on the case's inputs (in the student bundle,
    among the mistakes that are torch's layer with other weights or masks)."""
    # every layer mistake declared for the decoder (LAYER_HINTS' order), a mask's only where the case has it
    without = LayerMistake.NONE
    if case.target_mask is None:
        without |= LayerMistake.NO_SELF_MASK
    if case.memory_mask is None:
        without |= LayerMistake.NO_CROSS_MASK
    candidates = [(m, LAYER_HINTS(m, C)) for m in LAYER_HINTS.tried(C, without)]
    by_hand = (
        None if mistake_models is None else (lambda mistake: by_hand_layer(state, case, mistake))
    )
    return explain_layer_with(got, state, case, candidates, default, by_hand)


def by_hand_layer(state, case, mistake):
    """The graded side's decoder layer by hand on the case's inputs, with `mistake`."""
    return mistake_models.expected_decoder_layer(
        state, case.num_heads, case.x, case.memory, case.target_mask, case.memory_mask, mistake
    )


# ------------------------------------------------------------------------------------------------- plumbing
@composite
def layer_cases(draw, memory_mask=True, dtype=None):
    """(x, memory, target_mask, memory_mask, d_model, heads, d_ff, seed): m_E != m_D, >= 2 heads, causal target
    mask, memory_mask a padding mask (batch, 1, 1, m_E) with position 0 allowed, or None."""
    d, h = draw(model_sizes(max_heads=2, min_heads=2))
    dtype = dtype or draw(dtypes())
    b, m_d, m_e = draw(st.integers(1, 2)), draw(st.integers(2, 3)), draw(st.integers(1, 4))
    if m_e == m_d:
        m_e = m_d + 1
    x = draw(tensors((b, m_d, d), dtype))
    memory = draw(tensors((b, m_e, d), dtype))
    use = draw(st.booleans()) if memory_mask == "maybe" else memory_mask
    mm = draw(masks((b, 1, 1, m_e), p_fully_masked_row=False)) if use else None
    return DecoderInputs(
        x=x,
        memory=memory,
        target_mask=expected_causal_mask(m_d),
        memory_mask=mm,
        d_model=d,
        num_heads=h,
        d_ff=draw(st.sampled_from([4, 8])),
        seed=draw(seeds()),
    )


def fixed_layer_case(
    batch, m_d, m_e, d_model, num_heads, d_ff, seed, dtype=torch.float64, memory_mask=True
):
    x, memory = (
        randn((batch, m_d, d_model), seed, dtype),
        randn((batch, m_e, d_model), seed + 1, dtype),
    )
    mm = None
    if memory_mask:
        mm = randn((batch, 1, 1, m_e), seed + 2) > 0
        mm[..., 0] = True
    return DecoderInputs(
        x=x,
        memory=memory,
        target_mask=expected_causal_mask(m_d),
        memory_mask=mm,
        d_model=d_model,
        num_heads=num_heads,
        d_ff=d_ff,
        seed=seed,
    )


# ------------------------------------------------------------------------------------------------- properties
@prop(C, points=1, examples=1, kind=Kind.SHAPE, clauses=(Decoder.NAMES,))
def decoder_submodules_are_named(student):
    """DecoderLayer has self_attention, add_norm_1, cross_attention, add_norm_2, feed_forward, add_norm_3."""
    info = student.inspect(student.build(C, "DecoderLayer", d_model=4, num_heads=2, d_ff=8))
    expected_children = [
        "self_attention",
        "add_norm_1",
        "cross_attention",
        "add_norm_2",
        "feed_forward",
        "add_norm_3",
    ]
    missing = [n for n in expected_children if n not in info["children"]]
    expect(
        not missing,
        _("DecoderLayer has no sub-module {missing}; it has {children}").format(
            missing=missing, children=info["children"]
        ),
        _("name the sub-modules as in the docstring: {names}").format(
            names=", ".join(expected_children)
        ),
    )
    types = info["module_types"]
    expect(
        types.get("self_attention") == types.get("cross_attention") == "MultiHeadAttention",
        _("DecoderLayer's sub-modules have types {types}").format(types=types),
        _("two separate MultiHeadAttention modules: self_attention and cross_attention"),
    )
    info = student.inspect(
        student.build(C, "Decoder", num_layers=2, d_model=4, num_heads=2, d_ff=8)
    )
    expect(
        "layers" in info["children"] and info["module_types"].get("layers") == "ModuleList",
        _("Decoder's sub-modules are {children}, expected layers (an nn.ModuleList)").format(
            children=info["children"]
        ),
        _("keep the layers in self.layers = nn.ModuleList([...])"),
    )


@prop(C, points=1, examples=2, kind=Kind.SHAPE, clauses=(Decoder.NAMES,))
@given(n=st.integers(1, 3))
@example(n=2)
def decoder_stack_has_n_distinct_layers(student, n):
    """Decoder(num_layers=N) holds N separate layers: layers.0 ... layers.N-1, each with its own parameters."""
    stack_has_n_distinct_layers(student, C, "Decoder", "DecoderLayer", n)


@prop(C, points=1, examples=2, kind=Kind.SHAPE, clauses=(Decoder.LAYER,))
@given(case=layer_cases(memory_mask="maybe"))
def decoder_layer_output_shape(student, case):
    """With m_E != m_D the output is (batch, m_D, d_model): one row per target position, dtype kept."""
    x, memory, tm, mm = case.x, case.memory, case.target_mask, case.memory_mask
    d = case.d_model
    handle = build_layer(student, case)[0]
    out = student.method(handle, "forward", x, memory, target_mask=tm, memory_mask=mm)
    if isinstance(out, torch.Tensor) and tuple(out.shape) == (x.shape[0], memory.shape[1], d):
        fail(
            _("output shape {shape}: one row per memory position, expected {expected}").format(
                shape=tuple(out.shape), expected=tuple(x.shape)
            ),
            _(
                "the cross-attention's queries come from the decoder: "
                "cross_attention(x, memory, memory, memory_mask)"
            ),
        )
    tensor(
        out,
        "DecoderLayer.forward(x, memory, target_mask, memory_mask)",
        like=x,
        check_dtype=True,
        shape_only=True,
    )


@prop(
    C,
    points=3,
    examples=3,
    clauses=(
        Decoder.LAYER,
        Decoder.CAUSAL,
    ),
)
@given(case=layer_cases(memory_mask="maybe"))
@example(case=fixed_layer_case(batch=2, m_d=3, m_e=4, d_model=4, num_heads=2, d_ff=8, seed=5))
@example(
    case=fixed_layer_case(
        batch=1, m_d=3, m_e=2, d_model=6, num_heads=2, d_ff=4, seed=12, dtype=torch.float32
    )
)
def decoder_layer_equals_torch(student, case):
    """DecoderLayer equals nn.TransformerDecoderLayer (post-norm, dropout 0): causal target mask, m_E != m_D."""
    handle, state = build_layer(student, case)
    out = run_layer(student, handle, case)
    expected = torch_layer(state, case)
    close(
        out,
        expected,
        _("DecoderLayer vs nn.TransformerDecoderLayer"),
        lambda: explain_layer(
            out,
            state,
            case,
            _(
                "masked self-attention -> add_norm_1, "
                "cross-attention on the memory -> add_norm_2, feed-forward -> add_norm_3"
            ),
        ),
    )


@prop(C, points=2, examples=2, clauses=(Decoder.CAUSAL,))
@given(case=layer_cases(memory_mask="maybe"), p=st.integers(0, 1))
@example(case=fixed_layer_case(batch=2, m_d=3, m_e=4, d_model=4, num_heads=2, d_ff=8, seed=3), p=0)
def decoder_layer_is_causal(student, case, p):
    """With a causal target_mask, changing target positions > p leaves the outputs at positions <= p unchanged."""
    x, seed = case.x, case.seed
    m_d = x.shape[1]
    p = min(p, m_d - 2)
    handle, state = build_layer(student, case)
    out = run_layer(student, handle, case)
    not_constant(out, torch_layer(state, case), _("DecoderLayer output"), given=x)
    later = torch.arange(m_d) > p
    changed = torch.where(later[None, :, None], randn(x.shape, seed + 5, x.dtype, 2.0), x)
    out2 = run_layer(student, handle, replace(case, x=changed))
    swapped = LayerMistake.SELF_GETS_MEMORY_MASK | LayerMistake.CROSS_GETS_TARGET_MASK
    close(
        out2[:, : p + 1],
        out[:, : p + 1],
        _("outputs at positions <= {p} after changing the target at positions > {p}").format(p=p),
        lambda: diagnose(
            LAYER_HINTS(LayerMistake.NO_SELF_MASK, C),
            (
                lambda: (
                    mistake_models is not None
                    and is_close(out, by_hand_layer(state, case, swapped))
                ),
                LAYER_HINTS(swapped, C),
            ),
        ),
    )


@prop(C, points=1, examples=3, clauses=(Decoder.MEMORY,))
@given(case=layer_cases(memory_mask=False))
@example(
    case=fixed_layer_case(
        batch=2, m_d=3, m_e=4, d_model=4, num_heads=2, d_ff=8, seed=7, memory_mask=False
    )
)
def decoder_layer_cross_attention_reads_memory(student, case):
    """Changing the memory changes the output; the layer equals torch's for a memory of another length."""
    handle, state = build_layer(student, case)
    other = replace(case, memory=randn(case.memory.shape, case.seed + 3, case.x.dtype, 2.0))
    out, out2 = run_layer(student, handle, case), run_layer(student, handle, other)
    expect(
        not is_close(out, out2),
        _("the output does not change when the memory does"),
        LAYER_HINTS(LayerMistake.CROSS_KEYS_FROM_X),
    )
    expected = torch_layer(state, other)
    close(
        out2,
        expected,
        _("DecoderLayer vs nn.TransformerDecoderLayer (no memory_mask)"),
        lambda: explain_layer(out2, state, other, _("keys and values from the encoder memory")),
    )


@prop(C, points=1, examples=3, clauses=(Decoder.MEMORY,))
@given(case=layer_cases())
@example(case=fixed_layer_case(batch=2, m_d=2, m_e=4, d_model=4, num_heads=2, d_ff=8, seed=2))
def decoder_layer_memory_mask_hides_padding(student, case):
    """Changing the memory at positions that memory_mask blocks leaves the output unchanged."""
    x, memory = case.x, case.memory
    handle, state = build_layer(student, case)
    padded = ~case.memory_mask[:, 0, 0]  # (batch, m_E)
    noise = randn(memory.shape, case.seed + 4, x.dtype, 2.0)
    changed = replace(case, memory=torch.where(padded[..., None], noise, memory))
    out, out2 = run_layer(student, handle, case), run_layer(student, handle, changed)
    consistent(
        out2,
        out,
        _("output after changing the memory at blocked positions"),
        LAYER_HINTS(LayerMistake.NO_CROSS_MASK),
        expected=torch_layer(state, case),
        given=x,
    )


@prop(
    C,
    points=2,
    examples=2,
    clauses=(
        Decoder.STACK,
        Decoder.CAUSAL,
        Decoder.MEMORY,
    ),
)
@given(case=layer_cases(memory_mask="maybe"), n=st.integers(2, 3))
@example(case=fixed_layer_case(batch=2, m_d=3, m_e=4, d_model=4, num_heads=2, d_ff=8, seed=9), n=2)
def decoder_stack_equals_torch(student, case, n):
    """Decoder(N) equals N nn.TransformerDecoderLayer in order, each with its own weights, the memory and masks."""
    handle, state = build_stack(student, case, n)
    out = run_layer(student, handle, case, "Decoder.forward")
    expected = torch_stack(state, case, n)
    close(
        out,
        expected,
        _("Decoder({n} layers) vs {n} nn.TransformerDecoderLayer in a row").format(n=n),
        lambda: explain_stack(
            out,
            state,
            case,
            n,
            _(
                "apply the layers of self.layers in turn, each to the one before's output, and return the "
                "last output (no final norm); if the DecoderLayer properties fail too, fix the layer first"
            ),
        ),
        **stack_tolerance(case.x.dtype, n),
    )


@prop(C, points=1, examples=2, clauses=(Decoder.GRADIENTS,))
@given(case=layer_cases(memory_mask=False))
@example(
    case=fixed_layer_case(
        batch=2, m_d=3, m_e=4, d_model=4, num_heads=2, d_ff=8, seed=10, memory_mask=False
    )
)
def decoder_layer_gradients_reach_memory_and_parameters(student, case):
    """Backpropagating through DecoderLayer reaches x, the memory, and every parameter (finite gradients)."""
    x, memory, tm = case.x, case.memory, case.target_mask
    seed = case.seed
    handle = build_layer(student, case)[0]
    reply = student.run(
        Call(handle, "forward", (x, memory), {"target_mask": tm}, seed=seed, backward=True)
    )
    grads = reply.input_grads or [None, None]
    expect(
        grads[1] is not None and grads[1].abs().sum() > 0,
        _("no gradient reaches the memory"),
        LAYER_HINTS(LayerMistake.CROSS_KEYS_FROM_X),
    )
    expect(
        grads[0] is not None and grads[0].abs().sum() > 0,
        _("no gradient reaches x"),
        _("keep x in the graph"),
    )
    for name, g in (reply.param_grads or {}).items():
        if g is None:
            fail(
                _("{name} got no gradient").format(name=name),
                _(
                    "every sub-module must take part in forward, with autograd on (no .detach(), .data "
                    "or no_grad)"
                ),
            )
        expect(
            torch.isfinite(g).all(),
            _("{name} has a non-finite gradient").format(name=name),
            _("NaN or inf in the backward pass"),
        )


@prop(C, points=1, examples=1, kind=Kind.STATIC)
def decoder_is_written_by_hand(student):
    """decoder.py calls no library attention, norm or Transformer layer (static check)."""
    written_by_hand(
        student,
        C,
        _(
            "build the layers from MultiHeadAttention, AddAndNorm and FeedForward: no "
            "nn.TransformerDecoderLayer, nn.LayerNorm or nn.MultiheadAttention"
        ),
    )
