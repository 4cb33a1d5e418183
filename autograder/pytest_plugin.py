"""pytest integration for students: one test per visible property, and a points table at the end.

`pytest` in the student bundle runs every visible property on exercises/ (or on the folder named by the
KIT_SUBMISSION environment variable: KIT_SUBMISSION=notebooks grades the notebooks). `pytest -m attention`
checks one component; `-k` filters by name. Each failure prints as one short block, the table comes last
(the bundle's pytest settings turn pytest's own long failure report off: `--tb=no -rN`).

The run's state (the self-check session, the outcomes in order) lives on one KitPlugin object that pytest
holds (config.pluginmanager, name "kit"); the table is written with the terminal reporter's public `write`.
A property blocked by a failing file it uses (check.SelfCheck.blame) is a skip: pending, not charged.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

from . import check_jobs, passes, registry, results
from .check import SelfCheck, integration_outcomes, integration_shares, pending_hidden_points
from .components import NAMES
from .i18n import LANGUAGES, _, set_language
from .suite import core

PLUGIN_NAME = "kit"


def submission_root(config) -> Path:
    env = os.environ.get("KIT_SUBMISSION")
    return Path(env).resolve() if env else Path(config.rootpath) / "exercises"


def properties():
    return [
        pytest.param(p, id=p.id, marks=getattr(pytest.mark, p.component))
        for p in registry.load(include_hidden=False)
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
    parser.addoption(
        "--jobs",
        type=int,
        default=None,
        help=_(
            "components checked at once, each in its own process (default: the cores; 1: all in this "
            "process, for debugging)"
        ),
    )


def pytest_configure(config):
    set_language(config.getoption("lang"))
    for name in NAMES:
        config.addinivalue_line("markers", _("{name}: properties of {name}.py").format(name=name))
    if not config.pluginmanager.has_plugin(PLUGIN_NAME):
        config.pluginmanager.register(KitPlugin(config), PLUGIN_NAME)


def _pytest_cli() -> bool:
    """Whether this process is pytest's own command (`pytest`, `python -m pytest`)."""
    launcher = Path(sys.argv[0])
    return launcher.name in ("pytest", "py.test") or launcher.parts[-2:] == (
        "pytest",
        "__main__.py",
    )


class KitPlugin:
    """One pytest run's self-check: the session on the submission and every outcome in the order run."""

    def __init__(self, config):
        self.config = config
        # each test's finished outcome, in the order reported
        self.outcomes: list[core.Outcome] = []
        self._session: SelfCheck | None = None
        # component -> its selected properties, in order; property id -> its outcome, finished with them
        self.selected: dict[str, list[core.Property]] = {}
        self.finished: dict[str, core.Outcome] = {}
        self.exitstatus: int | None = None  # the run's, once the session is finished

    @property
    def session(self) -> SelfCheck:
        if self._session is None:
            self._session = SelfCheck(submission_root(self.config))
        return self._session

    def pytest_collection_finish(self, session):
        """The selected properties start at once in forked workers (check_jobs.py), a property at a time; each
        test then takes its property's outcome, in the order pytest runs them."""
        chosen = [
            item.callspec.params["prop"]
            for item in session.items
            if "prop" in getattr(getattr(item, "callspec", None), "params", {})
        ]
        asked = self.config.getoption("jobs")
        jobs = check_jobs.default_jobs() if asked is None else max(1, asked)
        for p in chosen:
            self.selected.setdefault(p.component, []).append(p)
        if chosen:
            self.session.start(chosen, jobs)

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config):
        if self._session is None:
            return
        self._session.close()
        # With one job (`--jobs 1`, a one-core machine) the student's modules ran in this process: the
        # interpreter's teardown would run their atexit handlers (text after pytest's summary) and wait for their
        # non-daemon threads (a run that never ends). pytest's own CLI ends here instead, its summary written and
        # its exit status kept (`python -m autograder check` does the same: cli.main); never a pytest.main() called
        # from another program (a notebook's kernel) or an xdist worker.
        if (
            self._session.ran_student_code_here()
            and self.exitstatus is not None
            and not hasattr(config, "workerinput")
            and _pytest_cli()
        ):
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(int(self.exitstatus))

    def check(self, prop: core.Property) -> None:
        if prop.id not in self.finished:
            self.finish(prop)
        outcome = self.finished[prop.id]
        self.outcomes.append(outcome)
        if outcome.status == core.Status.BLOCKED:
            pytest.skip(results.outcome_text(outcome))
        if not outcome.passed:
            pytest.fail(results.outcome_text(outcome), pytrace=False)

    def finish(self, prop: core.Property) -> None:
        """At the first test of prop's component: the component's selected properties run (most of them
        already, in the workers), and the pipeline across them, once (passes.finish, as check.run_suite): the
        static point needs a passed behavioural property, and is blocked with the rest. Each of its tests
        then reports its finished outcome."""
        mine = self.selected.get(prop.component, [])
        if prop not in mine:  # a test pytest did not collect as one of the kit's properties
            mine = [prop]
        done = passes.finish([self.session.run(p) for p in mine], blame=self.session.blame)
        self.finished.update((o.property.id, o) for o in done)

    def pytest_sessionfinish(self, session, exitstatus):
        """A pending property is a skip, yet the run is not clean: a file it uses fails (as `check` exits 1)."""
        if exitstatus == pytest.ExitCode.OK and any(
            o.status == core.Status.BLOCKED for o in self.outcomes
        ):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        self.exitstatus = session.exitstatus

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter, exitstatus, config):
        if not self.outcomes:
            return
        from rich.console import Console
        from rich.text import Text

        ran = {o.property.component for o in self.outcomes}
        if not config.getoption("markexpr") and not config.getoption("keyword"):
            # the whole suite: a component whose self-check the bundle does not ship (release.GRADED_ONLY)
            # shows its points as decided at grading
            shipped = {p.component for p in core.REGISTRY.values()}
            ran |= {k for k in pending_hidden_points() if k not in shipped}
        pending = {k: v for k, v in pending_hidden_points().items() if k in ran}
        found, pending_integration = integration_outcomes(
            self.session.unblamed(self.outcomes), integration_shares(), ran
        )
        if pending_integration:
            pending[results.INTEGRATION] = pending_integration
        blocked = {c: self.session.blocked(c) for c in ran}
        rows = results.summarize(self.outcomes + found, pending, ran, blocked)
        text = io.StringIO()
        console = Console(file=text, force_terminal=terminalreporter.hasmarkup, width=110)
        # pytest's report is off: ours, one short block each
        if config.getoption("tbstyle", "auto") == "no":
            blocks = results.failure_blocks(self.outcomes)
            if blocks:
                terminalreporter.write_sep("=", _("failures"))
            for block in blocks:
                console.print(Text(block), highlight=False, soft_wrap=True)
        results.render_table(
            rows,
            title=_("points for {folder}/").format(folder=submission_root(config).name),
            console=console,
        )
        terminalreporter.write(text.getvalue())


@pytest.fixture(scope="session")
def self_check(request) -> KitPlugin:
    """This run's KitPlugin (named for the tests written before it knew dependencies)."""
    return request.config.pluginmanager.get_plugin(PLUGIN_NAME)


def check_property(prop: core.Property, kit: KitPlugin) -> None:
    kit.check(prop)
