"""The figures of the page: score distributions, the mistakes the hints named, the failures no hint named,
item analysis per property, and judge health. Pure functions of the ClassResults (docs/report.md says how
each is computed)."""

from __future__ import annotations

import functools
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

from ..components import BY_NAME
from ..results import ROWS
from . import hints, signatures
from .model import ClassResults, Test

# Item analysis: a property whose pass/fail correlates less than this with the rest of the score (and that
# some pass and some fail) is flagged as possibly broken. 0.1: the usual "poor item" line of classical test
# theory (0.2-0.3 fair, > 0.3 good); below it a failure says little about the rest of the work.
LOW_DISCRIMINATION = 0.1
MIN_STUDENTS_FOR_DISCRIMINATION = 5  # fewer: a correlation is noise, shown but never flagged
HEALTH_STATUSES = ("timeout", "crashed", "forbidden")
# not_implemented, forbidden, timeout, crashed explain themselves
UNEXPLAINED_STATUSES = ("failed", "error")
# The judge's hint on every property of a file not handed in: suite.core.ERROR_KIND_HINTS["missing"], spelled
# here because suite.core imports torch (6 s) and the report needs none (tests/test_report.py keeps them equal)
MISSING_HINT = "submit every exercise file, named as in exercises/"


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
    """One misconception of a row: the hints that name it (its wordings), every student who got one."""

    row: str
    hint_id: str  # the misconception: "bug:<component>:<name>" (hints.mistake_id), else the msgid
    label: str  # one wording as a student read it, its content kept
    students: list[str]
    wordings: list[str] = field(default_factory=list)  # the msgids grouped here


@dataclass
class Rooted:
    """Failures of integration re-runs that use this row's file, for students whose own file of this row fails:
    counted here, at their root, not as mistakes of the component re-run (docs/report.md)."""

    row: str  # the upstream component
    downstream: list[str]  # the components whose re-runs failed
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
    # None: undefined (all pass or all fail, or a constant rest of its component)
    discrimination: float | None
    flag: str  # "", "all_pass", "all_fail", "low_discrimination"
    unexplained: int = 0  # failing students whose failure no evidence explains (explained())


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
    rooted: list[Rooted] = field(default_factory=list)
    not_written: dict[str, list[str]] = field(default_factory=dict)
    missing: dict[str, list[str]] = field(
        default_factory=dict
    )  # row -> students who did not hand it in
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
    s.mistakes, s.rooted, s.not_written, s.missing, s.unexplained = _mistakes(data)
    s.items = _items(data)
    s.health = _health(data)
    return s


@functools.cache
def component_of(test_id: str) -> str:
    """The component a property belongs to: an integration re-run's id is `component::integration::name`."""
    return test_id.split("::", 1)[0]


def file_state(tests: list[Test]) -> str:
    """How a student left one component's file, from its properties' results: "missing" (not handed in: the
    judge's missing-file error on every property), "stub" (every property raised NotImplementedError), else ""."""
    own = [t for t in tests if t.row != "integration"]
    if own and all(t.status == "not_implemented" for t in own):
        return "stub"
    if own and all(t.hint and hints.hint_id(t.hint) == MISSING_HINT for t in own):
        return "missing"
    return ""


def failing_files(tests: list[Test]) -> frozenset[str]:
    """The components one of whose own properties (not a re-run) the student fails."""
    return frozenset(component_of(t.id) for t in tests if t.row != "integration" and not t.passed)


def upstream_failures(failing: frozenset[str], component: str) -> list[str]:
    """The student's own files that an integration re-run of `component` runs on (its own file and those it uses,
    components.py `deps`) and that fail a property of their own (`failing`: failing_files): the re-run's failure
    is theirs (as the self-check's "pending": passes.py, check.SelfCheck.blame), counted once, under the file,
    not again as a mistake of the integration row."""
    deps = BY_NAME[component].deps if component in BY_NAME else ()
    return [c for c in (component, *deps) if c in failing]


