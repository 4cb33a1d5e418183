"""Properties of beam_search.beam_search (visible to students).

A tiny model (decoding.DecodingCase) is decoded by the student's beam search; every verdict comes from what holds
no search (issue 18): with beam_size=1 the tokens are greedy decoding's, checked as a fixed point (one
teacher-forced pass of the expected model, the torch-assembled one, gives greedy's choice after every prefix); with
a beam wide enough to keep every hypothesis, on a tiny vocabulary and length, the result is the best of exhaustive
enumeration (no beam at all); each returned score is recomputed from the expected model's log-probabilities of the
returned tokens. A returned hypothesis is compared as the tokens up to its first eos.

Each rule of the search has its own hint (issue 21, issue 22 item 5). A mismatch is named by the graded side's
mistake models (models/beam_search.py's graded-only region: the search by hand with each usual mistake, never
shipped) where exactly one returns the same hypotheses and scores; else, and in the student
bundle, by evidence that needs no search: the batch's relations (the rows rolled, other tokens at the padded
positions), the enumeration (the best raw logp, the best of a search stopped after step t) and the score
formulas (T with bos, T grown to the steps run, the raw logp). One slip, one deduction: the return value's order
and dtypes are the contract property's, the scores the scores property's.

The cases, the student's search run once and the batch's relations are suite/beams.py (the hidden properties and
the graded search use them too); the enumeration is properties/models/beam_search.py.
"""

from __future__ import annotations

import dataclasses

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from ..i18n import N_, _
from ..suite.beam_records import PRUNED, RECORDED
from ..suite.beams import (
    BeamInputs,
    BeamSettings,
    Searched,
    alone_differs,
    beam_cases,
    beam_search,
    beam_settings,
    hypotheses,
    padding_matters,
    rows_interfere,
    search,
)
from ..suite.checks import close, diagnose, fail, is_close, written_by_hand
from ..suite.clauses import BeamSearch
from ..suite.core import Evidence, Kind, default_hint, prop
from ..suite.decoding import (
    SRC_VOCAB,
    build_model,
    decoding_cases,
    expect_run_in_eval_and_restored,
    fixed_case,
    greedy_fixed_point,
)
from ..suite.strategies import composite
from .models import beam_search as beam_models
from .models.beam_search import (
    BEAM_HINTS,
    BeamMistake,
    Enumerated,
    enumerate_row,
    exact_beam,
    logp_of,
)
from .models.transformer import ExpectedTransformer

C = "beam_search"
ERROR_HINT = N_(
    "beam_search(model, src, max_len, bos_id, eos_id, beam_size, length_penalty=0.0, src_mask=None) "
    "returns (sequences (batch, L), scores (batch,)); see the docstring"
)
default_hint(C, ERROR_HINT)
ADD_HINT = BEAM_HINTS.msgid(BeamMistake.MULTIPLY)
TOPK_HINT = BEAM_HINTS.msgid(BeamMistake.TOPK_TOKEN_MAJOR)
ROWS_HINT = BEAM_HINTS.msgid(BeamMistake.ROWS_MIXED)
PENALTY_HINT = BEAM_HINTS.msgid(BeamMistake.PENALTY_STORED)
DEFAULT_HINT = N_(
    "every step: log_softmax of the last position, a finished hypothesis held (eos at no cost), "
    "candidates = logp + log_probs, ranked by logp / T ** length_penalty, top-k over (beam, vocab) per "
    "row; "
    "stop once every hypothesis has finished or at max_len tokens; return each row's best"
)


