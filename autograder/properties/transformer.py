"""Properties of transformer.Transformer and transformer.greedy_decode (visible to students).

Tiny models (d_model 4-8, 1-2 heads, 1-2 layers, d_ff 8, vocabularies of 5-7, max_len 16) in float64, with the
weights from strategies.transformer_state. Expected values: models.transformer.ExpectedTransformer, the same model
assembled from torch's own encoder and decoder layers. Mismatches are diagnosed by re-running it with one
mistake at a time (src_mask not reaching the cross-attention, no positional encoding on one side, ...); greedy
decoding is diagnosed against variants of the loop (no stop at eos, no eos after a finished row, an extra step...).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ..i18n import N_, _
from ..student_code import Call
from ..suite import graded
from ..suite.checks import (
    close,
    diagnose,
    equal,
    expect,
    fail,
    is_close,
    not_constant,
    tensor,
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
from ..suite.strategies import composite, seeds
from .models.transformer import ExpectedTransformer, ModelMistake, SizedCase

C = "transformer"
MAX_LEN = 16
BUILD_ERROR = N_(
    "Transformer(src_vocab_size, tgt_vocab_size, d_model, num_heads, num_layers, d_ff, dropout, "
    "max_len) must build and load weights by the docstring's names: src_embedding, tgt_embedding, "
    "positional_encoding, encoder, decoder, generator"
)
default_hint(C, BUILD_ERROR)


# ------------------------------------------------------------------------------------------------- cases
@dataclass(frozen=True)
class Case(SizedCase):
    """A tiny model (sizes + weight seed) and a batch: src (batch, m_E), tgt (batch, m_D), a padding src_mask.
    (Printed by the dataclass's own repr, on one line, as the reports have always shown it.)"""

    # Not fields (the repr stays as it was): every transformer case's, read by SizedCase.config and build_model.
    max_len = MAX_LEN
    dtype = torch.float64

    src_vocab: int
    tgt_vocab: int
    d_model: int
    num_heads: int
    num_layers: int
    seed: int
    src: torch.Tensor
    tgt: torch.Tensor
    src_mask: torch.Tensor | None
    d_ff: int = 8


def _tokens(draw, shape, lo, hi):
    return torch.from_numpy(draw(hnp.arrays(np.int64, shape, elements=st.integers(lo, hi))))


@composite
def cases(draw, mask="maybe", min_layers=1, max_layers=2, m_e=(2, 5), m_d=(1, 4), batch=(1, 2)):
    """Tokens are < 5 so that either vocabulary could embed them (a swapped embedding gives numbers, not an
    IndexError); with a mask, the source ends in pad tokens (id 0) that the mask blocks."""
    h = draw(st.integers(1, 2))
    d = draw(st.sampled_from([4, 6, 8] if h == 2 else [4, 5, 6]))
    n = draw(st.integers(min_layers, max_layers))
    src_vocab, tgt_vocab = draw(st.integers(5, 7)), draw(st.integers(5, 7))
    b, me, md = draw(st.integers(*batch)), draw(st.integers(*m_e)), draw(st.integers(*m_d))
    if me == md:
        me = me + 1 if me < m_e[1] else me - 1
    src, tgt = _tokens(draw, (b, me), 1, 4), _tokens(draw, (b, md), 0, 4)
    src_mask = None
    if mask is True or (mask == "maybe" and draw(st.booleans())):
        lengths = torch.tensor(draw(st.lists(st.integers(1, me), min_size=b, max_size=b)))
        keep = torch.arange(me)[None, :] < lengths[:, None]
        src = src.masked_fill(~keep, 0)
        src_mask = keep[:, None, None, :]
    return Case(
        src_vocab=src_vocab,
        tgt_vocab=tgt_vocab,
        d_model=d,
        num_heads=h,
        num_layers=n,
        seed=draw(seeds()),
        src=src,
        tgt=tgt,
        src_mask=src_mask,
    )


def fixed_case(
    seed, batch=2, m_e=5, m_d=3, d_model=8, num_heads=2, num_layers=2, vocab=(6, 7), lengths=None
):
    g = torch.Generator().manual_seed(seed)
    src, tgt = (
        torch.randint(1, 5, (batch, m_e), generator=g),
        torch.randint(0, 5, (batch, m_d), generator=g),
    )
    mask = None
    if lengths is not None:
        keep = torch.arange(m_e)[None, :] < torch.tensor(lengths)[:, None]
        src, mask = src.masked_fill(~keep, 0), keep[:, None, None, :]
    return Case(
        src_vocab=vocab[0],
        tgt_vocab=vocab[1],
        d_model=d_model,
        num_heads=num_heads,
        num_layers=num_layers,
        seed=seed,
        src=src,
        tgt=tgt,
        src_mask=mask,
    )


# ------------------------------------------------------------------------------------------------- plumbing
def forward(student, handle, case, target_mask=None, seed=0, strict=False):
    """The logits. strict: the shape property, which alone owns their dtype and earns its points on shapes."""
    kwargs = {
        k: v
        for k, v in (("src_mask", case.src_mask), ("target_mask", target_mask))
        if v is not None
    }
    out = student.run(Call(handle, "forward", (case.src, case.tgt), kwargs, seed=seed)).value
    shape = (case.tgt.shape[0], case.tgt.shape[1], case.tgt_vocab)
    if (
        isinstance(out, torch.Tensor)
        and case.d_model != case.tgt_vocab
        and tuple(out.shape) == (*shape[:2], case.d_model)
    ):
        fail(
            _("forward returned shape {shape}, expected logits {expected}").format(
                shape=tuple(out.shape), expected=shape
            ),
            _(
                "the generator is missing: logits = generator(decode(...)), "
                "(batch, m_D, tgt_vocab_size)"
            ),
        )
    if isinstance(out, torch.Tensor) and tuple(out.shape) == (
        shape[0],
        case.src.shape[1],
        shape[2],
    ):
        fail(
            _(
                "forward returned shape {shape}, expected {expected}: one row per source position"
            ).format(shape=tuple(out.shape), expected=shape),
            _(
                "the decoder runs on the target: decode(tgt, memory, ...) gives one row per target "
                "position"
            ),
        )
    return tensor(
        out,
        "Transformer.forward(src, tgt, src_mask, target_mask)",
        shape=shape,
        dtype=torch.float64,
        check_dtype=strict,
        shape_only=strict,
    )


CROSS_MASK = N_(
    "src_mask serves both the encoder and the cross-attention: "
    "generator(decode(tgt, encode(src, src_mask), target_mask, src_mask))"
)
ENCODER_MASK = N_("src_mask must reach the encoder too: memory = encode(src, src_mask)")
NO_PE_TGT = N_(
    "no positional encoding on the target: decode adds it, "
    "decoder(positional_encoding(tgt_embedding(tgt)), memory, ...)"
)


def explain_forward(got, state, case, target_mask, default=""):
    def same(mistake):
        return lambda: is_close(
            got,
            ExpectedTransformer(state, case.config, mistake).forward(
                case.src, case.tgt, case.src_mask, target_mask
            ),
        )

    candidates = [
        (same(ModelMistake.NO_PE_TGT), _(NO_PE_TGT)),
        (
            same(ModelMistake.NO_PE_SRC),
            _(
                "no positional encoding on the source: encode adds it, "
                "encoder(positional_encoding(src_embedding(src)), src_mask)"
            ),
        ),
        (
            same(ModelMistake.NO_PE_SRC | ModelMistake.NO_PE_TGT),
            _("no positional encoding: add it to both embeddings"),
        ),
        (
            same(ModelMistake.TGT_EMBEDDED_WITH_SRC),
            _("the target is embedded with src_embedding: decode uses tgt_embedding"),
        ),
        (
            same(ModelMistake.SRC_EMBEDDED_WITH_TGT),
            _("the source is embedded with tgt_embedding: encode uses src_embedding"),
        ),
        (
            same(ModelMistake.SRC_EMBEDDED_WITH_TGT | ModelMistake.TGT_EMBEDDED_WITH_SRC),
            _("the embeddings are swapped: src_embedding for src, tgt_embedding for tgt"),
        ),
        (
            same(ModelMistake.NO_EMBEDDING_SCALE),
            _(
                "the embeddings are not scaled by sqrt(d_model): call the "
                "TokenEmbedding modules (src_embedding(src)), not their "
                ".embedding"
            ),
        ),
        (
            same(ModelMistake.SOFTMAX_OUTPUT),
            _("forward returns probabilities: return the generator's logits, no softmax"),
        ),
    ]
    if case.src_mask is not None:
        candidates += [
            (same(ModelMistake.NO_CROSS_MASK), _(CROSS_MASK)),
            (same(ModelMistake.NO_ENCODER_MASK), _(ENCODER_MASK)),
            (
                same(ModelMistake.NO_CROSS_MASK | ModelMistake.NO_ENCODER_MASK),
                _("src_mask is ignored: it serves the encoder and the cross-attention"),
            ),
        ]
    if target_mask is not None:
        candidates.append(
            (same(ModelMistake.NO_TARGET_MASK), _("target_mask is not passed on to the decoder"))
        )
    return diagnose(default, *candidates)


# --------------------------------------------------------------------------------------------- greedy decoding
# The greedy loop by hand is an answer: it is the graded side's (autograder/diagnoses/greedy.py), None in the
# student bundle. The visible verdict needs no loop: greedy tokens are a fixed point of one teacher-forced pass.
mistake_models = graded.diagnosis("greedy")


NO_STOP = N_(
    "decoding goes on after every row has produced eos_id: stop once every row has produced eos_id"
)
NO_PAD = N_(
    "a finished row must keep eos_id: once a row has produced eos_id it holds eos_id after it"
)
MAX_LEN_HINT = N_(
    "max_len counts the bos token: stop when ys has max_len tokens (while ys.size(1) < max_len)"
)


def greedy_decode(student, handle, case, decoding: Decoding):
    reply = student.run(Call(C, "greedy_decode", (handle, case.src), decoding.kwargs()))
    what = decoding.call("greedy_decode")
    ys = tensor(reply.value, what)
    expect(
        ys.dtype == torch.long,
        _("{call} returned dtype {dtype}, expected torch.int64").format(call=what, dtype=ys.dtype),
        _(
            "return token ids as a LongTensor: argmax gives int64, and so does "
            "torch.full(..., dtype=torch.long)"
        ),
    )
    b = case.src.shape[0]
    expect(
        ys.dim() == 2 and ys.shape[0] == b,
        _("{call} returned shape {shape}, expected ({batch}, L)").format(
            call=what, shape=tuple(ys.shape), batch=b
        ),
        _("one row per source sentence: (batch, L)"),
    )
    expect(
        ys.shape[1] <= decoding.max_len,
        _("{call} returned {n} tokens, more than max_len={max_len}").format(
            call=what, n=ys.shape[1], max_len=decoding.max_len
        ),
        _(MAX_LEN_HINT),
    )
    expect(
        ys.shape[1] >= 1 and bool((ys[:, 0] == decoding.bos_id).all()),
        _("{call}: column 0 is {column}, expected bos_id={bos_id}").format(
            call=what, column=ys[:, 0].tolist(), bos_id=decoding.bos_id
        ),
        _("start every row with bos_id: ys = torch.full((batch, 1), bos_id)"),
    )
    return ys, reply


def explain_greedy(got, state, case, decoding: Decoding, default=""):
    """The hint naming the loop mistake whose tokens are `got` (`default` without the diagnoses)."""
    if mistake_models is None:
        return default
    GreedyMistake = mistake_models.GreedyMistake

    def same(mistake):
        def test():
            expected = mistake_models.expected_greedy_decode(state, case, decoding, mistake)
            return expected.shape == got.shape and torch.equal(expected, got)

        return test

    return diagnose(
        default,
        (same(GreedyMistake.NO_STOP), _(NO_STOP)),
        (same(GreedyMistake.NO_PAD), _(NO_PAD)),
        (same(GreedyMistake.NO_STOP | GreedyMistake.NO_PAD), _(NO_PAD)),
        (same(GreedyMistake.ONE_STEP_MORE), _(MAX_LEN_HINT)),
        (same(GreedyMistake.ONE_STEP_LESS), _(MAX_LEN_HINT)),
        (
            same(GreedyMistake.FIRST_POSITION),
            _(
                "the next token comes from the last position: "
                "generator(decode(ys, ...)[:, -1]), not [:, 0]"
            ),
        ),
        (
            same(GreedyMistake.NO_SRC_MASK_IN_DECODE),
            _("src_mask must reach decode too: model.decode(ys, memory, causal_mask(L), src_mask)"),
        ),
        (
            same(GreedyMistake.NO_CAUSAL_MASK),
            _("decode with a causal target mask: causal_mask(ys.size(1))"),
        ),
    )


def eos_biased(case, eos_id, bias):
    return case.config.state(eos_id=eos_id, eos_bias=bias)


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
    out2 = forward(student, handle, changed, tm)
    not_constant(
        out,
        ExpectedTransformer(state, case.config).forward(case.src, case.tgt, case.src_mask, tm),
        _("logits"),
    )
    close(
        out2,
        out,
        _("logits after changing the padded (blocked) source tokens"),
        lambda: explain_forward(out, state, case, tm, _(CROSS_MASK)),
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
            _(MAX_LEN_HINT),
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
            _(NO_STOP) if ys.shape[1] > 2 else _(MAX_LEN_HINT),
        )
    expect(
        torch.equal(ys, expected),
        _("greedy_decode returned {got}, expected {expected}").format(
            got=ys.tolist(), expected=expected.tolist()
        ),
        _("the next token is the argmax of the generator's logits at the last position"),
    )


def expect_greedy(ys, state, case, decoding: Decoding, default_hint):
    """Fail unless greedy_decode's tokens `ys` are the expected model's. The hint names the mistake that
    explains them (explain_greedy, on the graded side), else `default_hint`."""
    why = greedy_fixed_point(ys, state, case, decoding)
    if why is not None:
        fail(
            _("greedy_decode gave {got}: {why}").format(got=ys.tolist(), why=why),
            explain_greedy(ys, state, case, decoding, default_hint),
        )


def expect_finished_rows_hold_eos(ys, decoding: Decoding):
    """A row that has produced eos_id holds eos_id after it, decoding stops early only once every row has
    finished, and not later (the contract's clauses on finished rows, read off the tokens alone)."""
    eos, max_len = decoding.eos_id, decoding.max_len
    for row in ys.tolist():
        if eos in row[1:]:
            first = row.index(eos, 1)
            if any(tok != eos for tok in row[first:]):
                fail(
                    _(
                        "greedy_decode gave the row {row}: tokens other than eos_id={eos} after it"
                    ).format(row=row, eos=eos),
                    _(NO_PAD),
                )
    finished = (
        (ys[:, 1:] == eos).any(1) if ys.shape[1] > 1 else torch.zeros(ys.shape[0], dtype=torch.bool)
    )
    if ys.shape[1] < max_len:
        expect(
            finished.all(),
            _(
                "greedy_decode stopped at {n} < max_len={max_len} tokens with an unfinished row: "
                "{got}"
            ).format(n=ys.shape[1], max_len=max_len, got=ys.tolist()),
            _("stop early only once every row has produced eos_id"),
        )
    if ys.shape[1] > 2 and bool((ys[:, 1:-1] == eos).any(1).all()):
        fail(
            _("greedy_decode went on after every row had produced eos_id: {got}").format(
                got=ys.tolist()
            ),
            _(NO_STOP),
        )


def rows_finishing_apart(seed, bias):
    """A case whose rows finish at different steps, and where a finished row left to decode would not pick
    eos_id again (found by search with bos_id=0, eos_id=3, max_len=6)."""
    case = fixed_case(seed, batch=2, m_e=3, d_model=6, num_heads=2, num_layers=1, vocab=(5, 7))
    return case, bias


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
    expect_greedy(ys, state, case, decoding, _(NO_PAD))


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
