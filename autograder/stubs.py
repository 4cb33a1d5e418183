"""Generate the student stubs (exercises/) from the reference (solutions/).

Each region between `### BEGIN SOLUTION` and `### END SOLUTION` becomes `raise NotImplementedError`, at the
region's indentation; everything else (imports, signatures, docstrings, shapes) is kept as written. This is
nbgrader's own convention, so the same markers serve `nbgrader generate_assignment`.
"""

from __future__ import annotations

import re
from pathlib import Path

from . import KIT
from .components import COMPONENTS

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
STUB = "# YOUR CODE HERE\n{indent}raise NotImplementedError"
_REGION = re.compile(
    rf"^([ \t]*){re.escape(BEGIN)}[^\n]*\n.*?^[ \t]*{re.escape(END)}[^\n]*\n", re.S | re.M
)

SOLUTIONS, EXERCISES = KIT / "solutions", KIT / "exercises"


def strip_solutions(source: str) -> str:
    """The stub text of one solution file."""
    if source.count(BEGIN) != source.count(END):
        raise ValueError(
            f"unbalanced markers: {source.count(BEGIN)} {BEGIN!r} vs {source.count(END)} {END!r}"
        )
    return _REGION.sub(lambda m: m.group(1) + STUB.format(indent=m.group(1)) + "\n", source)


def solution_regions(source: str) -> list[str]:
    """The code inside each solution region (for tests and notebooks)."""
    return [m.group(0) for m in _REGION.finditer(source)]


# exercises/__init__.py: solutions/'s own says "Reference solutions", which is not true where it ships.
PACKAGE_DOC = (
    '"""Your Transformer exercises, one module per component: replace each `raise NotImplementedError` '
    "with your code.\n\nCheck them with `pytest` (or `python -m autograder check exercises`) from the "
    'folder above.\n"""\n'
)


def generate(solutions: Path = SOLUTIONS) -> dict[str, str]:
    """File name -> stub text, for every component plus the package marker."""
    files = {"__init__.py": PACKAGE_DOC}
    for c in COMPONENTS:
        files[c.filename] = strip_solutions((solutions / c.filename).read_text())
    return files


def write(dest: Path = EXERCISES, solutions: Path = SOLUTIONS) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in generate(solutions).items():
        path = dest / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            written.append(path)
    return written


def drift(dest: Path = EXERCISES, solutions: Path = SOLUTIONS) -> list[str]:
    """Names of the files in `dest` that differ from what the generator makes (empty when in sync)."""
    expected = generate(solutions)
    actual = {p.name for p in dest.glob("*.py")}
    out = [
        n
        for n, text in expected.items()
        if not (dest / n).is_file() or (dest / n).read_text() != text
    ]
    return sorted(out + sorted(actual - set(expected)))
