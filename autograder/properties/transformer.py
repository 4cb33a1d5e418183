"""Properties of transformer.Transformer and transformer.greedy_decode (visible to students).

Tiny models (d_model 4-8, 1-2 heads, 1-2 layers, d_ff 8, vocabularies of 5-7, max_len 16) in float64, with the
weights from strategies.transformer_state. Expected values: models.transformer.ExpectedTransformer, the same model
assembled from torch's own encoder and decoder layers. Mismatches are diagnosed by re-running it with one
mistake at a time (src_mask not reaching the cross-attention, no positional encoding on one side, ...); greedy
decoding is diagnosed against variants of the loop (no stop at eos, no eos after a finished row, an extra step...).
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
    equal,
    expect,
    fail,
    not_constant,
    written_by_hand,
)
from ..suite.clauses import Transformer
from ..suite.core import Kind, default_hint, prop
from ..suite.decoding import (
    Decoding,
    build_model,
    expect_run_in_eval_and_restored,
    greedy_fixed_point,
)
from ..suite.expected_values import expected_causal_mask
from ..suite.model_runs import (
    MAX_LEN,
    C,
    cases,
    eos_biased,
    expect_finished_rows_hold_eos,
    expect_greedy,
    explain_forward,
    explain_greedy,
    fixed_case,
    forward,
    greedy_decode,
    rows_finishing_apart,
)
from ..suite.strategies import seeds
from .models.greedy import GREEDY_HINTS, GreedyMistake
from .models.transformer import MODEL_HINTS, ExpectedTransformer, ModelMistake

BUILD_ERROR = N_(
    "Transformer(src_vocab_size, tgt_vocab_size, d_model, num_heads, num_layers, d_ff, dropout, "
    "max_len) must build and load weights by the docstring's names: src_embedding, tgt_embedding, "
    "positional_encoding, encoder, decoder, generator"
)
default_hint(C, BUILD_ERROR)


# ------------------------------------------------------------------------------------------------- properties
@prop(C, points=1, examples=1, kind=Kind.SHAPE, clauses=(Transformer.NAMES,))
def transformer_submodules_are_named(student):
    """Transformer has src_embedding, tgt_embedding, positional_encoding, encoder, decoder, generator."""
    h = student.build(
        C,
        "Transformer",
        src_vocab_size=5,
        tgt_vocab_size=7,
        d_model=4,
        num_heads=2,
        num_layers=2,
        d_ff=8,
        dropout=0.0,
        max_len=MAX_LEN,
    )
    info = student.inspect(h)
    expected_children = [
        "src_embedding",
        "tgt_embedding",
        "positional_encoding",
        "encoder",
        "decoder",
        "generator",
    ]
    missing = [n for n in expected_children if n not in info["children"]]
    expect(
        not missing,
        _("Transformer has no sub-module {missing}; it has {children}").format(
            missing=missing, children=info["children"]
        ),
        _("name the sub-modules as in the docstring: {names}").format(
            names=", ".join(expected_children)
        ),
    )
    gw = info["state"].get("generator.weight")
    expect(
        gw is not None and tuple(gw.shape) == (7, 4) and "generator.bias" in info["state"],
        _("generator.weight has shape {shape}, expected (7, 4)").format(
            shape=None if gw is None else tuple(gw.shape)
        ),
        _("generator = nn.Linear(d_model, tgt_vocab_size)"),
    )
    expect(
        "encoder.layers.1.self_attention.w_q.weight" in info["params"]
        and "decoder.layers.1.cross_attention.w_q.weight" in info["params"],
        _("encoder/decoder do not hold num_layers=2 layers each"),
        _("encoder = Encoder(num_layers, d_model, num_heads, d_ff, dropout), decoder likewise"),
    )
    pe = info["state"].get("positional_encoding.pe")
    expect(
        pe is not None and tuple(pe.shape) == (1, MAX_LEN, 4),
        _("positional_encoding.pe has shape {shape}, expected (1, {max_len}, 4)").format(
            shape=None if pe is None else tuple(pe.shape), max_len=MAX_LEN
        ),
        _("positional_encoding = PositionalEncoding(d_model, max_len, dropout): pass max_len on"),
    )


@prop(C, points=1, examples=2, kind=Kind.SHAPE, clauses=(Transformer.FORWARD,))
@given(case=cases(max_layers=1))
def transformer_logits_shape(student, case):
    """forward(src, tgt) gives logits (batch, m_D, tgt_vocab_size) with m_E != m_D, in the model's dtype."""
    handle = build_model(student, case)[0]
    forward(student, handle, case, expected_causal_mask(case.tgt.shape[1]), strict=True)


