"""Build the student bundle: stubs, the same exercises as notebooks, the visible properties, a student README
and pyproject. Nothing else.

Left out on purpose: solutions/, autograder/hidden/ (hidden properties), the graded-only regions of the checking
side's models (the by-hand mistake models: answers; suite/graded.py), autograder/bugs/ (quotes the solutions),
the judge and the instructor's tools. Hidden points and the integration share are shipped as numbers only, so
the self-check's table adds up to the grade's total. What the bundle gives away, and what it does not, is
docs/bundle.md.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

from . import generate, i18n, registry, stubs
from .components import COMPONENTS
from .i18n import N_, _
from .suite import core, graded

PACKAGE = Path(__file__).resolve().parent
# The checker a student runs: the narrow interface, the rules, the visible properties, the reports.
SHIPPED = [
    "__init__.py",
    "__main__.py",
    "cli.py",
    "check.py",
    "check_jobs.py",
    "components.py",
    "results.py",
    "registry.py",
    "rules/__init__.py",
    "rules/allowlist.py",
    "rules/eager_dynamo.py",
    "rules/families.py",
    "rules/runtime_guard.py",
    "rules/static_scan.py",
    "rules/scan_words.py",
    "student_code/__init__.py",
    "student_code/interface.py",
    "student_code/executor.py",
    "timing.py",
    "pytest_plugin.py",
    "i18n.py",
    "glossary.py",
    "passes.py",
]
NOTEBOOK_SHIPPED = ["__init__.py", "cells.py", "kernel.py"]
# The checking side's models (torch's layers with the kit's weights, right or with a mistake as flags): no
# answer, so they ship; the by-hand mistake models beside them (their graded-only regions) do not.
MODELS = PACKAGE / "properties" / "models"
# Components whose visible properties would take expected values from a by-hand answer: their property modules
# stay out of the bundle, a placeholder stands in, and their visible points are decided at grading with the
# hidden ones. None now: beam_search, the last, checks a wide beam against enumeration and beam_size=1 against
# greedy's fixed point (docs/bundle.md). Kept for a component whose self-check is being rewritten.
GRADED_ONLY: tuple[str, ...] = ()
PLACEHOLDER = (
    '"""The self-check of {name} is not in this bundle: its properties are being rewritten so that none of them '
    "holds a working\nanswer. Its {points:g} visible points are decided at grading, with the hidden ones.\n"
    '"""\n'
)


def graded_only(p: core.Property) -> bool:
    """A property the bundle does not run: hidden, or visible in a component of GRADED_ONLY."""
    return not p.visible or p.component in GRADED_ONLY


def hidden_points() -> dict[str, float]:
    """Points per component that the bundle's self-check does not run (graded_only): decided at grading."""
    points: dict[str, float] = {}
    for p in registry.load(include_hidden=True):
        if graded_only(p):
            points[p.component] = points.get(p.component, 0.0) + p.points
    return points


def integration_points() -> dict[str, float]:
    """Property id -> points of its integration re-run, as the judge decides them."""
    from .judge.sections import integration_props

    return {
        pid: points
        for specs in integration_props(registry.load(include_hidden=True)).values()
        for pid, points in specs
    }


# The bundle's notebooks live in notebooks/, beside the checker's folder: the setup cell puts it on the path.
NOTEBOOK_SETUP = 'import os, sys\nsys.path.insert(0, os.path.abspath(".."))  # {comment}\n'
NOTEBOOK_SETUP_COMMENT = N_("the bundle's folder, which holds the checker (autograder/)")


def student_notebooks(lang: str | None = None) -> dict[str, dict]:
    """NN_<component>.ipynb (numbered in course order) -> the course notebook as a student gets it: solution
    cells stubbed as in exercises/, hidden test cells left out (their points stay in the text); in `lang`
    (None: English), as `nbgrader-course --lang` writes it."""
    from .notebooks import cells, course

    props = registry.load(include_hidden=True)
    shares = integration_points()
    out = {}
    for number, c in enumerate(COMPONENTS, 1):
        integration = [
            (core.REGISTRY[pid], points)
            for pid, points in shares.items()
            if core.REGISTRY[pid].component == c.name
        ]
        # A property the bundle does not run is a test cell it does not ship, its points in the text.
        mine = [
            dataclasses.replace(p, visible=False) if graded_only(p) else p
            for p in props
            if p.component == c.name
        ]
        nb = course.notebook(c.name, mine, number, integration, lang)
        kept = []
        for cell in nb["cells"]:
            text = cells.source_text(cell)
            if "### BEGIN HIDDEN TESTS" in text:
                continue
            if cells.is_solution(cell):
                cell["source"] = stubs.strip_solutions(text, lang or i18n.SOURCE_LANGUAGE)
            elif cell["metadata"].get("nbgrader", {}).get("grade_id") == "setup":
                # its comment in the course's language
                with i18n.chosen(lang or i18n.SOURCE_LANGUAGE):
                    setup = NOTEBOOK_SETUP.format(comment=_(NOTEBOOK_SETUP_COMMENT))
                cell["source"] = text.replace(
                    "import autograder.notebooks.kernel",
                    setup + "import autograder.notebooks.kernel",
                    1,
                )
            kept.append(cell)
        nb["cells"] = kept
        out[f"{number:02d}_{c.name}.ipynb"] = nb
    return out


