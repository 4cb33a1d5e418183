"""The figures of the page: score distributions, the mistakes the hints named, the failures no hint named,
item analysis per property, and judge health. Pure functions of the ClassResults (docs/report.md says how
each is computed)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ..results import ROWS
from . import hints
from .model import ClassResults

# Item analysis: a property whose pass/fail correlates less than this with the rest of the score (and that
# some pass and some fail) is flagged as possibly broken. 0.1: the usual "poor item" line of classical test
# theory (0.2-0.3 fair, > 0.3 good); below it a failure says little about the rest of the work.
LOW_DISCRIMINATION = 0.1
MIN_STUDENTS_FOR_DISCRIMINATION = 5  # fewer: a correlation is noise, shown but never flagged
HEALTH_STATUSES = ("timeout", "crashed", "forbidden")
# not_implemented, forbidden, timeout, crashed explain themselves
UNEXPLAINED_STATUSES = (
    "failed",
    "error",
)


@dataclass
class Distribution:
    row: str  # a gradebook column, or "total"
    maximum: float
    values: list[float]
    median: float
    mean: float
    at_zero: int
    at_full: int


@dataclass
class Mistake:
    row: str
    hint_id: str
    label: str
    students: list[str]


@dataclass
class Unexplained:
    row: str
    test: str
    students: list[str]


@dataclass
class Item:
    test: str
    row: str
    points: float
    students: int
    pass_rate: float
    # None: undefined (all pass or all fail, or a constant rest of score)
    discrimination: float | None
    flag: str  # "", "all_pass", "all_fail", "low_discrimination"


@dataclass
class HealthEvent:
    student: str
    kind: str  # timeout, crashed, forbidden, judge_error
    where: list[str]


@dataclass
class Summary:
    size: int
    distributions: list[Distribution] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    mistakes: list[Mistake] = field(default_factory=list)
    not_written: dict[str, list[str]] = field(default_factory=dict)
    unexplained: list[Unexplained] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)
    health: list[HealthEvent] = field(default_factory=list)


def distribution(row: str, maximum: float, values: list[float]) -> Distribution:
    return Distribution(
        row,
        maximum,
        values,
        statistics.median(values) if values else 0.0,
        statistics.fmean(values) if values else 0.0,
        sum(v == 0 for v in values),
        sum(maximum > 0 and v >= maximum for v in values),
    )


def summarize(data: ClassResults) -> Summary:
    students = data.students
    s = Summary(len(students))
    # the total first: the page's first chart
    s.distributions.append(distribution("total", data.total_maximum, [st.total for st in students]))
    for row in ROWS:
        if data.maximum.get(row):
            s.distributions.append(
                distribution(row, data.maximum[row], [st.points(row) for st in students])
            )
    s.seconds = [st.seconds for st in students if st.seconds is not None]
    s.mistakes, s.not_written, s.unexplained = _mistakes(data)
    s.items = _items(data)
    s.health = _health(data)
    return s


def _mistakes(data: ClassResults):
    """Per row, each hint's students (a student counts once however many properties it failed), most
    frequent first; the students who left a row unwritten; failures with no hint, by property."""
    named: dict[tuple[str, str], set[str]] = defaultdict(set)
    stub: dict[str, set[str]] = defaultdict(set)
    bare: dict[tuple[str, str], set[str]] = defaultdict(set)
    for st in data.students:
        for t in st.tests:
            if t.passed:
                continue
            if t.status == "not_implemented":
                stub[t.row].add(st.name)
            elif t.hint:
                named[(t.row, hints.hint_id(t.hint))].add(st.name)
            elif t.status in UNEXPLAINED_STATUSES:
                bare[(t.row, t.id)].add(st.name)
    order = {r: i for i, r in enumerate(ROWS)}

    def key(item):
        (row, _), names = item
        return (order.get(row, len(order)), -len(names), item[0][1])

    mistakes = [
        Mistake(r, h, hints.label(h), sorted(n)) for (r, h), n in sorted(named.items(), key=key)
    ]
    unexplained = [Unexplained(r, t, sorted(n)) for (r, t), n in sorted(bare.items(), key=key)]
    not_written = {r: sorted(stub[r]) for r in ROWS if stub.get(r)}
    return mistakes, not_written, unexplained


def _items(data: ClassResults) -> list[Item]:
    """Per property: pass rate, and discrimination, the correlation (point-biserial) of passing it with the
    student's total without this property's own points, over the students who were graded on it."""
    tests: dict[str, tuple[str, float]] = {}
    for st in data.students:
        for t in st.tests:
            tests.setdefault(t.id, (t.row, t.max_score))
    items = []
    totals = {st.name: st.total for st in data.students}
    index = {st.name: {t.id: t for t in st.tests} for st in data.students}
    for test_id, (row, points) in tests.items():
        passed, rest = [], []
        for st in data.students:
            mine = index[st.name].get(test_id)
            if mine is None:
                continue
            passed.append(1.0 if mine.passed else 0.0)
            rest.append(totals[st.name] - mine.score)
        if not passed:
            continue
        rate = sum(passed) / len(passed)
        r = _correlation(np.array(passed), np.array(rest))
        if rate == 1.0:
            flag = "all_pass"
        elif rate == 0.0:
            flag = "all_fail"
        elif (
            len(passed) >= MIN_STUDENTS_FOR_DISCRIMINATION
            and r is not None
            and r < LOW_DISCRIMINATION
        ):
            flag = "low_discrimination"
        else:
            flag = ""
        items.append(Item(test_id, row, points, len(passed), rate, r, flag))
    order = {r: i for i, r in enumerate(ROWS)}
    items.sort(key=lambda i: (order.get(i.row, len(order)), i.test))
    return items


def _correlation(x: np.ndarray, y: np.ndarray) -> float | None:
    if len(x) < 2 or x.std() == 0 or y.std() == 0:
        return None
    return float(np.corrcoef(x, y)[0, 1])


def _health(data: ClassResults) -> list[HealthEvent]:
    events = []
    for st in data.students:
        for kind in HEALTH_STATUSES:
            where = [t.id for t in st.tests if t.status == kind]
            if where:
                events.append(HealthEvent(st.name, kind, where))
        if st.judge_errors:
            events.append(HealthEvent(st.name, "judge_error", st.judge_errors))
    return events
