"""What the report exports: everything on the page as JSON, and the grades as files Canvas and Moodle import
(docs/report.md, "LMS": their formats, and the importers' lines they follow), each with a spreadsheet copy.

Identity comes from the roster (lms/roster.py); a Canvas download names Canvas's user id, which is the export's
`ID`. What no source gives is left out or blank, and said, one sentence per student, among the class's problems.
Every text cell that a spreadsheet would read as a formula is neutralised as OWASP recommends (CSV injection).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import re

from ..i18n import _
from ..lms.roster import LmsOptions  # the options, read by the command line (judge/cli.py) too
from ..results import ROWS
from .model import ClassResults, Student
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
# Canvas's gradebook export, its identity columns; then one column per assignment, "<title> (<id>)"
CANVAS_ID_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
CANVAS_POINTS_POSSIBLE = "    Points Possible"  # as Canvas writes it, padded
CANVAS_TITLE_WITH_ID = re.compile(r"^.+\(\d+\)$", re.S)
# Canvas's importer reads any row whose first cell includes this as the Points Possible row (its grades would
# become the assignments' maxima: gradebook_importer.rb, check_for_non_student_row): never in a name's cell
CANVAS_PP_WORDS = "Points Possible"
DEFAULT_TITLE = "Transformer"
BOM = "\ufeff"
# No --roster, --assignment, --scale or --components: the exports' default (frozen, so one is shared)
NO_OPTIONS = LmsOptions()


def cell(text: str) -> str:
    """A text cell no spreadsheet evaluates: a leading formula character gets a ' before it."""
    return "'" + text if text.startswith(FORMULA_START) else text


def _write(rows: list[list[str]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_MINIMAL, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def grade(data: ClassResults, st: Student, opts: LmsOptions) -> str:
    """The student's total, or a grade out of opts.scale (two decimals), as text."""
    if opts.scale is None:
        return f"{st.total:g}"
    share = st.total / data.total_maximum if data.total_maximum else 0.0
    return f"{round(share * opts.scale, 2):g}"


def _title(data: ClassResults, opts: LmsOptions) -> str:
    return opts.assignment or data.assignment or DEFAULT_TITLE


def _grade_columns(data: ClassResults, opts: LmsOptions) -> list[tuple[str, object]]:
    """(title, the cell of a student) per grade column: the total, then each gradebook column on request."""
    columns = [(_title(data, opts), lambda st: grade(data, st, opts))]
    if opts.components:
        for r in (r for r in ROWS if data.maximum.get(r)):
            columns.append((f"{_title(data, opts)}: {r}", lambda st, r=r: f"{st.points(r):g}"))
    return columns


def canvas_csv(data: ClassResults, opts: LmsOptions = NO_OPTIONS) -> tuple[str, list[str]]:
    """Canvas's gradebook import (the header it exports, its Points Possible row); and what it could not fill."""
    columns, said, unnamed = _grade_columns(data, opts), [], []
    title = _title(data, opts)
    if not CANVAS_TITLE_WITH_ID.match(title):
        said.append(
            _(
                'lms-canvas.csv: the grade column "{title}" names no assignment id: Canvas creates a new '
                'assignment on import (give --assignment "Title (id)", or a roster with that column).'
            ).format(title=title)
        )
    most = f"{opts.scale:g}" if opts.scale is not None else f"{data.total_maximum:g}"
    possible = [most] + [f"{data.maximum[r]:g}" for r in ROWS if data.maximum.get(r)][
        : len(columns) - 1
    ]
    rows = [[*CANVAS_ID_COLUMNS, *(cell(t) for t, _f in columns)]]
    rows.append([CANVAS_POINTS_POSSIBLE, "", "", "", "", *possible])
    for st in data.students:
        m, row = st.member, (st.member.roster if st.member else None)
        if row is not None:
            ident = [row.name, row.canvas_id, row.sis_user_id, row.sis_login_id, row.section]
        elif m is not None and m.lms == "canvas":
            ident = [st.shown, m.user_id, "", "", ""]
        else:
            ident = [st.shown, "", "", "", ""]
            unnamed.append(st.shown)
        ident[0] = ident[0].replace(CANVAS_PP_WORDS, "Points-Possible")
        rows.append([cell(x) for x in ident] + [f(st) for _t, f in columns])
    if unnamed:
        said.append(
            _(
                "lms-canvas.csv: no Canvas ID for {names} (no roster row: give --roster, Canvas's gradebook "
                "export): Canvas can match these rows by name only."
            ).format(names=", ".join(unnamed))
        )
    return _write(rows), said


def moodle_csv(data: ClassResults, opts: LmsOptions = NO_OPTIONS) -> tuple[str, list[str]]:
    """Moodle's "Import grades: CSV file": an identifier column Moodle maps to a user field (the roster's email
    address, else its ID number) and the grade column(s). Moodle stops the whole import at the first row whose
    identifier matches no user, and a blank identifier gives the row's grades to the row before: so a student
    with no identifier is left out of the file, and said."""
    columns, said, unnamed = _grade_columns(data, opts), [], []
    rosters = [st.member.roster for st in data.students if st.member and st.member.roster]
    # the roster's email addresses, else its ID numbers (a Moodle export has both; Canvas's neither)
    field = (
        "id_number"
        if any(r.id_number for r in rosters) and not any(r.email for r in rosters)
        else "email"
    )
    header = "Email address" if field == "email" else "ID number"
    rows = [[header, *(cell(t) for t, _f in columns)]]
    for st in data.students:
        row = st.member.roster if st.member else None
        ident = getattr(row, field, "") if row is not None else ""
        if not ident:
            unnamed.append(st.shown)
            continue
        rows.append([cell(ident)] + [f(st) for _t, f in columns])
    if unnamed:
        said.append(
            _(
                "lms-moodle.csv leaves out {names}: no {field} (give --roster, Moodle's grade export); Moodle "
                "stops the whole import at a user it cannot find."
            ).format(names=", ".join(unnamed), field=header)
        )
    return _write(rows), said


def as_dict(data: ClassResults, summary: Summary, similar: Similarity | None) -> dict:
    students = [
        {
            "name": st.shown,
            "id": st.name,
            "points": {r: st.points(r) for r in ROWS if data.maximum.get(r)},
            "total": st.total,
            "seconds": st.seconds,
            "judge_errors": st.judge_errors,
            "late": st.late,
            "missing": st.missing,
            "lms": st.member.lms if st.member else "",
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
        "lms_notes": data.lms_notes,
        "students": students,
        **found,
    }


def json_text(data: ClassResults, summary: Summary, similar: Similarity | None) -> str:
    return json.dumps(as_dict(data, summary, similar), indent=1, ensure_ascii=False) + "\n"