# Issue 21 / issue 22 item 5: each rule of the search has its own diagnosis.
FINAL_CHOICE_HINT = BEAM_HINTS.msgid(BeamMistake.FINAL_BY_LOGP)
STOP_HINT = BEAM_HINTS.msgid(BeamMistake.STOP_TOP_FINISHED)
LENGTH_GROWS_HINT = BEAM_HINTS.msgid(BeamMistake.LENGTH_GROWS)
LENGTH_COUNT_HINT = BEAM_HINTS.msgid(BeamMistake.LENGTH_COUNTS_BOS)
RAW_SCORE_HINT = N_(
    "the returned score is logp / T ** length_penalty of the returned hypothesis, not the raw "
    "log-probability logp"
)
RANK_HINT = BEAM_HINTS.msgid(BeamMistake.RANK_RAW)
START_HINT = BEAM_HINTS.msgid(BeamMistake.ALL_START_AT_ZERO)
WIDE_HINT = N_(
    "beam_size may be larger than the vocabulary: the first step has only vocab real candidates, the other "
    "beams stay empty (-inf, never chosen while a real candidate remains); one top-k over each row's "
    "flattened beam_size * vocab candidates handles it, a top-k of beam_size tokens per beam does not"
)
SCORE_HINT = N_(
    "each returned score is logp / T ** length_penalty of the returned hypothesis: logp the sum of its "
    "tokens' log-probabilities, T its generated tokens (eos included, bos not)"
)
MAX_LEN_ONE_HINT = N_(
    "max_len=1 runs no step: each row returns [bos_id] alone with score 0.0 (T = 0: divide by max(T, 1) ** "
    "length_penalty, never by 0 ** length_penalty)"
)
MASK_HINT = BEAM_HINTS.msgid(BeamMistake.NO_DECODE_MASK)


def explain_beam(searched: Searched, *evidence, scores=True):
    """The hint naming the mistake that gives the searched hypotheses (and their scores, unless scores=False): the
    graded side's mistake model that returns the same (models/beam_search.BY_HAND, one search with the mistakes as
    flags), when only mistakes with one hint do; else the first `evidence` candidate that holds (diagnose's (test, hint)
    pairs: what needs no search, the student bundle's only diagnosis), else the default, which names every rule.
    A short hypothesis such as [bos, eos] is what several mistakes return: naming one of them would be a guess."""
    hints = set()
    if mistake_models is not None:
        try:
            hints = mistake_models.explain(searched, searched.scores if scores else None)
        except Exception:  # noqa: BLE001 - a diagnosis is best effort
            hints = set()
    if len(hints) == 1:
        return hints.pop()
    return diagnose(_(DEFAULT_HINT), *evidence)


# long: the scores' checks in the order they narrow the mistake down, sharing the search
def check_scores(searched: Searched, what):
    """The returned scores equal logp / T ** length_penalty of the returned hypotheses."""
    got_scores, hyps, steps = searched.scores, searched.hypotheses, searched.steps
    case, s, w = searched.case, searched.settings, searched.expected_model

    def scores(alpha, grown=False, extra=0, decode_mask=True):
        """From the expected model; grown: T the steps run, extra: added to T, decode_mask=False: src_mask given
        to the encoder only (the last three are mistakes)."""
        return torch.tensor(
            [
                logp_of(w, case, h, i, decode_mask)
                / max(steps if grown else len(h) - 1 + extra, 1) ** alpha
                for i, h in enumerate(hyps)
            ],
            dtype=torch.float64,
        )

    def matches(**options):
        return lambda: is_close(got_scores, scores(**options), case.dtype)

    want = scores(alpha=s.length_penalty)
    if is_close(got_scores, want, case.dtype):
        return

    def same_as(mistake: BeamMistake):
        """The graded side's search with `mistake` returns these hypotheses and scores (never in the bundle)."""
        return lambda: (
            mistake_models is not None and mistake_models.same_as(searched, got_scores, mistake)()
        )

    def explain():
        penalised = s.length_penalty != 0
        return diagnose(
            _(SCORE_HINT),
            (s.max_len == 1, _(MAX_LEN_ONE_HINT)),
            (penalised and matches(alpha=0.0), _(RAW_SCORE_HINT)),
            (penalised and matches(alpha=s.length_penalty, extra=1), _(LENGTH_COUNT_HINT)),
            (penalised and matches(alpha=s.length_penalty, extra=-1), _(LENGTH_COUNT_HINT)),
            (
                penalised and matches(alpha=s.length_penalty, grown=True),
                _(LENGTH_GROWS_HINT),
            ),
            (same_as(BeamMistake.MULTIPLY), BEAM_HINTS(BeamMistake.MULTIPLY)),
            (
                lambda: (
                    s.length_penalty
                    and is_close(got_scores, scores(alpha=2 * s.length_penalty), case.dtype)
                ),
                _(PENALTY_HINT),
            ),
            (
                lambda: s.length_penalty and same_as(BeamMistake.PENALTY_STORED)(),
                BEAM_HINTS(BeamMistake.PENALTY_STORED),
            ),
            *BEAM_HINTS.candidates(
                lambda m: same_as(m)(), BeamMistake.MEMORY_TILED, BeamMistake.ROWS_MIXED
            ),
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
            lambda: diagnose(
                explain(),
                *BEAM_HINTS.candidates(lambda m: same_as(m)(), BeamMistake.TOPK_TOKEN_MAJOR),
            ),
        )
    close(got_scores, want, what, explain, dtype=case.dtype)


