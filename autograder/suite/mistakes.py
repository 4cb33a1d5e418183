"""A mistake's one home (issue 36): a flag of a mistake model, declared once with the hint that names it.

A mistake model makes the usual mistakes on purpose when given their flags (`expected_multi_head(..., mistake=
MhaMistake.Q_K_SWAPPED)`); a diagnosis runs it and, when the model's output matches the student's, shows the flag's
declared hint. The declaration sits under the flag's enum:

    class PeMistake(enum.Flag): ...
    PE_HINTS = Hints(PeMistake, {PeMistake.ALL_SIN: N_("every column is a sin: odd columns are cos"), ...})

and a diagnosis's candidate is `(test, PE_HINTS(PeMistake.ALL_SIN))`: the hint's text lives in the declaration only
(English here as the msgid, Spanish in the catalog). A catalog bug names the flag it exhibits (`Bug(mistake=...)`),
and tests/test_mistakes.py checks the links both ways: every flag is declared with a hint and exhibited by a bug,
every bug's declared hint is among the hints its run shows.

A combination of flags that a diagnosis names (two slips at once) is declared like a single flag. A component may
word a mistake its own way (the NumPy warm-up says ddof=1 where add_norm says torch.var's unbiased=True): `worded`.

The order a diagnosis tries its mistakes is declared too (`order`, keyed by the component, or by the component and
the diagnosis where one has several, "training.loss"; where none is declared, every flag with a hint there, as
declared): a mistake added to the declaration is tried by the diagnoses that take their candidates from it
(`candidates(same, component=C)`, `tried(C)`) with no edit of theirs; what a case cannot show is left out by the
diagnosis (`without=`: a mask's mistakes where the case has no mask). What a diagnosis still names by hand is a
property's own evidence: at most two flags that its inputs alone can show (a permutation of positions shows only
a head split or merge without a transpose), and checks that have no mistake model (the wrong axis, weight and
bias, NaN); tests/test_mistakes.py holds them to that.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Mapping, Sequence

from ..i18n import _

# Every declaration, in import order: the test walks it (and imports every module that declares one).
DECLARED: list[Hints] = []


class Hints:
    """The declared hints of one enum's mistakes: flag (or combination) -> its msgid, and per component the ones
    that component words its own way."""

    def __init__(
        self,
        flags: type[enum.Flag],
        hints: Mapping[enum.Flag, str],
        worded: Mapping[str, Mapping[enum.Flag, str]] | None = None,
        order: Mapping[str, Sequence[enum.Flag]] | None = None,
    ):
        for flag in [*hints, *(f for own in (worded or {}).values() for f in own)]:
            if not isinstance(flag, flags) or not flag:
                raise TypeError(f"{flags.__name__}'s hints: {flag!r} is not one of its mistakes")
        self.flags = flags
        self.hints = dict(hints)
        self.worded = {c: dict(own) for c, own in (worded or {}).items()}
        self.order = {c: tuple(tried) for c, tried in (order or {}).items()}
        for component, tried in self.order.items():
            for flag in tried:
                self.msgid(flag, component)  # a flag tried in a component is named there
        DECLARED.append(self)

    def msgid(self, flag: enum.Flag, component: str | None = None) -> str:
        """The English text (the catalog's msgid) that names `flag` in `component`."""
        own = self.worded.get(component, {})
        if flag in own:
            return own[flag]
        if flag not in self.hints:
            raise KeyError(
                f"{flag!r} has no declared hint{f' in {component}' if component else ''}"
            )
        return self.hints[flag]

    def __call__(self, flag: enum.Flag, component: str | None = None) -> str:
        """The hint that names `flag`, in the student's language."""
        return _(self.msgid(flag, component))

    def tried(
        self, component: str | None = None, without: enum.Flag | None = None
    ) -> list[enum.Flag]:
        """The flags a diagnosis in `component` tries, in order: the component's declared order, else every flag
        with a hint there (the shared ones as declared, then its own); less every flag that shares a mistake with
        `without` (those the case cannot show, e.g. a mask's mistakes where the case has no mask)."""
        own = [f for f in self.worded.get(component, {}) if f not in self.hints]
        flags = self.order.get(component) or [*self.hints, *own]
        return [f for f in flags if not (without and f & without)]

    def candidates(
        self,
        same: Callable[[enum.Flag], bool],
        *flags: enum.Flag,
        component: str | None = None,
        without: enum.Flag | None = None,
    ):
        """A diagnosis's candidates, (test, hint), for `flags` (default: `tried(component, without)`): same(flag)
        runs the mistake model with the flag and says whether its output is the student's. checks.diagnose
        names the first that holds."""
        flags = flags or tuple(self.tried(component, without))
        return [(functools.partial(same, f), self(f, component)) for f in flags]

    def declared(self) -> list[tuple[str | None, enum.Flag, str]]:
        """(component or None for every one, flag, msgid) for each declaration."""
        out = [(None, f, h) for f, h in self.hints.items()]
        return out + [(c, f, h) for c, own in self.worded.items() for f, h in own.items()]


def declaration(flags: type[enum.Flag]) -> Hints:
    """The declared hints of the enum `flags` (its module imported: the declaration sits under the enum)."""
    found = [h for h in DECLARED if h.flags is flags]
    if len(found) != 1:
        raise LookupError(f"{flags.__name__}: {len(found)} declarations of its hints")
    return found[0]


def msgid(flag: enum.Flag, component: str | None = None) -> str:
    """The English text that names the mistake `flag` in `component`."""
    return declaration(type(flag)).msgid(flag, component)
