"""Beam search by hand (graded side, never shipped): the docstring's search on the expected model, right or with
usual mistakes made on purpose (models/beam_search.BeamMistake), so that a diagnosis can name the mistake whose
hypotheses (and scores) match a submission's. The hidden properties take their expected values from it; the
visible ones reach it only through suite/graded.diagnosis("beam_search") (None in the student bundle, whose
verdicts never depend on it)."""

from __future__ import annotations

import torch

from ..i18n import _
from ..properties.models.beam_search import BEAM_HINTS, BeamMistake
from ..suite.beams import BeamInputs, Searched, hypotheses
from ..suite.checks import diagnose, is_close
from ..suite.expected_values import expected_causal_mask


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
