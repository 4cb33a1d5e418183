"""The roster: the LMS's own gradebook export, recognised by its header, joined to the submissions.

- Canvas's gradebook export: `Student, ID, SIS User ID, SIS Login ID, [Integration ID,] Section, <assignments>`,
  then a `Points Possible` row. A Canvas download names the user id (`ID`): that is the join.
- Moodle's grade export: `First name, Last name, ID number, Institution, Department, Email address, ...` (or the
  same in Spanish, as a Spanish Moodle writes it). A Moodle download names the full name as Moodle writes it
  (first name, a space, last name; accents and case kept): that is the join.
- A folder per student (the kit's layout) joins on the folder's name against the row's name, login, email or ID
  number, exactly.

A submission that matches no row, or several, or a row another submission took, is a problem (one sentence);
a row no submission matched is a student with 0 and "no submission".
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from ..i18n import _
from .identity import ClassIndex, Member, RosterRow, display, submission_id

CANVAS_ID = ("Student", "ID", "SIS User ID", "SIS Login ID")
CANVAS_ASSIGNMENT = re.compile(r"^.+\(\d+\)$", re.S)
MOODLE = {  # Moodle's export header, English and Spanish, to the row's fields
    "First name": "first",
    "Nombre": "first",
    "Last name": "last",
    "Surname": "last",
    "Apellido(s)": "last",
    "ID number": "id_number",
    "Número de ID": "id_number",
    "Email address": "email",
    "Dirección de correo": "email",
    "Dirección Email": "email",
}
MAX_ROSTER_BYTES = 20 << 20


@dataclass(frozen=True)
class LmsOptions:
    """What `--roster`, `--assignment`, `--scale` and `--components` ask of the exports."""

    roster: Path | None = None  # the LMS's gradebook export (`read` below)
    assignment: str = ""  # the grade column's title; Canvas: "<title> (<assignment id>)"
    scale: float | None = None  # the total as a grade out of this (10: the Spanish convention)
    components: bool = False  # a column per gradebook column besides the total


class RosterError(ValueError):
    """A roster file that is neither LMS's export: said to the instructor, nothing graded on a guess."""


def read(path: Path) -> tuple[str, list[RosterRow], str]:
    """(kind, rows, the assignment column's title or "") of the roster at `path`."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_ROSTER_BYTES)
    except OSError as e:
        raise RosterError(f"{display(str(path))}: {e.strerror or type(e).__name__}") from None
    text = raw.decode("utf-8-sig", "replace")
    # the separator the header uses most: a comma, or a semicolon (a spreadsheet in a decimal-comma locale, which
    # Canvas's importer also detects), or a tab
    first = text.split("\n", 1)[0]
    delimiter = max(",;\t", key=first.count)
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    if not rows:
        raise RosterError(_("{file}: an empty roster").format(file=display(str(path))))
    header = [h.strip() for h in rows[0]]
    if tuple(header[:4]) == CANVAS_ID:
        return "canvas", *_canvas(header, rows[1:])
    if sum(h in MOODLE for h in header) >= 3:
        return "moodle", _moodle(header, rows[1:]), ""
    raise RosterError(
        _(
            "{file}: not a roster the kit knows (Canvas's gradebook export begins with {canvas}; Moodle's grade "
            "export has {moodle})"
        ).format(
            file=display(str(path)),
            canvas=", ".join(CANVAS_ID),
            moodle="First name, Last name, Email address",
        )
    )


def _canvas(header: list[str], body: list[list[str]]) -> tuple[list[RosterRow], str]:
    at = {h: i for i, h in enumerate(header)}
    assignment = next((h for h in header[4:] if CANVAS_ASSIGNMENT.match(h)), "")
    rows = []
    for r in body:
        cell = _cells(r, at)
        name = cell("Student")
        # the Points Possible row (its name cell is padded with spaces) and Canvas's test student
        if not name or name == "Points Possible" or name == "Student, Test" or not cell("ID"):
            continue
        rows.append(
            RosterRow(
                name,
                canvas_id=cell("ID"),
                sis_user_id=cell("SIS User ID"),
                sis_login_id=cell("SIS Login ID"),
                section=cell("Section"),
            )
        )
    return rows, assignment


def _moodle(header: list[str], body: list[list[str]]) -> list[RosterRow]:
    at = {MOODLE[h]: i for i, h in reversed(list(enumerate(header))) if h in MOODLE}
    rows = []
    for r in body:
        cell = _cells(r, at)
        name = f"{cell('first')} {cell('last')}".strip()
        if name:
            rows.append(RosterRow(name, id_number=cell("id_number"), email=cell("email")))
    return rows


def _cells(row: list[str], at: dict[str, int]):
    """The row's cell under a column, "" where the row is short or the column absent."""
    return lambda key: row[at[key]].strip() if key in at and at[key] < len(row) else ""


def _keys(m: Member, row: RosterRow, kind: str) -> bool:
    if m.lms == "canvas":
        return bool(row.canvas_id) and m.user_id == row.canvas_id
    if m.lms == "moodle":
        return _name_of(m) == row.name
    names = {row.name, row.sis_login_id, row.sis_user_id, row.email, row.id_number}
    return m.source in names - {""}


def _name_of(m: Member) -> str:
    """The name part of a Moodle source name, as Moodle wrote it."""
    return m.source.split(f"_{m.user_id}_assignsubmission_", 1)[0]


def join(index: ClassIndex, kind: str, rows: list[RosterRow], assignment: str = "") -> None:
    """Match each submission of `index` to one roster row; add the rows nobody matched; say every problem."""
    index.members = [m for m in index.members if m.submitted]  # a roster joined before is replaced
    for m in index.members:
        m.roster, m.display = None, m.name or m.display
    index.roster, index.assignment, index.roster_problems = kind, assignment, []
    taken: dict[int, Member] = {}
    for m in index.members:
        found = [i for i, row in enumerate(rows) if _keys(m, row, kind)]
        if len(found) != 1:
            text = (
                _("{name}: no roster row matches this submission.")
                if not found
                else _("{name}: {n} roster rows match this submission: none was chosen.")
            )
            index.roster_problems.append(text.format(name=m.display, n=len(found)))
            continue
        if found[0] in taken:
            index.roster_problems.append(
                _("{name}: the roster row {row} is already matched by {other}.").format(
                    name=m.display, row=display(rows[found[0]].name), other=taken[found[0]].display
                )
            )
            continue
        taken[found[0]] = m
        m.roster, m.display = rows[found[0]], display(rows[found[0]].name)
    for i, row in enumerate(rows):
        if i not in taken:
            key = row.canvas_id or row.email or row.id_number or row.name
            index.members.append(
                Member(
                    submission_id(f"roster:{key}"),
                    display(row.name),
                    "",
                    "roster",
                    roster=row,
                    submitted=False,
                )
            )
