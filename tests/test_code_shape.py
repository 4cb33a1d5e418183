"""The shape of the kit's code (issue 36): a module of autograder/ within 550 lines (one of autograder/properties/,
which holds a component's registered properties: 700), a function within 60 lines unless a comment says why,
`# long: <why>` on its `def` line, on the line above it or on the line above its first decorator. A function's
lines run from its `def` to its last line (decorators aside: a property's `@example`s are not its body). Each one
over is named with file:line; the self-tests below show that a synthetic one is caught."""

from __future__ import annotations

import ast
from pathlib import Path

from autograder import KIT

MODULE_LINES = 550
PROPERTY_MODULE_LINES = 700
FUNCTION_LINES = 60
REASON = "# long:"


def module_limit(rel: str) -> int:
    """rel: the module's path under autograder/ ("properties/attention.py")."""
    return PROPERTY_MODULE_LINES if Path(rel).parent == Path("properties") else MODULE_LINES


def long_functions(source: str) -> list[tuple[int, str, int]]:
    """(line, name, length) of each function (methods and nested ones too) over FUNCTION_LINES with no reason."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        length = node.end_lineno - node.lineno + 1
        if length <= FUNCTION_LINES:
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        near = {node.lineno, node.lineno - 1, first - 1}  # 1-based; 0 (before the file) is no line
        if not any(REASON in lines[n - 1] for n in near if n >= 1):
            found.append((node.lineno, node.name, length))
    return found


def over(package: Path) -> list[str]:
    """file:line and what is over, for every module of `package` (an autograder/ folder) and its functions."""
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        source = path.read_text()
        count = len(source.splitlines())
        if count > module_limit(rel):
            found.append(f"{rel}: {count} lines (at most {module_limit(rel)})")
        for line, name, length in long_functions(source):
            found.append(
                f"{rel}:{line}: {name} is {length} lines (at most {FUNCTION_LINES}, or {REASON} why)"
            )
    return found


def test_the_kit_is_within_its_sizes():
    assert over(KIT / "autograder") == []


def function(name: str, body_lines: int, before: str = "", on_def: str = "") -> str:
    body = "".join(f"    x{i} = {i}\n" for i in range(body_lines))
    return f"{before}def {name}():{on_def}\n{body}"


def test_a_long_function_is_caught():
    # 1 def line + 60 body lines: 61
    assert long_functions(function("f", 60)) == [(1, "f", 61)]
    assert long_functions(function("f", 59)) == []
    # nested and methods too
    nested = "class A:\n" + "".join("    " + line + "\n" for line in function("g", 70).splitlines())
    assert long_functions(nested) == [(2, "g", 71)]


def test_a_reason_is_read_only_where_it_says_so():
    assert long_functions(function("f", 70, on_def="  # long: one table")) == []
    assert long_functions(function("f", 70, before="# long: one table\n")) == []
    decorated = "# long: one table\n@decorator\n@other(1)\n" + function("f", 70)
    assert long_functions(decorated) == []
    # a comment elsewhere, or one that does not say `long:`, is no reason
    assert long_functions(function("f", 70, before="# a table\n")) == [(2, "f", 71)]
    far = "# long: one table\n\n" + function("f", 70)
    assert long_functions(far) == [(3, "f", 71)]
    inside = function("f", 70).replace("    x3 = 3\n", "    # long: one table\n    x3 = 3\n")
    assert long_functions(inside) == [(1, "f", 72)]


def test_a_long_module_is_caught(tmp_path):
    (tmp_path / "properties").mkdir()
    (tmp_path / "properties" / "models").mkdir()
    (tmp_path / "short.py").write_text("x = 1\n" * MODULE_LINES)
    (tmp_path / "long.py").write_text("x = 1\n" * (MODULE_LINES + 1))
    (tmp_path / "properties" / "component.py").write_text("x = 1\n" * PROPERTY_MODULE_LINES)
    (tmp_path / "properties" / "models" / "model.py").write_text("x = 1\n" * (MODULE_LINES + 1))
    (tmp_path / "long_function.py").write_text(function("f", 61))
    assert over(tmp_path) == [
        f"long.py: {MODULE_LINES + 1} lines (at most {MODULE_LINES})",
        "long_function.py:1: f is 62 lines (at most 60, or # long: why)",
        f"properties/models/model.py: {MODULE_LINES + 1} lines (at most {MODULE_LINES})",
    ]
