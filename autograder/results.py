"""Outcomes into reports: per-component summaries, the terminal table, Gradescope's results.json."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .components import BY_NAME, NAMES
from .glossary import (
    after as after,  # beside the glossary pass that needs it (results.after to callers)
)
from .i18n import N_, _, ngettext

# annotations only: the class report reads ROWS and the texts without importing torch (~1.5 s)
if TYPE_CHECKING:
    from .suite.core import Outcome

HIDDEN_VISIBILITY = "after_due_date"  # Gradescope: hidden results show once the due date passes
# The integration share (a few properties of each dependent component re-run with the student's own
# dependencies) is its own row and column, so that each component's points depend on that component alone.
INTEGRATION = "integration"
INTEGRATION_TITLE = N_("your pieces together")
# the row's name in the table, where the others are file names
INTEGRATION_LABEL = N_("integration")
ROWS: tuple[str, ...] = (*NAMES, INTEGRATION)


def row_of(o: Outcome) -> str:
    """The table row an outcome counts in: its component, or the integration row for an integration re-run."""
    return INTEGRATION if o.property.integration else o.property.component


def row_title(row: str) -> str:
    return _(INTEGRATION_TITLE if row == INTEGRATION else BY_NAME[row].title)


# A verdict as a student reads it (core.Outcome.status).
STATUS_TEXT = {
    "passed": N_("passed"),
    "failed": N_("failed"),
    "error": N_("error"),
    "not_implemented": N_("not implemented"),
    "forbidden": N_("forbidden"),
    "timeout": N_("timeout"),
    "crashed": N_("crashed"),
    "blocked": N_("pending: a file it uses fails"),
}


def status_text(status: str) -> str:
    return _(STATUS_TEXT[status]) if status in STATUS_TEXT else status.replace("_", " ")


@dataclass
class ComponentSummary:
    component: str
    earned: float
    available: float
    passed: int
    total: int
    first_failure: Outcome | None
    pending: float = 0.0  # hidden (or integration) points not run here: decided at grading
    blocked: str = (
        ""  # the self-check: "multi_head uses your attention.py, which fails ...", else empty
    )
    # The self-check: points of properties that failed while a file they use fails (Status.BLOCKED), neither
    # earned nor lost until that file passes (docs/selfcheck.md). Not in `available`.
    held: float = 0.0

    @property
    def full(self) -> bool:
        return self.earned == self.available and self.pending == 0 and self.held == 0


def strongest_failure(outcomes: list[Outcome]) -> Outcome | None:
    """The failure the table shows: the first of those whose hint has the strongest evidence (Outcome.evidence;
    all equal, as in the judge's records, it is the first failure)."""
    failures = [o for o in outcomes if not o.passed]
    return max(failures, key=lambda o: o.evidence, default=None)


def summarize(
    outcomes: list[Outcome],
    pending: dict[str, float] | None = None,
    components=None,
    blocked: dict[str, str] | None = None,
) -> list[ComponentSummary]:
    """One row per component (of `components`, or all) that has outcomes or pending points, then the
    integration row. pending: points decided at grading, per row name. blocked: per component, the sentence
    saying which of the student's dependency files fail."""
    pending, blocked = pending or {}, blocked or {}
    names = [n for n in ROWS if (components is None or n in components or n == INTEGRATION)]
    rows = []
    for name in names:
        everything = [o for o in outcomes if row_of(o) == name]
        if not everything and not pending.get(name):
            continue
        mine = [o for o in everything if o.status != "blocked"]
        rows.append(
            ComponentSummary(
                name,
                sum(o.score for o in mine),
                sum(o.property.points for o in mine),
                sum(o.passed for o in mine),
                len(mine),
                strongest_failure(everything),
                pending.get(name, 0.0),
                blocked.get(name, ""),
                sum(o.property.points for o in everything if o.status == "blocked"),
            )
        )
    return rows


def outcome_text(o: Outcome, with_detail: bool = True) -> str:
    """What a student reads about one property: verdict, message, smallest failing input, hint."""
    if o.passed:
        return _("{verdict}: {summary}").format(
            verdict=status_text("passed"), summary=_(o.property.summary)
        )
    parts = [
        _("{verdict}: {summary}").format(
            verdict=status_text(o.status), summary=_(o.property.summary)
        ),
        o.message,
    ]
    if o.example:
        parts.append(_("smallest failing input:") + "\n" + _indent(o.example))
    if o.hint:
        parts.append(_("hint: {hint}").format(hint=o.hint))
    if with_detail and o.detail:
        parts.append(_("your code:") + "\n" + o.detail)
    return "\n".join(p for p in parts if p)


def _indent(text: str, pad: str = "    ") -> str:
    return "\n".join(pad + line for line in text.splitlines())


def gradescope(
    outcomes: list[Outcome],
    execution_time: float | None = None,
    hidden_visibility: str = HIDDEN_VISIBILITY,
    extra_output: str = "",
) -> dict:
    """Gradescope's results.json: tests with name, score, max_score, output, visibility, tags."""
    tests = []
    for o in outcomes:
        tests.append(
            {
                "name": o.property.id,
                "score": o.score,
                "max_score": o.property.points,
                "status": "passed" if o.passed else "failed",
                "output": outcome_text(o),
                "visibility": "visible" if o.property.visible else hidden_visibility,
                "tags": [row_of(o)],
                # Gradescope keeps extra_data without showing it: the verdict's kind (output has it only
                # translated, and `status` only passed/failed) and the hint alone, for the class report.
                "extra_data": {"status": str(o.status), "hint": o.hint},
            }
        )
    result = {"score": sum(o.score for o in outcomes), "tests": tests}
    if execution_time is not None:
        result["execution_time"] = round(execution_time, 3)
    if extra_output:
        result["output"] = extra_output
    return result


def write_json(data: dict, path: Path) -> None:
    Path(path).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def dependency_sentence(
    component: str, failing: dict[str, int], files: dict[str, str] | None = None
) -> str:
    """Whole sentence naming the student's dependency files that fail (file stem -> failing properties).
    files: how to call each file (a notebook's name), else <stem>.py."""
    files = files or {}
    if len(failing) == 1:
        ((dep, count),) = failing.items()
        file = files.get(dep, f"{dep}.py")
        return ngettext(
            "{component} uses your {file}, which fails {n} property: fix {file} first.",
            "{component} uses your {file}, which fails {n} properties: fix {file} first.",
            count,
        ).format(component=component, file=file, n=count)
    names = ", ".join(files.get(d, f"{d}.py") for d in failing)
    n = sum(failing.values())
    return ngettext(
        "{component} uses your {files}, which fail {n} property between them: fix those files first.",
        "{component} uses your {files}, which fail {n} properties between them: fix those files first.",
        n,
    ).format(component=component, files=names, n=n)


SHORT_EXAMPLE_LINES = 8  # a failure's block stays short: the whole input is in `check -v`


def short_text(o: Outcome) -> str:
    """One failure as a short block: verdict and property, message, a few lines of the failing input, hint,
    and the innermost line of the student's code."""
    head = _("✗ {component} · {property} ({points} pt): {verdict}").format(
        component=o.property.component,
        property=o.property.label,
        points=f"{o.property.points:g}",
        verdict=status_text(o.status),
    )
    lines = [head, _indent(o.message, "  ")]
    if o.example:
        example = o.example.splitlines()
        if len(example) > SHORT_EXAMPLE_LINES:
            example = example[:SHORT_EXAMPLE_LINES] + ["..."]
        lines.append(
            _indent(_("smallest failing input:") + "\n" + _indent("\n".join(example)), "  ")
        )
    if o.hint:
        lines.append("  " + _("hint: {hint}").format(hint=o.hint))
    if o.detail:
        lines.append(_indent(own_frame(o.detail, o.property.component), "  "))
    return "\n".join(line for line in lines if line.strip())


def own_frame(detail: str, component: str) -> str:
    """The traceback's innermost frame in the file under test (its line and code), else its innermost frame: an
    error raised in multi_head.py by encoder.py's call is encoder.py's mistake (the whole traceback is in `-v`)."""
    lines = detail.splitlines()
    for i in range(len(lines) - 2, -1, -1):
        if re.match(rf"\s*(\d\d_)?{component}\.(py|ipynb),", lines[i]):
            return "\n".join(lines[i : i + 2])
    return "\n".join(lines[-2:])


def failure_blocks(outcomes: list[Outcome]) -> list[str]:
    """The failures, one short block each. A failure with the same verdict, message and hint as the one
    before it in the same row takes one line (the untouched stubs: one block per function, not per property)."""
    blocks, last = [], None
    for o in outcomes:
        if o.passed:
            continue
        key = (row_of(o), o.status, o.message, o.hint)
        if key == last:
            blocks.append(
                _("✗ {component} · {property} ({points} pt): the same as above").format(
                    component=o.property.component,
                    property=o.property.label,
                    points=f"{o.property.points:g}",
                )
            )
        else:
            blocks.append(short_text(o))
        last = key
    return blocks


NARROW = 100  # columns


# long: the self-check's table, its columns and rows built in one place, as printed
def render_table(
    rows: list[ComponentSummary],
    title: str | None = None,
    console=None,
    total_points: float | None = None,
) -> None:
    """The per-component table students and instructors see at the end of a run. Every text is plain (a
    message's `PE[p, 2i]` must not be read as markup). total_points: the grade's total, when known."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = console or Console()
    # A terminal under NARROW columns (80 is common) drops the components' titles: the component column keeps
    # the file names (at most 19 characters), the hints get the rest of the width.
    narrow = console.is_terminal and console.width < NARROW  # a pipe keeps the full layout
    table = Table(title=Text(_("Transformer kit") if title is None else title), show_lines=False)
    table.add_column(_("component"), max_width=20 if narrow else 34)
    table.add_column(_("points"), justify="right")
    table.add_column(_("first failing property and hint"), overflow="fold")
    for r in rows:
        full = r.earned == r.available and not r.held
        style = "green" if full else ("red" if r.earned == 0 else "yellow")
        points = f"{r.earned:g} / {r.available:g}"
        if r.pending:
            points += (
                _(" (+{points} not run)")
                if r.component == INTEGRATION
                else _(" (+{points} hidden)")
            ).format(points=f"{r.pending:g}")
        if r.held:
            points += _(" (+{points} pending)").format(points=f"{r.held:g}")
        note = Text()
        if r.blocked:
            note.append(r.blocked, style="bold")
        elif r.first_failure is not None:
            o = r.first_failure
            note.append(f"{o.property.label}: {o.message}")
            if o.hint:
                note.append(f"\n→ {o.hint}")
        label = Text(_(INTEGRATION_LABEL) if r.component == INTEGRATION else r.component)
        if not narrow:
            label.append(f"\n{row_title(r.component)}", style="dim")
        table.add_row(label, Text(points, style=style), note)
    earned = sum(r.earned for r in rows)
    available = sum(r.available for r in rows)
    pending = sum(r.pending for r in rows)
    held = sum(r.held for r in rows)
    total = f"{earned:g} / {available:g}"
    if held:
        total += _(" (+{points} pending)").format(points=f"{held:g}")
    table.add_section()
    table.add_row(Text(_("total"), style="bold"), Text(total, style="bold"), "")
    console.print(table)
    # the points a failing dependency holds back: neither earned nor lost (docs/selfcheck.md)
    if held:
        console.print(
            Text(
                _(
                    "{held} points are pending: their properties failed while a file they use fails. "
                    "Fix that file first; the grade judges each file with the reference's others."
                ).format(held=f"{held:g}")
            ),
            soft_wrap=not narrow,
        )
    # never let a green run claim more than it knows: say what is still to come, and the sum
    if pending:
        integration = sum(r.available + r.pending for r in rows if r.component == INTEGRATION)
        visible = available + held - sum(r.available for r in rows if r.component == INTEGRATION)
        hidden = sum(r.pending for r in rows if r.component != INTEGRATION)
        total = total_points if total_points is not None else available + held + pending
        not_run = sum(r.pending for r in rows if r.component == INTEGRATION)
        # say only what is pending: every integration property ran, or no hidden point waits
        if not_run and hidden:
            sentence = _(
                "{pending} more points are decided at grading (hidden properties, integration "
                "properties not run here): {visible} visible + {hidden} hidden + {integration} "
                "integration = {total} points in all."
            )
        elif hidden:
            sentence = _(
                "{pending} more points are decided at grading (hidden properties): {visible} visible + "
                "{hidden} hidden + {integration} integration = {total} points in all."
            )
        else:
            sentence = _(
                "{pending} more points are decided at grading (integration properties not run here): "
                "{visible} visible + {hidden} hidden + {integration} integration = {total} points in all."
            )
        console.print(
            Text(
                sentence.format(
                    pending=f"{pending:g}",
                    visible=f"{visible:g}",
                    hidden=f"{hidden:g}",
                    integration=f"{integration:g}",
                    total=f"{total:g}",
                )
            ),
            soft_wrap=not narrow,  # wide: one line a test or a pipe can grep; narrow: wrapped
        )