# ------------------------------------------------------------------------------------------------- properties
# The weights follow the exercise, the pruning (issue 35): the narrow beams, which only a search passes
# (beam_size=1 is greedy: 3; the recorded narrow searches: 2), weigh at least as much as the wide ones that
# exhaustive enumeration passes (1 + 1, and the finished hypotheses' 1), so a brute force earns what greedy
# decoding earns and no more (examples/hostile/enumerate_every_hypothesis, tests/test_beam_search.py).
@prop(C, points=3, examples=2, clauses=(BeamSearch.SEARCH,))
@given(case=decoding_cases(), settings=beam_settings(5, beam=(1, 1), max_len=(1, 6)))
@example(
    case=fixed_case(5, b=3, me=5, lengths=[2, 5, 3]),
    settings=BeamSettings(max_len=7, bos_id=0, eos_id=3, beam_size=1, length_penalty=0.6),
)
def beam_search_size_one_is_greedy(student, case, settings):
    """With beam_size=1 beam search returns greedy decoding's sequences (any length penalty).

    Checked as a fixed point, with no decoding loop on the checking side: one teacher-forced pass of the expected
    model over the returned tokens gives greedy's choice after every prefix (transformer.greedy_fixed_point)."""
    inputs = BeamInputs(case, settings)
    searched = search(student, inputs, _("beam_search with beam_size=1"))
    got = searched.hypotheses
    # The hypotheses padded with eos to the longest: greedy's own output when they are greedy's (greedy stops
    # once every row has finished), so that eos padding after the last finish is not charged here.
    width = max(len(h) for h in got)
    ys = torch.tensor([list(h) + [settings.eos_id] * (width - len(h)) for h in got])
    why = greedy_fixed_point(ys, inputs.state(), case, settings.greedy(case.src_mask))
    if why is not None:
        fail(
            _(
                "beam_search with beam_size=1 gave {got}, which is not greedy decoding: {why}"
            ).format(got=[list(h) for h in got], why=why),
            lambda: explain_beam(searched, scores=False),
        )


# The longest max_len whose every hypothesis is enumerated, per vocabulary (at most 125 complete ones).
TINY_MAX_LEN = {3: 5, 4: 4, 5: 4}


@composite
def wide_cases(draw, penalties=(0.0,), batch=(1, 3), biases=(0.0, 1.0, 2.0)):
    """A vocabulary of 3-5, up to 4 generated tokens and a beam drawn between the narrowest one that keeps every
    hypothesis (exact_beam) and one past vocab ** (max_len - 1): no beam size is the checking side's signature
    (issue 20 item 5)."""
    case = draw(decoding_cases(vocab=(3, 5), layers=(1, 2), batch=batch))
    v = case.tgt_vocab
    max_len = draw(st.integers(3, TINY_MAX_LEN[v]))
    widest = max(exact_beam(v, max_len), v ** (max_len - 1) + 1)
    settings = draw(
        beam_settings(
            v,
            beam=(exact_beam(v, max_len), widest),
            max_len=(max_len, max_len),
            penalties=penalties,
            biases=biases,
        )
    )
    return BeamInputs(case, settings)


NEVER_DIVERGE = N_(
    "with beam_size={beam_size} your search returns {got}, exactly what it returns with beam_size=1: its beams "
    "never hold different hypotheses. Usually every beam starts as [bos_id] at logp 0, so each step picks the "
    "same token in every beam: start one beam per row at logp 0 and the others at logp -inf"
)


def beams_never_diverge(student, searched: Searched) -> bool:
    """Answer-free evidence, on the student's own search: the wide beam returns, row for row, what its beam_size=1
    search returns (the search ran once more, narrow), where the enumeration's best is something else."""
    # a search stopped early (a stopping rule's mistake) can return greedy's tokens with diverging beams: only a
    # search that ran every step says its beams never diverged
    if searched.settings.beam_size < 2 or searched.steps != searched.settings.max_len - 1:
        return False
    narrow = dataclasses.replace(
        searched.inputs, settings=dataclasses.replace(searched.settings, beam_size=1)
    )
    seqs = beam_search(student, searched.model, narrow)[0]
    return hypotheses(seqs, searched.settings.eos_id, "beam_search") == searched.hypotheses


