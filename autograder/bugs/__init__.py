"""A catalog of realistic student mistakes, each a small edit to the reference solution.

Instructor-only (it quotes the solutions; the student bundle leaves it out). The kit's own tests check that every
bug loses points in its own component and that a failing property's hint names it; the judge's sample class
and benchmark draw buggy submissions from it.
"""

from __future__ import annotations

import enum
import importlib
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..components import NAMES
from ..suite import mistakes


@dataclass(frozen=True)
class Bug:
    component: str
    name: str  # short id, e.g. "softmax_wrong_axis"
    description: str  # what the student did, in a student's words
    find: str  # exact text in solutions/<component>.py (must occur once)
    replace: str
    # A fragment (case-insensitive) of the hint that must name this bug, where the checker has no mistake model
    # of it; with one, the bug names the model's flag instead (`mistake`) and the hint is the flag's declared one
    fragment: str = ""
    # The self-check must show it: a visible property's hint names it, not only a hidden one's
    caught_visibly: bool = False
    # One mistake, one deduction: a slip that cuts across a function (its dtype, the order of a returned tuple,
    # a missing attribute) fails this one property that owns it, and no other that reads the result
    one_deduction: str = ""
    # The mistake this bug exhibits (a flag of a mistake model: suite/mistakes.py), when the checker has one: its
    # declared hint is the one a failing property must show for this bug (tests/test_mistakes.py)
    mistake: enum.Flag | None = None

    def __post_init__(self):
        if self.fragment and self.mistake is not None:
            raise ValueError(
                f"{self.id}: a bug names its mistake's flag or a hint fragment, not both"
            )

    @property
    def hint(self) -> str:
        """What a failing property's hint must contain (case-insensitive) for this bug: the declared hint of its
        mistake up to its first placeholder, or its fragment."""
        if self.mistake is None:
            return self.fragment
        return mistakes.msgid(self.mistake, self.component).split("{")[0]

    @property
    def id(self) -> str:
        return f"{self.component}:{self.name}"

    def apply(self, source: str) -> str:
        count = source.count(self.find)
        if count != 1:
            raise ValueError(
                f"{self.id}: the text to replace occurs {count} times in {self.component}.py"
            )
        return source.replace(self.find, self.replace)


def catalog() -> list[Bug]:
    """Every bug, in component order (one module per component, found by its name: BUGS = [...])."""
    return [bug for name in NAMES for bug in importlib.import_module(f"{__name__}.{name}").BUGS]


def make_submission(bug: Bug, solutions: Path, dest: Path) -> Path:
    """Copy the reference to `dest` with this one bug planted."""
    shutil.copytree(solutions, dest, ignore=shutil.ignore_patterns("__pycache__"))
    path = dest / f"{bug.component}.py"
    path.write_text(bug.apply(path.read_text()))
    return dest
