"""Hidden properties of beam_search.beam_search (graded, never shipped to students). Their expected values come
from the graded side's beam search by hand (models/beam_search.py's graded-only region, with the mistake models that
name a rule broken)."""

from __future__ import annotations

import torch
from hypothesis import example, given
from hypothesis import strategies as st

from ..i18n import _
from ..properties.beam_search import DEFAULT_HINT, ROWS_HINT, explain_beam
from ..properties.models.beam_search import expected_beam_search
from ..properties.models.transformer import ExpectedTransformer
from ..suite.beams import (
    BeamInputs,
    BeamSettings,
    Searched,
    beam_cases,
    beam_search,
    hypotheses,
    search,
)
from ..suite.checks import close, fail
from ..suite.clauses import BeamSearch
from ..suite.core import prop
from ..suite.decoding import build_model, expect_run_in_eval_and_restored, fixed_case

C = "beam_search"


@prop(C, points=1, examples=2, visible=False, clauses=(BeamSearch.SEARCH,))
@given(inputs=beam_cases(batch=(2, 3)), order=st.randoms(use_true_random=False))
# Issue 20 item 5: here (as in the two examples below) greedy decoding is not the beam's result in any row, so
# that a greedy decoder earns nothing from these properties.
@example(
    inputs=BeamInputs(
        fixed_case(126, b=2, me=4, vocab=6, n=1),
        BeamSettings(max_len=5, bos_id=5, eos_id=1, beam_size=3, length_penalty=0.0, eos_bias=1.0),
    ),
    order=None,
)
@example(
    inputs=BeamInputs(
        fixed_case(13, b=3, me=4, vocab=5, lengths=[4, 2, 3]),
        BeamSettings(max_len=5, bos_id=0, eos_id=1, beam_size=2, length_penalty=0.6, eos_bias=1.0),
    ),
    order=None,
)
def beam_search_rows_are_independent(student, inputs, order):
    """Permuting the batch permutes the hypotheses and scores: a row's beams never read another row."""
    case, s = inputs.case, inputs.settings
    b = case.src.shape[0]
    perm = (
        torch.roll(torch.arange(b), 1) if order is None else torch.tensor(order.sample(range(b), b))
    )
    state = inputs.state()
    model = build_model(student, case, state)[0]
    seqs, scores, _reply = beam_search(student, model, inputs)
    mask = None if case.src_mask is None else case.src_mask[perm]
    moved, moved_scores, _reply = beam_search(student, model, inputs, case.src[perm], mask)
    got, permuted = (
        hypotheses(seqs, s.eos_id, "beam_search"),
        hypotheses(moved, s.eos_id, "beam_search"),
    )
    if permuted != [got[i] for i in perm.tolist()]:
        fail(
            _(
                "beam_search gave {got}; with the rows in the order {order} it gave {permuted}"
            ).format(
                got=[list(h) for h in got],
                order=perm.tolist(),
                permuted=[list(h) for h in permuted],
            ),
            _(ROWS_HINT),
        )
    close(
        moved_scores,
        scores[perm],
        _("the scores with the batch permuted"),
        _(ROWS_HINT),
        dtype=case.dtype,
    )
    w = ExpectedTransformer(state, case.config)
    want = expected_beam_search(w, inputs)[0]
    if got != want:
        searched = Searched(inputs, got, scores, w, seqs.shape[1] - 1, model)
        fail(
            _("beam_search gave {got}, expected {want}").format(
                got=[list(h) for h in got], want=[list(h) for h in want]
            ),
            lambda: explain_beam(searched),
        )


@prop(C, points=1, examples=1, visible=False, clauses=(BeamSearch.MODE,))
@given(inputs=beam_cases(beam=(2, 3), mask=False, layers=(1, 1)))
@example(
    inputs=BeamInputs(
        fixed_case(128, b=2, me=3, vocab=5, n=1),
        BeamSettings(max_len=5, bos_id=1, eos_id=4, beam_size=3, length_penalty=1.2, eos_bias=1.0),
    )
)
def beam_search_runs_in_eval_and_restores_mode(student, inputs):
    """A model in train mode is searched in eval mode, without gradients, and left in train mode.

    With dropout=0.5 the result equals the dropout-free expected model's. A mistake of the search itself that
    another property names (the same result from the same model built in eval mode) is not charged again here."""
    case, s = inputs.case, inputs.settings
    state = inputs.state()
    model = build_model(student, case, state, dropout=0.5, train=True)[0]
    seqs, scores, reply = beam_search(student, model, inputs)
    expect_run_in_eval_and_restored(student, model, reply, "beam_search", search=True)
    got = hypotheses(seqs, s.eos_id, "beam_search")
    w = ExpectedTransformer(state, case.config)
    want = expected_beam_search(w, inputs)[0]
    if got != want:
        in_eval = build_model(student, case, state, dropout=0.5)[0]
        same = hypotheses(beam_search(student, in_eval, inputs)[0], s.eos_id, "beam_search") == got
        searched = Searched(inputs, got, scores, w, seqs.shape[1] - 1, model)
        if same and explain_beam(searched) != _(DEFAULT_HINT):
            return
        fail(
            _("beam_search of a model in train mode gave {got}, expected {want}").format(
                got=[list(h) for h in got], want=[list(h) for h in want]
            ),
            _(
                "call model.eval() while searching (dropout off), then restore the model's "
                "train/eval mode"
            ),
        )


@prop(C, points=1, examples=2, visible=False, clauses=(BeamSearch.SRC_MASK,))
@given(inputs=beam_cases(batch=(2, 3), mask=True))
@example(
    inputs=BeamInputs(
        fixed_case(68, b=2, me=4, vocab=6, n=1, lengths=[2, 4]),
        BeamSettings(max_len=5, bos_id=0, eos_id=3, beam_size=2, length_penalty=1.2, eos_bias=1.0),
    )
)
@example(
    inputs=BeamInputs(
        fixed_case(10, b=2, me=5, vocab=6, lengths=[2, 5]),
        BeamSettings(max_len=6, bos_id=1, eos_id=2, beam_size=3, length_penalty=0.0, eos_bias=0.0),
    )
)
def beam_search_with_src_mask_equals_expected(student, inputs):
    """With a padding src_mask, beam_search equals the expected model's (the mask serves encode and every decode)."""
    searched = search(student, inputs)
    got = searched.hypotheses
    want = expected_beam_search(searched.expected_model, inputs)[0]
    if got != want:
        fail(
            _("beam_search with src_mask gave {got}, expected {want}").format(
                got=[list(h) for h in got], want=[list(h) for h in want]
            ),
            lambda: explain_beam(searched),
        )