def explain_wide(student, searched: Searched, tables: list[Enumerated], row: int) -> str:
    """The rule of the search that the returned hypothesis of row `row` breaks: the graded side's mistake models
    where they exist, else evidence that needs no search: the batch's relations (the rows rolled, other tokens at
    the padded positions) and the enumeration (the best raw logp, the best of a search stopped after step t)."""
    got, s = searched.hypotheses, searched.settings
    hyp, table = got[row], tables[row]
    steps = searched.steps

    def raw_best():
        return s.length_penalty != 0 and hyp == table.best(alpha=0.0)[0]

    def reported_grown():
        """The reported score divides by the steps run, not by the hypothesis's own T."""
        grown = table.score(hyp, length=steps)
        return steps != len(hyp) - 1 and abs(float(searched.scores[row]) - grown) < 1e-6

    def scored_right():
        """The reported score is the returned hypothesis's own: the search's sums are right, so a rule that only
        chooses (when to stop, which to return) is what differs. A mistake in the sums (products, the penalty in
        the running sum, a held hypothesis that pays) shows in the score, and then no choosing rule is named."""
        return abs(float(searched.scores[row]) - table.score(hyp)) < 1e-6

    evidence = (
        (lambda: rows_interfere(student, searched), _(ROWS_HINT)),
        (lambda: padding_matters(student, searched), _(MASK_HINT)),
        (
            lambda: beams_never_diverge(student, searched),
            lambda: _(NEVER_DIVERGE).format(beam_size=s.beam_size, got=[list(h) for h in got]),
            Evidence.DIRECT,
        ),
        (
            lambda: (
                scored_right()
                and any(hyp == table.stopped_after(t) for t in range(1, s.max_len - 1))
            ),
            _(STOP_HINT),
        ),
        (lambda: raw_best() and reported_grown(), _(LENGTH_GROWS_HINT)),
        # The final choice is made per row: a row that differs alone is no final-choice mistake.
        (lambda: alone_differs(student, searched), _(ROWS_HINT)),
        (lambda: scored_right() and raw_best(), _(FINAL_CHOICE_HINT)),
        (
            lambda: (
                scored_right()
                and hyp == table.best(among=lambda h: h[-1] == s.eos_id)[0] != table.best()[0]
            ),
            _(FINAL_CHOICE_HINT),
        ),
    )
    return explain_beam(searched, *evidence)


def check_by_enumeration(student, inputs: BeamInputs) -> None:
    """Each row's returned hypothesis is complete and the best of every hypothesis found by exhaustive enumeration
    of the expected model's (two whose scores tie within 1e-9 are both right)."""
    searched = search(student, inputs)
    got, w = searched.hypotheses, searched.expected_model
    tables = [enumerate_row(w, inputs, row) for row in range(inputs.case.src.shape[0])]
    best = [t.best() for t in tables]
    for row, (hyp, table) in enumerate(zip(got, tables)):
        if hyp in table.logp and table.complete(hyp) and table.score(hyp) >= best[row][1] - 1e-9:
            continue
        fail(
            _(
                "beam_search gave {got}; the best hypotheses by enumeration are {want} (scores {scores})"
            ).format(
                got=[list(h) for h in got],
                want=[list(h) for h, _score in best],
                scores=[round(x, 6) for _h, x in best],
            ),
            lambda row=row: explain_wide(student, searched, tables, row),
        )


@prop(C, points=1, examples=2, error_hint=WIDE_HINT, clauses=(BeamSearch.SEARCH,))
@given(inputs=wide_cases())
@example(
    inputs=BeamInputs(
        fixed_case(129, b=3, me=3, vocab=4, n=2),
        BeamSettings(max_len=4, bos_id=3, eos_id=1, beam_size=13, length_penalty=0.0, eos_bias=1.0),
    )
)
@example(
    inputs=BeamInputs(
        fixed_case(4, b=2, me=3, vocab=3, n=1, lengths=[3, 1]),
        BeamSettings(max_len=4, bos_id=0, eos_id=2, beam_size=27, length_penalty=0.0, eos_bias=1.0),
    )
)
def beam_search_finds_best_by_enumeration(student, inputs):
    """With a beam wide enough to keep every hypothesis (and no length penalty), beam_search returns the best
    hypothesis of each row found by exhaustive enumeration: the highest sum of log-probabilities.

    Two hypotheses whose scores tie (within 1e-9) are both right."""
    check_by_enumeration(student, inputs)


