"""The checking side's model of a beam search, with no search in it: every hypothesis of a source row enumerated
with its sum of log-probabilities (no beam), a hypothesis's log-probability from one teacher-forced pass, and the
narrowest beam that keeps every hypothesis, where a beam search returns what the enumeration does. The expected
values come from models.transformer.ExpectedTransformer. No answer: it ships (docs/bundle.md)."""

from __future__ import annotations

import dataclasses
import enum
from types import SimpleNamespace

import torch

from ...i18n import N_, _

# the finished-hypothesis rule's hint is also the visible contract's (suite/beams.py): declared there
from ...suite.beams import FINISHED_HINT, BeamInputs, BeamSettings, Searched, hypotheses
from ...suite.checks import diagnose, is_close
from ...suite.expected_values import expected_causal_mask
from ...suite.mistakes import Hints


class BeamMistake(enum.Flag):
    """The usual mistakes of a beam search (issue 21), one flag each: the graded side's search by hand makes them on
    purpose (this module's graded-only region); the visible properties name them. A flag's name is no answer."""

    NONE = 0
    # logp * log_probs: probabilities multiplied, not log-probabilities added
    MULTIPLY = enum.auto()
    NOT_HELD = enum.auto()  # a finished hypothesis extended like any other
    TOPK_TOKEN_MAJOR = enum.auto()  # the top-k over candidates flattened token-major
    ROWS_MIXED = enum.auto()  # ys's rows picked by beam index alone, across the batch's rows
    # the penalised score kept as the running sum: the penalty applied twice
    PENALTY_STORED = enum.auto()
    NO_DECODE_MASK = enum.auto()  # src_mask given to encode only
    MEMORY_TILED = enum.auto()  # memory repeated batch-major (memory.repeat), the mask per beam
    FINAL_BY_LOGP = enum.auto()  # each row returns its best raw logp, not its best score
    FINAL_FINISHED_ONLY = enum.auto()  # an unfinished hypothesis only when none has finished
    STOP_TOP_FINISHED = enum.auto()  # stops once each row's top hypothesis has finished
    STOP_ONE_FINISHED = enum.auto()  # stops once each row has a finished hypothesis
    LENGTH_GROWS = enum.auto()  # a finished hypothesis's T keeps counting the steps
    LENGTH_COUNTS_BOS = enum.auto()
    RANK_RAW = enum.auto()  # ranked by logp; the penalty only in the final choice
    ALL_START_AT_ZERO = enum.auto()  # beam_size copies of [bos] at logp 0
    HOLD_AT_COST = enum.auto()  # a held hypothesis pays eos's log-probability again
    MASK_TILED = enum.auto()  # src_mask repeated batch-major, the memory per beam


_FINAL_BY_LOGP = N_(
    "each row returns its hypothesis with the highest score logp / T ** length_penalty, "
    "finished or not (at max_len), not the one with the highest raw log-probability logp"
)
_NO_DECODE_MASK = N_(
    "src_mask must reach every decode too, one copy per beam, repeated as the memory is"
)
_ROWS_MIXED = N_(
    "beams of different rows of the batch are mixed: hypothesis k of row b is row b * "
    "beam_size + k of ys (and of the repeated memory, memory.repeat_interleave(beam_size, "
    "dim=0))"
)
_STOP_TOP_FINISHED = N_(
    "decoding stops only once every hypothesis of every row has finished (or at max_len "
    "tokens): under a length penalty a longer hypothesis can still overtake a finished one, "
    "so a finished top hypothesis is not the end"
)
# Every mistake of the search and its hint, in the order a diagnosis tries them (explain, below)
BEAM_HINTS = Hints(
    BeamMistake,
    {
        BeamMistake.MULTIPLY: N_(
            "scores are sums of log-probabilities: add the log-probabilities, candidates = "
            "logp[..., None] + log_softmax(logits) (never multiply probabilities or scores)"
        ),
        BeamMistake.NOT_HELD: FINISHED_HINT,
        BeamMistake.TOPK_TOKEN_MAJOR: N_(
            "the top-k runs over each row's beam_size * vocab candidates flattened beam-major "
            "(every token of one beam, then the next beam's): a winner's flat index gives "
            "both its beam and its token"
        ),
        BeamMistake.ROWS_MIXED: _ROWS_MIXED,
        BeamMistake.PENALTY_STORED: N_(
            "the length penalty is applied twice: keep logp (the plain sum of "
            "log-probabilities) for each hypothesis and divide by T ** length_penalty only to "
            "rank and to report, never into the running sum"
        ),
        BeamMistake.NO_DECODE_MASK: _NO_DECODE_MASK,
        BeamMistake.MEMORY_TILED: _ROWS_MIXED,
        BeamMistake.FINAL_BY_LOGP: _FINAL_BY_LOGP,
        BeamMistake.FINAL_FINISHED_ONLY: _FINAL_BY_LOGP,
        BeamMistake.STOP_TOP_FINISHED: _STOP_TOP_FINISHED,
        BeamMistake.STOP_ONE_FINISHED: _STOP_TOP_FINISHED,
        BeamMistake.LENGTH_GROWS: N_(
            "a finished hypothesis's length T stops growing at its eos: holding it adds no "
            "token (T counts the generated tokens up to and including the first eos, not the "
            "eos padding after it)"
        ),
        BeamMistake.LENGTH_COUNTS_BOS: N_(
            "T is the number of generated tokens, eos included, bos not counted: score = logp "
            "/ T ** length_penalty"
        ),
        BeamMistake.RANK_RAW: N_(
            "rank the candidates by logp / T ** length_penalty at every step (T + 1 for an "
            "extended hypothesis, T for a finished one held), not by the raw logp: the "
            "penalty changes which hypotheses stay in the beam"
        ),
        BeamMistake.ALL_START_AT_ZERO: N_(
            "each row's beam starts with [bos_id] once, at logp 0, and beam_size - 1 empty "
            "slots at logp -inf: beam_size copies of [bos_id] at logp 0 fill the beam with "
            "the same hypothesis"
        ),
        BeamMistake.HOLD_AT_COST: FINISHED_HINT,
        BeamMistake.MASK_TILED: _NO_DECODE_MASK,
    },
)


