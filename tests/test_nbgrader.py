"""End to end with the real nbgrader CLI: build the course, release, submit, autograde, export, feedback.

Each student's points per component, as nbgrader's gradebook holds them, equal what `python -m autograder grade`
gives the same code (the modules their notebooks stand for), in both grading modes. A subset of the course keeps
this short on CI: attention and multi_head, which imports it (so the reference-for-dependencies rule and the
judge's integration share are both exercised).
"""

import csv
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("nbgrader")

from autograder import stubs
from autograder.bugs import catalog
from autograder.lms.identity import folder_of, log_of
from autograder.notebooks import cells

ROOT = Path(__file__).resolve().parent.parent
A = "transformer"
COMPONENTS = ["attention", "multi_head"]
# the same flags for nbgrader's judge and `grade`.
# --jobs 1: a small class (docs/speed.md, "One grading process for a small class")
# --timeout 1: attention's and multi_head's operations take milliseconds of CPU; dave's endless loop runs to the
# limit at each import of his attention (3 s: 13 s more of CPU over the module)
JUDGE_ARGS = ["--jobs", "1", "--timeout", "1"]
BUG = "attention:q_k_swapped"  # breaks attention, and multi_head's integration share (m_q != m_k)
LOOP = ("import torch\n", "import torch\n\nwhile True:  # left over from debugging\n    pass\n")


def environment(tmp: Path) -> dict:
    """nbgrader and its kernels see the kit and the venv, and no personal Jupyter config or kernels."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
    )
    for var in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        env[var] = str(tmp / var.lower())
    env.pop("JUPYTER_PATH", None)
    return env


def run(args, cwd, env, timeout=300):
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{args} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc


def nbgrader(course, env, *args, timeout=300):
    return run([sys.executable, "-m", "nbgrader", *args], course, env, timeout)


def submit(course: Path, student: str, solved=True, edit=None, extra_cell=None):
    """submitted/<student>: the release notebooks, solution cells filled from source/ when solved, one
    (find, replace) edit applied to the solution cell holding `find`, an extra plain cell appended."""
    for name in COMPONENTS:
        release = json.loads((course / "release" / A / f"{name}.ipynb").read_text())
        source = json.loads((course / "source" / A / f"{name}.ipynb").read_text())
        answers = {
            c["metadata"]["nbgrader"]["grade_id"]: c["source"] for c in cells.solution_cells(source)
        }
        for c in cells.solution_cells(release):
            if solved:
                c["source"] = answers[c["metadata"]["nbgrader"]["grade_id"]]
            if edit and edit[0] == name and edit[1] in cells.source_text(c):
                c["source"] = cells.source_text(c).replace(edit[1], edit[2], 1)
        if extra_cell and name == "attention":
            release["cells"].insert(
                3,
                {
                    "cell_type": "code",
                    "id": "scratch",
                    "metadata": {},
                    "source": extra_cell,
                    "outputs": [],
                    "execution_count": None,
                },
            )
        dest = course / "submitted" / student / A
        dest.mkdir(parents=True, exist_ok=True)
        (dest / f"{name}.ipynb").write_text(json.dumps(release))


def make_course(
    tmp: Path, env: dict, grader: str, students: dict, extra_config: str = "", lang: str = "en"
) -> Path:
    course = tmp / f"course-{grader}-{lang}"
    run(
        [
            sys.executable,
            "-m",
            "autograder",
            "nbgrader-course",
            str(course),
            "--components",
            ",".join(COMPONENTS),
            "--grader",
            grader,
            "--timeout",
            "10",
            "--lang",
            lang,
        ],
        ROOT,
        env,
    )
    with open(course / "nbgrader_config.py", "a") as f:
        f.write(extra_config)
    nbgrader(course, env, "generate_assignment", A)
    for student, kw in students.items():
        submit(course, student, **kw)
    start = time.perf_counter()
    nbgrader(course, env, "autograde", A, timeout=600)
    (course / "autograde_seconds").write_text(f"{time.perf_counter() - start:.1f}")
    nbgrader(course, env, "export")
    return course


def scores(course: Path) -> dict:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {
            s.id: {n: gb.find_submission_notebook(n, A, s.id).score for n in COMPONENTS}
            for s in gb.students
        }


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nbgrader")
    env = environment(tmp)
    bug = next(b for b in catalog() if b.id == BUG)
    judge = make_course(
        tmp,
        env,
        "judge",
        {
            "alice": {},  # the reference
            "bob": {"edit": ("attention", bug.find, bug.replace)},
            "carol": {"solved": False},  # the release, untouched
            "dave": {"edit": ("attention", *LOOP)},  # an endless loop in a cell, at module level
        },
        f"\nc.JudgeGrades.grade_args = {JUDGE_ARGS!r}\n",
    )
    nbgrader(judge, env, "generate_feedback", A)
    kernel = make_course(
        tmp,
        env,
        "kernel",
        {
            "bob": {"edit": ("attention", bug.find, bug.replace)},
            "erin": {"extra_cell": "while True:  # a scratch cell that never ends\n    pass"},
        },
    )
    # The same code, graded by the `grade` command: the modules each student's notebooks stand for.
    subs = tmp / "submissions"
    for course, student in [(judge, s) for s in ("alice", "bob", "carol", "dave")] + [
        (kernel, "erin")
    ]:
        cells.submission_from_notebooks(
            course / "submitted" / student / A, subs / student, COMPONENTS
        )
    run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(subs),
            "--out",
            str(tmp / "out"),
            "--quiet",
            *JUDGE_ARGS,
        ],
        ROOT,
        env,
        timeout=600,
    )
    expected = {}
    for student in ("alice", "bob", "carol", "dave", "erin"):
        tests = json.loads((folder_of(tmp / "out", student) / "results.json").read_text())["tests"]
        # A notebook holds its component's test cells and the integration cells that re-run them.
        expected[student] = {
            n: sum(t["score"] for t in tests if t["name"].startswith(f"{n}::")) for n in COMPONENTS
        }
        expected[student]["tests"] = {t["name"]: t for t in tests}
    return {"judge": judge, "kernel": kernel, "subs": subs, "expected": expected}


def test_release_holds_no_solution_code_and_no_hidden_tests(graded):
    from autograder import registry

    hidden = [
        p.name
        for p in registry.load(include_hidden=True)
        if not p.visible and p.component in COMPONENTS
    ]
    for name in COMPONENTS:
        text = (graded["judge"] / "release" / A / f"{name}.ipynb").read_text()
        solution = (ROOT / "solutions" / f"{name}.py").read_text()
        assert "BEGIN SOLUTION" not in text and "HIDDEN TESTS" not in text
        everything = "\n".join(
            ln.strip()
            for c in json.loads(text)["cells"]
            for ln in cells.source_text(c).splitlines()
        )
        for region in stubs.solution_regions(solution):  # no two consecutive lines of solution code
            lines = [ln.strip() for ln in region.splitlines()[1:-1] if ln.strip()]
            assert not [pair for pair in zip(lines, lines[1:]) if "\n".join(pair) in everything]
        assert not [h for h in hidden if h in text]
        # the release notebook stands for exactly the student stub of exercises/
        module = cells.module_source(json.loads(text))
        assert [ln for ln in module.splitlines() if ln.strip()] == [
            ln
            for ln in stubs.strip_solutions(solution).split('"""', 2)[2].splitlines()
            if ln.strip()
        ]


