"""`python -m autograder nbgrader-course DIR`: the kit as an nbgrader course, generated from solutions/.

One notebook per component (source/<assignment>/<component>.ipynb): the explanation (module docstring and the
contract from the component's declaration), a read-only setup cell, the module's code as solution cells (the
reference, between nbgrader's ### BEGIN/END SOLUTION markers), then one read-only autograded test cell per
property, worth the property's points; hidden properties sit between ### BEGIN/END HIDDEN TESTS, so the release
shows only their points.

`--lang es`: the Markdown and the test cells' comments in Spanish (through the catalog, docs/i18n.md), the code,
grade ids and points unchanged; the course remembers its language (nbgrader_config.py, the notebooks' metadata).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .. import KIT, i18n, registry, stubs
from ..components import COMPONENTS, get
from ..i18n import _, ngettext
from ..suite import core
from . import cells

SOLUTIONS = KIT / "solutions"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
MODES = ("judge", "kernel")
SOURCE = i18n.SOURCE_LANGUAGE


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
    # ngettext counts in integers; a fraction of a point takes the plural, as in English and Spanish
    return ngettext("{points:g} point", "{points:g} points", int(x) if x == int(x) else 2).format(
        points=x
    )


def check_source(p: core.Property, integration: float | None = None) -> str:
    if integration is not None:
        deps = ", ".join(get(p.component).deps)
        heading = _("Integration (your pieces together), {points}: {summary}")
        how = _(
            "Run with your own {deps} (your earlier notebooks) in place of the reference; the gradebook "
            "counts it in the integration column, not in {component}."
        )
        return (
            f"# {heading.format(points=_points(integration), summary=_(p.summary))}\n"
            f"# {how.format(deps=deps, component=p.component)}\n"
            f'_kit.check("{p.component}", "{p.name}", integration=True)'
        )
    call = f'_kit.check("{p.component}", "{p.name}")'
    if p.visible:
        return f"# {_points(p.points)}: {_(p.summary)}\n{call}"
    hidden = _("Hidden test, {points}: it runs when your notebook is graded.")
    return (
        f"# {hidden.format(points=_points(p.points))}\n"
        f"### BEGIN HIDDEN TESTS\n{call}\n### END HIDDEN TESTS"
    )


def reference_source(comp) -> str:
    """The component's reference module, the text the notebook's explanation and solution cells come from."""
    # Its docstrings in the course's language (the module docstring is the notebook's explanation, the functions'
    # are in the solution cells); `notebook()` has chosen the language. The code is the same in every language.
    return stubs.translate_docstrings(
        (SOLUTIONS / comp.filename).read_text(), i18n.current_language()
    )


def _contract_block(comp) -> str:
    """The component's contract in the course's language (its words; the code in it stays as it is)."""
    from dataclasses import replace

    return replace(comp, contract=_(comp.contract)).contract_block


def intro_markdown(comp, number: int, doc: str) -> str:
    """The notebook's first cell: title, the module docstring, the contract, what to do."""
    # (no `_()` inside an f-string: Babel would not extract it)
    contract, what_to_do, title = _("The contract"), _("What to do"), _(comp.title)
    text = (
        f"# {number}. {title} (`{comp.filename}`)\n\n{doc}\n\n"
        f"## {contract}\n\n```text\n{_contract_block(comp)}\n```\n\n"
        f"## {what_to_do}\n\n"
        + _(
            "Replace each `raise NotImplementedError` below with your code. The cells that hold it (the "
            "*solution cells*) are your module `{file}`: they are graded together as that file, and "
            "nothing else in this notebook is. Put helpers and imports in those cells; use new cells for "
            "experiments. Run the setup cell first."
        ).format(file=comp.filename)
        + "\n\n"
    )
    if comp.deps:
        text += (
            _(
                "This module imports {deps} relatively (`from .{last} import ...`), as the files do. Here "
                "those imports come from your earlier notebooks in this folder; your grade uses the reference "
                "for them, so a mistake there costs points only there."
            ).format(deps=", ".join(f"`{d}`" for d in comp.deps), last=comp.deps[-1])
            + "\n\n"
        )
    if comp.forbidden_families:
        text += _(
            "By hand means by hand: the tests notice a call to the library function that does the same job."
        )
    return text


