"""What a submission may be (issue 32): the static scan's allowlist. static_scan.py names forbidden library
calls and the tricks that hide them, a list that each new trick outgrew (`len.__self__.exec`, a pickle that
`torch.load` runs). This module says instead what an exercise's code is made of, so that no code can hide from
the scan: every refusal here voids the component (tampering, core.require_behaviour), and each names its line.

- imports from `ALLOWED_MODULES` and the submission's own files only;
- no code from strings, however reached: `exec`, `eval`, `compile`, `__import__`, `globals`, `locals`, `vars`,
  `breakpoint` as names (called or passed along), unless the file binds the name itself;
- dunders only where a module or a class needs them (`ALLOWED_DUNDERS`: `super().__init__`, `__name__ ==
  "__main__"`, an operator's method...), as attributes, names, or inside any string (`getattr(len, '__self__')`,
  a format string's `{0.__self__}`); `__self__`, `__class__.__base__`, `__subclasses__`, `__builtins__`... lead
  to the builtins module and every loaded module;
- no pickle-family loading (`torch.load`, `np.load`, `pickle`, `marshal`, `shelve`: a pickle calls any function)
  and no corner of a library that loads, compiles or registers code (`REFUSED_ATTRIBUTES`, `REFUSED_PATHS`),
  however the library is bound; no private name of a library (`torch._C`, `np._core`);
- `sys` only for what a program prints or limits (`ALLOWED_SYS`): sys.modules, meta_path and path reach or
  make every module;
- no `import *` from a library (its names would be read by nobody).
The reasoning, and what an honest student may still write: docs/byhand.md, "The allowlist".
"""

from __future__ import annotations

import ast
import re

from ..components import NAMES
from ..i18n import _

# Libraries an exercise needs, and the standard library's plain data and arithmetic. Not: subprocess,
# importlib, pickle, inspect, ctypes, string (Formatter.get_field reads attributes by a string), timeit and
# doctest (they run code from strings), pandas (read_pickle, eval), code, pdb, runpy.
ALLOWED_MODULES = frozenset(
    {
        "torch",
        "numpy",
        "scipy",
        "math",
        "cmath",
        "random",
        "typing",
        "typing_extensions",
        "dataclasses",
        "functools",
        "itertools",
        "operator",
        "collections",
        "copy",
        "enum",
        "abc",
        "numbers",
        "statistics",
        "heapq",
        "bisect",
        "warnings",
        "contextlib",
        "time",
        "re",
        "sys",
        # processes, files and signals: they run no Python code the scan cannot read in this process (the
        # sandbox bounds what they do to the machine: docs/judge.md), and the judge's own hostile examples that
        # kill their parent or exit in a call must earn what their control earns
        "os",
        "signal",
        "__future__",
    }
)
# Dunders an exercise's module or class may name: construction, the module's name, a class's protocol methods.
ALLOWED_DUNDERS = frozenset(
    {
        "__init__",
        "__post_init__",
        "__name__",
        "__main__",
        "__qualname__",
        "__module__",
        "__doc__",
        "__file__",
        "__all__",
        "__version__",
        "__slots__",
        "__class__",
        "__call__",
        "__repr__",
        "__str__",
        "__len__",
        "__iter__",
        "__next__",
        "__getitem__",
        "__setitem__",
        "__contains__",
        "__enter__",
        "__exit__",
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__hash__",
        "__bool__",
        "__add__",
        "__radd__",
        "__sub__",
        "__rsub__",
        "__mul__",
        "__rmul__",
        "__truediv__",
        "__rtruediv__",
        "__matmul__",
        "__neg__",
        "__abs__",
        "__pow__",
        "__array__",
        "__setattr__",
        "__future__",
        # exception chaining (`raise ... from e`, `.with_traceback(e.__traceback__)`): its frames stay named
        "__traceback__",
        "__cause__",
        "__context__",
    }
)
# Builtins that run code from strings or hand out a namespace as a dictionary.
CODE_BUILTINS = frozenset(
    {"exec", "eval", "compile", "__import__", "globals", "locals", "vars", "breakpoint"}
)
# Attribute names refused on anything (the object they hang from is not known statically): pickle-family
# loading, code loading and compiling, annotations evaluated from strings.
REFUSED_ATTRIBUTES = frozenset(
    {
        "load",
        "loads",
        "Unpickler",
        "read_array",
        "npyio",
        "jit",
        "hub",
        "package",
        "serialization",
        "cpp_extension",
        "load_inline",
        "load_library",
        "model_zoo",
        "ctypeslib",
        "f2py",
        "LowLevelCallable",
        "exec_module",
        "load_module",
        "get_type_hints",
        "ForwardRef",
        "meta_path",
        "path_hooks",
    }
)
# Dotted paths refused, with everything under them: torch's compiling, registration and process corners.
REFUSED_PATHS = (
    "torch.compile",
    "torch.compiler",
    "torch.export",
    "torch.fx",
    "torch.ops",
    "torch.library",
    "torch.overrides",
    "torch.multiprocessing",
    "torch.distributed",
    "torch.onnx",
    "torch.classes",
    "torch.utils.cpp_extension",
    "numpy.lib.format",
    "numpy.testing",
)
# What sys may give a submission: its streams, limits and version.
ALLOWED_SYS = frozenset(
    {
        "maxsize",
        "float_info",
        "int_info",
        "stdout",
        "stderr",
        "exit",
        "argv",
        "version",
        "version_info",
        "platform",
        "byteorder",
        "getrecursionlimit",
        "setrecursionlimit",
    }
)
# Modules static_scan.py names already, each with its own verdict (importlib with a constant name imports what
# it names, read below; ctypes, gc, inspect, pickle... void): not refused twice.
NAMED_ELSEWHERE = frozenset(
    {"importlib", "ctypes", "_ctypes", "inspect", "builtins", "subprocess", "autograder", "gc"}
    | {"pkgutil", "runpy", "zipimport", "marshal", "pickle", "_pickle", "copyreg", "dill"}
)
# Calls that import the module they name
_IMPORTING = frozenset({"import_module", "resolve_name", "find_spec", "__import__"})
# Modules reached as another module's attribute (`torch.nn.modules.module.sys`): the routes an import
# statement would be refused.
REACHED_MODULES = frozenset(
    {"sys", "os", "builtins", "importlib", "pickle", "marshal", "inspect", "ctypes", "gc", "types"}
    | {"runpy", "pkgutil", "shelve", "copyreg", "subprocess", "dill", "posix"}
)
# Dunder names a file may bind (`__all__ = [...]`); never `__name__`, which decides what `if __name__ ==
# "__main__":` runs.
_BINDABLE_DUNDERS = frozenset({"__all__", "__version__", "__slots__", "__doc__"})
# Libraries whose private names are refused (torch._C, np._core: dispatchers, kernels, internals); os._exit is not
# one of them (sys's corners: ALLOWED_SYS)
_PRIVATE_CHECKED = frozenset({"torch", "numpy", "scipy"})
# Calls that take a name as a string: the names they are given are read as if written as attributes.
_NAME_TAKING = frozenset(
    {"getattr", "setattr", "delattr", "hasattr", "attrgetter", "methodcaller", "resolve_name"}
    | {"import_module", "find_spec", "__getattribute__", "__setattr__"}
)
_DUNDER = re.compile(r"__([A-Za-z][A-Za-z0-9_]*?)__")