def readme_path(lang: str) -> Path:
    """The student README in a language: README.md (English), README.<lang>.md (the others)."""
    return (
        PACKAGE / "student" / ("README.md" if lang == i18n.SOURCE_LANGUAGE else f"README.{lang}.md")
    )


def write_checker(pkg: Path, lang: str | None) -> None:
    """The bundle's autograder/ at `pkg`: the checker, the suite, the visible properties and the checking side's
    models, the notebooks' kernel helpers, the compiled catalogs, the remembered language, the hidden and
    integration points."""
    (pkg / "properties").mkdir(parents=True)
    for name in SHIPPED:
        (pkg / name).parent.mkdir(exist_ok=True)  # a package's folder: rules/
        shutil.copy2(PACKAGE / name, pkg / name)
    # The suite's machinery (the registry, the runner, checks and strategies) that the visible properties import
    shutil.copytree(PACKAGE / "suite", pkg / "suite", ignore=shutil.ignore_patterns("__pycache__"))
    visible = {}
    for p in registry.load(include_hidden=True):
        if p.visible:
            visible[p.component] = visible.get(p.component, 0.0) + p.points
    for path in sorted((PACKAGE / "properties").glob("*.py")):
        if path.stem in GRADED_ONLY:
            text = PLACEHOLDER.format(name=path.stem, points=visible.get(path.stem, 0.0))
            (pkg / "properties" / path.name).write_text(text)
        else:
            shutil.copy2(path, pkg / "properties" / path.name)
    shutil.copytree(
        MODELS, pkg / "properties" / "models", ignore=shutil.ignore_patterns("__pycache__")
    )
    # What a course notebook's read-only cells call in the student's kernel (not the course builder, not
    # the grading preprocessor).
    (pkg / "notebooks").mkdir()
    for name in NOTEBOOK_SHIPPED:
        shutil.copy2(PACKAGE / "notebooks" / name, pkg / "notebooks" / name)
    # The compiled catalogs only: the standard library's gettext reads them, Babel stays with the instructor.
    for mo in sorted(i18n.LOCALE_DIR.glob(f"*/LC_MESSAGES/{i18n.DOMAIN}.mo")):
        target = pkg / mo.relative_to(PACKAGE)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(mo, target)
    if lang is not None:
        (pkg / i18n.REMEMBERED.name).write_text(lang + "\n")
    (pkg / "hidden_points.json").write_text(
        json.dumps(hidden_points(), indent=2, sort_keys=True) + "\n"
    )
    (pkg / "integration_points.json").write_text(
        json.dumps(integration_points(), indent=2, sort_keys=True) + "\n"
    )
    # Last, over every module written: the by-hand mistake models are answers (suite/graded.py); a region that
    # cannot be stripped stops the release.
    for path in sorted(pkg.rglob("*.py")):
        text = path.read_text()
        stripped = graded.strip(text, str(path.relative_to(pkg)))
        if stripped != text:
            path.write_text(stripped)


def build(dest: Path, lang: str | None = None) -> Path:
    """lang: the bundle's default language (its README.md, its stubs' docstrings, and what its checker prints
    unless the student's --lang or TRANSFORMER_KIT_LANG says otherwise); None: English README and stubs, the
    student's locale decides."""
    dest = Path(dest)
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "exercises").mkdir(parents=True)
    # The stubs in the bundle's language: its docstrings and comments (the code is the same in every language).
    for name, text in stubs.generate(lang=lang or i18n.SOURCE_LANGUAGE).items():
        (dest / "exercises" / name).write_text(text)

    write_checker(dest / "autograder", lang)
    (dest / "notebooks").mkdir()
    for name, nb in student_notebooks(lang).items():
        (dest / "notebooks" / name).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")

    student = PACKAGE / "student"
    (dest / "tests").mkdir()
    shutil.copy2(student / "test_exercises.py", dest / "tests" / "test_exercises.py")
    for name in ("conftest.py", "pyproject.toml", "requirements.txt"):
        shutil.copy2(student / name, dest / name)
    # README.md in the bundle's language, each other language beside it as README.<lang>.md.
    chosen = lang or i18n.SOURCE_LANGUAGE
    # Their blocks (the course order, the glossary) are rendered here: the committed templates leave them empty,
    # so that a new component does not edit them (autograder/generate.py).
    for other in i18n.LANGUAGES:
        name = "README.md" if other == chosen else f"README.{other}.md"
        (dest / name).write_text(generate.render(readme_path(other).read_text()))
    shutil.copy2(PACKAGE.parent / "constraints.txt", dest / "constraints.txt")
    return dest
