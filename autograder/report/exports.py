"""What the report exports: everything on the page as JSON, and the gradebook as CSV files Canvas and Moodle
import (docs/report.md has their formats). A student's folder name is the one student-originated string in a
CSV: a cell that a spreadsheet would read as a formula is neutralised as OWASP recommends (CSV injection)."""

from __future__ import annotations

import csv
import dataclasses
import io
import json

from ..results import ROWS
from .model import ClassResults
from .similarity import Similarity
from .stats import Summary

# OWASP's list of characters that start a formula
FORMULA_START = (
    "=",
    "+",
    "-",
    "@",
    "\t",
    "\r",
    "\n",
)
CANVAS_ID_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")


def cell(text: str) -> str:
    """A text cell no spreadsheet evaluates: a leading formula character gets a ' before it."""
    return "'" + text if text.startswith(FORMULA_START) else text


def _columns(data: ClassResults) -> list[str]:
    return [r for r in ROWS if data.maximum.get(r)]


def _write(rows: list[list[str]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def canvas_csv(data: ClassResults) -> str:
    """Canvas's gradebook import: the five identity columns, one column per component (a new assignment each,
    named with its points), the "Points Possible" row second. The folder name is the SIS Login ID."""
    columns = _columns(data)
    rows = [
        [*CANVAS_ID_COLUMNS, *(f"{c} ({data.maximum[c]:g} pts)" for c in columns)],
        ["Points Possible", "", "", "", "", *(f"{data.maximum[c]:g}" for c in columns)],
    ]
    for st in data.students:
        rows.append(
            [cell(st.name), "", "", cell(st.name), "", *(f"{st.points(c):g}" for c in columns)]
        )
    return _write(rows)


def moodle_csv(data: ClassResults) -> str:
    """Moodle's "Import grades: CSV file": a username column to map users by, one column per grade item (the
    maximum is the grade item's setting in Moodle, so it is in the header, not in a row Moodle would read as a
    user)."""
    columns = _columns(data)
    rows = [["username", *(f"{c} (/{data.maximum[c]:g})" for c in columns)]]
    for st in data.students:
        rows.append([cell(st.name), *(f"{st.points(c):g}" for c in columns)])
    return _write(rows)


def as_dict(data: ClassResults, summary: Summary, similar: Similarity | None) -> dict:
    students = [
        {
            "name": st.name,
            "points": {r: st.points(r) for r in ROWS if data.maximum.get(r)},
            "total": st.total,
            "seconds": st.seconds,
            "judge_errors": st.judge_errors,
        }
        for st in data.students
    ]
    found = dataclasses.asdict(summary)
    for d in found["distributions"]:
        del d["values"]  # per student already, above
    if similar is not None:
        found["similarity"] = {
            "files": similar.files,
            "seconds": round(similar.seconds, 3),
            "pairs": [
                {k: v for k, v in dataclasses.asdict(p).items() if not k.startswith("marked")}
                for p in similar.pairs
            ],
            "clusters": [{"component": c, "members": m} for c, m in similar.clusters],
        }
    return {
        "out": data.out,
        "maximum": data.maximum,
        "problems": data.problems,
        "students": students,
        **found,
    }


def json_text(data: ClassResults, summary: Summary, similar: Similarity | None) -> str:
    return json.dumps(as_dict(data, summary, similar), indent=1, ensure_ascii=False) + "\n"
