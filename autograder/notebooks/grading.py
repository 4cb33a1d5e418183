"""JudgeGrades: an nbgrader autograde preprocessor that grades a notebook outside any student kernel.

It takes the place of nbgrader's Execute in the autograde pipeline (nbgrader_config.py, GRADER = "judge"). For a
student it turns every submitted notebook into <component>.py (its solution cells, cells.py), grades that folder
once with the isolated judge (`python -m autograder grade`, the command that grades folders), and writes
each test cell's output from the verdict of its property: the pass text, or an error holding the judge's
report (message, smallest failing input, hint), which nbgrader's SaveAutoGrades scores 0. The test cells
themselves come from nbgrader's gradebook (OverwriteCells), so nothing in the submission decides which
property a cell stands for or what it is worth.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from nbformat.v4 import new_output
from nbgrader import utils
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Float, List, Unicode

from ..components import NAMES
from ..i18n import _
from . import cells

CALL = re.compile(r'_kit\.check\("(\w+)", "(\w+)"(, integration=True)?\)')
# hash of a student's modules -> {test name: Gradescope test}
_cache: dict[str, dict[str, dict]] = {}


class JudgeRunError(RuntimeError):
    """Running the judge from nbgrader failed (not the student's code): nbgrader reports the notebook as not
    graded. (judge/remote.JudgeError is the judge's own: no sandbox for a worker.)"""


def judge_verdicts(
    submissions: Path, student: str, grade_args: list[str], wall: float, out: Path
) -> dict:
    """Run `python -m autograder grade submissions --out out *grade_args` on one student's folder of
    <component>.py files; return {test name: Gradescope test} from their results.json. A separate process
    group with a wall-clock limit: whatever happens in the judge, nbgrader does not hang."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        str(submissions),
        "--out",
        str(out),
        "--quiet",
        *grade_args,
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        _, err = proc.communicate(timeout=wall)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise JudgeRunError(f"the judge ran past {wall:g} s: {' '.join(cmd)}") from None
    from ..lms.identity import folder_of

    path = folder_of(out, student) / "results.json"  # OUT/<the judge's id>/
    if not path.is_file():
        raise JudgeRunError(
            f"the judge wrote no results (exit {proc.returncode}): {' '.join(cmd)}\n{err[-3000:]}"
        )
    return {t["name"]: t for t in json.loads(path.read_text())["tests"]}


def cell_outputs(test: dict | None, name: str) -> list:
    """Outputs that make nbgrader's determine_grade give the judge's score: an error = 0, a number = partial
    credit, plain text = full points."""
    if test is None:
        return [
            new_output(
                "error",
                ename="NotGraded",
                evalue=name,
                traceback=[
                    _("not graded: the judge returned no verdict for {test}").format(test=name)
                ],
            )
        ]
    text = test.get("output") or (
        _("passed") if test["score"] >= test["max_score"] else _("failed")
    )
    if test["score"] >= test["max_score"]:
        return [new_output("stream", name="stdout", text=text + "\n")]
    if test["score"] <= 0:
        return [
            new_output(
                "error",
                ename="PropertyFailed",
                evalue=text.splitlines()[0],
                traceback=text.splitlines(),
            )
        ]
    return [
        new_output("stream", name="stdout", text=text + "\n"),
        new_output(
            "execute_result", data={"text/plain": repr(float(test["score"]))}, execution_count=None
        ),
    ]


def submitted_folder(config, student: str, assignment: str) -> Path:
    coursedir = CourseDirectory(config=config)
    return Path(coursedir.format_path(coursedir.submitted_directory, student, assignment))


def course_root(config) -> str:
    return os.path.abspath(CourseDirectory(config=config).root)


class StudentModules(NbGraderPreprocessor):
    """Kernel mode, before Execute: the student's modules (all their notebooks) into a temporary folder named
    by $KIT_STUDENT_MODULES, which the kernel inherits; the integration test cells import from it (the
    notebooks are autograded one by one, so the later ones are not yet in the autograded folder)."""

    def preprocess(self, nb, resources):
        from .kernel import STUDENT_MODULES

        info = resources["nbgrader"]
        old = os.environ.get(STUDENT_MODULES)
        if old and Path(old).name.startswith("kit-modules-"):
            shutil.rmtree(old, ignore_errors=True)
        folder = tempfile.mkdtemp(prefix="kit-modules-")
        atexit.register(shutil.rmtree, folder, True)
        cells.submission_from_notebooks(
            submitted_folder(self.config, info["student"], info["assignment"]), Path(folder), NAMES
        )
        os.environ[STUDENT_MODULES] = folder
        return nb, resources


class JudgeGrades(NbGraderPreprocessor):
    grade_args = List(
        Unicode(),
        [],
        help="flags of `python -m autograder grade` (--timeout, --jobs, --no-hidden...)",
    ).tag(config=True)
    wall_timeout = Float(
        900.0, help="seconds before a judge run is killed (a judge failure, not the student's)"
    ).tag(config=True)

    def verdicts(self, student: str, assignment: str) -> dict[str, dict]:
        submitted = submitted_folder(self.config, student, assignment)
        with tempfile.TemporaryDirectory(prefix="kit-nb-") as tmp:
            folder = cells.submission_from_notebooks(submitted, Path(tmp) / "submission", NAMES)
            files = sorted((p.name, p.read_text()) for p in folder.glob("*.py"))
            key = hashlib.sha256(repr((student, list(self.grade_args), files)).encode()).hexdigest()
            if key not in _cache:  # one judge run per student, shared by all their notebooks
                self.log.info(
                    "Grading %s's %d modules with the isolated judge", student, len(files)
                )
                root = course_root(self.config)
                # Workers must not see the course: source/ holds the reference and the hidden tests. The judge's
                # own report is kept for the instructor: judge/<assignment>/<student>/submission/feedback.html,
                # .../logs/submission.txt (what the code printed).
                args = [*self.grade_args, "--hide", root]
                out = Path(root) / "judge" / assignment / student
                _cache[key] = judge_verdicts(Path(tmp), "submission", args, self.wall_timeout, out)
            return _cache[key]

    def preprocess(self, nb, resources):
        from ..suite.core import property_id

        info = resources["nbgrader"]
        verdicts = self.verdicts(info["student"], info["assignment"])
        for cell in nb.cells:
            if cell.cell_type != "code" or not utils.is_grade(cell) or utils.is_solution(cell):
                continue
            call = CALL.search(cell.source)
            name = (
                property_id(call.group(1), call.group(2), integration=bool(call.group(3)))
                if call
                else f"{info['notebook']}::?"
            )
            cell.outputs = cell_outputs(verdicts.get(name), name)
            cell.execution_count = None
        return nb, resources