def test_notebooks_stand_for_the_intended_code(graded):
    bug = next(b for b in catalog() if b.id == BUG)
    for name in COMPONENTS:
        ref = (ROOT / "solutions" / f"{name}.py").read_text()
        expect = {
            "alice": ref,
            "bob": bug.apply(ref) if name == bug.component else ref,
            "carol": stubs.strip_solutions(ref),
        }
        for student, source in expect.items():
            got = (graded["subs"] / student / f"{name}.py").read_text()
            assert [ln for ln in got.splitlines() if ln.strip()] == [
                ln for ln in source.split('"""', 2)[2].splitlines() if ln.strip()
            ], (student, name)


def test_judge_mode_points_equal_grade(graded):
    got, expected = scores(graded["judge"]), graded["expected"]
    for student in ("alice", "bob", "carol", "dave"):
        for name in COMPONENTS:
            assert got[student][name] == pytest.approx(expected[student][name], abs=1e-6), (
                student,
                name,
            )
    full = expected["alice"]
    assert got["carol"] == {n: 0 for n in COMPONENTS}
    assert (
        got["bob"]["attention"] < full["attention"]
        and got["bob"]["multi_head"] < full["multi_head"]
    )
    # the loop cost attention only...
    assert got["dave"]["attention"] == 0 and got["dave"]["multi_head"] > 0
    # ...and multi_head's integration share, graded with dave's own attention: the endless import.
    with open(graded["judge"] / "grades.csv") as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f)}
    for student in ("alice", "bob", "carol", "dave"):
        assert float(rows[student]["raw_score"]) == pytest.approx(
            sum(expected[student][n] for n in COMPONENTS)
        )


def test_kernel_mode_points_equal_grade(graded):
    got, expected = scores(graded["kernel"]), graded["expected"]
    for student in ("bob", "erin"):
        for name in COMPONENTS:
            assert got[student][name] == pytest.approx(expected[student][name], abs=1e-6), (
                student,
                name,
            )
    # the endless scratch cell was interrupted, the rest graded as the reference
    for name in COMPONENTS:
        assert got["erin"][name] == pytest.approx(expected["alice"][name], abs=1e-6)


