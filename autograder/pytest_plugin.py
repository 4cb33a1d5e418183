"""pytest integration for students: one test per visible property, and a points table at the end.

`pytest` in the student bundle runs every visible property on exercises/ (or on the folder named by the
KIT_SUBMISSION environment variable: KIT_SUBMISSION=notebooks grades the notebooks). `pytest -m attention`
checks one component; `-k` filters by name. Each failure prints as one short block, the table comes last
(the bundle's pytest settings turn pytest's own long failure report off: `--tb=no -rN`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from . import results
from .check import SelfCheck, integration_outcomes, integration_shares, pending_hidden_points
from .components import NAMES
from .i18n import LANGUAGES, _, set_language
from .properties import core

_OUTCOMES: list[core.Outcome] = []
_SESSION: list[SelfCheck] = []


def submission_root(config) -> Path:
    env = os.environ.get("KIT_SUBMISSION")
    return Path(env).resolve() if env else Path(config.rootpath) / "exercises"


def properties():
    return [
        pytest.param(p, id=p.id, marks=getattr(pytest.mark, p.component))
        for p in core.load(include_hidden=False)
    ]


def pytest_addoption(parser):
    parser.addoption(
        "--lang",
        choices=LANGUAGES,
        default=None,
        help=_(
            "the language of the failures and the points table (default: the course's, else the "
            "locale's; docs/i18n.md)"
        ),
    )


def pytest_configure(config):
    set_language(config.getoption("lang"))
    for name in NAMES:
        config.addinivalue_line("markers", _("{name}: properties of {name}.py").format(name=name))


@pytest.fixture(scope="session")
def self_check(request):
    """The self-check session on the submission."""
    if not _SESSION:
        _SESSION.append(SelfCheck(submission_root(request.config)))
    return _SESSION[0]


def check_property(prop: core.Property, session: SelfCheck) -> None:
    outcome = session.run(prop)
    _OUTCOMES.append(outcome)
    # The static point needs a passed behavioural property: the static test runs last in its component.
    core.require_behaviour([o for o in _OUTCOMES if o.property.component == prop.component])
    if not outcome.passed:
        pytest.fail(results.outcome_text(outcome), pytrace=False)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _OUTCOMES:
        return
    from rich.console import Console
    from rich.text import Text

    ran = {o.property.component for o in _OUTCOMES}
    if not config.getoption("markexpr") and not config.getoption("keyword"):
        # the whole suite: a component whose self-check the bundle does not ship (release.GRADED_ONLY) shows
        # its points as decided at grading
        shipped = {p.component for p in core.REGISTRY.values()}
        ran |= {k for k in pending_hidden_points() if k not in shipped}
    pending = {k: v for k, v in pending_hidden_points().items() if k in ran}
    found, pending_integration = integration_outcomes(_OUTCOMES, integration_shares(), ran)
    if pending_integration:
        pending[results.INTEGRATION] = pending_integration
    blocked = {c: _SESSION[0].blocked(c) for c in ran} if _SESSION else {}
    rows = results.summarize(_OUTCOMES + found, pending, ran, blocked)
    console = Console(
        file=terminalreporter._tw._file, force_terminal=terminalreporter.hasmarkup, width=110
    )
    if (
        config.getoption("tbstyle", "auto") == "no"
    ):  # pytest's report is off: ours, one short block each
        blocks = results.failure_blocks(_OUTCOMES)
        if blocks:
            terminalreporter.write_sep("=", _("failures"))
        for block in blocks:
            console.print(Text(block), highlight=False, soft_wrap=True)
    results.render_table(
        rows,
        title=_("points for {folder}/").format(folder=submission_root(config).name),
        console=console,
    )
