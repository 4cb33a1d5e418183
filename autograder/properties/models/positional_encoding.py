"""The sinusoidal table on the checking side with its usual mistakes as flags: the closed form the exercise's
docstring states (so no answer), written with each slip a student makes in it, for the positional_encoding
diagnoses. The expected table itself is expected_values.sinusoidal."""

from __future__ import annotations

import enum

import torch

from ...i18n import N_
from ...suite.mistakes import Hints


class PeMistake(enum.Flag):
    """The usual mistakes in the sinusoidal table, one flag each."""

    NONE = 0
    SIN_COS_SWAPPED = enum.auto()  # even columns cos, odd sin
    COS_OWN_COLUMN = enum.auto()  # column j at 10000^(j/d): the cos of a pair at another frequency
    PAIR_INDEX = enum.auto()  # exponent i/d, not 2i/d
    MULTIPLIED = enum.auto()  # p * 10000^(2i/d), not p / 10000^(2i/d)
    ALL_SIN = enum.auto()
    # The tutorial loop `for i in range(0, d_model, 2)` with 10000 ** (2 * i / d_model): i already steps by 2, so
    # pair k runs at 10000^(4k/d).
    DOUBLED_EXPONENT = enum.auto()
    # The cos column's exponent shifted by two columns: cos(p / 10000 ** (2 * (i + 1) / d_model)), the next
    # pair's frequency.
    COS_NEXT_PAIR = enum.auto()
    BASE_1000 = enum.auto()
    POSITIONS_FROM_1 = enum.auto()


PE_HINTS = Hints(
    PeMistake,
    {
        PeMistake.SIN_COS_SWAPPED: N_(
            "sin and cos swapped: even columns (0, 2, ...) are sin, odd columns cos"
        ),
        PeMistake.COS_OWN_COLUMN: N_(
            "sin and cos of a pair at different frequencies: both columns 2i and "
            "2i+1 use the angle p / 10000^(2i/d_model), 2i being the even column"
        ),
        PeMistake.PAIR_INDEX: N_(
            "exponent i/d_model: it is 2i/d_model, with 2i the even column index "
            "(torch.arange(0, d_model, 2))"
        ),
        PeMistake.DOUBLED_EXPONENT: N_(
            "the exponent counts the pair index twice: in a loop `for i in range(0, d_model, 2)`, i is already 2i "
            "(the even column), so the angle is p / 10000 ** (i / d_model), not 10000 ** (2 * i / d_model)"
        ),
        PeMistake.COS_NEXT_PAIR: N_(
            "cos taken at the next pair's frequency: the cos column 2i+1 uses the same angle as the sin column "
            "2i, p / 10000^(2i/d_model), not the angle of the pair that starts at column 2i+2"
        ),
        PeMistake.DOUBLED_EXPONENT | PeMistake.COS_NEXT_PAIR: N_(
            "two tutorial slips at once: in a loop `for i in range(0, d_model, 2)`, i is already 2i, "
            "so the angle is p / 10000 ** (i / d_model), not 10000 ** (2 * i / d_model); and the cos "
            "in column i + 1 uses that same angle, not cos taken at the next pair's frequency"
        ),
        PeMistake.BASE_1000: N_("the base is 10000, not 1000"),
        PeMistake.MULTIPLIED: N_("multiplied by 10000^(2i/d_model): divide the position by it"),
        PeMistake.ALL_SIN: N_("every column is a sin: odd columns are cos"),
        PeMistake.POSITIONS_FROM_1: N_("positions start at 0: PE[0] = [0, 1, 0, 1, ...]"),
    },
)


def sinusoid_model(max_len, d, mistake=PeMistake.NONE):
    """The (max_len, d) table in float64 from the closed form, with `mistake`."""
    start = 1 if PeMistake.POSITIONS_FROM_1 in mistake else 0
    p = torch.arange(start, start + max_len, dtype=torch.float64)[:, None]
    cols = torch.arange(d, dtype=torch.float64)
    # per column: 2i/d (or i/d)
    expo = (cols // 2) / d if PeMistake.PAIR_INDEX in mistake else (2 * (cols // 2)) / d
    if PeMistake.DOUBLED_EXPONENT in mistake:
        expo = 2 * expo
    if PeMistake.COS_NEXT_PAIR in mistake:
        expo = expo + torch.where(cols % 2 == 1, 2.0, 0.0) / d
    if PeMistake.COS_OWN_COLUMN in mistake:
        expo = cols / d
    base = 1000.0 if PeMistake.BASE_1000 in mistake else 10000.0
    freq = base**expo if PeMistake.MULTIPLIED in mistake else base**-expo
    angle = p * freq
    even = cols % 2 == 0
    swapped = PeMistake.SIN_COS_SWAPPED in mistake
    first, second = (torch.cos, torch.sin) if swapped else (torch.sin, torch.cos)
    if PeMistake.ALL_SIN in mistake:
        second = torch.sin
    return torch.where(even, first(angle), second(angle))