def logp_of(w, case, hyp: tuple[int, ...], row: int, decode_mask=True) -> float:
    """logp(hyp), the sum of its tokens' log-probabilities after bos, from the expected model w for the source row
    `row` of `case` (0 for [bos] alone). decode_mask=False: src_mask given to the encoder only (a mistake)."""
    if len(hyp) == 1:
        return 0.0
    src = case.src[row : row + 1]
    mask = None if case.src_mask is None else case.src_mask[row : row + 1]
    ys = torch.tensor([hyp])
    memory = w.encode(src, mask)
    lp = w.log_probs(src, ys[:, :-1], mask if decode_mask else None, memory)[0]  # (T, vocab)
    return float(lp.gather(1, ys[0, 1:, None]).sum())


@dataclasses.dataclass(frozen=True)
class Enumerated:
    """Every hypothesis of one source row and every unfinished prefix of one, with its logp: no beam, exhaustive.
    A hypothesis is complete when it has finished (its last token is eos) or has max_len tokens."""

    logp: dict  # tuple of tokens (bos first) -> logp
    settings: BeamSettings

    def complete(self, hyp) -> bool:
        return hyp[-1] == self.settings.eos_id and len(hyp) > 1 or len(hyp) == self.settings.max_len

    def score(self, hyp, alpha=None, length=None) -> float:
        alpha = self.settings.length_penalty if alpha is None else alpha
        return self.logp[hyp] / max(len(hyp) - 1 if length is None else length, 1) ** alpha

    def best(self, among=None, **scoring) -> tuple[tuple[int, ...], float]:
        """The best complete hypothesis (of `among`, a test on a hypothesis) and its score."""
        pool = [h for h in self.logp if self.complete(h) and (among is None or among(h))]
        best = max(pool, key=lambda h: self.score(h, **scoring))
        return best, self.score(best, **scoring)

    def stopped_after(self, t: int) -> tuple[int, ...]:
        """What a wide beam returns if it stops after step t: the best of the finished hypotheses of at most t
        tokens and of the unfinished prefixes of t tokens."""
        pool = [h for h in self.logp if len(h) - 1 == t or self.complete(h) and len(h) - 1 < t]
        return max(pool, key=self.score)


def enumerate_row(w, inputs: BeamInputs, row: int) -> Enumerated:
    """Every hypothesis of source row `row` and its logp, from the expected model w."""
    case, s = inputs.case, inputs.settings
    src = case.src[row : row + 1]
    mask = None if case.src_mask is None else case.src_mask[row : row + 1]
    memory = w.encode(src, mask)
    table = {(s.bos_id,): 0.0}
    frontier = [(s.bos_id,)] if s.max_len > 1 else []
    while frontier:
        ys = torch.tensor(frontier)
        m = None if mask is None else mask.expand(len(frontier), -1, -1, -1)
        lp = w.log_probs(src, ys, m, memory.expand(len(frontier), -1, -1))[:, -1]  # (n, vocab)
        grown = []
        for hyp, row_lp in zip(frontier, lp.tolist()):
            for token, token_lp in enumerate(row_lp):
                new = hyp + (token,)
                table[new] = table[hyp] + token_lp
                if token != s.eos_id and len(new) < s.max_len:
                    grown.append(new)
        frontier = grown
    return Enumerated(table, s)


def exact_beam(vocab: int, max_len: int) -> int:
    """The narrowest beam that keeps every hypothesis alive until the last step, where only the best must stay:
    there beam search returns what enumeration does (vocab ** (max_len - 1) is far wider than needed)."""
    unfinished, finished = 1, 0
    for _step in range(1, max_len - 1):
        finished, unfinished = finished + unfinished, unfinished * (vocab - 1)
    return unfinished + finished


# The by-hand mistake models: the graded side's; None in the student bundle (suite/graded.py).
BY_HAND: SimpleNamespace | None = None


