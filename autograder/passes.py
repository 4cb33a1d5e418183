"""The passes that turn outcomes as run into what a student reads: one pipeline, in one order, for every route
(`check`, the bundle's pytest, the judge's feedback and results.json, the notebooks' check cells), so that each
route gives a student the same words (issue 25).

1. names: a line of a module built from notebooks named by its notebook cell (check.submission_folder; the
   kernel names its cells in the text it prints).
2. words: the glossary sentence ("`dim_embedding` is `d_model` here") before the hint. Applied where every
   outcome is made (core.run_property), and again here after the names: idempotent.
3. require_behaviour: the scoring rule across a component (a static by-hand point needs a behavioural one; a
   forbidden scan voids the component).
4. rank: of a component's failures, the hint with the strongest evidence is the table's, and a weaker named
   cause that contradicts a directly tested one is dropped (issue 34).
5. blame: the self-check only (check.SelfCheck.blame): a failure while a file it uses fails is pending.

Tidying (temporary paths, memory addresses, each field's limit) is the judge's, in the grading process before an
outcome crosses to the scheduler (judge/grading_process.tidy): only there do paths of the judge's own folders
appear.
"""

from __future__ import annotations

from collections.abc import Callable

from .glossary import words as words  # the glossary pass, below the suite (passes.words to callers)
from .i18n import N_, _
from .suite import core

Pass = Callable[[core.Outcome], core.Outcome]


SEE_STRONGER = N_("see {property}: {hint}")


def rank(outcomes: list[core.Outcome]) -> list[core.Outcome]:
    """One true hint first (issue 34): of each component's failures (its integration re-runs apart), the one
    whose hint has the strongest evidence (core.Evidence) is the table's (results.strongest_failure); where
    its cause was tested on the student's code directly, a weaker named cause that says otherwise is dropped
    for it. In place; the same list."""
    from .results import strongest_failure

    # per component (its integration re-runs apart): a hint in one file never overrides another file's
    rows: dict[tuple[str, bool], list[core.Outcome]] = {}
    for o in outcomes:
        if not o.passed and o.status != core.Status.BLOCKED:
            rows.setdefault((o.property.component, o.property.integration), []).append(o)
    for failures in rows.values():
        top = strongest_failure(failures)
        if top is None or top.evidence < core.Evidence.DIRECT:
            continue
        for o in failures:
            if o is not top and o.evidence == core.Evidence.MODEL and o.hint != top.hint:
                o.hint = _(SEE_STRONGER).format(property=top.property.name, hint=top.hint)
    return outcomes


def finish(
    outcomes: list[core.Outcome], names: Pass | None = None, blame: Pass | None = None
) -> list[core.Outcome]:
    """The outcomes of one submission (a component's at least) through the passes, in order; a new list (the
    outcomes themselves may be changed in place)."""
    outcomes = [words(names(o) if names else o) for o in outcomes]
    outcomes = rank(core.require_behaviour(outcomes))
    return [blame(o) for o in outcomes] if blame else outcomes
