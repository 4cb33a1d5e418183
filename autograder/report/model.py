"""The report's records: what it read from OUT_DIR, typed."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from ..lms.identity import Member

# The files the report writes into OUT_DIR
REPORT_HTML = "report.html"
REPORT_JSON = "report.json"
CANVAS_CSV = "lms-canvas.csv"
MOODLE_CSV = "lms-moodle.csv"
# the same files with a UTF-8 byte order mark: what a spreadsheet on Windows needs to show "Oñate"
CANVAS_SHEET = "lms-canvas-spreadsheet.csv"
MOODLE_SHEET = "lms-moodle-spreadsheet.csv"


@dataclass(frozen=True)
class Test:
    """One property's result for one student, as results.json holds it."""

    id: str  # component::name, or component::integration::name
    row: str  # the gradebook column it counts in: a component, or `integration`
    score: float
    max_score: float
    status: str  # core.Status: passed, failed, error, not_implemented, forbidden, timeout, crashed
    hint: str  # the hint as the student read it (translated), or ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclass
class Student:
    # The judge's id (lms.identity): OUT/<name>/ holds the student's files. In an OUT graded before the judge
    # kept a class index, the folder's name (student-originated, escaped wherever it is written).
    name: str
    tests: list[Test] = field(default_factory=list)
    seconds: float | None = None  # grading time (timing.json, else results.json's execution_time)
    judge_errors: list[str] = field(default_factory=list)  # from the judge's own log
    display: str = (
        ""  # the name to show (the roster's, else the download's), escaped of control characters
    )
    late: bool | None = None  # what the LMS download records; None: it records nothing
    missing: bool = False  # a roster student with no submission: 0, and "no submission"
    member: Member | None = None  # the class index's entry: the LMS identity the exports fill

    @property
    def shown(self) -> str:
        return self.display or self.name

    def points(self, row: str) -> float:
        return self.by_row.get(row, 0.0)

    @functools.cached_property
    def by_row(self) -> dict[str, float]:
        """Points per gradebook column, summed once (the page asks ~30 times per student)."""
        by: dict[str, float] = {}
        for t in self.tests:
            by[t.row] = by.get(t.row, 0.0) + t.score
        return by

    @functools.cached_property
    def total(self) -> float:
        return sum(t.score for t in self.tests)


@dataclass
class ClassResults:
    out: str
    students: list[Student]  # those whose results.json could be read, by name
    maximum: dict[str, float]  # points possible per gradebook column (results.ROWS)
    problems: list[str] = field(default_factory=list)  # what could not be read, one sentence each
    roster: str = ""  # the roster's kind ("canvas", "moodle") when one was joined
    # what the LMS files could not fill (no Canvas ID, no Moodle identifier, no assignment id): one sentence each
    lms_notes: list[str] = field(default_factory=list)
    assignment: str = ""  # the roster's own assignment column, if it had one

    @property
    def total_maximum(self) -> float:
        return sum(self.maximum.values())