# With beam_search_recorded_narrow_searches it replaces beam_search_equals_expected (3 points, the docstring's
# search written out on the checking side: an answer, issue 18): under a length penalty the stopping rule and the
# final choice decide which hypothesis wins, and enumeration knows the winner without a search.
@prop(C, points=1, examples=2, error_hint=WIDE_HINT, clauses=(BeamSearch.SEARCH,))
@given(inputs=wide_cases(penalties=(0.5, 1.0, 1.5, 2.5), batch=(2, 3)))
# Issue 21: the best hypothesis is longer than the best raw logp's, and than a finished top hypothesis (the
# beams, 13 < 4 ** 3 and 5 < 5 ** 2, the narrowest that keep every hypothesis; in the first, 11 of the usual
# mistakes return something no other does).
@example(
    inputs=BeamInputs(
        fixed_case(129, b=3, me=3, vocab=4, n=2),
        BeamSettings(max_len=4, bos_id=3, eos_id=1, beam_size=13, length_penalty=0.5, eos_bias=1.0),
    )
)
@example(
    inputs=BeamInputs(
        fixed_case(75, b=1, me=3, vocab=4, n=1),
        BeamSettings(max_len=4, bos_id=1, eos_id=3, beam_size=13, length_penalty=1.5, eos_bias=1.0),
    )
)
@example(
    inputs=BeamInputs(
        fixed_case(59, b=2, me=3, vocab=5, n=1),
        BeamSettings(max_len=3, bos_id=2, eos_id=3, beam_size=5, length_penalty=2.5, eos_bias=0.5),
    )
)
def beam_search_finds_best_under_length_penalty(student, inputs):
    """With a beam wide enough to keep every hypothesis, beam_search returns each row's best hypothesis by
    logp / T ** length_penalty, found by exhaustive enumeration: a longer hypothesis may win.

    Two hypotheses whose scores tie (within 1e-9) are both right."""
    check_by_enumeration(student, inputs)


@prop(C, points=2, examples=1, clauses=(BeamSearch.SEARCH,))
@given(recorded=st.sampled_from(RECORDED))
@example(recorded=RECORDED[0])
@example(recorded=RECORDED[1])
@example(recorded=RECORDED[2])
@example(recorded=RECORDED[3])
def beam_search_recorded_narrow_searches(student, recorded):
    """With beams narrower than the hypotheses and a length penalty, beam_search returns what the reference
    returned on four recorded cases (each usual mistake of the search returns something else there)."""
    inputs, want = recorded
    searched = search(student, inputs)
    got = searched.hypotheses
    if got != list(want):
        evidence = (
            (lambda: rows_interfere(student, searched), _(ROWS_HINT)),
            (lambda: padding_matters(student, searched), _(MASK_HINT)),
        )
        fail(
            _("beam_search gave {got}, expected {want}").format(
                got=[list(h) for h in got], want=[list(h) for h in want]
            ),
            lambda: explain_beam(searched, *evidence),
        )


KEEPS_TOO_MANY = N_(
    "your search returned the best hypothesis of all, which a beam of {beam_size} cannot reach here: at the "
    "first step it keeps only the {beam_size} most likely tokens, and the best of all starts with another. "
    "Keep exactly beam_size hypotheses per row after every step"
)


@prop(C, points=3, examples=1, clauses=(BeamSearch.SEARCH,))
@given(pruned=st.sampled_from(PRUNED))
@example(pruned=PRUNED[0])
@example(pruned=PRUNED[1])
def beam_search_narrow_beam_prunes_for_good(student, pruned):
    """A narrow beam drops prefixes for good: on two recorded cases (beam_size 2 and 3) the best hypothesis of
    all starts with a token the beam dropped at its first step, and beam_search returns the beam's best, which is
    not it. Pruning is the exercise: a search that keeps every hypothesis fails here."""
    inputs, want = pruned
    searched = search(student, inputs)
    got = searched.hypotheses
    if got != list(want):
        w = ExpectedTransformer(inputs.state(), inputs.case.config)
        best = [enumerate_row(w, inputs, row).best()[0] for row in range(len(got))]
        fail(
            _("beam_search gave {got}, expected {want}").format(
                got=[list(h) for h in got], want=[list(h) for h in want]
            ),
            lambda: (
                _(KEEPS_TOO_MANY).format(beam_size=inputs.settings.beam_size)
                if got == best
                else explain_beam(searched)
            ),
        )


