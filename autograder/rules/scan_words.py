"""The names the static scan (static_scan.py) reads: the calls and modules that reach a name without writing it,
the attributes that reach into the checker, torch's dispatcher or the interpreter's insides, and which of them
void the whole component. How the sets grow with the survey: docs/byhand.md.
"""

from __future__ import annotations

import re

# Ways to reach a name without writing it: dynamic attribute access, dynamic import, code from strings. Called
# with a name that is not a constant (or one of the names below), or passed along as a value
# (`functools.reduce(getattr, ...)`), each is reported.
NAME_TAKING = frozenset(
    {
        "getattr",
        "setattr",
        "delattr",
        "attrgetter",
        "methodcaller",
        "getattr_static",
        "resolve_name",
        "import_module",
        "__import__",
        "find_spec",
        "__getattribute__",
        "run_path",
        "run_module",
        "spec_from_file_location",
        "SourceFileLoader",
        "load_source",
    }
)
# Always reported when called: code from strings, namespaces as dictionaries.
HIDING_CALLS = frozenset({"eval", "exec", "compile", "vars", "globals"})
# Modules that load code by other routes than an import statement, or walk the interpreter's objects.
HIDING_MODULES = frozenset(
    {
        "importlib",
        "ctypes",
        "_ctypes",
        "inspect",
        "builtins",
        "subprocess",
        "autograder",
        "gc",
        "pkgutil",
        "runpy",
        "zipimport",
        "marshal",
        "pickle",
        "_pickle",
        "copyreg",
        "dill",
    }
)
# Reaching into the checker, torch's dispatcher (modes, dispatch keys, kernels), torch's own Python
# implementations of the operators (decompositions, references, compilers), or the interpreter's frames,
# closures and code objects: where the run-time guard and its state live.
TAMPERING_ATTRS = frozenset(
    {
        "modules",
        "_pop_mode",
        "_push_mode",
        "_python_dispatch",
        "_get_current_dispatch_mode",
        "_disable_current_modes",
        "RUNTIME",
        "STATIC",
        "FAMILIES",
        "FORBIDDEN_NAMES",
        "_installed",
        "_make_guard",
        "_guard",
        "_C",
        "_DisableTorchDispatch",
        "_disabled_torch_dispatch_impl",
        "_ExcludeDispatchKeyGuard",
        "_IncludeDispatchKeyGuard",
        "_ForceDispatchKeyGuard",
        "_unset_dispatch_mode",
        "_set_dispatch_mode",
        "_pop_torch_dispatch_stack",
        "_push_on_torch_dispatch_stack",
        "_dispatch_tls_set_dispatch_key_excluded",
        "_dispatch_tls_set_dispatch_key_included",
        "redispatch",
        "_op_dk",
        "library",
        "_decomp",
        "_refs",
        "_prims",
        "_dynamo",
        "_inductor",
        "__closure__",
        "cell_contents",
        "__subclasses__",
        "__globals__",
        "__wrapped__",
        "__code__",
        "__defaults__",
        "__kwdefaults__",
        "__builtins__",
        "__getattribute__",
        "__traceback__",
        "__loader__",
        "co_consts",
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_code",
        "tb_frame",
        "tb_next",
        "gi_frame",
        "cr_frame",
        "ag_frame",
        "_getframe",
        "_current_frames",
        "settrace",
        "setprofile",
        "FunctionType",
        "CodeType",
        "CellType",
    }
)
# A string that names the kit itself ('autograder.rules', 'autograder.student_code'...)
KIT_PATTERN = re.compile(r"(^|\.)autograder(\.|$)")
# A string built from constants and so known statically: concatenation, %-formatting, f-strings, str.join and
# str.format of constants ('__clo' + 'sure__', f"{'soft'}max", '.'.join(['autograder', 'rules'])).
NAMEISH = re.compile(r"[A-Za-z_][\w.]*")


# Findings that void the whole component, not only its by-hand point: a route to the guard's state or to the
# interpreter's insides, or code whose names cannot be read. No correct solution needs one (the reference, the
# bug catalog and honest variants are checked in tests/test_rules.py), and a student who uses one can have
# switched the rules off for the length of a call, so nothing the component ran is trusted.
# nn.Module.modules(), exception chaining: honest uses
MILD_ATTRS = frozenset({"modules", "__traceback__"})
VOIDING_MODULES = frozenset(
    {"ctypes", "_ctypes", "gc", "inspect", "builtins", "autograder", "pickle", "_pickle", "marshal"}
    | {"copyreg", "dill"}
)
VOIDING_CALLS = frozenset({"eval", "exec", "compile"})
