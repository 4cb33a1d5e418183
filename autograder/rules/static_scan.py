"""The by-hand rules, statically: an AST scan names forbidden calls and the tricks used to hide them, in the
component's file and in every helper module of the submission that it imports, and names tampering in every other
.py file of the submission, whatever loads it. Which names a component forbids is its declaration's
(autograder/components.py); the named sets and how they grow with the survey: families.py, docs/byhand.md.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ..components import NAMES
from ..i18n import _
from .allowlist import refusals
from .families import STATIC
from .scan_words import (
    HIDING_CALLS,
    HIDING_MODULES,
    KIT_PATTERN,
    MILD_ATTRS,
    NAME_TAKING,
    NAMEISH,
    TAMPERING_ATTRS,
    VOIDING_CALLS,
    VOIDING_MODULES,
)


def _folded(node) -> str | None:
    """The value of a string expression made of constants only, else None."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _folded(node.left), _folded(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        text = _folded(node.left)
        count = node.right.value if isinstance(node.right, ast.Constant) else None
        if text is not None and type(count) is int and 0 <= count * len(text) <= 200:
            return text * count
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        text = _folded(node.left)
        values = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        parts = [_folded(v) for v in values]
        if text is None or None in parts:
            return None
        try:
            return text % tuple(parts)
        except (TypeError, ValueError):
            return None
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                if value.format_spec is not None or value.conversion not in (-1, ord("s")):
                    return None
                value = value.value
            parts.append(_folded(value))
        return None if None in parts else "".join(parts)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("join", "format")
        and not node.keywords
    ):
        owner = _folded(node.func.value)
        if node.func.attr == "join" and len(node.args) == 1:
            items = node.args[0]
            if owner is None or not isinstance(items, (ast.List, ast.Tuple)):
                return None
            parts = [_folded(e) for e in items.elts]
            return None if None in parts else owner.join(parts)
        parts = [_folded(a) for a in node.args]
        if owner is None or None in parts:
            return None
        try:
            return owner.format(*parts)
        except (IndexError, KeyError, ValueError):
            return None
    return None


def _constant_bindings(tree) -> dict[str, list[str]]:
    """Variables that only ever hold string constants: `for name in ("w_q", "w_k"): getattr(self, name)` names
    its attributes as plainly as `self.w_q` does. A variable bound any other way (a parameter, a computed
    value, a loop over anything else) is left out: its value is not known."""
    values: dict[str, list[str]] = {}
    unknown: set[str] = set()

    def bind(target, items):
        if not isinstance(target, ast.Name):
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    unknown.add(name.id)
            return
        texts = [_folded(i) for i in items] if items is not None else [None]
        if None in texts:
            unknown.add(target.id)
        else:
            values.setdefault(target.id, []).extend(texts)

    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.comprehension)):
            items = node.iter.elts if isinstance(node.iter, (ast.Tuple, ast.List)) else None
            bind(node.target, items)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                bind(target, [node.value])
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            bind(
                node.target,
                [node.value] if isinstance(node, ast.AnnAssign) and node.value else None,
            )
        elif isinstance(node, (ast.arg, ast.Global, ast.Nonlocal)):
            unknown.update([node.arg] if isinstance(node, ast.arg) else node.names)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            unknown.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            unknown.add(node.name)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    bind(item.optional_vars, None)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            unknown.add(node.name)
    return {name: texts for name, texts in values.items() if name not in unknown}


def _values(node, constants) -> list[str | None]:
    """The strings an argument can be: a constant, a string built from constants, or a variable that only
    ever holds constants; [None] when it is not known."""
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    return [_folded(node)]


def _named_in(text: str, names: frozenset) -> str:
    """The part of a name-like string ('torch.softmax', '_installed.__wrapped__', 'autograder.rules') that a
    scan refuses: a forbidden name, a tampering name or the kit; '' if none. Prose (with spaces) is not read."""
    if not NAMEISH.fullmatch(text):
        return ""
    if KIT_PATTERN.search(text):
        return text
    for part in text.split("."):
        if part in names or part in TAMPERING_ATTRS:
            return part
    return ""


def _callee(node: ast.Call) -> str:
    func = node.func
    return (
        func.id
        if isinstance(func, ast.Name)
        else func.attr
        if isinstance(func, ast.Attribute)
        else ""
    )


def _voids(part: str) -> bool:
    """Does a name (an attribute, a string's part) reach the guard's state or the kit?"""
    return bool(KIT_PATTERN.search(part)) or (part in TAMPERING_ATTRS and part not in MILD_ATTRS)


