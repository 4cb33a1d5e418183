"""What beam_search's visible and hidden properties and the graded side's search share: the cases (a decoding
case searched with some settings), the student's search run once and checked for shapes, its hypotheses read up to
their first eos, and the answer-free relations between runs on related batches (rows rolled, a row alone, other
tokens at the padded positions) that name a mismatch without a search. The properties and their hints live in
properties/beam_search.py; the three hints below belong to the checks made here.
"""

from __future__ import annotations

import dataclasses

import torch
from hypothesis import strategies as st

from ..i18n import N_, _
from ..properties.models.transformer import ExpectedTransformer
from ..student_code import Call
from .checks import EXPECTED_DTYPE, expect, fail, tensor
from .decoding import SRC_VOCAB, Decoding, DecodingCase, build_model, decoding_cases
from .strategies import LabelledCase, composite

C = "beam_search"
FINISHED_HINT = N_(
    "a finished hypothesis (its last token is eos_id) is kept and not extended: its only "
    "continuation is eos_id at no cost (log-probability 0 at eos_id, -inf elsewhere)"
)
PAD_HINT = N_(
    "after its eos a row is padded with eos_id only: a finished hypothesis is held with eos_id at no cost"
)
CONTRACT_HINT = N_(
    "return (sequences, scores): sequences int64 (batch, L), L <= max_len, bos_id first and eos_id after "
    "each eos; scores (batch,) in the model's dtype"
)


@dataclasses.dataclass(frozen=True, repr=False)
class BeamSettings(LabelledCase):
    """beam_search(model, src, max_len, bos_id, eos_id, beam_size, length_penalty); eos_bias is added to the
    generator's bias at eos_id (> 0: hypotheses finish early)."""

    max_len: int
    bos_id: int
    eos_id: int
    beam_size: int
    length_penalty: float
    eos_bias: float = 0.0

    def greedy(self, src_mask=None) -> Decoding:
        """Greedy decoding with the same max_len, bos_id and eos_id (what beam_size=1 must equal)."""
        return Decoding(self.max_len, self.bos_id, self.eos_id, src_mask)


@dataclasses.dataclass(frozen=True, repr=False)
class BeamInputs(LabelledCase):
    """A model and source batch (case) searched with these settings."""

    case: DecodingCase
    settings: BeamSettings

    def state(self) -> dict:
        """The case's weights (its config's), with the settings' eos_bias added at eos_id."""
        return self.case.config.state(self.settings.eos_id, self.settings.eos_bias)


@composite
def beam_settings(
    draw, vocab, beam=(2, 4), max_len=(2, 6), penalties=(0.0, 0.6, 1.2), biases=(0.0, 1.0, 2.0)
):
    bos, eos = draw(st.lists(st.integers(0, vocab - 1), min_size=2, max_size=2, unique=True))
    return BeamSettings(
        draw(st.integers(*max_len)),
        bos,
        eos,
        draw(st.integers(*beam)),
        draw(st.sampled_from(penalties)),
        draw(st.sampled_from(biases)),
    )


@composite
def beam_cases(draw, beam=(2, 4), max_len=(2, 6), penalties=(0.0, 0.6, 1.2), **case_options):
    case = draw(decoding_cases(**case_options))
    return BeamInputs(case, draw(beam_settings(case.tgt_vocab, beam, max_len, penalties)))


# long: the contract's checks of a search's reply, one after another, each with its own message
def beam_search(student, model, inputs: BeamInputs, src=None, src_mask=None, strict=False):
    """The student's (sequences, scores, reply), checked for shapes.

    strict: the contract property, which alone checks the tuple's order and the dtypes (one slip, one deduction).
    Elsewhere (scores, sequences) is put back in order and integer sequences of another dtype are read as int64;
    the scores of another float dtype are compared by value."""
    case, s = inputs.case, inputs.settings
    src = case.src if src is None else src
    src_mask = case.src_mask if src is case.src else src_mask
    kwargs = dict(
        max_len=s.max_len,
        bos_id=s.bos_id,
        eos_id=s.eos_id,
        beam_size=s.beam_size,
        length_penalty=s.length_penalty,
    )
    if src_mask is not None:
        kwargs["src_mask"] = src_mask
    reply = student.run(Call(C, "beam_search", (model, src), kwargs))
    what = (
        f"beam_search(model, src, max_len={s.max_len}, bos_id={s.bos_id}, eos_id={s.eos_id}, "
        f"beam_size={s.beam_size}, length_penalty={s.length_penalty})"
    )
    value = reply.value
    pair = isinstance(value, (tuple, list)) and len(value) == 2
    expect(
        pair and (isinstance(value, tuple) or not strict),
        _("{what} returned {type}, expected a tuple (sequences, scores)").format(
            what=what, type=type(value).__name__
        ),
        _(CONTRACT_HINT),
    )
    swapped = all(isinstance(v, torch.Tensor) for v in value) and (
        value[0].is_floating_point() and not value[1].is_floating_point()
    )
    expect(
        not (strict and swapped),
        _(
            "{what} returned (scores, sequences): a float tensor first, an integer one second"
        ).format(what=what),
        _(CONTRACT_HINT),
    )
    raw_seqs, raw_scores = value[::-1] if swapped else value
    b = src.shape[0]
    seqs = tensor(raw_seqs, _("{what}[0] (sequences)").format(what=what))
    integer = not seqs.is_floating_point() and not seqs.is_complex() and seqs.dtype != torch.bool
    expect(
        (seqs.dtype == torch.long or (integer and not strict))
        and seqs.dim() == 2
        and seqs.shape[0] == b
        and 1 <= seqs.shape[1] <= s.max_len,
        _(
            "{what}: sequences are {dtype} of shape {shape}, expected int64 ({b}, L), "
            "1 <= L <= max_len={max_len}"
        ).format(what=what, dtype=seqs.dtype, shape=tuple(seqs.shape), b=b, max_len=s.max_len),
        _(CONTRACT_HINT)
        if strict
        else _("one row per source sentence, bos first, at most max_len tokens"),
    )
    seqs = seqs.long()
    expect(
        bool((seqs[:, 0] == s.bos_id).all()),
        _("{what}: column 0 is {column}, expected bos_id").format(
            what=what, column=seqs[:, 0].tolist()
        ),
        _("every hypothesis starts with bos_id"),
    )
    if strict and isinstance(raw_scores, torch.Tensor):
        expect(
            raw_scores.dtype == case.dtype,
            _(EXPECTED_DTYPE).format(
                what=_("{what}[1] (scores)").format(what=what),
                expected=case.dtype,
                got=raw_scores.dtype,
            ),
            _(CONTRACT_HINT),
        )
    # NaN or inf scores are judged by check_scores, which knows the likely cause here (not a masked softmax).
    scores = tensor(
        raw_scores,
        _("{what}[1] (scores)").format(what=what),
        shape=(b,),
        dtype=case.dtype,
        shape_only=True,
    )
    return seqs, scores, reply


