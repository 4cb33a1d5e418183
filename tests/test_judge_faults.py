"""No error in grading one student can stop the others (issue 19, item 1).

One class, graded once: an honest student ("victim", the reference) and one student per stage of grading, at
which the judge itself is made to raise (fault injection): reading the files, compiling one, one section, the
picture (in the grading processes, through a sitecustomize module on their path), assembling, feedback.html,
results.json and the gradebook row (in the orchestrator). Each faulty student gets a judge error of their own
(a line in their feedback and their log) and everything else: every student has results.json and feedback,
the gradebook has every row, and the victim's grade is exactly its grade alone.

The faulty students submit attention.py and mask.py only (their other sections need no worker), so the class
costs about one reference submission and a few small sections: ~25 s of CPU.
"""

from __future__ import annotations

import csv
import json
import shutil
import textwrap
from dataclasses import replace

import pytest

from autograder.judge import feedback, outputs, sample, scheduler
from autograder.judge.limits import Limits
from autograder.judge.outputs import JUDGE_ERROR_LINE
from autograder.judge.scheduler import Options, grade
from autograder.lms.identity import folder_of

LIMITS = Limits(op_timeout=4, section_timeout=30, memory_mb=1024)
ORCHESTRATOR_STAGES = ("read", "assemble", "feedback", "results", "gradebook")
GRADER_STAGES = ("compile", "section", "picture")

# Patches the grading process (its own interpreter): a student whose files include fault_<stage>.py makes
# the judge raise at that stage.
SITECUSTOMIZE = textwrap.dedent(
    """
    from autograder.judge import grading_process as _gp, package_folder as _pf

    class InjectedFault(Exception):
        pass

    _compiled, _run, _picture = _pf.PackageFolder.compiled, _gp.GradingProcess.run, _gp.GradingProcess.picture

    def compiled(self, name, data, path):
        if name == "fault_compile.py":
            raise InjectedFault("compile")
        return _compiled(self, name, data, path)

    def run(self, section):
        self._fault_picture = "fault_picture.py" in section.files
        if "fault_section.py" in section.files and section.component == "mask":
            raise InjectedFault("section")
        return _run(self, section)

    def picture(self, student):
        if self._fault_picture:
            raise InjectedFault("picture")
        return _picture(self, student)

    _pf.PackageFolder.compiled, _gp.GradingProcess.run, _gp.GradingProcess.picture = compiled, run, picture
    """
)


class InjectedFault(Exception):
    pass


def faulty(stage: str, fn):
    """fn, raising for the student named f-<stage> (its first argument names the student somewhere)."""

    def patched(*args, **kwargs):
        if f"f-{stage}" in repr(args[:2])[:2000]:
            raise InjectedFault(stage)
        return fn(*args, **kwargs)

    return patched


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("faults")
    subs, out = base / "submissions", base / "out"
    sample.materialize({"victim": "reference"}, subs)
    for stage in ORCHESTRATOR_STAGES + GRADER_STAGES:
        folder = subs / f"f-{stage}"
        folder.mkdir()
        for name in ("attention.py", "mask.py"):
            shutil.copyfile(subs / "victim" / name, folder / name)
        if stage in GRADER_STAGES:
            (folder / f"fault_{stage}.py").write_text("VALUE = 1\n")
    site = base / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    mp = pytest.MonkeyPatch()
    mp.setenv("PYTHONPATH", str(site))
    mp.setattr(scheduler, "read_files", faulty("read", scheduler.read_files))
    mp.setattr(scheduler, "assemble", faulty("assemble", scheduler.assemble))
    mp.setattr(feedback, "html", faulty("feedback", feedback.html))
    mp.setattr(outputs, "results_json", faulty("results", outputs.results_json))
    mp.setattr(scheduler, "gradebook_row", faulty("gradebook", scheduler.gradebook_row))
    options = Options(jobs=2, limits=LIMITS, include_hidden=False)
    try:
        results = grade(subs, out, options)
    finally:
        mp.undo()
    # one submission: one grading process (the same bytes at any --jobs: tests/test_judge.py)
    alone = grade(
        sample.materialize({"victim": "reference"}, base / "alone"),
        base / "alone-out",
        replace(options, jobs=1),
    )
    yield {"results": results, "out": out, "alone": alone}
    shutil.rmtree(base, ignore_errors=True)


def without_time(text: str) -> str:
    return "".join(line for line in text.splitlines(True) if '"execution_time"' not in line)


def test_every_student_is_written_and_the_gradebook_has_every_row(graded):
    out, results = graded["out"], graded["results"]
    for s in results:
        for name in ("results.json", "feedback.html", "feedback.md"):
            assert (folder_of(out, s) / name).is_file(), (s, name)
        json.loads((folder_of(out, s) / "results.json").read_text())
    with open(out / "gradebook.csv", newline="") as f:
        rows = {row["student"] for row in csv.DictReader(f)}
    assert rows == {"(max)", *results}


def test_the_victim_gets_exactly_its_grade_alone(graded):
    out = graded["out"]
    assert not graded["results"]["victim"].errors
    alone = (folder_of(graded["out"].parent / "alone-out", "victim") / "results.json").read_text()
    assert without_time((folder_of(out, "victim") / "results.json").read_text()) == without_time(
        alone
    )


@pytest.mark.parametrize("stage", ORCHESTRATOR_STAGES + GRADER_STAGES)
def test_a_fault_is_a_judge_error_of_that_student_alone(graded, stage):
    out, r = graded["out"], graded["results"][f"f-{stage}"]
    assert r.errors and any("InjectedFault" in e for e in r.errors), r.errors
    log = outputs.log_path(out, r.key).read_text()
    assert "JUDGE ERROR" in log and "InjectedFault" in log
    line = str(JUDGE_ERROR_LINE)
    if stage != "feedback":  # its fallback page says just that
        assert line in (folder_of(out, r.name) / "feedback.md").read_text()
    assert line in (folder_of(out, r.name) / "feedback.html").read_text()
    assert line in json.loads((folder_of(out, r.name) / "results.json").read_text())["output"]
    # no other student carries this fault
    for other, result in graded["results"].items():
        if other != r.name:
            assert not any(f"InjectedFault: {stage}" in e for e in result.errors), other


@pytest.mark.parametrize("stage", ["section", "picture"])
def test_what_the_fault_did_not_reach_is_graded(graded, stage):
    """A fault in the mask section leaves attention graded; one in the picture leaves the integration share."""
    r = graded["results"][f"f-{stage}"]
    points = r.points()
    assert points["attention"] == graded["alone"]["victim"].points()["attention"]
    if stage == "picture":
        assert points["mask"] == graded["alone"]["victim"].points()["mask"]
