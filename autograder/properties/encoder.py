"""Properties of encoder.EncoderLayer and encoder.Encoder (visible to students).

Expected values: torch's nn.TransformerEncoderLayer (post-norm, ReLU, dropout 0) with the same weights copied
in, and a closed form: with the attention's w_o and the feed-forward's linear_2 zeroed, a post-norm layer is
LN2(LN1(x)). Mismatches are diagnosed by recomputing the layer on the checking side with one mistake at a time
(pre-norm, the residual added after the norm, a sub-layer skipped, the norms swapped, the mask dropped) and, for
the stack, with the layers reused or the mask not passed on.
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
    stack_tolerance,
    written_by_hand,
)
from ..suite.clauses import Encoder
from ..suite.core import Evidence, Kind, default_hint, named, prop
from ..suite.layers import (
    build_layer,
    build_stack,
    expected_layer_norm,
    explain_layer_with,
    explain_stack,
    run_layer,
    stack_has_n_distinct_layers,
)
from ..suite.strategies import (
    EncoderInputs,
    composite,
    dtypes,
    encoder_layer_state,
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

C = "encoder"
LAYER_ERROR = N_(
    "EncoderLayer(d_model, num_heads, d_ff, dropout) / Encoder(num_layers, ...) must build and load "
    "weights by the docstring's names: self_attention, add_norm_1, feed_forward, add_norm_2, layers"
)
default_hint(C, LAYER_ERROR)


# ------------------------------------------------------------------------------------------------- diagnoses


def explain_layer(got, state, case, default=""):
    """The hint naming the layer mistake whose output matches `got` on the case's inputs (in the student bundle,
    among the mistakes that are torch's layer with other weights or masks)."""
    # every layer mistake declared for the encoder (LAYER_HINTS' order), the mask's only where the case has one
    without = LayerMistake.NO_SELF_MASK if case.mask is None else None
    candidates = [(m, LAYER_HINTS(m, C)) for m in LAYER_HINTS.tried(C, without)]
    by_hand = None
    if mistake_models is not None:

        def by_hand(mistake):
            return mistake_models.expected_encoder_layer(
                state, case.num_heads, case.x, case.mask, mistake
            )

    return explain_layer_with(got, state, case, candidates, default, by_hand)


# ------------------------------------------------------------------------------------------------- plumbing
def draw_padding_mask(draw, b, m):
    """(batch, 1, 1, m) with position 0 always allowed (no fully masked query rows)."""
    return draw(masks((b, 1, 1, m), p_fully_masked_row=False))


@composite
def layer_cases(draw, mask=True, dtype=None, max_len=4):
    """(x, mask, d_model, heads, d_ff, seed): >= 2 heads; mask a padding mask or None."""
    d, h = draw(model_sizes(max_heads=2, min_heads=2))
    dtype = dtype or draw(dtypes())
    b, m = draw(st.integers(1, 2)), draw(st.integers(2, max_len))
    x = draw(tensors((b, m, d), dtype))
    pad = (
        draw_padding_mask(draw, b, m)
        if mask and draw(st.booleans() if mask == "maybe" else st.just(True))
        else None
    )
    return EncoderInputs(
        x=x,
        mask=pad,
        d_model=d,
        num_heads=h,
        d_ff=draw(st.sampled_from([4, 8])),
        seed=draw(seeds()),
    )


def fixed_layer_case(batch, length, d_model, num_heads, d_ff, seed, dtype=torch.float64, mask=True):
    x = randn((batch, length, d_model), seed, dtype)
    pad = None
    if mask:
        pad = randn((batch, 1, 1, length), seed + 1) > 0
        pad[..., 0] = True
    return EncoderInputs(x=x, mask=pad, d_model=d_model, num_heads=num_heads, d_ff=d_ff, seed=seed)


