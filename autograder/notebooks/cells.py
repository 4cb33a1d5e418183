"""Module <-> notebook cells: how a component's .py file becomes solution cells, and a notebook a .py file again.

One rule, used everywhere (course generator, the student's kernel, the grading preprocessor, the tests):
**a component's module is the notebook's solution cells** (code cells whose nbgrader metadata says
`"solution": true`), in notebook order, joined by blank lines. Nothing else in the notebook is part of it.

Plain json, no nbformat: the student's kernel reads its own notebook with this too.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from ..i18n import _

BEGIN = "### BEGIN SOLUTION"


def split_module(source: str) -> tuple[str, list[str]]:
    """(module docstring, code chunks): one chunk per top-level def/class, each holding a solution region.

    Text before a def (imports, constants, comments) goes with that def; a chunk without a solution region is
    merged into the next one (nbgrader would replace a solution cell without a region by a bare stub).
    """
    tree = ast.parse(source)
    lines = source.splitlines()
    doc = ast.get_docstring(tree) or ""
    start = tree.body[0].end_lineno if doc else 0
    chunks = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            end = node.end_lineno
            while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t"):
                end += 1  # indented comments after the last statement (### END SOLUTION) belong to the def
            chunks.append("\n".join(lines[start:end]).strip("\n"))
            start = end
    tail = "\n".join(lines[start:]).strip("\n")
    if tail:
        chunks.append(tail)
    merged, pending = [], ""
    for chunk in chunks:
        pending = f"{pending}\n\n\n{chunk}" if pending else chunk
        if BEGIN in pending:
            merged.append(pending)
            pending = ""
    if pending:  # code after the last solution region
        merged[-1] += "\n\n\n" + pending
    return doc, merged


def is_solution(cell: dict) -> bool:
    return cell.get("cell_type") == "code" and bool(
        cell.get("metadata", {}).get("nbgrader", {}).get("solution")
    )


def source_text(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def module_from_cells(sources: list[str]) -> str:
    """Join solution-cell sources into module text. IPython-only lines (%magic, !shell) become comments:
    they are not Python and would make the whole file a SyntaxError."""
    out = []
    for src in sources:
        lines = [
            f"# (notebook only) {line}" if line.lstrip().startswith(("%", "!")) else line
            for line in src.splitlines()
        ]
        out.append("\n".join(lines).strip("\n"))
    return "\n\n\n".join(out) + "\n"


def solution_cells(nb: dict) -> list[dict]:
    return [c for c in nb.get("cells", []) if is_solution(c)]


def module_source(nb: dict) -> str:
    """The module a notebook (a parsed .ipynb, dict or NotebookNode) stands for."""
    return module_from_cells([source_text(c) for c in solution_cells(nb)])


def read_notebook(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def write_package(modules: dict[str, str], dest: Path) -> Path:
    """Write {component: source} as <component>.py files into `dest` (the folder the properties load)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name, text in modules.items():
        (dest / f"{name}.py").write_text(text)
    return dest


def find_notebook(folder: Path, name: str) -> Path | None:
    """<name>.ipynb (nbgrader), or the student bundle's numbered NN_<name>.ipynb."""
    folder = Path(folder)
    for path in [folder / f"{name}.ipynb", *sorted(folder.glob(f"[0-9][0-9]_{name}.ipynb"))]:
        if path.is_file():
            return path
    return None


def cell_places(sources: list[str]) -> list[tuple[int, int, int, str]]:
    """Where each solution cell lands in module_from_cells' text: (first module line, lines, lines stripped
    from the cell's top, the cell's first line), in module_from_cells' own arithmetic."""
    places, line = [], 1
    for src in sources:
        lines = src.splitlines()
        top = next((i for i, text in enumerate(lines) if text.strip()), len(lines))
        body = "\n".join(lines).strip("\n").splitlines()
        first = next((text.strip() for text in body if text.strip()), "")
        places.append((line, len(body), top, first))
        line += len(body) + 2  # module_from_cells joins with two blank lines
    return places


def submission_from_notebooks(folder: Path, dest: Path, components, with_places: bool = False):
    """A submission folder (what `grade` reads) from a folder of <component>.ipynb notebooks (or the bundle's
    NN_<component>.ipynb). A component whose notebook is missing is left out: the grader then reports the
    module missing. with_places: also return {component: (notebook name, cell_places)} for name_cells."""
    modules, places = {}, {}
    for name in components:
        path = find_notebook(folder, name)
        if path is not None:
            sources = [source_text(c) for c in solution_cells(read_notebook(path))]
            modules[name] = module_from_cells(sources)
            places[name] = (path.name, cell_places(sources))
    dest = write_package(modules, Path(dest))
    return (dest, places) if with_places else dest


_LINE = re.compile(r"\b(\w+)\.py, \w+ (\d+)")  # "line 12", "línea 12": the frame in either language


def name_cells(text: str, places: dict) -> str:
    """`attention.py, line 57` -> `02_attention.ipynb, the cell that starts "def softmax(...", line 3`: a
    student who works in notebooks never sees the generated file."""

    def cell(match):
        name, line = match.group(1), int(match.group(2))
        if name not in places:
            return match.group(0)
        notebook, cells_ = places[name]
        for start, count, top, first in cells_:
            if start <= line < start + count:
                return _('{notebook}, the cell that starts "{first}", line {line}').format(
                    notebook=notebook, first=first[:40], line=line - start + 1 + top
                )
        return match.group(0)

    return _LINE.sub(cell, text or "")
