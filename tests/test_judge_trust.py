"""No student's time or result is spent on another's behalf: issue 11 (items 1-3, 6's bounds) and issue 7
(item 10), graded. One class graded beside an honest student (the reference, "victim"): the hostile submissions
of examples/hostile that attack the judge's trust, two students that burn their own time budget on sections
nobody else has (named to sort before and after the victim), a multi-head bug after the weights, and a grading
process killed in the middle. The victim must get exactly what it gets when graded alone. The fast checks of
what the judge reads from a worker: tests/test_judge_bounds.py.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import signal
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from autograder.judge import sample
from autograder.judge.grading_process import FIELD_LIMITS
from autograder.judge.limits import Limits
from autograder.judge.scheduler import Options, grade
from autograder.lms.identity import folder_of

# ---------------------------------------------------------------------------- one class, one honest student
# Generous for an honest student on a loaded machine (the reference's sections take 1-4 s, its visible suite
# about 6 s of CPU), and twice the burner's section limit exceeds its budget. Each burner spends its whole
# budget: at 20 and 38 (until stop 52) the two took 76 s of CPU, two thirds of the class's.
LIMITS = Limits(op_timeout=4, section_timeout=10, submission_timeout=19, memory_mb=1024)
CLASS = {
    "victim": "reference",
    "aa_burner": "hostile:budget_burner",  # sorts before the victim: it used to be charged the shared sections
    "zz_burner": "hostile:budget_burner",
    "error_bomb": "hostile:error_bomb",
    "forged_bomb": "hostile:forged_bomb",
    "huge_returns": "hostile:huge_returns",
    "picture_mathtext": "hostile:picture_mathtext",
    "long_names": "hostile:long_names",
    "merge": "bug:multi_head:merge_without_transpose",
}


def grader_pids() -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if (
                proc.name.isdigit()
                and b"autograder.judge.grading_process" in (proc / "cmdline").read_bytes()
            ):
                if int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1]) == os.getpid():
                    pids.append(int(proc.name))
        except (OSError, ValueError, IndexError):
            pass
    return pids


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("trust")
    subs, out = base / "submissions", base / "out"
    sample.materialize(CLASS, subs)
    options = Options(jobs=2, limits=LIMITS, include_hidden=False)
    killed: dict = {}

    def kill_one_grader():  # a grading process dies mid-section: its section is regraded, charged to nobody else
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not any(out.glob("*/results.json")):
            time.sleep(0.2)  # once a student is done, both grading processes are set up and at work
        pids = grader_pids()
        if pids:
            killed["limits"] = Path(f"/proc/{pids[0]}/limits").read_text()
            os.kill(pids[0], signal.SIGKILL)
            killed["pid"] = pids[0]

    killer = threading.Thread(target=kill_one_grader, daemon=True)
    killer.start()
    results = grade(subs, out, options)
    killer.join(timeout=1)
    # one submission: one grading process (the same bytes at any --jobs: tests/test_judge.py)
    alone = grade(
        sample.materialize({"victim": "reference"}, base / "alone"),
        base / "alone-out",
        replace(options, jobs=1),
    )
    yield {
        "results": results,
        "out": out,
        "alone": alone,
        "alone_out": base / "alone-out",
        "killed": killed,
    }
    shutil.rmtree(base, ignore_errors=True)


def outcomes(graded, student, component=None):
    return [
        o for o in graded["results"][student].outcomes if component in (None, o.property.component)
    ]


def failed(graded, student, component):
    return [o for o in outcomes(graded, student, component) if not o.passed]


def messages(graded, student, component):
    return " | ".join(o.message for o in failed(graded, student, component))


def without_time(path: Path) -> str:
    return "".join(
        line for line in path.read_text().splitlines(True) if '"execution_time"' not in line
    )


def test_the_victim_gets_exactly_its_reference_grade(graded):
    """Graded beside every attack, burners before and after it, a grading process killed: the same bytes."""
    assert graded["results"]["victim"].points() == graded["alone"]["victim"].points()
    assert without_time(folder_of(graded["out"], "victim") / "results.json") == without_time(
        folder_of(graded["alone_out"], "victim") / "results.json"
    )
    for student in graded["results"]:
        assert not graded["results"][student].errors, (student, graded["results"][student].errors)


def test_no_message_names_another_student(graded):
    for path in (folder_of(graded["out"], "victim")).iterdir():
        text = path.read_text(errors="replace") if path.suffix != ".png" else ""
        assert "aa_burner" not in text and "zz_burner" not in text, path
    for student in ("aa_burner", "zz_burner"):
        for path in (folder_of(graded["out"], student)).glob("*.*"):
            if path.suffix != ".png":
                other = "zz_burner" if student == "aa_burner" else "aa_burner"
                assert other not in path.read_text() and "victim" not in path.read_text(), path


def test_a_burned_budget_is_the_burners_own(graded):
    victim = graded["results"]["victim"].points()
    for burner in ("aa_burner", "zz_burner"):
        pts = graded["results"][burner].points()
        # its own slow sections ran out of time
        assert pts["attention_numpy"] < victim["attention_numpy"]
        assert any("time limit" in o.message for o in failed(graded, burner, "attention_numpy"))
    # aa's budget was gone before its shared sections: not run, for it alone; zz reused the victim's results
    # (obtained normally), which cost it nothing.
    assert "was used up" in messages(graded, "aa_burner", "transformer")

    def section(student):
        return sum(
            o.score for o in outcomes(graded, student, "transformer") if not o.property.integration
        )

    assert section("zz_burner") == section("victim")


def test_the_burner_earns_no_point_its_control_would_not(graded, tmp_path):
    """tests/test_judge_hostile.py's rule for every attack (never more than its control, per component), for the
    one graded here: its control, the block removed, is the reference's code, so the victim's points stand
    for the control's."""
    control = sample.make("control:budget_burner", tmp_path / "control")
    for f in control.glob("*.py"):
        reference = sample.KIT / "solutions" / f.name
        assert ast.dump(ast.parse(f.read_text())) == ast.dump(ast.parse(reference.read_text())), f
    victim = graded["results"]["victim"].points()
    for burner in ("aa_burner", "zz_burner"):
        for component, points in graded["results"][burner].points().items():
            assert points <= victim[component], (burner, component, points, victim[component])


