"""Module <-> notebook cells: how a component's .py file becomes solution cells, and a notebook a .py file again.

One rule, used everywhere (course generator, the student's kernel, the grading preprocessor, the tests):
**a component's module is the notebook's solution cells** (code cells whose nbgrader metadata says
`"solution": true`), in notebook order, joined by blank lines. Nothing else in the notebook is part of it.

Plain json, no nbformat: the student's kernel reads its own notebook with this too.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

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
    return cell.get("cell_type") == "code" and bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution"))


def source_text(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def module_from_cells(sources: list[str]) -> str:
    """Join solution-cell sources into module text. IPython-only lines (%magic, !shell) become comments:
    they are not Python and would make the whole file a SyntaxError."""
    out = []
    for src in sources:
        lines = [f"# (notebook only) {line}" if line.lstrip().startswith(("%", "!")) else line
                 for line in src.splitlines()]
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


def submission_from_notebooks(folder: Path, dest: Path, components) -> Path:
    """A submission folder (what `grade` reads) from a folder of <component>.ipynb notebooks.

    A component whose notebook is missing is left out: the grader then reports the module missing.
    """
    modules = {}
    for name in components:
        path = Path(folder) / f"{name}.ipynb"
        if path.is_file():
            modules[name] = module_source(read_notebook(path))
    return write_package(modules, Path(dest))
