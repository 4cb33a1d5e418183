"""How a hint knows its cause (issue 34): a hint is a string that may carry its evidence. Below core and
error_hints, which both mark hints with it."""

from __future__ import annotations

from enum import IntEnum


class Evidence(IntEnum):
    """How a hint knows its cause (issue 34): the table shows, of a component's failures, the hint with the
    strongest evidence, and a weaker named cause that disagrees with it is dropped (passes.rank)."""

    NONE = 0  # the property's recipe, or a guess: names no cause
    MODEL = 1  # a mistake model reproduces the student's output on this input
    DIRECT = 2  # the cause tested on the student's own code (rebuilt, called again, its error's own words)


class Hint(str):
    """A hint with the evidence behind it (core.Evidence): what diagnose returns for a cause it found."""

    evidence: Evidence = Evidence.NONE


def named(text: str, evidence: Evidence) -> str:
    """`text` marked as a hint with `evidence` (kept: a text that already says more keeps its own)."""
    if not text or getattr(text, "evidence", Evidence.NONE) >= evidence:
        return text
    hint = Hint(text)
    hint.evidence = evidence
    return hint