@prop(C, points=3, examples=2, clauses=(Transformer.FORWARD,))
@given(case=cases(), use_causal=st.booleans())
@example(case=fixed_case(3, lengths=[5, 3]), use_causal=True)
@example(
    case=fixed_case(8, batch=1, m_e=3, m_d=4, d_model=6, num_heads=1, num_layers=1, vocab=(7, 5)),
    use_causal=False,
)
def transformer_forward_equals_torch(student, case, use_causal):
    """forward equals the same model assembled from torch's encoder and decoder layers (float64)."""
    tm = expected_causal_mask(case.tgt.shape[1]) if use_causal else None
    handle, state = build_model(student, case)
    out = forward(student, handle, case, tm)
    expected = ExpectedTransformer(state, case.config).forward(
        case.src, case.tgt, case.src_mask, tm
    )
    close(
        out,
        expected,
        _("logits vs the torch-assembled Transformer"),
        lambda: explain_forward(
            out,
            state,
            case,
            tm,
            _(
                "memory = encode(src, src_mask); logits = generator(decode(tgt, "
                "memory, target_mask, src_mask)); embeddings scaled, positional encoding on both "
                "sides; if the encoder/decoder properties fail, fix those first"
            ),
        ),
    )


@prop(C, points=1, examples=2, clauses=(Transformer.SRC_MASK,))
@given(case=cases(mask=True, max_layers=1, m_e=(3, 5)), noise=seeds())
@example(case=fixed_case(5, lengths=[2, 4]), noise=1)
def transformer_src_mask_serves_cross_attention(student, case, noise):
    """Changing the source tokens that src_mask blocks leaves the logits unchanged (encoder and cross-attention)."""
    handle, state = build_model(student, case)
    tm = expected_causal_mask(case.tgt.shape[1])
    out = forward(student, handle, case, tm)
    g = torch.Generator().manual_seed(noise)
    other = torch.where(
        case.src_mask[:, 0, 0], case.src, torch.randint(1, 5, case.src.shape, generator=g)
    )
    changed = replace(case, src=other)
    out2 = forward(
        student, handle, changed, tm, seed=1
    )  # another seed: seeded noise is no model (seeded_noise)
    not_constant(
        out,
        ExpectedTransformer(state, case.config).forward(case.src, case.tgt, case.src_mask, tm),
        _("logits"),
    )
    close(
        out2,
        out,
        _("logits after changing the padded (blocked) source tokens"),
        lambda: explain_forward(out, state, case, tm, MODEL_HINTS(ModelMistake.NO_CROSS_MASK)),
    )


@prop(C, points=1, examples=2, clauses=(Transformer.DROPOUT,))
@given(case=cases(max_layers=1))
def transformer_eval_is_deterministic(student, case):
    """Built with dropout=0.1 in eval mode: two forwards agree, and equal the dropout-free expected model."""
    handle, state = build_model(student, case, dropout=0.1)
    tm = expected_causal_mask(case.tgt.shape[1])
    out, again = (
        forward(student, handle, case, tm, seed=1),
        forward(student, handle, case, tm, seed=2),
    )
    equal(
        again,
        out,
        _("two forwards in eval mode"),
        _(
            "dropout is active in eval mode: use nn.Dropout modules (they follow .eval()), no "
            "F.dropout(training=True)"
        ),
    )
    expected = ExpectedTransformer(state, case.config).forward(
        case.src, case.tgt, case.src_mask, tm
    )
    close(
        out,
        expected,
        _("logits in eval mode (dropout=0.1) vs the dropout-free expected model"),
        lambda: explain_forward(
            out, state, case, tm, _("in eval mode the output is the dropout-free one")
        ),
    )


@prop(C, points=1, examples=2, clauses=(Transformer.FORWARD,))
@given(case=cases(mask=False, m_e=(2, 4), m_d=(2, 3)))
def transformer_gradients_reach_every_parameter(student, case):
    """In train mode (dropout 0) backpropagating the logits gives every parameter a finite gradient."""
    handle = build_model(student, case, train=True)[0]
    tm = expected_causal_mask(case.tgt.shape[1])
    reply = student.run(
        Call(handle, "forward", (case.src, case.tgt), {"target_mask": tm}, backward=True)
    )
    grads = reply.param_grads or {}
    expect(grads, _("the model has no parameters"), _("build the sub-modules in __init__"))
    for name, g in grads.items():
        if g is None:
            fail(
                _("{name} got no gradient").format(name=name),
                _(
                    "every sub-module must take part in forward with autograd on: no .detach(), .data, "
                    "numpy or torch.no_grad() in forward/encode/decode"
                ),
            )
        expect(
            torch.isfinite(g).all(),
            _("{name} has a non-finite gradient").format(name=name),
            _("NaN or inf in the backward pass"),
        )
        # The key bias cancels in the softmax: its gradient is 0 by design.
        if not name.endswith("w_k.bias"):
            expect(
                g.abs().sum() > 0,
                _("{name} got an all-zero gradient").format(name=name),
                _("it does not affect the logits: is it used in forward?"),
            )


