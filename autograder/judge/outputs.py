"""What the judge writes, from memory and by itself: results.json, the feedback, the instructor's log, the
gradebook (a file and a table) and timing.json. A student's files are written atomically once all their
sections are graded, so a crash of the batch loses nothing."""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from .. import results
from ..components import COMPONENTS, NAMES
from ..properties import core
from .sections import Section, integration_props

SHORT = {**{c.name: c.short for c in COMPONENTS}, results.INTEGRATION: "integ"}
COLUMNS = results.ROWS  # the gradebook's point columns: each component, then the integration share


@dataclass
class StudentResult:
    name: str
    outcomes: list = field(default_factory=list)
    seconds: float = 0.0
    picture: bytes | None = None
    picture_caption: str = ""  # what the picture shows, in a sentence; or why there is none
    log: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stats: list[dict] = field(default_factory=list)

    def points(self) -> dict[str, float]:
        """Points per gradebook column: each component's own properties, and the integration share apart."""
        by = {name: 0.0 for name in COLUMNS}
        for o in self.outcomes:
            by[results.row_of(o)] += o.score
        return by


def outcome_from(record: dict) -> core.Outcome:
    p = core.Property(
        record["name"],
        record["component"],
        record["points"],
        record["visible"],
        0,
        None,
        record["summary"],
    )
    return core.Outcome(
        p,
        core.Status(record["status"]),
        record["message"],
        record["hint"],
        record["example"],
        record["detail"],
        record["seconds"],
    )


def assemble(r: StudentResult, sections: list[Section], done: dict[str, dict]) -> None:
    """The student's outcomes in a fixed order: component order, section properties, then integration ones."""
    records = []
    for s in sections:
        rec = done[s.key]
        if rec.get("error"):
            r.errors.append(f"JUDGE ERROR in {s.label}: {rec['error']}")
            continue
        records.extend(rec["outcomes"])
        r.seconds += rec.get("seconds", 0.0)
        r.stats.append(
            dict(rec.get("stats", {}), section=s.name, seconds=round(rec.get("seconds", 0.0), 3))
        )
        if isinstance(rec.get("picture"), dict):
            r.picture, r.picture_caption = rec["picture"]["png"], rec["picture"]["caption"]
        if rec.get("log"):
            r.log.append(f"## {s.label}: what the code printed (trimmed)\n{rec['log']}")
    order = {n: i for i, n in enumerate(NAMES)}
    # stable within each
    records.sort(key=lambda x: (order[x["component"]], "::integration::" in x["id"]))
    r.outcomes = core.require_behaviour([outcome_from(x) for x in records])


# ------------------------------------------------------------------------------------------------ files
def write_atomic(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data.encode() if isinstance(data, str) else data)
    os.replace(tmp, path)


def results_json(r: StudentResult, hidden_visibility: str) -> dict:
    rows = results.summarize(r.outcomes)
    lines = [f"{row.component}: {row.earned:g} / {row.available:g}" for row in rows]
    data = results.gradescope(r.outcomes, r.seconds, hidden_visibility, "\n".join(lines))
    return data


def write_student(out: Path, r: StudentResult, hidden_visibility: str) -> None:
    from . import feedback

    folder = out / r.name
    data = results_json(r, hidden_visibility)
    write_atomic(folder / "results.json", json.dumps(data, indent=2, sort_keys=True) + "\n")
    write_atomic(folder / "feedback.html", feedback.html(r, hidden_visibility))
    write_atomic(folder / "feedback.md", feedback.markdown(r, hidden_visibility))
    if r.picture:
        write_atomic(folder / "attention_weights.png", r.picture)
    log = [f"# {r.name}: instructor log (not for students)"] + r.errors + r.log
    write_atomic(out / "logs" / f"{r.name}.txt", "\n".join(log) + "\n")


def write_timing(out: Path, results_by: dict[str, StudentResult]) -> None:
    """Time fields, kept apart from results.json so that those are byte-identical run to run."""
    data = {
        s: {"seconds": round(r.seconds, 3), "workers": r.stats}
        for s, r in sorted(results_by.items())
    }
    write_atomic(out / "timing.json", json.dumps(data, indent=1, sort_keys=True) + "\n")


