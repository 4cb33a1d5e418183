"""Greedy decoding's usual mistakes in the loop, one flag each, with the hints that name them. The loop that makes
them on purpose is the graded side's (this module's graded-only region: an answer, never shipped); the visible
properties name a mistake from the tokens alone (suite/model_runs.py). A flag's name is no answer."""

from __future__ import annotations

import enum
from types import SimpleNamespace

import torch

from ...i18n import N_
from ...suite.expected_values import expected_causal_mask
from ...suite.mistakes import Hints
from .transformer import ExpectedTransformer


class GreedyMistake(enum.Flag):
    """The usual mistakes in the greedy decoding loop, one flag each. (No causal mask in decode is none: every
    greedy property decodes with one layer, where the last position sees every token with or without it, so
    its model gave the right tokens and its hint could never show.)"""

    NONE = 0
    NO_STOP = enum.auto()  # goes on after every row has produced eos_id
    NO_PAD = enum.auto()  # a finished row does not keep eos_id
    ONE_STEP_MORE = enum.auto()  # max_len + 1 tokens
    ONE_STEP_LESS = enum.auto()
    FIRST_POSITION = enum.auto()  # the next token from position 0, not the last
    NO_SRC_MASK_IN_DECODE = enum.auto()


_NO_PAD = N_(
    "a finished row must keep eos_id: once a row has produced eos_id it holds eos_id after it"
)
_MAX_LEN = N_(
    "max_len counts the bos token: stop when ys has max_len tokens (while ys.size(1) < max_len)"
)
# In the order a diagnosis tries them (suite/model_runs.explain_greedy)
GREEDY_HINTS = Hints(
    GreedyMistake,
    {
        GreedyMistake.NO_STOP: N_(
            "decoding goes on after every row has produced eos_id: stop once every row has produced eos_id"
        ),
        GreedyMistake.NO_PAD: _NO_PAD,
        GreedyMistake.NO_STOP | GreedyMistake.NO_PAD: _NO_PAD,
        GreedyMistake.ONE_STEP_MORE: _MAX_LEN,
        GreedyMistake.ONE_STEP_LESS: _MAX_LEN,
        GreedyMistake.FIRST_POSITION: N_(
            "the next token comes from the last position: generator(decode(ys, ...)[:, -1]), not [:, 0]"
        ),
        GreedyMistake.NO_SRC_MASK_IN_DECODE: N_(
            "src_mask must reach decode too: model.decode(ys, memory, causal_mask(L), src_mask)"
        ),
    },
)


# The by-hand mistake models: the graded side's; None in the student bundle (suite/graded.py).
BY_HAND: SimpleNamespace | None = None


# >>> graded only: an answer, which `release` strips (suite/graded.py, docs/bundle.md)
def expected_greedy_decode(state, case, decoding, mistake=GreedyMistake.NONE):
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


BY_HAND = SimpleNamespace(expected_greedy_decode=expected_greedy_decode)
# <<< graded only
