"""Where the visible properties reach the graded side's by-hand oracles (autograder/oracles/), which the student
bundle does not ship: `oracle(name)` is the module there, or None in the bundle (docs/bundle.md)."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from .checks import is_close


def oracle(name: str) -> ModuleType | None:
    """autograder.oracles.<name>, or None where the package is absent (the student bundle). Any other import
    error is the kit's own and is raised."""
    package = __package__.rsplit(".", 1)[0]
    # Only the oracles beside this package: an instructor's kit installed in the same environment (an editable
    # install finds any autograder.* module) must not lend the student bundle its own.
    if not (Path(__file__).resolve().parent.parent / "oracles").is_dir():
        return None
    try:
        return importlib.import_module(f"{package}.oracles.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"{package}.oracles":
            raise
        return None


def matches(actual, expected, dtype=None) -> bool:
    """is_close, False where the expected value is None (a mistake model the student bundle does not have)."""
    return expected is not None and is_close(actual, expected, dtype)
