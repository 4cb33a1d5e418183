"""Properties of decoder.DecoderLayer and decoder.Decoder (visible to students).

Expected values: torch's nn.TransformerDecoderLayer (post-norm, ReLU, dropout 0) with the same weights copied
in, with m_E != m_D, a causal target mask and a memory padding mask. Invariants tell the masks apart: causality (later
target positions cannot change earlier outputs), the cross-attention reading the memory, and padded memory
positions being invisible under memory_mask. Mismatches are diagnosed by recomputing the layer with one
mistake at a time.
"""

from __future__ import annotations

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from ..i18n import N_, _
from . import expected_values, graded
from .checks import (
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
from .core import prop
from .expected_values import expected_causal_mask
from .layers import (
    AFTER_NORM,
    NO_RESIDUAL,
    PRE_NORM,
    explain_stack,
    stack_has_n_distinct_layers,
    torch_layer_with,
)
from .strategies import (
    DecoderInputs,
    decoder_layer_state,
    dtypes,
    masks,
    model_sizes,
    randn,
    seeds,
    stack_state,
    tensors,
)

# The layer by hand with its usual mistakes: the graded side's; None in the student bundle (docs/bundle.md).
oracle = graded.oracle("layers")

C = "decoder"
LAYER_ERROR = N_(
    "a shape error with m_E != m_D? In the cross-attention the queries come from the decoder (x) and "
    "the keys and values from the encoder memory, cross_attention(x, memory, memory, memory_mask): its "
    "mask is memory_mask (m_D or 1, m_E); the self-attention takes target_mask. Sub-modules: "
    "self_attention, add_norm_1, cross_attention, add_norm_2, feed_forward, add_norm_3, layers"
)


# ------------------------------------------------------------------------------------------------- diagnoses
KV_FROM_X = N_(
    "the cross-attention ignores the memory: its keys and values come from the encoder memory, "
    "cross_attention(x, memory, memory, memory_mask) (queries from the decoder)"
)
CROSS_TARGET_MASK = N_(
    "the cross-attention gets target_mask: it takes memory_mask, the self-attention target_mask"
)
NO_MEMORY_MASK = N_(
    "memory_mask is ignored: pass it to the cross-attention, "
    "cross_attention(x, memory, memory, memory_mask)"
)
NO_TARGET_MASK = N_(
    "target_mask is ignored: pass it to the self-attention, self_attention(x, x, x, target_mask)"
)


NORMS_1_2 = N_(
    "add_norm_1 and add_norm_2 swapped: add_norm_1 follows the "
    "self-attention, add_norm_2 the cross-attention, add_norm_3 the "
    "feed-forward"
)
NORMS_2_3 = N_(
    "add_norm_2 and add_norm_3 swapped: add_norm_2 follows the "
    "cross-attention, add_norm_3 the feed-forward"
)


def explain_layer(got, state, heads, x, memory, target_mask, memory_mask, default=""):
    """The hint naming the layer mistake whose output matches `got` (in the student bundle, among the mistakes
    that are torch's layer with other weights or masks)."""
    if oracle is None:

        def torch_same(tm=target_mask, mm=memory_mask, swap=None):
            return lambda: is_close(got, torch_layer_with(state, heads, x, memory, tm, mm, swap))

        return diagnose(
            default,
            (torch_same(swap=(1, 2)), _(NORMS_1_2)),
            (torch_same(swap=(2, 3)), _(NORMS_2_3)),
            *([(torch_same(tm=None), _(NO_TARGET_MASK))] if target_mask is not None else []),
            *([(torch_same(mm=None), _(NO_MEMORY_MASK))] if memory_mask is not None else []),
        )
    LayerMistake = oracle.LayerMistake

    def same(mistake):
        return lambda: is_close(
            got,
            oracle.expected_decoder_layer(
                state, heads, x, memory, target_mask, memory_mask, mistake
            ),
        )

    candidates = [
        (same(LayerMistake.CROSS_KEYS_FROM_X), _(KV_FROM_X)),
        (same(LayerMistake.CROSS_KEYS_FROM_X | LayerMistake.CROSS_GETS_TARGET_MASK), _(KV_FROM_X)),
        (same(LayerMistake.CROSS_GETS_TARGET_MASK), _(CROSS_TARGET_MASK)),
        (
            same(LayerMistake.SELF_GETS_MEMORY_MASK | LayerMistake.CROSS_GETS_TARGET_MASK),
            _(
                "target_mask and memory_mask swapped: the self-attention takes target_mask, the "
                "cross-attention memory_mask"
            ),
        ),
        (same(LayerMistake.NO_SELF_MASK), _(NO_TARGET_MASK)),
        (same(LayerMistake.NO_CROSS_MASK), _(NO_MEMORY_MASK)),
        (
            same(LayerMistake.NORMS_1_2_SWAPPED),
            _(NORMS_1_2),
        ),
        (
            same(LayerMistake.NORMS_2_3_SWAPPED),
            _(NORMS_2_3),
        ),
        (
            same(LayerMistake.CROSS_ATTENTION_FIRST),
            _(
                "the cross-attention runs before the self-attention: the order "
                "is masked self-attention, cross-attention, feed-forward"
            ),
        ),
        (same(LayerMistake.PRE_NORM), _(PRE_NORM)),
        (same(LayerMistake.NORM_INSIDE_RESIDUAL), _(AFTER_NORM)),
        (same(LayerMistake.NO_RESIDUAL), _(NO_RESIDUAL)),
        (
            same(LayerMistake.NO_CROSS_ATTENTION),
            _(
                "the cross-attention sub-layer is skipped: "
                "x = add_norm_2(x, cross_attention(x, memory, memory, memory_mask))"
            ),
        ),
        (
            same(LayerMistake.NO_FEED_FORWARD),
            _("the feed-forward sub-layer is skipped: return add_norm_3(x, feed_forward(x))"),
        ),
    ]
    return diagnose(default, *candidates)


def expected_decoder(
    state,
    n,
    heads,
    x,
    memory,
    target_mask=None,
    memory_mask=None,
    order=None,
    masked=None,
    target_masked=None,
):
    """The stack of torch decoder layers on the checking side: layer `order[i]` at step i (default 0..N-1),
    memory_mask given at the steps in `masked`, target_mask at those in `target_masked` (default all)."""
    order = range(n) if order is None else order
    masked = range(n) if masked is None else masked
    target_masked = range(n) if target_masked is None else target_masked
    b, m_d, d = x.shape
    m_e, d_ff = memory.shape[1], state["layers.0.feed_forward.linear_1.weight"].shape[0]
    tgt = expected_values.to_torch_mask(target_mask, b, heads, m_d, m_d)
    mem = expected_values.to_torch_mask(memory_mask, b, heads, m_d, m_e)
    with torch.no_grad():
        for step, i in enumerate(order):
            layer = expected_values.torch_decoder_layer(
                state, d, heads, d_ff, x.dtype, f"layers.{i}."
            )
            x = layer(
                x,
                memory,
                tgt_mask=tgt if step in target_masked else None,
                memory_mask=mem if step in masked else None,
            )
    return x


MASKS_EVERY_LAYER = N_(
    "both masks must reach every layer: x = layer(x, memory, target_mask, memory_mask) inside "
    "the loop"
)


# ------------------------------------------------------------------------------------------------- plumbing
@st.composite
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


def build_layer(student, case, state=None, **kw):
    """The student's DecoderLayer for `case`, in x's dtype, with the case's weights (or `state`)."""
    dtype = case.x.dtype
    state = (
        decoder_layer_state("", case.d_model, case.d_ff, case.seed, dtype)
        if state is None
        else state
    )
    return student.build(
        C,
        "DecoderLayer",
        state=state,
        dtype=dtype,
        d_model=case.d_model,
        num_heads=case.num_heads,
        d_ff=case.d_ff,
        **kw,
    ), state


def build_stack(student, case, n, **kw):
    """The student's Decoder of n layers for `case`, with the case's weights."""
    dtype = case.x.dtype
    state = stack_state(decoder_layer_state, n, case.d_model, case.d_ff, case.seed, dtype)
    return student.build(
        C,
        "Decoder",
        state=state,
        dtype=dtype,
        num_layers=n,
        d_model=case.d_model,
        num_heads=case.num_heads,
        d_ff=case.d_ff,
        **kw,
    ), state


def run_layer(
    student, handle, x, memory, target_mask=None, memory_mask=None, what="DecoderLayer.forward"
):
    kwargs = {
        k: v
        for k, v in (("target_mask", target_mask), ("memory_mask", memory_mask))
        if v is not None
    }
    out = student.method(handle, "forward", x, memory, **kwargs)
    return tensor(
        out,
        _("{call}(x, memory, ...) with x {x_shape}, memory {memory_shape}").format(
            call=what, x_shape=tuple(x.shape), memory_shape=tuple(memory.shape)
        ),
        like=x,
    )


def torch_layer(state, case, x, memory, target_mask, memory_mask):
    """nn.TransformerDecoderLayer of the case's sizes with the weights `state`, on x, memory and the masks."""
    b, m_d, m_e, h = x.shape[0], x.shape[1], memory.shape[1], case.num_heads
    with torch.no_grad():
        return expected_values.torch_decoder_layer(state, case.d_model, h, case.d_ff, x.dtype)(
            x,
            memory,
            tgt_mask=expected_values.to_torch_mask(target_mask, b, h, m_d, m_d),
            memory_mask=expected_values.to_torch_mask(memory_mask, b, h, m_d, m_e),
        )


# ------------------------------------------------------------------------------------------------- properties
@prop(C, points=1, examples=1, error_hint=LAYER_ERROR)
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


@prop(C, points=1, examples=2, error_hint=LAYER_ERROR)
@given(n=st.integers(1, 3))
@example(n=2)
def decoder_stack_has_n_distinct_layers(student, n):
    """Decoder(num_layers=N) holds N separate layers: layers.0 ... layers.N-1, each with its own parameters."""
    stack_has_n_distinct_layers(student, C, "Decoder", "DecoderLayer", n)


@prop(C, points=1, examples=2, error_hint=LAYER_ERROR)
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


@prop(C, points=3, examples=3, error_hint=LAYER_ERROR)
@given(case=layer_cases(memory_mask="maybe"))
@example(case=fixed_layer_case(batch=2, m_d=3, m_e=4, d_model=4, num_heads=2, d_ff=8, seed=5))
@example(
    case=fixed_layer_case(
        batch=1, m_d=3, m_e=2, d_model=6, num_heads=2, d_ff=4, seed=12, dtype=torch.float32
    )
)
def decoder_layer_equals_torch(student, case):
    """DecoderLayer equals nn.TransformerDecoderLayer (post-norm, dropout 0): causal target mask, m_E != m_D."""
    x, memory, tm, mm = case.x, case.memory, case.target_mask, case.memory_mask
    h = case.num_heads
    handle, state = build_layer(student, case)
    out = run_layer(student, handle, x, memory, tm, mm)
    expected = torch_layer(state, case, x, memory, tm, mm)
    close(
        out,
        expected,
        _("DecoderLayer vs nn.TransformerDecoderLayer"),
        lambda: explain_layer(
            out,
            state,
            h,
            x,
            memory,
            tm,
            mm,
            _(
                "masked self-attention -> add_norm_1, "
                "cross-attention on the memory -> add_norm_2, feed-forward -> add_norm_3"
            ),
        ),
    )


@prop(C, points=2, examples=2, error_hint=LAYER_ERROR)
@given(case=layer_cases(memory_mask="maybe"), p=st.integers(0, 1))
@example(case=fixed_layer_case(batch=2, m_d=3, m_e=4, d_model=4, num_heads=2, d_ff=8, seed=3), p=0)
def decoder_layer_is_causal(student, case, p):
    """With a causal target_mask, changing target positions > p leaves the outputs at positions <= p unchanged."""
    x, memory, tm, mm = case.x, case.memory, case.target_mask, case.memory_mask
    h, seed = case.num_heads, case.seed
    m_d = x.shape[1]
    p = min(p, m_d - 2)
    handle, state = build_layer(student, case)
    out = run_layer(student, handle, x, memory, tm, mm)
    not_constant(out, torch_layer(state, case, x, memory, tm, mm), _("DecoderLayer output"))
    later = torch.arange(m_d) > p
    changed = torch.where(later[None, :, None], randn(x.shape, seed + 5, x.dtype, 2.0), x)
    out2 = run_layer(student, handle, changed, memory, tm, mm)
    close(
        out2[:, : p + 1],
        out[:, : p + 1],
        _("outputs at positions <= {p} after changing the target at positions > {p}").format(p=p),
        lambda: diagnose(
            _(NO_TARGET_MASK),
            (
                lambda: (
                    oracle is not None
                    and is_close(
                        out,
                        oracle.expected_decoder_layer(
                            state,
                            h,
                            x,
                            memory,
                            tm,
                            mm,
                            oracle.LayerMistake.SELF_GETS_MEMORY_MASK
                            | oracle.LayerMistake.CROSS_GETS_TARGET_MASK,
                        ),
                    )
                ),
                _("target_mask and memory_mask swapped: the self-attention takes target_mask"),
            ),
        ),
    )


@prop(C, points=1, examples=3, error_hint=LAYER_ERROR)
@given(case=layer_cases(memory_mask=False))
@example(
    case=fixed_layer_case(
        batch=2, m_d=3, m_e=4, d_model=4, num_heads=2, d_ff=8, seed=7, memory_mask=False
    )
)
def decoder_layer_cross_attention_reads_memory(student, case):
    """Changing the memory changes the output; the layer equals torch's for a memory of another length."""
    x, memory, tm = case.x, case.memory, case.target_mask
    h, seed = case.num_heads, case.seed
    handle, state = build_layer(student, case)
    other = randn(memory.shape, seed + 3, x.dtype, 2.0)
    out, out2 = run_layer(student, handle, x, memory, tm), run_layer(student, handle, x, other, tm)
    expect(
        not is_close(out, out2),
        _("the output does not change when the memory does"),
        _(KV_FROM_X),
    )
    expected = torch_layer(state, case, x, other, tm, None)
    close(
        out2,
        expected,
        _("DecoderLayer vs nn.TransformerDecoderLayer (no memory_mask)"),
        lambda: explain_layer(
            out2, state, h, x, other, tm, None, _("keys and values from the encoder memory")
        ),
    )


@prop(C, points=1, examples=3, error_hint=LAYER_ERROR)
@given(case=layer_cases())
@example(case=fixed_layer_case(batch=2, m_d=2, m_e=4, d_model=4, num_heads=2, d_ff=8, seed=2))
def decoder_layer_memory_mask_hides_padding(student, case):
    """Changing the memory at positions that memory_mask blocks leaves the output unchanged."""
    x, memory, tm, mm = case.x, case.memory, case.target_mask, case.memory_mask
    seed = case.seed
    handle, state = build_layer(student, case)
    padded = ~mm[:, 0, 0]  # (batch, m_E)
    changed = torch.where(padded[..., None], randn(memory.shape, seed + 4, x.dtype, 2.0), memory)
    out, out2 = (
        run_layer(student, handle, x, memory, tm, mm),
        run_layer(student, handle, x, changed, tm, mm),
    )
    consistent(
        out2,
        out,
        _("output after changing the memory at blocked positions"),
        _(NO_MEMORY_MASK),
        expected=torch_layer(state, case, x, memory, tm, mm),
    )


@prop(C, points=2, examples=2, error_hint=LAYER_ERROR)
@given(case=layer_cases(memory_mask="maybe"), n=st.integers(2, 3))
@example(case=fixed_layer_case(batch=2, m_d=3, m_e=4, d_model=4, num_heads=2, d_ff=8, seed=9), n=2)
def decoder_stack_equals_torch(student, case, n):
    """Decoder(N) equals N nn.TransformerDecoderLayer in order, each with its own weights, the memory and masks."""
    x, memory, tm, mm = case.x, case.memory, case.target_mask, case.memory_mask
    d, h, d_ff = case.d_model, case.num_heads, case.d_ff
    handle, state = build_stack(student, case, n)
    out = run_layer(student, handle, x, memory, tm, mm, "Decoder.forward")
    expected = expected_values.decoder(state, n, d, h, d_ff, x, memory, tm, mm)

    def with_mistake(**kw):
        return expected_decoder(state, n, h, x, memory, tm, mm, **kw)

    def hint():
        masks_hint = _(MASKS_EVERY_LAYER)
        return explain_stack(
            out, n, with_mistake, "", masks_hint, "DecoderLayer", masked=mm is not None
        ) or diagnose(
            _(
                "for layer in self.layers: x = layer(x, memory, target_mask, memory_mask); return x "
                "(no final norm); if the DecoderLayer properties fail too, fix the layer first"
            ),
            (lambda: is_close(out, with_mistake(target_masked=())), masks_hint),
            (lambda: is_close(out, with_mistake(target_masked=(0,))), masks_hint),
        )

    close(
        out,
        expected,
        _("Decoder({n} layers) vs {n} nn.TransformerDecoderLayer in a row").format(n=n),
        hint,
        **stack_tolerance(x.dtype, n),
    )


@prop(C, points=1, examples=1)
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