def test_endless_cells_are_stopped_by_the_timeout(graded):
    nb = json.loads((graded["kernel"] / "autograded" / "erin" / A / "attention.ipynb").read_text())
    scratch = next(c for c in nb["cells"] if cells.source_text(c).startswith("while True"))
    assert scratch["outputs"] and {o["output_type"] for o in scratch["outputs"]} == {"error"}
    assert float((graded["kernel"] / "autograde_seconds").read_text()) < 300
    nb = json.loads((graded["judge"] / "autograded" / "dave" / A / "attention.ipynb").read_text())
    errors = [o for c in nb["cells"] for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert errors and any("timeout" in "\n".join(o["traceback"]).lower() for o in errors)


def failing_cells(course, student, name):
    """{test name: the text of its error output} for the failing test cells of an autograded notebook."""
    from autograder.notebooks.grading import CALL

    nb = json.loads((course / "autograded" / student / A / f"{name}.ipynb").read_text())
    out = {}
    for c in nb["cells"]:
        errors = [o for o in c.get("outputs", []) if o["output_type"] == "error"]
        if errors and CALL.search(cells.source_text(c)):
            comp, prop, integration = CALL.search(cells.source_text(c)).groups()
            out[f"{comp}::{'integration::' if integration else ''}{prop}"] = "\n".join(
                errors[0]["traceback"]
            )
    return out


def place(text):
    return re.sub(
        r'\w+\.ipynb, the cell that starts ".*?", line \d+|\w+\.py, line \d+', "<place>", text
    )


@pytest.mark.parametrize("mode", ["judge", "kernel"])
def test_a_failing_cell_shows_what_grade_shows(graded, mode):
    tests, texts = graded["expected"]["bob"]["tests"], []
    for name in COMPONENTS:
        shown = failing_cells(graded[mode], "bob", name)
        failed = {
            t for t, v in tests.items() if t.startswith(f"{name}::") and v["score"] < v["max_score"]
        }
        assert set(shown) == failed and failed
        # a notebook names the cell where `grade` names the file's line
        for (
            test,
            text,
        ) in shown.items():
            assert place(text) == place(tests[test]["output"]), test
        texts += shown.values()
    assert any("hint: " in t and "smallest failing input:" in t for t in texts)


def test_feedback_carries_the_hints(graded):
    html = (graded["judge"] / "feedback" / "bob" / A / "attention.html").read_text()
    assert "smallest failing input" in html and "hint:" in html
    # the judge's own report, kept for the instructor
    judged = graded["judge"] / "judge" / A / "bob"
    assert (folder_of(judged, "submission") / "feedback.html").is_file() and (
        log_of(judged, "submission")
    ).is_file()


def test_a_students_kernel_checks_what_was_run(tmp_path):
    """In a live kernel: setup makes `from .attention import ...` work, an edited solution cell counts once run
    (saved or not: the kernel's copy by cell id wins over the file), integration cells use the sibling notebook."""
    from jupyter_client.manager import start_new_kernel

    from autograder.notebooks import course

    folder = course.build(tmp_path / "course", COMPONENTS) / "source" / A
    env = environment(tmp_path)
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(folder), env=env)

    def execute(code, cell_id=None):
        content = dict(
            code=code, silent=False, store_history=True, user_expressions={}, allow_stdin=False
        )
        msg = kc.session.msg(
            "execute_request", content, metadata={"cellId": cell_id} if cell_id else {}
        )
        kc.shell_channel.send(msg)
        out = []
        while True:
            m = kc.get_iopub_msg(timeout=120)
            if m["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                if m["msg_type"] == "stream":
                    out.append(m["content"]["text"])
                elif m["msg_type"] == "error":
                    out.append("ERROR\n" + "\n".join(m["content"]["traceback"]))
                elif m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                    return "".join(out)

    try:
        nb = json.loads((folder / "multi_head.ipynb").read_text())
        setup, solution = nb["cells"][1], cells.solution_cells(nb)[0]
        assert execute(cells.source_text(setup), setup["id"]) == ""
        good = cells.source_text(solution)
        bad = good.replace("return self.w_o(merged)", "return merged")
        test = '_kit.check("multi_head", "multi_head_equals_torch")'
        assert execute(bad, solution["id"]) == ""  # its relative import worked
        assert execute(test).startswith("ERROR\nfailed:")
        assert execute(good, solution["id"]) == ""
        assert execute(test).startswith("passed:")
        assert execute(
            '_kit.check("multi_head", "multi_head_cross_attention_shape", integration=True)'
        ).startswith("passed:")
    finally:
        kc.stop_channels()
        km.shutdown_kernel()  # gracefully: the kernel removes its temporary folder at exit


def test_a_spanish_course_grades_in_spanish(tmp_path):
    """`nbgrader-course --lang es` in kernel mode: the release is in Spanish and remembers it, and a failing test
    cell, run in nbgrader's kernel, explains itself in Spanish."""
    env = {k: v for k, v in environment(tmp_path).items() if k != "TRANSFORMER_KIT_LANG"}
    bug = next(b for b in catalog() if b.id == BUG)
    edit = {"edit": ("attention", bug.find, bug.replace)}
    course = make_course(tmp_path, env, "kernel", {"bob": edit}, lang="es")
    release = json.loads((course / "release" / A / "attention.ipynb").read_text())
    assert release["metadata"]["kit"]["lang"] == "es"
    assert "## Qué hacer" in cells.source_text(release["cells"][0])
    shown = failing_cells(course, "bob", "attention")
    assert shown and all("la entrada más pequeña que falla:" in text for text in shown.values()), (
        shown
    )