# -------------------------------------------------------------------------------------------- gradebook
def maxima(props: list[core.Property]) -> dict[str, float]:
    """The most points per gradebook column (COLUMNS), integration share apart."""
    by = {name: 0.0 for name in COLUMNS}
    for p in props:
        by[p.component] += p.points
    for specs in integration_props(props).values():
        by[results.INTEGRATION] += sum(points for _, points in specs)
    return by


def read_gradebook(path: Path) -> dict[str, dict[str, str]]:
    if not path.is_file():
        return {}
    with open(path, newline="") as f:
        return {
            row["student"]: row
            for row in csv.DictReader(f)
            if row.get("student") and row["student"] != "(max)"
        }


def write_gradebook(path: Path, rows: dict[str, dict[str, str]], maximum: dict[str, float]) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["student", *COLUMNS, "total"])
    w.writerow(["(max)", *(f"{maximum[n]:g}" for n in COLUMNS), f"{sum(maximum.values()):g}"])
    for name in sorted(rows):
        w.writerow([name, *(rows[name].get(n, "") for n in COLUMNS), rows[name].get("total", "")])
    write_atomic(path, buf.getvalue())


def gradebook_row(r: StudentResult) -> dict[str, str]:
    pts = r.points()
    return {**{n: f"{pts[n]:g}" for n in COLUMNS}, "total": f"{sum(pts.values()):g}"}


def _fits(table, console) -> bool:
    from rich.measure import Measurement

    wide = console.options.update_width(10_000)  # its width unwrapped, not clamped to the console's
    return Measurement.get(console, wide, table).maximum <= console.width


def _gradebook_narrow(results_by: dict[str, StudentResult], maximum: dict, used: list):
    """The gradebook for a terminal too narrow for a column per component (80 columns hold about 9): a row per
    student, their total, then each component's points as `short points/maximum`, wrapped."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(title="gradebook", box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    table.add_column("student", overflow="fold", max_width=24)
    table.add_column(f"total\n{sum(maximum.values()):g}", justify="right", no_wrap=True)
    table.add_column("per column", overflow="fold")
    for name in sorted(results_by):
        r = results_by[name]
        pts = r.points()
        cells = Text()
        for n in used:
            style = "green" if pts[n] == maximum[n] else ("red" if pts[n] == 0 else "yellow")
            cells.append(
                f"{SHORT[n]}\u00a0{pts[n]:g}/{maximum[n]:g}", style=style
            )  # no break inside
            cells.append("  ")
        label = Text(name)
        if r.errors:
            label.append(" (judge error)", style="red")
        table.add_row(label, Text(f"{sum(pts.values()):g}", style="bold"), cells)
    return table


def render_gradebook(results_by: dict[str, StudentResult], props, console) -> None:
    """The class at a glance: a column per component, the integration share, the total. Names are plain text."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    maximum = maxima(props)
    table = Table(title="gradebook", box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    table.add_column("student", overflow="fold")
    used = [n for n in COLUMNS if maximum[n]]
    for n in used:
        header = Text(SHORT[n])
        header.append(f"\n{maximum[n]:g}", style="dim")
        table.add_column(header, justify="right", no_wrap=True)
    total = Text("total")
    total.append(f"\n{sum(maximum.values()):g}", style="dim")
    table.add_column(total, justify="right", no_wrap=True)
    for name in sorted(results_by):
        r = results_by[name]
        pts = r.points()
        cells = []
        for n in used:
            style = "green" if pts[n] == maximum[n] else ("red" if pts[n] == 0 else "yellow")
            cells.append(Text(f"{pts[n]:g}", style=style))
        label = Text(name)
        if r.errors:
            label.append(" (judge error)", style="red")
        table.add_row(label, *cells, Text(f"{sum(pts.values()):g}", style="bold"))
    console.print(table if _fits(table, console) else _gradebook_narrow(results_by, maximum, used))
    console.print(
        Text(
            ", ".join(f"{SHORT[n]} = {n}" for n in used if n != results.INTEGRATION)
            + f", {SHORT[results.INTEGRATION]} = {results.INTEGRATION}: {results.INTEGRATION_TITLE}",
            style="dim",
        )
    )