@prop(
    C,
    points=3,
    examples=3,
    clauses=(
        Transformer.GREEDY,
        Transformer.FINISHED,
    ),
)
@given(
    case=cases(mask=False, max_layers=1, m_d=(1, 1)),
    ids=st.sampled_from([(1, 2), (0, 3), (3, 1)]),
    max_len=st.integers(2, 6),
    bias=st.sampled_from([0.0, 1.5, 3.0]),
)
@example(case=fixed_case(2, num_layers=1), ids=(1, 2), max_len=6, bias=1.0)
def greedy_decode_equals_expected(student, case, ids, max_len, bias):
    """greedy_decode returns exactly the expected greedy sequence: bos first, argmax of the last position."""
    bos, eos = ids
    handle, state = build_model(student, case, state=eos_biased(case, eos, bias))
    decoding = Decoding(max_len, bos, eos)
    ys = greedy_decode(student, handle, case, decoding)[0]
    expect_greedy(
        ys,
        state,
        case,
        decoding,
        _(
            "memory = encode(src, src_mask) once; each step: logits = generator(decode(ys, "
            "memory, causal_mask(L), src_mask)[:, -1]), next = argmax, append; finished rows "
            "get eos_id"
        ),
    )


@prop(C, points=1, examples=2, clauses=(Transformer.GREEDY,))
@given(case=cases(mask=False, max_layers=1, m_d=(1, 1)), max_len=st.integers(1, 5))
@example(case=fixed_case(4, num_layers=1), max_len=1)
@example(case=fixed_case(4, num_layers=1), max_len=4)
def greedy_decode_respects_max_len(student, case, max_len):
    """When eos never wins, greedy_decode returns exactly max_len tokens (max_len=1: just bos)."""
    bos, eos = 1, 2
    handle, state = build_model(student, case, state=eos_biased(case, eos, -1e3))
    decoding = Decoding(max_len, bos, eos)
    ys = greedy_decode(student, handle, case, decoding)[0]
    if ys.shape[1] != max_len:
        fail(
            _(
                "greedy_decode(max_len={max_len}) returned {n} tokens, expected {max_len} (eos never "
                "wins)"
            ).format(max_len=max_len, n=ys.shape[1]),
            GREEDY_HINTS(GreedyMistake.ONE_STEP_MORE),
        )
    expect_greedy(ys, state, case, decoding, _("next token = argmax of the last position"))


@prop(C, points=1, examples=2, clauses=(Transformer.FINISHED,))
@given(case=cases(mask=False, max_layers=1, m_d=(1, 1)), max_len=st.integers(3, 6))
def greedy_decode_stops_once_every_row_finished(student, case, max_len):
    """When eos always wins, every row is [bos, eos] and decoding stops there: shape (batch, 2)."""
    bos, eos = 0, 3
    handle, state = build_model(student, case, state=eos_biased(case, eos, 1e3))
    ys = greedy_decode(student, handle, case, Decoding(max_len, bos, eos))[0]
    expected = torch.tensor([[bos, eos]] * case.src.shape[0])
    if ys.shape != expected.shape:
        fail(
            _(
                "greedy_decode returned {got}, expected {expected}: every row produced eos_id at "
                "the first step"
            ).format(got=ys.tolist(), expected=expected.tolist()),
            GREEDY_HINTS(GreedyMistake.NO_STOP)
            if ys.shape[1] > 2
            else GREEDY_HINTS(GreedyMistake.ONE_STEP_MORE),
        )
    expect(
        torch.equal(ys, expected),
        _("greedy_decode returned {got}, expected {expected}").format(
            got=ys.tolist(), expected=expected.tolist()
        ),
        _("the next token is the argmax of the generator's logits at the last position"),
    )