def _bound_names(tree) -> set[str]:
    """Names the file binds itself (a student's own `def compile(...)` is not the builtin)."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return bound


def _docstrings(tree) -> set[int]:
    """ids of the docstrings' nodes: prose, never a name."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _aliases(tree) -> dict[str, str]:
    """Local name -> the library path it stands for: `import torch.nn.functional as F` (F -> torch.nn.functional),
    `from torch import nn` (nn -> torch.nn), `import numpy` (numpy -> numpy)."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                names[a.asname or a.name.split(".")[0]] = (
                    a.name if a.asname else a.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


def _path(node, aliases) -> str | None:
    """The dotted library path an attribute chain names (`F.softmax` -> 'torch.nn.functional.softmax'), if its
    root is a library bound by an import."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in aliases:
        return None
    return ".".join([aliases[node.id], *reversed(parts)])


def _dunders(text: str) -> list[str]:
    """The dunders a string names that no exercise needs ('__self__', '{0.__class__.__base__}')."""
    return [d for d in (m.group(0) for m in _DUNDER.finditer(text)) if d not in ALLOWED_DUNDERS]


class _Reader:
    """One file's refusals: (line, sentence, reaches the kit), each voiding the component (static_scan.scan_source)."""

    def __init__(self, tree, own, fold):
        self.own = set(own) | set(NAMES)
        self.fold = fold
        self.bound, self.docs = _bound_names(tree), _docstrings(tree)
        self.aliases = {k: v for k, v in _aliases(tree).items() if v.split(".")[0] not in self.own}
        self.found: list[tuple[int, str, bool]] = []
        self.inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}

    def add(self, node, text: str, kit: bool = False) -> None:
        self.found.append((getattr(node, "lineno", 0), text, kit))

    def module(self, node, path: str) -> None:
        """An imported module: from the allowlist or the submission's own files, and no corner of it."""
        top = path.split(".")[0]
        if top in NAMED_ELSEWHERE:
            return
        if top not in ALLOWED_MODULES and top not in self.own:
            self.add(
                node,
                _("imports {name}, which a submission may not import").format(name=path),
            )
        elif top not in self.own:
            self.library_path(node, path)

    def library_path(self, node, path: str) -> None:
        """A library path (`torch.ops.aten`, `sys.modules`, `np._core`): no refused corner, no private name."""
        parts = path.split(".")
        corner = next((p for p in REFUSED_PATHS if path == p or path.startswith(p + ".")), None)
        if corner:
            self.add(
                node,
                _("uses {name}, a library corner that loads, compiles or registers code").format(
                    name=corner
                ),
            )
        elif parts[0] == "sys" and len(parts) > 1 and parts[1] not in ALLOWED_SYS:
            self.add(
                node,
                _("uses {name}, which reaches every module of the process").format(
                    name=".".join(parts[:2])
                ),
            )
        elif set(parts[1:]) & REFUSED_ATTRIBUTES:
            self.add(node, self.loading(path))
        elif set(parts[1:]) & REACHED_MODULES:  # from numpy.core.numeric import builtins
            self.add(
                node,
                _("reaches the module {name} through another object").format(name=path),
            )
        elif parts[0] in _PRIVATE_CHECKED and any(
            p.startswith("_") and not p.startswith("__") for p in parts[1:]
        ):
            self.add(node, _("uses {name}, a private part of a library").format(name=path))

    def attribute(self, node) -> None:
        name = node.attr
        if name.startswith("__") and name.endswith("__") and name not in ALLOWED_DUNDERS:
            self.dunder(node, f".{name}")
        elif name in REFUSED_ATTRIBUTES:
            self.add(node, self.loading(f".{name}"))
        elif name in REACHED_MODULES:  # torch.os, np.core.numeric.builtins
            self.add(
                node,
                _("reaches the module {name} through another object").format(name=name),
            )
        elif id(node) not in self.inner:  # the whole chain, once: torch.ops.aten._softmax
            path = _path(node, self.aliases)
            if path:
                self.library_path(node, path)

    @staticmethod
    def loading(name: str) -> str:
        return _("uses {name}, which loads pickled data or code").format(name=name)

    def dunder(self, node, name: str) -> None:
        self.add(
            node,
            _("uses {name}, which walks the interpreter's objects").format(name=name),
        )

    def name(self, node) -> None:
        name = node.id
        if name in CODE_BUILTINS and name not in self.bound:
            self.add(
                node,
                _("uses {name}, which runs code the scan cannot read").format(name=name),
            )
        elif name.startswith("__") and name.endswith("__"):
            storing = isinstance(node.ctx, (ast.Store, ast.Del))
            if (storing and name not in _BINDABLE_DUNDERS) or (
                not storing and name not in ALLOWED_DUNDERS
            ):
                self.dunder(node, name)

    def call(self, node) -> None:
        """Names given as strings (getattr(torch, 'load'), attrgetter('__self__')) are read as attributes."""
        func = node.func
        callee = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if callee not in _NAME_TAKING:
            return
        for arg in node.args:
            text = self.fold(arg)
            if text and callee in _IMPORTING and not text.startswith("."):
                self.module(node, text)
            for part in (text or "").split("."):
                if part in REFUSED_ATTRIBUTES or part in REACHED_MODULES:
                    self.add(node, self.loading(repr(text)))

    def string(self, node) -> None:
        text = self.fold(node)
        if text and id(node) not in self.docs:
            for dunder in _dunders(text):
                self.dunder(node, repr(dunder))

    def read(self, tree) -> list[tuple[int, str, bool]]:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.module(node, alias.name)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                self.module(node, node.module)
                if node.module.split(".")[0] in self.own:
                    continue
                for alias in node.names:
                    if alias.name == "*":
                        self.add(
                            node,
                            _("imports everything from {module}: import the names you use").format(
                                module=node.module
                            ),
                        )
                    elif alias.name.startswith("__") and alias.name not in ALLOWED_DUNDERS:
                        self.dunder(node, alias.name)
                    elif alias.name in REFUSED_ATTRIBUTES:
                        self.add(node, self.loading(alias.name))
                    else:
                        self.library_path(node, f"{node.module}.{alias.name}")
            elif isinstance(node, ast.Attribute):
                self.attribute(node)
            elif isinstance(node, ast.Name):
                self.name(node)
            elif isinstance(node, ast.Call):
                self.call(node)
            if isinstance(node, (ast.Constant, ast.JoinedStr, ast.BinOp)):
                self.string(node)
        # one refusal a line (the first): the student reads the line, and the by-hand message lists three
        first: dict[int, tuple[int, str, bool]] = {}
        for line, text, kit in sorted(set(self.found)):
            if line not in first or (kit and not first[line][2]):
                first[line] = (line, text, kit)
        return sorted(first.values())


def refusals(tree, own=(), fold=None) -> list[tuple[int, str, bool]]:
    """(line, sentence, whether it reaches the kit: sys.modules) for each thing in a parsed file that is not
    what a submission may be. `own`: the submission's module names (importable as themselves); `fold(node)`: the
    string a constant expression makes (static_scan._folded), or None. A file that nothing the component loads
    is not read here (static_scan.scan_source): it never runs in the component's process (a student's own test
    file may import pytest)."""
    fold = fold or (
        lambda n: n.value if isinstance(n, ast.Constant) and isinstance(n.value, str) else None
    )
    return _Reader(tree, own, fold).read(tree)
