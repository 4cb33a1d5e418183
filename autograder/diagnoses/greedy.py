"""Greedy decoding by hand, with each usual mistake in the loop as a flag (graded side, never shipped): the
hidden properties' expected tokens and the diagnoses that name the mistake whose tokens match a submission's."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from ..properties.models.greedy import GreedyMistake
from ..properties.models.transformer import ExpectedTransformer
from ..suite.expected_values import expected_causal_mask

if TYPE_CHECKING:
    from ..suite.decoding import Decoding, DecodingCase


def expected_greedy_decode(
    state, case: DecodingCase, decoding: Decoding, mistake=GreedyMistake.NONE
):
    """Greedy decoding with the torch-assembled model, optionally with `mistake` made on purpose in the loop."""
    model = ExpectedTransformer(state, case.config)
    steps = (
        decoding.max_len
        + (GreedyMistake.ONE_STEP_MORE in mistake)
        - (GreedyMistake.ONE_STEP_LESS in mistake)
    )
    position = 0 if GreedyMistake.FIRST_POSITION in mistake else -1
    src_mask = decoding.src_mask
    decode_mask = None if GreedyMistake.NO_SRC_MASK_IN_DECODE in mistake else src_mask
    memory = model.encode(case.src, src_mask)
    ys = torch.full((case.src.shape[0], 1), decoding.bos_id, dtype=torch.long)
    done = torch.zeros(case.src.shape[0], dtype=torch.bool)
    while ys.shape[1] < steps and not (GreedyMistake.NO_STOP not in mistake and bool(done.all())):
        tm = expected_causal_mask(ys.shape[1])
        nxt = model.generator(model.decode(ys, memory, tm, decode_mask)[:, position]).argmax(-1)
        if GreedyMistake.NO_PAD not in mistake:
            nxt = torch.where(done, torch.full_like(nxt, decoding.eos_id), nxt)
        ys = torch.cat([ys, nxt[:, None]], dim=1)
        done |= nxt == decoding.eos_id
    return ys