# long: one pass over the class's outcomes filling the four tallies together
def _mistakes(data: ClassResults):
    """Per row, each misconception's students (a student counts once however many properties or wordings
    named it), most frequent first; the integration failures counted at their root; the students who left a
    row unwritten; failures with no hint, by property."""
    named: dict[tuple[str, str], set[str]] = defaultdict(set)
    wordings: dict[tuple[str, str], Counter] = defaultdict(Counter)
    rooted: dict[tuple[str, str], set[str]] = defaultdict(set)
    stub: dict[str, set[str]] = defaultdict(set)
    gone: dict[str, set[str]] = defaultdict(set)
    bare: dict[tuple[str, str], set[str]] = defaultdict(set)
    for st in data.students:
        failing = failing_files(st.tests)
        # the student's messages per component, grouped into misconceptions together (signatures.py)
        said: dict[str, set[str]] = defaultdict(set)
        for t in st.tests:
            if not t.passed and t.hint and t.row != "integration":
                said[component_of(t.id)].add(hints.hint_id(t.hint))
        grouped = {c: signatures.misconceptions(c, hids) for c, hids in said.items()}
        for t in st.tests:
            if t.passed:
                continue
            component = component_of(t.id)
            roots = upstream_failures(failing, component) if t.row == "integration" else []
            if roots:
                for root in roots:
                    rooted[(root, component)].add(st.name)
            elif t.status == "not_implemented":
                stub[t.row].add(st.name)
            elif t.hint and hints.hint_id(t.hint) == MISSING_HINT:
                gone[t.row].add(st.name)
            elif t.hint:
                hid = hints.hint_id(t.hint)
                mistake = grouped.get(component, {}).get(hid) or hints.mistake_id(component, hid)
                key = (t.row, mistake)
                named[key].add(st.name)
                wordings[key][(hid, t.hint)] += 1
            elif t.status in UNEXPLAINED_STATUSES:
                bare[(t.row, t.id)].add(st.name)
    order = {r: i for i, r in enumerate(ROWS)}

    def key(item):
        (row, what), names = item
        return (order.get(row, len(order)), -len(names), what)

    mistakes = []
    for (r, m), n in sorted(named.items(), key=key):
        (hid, text) = hints.headline(m, wordings[(r, m)])
        ids = sorted({h for h, _ in wordings[(r, m)]})
        mistakes.append(Mistake(r, m, hints.label(hid, text), sorted(n), ids))
    by_root: dict[str, dict[str, set[str]]] = defaultdict(dict)
    for (root, component), n in rooted.items():
        by_root[root][component] = n
    rooted_rows = [
        Rooted(r, [c for c in ROWS if c in by_root[r]], sorted(set().union(*by_root[r].values())))
        for r in ROWS
        if r in by_root
    ]
    unexplained = [Unexplained(r, t, sorted(n)) for (r, t), n in sorted(bare.items(), key=key)]
    not_written = {r: sorted(stub[r]) for r in ROWS if stub.get(r)}
    missing = {r: sorted(gone[r]) for r in ROWS if gone.get(r)}
    return mistakes, rooted_rows, not_written, missing, unexplained


def explained(t: Test, failing: frozenset[str]) -> bool:
    """A failure the evidence explains: a catalog message named the mistake, its status explains itself (the
    stub, a by-hand violation, a time limit, a crash), or it is an integration re-run on a failing file of the
    student's own."""
    if t.status not in UNEXPLAINED_STATUSES:
        return True
    if t.row == "integration" and upstream_failures(failing, component_of(t.id)):
        return True
    return bool(t.hint) and not hints.hint_id(t.hint).startswith(hints.TEXT_ID)


def _items(data: ClassResults) -> list[Item]:
    """Per property: pass rate, and discrimination, the correlation (point-biserial) of passing it with the
    student's points on the rest of its own gradebook column's component (the other properties of that
    component; for an integration re-run, that component's other re-runs), over the students graded on it.
    Against the whole total, one component's failure barely moves it (issue 31): every property looked poor.
    One pass over every student's results (500 students: ~100 000 results)."""
    points: dict[str, tuple[str, float]] = {}
    passed: dict[str, list[float]] = defaultdict(list)
    rest: dict[str, list[float]] = defaultdict(list)
    unexplained: Counter = Counter()
    for st in data.students:
        own: Counter = Counter()  # points per (row, component)
        for t in st.tests:
            own[(t.row, component_of(t.id))] += t.score
        failing = failing_files(st.tests)
        for t in st.tests:
            points.setdefault(t.id, (t.row, t.max_score))
            passed[t.id].append(1.0 if t.passed else 0.0)
            rest[t.id].append(own[(t.row, component_of(t.id))] - t.score)
            if not t.passed and not explained(t, failing):
                unexplained[t.id] += 1
    items = []
    for test_id, (row, worth) in points.items():
        mine = passed[test_id]
        rate = sum(mine) / len(mine)
        r = _correlation(np.array(mine), np.array(rest[test_id]))
        flag = _flag(rate, r, len(mine), unexplained[test_id])
        items.append(Item(test_id, row, worth, len(mine), rate, r, flag, unexplained[test_id]))
    order = {r: i for i, r in enumerate(ROWS)}
    items.sort(key=lambda i: (order.get(i.row, len(order)), i.test))
    return items


def _flag(rate: float, r: float | None, graded: int, unexplained: int) -> str:
    """all_pass, all_fail, or low_discrimination: a failure that does not go with fewer points on the rest of
    the component, with enough students to say so, and at least one failure no evidence explains (a failure
    every student's named mistake explains is the property doing its work, whatever the correlation)."""
    if rate == 1.0:
        return "all_pass"
    if rate == 0.0:
        return "all_fail"
    if (
        graded >= MIN_STUDENTS_FOR_DISCRIMINATION
        and r is not None
        and r < LOW_DISCRIMINATION
        and unexplained
    ):
        return "low_discrimination"
    return ""


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
