"""nbgrader autograde time per student on the whole course, beside `python -m autograder grade` on the same code.

    python benchmarks/bench_nbgrader.py [--modes judge,kernel] [--bug multi_head:merge_without_transpose] [--write]

Three students (the reference filled in, one cataloged bug, the untouched release) in a course of every
component's notebook. Prints a Markdown table; --write also saves it as benchmarks/figures/nbgrader.md, which
`python -m autograder generate` puts in the README.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder import KIT  # the installed kit (pip install -e .)

A = "transformer"


def environment(tmp: Path) -> dict:
    env = dict(
        os.environ,
        PYTHONPATH=str(KIT),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
    )
    for var in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        env[var] = str(tmp / var.lower())
    return env


def run(args, cwd, env) -> float:
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode:
        sys.exit(f"{args} failed:\n{proc.stderr[-3000:]}")
    return time.perf_counter() - start


def submit(course: Path, student: str, solved: bool, bug=None) -> None:
    from autograder.notebooks import cells

    for path in sorted((course / "release" / A).glob("*.ipynb")):
        nb = json.loads(path.read_text())
        source = json.loads((course / "source" / A / path.name).read_text())
        answers = {
            c["metadata"]["nbgrader"]["grade_id"]: cells.source_text(c)
            for c in cells.solution_cells(source)
        }
        for c in cells.solution_cells(nb):
            if solved:
                c["source"] = answers[c["metadata"]["nbgrader"]["grade_id"]]
            if bug and bug.component == path.stem and bug.find in cells.source_text(c):
                c["source"] = bug.apply(cells.source_text(c))
        dest = course / "submitted" / student / A
        dest.mkdir(parents=True, exist_ok=True)
        (dest / path.name).write_text(json.dumps(nb))


def main() -> None:
    from autograder.bugs import catalog
    from autograder.components import NAMES
    from autograder.notebooks import cells

    parser = argparse.ArgumentParser()
    parser.add_argument("--modes", default="judge,kernel")
    parser.add_argument("--bug", default="multi_head:merge_without_transpose")
    parser.add_argument(
        "--write", action="store_true", help="save the table in benchmarks/figures/"
    )
    args = parser.parse_args()
    bug = next(b for b in catalog() if b.id == args.bug)
    students = {
        "reference": dict(solved=True),
        "bug": dict(solved=True, bug=bug),
        "untouched": dict(solved=False),
    }
    tmp = Path(tempfile.mkdtemp(prefix="bench-nbgrader-"))
    env = environment(tmp)
    rows = []
    try:
        for mode in args.modes.split(","):
            course = tmp / mode
            run(
                [
                    sys.executable,
                    "-m",
                    "autograder",
                    "nbgrader-course",
                    str(course),
                    "--grader",
                    mode,
                ],
                KIT,
                env,
            )
            run([sys.executable, "-m", "nbgrader", "generate_assignment", A], course, env)
            for name, kw in students.items():
                submit(course, name, **kw)
            seconds = run([sys.executable, "-m", "nbgrader", "autograde", A], course, env)
            rows.append((f"`nbgrader autograde`, {mode} mode", seconds))
        subs = tmp / "submissions"
        for name in students:
            cells.submission_from_notebooks(course / "submitted" / name / A, subs / name, NAMES)
        for label, extra in [
            ("`python -m autograder grade` on the same code", []),
            ("`python -m autograder grade --no-cache`", ["--no-cache"]),
        ]:
            out = tmp / f"out{len(extra)}"
            seconds = run(
                [
                    sys.executable,
                    "-m",
                    "autograder",
                    "grade",
                    str(subs),
                    "--out",
                    str(out),
                    "--quiet",
                    *extra,
                ],
                KIT,
                env,
            )
            rows.append((label, seconds))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    n = len(students)
    table = (
        f"| whole course ({len(NAMES)} notebooks), {n} students ({', '.join(students)}), "
        f"{os.cpu_count()} cores | total s | s per student |\n|---|---:|---:|\n"
        + "".join(f"| {label} | {seconds:.1f} | {seconds / n:.1f} |\n" for label, seconds in rows)
        + f"| load average (1 min) after | {os.getloadavg()[0]:.1f} | |\n"
    )
    print(table)
    if args.write:
        (KIT / "benchmarks" / "figures" / "nbgrader.md").write_text(table)


if __name__ == "__main__":
    main()