@dataclass(frozen=True)
class Finding:
    line: int
    what: str
    file: str = ""
    voids: bool = False  # tampering: the whole component earns nothing (core.require_behaviour)
    kit: bool = False  # names the kit itself (an import, a string, sys.modules): scan_refusal

    def __str__(self) -> str:
        return (_("{file}, line {line}: {what}") if self.file else _("line {line}: {what}")).format(
            file=self.file, line=self.line, what=self.what
        )


# long: one walk of the tree; its branches are the scan's rules and share the walk's findings and names
def scan_source(
    component: str,
    source: str,
    file: str = "",
    names: frozenset | None = None,
    voiding: bool = True,
    own=(),
) -> list[Finding]:
    """Static by-hand check: forbidden library names and the tricks that hide them or tamper with the rules.

    `names`: the library names refused (the component's, by default); a helper module that nothing the
    component loads names is scanned with none (`frozenset()`) and `voiding=False`: only for tampering, which
    costs the by-hand point (it cannot run in the component's process: nothing loads it). `own`: the
    submission's module names. What is not on the allowlist (allowlist.py) is tampering too."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []  # the import itself reports the syntax error
    names = STATIC[component] if names is None else names
    found: list[Finding] = []

    def add(node, what, voids=False, kit=False):
        found.append(Finding(node.lineno, what, file, voids and voiding, kit and voiding))

    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    constants = _constant_bindings(tree)

    def attribute(node, name):
        if name in names:
            add(
                node,
                _("uses {name}, a library function this exercise does by hand").format(
                    name=f".{name}"
                ),
            )
        elif name in TAMPERING_ATTRS:
            on_sys = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            on_sys = on_sys and node.value.id == "sys"
            add(
                node,
                _("uses {name}, which reaches into the checker or torch's dispatcher").format(
                    name=f".{name}"
                ),
                _voids(name) or on_sys,  # sys.modules: every module, the kit's among them
                on_sys and name == "modules",
            )

    def module(node, path):
        parts = path.split(".")
        if parts[0] in HIDING_MODULES:
            add(
                node,
                _("imports {name}, which this kit does not allow").format(name=path),
                parts[0] in VOIDING_MODULES,
                parts[0] == "autograder",
            )
        elif set(parts) & TAMPERING_ATTRS:
            add(
                node,
                _("imports {name}, which reaches into the checker or torch's dispatcher").format(
                    name=path
                ),
                any(_voids(part) for part in parts),
            )
        elif set(parts) & names:
            add(
                node,
                _("uses {name}, a library function this exercise does by hand").format(name=path),
            )

    def string(node, text):
        hit = _named_in(text, names)
        if hit:
            kit = bool(KIT_PATTERN.search(text))
            add(node, _("names {text} in a string").format(text=repr(text)), _voids(hit), kit)

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            attribute(node, node.attr)
            if (
                node.attr == "compile"
                and isinstance(node.value, ast.Name)
                and node.value.id == "torch"
            ):
                add(node, _("uses torch.compile, which generates its own kernels"))
        elif isinstance(node, ast.MatchClass):  # case FrameType(f_back=...): attributes by pattern
            for name in node.kwd_attrs:
                attribute(node, name)
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "__dict__"
            and _folded(node.slice) is None
        ):
            add(node, _("looks up a computed name in a __dict__, which can hide a forbidden call"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            module(node, node.module or "")
            for alias in node.names:
                if alias.name in names or alias.name in TAMPERING_ATTRS:
                    add(
                        node,
                        _("imports {name} from {module}").format(
                            name=alias.name, module=node.module
                        ),
                        _voids(alias.name),
                    )
                elif alias.name in NAME_TAKING | HIDING_CALLS and node.module != "operator":
                    add(
                        node,
                        _("imports {name} from {module}").format(
                            name=alias.name, module=node.module
                        ),
                    )
        elif isinstance(node, ast.Import):
            for alias in node.names:
                module(node, alias.name)
        elif (
            isinstance(node, ast.Call)
            and _callee(node) in HIDING_CALLS
            and isinstance(node.func, ast.Name)
        ):
            add(
                node,
                _("calls {name}(...) with a computed name, which can hide a forbidden call").format(
                    name=_callee(node)
                ),
                _callee(node) in VOIDING_CALLS,
            )
        elif isinstance(node, ast.Call) and _callee(node) in NAME_TAKING:
            # the name argument: getattr(obj, NAME), attrgetter(NAME, ...), import_module(NAME)...
            takes_object = _callee(node) in ("getattr", "setattr", "delattr", "getattr_static")
            args = node.args[1:2] if takes_object else node.args
            if _callee(node) == "__getattribute__":
                args = node.args[-1:]
            texts = [t for a in args for t in _values(a, constants)]
            if (not args or None in texts) and _callee(node) not in ("setattr", "delattr"):
                add(
                    node,
                    _(
                        "calls {name}(...) with a computed name, which can hide a forbidden call"
                    ).format(name=_callee(node)),
                    True,
                )
            for text in texts:
                if text:
                    string(node, text)
        # getattr passed along: functools.reduce(getattr, ['f_back', ...], frame)
        elif (
            isinstance(node, ast.Name)
            and node.id in NAME_TAKING | HIDING_CALLS
            and id(node) not in called
        ):
            add(
                node,
                _("passes {name} along as a value, which can hide a forbidden call").format(
                    name=node.id
                ),
                True,
            )
        if isinstance(node, (ast.Constant, ast.BinOp, ast.JoinedStr, ast.Call)):
            text = _folded(node)  # a string, written whole or built from constants
            if text:
                string(node, text)
    # The allowlist's refusals, one per line that the names above did not already void (a line is named once).
    named = {f.line for f in found if f.voids or not voiding}
    # (not a file nothing the component loads: it cannot run in the component's process)
    for line, what, kit in refusals(tree, own, fold=_folded) if voiding else ():
        if line not in named or kit:
            found.append(Finding(line, what, file, voiding, kit and voiding))
    return sorted(set(found), key=lambda f: (f.file, f.line, f.what))


def named_helpers(source: str, modules) -> list[str]:
    """The submission's modules a file names in a string ('.switch', 'pkg.switch', 'switch.py'): what
    importlib, pkgutil or runpy could load with a constant name."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    modules, found = set(modules), []
    for node in ast.walk(tree):
        text = _folded(node) if isinstance(node, (ast.Constant, ast.BinOp, ast.JoinedStr)) else None
        if text:
            for part in re.split(r"[./\\]", text):
                if part in modules:
                    found.append(part)
    return list(dict.fromkeys(found))


