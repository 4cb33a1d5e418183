"""Outcomes into reports: per-component summaries, the terminal table, Gradescope's results.json."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .components import BY_NAME, NAMES
from .properties.core import Outcome

HIDDEN_VISIBILITY = "after_due_date"  # Gradescope: hidden results show once the due date passes


@dataclass
class ComponentSummary:
    component: str
    earned: float
    available: float
    passed: int
    total: int
    first_failure: Outcome | None
    pending: float = 0.0  # hidden points not run here: decided at grading

    @property
    def full(self) -> bool:
        return self.earned == self.available and self.pending == 0


def summarize(outcomes: list[Outcome], pending: dict[str, float] | None = None,
              components=None) -> list[ComponentSummary]:
    pending = pending or {}
    names = [n for n in NAMES if (components is None or n in components)]
    rows = []
    for name in names:
        mine = [o for o in outcomes if o.property.component == name]
        if not mine and not pending.get(name):
            continue
        rows.append(ComponentSummary(
            name,
            sum(o.score for o in mine),
            sum(o.property.points for o in mine),
            sum(o.passed for o in mine),
            len(mine),
            next((o for o in mine if not o.passed), None),
            pending.get(name, 0.0),
        ))
    return rows


def outcome_text(o: Outcome, with_detail: bool = True) -> str:
    """What a student reads about one property: verdict, message, smallest failing input, hint."""
    if o.passed:
        return f"passed: {o.property.summary}"
    parts = [f"{o.status.replace('_', ' ')}: {o.property.summary}", o.message]
    if o.example:
        parts.append("smallest failing input:\n" + _indent(o.example))
    if o.hint:
        parts.append(f"hint: {o.hint}")
    if with_detail and o.detail:
        parts.append("your code:\n" + o.detail)
    return "\n".join(p for p in parts if p)


def _indent(text: str, pad: str = "    ") -> str:
    return "\n".join(pad + line for line in text.splitlines())


def gradescope(outcomes: list[Outcome], execution_time: float | None = None,
               hidden_visibility: str = HIDDEN_VISIBILITY, extra_output: str = "") -> dict:
    """Gradescope's results.json: tests with name, score, max_score, output, visibility, tags."""
    tests = []
    for o in outcomes:
        tests.append({
            "name": o.property.id,
            "score": o.score,
            "max_score": o.property.points,
            "status": "passed" if o.passed else "failed",
            "output": outcome_text(o),
            "visibility": "visible" if o.property.visible else hidden_visibility,
            "tags": [o.property.component],
        })
    result = {"score": sum(o.score for o in outcomes), "tests": tests}
    if execution_time is not None:
        result["execution_time"] = round(execution_time, 3)
    if extra_output:
        result["output"] = extra_output
    return result


def write_json(data: dict, path: Path) -> None:
    Path(path).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def render_table(rows: list[ComponentSummary], title: str = "Transformer kit", console=None) -> None:
    """The per-component table students and instructors see at the end of a run."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    table = Table(title=title, show_lines=False)
    table.add_column("component")
    table.add_column("points", justify="right")
    table.add_column("first failing property and hint", overflow="fold")
    for r in rows:
        style = "green" if r.earned == r.available else ("red" if r.earned == 0 else "yellow")
        points = f"{r.earned:g} / {r.available:g}"
        if r.pending:
            points += f" (+{r.pending:g} hidden)"
        note = ""
        if r.first_failure is not None:
            o = r.first_failure
            note = f"{o.property.name}: {o.message}"
            if o.hint:
                note += f"\n→ {o.hint}"
        table.add_row(f"{r.component}\n[dim]{BY_NAME[r.component].title}[/dim]", f"[{style}]{points}[/{style}]", note)
    earned = sum(r.earned for r in rows)
    available = sum(r.available for r in rows)
    pending = sum(r.pending for r in rows)
    table.add_section()
    table.add_row("[bold]total[/bold]", f"[bold]{earned:g} / {available:g}[/bold]", "")
    console.print(table)
    if pending:  # never let a green run claim more than it knows
        console.print(f"{pending:g} more points are hidden and decided at grading.", soft_wrap=True)
