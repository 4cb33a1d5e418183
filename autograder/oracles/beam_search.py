"""Beam search by hand (graded side, never shipped): the docstring's search on the expected model, right or with
one usual mistake made on purpose, so that a diagnosis can name the mistake whose hypotheses (and scores) match a
submission's. The hidden properties use it as their witness; the visible ones reach it only through
suite/graded.oracle("beam_search") (None in the student bundle, whose verdicts never depend on it)."""

from __future__ import annotations

import enum

import torch

from ..i18n import _
from ..properties import beam_search as visible
from ..suite.beams import FINISHED_HINT, BeamInputs, Searched, hypotheses
from ..suite.checks import diagnose, is_close
from ..suite.expected_values import expected_causal_mask


def expected_beam_search(
    w,
    inputs: BeamInputs,
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
    """The docstring's beam search of `inputs` on the expected model w, optionally with one mistake: (hypotheses,
    scores)."""
    case, s = inputs.case, inputs.settings
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


class BeamMistake(enum.Flag):
    """The usual mistakes in the rules of the search (issue 21), one flag each."""

    NONE = 0
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


def rule_hints() -> dict:
    """Each rule's mistake and the hint that names it (the hints live with the visible properties)."""
    return {
        BeamMistake.FINAL_BY_LOGP: visible.FINAL_CHOICE_HINT,
        BeamMistake.FINAL_FINISHED_ONLY: visible.FINAL_CHOICE_HINT,
        BeamMistake.STOP_TOP_FINISHED: visible.STOP_HINT,
        BeamMistake.STOP_ONE_FINISHED: visible.STOP_HINT,
        BeamMistake.LENGTH_GROWS: visible.LENGTH_GROWS_HINT,
        BeamMistake.LENGTH_COUNTS_BOS: visible.LENGTH_COUNT_HINT,
        BeamMistake.RANK_RAW: visible.RANK_HINT,
        BeamMistake.ALL_START_AT_ZERO: visible.START_HINT,
        BeamMistake.HOLD_AT_COST: FINISHED_HINT,
        BeamMistake.MASK_TILED: visible.MASK_HINT,
    }


def searched_with(w, inputs: BeamInputs, mistake: BeamMistake = BeamMistake.NONE):
    """The docstring's beam search of `inputs` on the expected model w, with `mistake` made on purpose:
    (hypotheses, scores)."""
    case, s = inputs.case, inputs.settings
    b, k, alpha = case.src.shape[0], s.beam_size, s.length_penalty
    memory = w.encode(case.src, case.src_mask).repeat_interleave(k, dim=0)
    mask = None if case.src_mask is None else case.src_mask.repeat_interleave(k, dim=0)
    if mask is not None and BeamMistake.MASK_TILED in mistake:
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
        cand = logp[..., None] + torch.where(done[..., None], held, lp)
        grow = torch.ones_like(done) if BeamMistake.LENGTH_GROWS in mistake else ~done
        new_len = (lengths + grow.long())[..., None]
        ranked = cand if BeamMistake.RANK_RAW in mistake else cand / new_len.double() ** alpha
        index = ranked.reshape(b, k * v).topk(k, dim=-1).indices
        beam, token = index // v, index % v
        logp = cand.reshape(b, -1).gather(1, index)
        lengths = new_len.squeeze(-1).gather(1, beam)
        done = done.gather(1, beam) | (token == s.eos_id)
        ys = torch.cat(
            [ys[(torch.arange(b)[:, None] * k + beam).reshape(-1)], token.reshape(-1, 1)], 1
        )
    scores = logp / lengths.clamp(min=1).double() ** alpha
    choice = logp if BeamMistake.FINAL_BY_LOGP in mistake else scores
    if BeamMistake.FINAL_FINISHED_ONLY in mistake:
        choice = choice.masked_fill(~done, float("-inf"))
    best = choice.argmax(-1)
    seqs = ys.view(b, k, -1)[torch.arange(b), best]
    return hypotheses(seqs, s.eos_id, _("the reference")), scores[torch.arange(b), best]


def same_as(searched: Searched, scores=None, **mistake):
    """A test: the switched search with `mistake` returns the searched hypotheses (and `scores`, where given)."""

    def test():
        hyps, want_scores = expected_beam_search(
            searched.expected_model, searched.inputs, **mistake
        )
        return hyps == searched.hypotheses and (
            scores is None or is_close(scores, want_scores, searched.case.dtype)
        )

    return test


def explain(searched: Searched, scores=None) -> set[str]:
    """The hints of every mistake model (the switches and each rule's) that returns the searched hypotheses (and
    `scores`, where given)."""
    penalised, masked = searched.settings.length_penalty, searched.case.src_mask is not None
    usual = [
        (
            lambda: penalised and same_as(searched, scores, store_ranked=True)(),
            _(visible.PENALTY_HINT),
        ),
        (same_as(searched, scores, hold=False), _(FINISHED_HINT)),
        (same_as(searched, scores, token_major=True), _(visible.TOPK_HINT)),
        (same_as(searched, scores, mixed_rows=True), _(visible.ROWS_HINT)),
        (same_as(searched, scores, multiply=True), _(visible.ADD_HINT)),
        (same_as(searched, scores, tiled=True), _(visible.ROWS_HINT)),
        (
            lambda: masked and same_as(searched, scores, decode_mask=False)(),
            _(visible.MASK_HINT),
        ),
    ]
    for mistake, hint in rule_hints().items():
        usual.append((same_rule(searched, scores, mistake), _(hint)))
    return {hint for test, hint in usual if diagnose(None, (test, hint))}


def same_rule(searched: Searched, scores, mistake: BeamMistake):
    """A test: the search with the rule `mistake` broken returns the searched hypotheses (and `scores`, where
    given)."""

    def test():
        hyps, want_scores = searched_with(searched.expected_model, searched.inputs, mistake)
        return hyps == searched.hypotheses and (
            scores is None or is_close(scores, want_scores, searched.case.dtype)
        )

    return test
