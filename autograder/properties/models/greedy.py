"""Greedy decoding's usual mistakes in the loop, one flag each, with the hints that name them. The loop that makes
them on purpose is the graded side's (autograder/diagnoses/greedy.py: an answer, never shipped); the visible
properties name a mistake from the tokens alone (suite/model_runs.py). A flag's name is no answer."""

from __future__ import annotations

import enum

from ...i18n import N_
from ...suite.mistakes import Hints


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
