"""What transformer's visible and hidden properties (and kv_cache's) share: the cases they draw (a Transformer's
sizes, the seed of its weights, a batch with its masks), the student's Transformer run forward and greedy_decode
called, each with the diagnosis that names the mistake whose checking-side output matches the submission's, and
the checks of greedy decoding's tokens and of its finished rows. The properties live in properties/transformer.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ..i18n import _
from ..properties.models import greedy as greedy_models
from ..properties.models.greedy import GREEDY_HINTS, GreedyMistake
from ..properties.models.transformer import (
    MODEL_HINTS,
    ExpectedTransformer,
    ModelMistake,
    SizedCase,
)
from ..student_code import Call
from .checks import (
    diagnose,
    expect,
    fail,
    is_close,
    tensor,
)
from .decoding import (
    Decoding,
    greedy_fixed_point,
)
from .strategies import composite, seeds

C = "transformer"
MAX_LEN = 16


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


def explain_forward(got, state, case, target_mask, default=""):
    def same(mistake):
        return lambda: is_close(
            got,
            ExpectedTransformer(state, case.config, mistake).forward(
                case.src, case.tgt, case.src_mask, target_mask
            ),
        )

    # every model mistake, in the order declared (MODEL_HINTS), a mask's only where the case has that mask
    without = ModelMistake.NONE
    if case.src_mask is None:
        without |= ModelMistake.NO_CROSS_MASK | ModelMistake.NO_ENCODER_MASK
    if target_mask is None:
        without |= ModelMistake.NO_TARGET_MASK
    return diagnose(default, *MODEL_HINTS.candidates(lambda m: same(m)(), without=without))


# --------------------------------------------------------------------------------------------- greedy decoding
# The greedy loop by hand is an answer: it is the graded side's (models/greedy.py's graded-only region), None in the
# student bundle. The visible verdict needs no loop: greedy tokens are a fixed point of one teacher-forced pass.
mistake_models = greedy_models.BY_HAND


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
        GREEDY_HINTS(GreedyMistake.ONE_STEP_MORE),
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

    def same(mistake):
        def test():
            expected = mistake_models.expected_greedy_decode(state, case, decoding, mistake)
            return expected.shape == got.shape and torch.equal(expected, got)

        return test

    return diagnose(
        default,
        *GREEDY_HINTS.candidates(lambda m: same(m)()),  # every loop mistake, in the order declared
    )


def eos_biased(case, eos_id, bias):
    return case.config.state(eos_id=eos_id, eos_bias=bias)


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
                    GREEDY_HINTS(GreedyMistake.NO_PAD),
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
            GREEDY_HINTS(GreedyMistake.NO_STOP),
        )


def rows_finishing_apart(seed, bias):
    """A case whose rows finish at different steps, and where a finished row left to decode would not pick
    eos_id again (found by search with bos_id=0, eos_id=3, max_len=6)."""
    case = fixed_case(seed, batch=2, m_e=3, d_model=6, num_heads=2, num_layers=1, vocab=(5, 7))
    return case, bias