# ------------------------------------------------------------------------------------------------- properties
@prop(C, points=1, examples=1, kind=Kind.SHAPE, clauses=(Encoder.NAMES,))
def encoder_submodules_are_named(student):
    """EncoderLayer has self_attention, add_norm_1, feed_forward, add_norm_2; Encoder has layers (a ModuleList)."""
    info = student.inspect(student.build(C, "EncoderLayer", d_model=4, num_heads=2, d_ff=8))
    expected_children = ["self_attention", "add_norm_1", "feed_forward", "add_norm_2"]
    missing = [n for n in expected_children if n not in info["children"]]
    expect(
        not missing,
        _("EncoderLayer has no sub-module {missing}; it has {children}").format(
            missing=missing, children=info["children"]
        ),
        _(
            "name the sub-modules as in the docstring: self_attention, add_norm_1, feed_forward, add_norm_2"
        ),
    )
    types = info["module_types"]
    expect(
        types.get("self_attention") == "MultiHeadAttention"
        and types.get("feed_forward") == "FeedForward"
        and types.get("add_norm_1") == "AddAndNorm",
        _("EncoderLayer's sub-modules have types {types}").format(types=types),
        _("build them from the earlier exercises: MultiHeadAttention, AddAndNorm, FeedForward"),
    )
    info = student.inspect(
        student.build(C, "Encoder", num_layers=3, d_model=4, num_heads=2, d_ff=8)
    )
    expect(
        "layers" in info["children"] and info["module_types"].get("layers") == "ModuleList",
        _("Encoder's sub-modules are {children}, expected layers (an nn.ModuleList)").format(
            children=info["children"]
        ),
        _(
            "keep the layers in self.layers = nn.ModuleList([...]): a plain list hides them from "
            ".parameters()"
        ),
    )


@prop(C, points=1, examples=2, kind=Kind.SHAPE, clauses=(Encoder.NAMES,))
@given(n=st.integers(1, 3))
@example(n=2)
def encoder_stack_has_n_distinct_layers(student, n):
    """Encoder(num_layers=N) holds N separate layers: layers.0 ... layers.N-1, each with its own parameters."""
    stack_has_n_distinct_layers(student, C, "Encoder", "EncoderLayer", n)


@prop(C, points=3, examples=4, clauses=(Encoder.LAYER,))
@given(case=layer_cases(mask="maybe"))
@example(case=fixed_layer_case(batch=2, length=3, d_model=4, num_heads=2, d_ff=8, seed=5))
@example(
    case=fixed_layer_case(
        batch=2, length=4, d_model=6, num_heads=2, d_ff=4, seed=17, dtype=torch.float32, mask=False
    )
)
def encoder_layer_equals_torch(student, case):
    """EncoderLayer equals nn.TransformerEncoderLayer (post-norm, ReLU, dropout 0) with the same weights, in x's
    dtype."""
    handle, state = build_layer(student, case)
    out = run_layer(student, handle, case, strict=True)
    expected = torch_layer(state, case)
    close(
        out,
        expected,
        _("EncoderLayer vs nn.TransformerEncoderLayer"),
        lambda: explain_layer(
            out,
            state,
            case,
            _(
                "x = add_norm_1(x, self_attention(x, x, x, mask)); "
                "return add_norm_2(x, feed_forward(x))"
            ),
        ),
    )


RESIDUAL_FROM_INPUT = N_(
    "add_norm_1's output reaches your layer's output, but the second residual adds the layer's input: "
    "add_norm_2 adds the feed-forward's own input, x = add_norm_1(x, ...), then add_norm_2(x, "
    "feed_forward(x)) with that x (is the layer's input kept in another variable?)"
)