def tests_markdown(comp, visible, hidden, integration) -> str:
    """The Markdown above the test cells: what they are worth, hidden and integration points included."""
    points = _points(sum(p.points for p in visible))
    if hidden:
        worth = ngettext(
            "Each cell below checks one property of `{file}` and is worth its points ({points} here, plus "
            "{hidden_points} in {n} hidden test run at grading).",
            "Each cell below checks one property of `{file}` and is worth its points ({points} here, plus "
            "{hidden_points} in {n} hidden tests run at grading).",
            len(hidden),
        ).format(
            file=comp.filename,
            points=points,
            hidden_points=_points(sum(p.points for p in hidden)),
            n=len(hidden),
        )
    else:
        worth = _(
            "Each cell below checks one property of `{file}` and is worth its points ({points} here)."
        ).format(file=comp.filename, points=points)
    sentences = [worth]
    if integration:
        sentences.append(
            ngettext(
                "The last cell is {n} integration test (your pieces together, {points}): it re-runs a "
                "property with your own earlier modules, and the gradebook counts it in its integration "
                "column.",
                "The last {n} cells are integration tests (your pieces together, {points}): they re-run a "
                "property with your own earlier modules, and the gradebook counts them in its integration "
                "column.",
                len(integration),
            ).format(n=len(integration), points=_points(sum(x for _p, x in integration)))
        )
    sentences.append(
        _(
            "A failure prints the smallest input on which your code goes wrong and a hint naming the likely "
            "mistake, as `pytest` and the `grade` command do. Run them all with *Run > Run All Cells*."
        )
    )
    return "## " + _("Tests") + "\n\n" + " ".join(sentences)


def notebook(
    name: str, properties: list[core.Property], number: int, integration=(), lang: str | None = None
) -> dict:
    """integration: (property, points) pairs the judge re-runs with the student's own dependencies.
    lang: the language of its text (Markdown, comments; None: English); the code is the same in every language."""
    with i18n.chosen(lang or i18n.SOURCE_LANGUAGE):
        return _notebook(name, properties, number, integration, lang)


def _notebook(name, properties, number, integration, lang) -> dict:
    comp = get(name)
    doc, chunks = cells.split_module(reference_source(comp))
    visible = [p for p in properties if p.visible]
    hidden = [p for p in properties if not p.visible]
    setup_comment = _(
        "Read-only. Run me first: the cells below then run as the module {file}."
    ).format(file=comp.filename)
    nb_cells = [
        _cell("markdown", intro_markdown(comp, number, doc)),
        _cell(
            "code",
            f"# {setup_comment}\nimport autograder.notebooks.kernel as _kit\n\n"
            f'__package__ = _kit.setup("{name}")',
            _nbgrader("setup", locked=True),
        ),
    ]
    for i, chunk in enumerate(chunks, 1):
        nb_cells.append(_cell("code", chunk, _nbgrader(f"solution_{i}", solution=True)))
    nb_cells.append(_cell("markdown", tests_markdown(comp, visible, hidden, integration)))
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
            # the course's language, when not English: the kernel's check speaks it (kernel.setup)
            "kit": {"component": name, **({"lang": lang} if lang not in (None, SOURCE) else {})},
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

# A solution region alone: stubs.strip_solutions turns it into exercises/' stub, in a language.
STUB_REGION = f"{stubs.BEGIN}\n{stubs.END}\n"

# Appended for a course in another language than English (`nbgrader-course --lang es`).
LANGUAGE_CONFIG = """
# The course's language: what the test cells print (kernel mode) and the judge writes (judge mode), unless
# {env} says otherwise. Kernels and the judge inherit this process's environment.
os.environ.setdefault({env!r}, {lang!r})
# The stub of a released solution cell, with the comment of exercises/ in the course's language.
c.ClearSolutions.code_stub = dict(python={stub!r})
"""


def build(
    dest: Path,
    components=None,
    assignment: str = "transformer",
    grader: str = "judge",
    timeout: int = 60,
    lang: str | None = None,
) -> Path:
    """Write the course directory: nbgrader_config.py and source/<assignment>/<component>.ipynb.
    lang: the course's language (None: English), of the notebooks' text and, remembered in the config, of what
    the test cells and the judge print at grading."""
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

    props = registry.load(include_hidden=True)
    shares = integration_props(props)
    for name in names:
        number = [c.name for c in COMPONENTS].index(name) + 1
        integration = [(core.REGISTRY[pid], points) for pid, points in shares.get(name, [])]
        nb = notebook(name, [p for p in props if p.component == name], number, integration, lang)
        (source / f"{name}.ipynb").write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
    (dest / "nbgrader_config.py").write_text(
        CONFIG.format(grader=grader, kit=str(KIT), timeout=timeout)
        + (
            LANGUAGE_CONFIG.format(
                env=i18n.ENV, lang=lang, stub=stubs.strip_solutions(STUB_REGION, lang).strip()
            )
            if lang not in (None, SOURCE)
            else ""
        )
    )
    return dest
