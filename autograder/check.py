"""The self-check: run the property suite in-process on a submission folder and report."""
from __future__ import annotations

import json
import time
from importlib import resources
from pathlib import Path

from . import results
from .properties import core
from .target import DEFAULT_TIMEOUT, InProcessTarget


def pending_hidden_points() -> dict[str, float]:
    """Hidden points per component, as recorded in a student bundle (the hidden properties themselves are not)."""
    try:
        text = resources.files("autograder").joinpath("hidden_points.json").read_text()
    except (FileNotFoundError, OSError):
        return {}
    return {k: float(v) for k, v in json.loads(text).items()}


def run_suite(path: Path, components=None, include_hidden: bool = True, progress=None,
              timeout: float = DEFAULT_TIMEOUT):
    """(outcomes, pending hidden points per component) for the submission at `path`; `timeout`: CPU seconds per
    call, as the judge's --timeout (autograder/timing.py)."""
    properties = core.load(include_hidden, components)
    has_hidden = any(not p.visible for p in core.REGISTRY.values())
    pending = {} if has_hidden and include_hidden else pending_hidden_points()
    if components:
        pending = {k: v for k, v in pending.items() if k in components}
    target = InProcessTarget(Path(path), timeout=timeout)
    outcomes = []
    for p in properties:
        outcomes.append(core.run_property(p, target))
        if progress is not None:
            progress(p)
    return outcomes, pending


def main(args) -> int:
    from rich.console import Console
    from rich.progress import Progress

    console = Console()
    components = [args.component] if args.component else None
    start = time.perf_counter()
    with Progress(transient=True, console=console) as bar:
        task = bar.add_task(f"checking {args.path}", total=None)
        outcomes, pending = run_suite(args.path, components, not args.no_hidden,
                                      lambda p: bar.update(task, advance=1, description=p.id))
    elapsed = time.perf_counter() - start
    rows = results.summarize(outcomes, pending, components)
    if args.verbose:
        for o in outcomes:
            if not o.passed:
                console.rule(o.property.id)
                console.print(results.outcome_text(o), markup=False, highlight=False)
    results.render_table(rows, title=f"{Path(args.path).name}: {elapsed:.1f} s", console=console)
    if args.json:
        results.write_json(results.gradescope(outcomes, elapsed), Path(args.json))
    full = all(o.passed for o in outcomes) and not any(pending.values())
    return 0 if full else 1
