"""pytest integration for students: one test per visible property, and a points table at the end.

`pytest` in the student bundle runs every visible property on exercises/ (or on the folder named by the
KIT_SUBMISSION environment variable). `pytest -m attention` checks one component; `-k` filters by name.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from . import results
from .check import pending_hidden_points
from .components import NAMES
from .properties import core
from .target import InProcessTarget

_OUTCOMES: list[core.Outcome] = []


def submission_root(config) -> Path:
    env = os.environ.get("KIT_SUBMISSION")
    return Path(env).resolve() if env else Path(config.rootpath) / "exercises"


def properties():
    return [pytest.param(p, id=p.id, marks=getattr(pytest.mark, p.component)) for p in core.load(include_hidden=False)]


def pytest_configure(config):
    for name in NAMES:
        config.addinivalue_line("markers", f"{name}: properties of {name}.py")


@pytest.fixture(scope="session")
def kit_target(request):
    return InProcessTarget(submission_root(request.config))


def check_property(prop: core.Property, target) -> None:
    outcome = core.run_property(prop, target)
    _OUTCOMES.append(outcome)
    # The static point needs a passed behavioural property: the static test runs last in its component.
    core.require_behaviour([o for o in _OUTCOMES if o.property.component == prop.component])
    if not outcome.passed:
        pytest.fail(results.outcome_text(outcome), pytrace=False)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _OUTCOMES:
        return
    from rich.console import Console

    ran = {o.property.component for o in _OUTCOMES}
    pending = {k: v for k, v in pending_hidden_points().items() if k in ran}
    rows = results.summarize(_OUTCOMES, pending, ran)
    console = Console(file=terminalreporter._tw._file, force_terminal=terminalreporter.hasmarkup, width=110)
    results.render_table(rows, title=f"points for {submission_root(config).name}/", console=console)
