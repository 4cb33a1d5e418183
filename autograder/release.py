"""Build the student bundle: stubs, the visible properties, a student README and pyproject. Nothing else.

Left out on purpose: solutions/, autograder/hidden/ (hidden properties), autograder/bugs/ (quotes the
solutions), the judge and the instructor's tools. Hidden points are shipped as numbers only, so the
self-check can say how many points are still to be decided at grading.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from . import stubs
from .properties import core

PACKAGE = Path(__file__).resolve().parent
# The checker a student runs: the narrow interface, the rules, the visible properties, the reports.
SHIPPED = ["__init__.py", "__main__.py", "cli.py", "check.py", "components.py", "results.py", "rules.py",
           "target.py", "timing.py", "pytest_plugin.py"]
NOTEBOOK_SHIPPED = ["__init__.py", "cells.py", "kernel.py"]


def hidden_points() -> dict[str, float]:
    points: dict[str, float] = {}
    for p in core.load(include_hidden=True):
        if not p.visible:
            points[p.component] = points.get(p.component, 0.0) + p.points
    return points


def build(dest: Path) -> Path:
    dest = Path(dest)
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "exercises").mkdir(parents=True)
    for name, text in stubs.generate().items():
        (dest / "exercises" / name).write_text(text)

    pkg = dest / "autograder"
    (pkg / "properties").mkdir(parents=True)
    for name in SHIPPED:
        shutil.copy2(PACKAGE / name, pkg / name)
    for path in sorted((PACKAGE / "properties").glob("*.py")):
        shutil.copy2(path, pkg / "properties" / path.name)
    # What a course notebook's read-only cells call in the student's kernel (not the course builder, not
    # the grading preprocessor).
    (pkg / "notebooks").mkdir()
    for name in NOTEBOOK_SHIPPED:
        shutil.copy2(PACKAGE / "notebooks" / name, pkg / "notebooks" / name)
    (pkg / "hidden_points.json").write_text(json.dumps(hidden_points(), indent=2, sort_keys=True) + "\n")

    student = PACKAGE / "student"
    (dest / "tests").mkdir()
    shutil.copy2(student / "test_exercises.py", dest / "tests" / "test_exercises.py")
    for name in ("conftest.py", "README.md", "pyproject.toml", "requirements.txt"):
        shutil.copy2(student / name, dest / name)
    shutil.copy2(PACKAGE.parent / "constraints.txt", dest / "constraints.txt")
    return dest