def norm_1_reaches_the_output(student, case) -> bool:
    """With only the attention's w_o zeroed, the output changes with add_norm_1's weight: the first sub-layer is
    not skipped (skipped, its norm would change nothing), the cause "the self-attention sub-layer is skipped"
    tested directly."""
    state = encoder_layer_state("", case.d_model, case.d_ff, case.seed, case.x.dtype)
    for name in ("self_attention.w_o.weight", "self_attention.w_o.bias"):
        state[name] = torch.zeros_like(state[name])
    other = dict(state)
    other["add_norm_1.norm.weight"] = state["add_norm_1.norm.weight"] * 2 + 1
    outs = [
        run_layer(student, build_layer(student, case, state=s)[0], case) for s in (state, other)
    ]
    return not is_close(outs[0], outs[1])


@prop(C, points=2, examples=3, clauses=(Encoder.LAYER,))
@given(case=layer_cases(mask=False))
@example(
    case=fixed_layer_case(batch=1, length=3, d_model=4, num_heads=2, d_ff=8, seed=3, mask=False)
)
def encoder_layer_post_norm_closed_form(student, case):
    """With w_o and linear_2 zeroed (weights and biases) both sub-layers output 0: layer(x) = LN2(LN1(x))."""
    x = case.x
    d, d_ff, seed = case.d_model, case.d_ff, case.seed
    state = encoder_layer_state("", d, d_ff, seed, x.dtype)
    for name in (
        "self_attention.w_o.weight",
        "self_attention.w_o.bias",
        "feed_forward.linear_2.weight",
        "feed_forward.linear_2.bias",
    ):
        state[name] = torch.zeros_like(state[name])
    handle = build_layer(student, case, state=state)[0]
    out = run_layer(student, handle, case)
    n1 = lambda y: expected_layer_norm(y, state, "add_norm_1.norm.")  # noqa: E731
    n2 = lambda y: expected_layer_norm(y, state, "add_norm_2.norm.")  # noqa: E731
    expected = n2(n1(x))
    zero = torch.zeros_like(x)
    close(
        out,
        expected,
        _("EncoderLayer with zeroed output projections vs LN2(LN1(x))"),
        lambda: diagnose(
            _(
                "each sub-layer is x = norm(x + sublayer(x)): with the sub-layers giving 0 that is "
                "LN2(LN1(x))"
            ),
            (lambda: is_close(out, x), LAYER_HINTS(LayerMistake.PRE_NORM)),
            (
                lambda: is_close(out, x + n1(zero) + n2(zero)),
                LAYER_HINTS(LayerMistake.NORM_INSIDE_RESIDUAL),
            ),
            (lambda: is_close(out, n1(x)), LAYER_HINTS(LayerMistake.NO_FEED_FORWARD, C)),
            (
                lambda: is_close(out, n2(x)),
                lambda: named(
                    _(RESIDUAL_FROM_INPUT)
                    if norm_1_reaches_the_output(student, case)
                    else LAYER_HINTS(LayerMistake.NO_SELF_ATTENTION, C),
                    Evidence.DIRECT,
                ),
            ),
            (lambda: is_close(out, n1(n2(x))), LAYER_HINTS(LayerMistake.NORMS_1_2_SWAPPED, C)),
            (lambda: is_close(out, n2(n1(zero))), LAYER_HINTS(LayerMistake.NO_RESIDUAL)),
        ),
    )


@prop(C, points=1, examples=3, clauses=(Encoder.MASK,))
@given(case=layer_cases(), noise=st.integers(0, 2**16 - 1))
@example(case=fixed_layer_case(batch=2, length=4, d_model=4, num_heads=2, d_ff=8, seed=1), noise=1)
def encoder_layer_padding_mask_hides_padded_positions(student, case, noise):
    """With a padding mask, changing the padded positions' inputs leaves the other positions' outputs unchanged."""
    x, mask = case.x, case.mask
    handle, state = build_layer(student, case)
    out = run_layer(student, handle, case)
    padded = ~mask[:, 0, 0]  # (batch, m)
    changed = torch.where(padded[..., None], randn(x.shape, noise, x.dtype, 2.0), x)
    out2 = run_layer(student, handle, replace(case, x=changed))
    keep = ~padded
    consistent(
        out2[keep],
        out[keep],
        _("outputs at unpadded positions after changing the padded positions' inputs"),
        LAYER_HINTS(LayerMistake.NO_SELF_MASK, C),
        expected=torch_layer(state, case)[keep],
        given=x[keep],
    )


