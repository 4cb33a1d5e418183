"""Read a graded OUT_DIR: every <student>/results.json, timing.json, the judge's logs and the gradebook's
points possible. What cannot be read becomes one sentence in `problems`, and the report goes on without it."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from ..i18n import _
from ..results import ROWS
from .model import ClassResults, Student, Test

LOGS = "logs"  # the judge's instructor logs (outputs.write_student): not a student
JUDGE_ERROR = "JUDGE ERROR in "  # how outputs.assemble begins a judge error's line in the log
MAX_RESULTS_BYTES = 20_000_000  # a results.json is ~100 kB; a bigger one is not the judge's


def read(out: Path) -> ClassResults:
    problems: list[str] = []
    if not out.is_dir():
        return ClassResults(
            str(out),
            [],
            {r: 0.0 for r in ROWS},
            [_("{folder} is not a folder.").format(folder=out)],
        )
    timing = _timing(out, problems)
    students = []
    for folder in sorted(p for p in out.iterdir() if p.is_dir() and p.name != LOGS):
        student = _student(folder, problems)
        if student is None:
            continue
        student.seconds = timing.get(student.name, student.seconds)
        student.judge_errors = _judge_errors(out / LOGS / f"{folder.name}.txt")
        students.append(student)
    if not students:
        problems.append(_("No student's results were found in {folder}.").format(folder=out))
    return ClassResults(str(out), students, _maximum(out, students), problems)


def _student(folder: Path, problems: list[str]) -> Student | None:
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
            _("{student}: no results.json (not graded?): left out.").format(student=folder.name)
        )
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        problems.append(
            _("{student}: results.json cannot be read ({error}): left out.").format(
                student=folder.name, error=type(e).__name__
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
                if row.get("student") == "(max)":
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
