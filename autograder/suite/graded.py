"""The graded side's by-hand mistake models, and where they stop.

A checking-side model module (properties/models/) keeps its by-hand mistake models (the component written out,
right or with a usual mistake made on purpose, so that a diagnosis can name the mistake whose output matches a
submission's) between the GRADED_ONLY markers, beside the flags and hints they make on purpose: one home for a
mistake (issue 36). They are answers, so `release` strips those regions (`strip`) and the student bundle never
holds them (issue 35, docs/bundle.md). Each such module sets `BY_HAND = None` before its region and the region's
namespace at its end: the graded side's models there, None in the bundle, whose verdicts never depend on them."""

from __future__ import annotations

import sys

from .checks import is_close

# A region opens on a line that starts with the first marker (a reason may follow) and closes on the second's.
GRADED_ONLY = ("# >>> graded only", "# <<< graded only")


def strip(text: str, where: str = "") -> str:
    """`text` without its graded-only regions (the markers' lines included). A region left open, or a marker
    inside another region, is refused: whatever `release` could not strip must not ship."""
    kept, inside = [], False
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        opens, closes = (line.lstrip().startswith(m) for m in GRADED_ONLY)
        if opens == inside and (opens or closes):
            raise ValueError(f"{where}:{number}: graded-only marker out of place: {line.strip()!r}")
        if opens or closes:
            inside = opens
        elif not inside:
            kept.append(line)
    if inside:
        raise ValueError(f"{where}: a graded-only region is never closed")
    return "".join(kept)


def as_in_the_bundle(set_attribute=setattr) -> None:
    """Run the loaded kit as the student bundle does: every module's by-hand models (`BY_HAND`, and the
    `mistake_models` a property module bound from it) set to None. For a test (which passes
    monkeypatch.setattr, to undo it) and benchmarks/bundle_diagnosis.py."""
    package = __package__.rsplit(".", 1)[0]
    for name, module in list(sys.modules.items()):
        if name.startswith(package + "."):
            for attribute in ("BY_HAND", "mistake_models"):
                if getattr(module, attribute, None) is not None:
                    set_attribute(module, attribute, None)


def matches(actual, expected, dtype=None) -> bool:
    """is_close, False where the expected value is None (a mistake model the student bundle does not have)."""
    return expected is not None and is_close(actual, expected, dtype)