@prop(C, points=1, examples=1, clauses=(Transformer.FINISHED,))
@given(
    cb=st.tuples(
        cases(mask=False, max_layers=1, m_d=(1, 1), batch=(2, 3)), st.sampled_from([1.0, 2.0])
    )
)
@example(cb=rows_finishing_apart(108, 1.0))
@example(cb=rows_finishing_apart(148, 1.0))
@example(cb=rows_finishing_apart(162, 1.5))
def greedy_decode_pads_finished_rows_with_eos(student, cb):
    """Rows that finish at different steps: a finished row holds eos_id after its eos (it does not keep
    generating) and decoding stops once every row has finished."""
    case, bias = cb
    decoding = Decoding(max_len=6, bos_id=0, eos_id=3)
    handle, state = build_model(student, case, state=eos_biased(case, decoding.eos_id, bias))
    ys = greedy_decode(student, handle, case, decoding)[0]
    expect_finished_rows_hold_eos(ys, decoding)
    expect_greedy(ys, state, case, decoding, GREEDY_HINTS(GreedyMistake.NO_PAD))


@prop(C, points=1, examples=1, clauses=(Transformer.MODE,))
@given(case=cases(mask=False, max_layers=1, m_d=(1, 1)))
@example(case=fixed_case(6, num_layers=1))
def greedy_decode_runs_in_eval_and_restores_mode(student, case):
    """A model in train mode (dropout=0.5) decodes as expected without dropout and is in train mode afterwards."""
    state = eos_biased(case, 2, 0.5)
    handle = build_model(student, case, state=state, dropout=0.5, train=True)[0]
    decoding = Decoding(max_len=5, bos_id=1, eos_id=2)
    ys, reply = greedy_decode(student, handle, case, decoding)
    expect_run_in_eval_and_restored(student, handle, reply, "greedy_decode")
    why = greedy_fixed_point(ys, state, case, decoding)
    if why is not None:
        fail(
            _("greedy_decode of a model in train mode gave {got}: {why}").format(
                got=ys.tolist(), why=why
            ),
            _(
                "call model.eval() while decoding (dropout off), then restore the model's train/eval "
                "mode"
            ),
        )


@prop(C, points=1, examples=1, clauses=(Transformer.MODE,))
@given(case=cases(mask=False, max_layers=1, m_d=(1, 1)))
@example(case=fixed_case(7, num_layers=1))
def greedy_decode_leaves_eval_mode_as_it_was(student, case):
    """A model in eval mode is still in eval mode after greedy_decode (its mode restored, not set to train)."""
    handle = build_model(student, case, state=eos_biased(case, 2, 0.5), dropout=0.3, train=False)[0]
    greedy_decode(student, handle, case, Decoding(max_len=4, bos_id=1, eos_id=2))
    expect(
        not student.inspect(handle)["training"],
        _("greedy_decode left a model that was in eval mode in train mode"),
        _(
            "restore the model's train/eval mode as it was: note model.training before you switch to "
            "eval, and give that back at the end (model.train() alone always leaves train mode)"
        ),
    )


@prop(C, points=1, examples=1, clauses=(Transformer.GREEDY_SRC_MASK,))
@given(case=cases(mask=True, max_layers=1, m_e=(3, 5), m_d=(1, 1)))
@example(case=fixed_case(20, num_layers=1, lengths=[5, 2]))
@example(case=fixed_case(17, num_layers=1, lengths=[3, 5]))
def greedy_decode_uses_src_mask(student, case):
    """With a padding src_mask, greedy_decode's tokens are greedy's for the masked model: the mask serves encode
    and every decode step."""
    decoding = Decoding(max_len=6, bos_id=1, eos_id=2, src_mask=case.src_mask)
    handle, state = build_model(student, case, state=eos_biased(case, decoding.eos_id, 1.0))
    ys = greedy_decode(student, handle, case, decoding)[0]
    why = greedy_fixed_point(ys, state, case, decoding)
    if why is not None:
        fail(
            _("greedy_decode with src_mask gave {got}: {why}").format(got=ys.tolist(), why=why),
            explain_greedy(
                ys,
                state,
                case,
                decoding,
                _(
                    "pass src_mask to encode and to every decode: model.encode(src, src_mask), "
                    "model.decode(ys, memory, causal_mask(L), src_mask)"
                ),
            ),
        )


@prop(C, points=1, examples=1, kind=Kind.STATIC)
def transformer_is_written_by_hand(student):
    """transformer.py calls no library attention, norm or Transformer (static check)."""
    written_by_hand(
        student,
        C,
        _(
            "assemble the model from your Encoder, Decoder, TokenEmbedding and PositionalEncoding: "
            "no nn.Transformer, nn.LayerNorm or nn.MultiheadAttention"
        ),
    )
