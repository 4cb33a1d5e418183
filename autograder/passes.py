"""The passes that turn outcomes as run into what a student reads: one pipeline, in one order, for every route
(`check`, the bundle's pytest, the judge's feedback and results.json, the notebooks' check cells), so that each
route gives a student the same words (issue 25). Each pass is applied once per outcome, at one point of each
route (issue 36): an outcome records the passes it went through (core.Outcome.through), and a second
application of any of them is an error (core.PassError), never a silent no-op.

Per outcome, where the route has its outcome as run (`made`):
1. names: a line of a module built from notebooks named by its notebook cell (check.submission_folder; the
   kernel names its cells in the text it prints).
2. words: the glossary sentence ("`dim_embedding` is `d_model` here") before the hint (glossary.words).
   Made where: check.SelfCheck.outcome_as_run (check, pytest, a notebook's self-check cell; in a forked
   worker too), the judge's grading process as it writes the section's records (after its own verdicts on
   the whole section: a probe, the kit refusal), the kernel's reference path.

Across a submission's outcomes, once they are all there (`finish`; a component's at least):
3. blame: the self-check only (check.SelfCheck.blame): a failure while a file it uses fails is pending, its own
   hint held back but for the glossary's sentence on what its message says. Each failure is blamed once: a
   failure as run first, and a failure the next pass makes (a passed property voided or refused) as it makes
   it.
4. require_behaviour: the scoring rule across a component (a static by-hand point needs a behavioural one; a
   forbidden scan voids the component).
5. rank: of a component's failures, the hint with the strongest evidence is the table's, and a weaker named
   cause that contradicts a directly tested one is dropped (issue 34).

Where finish runs once per route: check.run_suite over the whole run; the pytest plugin over each component
at its first test (pytest_plugin.KitPlugin.finish); judge/outputs.assemble over a student's records; the
kernel (a notebook has no point where a component is complete: its cells run one at a time, in any order)
over copies of the outcomes its cells have made so far, at each check cell.

Tidying (temporary paths, memory addresses, each field's limit) is the judge's, in the grading process before an
outcome crosses to the scheduler (judge/grading_process.tidy): only there do paths of the judge's own folders
appear.
"""

from __future__ import annotations

from collections.abc import Callable

from . import glossary
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


def names(o: core.Outcome, rename: Pass | None = None) -> core.Outcome:
    """The names pass: `rename` (a notebook route's, check.submission_folder), or none to apply."""
    o.through("names")
    return rename(o) if rename else o


def words(o: core.Outcome) -> core.Outcome:
    """The glossary pass (glossary.words): once per outcome."""
    return glossary.words(o.through("words"))


def made(o: core.Outcome, rename: Pass | None = None) -> core.Outcome:
    """The per-outcome passes, in order, on an outcome as run (names, then words): where a route makes it."""
    return words(names(o, rename))


def finish(outcomes: list[core.Outcome], blame: Pass | None = None) -> list[core.Outcome]:
    """The outcomes of one submission (a component's at least), each made (`made`) and not finished yet,
    through the passes across them, in order; once. A new list (the outcomes themselves may be changed in
    place)."""
    for o in outcomes:
        if "words" not in o.passes:
            raise core.PassError(f"{o.property.id}: finished before it was made (passes.made)")
    outcomes = [_blame(o, blame) for o in outcomes]
    passed = [o.passed for o in outcomes]
    outcomes = core.require_behaviour([o.through("require_behaviour") for o in outcomes])
    # a failure made here (a passed property voided, a static point refused) is blamed as it is made
    outcomes = [_blame(o, blame) if was and not o.passed else o for o, was in zip(outcomes, passed)]
    return rank([o.through("rank") for o in outcomes])


def _blame(o: core.Outcome, blame: Pass | None) -> core.Outcome:
    """A failure through the self-check's blame (a route without one, the judge's, has none); a passed
    outcome has nothing to blame."""
    if blame is None or o.passed:
        return o
    return blame(o.through("blame"))
