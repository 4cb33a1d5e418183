"""What a class's names may hide, said as problems of the class index (the page and the console show them)."""

from __future__ import annotations

import unicodedata

from ..i18n import _
from .identity import ClassIndex


def name_problems(index: ClassIndex) -> list[str]:
    """Students an LMS or a reader could take for one: the same name once case, accents' composition and
    spacing are set aside (case twins: two folders `Ana` and `ana`)."""
    seen: dict[str, list[str]] = {}
    for m in index.members:
        key = " ".join(unicodedata.normalize("NFKC", m.display).casefold().split())
        seen.setdefault(key, []).append(m.display)
    return [
        _(
            "{names}: these submissions have the same name but for case or spacing: check which student each is."
        ).format(names=", ".join(names))
        for names in seen.values()
        if len(names) > 1
    ]