@prop(
    C,
    points=3,
    examples=3,
    clauses=(
        Encoder.STACK,
        Encoder.MASK,
    ),
)
@given(case=layer_cases(mask="maybe"), n=st.integers(2, 3))
@example(case=fixed_layer_case(batch=2, length=4, d_model=4, num_heads=2, d_ff=8, seed=7), n=2)
@example(
    case=fixed_layer_case(
        batch=1, length=3, d_model=6, num_heads=2, d_ff=8, seed=2, dtype=torch.float32
    ),
    n=3,
)
def encoder_stack_equals_torch(student, case, n):
    """Encoder(N) equals N nn.TransformerEncoderLayer applied in order, each with its own weights and the mask."""
    handle, state = build_stack(student, case, n)
    out = run_layer(student, handle, case, "Encoder.forward(x, mask)")
    expected = torch_stack(state, case, n)
    close(
        out,
        expected,
        _("Encoder({n} layers) vs {n} nn.TransformerEncoderLayer in a row").format(n=n),
        lambda: explain_stack(
            out,
            state,
            case,
            n,
            _(
                "apply the layers of self.layers in turn, each to the one before's output, and return the "
                "last output (no final norm); if the EncoderLayer properties fail too, fix the layer first"
            ),
        ),
        **stack_tolerance(case.x.dtype, n),
    )


@prop(C, points=1, examples=2, clauses=(Encoder.GRADIENTS,))
@given(case=layer_cases(mask=False))
@example(
    case=fixed_layer_case(batch=2, length=3, d_model=4, num_heads=2, d_ff=8, seed=4, mask=False)
)
def encoder_layer_gradients_reach_every_parameter(student, case):
    """Backpropagating through EncoderLayer gives every parameter a finite gradient (w_k.bias's is 0 by design)."""
    x = case.x
    seed = case.seed
    handle = build_layer(student, case)[0]
    reply = student.run(Call(handle, "forward", (x,), {}, seed=seed, backward=True))
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
    expect(
        reply.param_grads,
        _("EncoderLayer has no parameters"),
        _("build the sub-modules in __init__"),
    )
    g = (reply.input_grads or [None])[0]
    expect(
        g is not None and g.abs().sum() > 0,
        _("no gradient reaches the input x"),
        _("keep x in the autograd graph"),
    )


@prop(C, points=1, examples=4, clauses=(Encoder.EVAL,))
@given(case=layer_cases(mask="maybe"))
def encoder_layer_dropout_is_off_in_eval(student, case):
    """Built with dropout=0.3 in eval mode, EncoderLayer equals the dropout-free nn.TransformerEncoderLayer."""
    handle, state = build_layer(student, case, dropout=0.3)
    out = run_layer(student, handle, case)
    expected = torch_layer(state, case)
    close(
        out,
        expected,
        _("EncoderLayer(dropout=0.3) in eval mode vs the dropout-free layer"),
        lambda: explain_layer(
            out,
            state,
            case,
            _(
                "pass dropout to the sub-modules (nn.Dropout follows eval()); "
                "apply no dropout of your own with training=True"
            ),
        ),
    )


@prop(C, points=1, examples=1, kind=Kind.STATIC)
def encoder_is_written_by_hand(student):
    """encoder.py calls no library attention, norm or Transformer layer (static check)."""
    written_by_hand(
        student,
        C,
        _(
            "build the layers from MultiHeadAttention, AddAndNorm and FeedForward: no "
            "nn.TransformerEncoderLayer, nn.LayerNorm or nn.MultiheadAttention"
        ),
    )