@prop(C, points=1, examples=3, clauses=(BeamSearch.SCORES,))
@given(inputs=beam_cases(beam=(1, 3), penalties=(0.0, 0.6, 1.2)))
# Issue 21: two rows finished at different lengths under a length penalty; max_len=1 (no step: score 0).
@example(
    inputs=BeamInputs(
        fixed_case(81, b=2, me=3, vocab=4, n=2),
        BeamSettings(max_len=5, bos_id=0, eos_id=3, beam_size=3, length_penalty=1.5, eos_bias=1.5),
    )
)
@example(
    inputs=BeamInputs(
        fixed_case(7, b=2, me=3, vocab=5, n=1),
        BeamSettings(max_len=1, bos_id=2, eos_id=1, beam_size=3, length_penalty=1.0),
    )
)
@example(
    inputs=BeamInputs(
        fixed_case(8, b=2, me=3, vocab=5),
        BeamSettings(max_len=5, bos_id=0, eos_id=3, beam_size=2, length_penalty=1.2, eos_bias=1.0),
    )
)
def beam_search_scores_are_log_prob_sums(student, inputs):
    """Each returned score is the sum of the hypothesis's log-probabilities divided by T ** length_penalty
    (T: its generated tokens, eos included, bos not; max_len=1: [bos_id] alone, score 0)."""
    check_scores(search(student, inputs), "beam_search")


@prop(C, points=1, examples=1, error_hint=WIDE_HINT, clauses=(BeamSearch.FINISHED,))
# Under a length penalty, so that a longer hypothesis competes with the finished ones: with none, [bos, eos] is
# often the best, which greedy decoding finds too (issue 20 item 5: a greedy decoder earns nothing here).
@given(inputs=wide_cases(penalties=(1.0, 1.5), biases=(1.5,)))
@example(
    inputs=BeamInputs(
        fixed_case(24, b=2, me=3, vocab=5, n=1),
        BeamSettings(max_len=4, bos_id=1, eos_id=0, beam_size=21, length_penalty=1.0, eos_bias=1.5),
    )
)
def beam_search_finished_hypotheses_not_extended(student, inputs):
    """A hypothesis that has produced eos is kept as it is: only eos follows it, and it can still win (eos made
    likely, a wide beam: the best by enumeration is often a finished hypothesis beside longer ones)."""
    check_by_enumeration(student, inputs)


@composite
def contract_cases(draw):
    """Models in float32 and float64, max_len from 1 (no step at all)."""
    case = draw(decoding_cases(dtypes=(torch.float32, torch.float64), layers=(1, 1)))
    return BeamInputs(case, draw(beam_settings(case.tgt_vocab, beam=(1, 3), max_len=(1, 5))))


@prop(
    C,
    points=1,
    examples=3,
    clauses=(
        BeamSearch.TYPES,
        BeamSearch.FINISHED,
    ),
)
@given(inputs=contract_cases())
@example(
    inputs=BeamInputs(
        fixed_case(6, b=2, me=3, vocab=5, n=1, dtype=torch.float32),
        BeamSettings(max_len=5, bos_id=0, eos_id=1, beam_size=2, length_penalty=0.6, eos_bias=1.5),
    )
)
@example(
    inputs=BeamInputs(
        fixed_case(7, b=3, me=4, vocab=5, n=1),
        BeamSettings(max_len=1, bos_id=2, eos_id=1, beam_size=3, length_penalty=1.0),
    )
)
def beam_search_returns_sequences_and_scores(student, inputs):
    """beam_search returns a tuple (sequences, scores): sequences int64 (batch, L), L <= max_len, bos_id first and
    only eos_id after an eos; scores (batch,) in the model's dtype (float32 or float64)."""
    model = build_model(student, inputs.case, inputs.state())[0]
    seqs = beam_search(student, model, inputs, strict=True)[0]
    hypotheses(seqs, inputs.settings.eos_id, "beam_search")


