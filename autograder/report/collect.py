"""Read a graded OUT_DIR: every <student>/results.json, timing.json, the judge's logs and the gradebook's
points possible. What cannot be read becomes one sentence in `problems`, and the report goes on without it."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from ..i18n import _
from ..lms import identity
from ..lms import roster as rosters
from ..results import ROWS
from .model import ClassResults, Student, Test

LOGS = "logs"  # the judge's instructor logs (outputs.write_student); a student's folder is OUT/<id>
JUDGE_ERROR = "JUDGE ERROR in "  # how outputs.assemble begins a judge error's line in the log
MAX_RESULTS_BYTES = 20_000_000  # a results.json is ~100 kB; a bigger one is not the judge's


def read(out: Path, roster: Path | None = None) -> ClassResults:
    """The class as the judge left it in `out`: its class index (OUT/class.json) says who each id is; joined
    again to `roster` when one is given (lms/roster.py)."""
    problems: list[str] = []
    if not out.is_dir():
        return ClassResults(
            str(out),
            [],
            {r: 0.0 for r in ROWS},
            [_("{folder} is not a folder.").format(folder=out)],
        )
    index = identity.read_index(out) or _legacy_index(out)
    if roster is not None:
        rosters.join(index, *rosters.read(roster))
    timing = _timing(out, problems)
    students = []
    for m in sorted(index.members, key=lambda m: (m.display, m.id)):
        if not m.submitted:
            students.append(Student(m.id, display=m.display, missing=True, member=m))
            continue
        student = _student(out / m.id, m.display, problems)
        if student is None:
            continue
        student.seconds = timing.get(m.id, student.seconds)
        student.judge_errors = _judge_errors(out / LOGS / f"{m.id}.txt")
        student.display, student.late, student.member = m.display, m.late, m
        students.append(student)
    if not students:
        problems.append(_("No student's results were found in {folder}.").format(folder=out))
    problems = index.problems + index.roster_problems + problems
    data = ClassResults(str(out), students, _maximum(out, students), problems)
    data.roster, data.assignment = index.roster, index.assignment
    return data


def _legacy_index(out: Path) -> identity.ClassIndex:
    """An OUT graded before the judge kept a class index: a folder per student, named by the student."""
    members = [
        identity.Member(p.name, p.name, p.name, "folder", name=p.name)
        for p in sorted(out.iterdir())
        if p.is_dir() and p.name != LOGS
    ]
    return identity.ClassIndex(members)


def _student(folder: Path, shown: str, problems: list[str]) -> Student | None:
    path = folder / "results.json"
    try:
        if path.stat().st_size > MAX_RESULTS_BYTES:
            raise ValueError("too large")
        data = json.loads(path.read_text(encoding="utf-8"))
        tests = [_test(t) for t in data["tests"]]
        seconds = data.get("execution_time")
        seconds = float(seconds) if isinstance(seconds, int | float) else None
    except FileNotFoundError:
        problems.append(
            _("{student}: no results.json (not graded?): left out.").format(student=shown)
        )
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        problems.append(
            _("{student}: results.json cannot be read ({error}): left out.").format(
                student=shown, error=type(e).__name__
            )
        )
        return None
    return Student(folder.name, tests, seconds)


def _test(t: dict) -> Test:
    """One entry of results.json's tests; a TypeError or KeyError if it is not the judge's shape."""
    extra = t.get("extra_data") or {}
    tags = t["tags"]
    if not isinstance(tags, list) or not tags or not isinstance(tags[0], str):
        raise TypeError("tags")
    score, max_score = float(t["score"]), float(t["max_score"])
    status = extra.get("status") or ("passed" if t.get("status") == "passed" else "failed")
    hint = extra.get("hint") or ""
    if not isinstance(t["name"], str) or not isinstance(status, str) or not isinstance(hint, str):
        raise TypeError("name")
    return Test(t["name"], tags[0], score, max_score, status, hint)


def _timing(out: Path, problems: list[str]) -> dict[str, float]:
    path = out / "timing.json"
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {str(k): float(v["seconds"]) for k, v in data.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        problems.append(_("timing.json cannot be read: grading times come from results.json."))
        return {}


def _judge_errors(log: Path) -> list[str]:
    """The judge errors outputs.write_student puts first in the log, before any section of what the student's
    code printed (those start with "## "), so no printed line can pass for one."""
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()[1:]
    except OSError:
        return []
    errors = []
    for line in lines:
        if line.startswith("## "):
            break
        if line.startswith(JUDGE_ERROR):
            errors.append(line)
    return errors


def _maximum(out: Path, students: list[Student]) -> dict[str, float]:
    """Points possible per column: the gradebook's (max) row, the judge's own statement; else the most any
    student's results offered (a student whose grading failed somewhere was offered fewer)."""
    try:
        with open(out / "gradebook.csv", newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                # the judge's own row: the one without an id (a student may be named "(max)")
                if row.get("student") == "(max)" and not row.get("id"):
                    return {r: float(row[r]) for r in ROWS}
    except (OSError, ValueError, KeyError, TypeError, csv.Error):
        pass
    best = {r: 0.0 for r in ROWS}
    for s in students:
        offered: dict[str, float] = {}
        for t in s.tests:
            offered[t.row] = offered.get(t.row, 0.0) + t.max_score
        for r in ROWS:
            best[r] = max(best[r], offered.get(r, 0.0))
    return best
