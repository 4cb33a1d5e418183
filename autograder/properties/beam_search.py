"""Properties of beam_search.beam_search (visible to students).

A tiny model (decoding.DecodingCase) is decoded by the student's beam search and, on the checking side, by the
expected model (the torch-assembled model) in two ways: the beam search of the docstring, written again here with
switches for the usual mistakes (which diagnose a mismatch), and, on a tiny vocabulary and length, exhaustive
enumeration of every hypothesis (which needs no beam at all). A returned hypothesis is compared as the tokens up to
its first eos; its score is recomputed from the expected model's log-probabilities of those tokens.
"""

from __future__ import annotations

import dataclasses

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from ..i18n import N_, _
from ..oracles.greedy import (
    expected_greedy_decode,  # graded side only: not in the bundle (docs/bundle.md)
)
from ..student_code import Call
from .checks import close, diagnose, expect, fail, is_close, tensor, written_by_hand
from .core import prop
from .decoding import DecodingCase, build_model, decoding_cases, fixed_case
from .expected_values import expected_causal_mask
from .strategies import LabelledCase

C = "beam_search"
ERROR_HINT = N_(
    "beam_search(model, src, max_len, bos_id, eos_id, beam_size, length_penalty=0.0, src_mask=None) "
    "returns (sequences (batch, L), scores (batch,)); see the docstring"
)
ADD_HINT = N_(
    "scores are sums of log-probabilities: add the log-probabilities, candidates = logp[..., None] + "
    "log_softmax(logits) (never multiply probabilities or scores)"
)
FINISHED_HINT = N_(
    "a finished hypothesis (its last token is eos_id) is kept and not extended: its only "
    "continuation is eos_id at no cost (log-probability 0 at eos_id, -inf elsewhere)"
)
TOPK_HINT = N_(
    "the top-k runs over each row's beam_size * vocab candidates flattened beam-major: "
    "candidates.view(batch, beam_size * vocab).topk(beam_size), beam = index // vocab, token = index % vocab"
)
ROWS_HINT = N_(
    "beams of different rows of the batch are mixed: hypothesis k of row b is row b * beam_size + k of ys "
    "(and of the repeated memory, memory.repeat_interleave(beam_size, dim=0))"
)
PENALTY_HINT = N_(
    "the length penalty is applied twice: keep logp (the plain sum of log-probabilities) for each "
    "hypothesis and divide by T ** length_penalty only to rank and to report, never into the running sum"
)
DEFAULT_HINT = N_(
    "every step: log_softmax of the last position, a finished hypothesis held (eos at no cost), "
    "candidates = logp + log_probs, ranked by logp / T ** length_penalty, top-k over (beam, vocab) per "
    "row; "
    "stop once every hypothesis has finished or at max_len tokens; return each row's best"
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


@dataclasses.dataclass(frozen=True, repr=False)
class BeamInputs(LabelledCase):
    """A model and source batch (case) searched with these settings."""

    case: DecodingCase
    settings: BeamSettings


@st.composite
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


@st.composite
def beam_cases(draw, beam=(2, 4), max_len=(2, 6), penalties=(0.0, 0.6, 1.2), **case_options):
    case = draw(decoding_cases(**case_options))
    return BeamInputs(case, draw(beam_settings(case.tgt_vocab, beam, max_len, penalties)))


# ------------------------------------------------------------------------------------------------- plumbing
def beam_call(student, model, case: DecodingCase, s: BeamSettings, src=None, src_mask=None):
    """The student's (sequences, scores, reply), checked for types and shapes."""
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
    expect(
        isinstance(value, tuple) and len(value) == 2,
        _("{what} returned {type}, expected a tuple (sequences, scores)").format(
            what=what, type=type(value).__name__
        ),
        _("return (sequences, scores): each row's best hypothesis and its score"),
    )
    b = src.shape[0]
    seqs = tensor(value[0], _("{what}[0] (sequences)").format(what=what))
    expect(
        seqs.dtype == torch.long
        and seqs.dim() == 2
        and seqs.shape[0] == b
        and 1 <= seqs.shape[1] <= s.max_len,
        _(
            "{what}: sequences are {dtype} of shape {shape}, expected int64 ({b}, L), "
            "1 <= L <= max_len={max_len}"
        ).format(what=what, dtype=seqs.dtype, shape=tuple(seqs.shape), b=b, max_len=s.max_len),
        _("one row per source sentence, bos first, at most max_len tokens"),
    )
    expect(
        bool((seqs[:, 0] == s.bos_id).all()),
        _("{what}: column 0 is {column}, expected bos_id").format(
            what=what, column=seqs[:, 0].tolist()
        ),
        _("every hypothesis starts with bos_id"),
    )
    # NaN or inf scores are judged by check_scores, which knows the likely cause here (not a masked softmax).
    scores = tensor(
        value[1],
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
        if any(tok != eos for tok in row[end:]):
            fail(
                _("{where}: the row {row} has tokens other than eos_id={eos} after its eos").format(
                    where=where, row=row, eos=eos
                ),
                _(FINISHED_HINT),
            )
        out.append(tuple(row[:end]))
    return out


def score_of(
    w, case: DecodingCase, hyp: tuple[int, ...], row: int, alpha: float, decode_mask=True
) -> float:
    """logp(hyp) / T ** alpha from the expected model, for the source row `row` (T = tokens after bos).

    decode_mask=False: with src_mask given to the encoder only (a mistake)."""
    if len(hyp) == 1:
        return 0.0
    src = case.src[row : row + 1]
    mask = None if case.src_mask is None else case.src_mask[row : row + 1]
    ys = torch.tensor([hyp])
    memory = w.encode(src, mask)
    lp = w.log_probs(src, ys[:, :-1], mask if decode_mask else None, memory)[0]  # (T, vocab)
    logp = float(lp.gather(1, ys[0, 1:, None]).sum())
    return logp / (len(hyp) - 1) ** alpha


@dataclasses.dataclass(frozen=True)
class Searched:
    """The student's beam_search run once on a case, beside the expected model built from the same weights."""

    case: DecodingCase
    settings: BeamSettings
    hypotheses: list
    scores: object
    expected_model: object


def search(student, case: DecodingCase, s: BeamSettings) -> Searched:
    state = case.state(s.eos_id, s.eos_bias)
    model = build_model(student, case, state)[0]
    seqs, scores, _reply = beam_call(student, model, case, s)
    got = hypotheses(seqs, s.eos_id, "beam_search")
    return Searched(case, s, got, scores, case.expected_model(state))


def expected_beam_search(
    w,
    case: DecodingCase,
    s: BeamSettings,
    src=None,
    src_mask=None,
    *,
    multiply=False,
    hold=True,
    token_major=False,
    mixed_rows=False,
    store_ranked=False,
    decode_mask=True,
    tiled=False,
):
    """The docstring's beam search on the expected model, optionally with one mistake: (hypotheses, scores)."""
    src = case.src if src is None else src
    src_mask = case.src_mask if src is case.src else src_mask
    b, k = src.shape[0], s.beam_size
    memory = w.encode(src, src_mask)
    memory = memory.repeat(k, 1, 1) if tiled else memory.repeat_interleave(k, dim=0)
    mask = None if src_mask is None or not decode_mask else src_mask.repeat_interleave(k, dim=0)
    ys = torch.full((b * k, 1), s.bos_id, dtype=torch.long)
    logp = torch.full((b, k), float("-inf"), dtype=torch.float64)
    logp[:, 0] = 0.0
    lengths = torch.zeros(b, k, dtype=torch.long)
    done = torch.zeros(b, k, dtype=torch.bool)
    while ys.shape[1] < s.max_len and not bool(done.all()):
        logits = w.generator(
            w.decode(ys, memory, expected_causal_mask(ys.shape[1]), mask)[:, -1]
        ).to(torch.float64)
        lp = torch.log_softmax(logits, -1)
        v = lp.shape[-1]
        lp = lp.view(b, k, v)
        if hold:
            held = torch.full_like(lp, float("-inf"))
            held[..., s.eos_id] = 0.0
            lp = torch.where(done[..., None], held, lp)
        cand = logp[..., None] * lp if multiply else logp[..., None] + lp
        new_len = (lengths + (~done).long())[..., None]
        ranked = cand / new_len.to(torch.float64) ** s.length_penalty
        flat = ranked.transpose(1, 2).reshape(b, k * v) if token_major else ranked.reshape(b, k * v)
        index = flat.topk(k, dim=-1).indices
        beam, token = index // v, index % v
        logp = (ranked if store_ranked else cand).reshape(b, -1).gather(1, index)
        lengths = new_len.squeeze(-1).gather(1, beam)
        done = done.gather(1, beam) | (token == s.eos_id)
        rows = beam if mixed_rows else torch.arange(b)[:, None] * k + beam
        ys = torch.cat([ys[rows.reshape(-1)], token.reshape(-1, 1)], dim=1)
    scores = logp / lengths.clamp(min=1).to(torch.float64) ** s.length_penalty
    best = scores.argmax(-1)
    seqs = ys.view(b, k, -1)[torch.arange(b), best]
    return hypotheses(seqs, s.eos_id, _("the reference")), scores[torch.arange(b), best]


def best_by_enumeration(w, case: DecodingCase, s: BeamSettings, row: int):
    """Every hypothesis of source row `row` scored; the best (hypothesis, score). No beam: exhaustive."""
    src = case.src[row : row + 1]
    mask = None if case.src_mask is None else case.src_mask[row : row + 1]
    memory = w.encode(src, mask)
    if s.max_len == 1:
        return (s.bos_id,), 0.0
    best, best_score = (s.bos_id,), float("-inf")
    frontier = [((s.bos_id,), 0.0)]
    while frontier:
        ys = torch.tensor([h for h, _ in frontier])
        m = None if mask is None else mask.expand(len(frontier), -1, -1, -1)
        lp = w.log_probs(src, ys, m, memory.expand(len(frontier), -1, -1))[:, -1]  # (n, vocab)
        grown = []
        for (hyp, logp), row_lp in zip(frontier, lp.tolist()):
            for token, token_lp in enumerate(row_lp):
                new, total = hyp + (token,), logp + token_lp
                if token == s.eos_id or len(new) == s.max_len:
                    score = total / (len(new) - 1) ** s.length_penalty
                    if score > best_score:
                        best, best_score = new, score
                else:
                    grown.append((new, total))
        frontier = grown
    return best, best_score


MASK_HINT = N_(
    "src_mask must reach every decode too, one copy per beam: "
    "model.decode(ys, memory, causal_mask(L), src_mask.repeat_interleave(beam_size, dim=0))"
)


def explain_beam(got, w, case, s):
    def same(**mistake):
        return lambda: expected_beam_search(w, case, s, **mistake)[0] == got

    return diagnose(
        _(DEFAULT_HINT),
        (lambda: s.length_penalty and same(store_ranked=True)(), _(PENALTY_HINT)),
        (same(hold=False), _(FINISHED_HINT)),
        (same(token_major=True), _(TOPK_HINT)),
        (same(mixed_rows=True), _(ROWS_HINT)),
        (same(multiply=True), _(ADD_HINT)),
        (same(tiled=True), _(ROWS_HINT)),
        (lambda: case.src_mask is not None and same(decode_mask=False)(), _(MASK_HINT)),
    )


def check_scores(got_scores, hyps, w, case, s, what):
    """The returned scores equal logp / T ** length_penalty of the returned hypotheses."""

    def scores(**options):
        return torch.tensor(
            [score_of(w, case, h, i, **options) for i, h in enumerate(hyps)], dtype=torch.float64
        )

    want = scores(alpha=s.length_penalty)
    if is_close(got_scores, want, case.dtype):
        return

    def same_as(**mistake):
        def test():
            ref_hyps, ref_scores = expected_beam_search(w, case, s, **mistake)
            return ref_hyps == hyps and is_close(got_scores, ref_scores, case.dtype)

        return test

    def explain():
        return diagnose(
            _(ADD_HINT),
            (
                lambda: (
                    s.length_penalty
                    and is_close(got_scores, scores(alpha=2 * s.length_penalty), case.dtype)
                ),
                _(PENALTY_HINT),
            ),
            (lambda: s.length_penalty and same_as(store_ranked=True)(), _(PENALTY_HINT)),
            (same_as(tiled=True), _(ROWS_HINT)),
            (same_as(mixed_rows=True), _(ROWS_HINT)),
            (
                lambda: (
                    case.src_mask is not None
                    and is_close(
                        got_scores, scores(alpha=s.length_penalty, decode_mask=False), case.dtype
                    )
                ),
                _(MASK_HINT),
            ),
        )

    what = _("{what}: the scores of the returned hypotheses {hypotheses}").format(
        what=what, hypotheses=[list(h) for h in hyps]
    )
    if not bool(torch.isfinite(got_scores).all()):
        fail(
            _("{what} are {got}, expected {expected}").format(
                what=what, got=got_scores.tolist(), expected=want.tolist()
            ),
            lambda: diagnose(explain(), (same_as(token_major=True), _(TOPK_HINT))),
        )
    close(got_scores, want, what, explain, dtype=case.dtype)


# ------------------------------------------------------------------------------------------------- properties
@prop(C, points=1, examples=2, error_hint=ERROR_HINT)
@given(case=decoding_cases(), settings=beam_settings(5, beam=(1, 1), max_len=(1, 6)))
@example(
    case=fixed_case(5, b=3, me=5, lengths=[2, 5, 3]),
    settings=BeamSettings(max_len=7, bos_id=0, eos_id=3, beam_size=1, length_penalty=0.6),
)
def beam_search_size_one_is_greedy(student, case, settings):
    """With beam_size=1 beam search returns greedy decoding's sequences (any length penalty)."""
    state = case.state(settings.eos_id, settings.eos_bias)
    model = build_model(student, case, state)[0]
    seqs = beam_call(student, model, case, settings)[0]
    got = hypotheses(seqs, settings.eos_id, _("beam_search with beam_size=1"))
    greedy = expected_greedy_decode(
        state, case, settings.max_len, settings.bos_id, settings.eos_id, case.src_mask
    )
    want = hypotheses(greedy, settings.eos_id, _("greedy decoding"))
    if got != want:
        fail(
            _("beam_search with beam_size=1 gave {got}, greedy decoding {want}").format(
                got=[list(h) for h in got], want=[list(h) for h in want]
            ),
            lambda: explain_beam(got, case.expected_model(state), case, settings),
        )


@prop(C, points=3, examples=4, error_hint=ERROR_HINT)
@given(inputs=beam_cases())
@example(
    inputs=BeamInputs(
        fixed_case(3, b=2, me=4, vocab=5),
        BeamSettings(max_len=5, bos_id=0, eos_id=1, beam_size=2, length_penalty=0.6, eos_bias=1.0),
    )
)
@example(
    inputs=BeamInputs(
        fixed_case(5, b=3, me=5, lengths=[2, 5, 3]),
        BeamSettings(max_len=6, bos_id=0, eos_id=3, beam_size=2, length_penalty=0.6),
    )
)
@example(
    inputs=BeamInputs(
        fixed_case(9, b=3, me=4, vocab=6, lengths=[4, 2, 3]),
        BeamSettings(max_len=6, bos_id=1, eos_id=2, beam_size=3, length_penalty=1.2, eos_bias=1.0),
    )
)
def beam_search_equals_expected(student, inputs):
    """beam_search returns the docstring's beam search on the expected model: the same hypotheses and scores."""
    case, s = inputs.case, inputs.settings
    searched = search(student, case, s)
    got, scores, w = searched.hypotheses, searched.scores, searched.expected_model
    want, want_scores = expected_beam_search(w, case, s)
    if got != want:
        fail(
            _("beam_search gave {got}, expected {want}").format(
                got=[list(h) for h in got], want=[list(h) for h in want]
            ),
            lambda: explain_beam(got, w, case, s),
        )
    check_scores(scores, got, w, case, s, "beam_search")


@st.composite
def tiny_cases(draw):
    """A vocabulary of 3-4 and 2-3 generated tokens: a beam as wide as every hypothesis keeps them all."""
    case = draw(decoding_cases(vocab=(3, 4), layers=(1, 1), batch=(1, 2)))
    max_len = draw(st.integers(2, 4 if case.tgt_vocab == 3 else 3))
    settings = draw(
        beam_settings(case.tgt_vocab, beam=(1, 1), max_len=(max_len, max_len), penalties=(0.0, 0.8))
    )
    return BeamInputs(
        case, dataclasses.replace(settings, beam_size=case.tgt_vocab ** (max_len - 1))
    )


@prop(C, points=2, examples=3, error_hint=ERROR_HINT)
@given(inputs=tiny_cases())
@example(
    inputs=BeamInputs(
        fixed_case(4, b=2, me=3, vocab=3, n=1),
        BeamSettings(max_len=4, bos_id=0, eos_id=2, beam_size=27, length_penalty=0.8, eos_bias=1.0),
    )
)
def beam_search_finds_best_by_enumeration(student, inputs):
    """With a beam as wide as every hypothesis, beam_search returns the best one found by exhaustive enumeration."""
    case, s = inputs.case, inputs.settings
    searched = search(student, case, s)
    got, scores, w = searched.hypotheses, searched.scores, searched.expected_model
    best = [best_by_enumeration(w, case, s, row) for row in range(case.src.shape[0])]
    want = [h for h, _score in best]
    if got != want:
        fail(
            _(
                "beam_search gave {got}; the best hypotheses by enumeration are {want} (scores {scores})"
            ).format(
                got=[list(h) for h in got],
                want=[list(h) for h in want],
                scores=[round(x, 6) for _h, x in best],
            ),
            lambda: explain_beam(got, w, case, s),
        )
    check_scores(scores, got, w, case, s, "beam_search")


@prop(C, points=2, examples=3, error_hint=ERROR_HINT)
@given(inputs=beam_cases(beam=(1, 3), penalties=(0.0, 0.6, 1.2)))
@example(
    inputs=BeamInputs(
        fixed_case(8, b=2, me=3, vocab=5),
        BeamSettings(max_len=5, bos_id=0, eos_id=3, beam_size=2, length_penalty=1.2, eos_bias=1.0),
    )
)
def beam_search_scores_are_log_prob_sums(student, inputs):
    """Each returned score is the sum of the hypothesis's log-probabilities divided by T ** length_penalty."""
    case, s = inputs.case, inputs.settings
    state = case.state(s.eos_id, s.eos_bias)
    model = build_model(student, case, state)[0]
    seqs, scores, _reply = beam_call(student, model, case, s)
    check_scores(
        scores,
        hypotheses(seqs, s.eos_id, "beam_search"),
        case.expected_model(state),
        case,
        s,
        "beam_search",
    )


@prop(C, points=1, examples=2, error_hint=ERROR_HINT)
@given(inputs=beam_cases(beam=(2, 3), max_len=(4, 6), penalties=(0.0, 0.6), mask=False))
@example(
    inputs=BeamInputs(
        fixed_case(2, b=2, me=3, vocab=5),
        BeamSettings(max_len=6, bos_id=1, eos_id=0, beam_size=3, length_penalty=0.0, eos_bias=1.5),
    )
)
def beam_search_finished_hypotheses_not_extended(student, inputs):
    """A hypothesis that has produced eos is kept as it is: only eos follows it, and it can still win."""
    case, s = inputs.case, dataclasses.replace(inputs.settings, eos_bias=1.5)
    searched = search(student, case, s)
    got, w = searched.hypotheses, searched.expected_model
    want = expected_beam_search(w, case, s)[0]
    if got != want:
        fail(
            _("beam_search gave {got}, expected {want}").format(
                got=[list(h) for h in got], want=[list(h) for h in want]
            ),
            lambda: explain_beam(got, w, case, s),
        )


@prop(C, points=1, examples=1)
def beam_search_is_written_by_hand(student):
    """beam_search.py calls no library attention, norm or Transformer (static check)."""
    written_by_hand(
        student,
        C,
        _(
            "decode with your own Transformer's encode, decode and generator: no "
            "nn.Transformer, nn.MultiheadAttention or F.scaled_dot_product_attention"
        ),
    )