def computed_nothing(scores) -> bool:
    """NaN or all-zero scores: no search of at least one token gives them (logp < 0)."""
    return (
        not isinstance(scores, torch.Tensor)
        or not bool(torch.isfinite(scores).all())
        or not bool((scores != 0).any())
    )


def reads_no_source(student, model, inputs: BeamInputs, scores) -> bool:
    """One score in every row, and the same scores with every source token another: a search that reads no source
    (a constant, examples/hostile/constant_search). A search whose rows mix (the memory tiled, not interleaved)
    gives one score in every row too, but not for other tokens: that slip is another property's."""
    if scores.numel() < 2 or not bool((scores == scores.flatten()[0]).all()):
        return False
    other = 1 + inputs.case.src % (
        SRC_VOCAB - 1
    )  # the source's ids are 1..SRC_VOCAB-1: each becomes another
    return is_close(beam_search(student, model, inputs, other)[1], scores)


@prop(C, points=1, examples=1, clauses=(BeamSearch.MODE,))
@given(inputs=beam_cases(beam=(2, 3), mask=False, layers=(1, 1)))
@example(
    inputs=BeamInputs(
        fixed_case(131, b=2, me=4, vocab=5, n=1),
        BeamSettings(max_len=5, bos_id=0, eos_id=3, beam_size=2, length_penalty=0.6, eos_bias=1.0),
    )
)
def beam_search_searches_in_eval_mode(student, inputs):
    """A model in train mode (dropout=0.5) is searched in eval mode without gradients and left in train mode:
    the result is the same search's on the model built in eval mode."""
    state = inputs.state()
    model = build_model(student, inputs.case, state, dropout=0.5, train=True)[0]
    seqs, scores, reply = beam_search(student, model, inputs)
    expect_run_in_eval_and_restored(student, model, reply, "beam_search", search=True)
    got = hypotheses(seqs, inputs.settings.eos_id, "beam_search")
    want = search(student, inputs).hypotheses  # the same search, on the model built in eval mode
    if got != want:
        fail(
            _(
                "beam_search of a model in train mode gave {got}, and {want} on the same model in eval mode"
            ).format(got=[list(h) for h in got], want=[list(h) for h in want]),
            _(
                "call model.eval() while searching (dropout off), then restore the model's "
                "train/eval mode"
            ),
        )
    # a search that computes nothing agrees with itself: NaN, all-zero or source-blind scores are checked against
    # the model (other wrong scores are beam_search_scores_are_log_prob_sums's alone: one slip, one deduction)
    if computed_nothing(scores) or reads_no_source(student, model, inputs, scores):
        expected = ExpectedTransformer(state, inputs.case.config)
        check_scores(
            Searched(inputs, got, scores, expected, seqs.shape[1] - 1, model), "beam_search"
        )


@prop(C, points=1, examples=2, clauses=(BeamSearch.SRC_MASK,))
@given(inputs=beam_cases(batch=(2, 3), mask=True))
@example(
    inputs=BeamInputs(
        fixed_case(75, b=2, me=5, vocab=6, n=1, lengths=[5, 2]),
        BeamSettings(max_len=5, bos_id=1, eos_id=2, beam_size=2, length_penalty=0.6, eos_bias=0.5),
    )
)
def beam_search_src_mask_hides_the_padding(student, inputs):
    """With a padding src_mask, other tokens at the padded source positions change nothing: the mask serves
    encode and every decode, one copy per beam."""
    searched = search(student, inputs)
    # a search that computes nothing hides everything (see computed_nothing, reads_no_source)
    if computed_nothing(searched.scores) or reads_no_source(
        student, searched.model, inputs, searched.scores
    ):
        check_scores(searched, "beam_search")
    if padding_matters(student, searched):
        fail(
            _("beam_search's hypotheses changed with the tokens at padded source positions"),
            _(
                "src_mask must serve encode and every decode: repeat it per beam as the memory is "
                "(repeat_interleave(beam_size, dim=0))"
            ),
        )


@prop(C, points=1, examples=1, kind=Kind.STATIC)
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


# The graded side's beam search by hand and its mistake models (models/beam_search.py's graded-only region, never
# shipped), for diagnoses only: None in the student bundle.
mistake_models = beam_models.BY_HAND
