"""The self-check: run the property suite in-process on a submission folder and report.

Unlike the judge, the self-check runs each component with the student's own dependencies (the student has
no reference). So it knows the dependency order (components.py `deps`): when a component's dependencies
fail in the student's files, each of its failing properties and its table row say so first, naming the
file, the component's own hints are held back (they would diagnose the dependency's bug as this one's), and
those failures are not charged: they are pending (Status.BLOCKED), so that check's points never fall below
grade's for the component's own code (docs/selfcheck.md).
A dependency that was not selected (`pytest -m multi_head`) has its visible properties run quietly first.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
from dataclasses import replace
from importlib import resources
from pathlib import Path

from . import KIT, check_jobs, glossary, passes, registry, results
from .components import NAMES, get
from .i18n import _
from .student_code import InProcessStudentCode, StopsAtLoops
from .suite import core
from .timing import DEFAULT_TIMEOUT


def _bundle_numbers(name: str) -> dict:
    """A json file of numbers shipped in a student bundle beside this module, or {} (the instructor's kit)."""
    try:
        text = resources.files("autograder").joinpath(name).read_text()
    except (FileNotFoundError, OSError):
        return {}
    return json.loads(text)


def pending_hidden_points() -> dict[str, float]:
    """Hidden points per component, as recorded in a student bundle (the hidden properties themselves are not)."""
    return {k: float(v) for k, v in _bundle_numbers("hidden_points.json").items()}


# The instructor's kit has the judge beside this file; the student bundle has not. Decided by the folder, not
# by an import: an editable install of the kit in the same environment would lend the bundle its judge.
INSTRUCTOR_KIT = (KIT / "autograder" / "judge").is_dir()


def integration_shares(components=None) -> dict[str, float]:
    """Property id -> points of its integration re-run (judge/sections.py decides; a bundle ships the numbers),
    of `components` or all (a component's shares come from its own properties: `check --component mask` need
    not import the other twelve components' modules, ~0.13 s).

    The judge re-runs these properties with the student's own files, which is what the self-check does
    anyway, so their outcomes here are their integration verdicts."""
    if not INSTRUCTOR_KIT:  # the student bundle: the numbers recorded at release
        return {k: float(v) for k, v in _bundle_numbers("integration_points.json").items()}
    from .judge.sections import integration_props

    return {
        pid: points
        for specs in integration_props(registry.load(True, components)).values()
        for pid, points in specs
    }


def integration_outcomes(
    outcomes: list[core.Outcome], shares: dict[str, float], ran
) -> tuple[list, float]:
    """(the integration outcomes of this run, integration points of the components in `ran` not run here)."""
    by_id = {o.property.id: o for o in outcomes}
    found, pending = [], 0.0
    for pid, points in shares.items():
        # a property not registered here belongs to a component whose modules this run did not load: not ran
        p = core.REGISTRY.get(pid)
        if p is None or p.component not in ran:
            continue
        o = by_id.get(pid)
        if o is None:
            pending += points
            continue
        found.append(replace(o, property=core.integration_rerun(o.property, points)))
    return found, pending


_FRAME_FILE = re.compile(r"^\s*(\w+)\.py, \w+ \d+")  # "line", "línea": a frame in either language


def _innermost_file(detail: str) -> str:
    files = [m.group(1) for line in detail.splitlines() if (m := _FRAME_FILE.match(line))]
    return files[-1] if files else ""


class SelfCheck:
    """Runs properties on one submission in this process and remembers every outcome, so that a dependent
    component can be told when the files it uses fail."""

    def __init__(self, path: Path, timeout: float = DEFAULT_TIMEOUT):
        self.path = Path(path)
        folder, self.rename, self.files = submission_folder(self.path)
        self.student = StopsAtLoops(
            InProcessStudentCode(folder, label=self.path.name, timeout=timeout)
        )
        self.raw: dict[str, core.Outcome] = {}  # property id -> outcome as run, reported or quiet
        self.folder, self.scan_refusals = folder, {}
        self.jobs: check_jobs.Jobs | None = None

    def start(self, properties: list[core.Property], jobs: int) -> None:
        """Run these properties in `jobs` forked workers from now on (check_jobs.py); `run` still hands their
        outcomes over in its callers' order. One worker, or one property, runs here: a fork would only add
        its cost."""
        if jobs > 1 and check_jobs.can_fork() and len(properties) > 1:
            self.jobs = check_jobs.Jobs(self, jobs)
            self.jobs.submit(properties)

    def close(self) -> None:
        """End the workers, if any (the run is over, or interrupted)."""
        if self.jobs is not None:
            self.jobs.close()
            self.jobs = None

    def ran_student_code_here(self) -> bool:
        """Whether this process imported a module of the submission (one job, or a property run again here):
        the student's atexit handlers and threads are then this process's own."""
        package = self.student.executor.package + "."
        return any(name.startswith(package) for name in list(sys.modules))

    def run(self, p: core.Property) -> core.Outcome:
        """p's outcome as run and made (passes.made), not finished: the caller finishes it with the rest of its
        component (passes.finish, with blame=self.blame). Run once: the same outcome again after."""
        outcome = self.raw.get(p.id) or self._outcome_of(p)
        self.raw[p.id] = outcome
        return outcome

    def _outcome_of(self, p: core.Property) -> core.Outcome:
        if self.jobs is not None and self.jobs.covers(p):
            return self.jobs.outcome(p)
        return self.outcome_as_run(p)

    def outcome_as_run(self, p: core.Property) -> core.Outcome:
        """The property run on the student's code, here or in a worker (check_jobs.py), made (names and
        words), before blame."""
        return self.made(self.refuse_by_the_scan(core.run_property(p, self.student)))

    def made(self, o: core.Outcome) -> core.Outcome:
        """The per-outcome passes (passes.made) on an outcome of this submission as run: its notebook cells
        named, the glossary's sentence."""
        return passes.made(o, self.rename)

    def refuse_by_the_scan(self, o: core.Outcome) -> core.Outcome:
        """grade awards nothing to a component with no static by-hand property whose file, or a helper it loads,
        names the kit itself or tampers (rules.static_scan.scan_refusal); nor does check, with the same
        sentence as grade (judge/grading_process.refuse_by_the_scan). A component with a static by-hand
        property is voided by its scan already (core.require_behaviour)."""
        from .rules.static_scan import scan_refusal

        component = o.property.component
        if not o.passed or any(
            core.is_static(q) for q in core.REGISTRY.values() if q.component == component
        ):
            return o
        if component not in self.scan_refusals:
            modules = [f.stem for f in self.folder.glob("*.py")]
            path = lambda name: self.folder / f"{name}.py"  # noqa: E731
            self.scan_refusals[component] = scan_refusal(
                component,
                lambda name: path(name).read_text() if path(name).is_file() else None,
                modules,
            )
        refused = self.scan_refusals[component]
        return replace(o, status=core.Status.FORBIDDEN, message=refused, hint="") if refused else o

    def _run_quietly(self, component: str) -> None:
        """The visible properties of a dependency not run yet (`pytest -m multi_head` selects no attention
        property): their verdicts are needed, not shown. Cost: the dependency's suite, once per run, and only
        once the component has a failure to explain (blocked): `check --component kv_cache` on working files
        spent 1.9 s of its 4.0 s of CPU running its nine dependencies' suites for no sentence."""
        for p in registry.load(include_hidden=False, components=[component]):
            if p.id not in self.raw:
                self.raw[p.id] = self._outcome_of(p)

    def unblamed(self, outcomes: list[core.Outcome]) -> list[core.Outcome]:
        """The outcomes as run (before blame), in the same order."""
        return [self.raw.get(o.property.id, o) for o in outcomes]

    def failing_dependencies(self, component: str) -> dict[str, int]:
        """The student's dependency files that fail on their own (not because of a file they use in turn):
        file stem -> failing properties."""
        deps = get(component).deps
        failing = {
            d: sum(1 for o in self.raw.values() if o.property.component == d and not o.passed)
            for d in deps
        }
        failing = {d: n for d, n in failing.items() if n}
        return {d: n for d, n in failing.items() if not any(x in failing for x in get(d).deps)}

    def blocked(self, component: str) -> str:
        """The sentence naming the student's failing dependency files, said where a property of `component`
        failed (a component whose properties all pass has nothing to explain); "" otherwise."""
        if all(o.passed for o in self.raw.values() if o.property.component == component):
            return ""
        if self.jobs is not None:  # the dependencies' suites at once, in the workers
            deps = get(component).deps
            self.jobs.submit(registry.load(include_hidden=False, components=deps) if deps else [])
        for dep in get(component).deps:
            self._run_quietly(dep)
        failing = self.failing_dependencies(component)
        return results.dependency_sentence(component, failing, self.files) if failing else ""

    def voided(self, component: str) -> bool:
        """Its by-hand scan found forbidden: the component earns nothing whatever its dependencies do
        (core.require_behaviour voids its passed properties), so nothing of it is pending."""
        return any(
            o.property.component == component
            and core.is_static(o.property)
            and o.status == core.Status.FORBIDDEN
            for o in self.raw.values()
        )

    def blame(self, o: core.Outcome) -> core.Outcome:
        """A failure of a component whose dependencies fail is not charged: it becomes BLOCKED (pending, its
        points neither earned nor lost), its message naming the failing file first, its own hint held back
        (it would diagnose the dependency's bug as this one's). `grade` runs each component with the
        reference's files, so a charge here would be a second deduction for the dependency's one mistake.
        Charged still, with the sentence first: a failure plainly its own, whatever the files it uses do:
        its code not written yet (NotImplementedError raised in its own file), or what its by-hand scan found
        in its own file (tampering voids the whole component). Once per failure (passes.finish)."""
        if o.passed:
            return o
        sentence = self.blocked(o.property.component)
        if not sentence:
            return o
        if own_mistake(o) or self.voided(o.property.component):
            return replace(o, message=results.after(sentence, o.message))
        # its own hint held back, the glossary's sentence on what it says kept (words ran where it was made)
        message = results.after(sentence, o.message)
        return replace(
            o, status=core.Status.BLOCKED, message=message, hint=glossary.explain(message)
        )


def own_mistake(o: core.Outcome) -> bool:
    """A failure that the component's own file causes whatever its dependencies do (SelfCheck.blame)."""
    if o.status == core.Status.NOT_IMPLEMENTED:
        return _innermost_file(o.detail) in ("", o.property.component)
    if not core.is_static(o.property):
        return False
    # the scan of its own file: what it found (a failed check) or tampering (forbidden), not the refusal that
    # follows its behavioural properties (core.require_behaviour), nor an import that fails in a dependency
    refusal = _(core.NO_BEHAVIOUR).format(component=o.property.component)
    return o.status in (core.Status.FAILED, core.Status.FORBIDDEN) and o.message != refusal


def submission_folder(path: Path):
    """(folder of <component>.py files, outcome renamer, {component: the file's name for the student}).

    A folder of notebooks (the bundle's notebooks/, or nbgrader's <component>.ipynb) becomes their modules in a
    temporary folder, and the renamer turns a `attention.py, line 12` in what a student reads into the notebook's
    cell."""
    from .notebooks import cells

    path = Path(path)
    if any((path / f"{n}.py").is_file() for n in NAMES) or not any(path.glob("*.ipynb")):
        return path, lambda o: o, {}
    folder = Path(tempfile.mkdtemp(prefix="kit-notebooks-"))
    _, places = cells.submission_from_notebooks(path, folder, NAMES, with_places=True)

    def rename(o: core.Outcome) -> core.Outcome:
        if o.passed:
            return o
        return replace(
            o,
            message=cells.name_cells(o.message, places),
            detail=cells.name_cells(o.detail, places),
        )

    return folder, rename, {name: notebook for name, (notebook, _) in places.items()}


def run_suite(
    path: Path,
    components=None,
    include_hidden: bool = True,
    progress=None,
    blocked: dict[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    jobs: int = 1,
):
    """(outcomes, pending points per row) for the submission at `path`, the integration outcomes last.
    blocked, if given, is filled with each component's dependency sentence (empty when its files pass);
    `timeout`: CPU seconds per call, as the judge's --timeout (autograder/timing.py); `jobs`: components
    checked at once in forked workers (check_jobs.py), the same outcomes as 1."""
    session = SelfCheck(Path(path), timeout)
    try:
        return _run_suite(session, components, include_hidden, progress, blocked, jobs)
    finally:
        session.close()


def _run_suite(session, components, include_hidden, progress, blocked, jobs):
    properties = registry.load(include_hidden, components)
    has_hidden = any(not p.visible for p in core.REGISTRY.values())
    pending = {} if has_hidden and include_hidden else pending_hidden_points()
    if components:
        pending = {k: v for k, v in pending.items() if k in components}
    session.start(properties, jobs)
    # a component whose self-check the bundle does not ship (release.GRADED_ONLY) has only pending points
    ran = {p.component for p in properties} | set(pending)
    # an integration re-run is the judge's verdict on the student's own files together: never blocked.
    # Known before the first outcome: the parent works it out while its workers run
    shares = integration_shares(sorted(ran) if components else None)
    outcomes = []
    for p in properties:
        outcomes.append(session.run(p))
        if progress is not None:
            progress(p)
    # the pipeline across the run's outcomes (passes.finish), once: a static point refused because every
    # behavioural property is blocked is blocked too
    outcomes = passes.finish(outcomes, blame=session.blame)
    found, pending_integration = integration_outcomes(session.unblamed(outcomes), shares, ran)
    if pending_integration:
        pending[results.INTEGRATION] = pending_integration
    if blocked is not None:
        blocked.update({c: session.blocked(c) for c in ran})
    return outcomes + found, pending


def main(args) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn
    from rich.text import Text

    console = Console()
    if not Path(args.path).is_dir():  # a mistyped folder: one line, not a missing file per property
        console.print(
            Text(_("no such folder: {path}").format(path=args.path), style="bold red"),
            highlight=False,
            soft_wrap=True,
        )
        return 2
    components = [args.component] if args.component else None
    start, blocked = time.perf_counter(), {}
    columns = (
        SpinnerColumn(),
        TextColumn(_("checking {folder}/").format(folder=Path(args.path).name), markup=False),
        BarColumn(),
        TextColumn("{task.description}", markup=False),
    )
    with Progress(*columns, transient=True, console=console) as bar:
        task = bar.add_task("", total=None)
        outcomes, pending = run_suite(
            args.path,
            components,
            not args.no_hidden,
            lambda p: bar.update(task, advance=1, description=p.id),
            blocked,
            jobs=_jobs(getattr(args, "jobs", None)),
        )
    elapsed = time.perf_counter() - start
    rows = results.summarize(outcomes, pending, components, blocked)
    own = [o for o in outcomes if results.row_of(o) != results.INTEGRATION]  # each failure once
    if args.verbose:
        for o in own:
            if not o.passed:
                console.rule(Text(o.property.id))
                console.print(Text(results.outcome_text(o)), highlight=False)
    else:
        for block in results.failure_blocks(own):
            console.print(Text(block), highlight=False, soft_wrap=True)
    results.render_table(
        rows,
        title=_("{folder}: {seconds} s").format(
            folder=Path(args.path).name, seconds=f"{elapsed:.1f}"
        ),
        console=console,
    )
    if args.json:
        results.write_json(results.gradescope(outcomes, elapsed), Path(args.json))
    # Pending points (hidden, integration not run) are printed, never a failure: 0 when all that ran passed.
    return 0 if all(o.passed for o in outcomes) else 1


def _jobs(asked: int | None) -> int:
    """--jobs: as asked (at least 1), or a worker per core."""
    return check_jobs.default_jobs() if asked is None else max(1, asked)