# >>> graded only: an answer, which `release` strips (suite/graded.py, docs/bundle.md)
def expected_beam_search(w, inputs: BeamInputs, mistake: BeamMistake = BeamMistake.NONE):
    """The docstring's beam search of `inputs` on the expected model w, with `mistake` made on purpose:
    (hypotheses, scores)."""
    case, s = inputs.case, inputs.settings
    b, k, alpha = case.src.shape[0], s.beam_size, s.length_penalty
    memory = w.encode(case.src, case.src_mask)
    tiled = BeamMistake.MEMORY_TILED in mistake
    memory = memory.repeat(k, 1, 1) if tiled else memory.repeat_interleave(k, dim=0)
    mask = None
    if case.src_mask is not None and BeamMistake.NO_DECODE_MASK not in mistake:
        mask = case.src_mask.repeat_interleave(k, dim=0)
        if BeamMistake.MASK_TILED in mistake:
            mask = case.src_mask.repeat(k, 1, 1, 1)
    ys = torch.full((b * k, 1), s.bos_id, dtype=torch.long)
    logp = torch.full((b, k), float("-inf"), dtype=torch.float64)
    logp[:, : k if BeamMistake.ALL_START_AT_ZERO in mistake else 1] = 0.0
    lengths = torch.full((b, k), int(BeamMistake.LENGTH_COUNTS_BOS in mistake))
    done = torch.zeros(b, k, dtype=torch.bool)

    def stopped() -> bool:
        if BeamMistake.STOP_TOP_FINISHED in mistake:
            return bool(done[:, 0].all())
        if BeamMistake.STOP_ONE_FINISHED in mistake:
            return bool(done.any(-1).all())
        return bool(done.all())

    while ys.shape[1] < s.max_len and not stopped():
        hidden = w.decode(ys, memory, expected_causal_mask(ys.shape[1]), mask)[:, -1]
        lp = torch.log_softmax(w.generator(hidden).to(torch.float64), -1)
        v = lp.shape[-1]
        lp = lp.view(b, k, v)
        held = torch.full_like(lp, float("-inf"))
        held[..., s.eos_id] = lp[..., s.eos_id] if BeamMistake.HOLD_AT_COST in mistake else 0.0
        step = lp if BeamMistake.NOT_HELD in mistake else torch.where(done[..., None], held, lp)
        cand = logp[..., None] * step if BeamMistake.MULTIPLY in mistake else logp[..., None] + step
        grow = torch.ones_like(done) if BeamMistake.LENGTH_GROWS in mistake else ~done
        new_len = (lengths + grow.long())[..., None]
        ranked = cand if BeamMistake.RANK_RAW in mistake else cand / new_len.double() ** alpha
        flat = ranked.transpose(1, 2) if BeamMistake.TOPK_TOKEN_MAJOR in mistake else ranked
        index = flat.reshape(b, k * v).topk(k, dim=-1).indices
        beam, token = index // v, index % v
        logp = (
            (ranked if BeamMistake.PENALTY_STORED in mistake else cand)
            .reshape(b, -1)
            .gather(1, index)
        )
        lengths = new_len.squeeze(-1).gather(1, beam)
        done = done.gather(1, beam) | (token == s.eos_id)
        rows = beam if BeamMistake.ROWS_MIXED in mistake else torch.arange(b)[:, None] * k + beam
        ys = torch.cat([ys[rows.reshape(-1)], token.reshape(-1, 1)], 1)
    scores = logp / lengths.clamp(min=1).double() ** alpha
    choice = logp if BeamMistake.FINAL_BY_LOGP in mistake else scores
    if BeamMistake.FINAL_FINISHED_ONLY in mistake:
        choice = choice.masked_fill(~done, float("-inf"))
    best = choice.argmax(-1)
    seqs = ys.view(b, k, -1)[torch.arange(b), best]
    return hypotheses(seqs, s.eos_id, _("the reference")), scores[torch.arange(b), best]


def mistake_hints() -> dict:
    """Each mistake and the hint that names it (declared under the flags: models/beam_search.BEAM_HINTS)."""
    return BEAM_HINTS.hints


def same_as(searched: Searched, scores, mistake: BeamMistake):
    """A test: the search with `mistake` returns the searched hypotheses (and `scores`, where given)."""

    def test():
        hyps, want_scores = expected_beam_search(searched.expected_model, searched.inputs, mistake)
        return hyps == searched.hypotheses and (
            scores is None or is_close(scores, want_scores, searched.case.dtype)
        )

    return test


def explain(searched: Searched, scores=None) -> set[str]:
    """The hints of every mistake model that returns the searched hypotheses (and `scores`, where given). The
    penalty kept in the running sum is tried only under a penalty, the mask left out of the decodes only with a
    mask."""
    tried = {
        BeamMistake.PENALTY_STORED: bool(searched.settings.length_penalty),
        BeamMistake.NO_DECODE_MASK: searched.case.src_mask is not None,
    }
    usual = [
        (same_as(searched, scores, mistake), _(hint))
        for mistake, hint in mistake_hints().items()
        if tried.get(mistake, True)
    ]
    return {hint for test, hint in usual if diagnose(None, (test, hint))}


BY_HAND = SimpleNamespace(
    expected_beam_search=expected_beam_search, explain=explain, same_as=same_as
)
# <<< graded only