def hypotheses(seqs: torch.Tensor, eos: int, where: str) -> list[tuple[int, ...]]:
    """Each row's hypothesis: its tokens up to its first eos after bos; padding after it must be eos only."""
    out = []
    for row in seqs.tolist():
        end = row.index(eos, 1) + 1 if eos in row[1:] else len(row)
        after = row[end:]
        if any(tok != eos for tok in after):
            # A held hypothesis repeats one token after its eos; one that was extended varies.
            fail(
                _("{where}: the row {row} has tokens other than eos_id={eos} after its eos").format(
                    where=where, row=row, eos=eos
                ),
                _(FINISHED_HINT) if len(set(after)) > 1 else _(PAD_HINT),
            )
        out.append(tuple(row[:end]))
    return out


@dataclasses.dataclass(frozen=True)
class Searched:
    """The student's beam_search run once on a case, beside the expected model built from the same weights."""

    inputs: BeamInputs
    hypotheses: list
    scores: object
    expected_model: object
    steps: int = 0  # the steps the search ran: the returned sequences' length - 1
    # the student's model (a handle), for the relations that diagnose a mismatch
    model: object = None

    @property
    def case(self) -> DecodingCase:
        return self.inputs.case

    @property
    def settings(self) -> BeamSettings:
        return self.inputs.settings


def search(student, inputs: BeamInputs, where="beam_search") -> Searched:
    """The student's search of `inputs` on its own Transformer built with the case's weights (where: the reply's
    name in a message)."""
    state = inputs.state()
    model = build_model(student, inputs.case, state)[0]
    seqs, scores, _reply = beam_search(student, model, inputs)
    got = hypotheses(seqs, inputs.settings.eos_id, where)
    expected = ExpectedTransformer(state, inputs.case.config)
    return Searched(inputs, got, scores, expected, seqs.shape[1] - 1, model)


def searched_batch(student, searched: Searched, src, src_mask=None) -> list[tuple[int, ...]]:
    """The student's hypotheses for the batch `src` (same model and settings as `searched`)."""
    s = searched.settings
    seqs = beam_search(student, searched.model, searched.inputs, src, src_mask)[0]
    return hypotheses(seqs, s.eos_id, "beam_search")


def rows_interfere(student, searched: Searched) -> bool:
    """Answer-free evidence: on the batch cut to its shortest row (no padding, no mask), rolling the rows does not
    roll the hypotheses. Each row is searched on its own; a rule over the whole batch, such as a stopping rule,
    gives the same rolled, so it is not mistaken for mixed rows."""
    case = searched.case
    b = case.src.shape[0]
    if b < 2:
        return False
    shortest = case.src.shape[1] if case.src_mask is None else int(case.src_mask.sum(-1).min())
    src = case.src[:, :shortest]
    order = torch.roll(torch.arange(b), 1)
    together = searched_batch(student, searched, src)
    rolled = searched_batch(student, searched, src[order])
    return rolled != [together[i] for i in order.tolist()]


def alone_differs(student, searched: Searched) -> bool:
    """Answer-free evidence: some row searched alone (a batch of one, its own src_mask) gets another hypothesis
    than in the batch. A stopping rule over the whole batch breaks this too: only after the enumeration has ruled
    that out (a stopped search's result) does it name mixed rows. It catches what rolling cannot: beams that
    read every row's memory alike (memory.repeat with beam_size a multiple of the batch)."""
    case = searched.case
    if case.src.shape[0] < 2:
        return False
    for r in range(case.src.shape[0]):
        mask = None if case.src_mask is None else case.src_mask[r : r + 1]
        if (
            searched_batch(student, searched, case.src[r : r + 1], mask)[0]
            != searched.hypotheses[r]
        ):
            return True
    return False


def padding_matters(student, searched: Searched) -> bool:
    """Answer-free evidence: other tokens at the padded positions of the source (the same src_mask) change the
    hypotheses. The mask must hide the padding from encode and every decode, one copy per beam."""
    case = searched.case
    if case.src_mask is None:
        return False
    pad = ~case.src_mask.reshape(case.src.shape)
    if not bool(pad.any()):
        return False
    others = torch.arange(case.src.numel()).reshape(case.src.shape) % (SRC_VOCAB - 1) + 1
    src = torch.where(pad, others, case.src)
    return searched_batch(student, searched, src, case.src_mask) != searched.hypotheses