def test_a_killed_grading_process_is_regraded_not_marked(graded):
    assert graded["killed"].get("pid"), "no grading process was killed"
    limits = graded["killed"]["limits"]
    # the grading processes have limits too
    assert re.search(r"Max address space\s+\d+", limits), limits
    assert re.search(r"Max cpu time\s+\d+", limits), limits
    for student in graded["results"]:
        assert "grading process" not in " ".join(o.message for o in outcomes(graded, student))


def test_an_error_bomb_costs_only_its_component(graded):
    statuses = {o.status for o in failed(graded, "error_bomb", "multi_head")}
    # the grading process never died on it
    assert "error" in statuses and "crashed" not in statuses, statuses
    assert "not text" in messages(graded, "error_bomb", "multi_head")


def test_a_forged_bomb_frame_is_refused(graded):
    assert graded["results"]["forged_bomb"].points()["attention"] == 0
    assert "crashed" in {o.status for o in failed(graded, "forged_bomb", "attention")}
    assert "not data" in messages(graded, "forged_bomb", "attention")
    assert "parts" in messages(graded, "forged_bomb", "attention")


def test_huge_returns_are_refused(graded):
    text = messages(graded, "huge_returns", "attention")
    # the dict: refused unread
    assert "not data" in text and ("parts" in text or "operations" in text)
    assert (
        graded["results"]["huge_returns"].points()["attention"]
        < graded["results"]["victim"].points()["attention"]
    )


def test_a_picture_that_would_crash_is_drawn_plain(graded):
    r = graded["results"]["picture_mathtext"]
    # correct everywhere but on the picture
    assert r.points() == graded["results"]["victim"].points(), [
        (o.property.id, o.message) for o in r.outcomes if not o.passed
    ]
    assert r.picture.startswith(b"\x89PNG")
    assert (
        "There are no weights to picture" in r.picture_caption and "$\\frac{ $" in r.picture_caption
    )
    html = (folder_of(graded["out"], "picture_mathtext") / "feedback.html").read_text()
    assert "&lt;b&gt;html&lt;/b&gt;" in html and "<b>html</b>" not in html


def test_the_feedback_carries_no_file(graded):
    """400 parameter names of 2 000 characters each (a whole file's worth): each field is cut in the judge."""
    assert (
        graded["results"]["long_names"].points()["multi_head"]
        < graded["results"]["victim"].points()["multi_head"]
    )
    for student in graded["results"]:
        data = json.loads((folder_of(graded["out"], student) / "results.json").read_text())
        for test in data["tests"]:
            assert len(test.get("output", "")) <= sum(FIELD_LIMITS.values()) + 500, (
                student,
                test["name"],
            )
    for name in ("results.json", "feedback.html", "feedback.md"):
        text = (folder_of(graded["out"], "long_names") / name).read_text()
        assert text.count("SMUGGLED_LINE_") * len("SMUGGLED_LINE_") < 4 * FIELD_LIMITS["message"], (
            name
        )


def test_the_merge_bug_is_pictured_truthfully(graded):
    r = graded["results"]["merge"]
    assert r.points()["multi_head"] < graded["results"]["victim"].points()["multi_head"]
    assert "weights match the reference, but your output does not" in r.picture_caption
    for name in ("feedback.html", "feedback.md"):
        assert "your output does not" in (folder_of(graded["out"], "merge") / name).read_text()
