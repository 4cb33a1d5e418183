"""`python -m autograder nbgrader-course DIR`: the kit as an nbgrader course, generated from solutions/.

One notebook per component (source/<assignment>/<component>.ipynb): the explanation (module docstring and the
contract from the component's declaration), a read-only setup cell, the module's code as solution cells (the
reference, between nbgrader's ### BEGIN/END SOLUTION markers), then one read-only autograded test cell per
property, worth the property's points; hidden properties sit between ### BEGIN/END HIDDEN TESTS, so the release
shows only their points.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .. import KIT
from ..components import COMPONENTS, get
from ..properties import core
from . import cells

SOLUTIONS = KIT / "solutions"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
MODES = ("judge", "kernel")


def _nbgrader(grade_id: str, *, solution=False, grade=False, locked=False, points=None) -> dict:
    meta = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": 3,
        "solution": solution,
    }
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta, **({"editable": False, "deletable": False} if locked else {})}


def _cell(kind: str, source: str, metadata: dict | None = None) -> dict:
    cell = {"cell_type": kind, "id": "", "metadata": metadata or {}, "source": source}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def _points(x: float) -> str:
    return f"{x:g} point" + ("" if x == 1 else "s")


def check_source(p: core.Property, integration: float | None = None) -> str:
    if integration is not None:
        deps = ", ".join(get(p.component).deps)
        return (
            f"# Integration (your pieces together), {_points(integration)}: {p.summary}\n# Run with your own "
            f"{deps} (your earlier notebooks) in place of the reference; the gradebook counts it in the "
            f"integration column, not in {p.component}.\n"
            f'_kit.check("{p.component}", "{p.name}", integration=True)'
        )
    call = f'_kit.check("{p.component}", "{p.name}")'
    if p.visible:
        return f"# {_points(p.points)}: {p.summary}\n{call}"
    return (
        f"# Hidden test, {_points(p.points)}: it runs when your notebook is graded.\n"
        f"### BEGIN HIDDEN TESTS\n{call}\n### END HIDDEN TESTS"
    )


def notebook(name: str, properties: list[core.Property], number: int, integration=()) -> dict:
    """integration: (property, points) pairs the judge re-runs with the student's own dependencies."""
    comp = get(name)
    doc, chunks = cells.split_module((SOLUTIONS / comp.filename).read_text())
    visible = [p for p in properties if p.visible]
    hidden = [p for p in properties if not p.visible]
    deps = ", ".join(f"`{d}`" for d in comp.deps)
    uses = (
        (
            f"This module imports {deps} relatively (`from .{comp.deps[-1]} import ...`), as the files do. "
            "Here those imports come from your earlier notebooks in this folder; your grade uses the "
            "reference for them, so a mistake there costs points only there.\n\n"
        )
        if comp.deps
        else ""
    )
    intro = (
        f"# {number}. {comp.title} (`{comp.filename}`)\n\n{doc}\n\n"
        f"## The contract\n\n```text\n{comp.contract_block}\n```\n\n"
        "## What to do\n\n"
        "Replace each `raise NotImplementedError` below with your code. The cells that hold it (the "
        f"*solution cells*) are your module `{comp.filename}`: they are graded together as that file, and "
        "nothing else in this notebook is. Put helpers and imports in those cells; use new cells for "
        f"experiments. Run the setup cell first.\n\n{uses}"
        + (
            "By hand means by hand: the tests notice a call to the library function that does the same job."
            if comp.forbidden_families
            else ""
        )
    )
    nb_cells = [
        _cell("markdown", intro),
        _cell(
            "code",
            "# Read-only. Run me first: the cells below then run as the module "
            f"{comp.filename}.\nimport autograder.notebooks.kernel as _kit\n\n"
            f'__package__ = _kit.setup("{name}")',
            _nbgrader("setup", locked=True),
        ),
    ]
    for i, chunk in enumerate(chunks, 1):
        nb_cells.append(_cell("code", chunk, _nbgrader(f"solution_{i}", solution=True)))
    hidden_points = sum(p.points for p in hidden)
    nb_cells.append(
        _cell(
            "markdown",
            (
                f"## Tests\n\nEach cell below checks one property of `{comp.filename}` and is worth its points "
                f"({_points(sum(p.points for p in visible))} here"
                + (
                    f", plus {_points(hidden_points)} in {len(hidden)} hidden tests run at grading"
                    if hidden
                    else ""
                )
                + ")."
                + (
                    f" The last {len(integration)} cells are integration tests (your pieces together, "
                    f"{_points(sum(x for _, x in integration))}): they re-run a property with your own "
                    "earlier modules, "
                    "and the gradebook counts them in its integration column."
                    if integration
                    else ""
                )
                + " A failure prints the smallest input on which your code goes wrong and a hint naming the likely "
                "mistake, as `pytest` and the `grade` command do. Run them all with *Run > Run All Cells*."
            ),
        )
    )
    k = 0
    for p in visible + hidden:
        # a hidden name stays hidden
        gid = f"test_{p.name}" if p.visible else f"hidden_test_{(k := k + 1)}"
        nb_cells.append(
            _cell("code", check_source(p), _nbgrader(gid, grade=True, locked=True, points=p.points))
        )
    for p, points in integration:
        nb_cells.append(
            _cell(
                "code",
                check_source(p, points),
                _nbgrader(f"integration_{p.name}", grade=True, locked=True, points=points),
            )
        )
    for i, cell in enumerate(nb_cells):
        cell["id"] = f"cell-{i}"
    return {
        "cells": nb_cells,
        "metadata": {
            "kernelspec": KERNELSPEC,
            "language_info": {"name": "python"},
            "kit": {"component": name},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


CONFIG = '''\
"""nbgrader configuration of the Transformer kit course (generated by `python -m autograder nbgrader-course`).

GRADER decides who runs the students' code at `nbgrader autograde` (docs/nbgrader.md):
  "judge"   the notebooks are not executed; each notebook's solution cells become <component>.py and the
            isolated judge grades them; every test cell's output and points come from its verdict.
  "kernel"  plain nbgrader: the notebooks run in a Jupyter kernel and the test cells check the code there.
The kit (`pip install transformer-autograder[nbgrader]`, or -e from a checkout) must be importable by nbgrader
and, in "kernel" mode, by the kernel.
"""
import os
import sys

GRADER = {grader!r}
KIT = {kit!r}  # the checkout this course was generated from: used only if the kit is not installed

c = get_config()  # noqa: F821
here = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.root = here
c.CourseDirectory.course_id = "transformer-kit"

try:
    import autograder  # noqa: F401
except ImportError:  # fall back on the checkout; kernels inherit PYTHONPATH
    sys.path.insert(0, KIT)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (KIT, os.environ.get("PYTHONPATH")) if p)

# Same stub as exercises/ (nbgrader's default adds "()").
c.ClearSolutions.code_stub = dict(python="# YOUR CODE HERE\\nraise NotImplementedError")
# A deleted or de-marked test cell comes back from the gradebook, and is graded.
c.OverwriteCells.add_missing_cells = True
# "kernel" mode: a cell running longer than this is interrupted and errors (0 points); the kernel goes on.
# ("judge" mode runs no kernel: the judge's own limits apply, below.)
c.Execute.timeout = {timeout}
c.ExecutePreprocessor.timeout = {timeout}

if GRADER == "judge":
    # nbgrader's pipeline with Execute replaced: no kernel starts, no student code runs in this process.
    c.Autograde.autograde_preprocessors = [
        "autograder.notebooks.grading.JudgeGrades",
        "nbgrader.preprocessors.IgnorePattern",
        "nbconvert.preprocessors.ClearMetadataPreprocessor",
        "nbgrader.preprocessors.LimitOutput",
        "nbgrader.preprocessors.SaveAutoGrades",
        "nbgrader.preprocessors.AssignLatePenalties",
        "nbgrader.preprocessors.CheckCellMetadata",
    ]
    # Flags of `python -m autograder grade`, e.g. ["--jobs", "4", "--timeout", "10"] (seconds per call into
    # student code). The same flags give the same points as `grade` on the same code.
    c.JudgeGrades.grade_args = []
    c.JudgeGrades.wall_timeout = 900  # a judge run taking longer is killed: the notebook is not graded
else:
    # nbgrader's own pipeline; StudentModules hands the kernel the student's other notebooks as modules.
    c.Autograde.autograde_preprocessors = [
        "autograder.notebooks.grading.StudentModules",
        "nbgrader.preprocessors.Execute",
        "nbgrader.preprocessors.IgnorePattern",
        "nbconvert.preprocessors.ClearMetadataPreprocessor",
        "nbgrader.preprocessors.LimitOutput",
        "nbgrader.preprocessors.SaveAutoGrades",
        "nbgrader.preprocessors.AssignLatePenalties",
        "nbgrader.preprocessors.CheckCellMetadata",
    ]
'''


def build(
    dest: Path,
    components=None,
    assignment: str = "transformer",
    grader: str = "judge",
    timeout: int = 60,
) -> Path:
    """Write the course directory: nbgrader_config.py and source/<assignment>/<component>.ipynb."""
    if grader not in MODES:
        raise ValueError(f"grader must be one of {MODES}")
    names = [c.name for c in COMPONENTS if components is None or c.name in components]
    dest = Path(dest)
    source = dest / "source" / assignment
    if source.exists():
        shutil.rmtree(source)
    source.mkdir(parents=True)
    from ..judge.sections import (
        integration_props,  # the judge decides the integration share; so must we
    )

    props = core.load(include_hidden=True)
    shares = integration_props(props)
    for name in names:
        number = [c.name for c in COMPONENTS].index(name) + 1
        integration = [(core.REGISTRY[pid], points) for pid, points in shares.get(name, [])]
        nb = notebook(name, [p for p in props if p.component == name], number, integration)
        (source / f"{name}.ipynb").write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    (dest / "nbgrader_config.py").write_text(
        CONFIG.format(grader=grader, kit=str(KIT), timeout=timeout)
    )
    return dest