def imported_helpers(source: str) -> list[str]:
    """Names of the sibling modules a file imports (`from .x import y`, `from . import x`, `import x`)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            names.append(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 1:
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            names.extend(alias.name.split(".")[0] for alias in node.names)
    return list(dict.fromkeys(n for n in names if n.isidentifier()))


def scan_submission(component: str, read, modules=()) -> list[Finding]:
    """scan_source over the component's file and every helper module of the submission it loads, directly or
    through other helpers (an import statement, or a string naming the module: importlib, pkgutil, runpy), under
    the component's rules; then every other helper module of the submission (a .py file that is not a
    component's), which nothing the component loads names, for tampering. `read(name)` is a module's text, or
    None if the submission has no such file; `modules` names the submission's modules. Other components' files
    are not followed: their own check covers them, so one mistake costs one point."""
    source = read(component)
    if source is None:
        return []
    found = scan_source(component, source, own=modules)
    seen, todo = {component}, imported_helpers(source) + named_helpers(source, modules)
    while todo:
        name = todo.pop(0)
        if name in seen or name in NAMES:
            continue
        seen.add(name)
        text = read(name)
        if text is None:  # a library (torch, numpy...), not a file of the submission
            continue
        found += scan_source(component, text, f"{name}.py", own=modules)
        todo += imported_helpers(text) + named_helpers(text, modules)
    for name in sorted(set(modules) - seen - set(NAMES)):
        text = read(name)
        if text is not None:  # loaded by nothing the component loads: read for tampering
            found += scan_source(
                component, text, f"{name}.py", names=frozenset(), voiding=False, own=modules
            )
    return found


def scan_refusal(component: str, read, modules=()) -> str:
    """The sentence refusing every property of a component that has no static by-hand property (mask,
    feed_forward, positional_encoding: nothing to charge a finding to), or '' if none: its file or a helper
    module it loads names the kit itself (an import of `autograder`, a string naming it, sys.modules: the grading
    process has no kit to import, so such code cannot earn there what it earns in-process, issue 32), or tampers
    (what voids the other components through their by-hand property: a walk up the caller's frames, an import the
    allowlist does not know; in-process it finds the checker's own values, in the judge's worker nothing, issue
    35). check (SelfCheck.refuse_by_the_scan) and grade (judge/grading_process) both apply it, so that the
    self-check never promises what the grade will not give. `read(name)`: a module's text or None."""
    findings = scan_submission(component, read, modules)
    kit = [f for f in findings if f.kit]
    if kit:
        return _(
            "{file} or a helper module it loads uses the kit's own checker ({findings}), which the grader does "
            "not have: none of {component}'s properties is awarded"
        ).format(file=f"{component}.py", findings="; ".join(map(str, kit[:3])), component=component)
    tampering = [f for f in findings if f.voids]
    if tampering:
        return _(
            "tampering in {file} or a helper module it loads: {findings}: none of {component}'s "
            "properties is awarded"
        ).format(
            file=f"{component}.py",
            findings="; ".join(map(str, tampering[:3])),
            component=component,
        )
    return ""
