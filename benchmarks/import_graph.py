"""The kit's import graph: its circles and the arrows that run back up (issue 36's measure).

    python benchmarks/import_graph.py [--modules]

Nodes are the autograder package's modules (autograder.suite.core, ...), edges their imports of one another,
module level and inside functions alike (an import inside a function is still a dependency; it only hides a
circle from the interpreter). A *circle* is a strongly connected component of more than one module. An arrow
*runs back up* when a module imports one of a package that is not its own and that sits above it in LAYERS (the
checking side's helpers below the properties, the properties below the routes that run them). Printed: the
circles, the upward arrows, and their counts.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "autograder"
# Lowest first: a package may import those at its own level or below. A module directly in autograder/ is
# placed by name, a module or subpackage of a package may be placed apart from it ("properties.models");
# anything not listed is unplaced (its arrows are not judged).
LAYERS = [
    {"i18n", "components", "timing", "glossary"},
    {"student_code", "rules"},
    {"suite", "properties.models"},
    # registry: the loader that imports every property module (visible and hidden), above the suite it serves
    {"diagnoses", "properties", "hidden", "bugs", "registry"},
    {"passes", "results", "check", "check_jobs", "pytest_plugin", "notebooks", "judge", "lms"},
    # notebooks.course is the nbgrader-course command's builder: a generator like generate and release (which
    # imports it), writing notebooks from solutions/ through the stubs' text; the rest of notebooks/ (the cells
    # and kernel helpers a student's notebook calls, the autograde preprocessor) stays a route, a layer below
    {"report", "release", "generate", "stubs", "catalogs", "notebooks.course", "cli", "__main__"},
]


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, name: str, modules: set[str]) -> set[str]:
    """The kit's modules that `path` (module `name`) imports."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            # `from pkg import mod` depends on mod (and pkg's __init__, already loading: not counted);
            # `from pkg import name` on pkg
            targets = [
                f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in modules else prefix
                for a in node.names
            ]
        else:
            continue
        for t in targets:
            if t in modules and t != name:
                found.add(t)
    return found


def layer_of(module: str) -> int | None:
    parts = module.split(".")[1:]  # without "autograder"
    if not parts:
        return None
    for key in (".".join(parts[:2]), parts[0]):
        for i, layer in enumerate(LAYERS):
            if key in layer:
                return i
    return None


def group_of(module: str) -> str:
    parts = module.split(".")[1:]
    two = ".".join(parts[:2])
    return two if any(two in layer for layer in LAYERS) else (parts[0] if parts else "")


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    sys.setrecursionlimit(10_000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(files)
    return {name: imports(path, name, modules) for name, path in files.items()}


def upward(g: dict[str, set[str]]) -> list[tuple[str, str]]:
    arrows = []
    for a, targets in g.items():
        for b in targets:
            la, lb = layer_of(a), layer_of(b)
            if la is not None and lb is not None and lb > la and group_of(a) != group_of(b):
                arrows.append((a, b))
    return sorted(arrows)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.parse_args()
    g = graph()
    found = circles(g)
    up = upward(g)
    for c in found:
        print("circle:", " -> ".join(c))
    for a, b in up:
        print(f"up: {a} -> {b}")
    print(
        f"{len(g)} modules, {sum(map(len, g.values()))} imports, {len(found)} circles, {len(up)} upward arrows"
    )


if __name__ == "__main__":
    main()
