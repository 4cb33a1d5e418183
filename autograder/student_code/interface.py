"""The one narrow interface between a property and the code under test: the operations and what comes back.

A property never touches student code. It sends operations: *build* this module with these arguments and
weights, *call* this function or method on these inputs, *inspect* a built module, *read* a source file, and
gets plain data back (tensors, arrays, numbers). Every expected value is computed on the property's side.
Nothing here runs student code: the executor (executor.py) carries the operations out, in this process or in a
judge's sandboxed worker (judge/remote.py), and both answer through the records below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from ..i18n import _


# ----------------------------------------------------------------------------------------------- operations
@dataclass(frozen=True)
class Handle:
    """A module built inside the target; only its id crosses the boundary."""

    id: int
    component: str
    name: str


@dataclass(frozen=True)
class Build:
    """Construct `component.name(**kwargs)`, load `state` (a state dict) if given, set train/eval mode."""

    component: str
    name: str
    kwargs: dict = field(default_factory=dict)
    state: dict | None = None
    train: bool = False
    seed: int = 0
    dtype: Any = None  # e.g. torch.float64: the module is cast before the state is loaded


@dataclass(frozen=True)
class Call:
    """Call the function `name` of module `on` (a component name), or the method `name` of a built module.

    backward: also backpropagate a fixed pseudo-random cotangent from the (first) output and return the
    gradients of the float inputs and of the module's parameters (for a function: of the one module among its
    arguments, if there is exactly one). read: attributes to read after the call.
    """

    on: str | Handle
    name: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    seed: int = 0
    backward: bool = False
    read: tuple[str, ...] = ()


def cotangent(shape, dtype, seed: int) -> torch.Tensor:
    """The fixed pseudo-random cotangent of a Call with backward (the Executor passes the call's seed + 1), drawn
    on the CPU in float64: the checking side computes its expected gradients with the same one."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


@dataclass(frozen=True)
class Inspect:
    """State dict, parameter names and mode of a built module."""

    handle: Handle


@dataclass(frozen=True)
class Source:
    """The text of a component's file, or None if missing."""

    component: str


@dataclass(frozen=True)
class Modules:
    """The names of the submission's modules (its .py files, stems, sorted): the static scan reads every one."""


@dataclass(frozen=True)
class Probe:
    """Call one forbidden operator of each of `families` under `component`'s by-hand guard, made by the kit;
    Reply.value: the families that were not refused (empty while the guard is intact). Sent by the checking
    side, which knows the component's families, at points the student's code cannot predict."""

    component: str
    families: tuple[str, ...]


def from_files(op, sources: dict[str, str | None]) -> Reply:
    """A Source or Modules operation answered from a submission's files (name -> text), never by a worker."""
    if isinstance(op, Modules):
        return Reply(sorted(name for name, text in sources.items() if text is not None))
    return Reply(sources.get(op.component))


@dataclass
class Reply:
    value: Any = None
    attrs: dict = field(default_factory=dict)
    input_grads: list | None = None
    param_grads: dict | None = None
    # For modules passed as arguments (greedy_decode(model, ...)): was grad mode on / were they in training
    # mode during their forward calls?
    # was an attribute read still attached to a graph?
    attrs_require_grad: dict = field(default_factory=dict)
    grad_enabled_seen: tuple[bool, ...] = ()
    training_seen: tuple[bool, ...] = ()

    def __reduce__(self):
        """Its fields in order, without the trailing defaults: a plain reply is a third of the opcodes the
        judge scans and loads from a worker (62 as a dict of every field), on each of ~1500 operations a
        student."""
        values = list(self.__dict__.values())  # in field order
        while values and _is_default(values[-1], _REPLY_DEFAULTS[len(values) - 1]):
            values.pop()
        return (Reply, tuple(values))


_REPLY_DEFAULTS = tuple(Reply().__dict__.values())


def _is_default(value, default) -> bool:
    """Is a field's value its default (None, or an empty dict or tuple)? Never compares a tensor or an array."""
    return value is None if default is None else (type(value) is type(default) and not value)


@dataclass(frozen=True)
class Opaque:
    """Stands for a returned object that is not data (a module, a generator...)."""

    type_name: str
    text: str

    def __repr__(self) -> str:
        return f"<{self.type_name}: {self.text}>"


ERROR_KINDS = frozenset(
    {"not_implemented", "forbidden", "missing", "syntax", "exception", "timeout", "crashed"}
)
# Characters kept of each field: a student's code can raise a StudentError itself, with anything inside.
ERROR_LIMITS = {"message": 600, "where": 200, "exc_type": 60, "detail": 3000}


def _error_text(value, limit: int) -> str:
    """Plain text cut to `limit`; anything else is named, never walked (str() of a self-similar list is endless)."""
    if type(value) is not str:
        return f"({type(value).__name__[:40]}, not text)"
    return value[:limit]


class StudentError(Exception):
    """The code under test failed: raised, was missing, timed out, crashed, or broke a rule.

    Flat and bounded wherever it is made: a kind from ERROR_KINDS and strings of ERROR_LIMITS characters."""

    def __init__(
        self, kind: str, message: str, where: str = "", exc_type: str = "", detail: str = ""
    ):
        kind = kind if type(kind) is str and kind in ERROR_KINDS else "exception"
        message, where, exc_type, detail = (
            _error_text(v, ERROR_LIMITS[n])
            for n, v in (
                ("message", message),
                ("where", where),
                ("exc_type", exc_type),
                ("detail", detail),
            )
        )
        super().__init__(message)
        self.kind, self.message, self.where, self.exc_type, self.detail = (
            kind,
            message,
            where,
            exc_type,
            detail,
        )

    def __reduce__(self):  # checked again: the fields may have been replaced since
        e = StudentError(self.kind, self.message, self.where, self.exc_type, self.detail)
        return (StudentError, (e.kind, e.message, e.where, e.exc_type, e.detail))

    def __str__(self) -> str:
        return self.message


class StudentCode:
    """The code under test, as a property sees it: every property sends it operations and gets plain data back.
    Subclasses implement `run`: InProcessStudentCode here, SandboxedStudentCode in the judge (judge/remote.py)."""

    label = "submission"

    def run(self, op):  # pragma: no cover - interface
        raise NotImplementedError

    # Conveniences: each is one operation.
    def build(
        self, component, name, state=None, train=False, seed=0, dtype=None, **kwargs
    ) -> Handle:
        return self.run(Build(component, name, kwargs, state, train, seed, dtype)).value

    def call(self, component, name, *args, **kwargs):
        return self.run(Call(component, name, args, kwargs)).value

    def method(self, handle, name, *args, **kwargs):
        return self.run(Call(handle, name, args, kwargs)).value

    def inspect(self, handle) -> dict:
        return self.run(Inspect(handle)).value

    def source(self, component) -> str | None:
        return self.run(Source(component)).value

    def __repr__(self) -> str:
        return f"<{self.label}>"


class StopsAtLoops(StudentCode):
    """A submission as a whole run sees it: a function whose call timed out once (an endless loop, most often) is
    not called again. Each later operation on it times out at once, so a loop costs one time limit, not one per
    property (and per Hypothesis example), and only the properties that call it are charged: a static scan, or a
    property that never calls it, runs as usual. The self-check and the judge wrap their code under test in it,
    so both give the same verdicts."""

    def __init__(self, student: StudentCode):
        self.student, self.label = student, student.label
        # call site ("transformer.Transformer.forward") -> its timeout
        self.looped: dict[str, StudentError] = {}

    def __getattr__(self, name):  # the wrapped code's own state (the judge's stats, close())
        return getattr(self.student, name)

    def run(self, op):
        site = _site(op)
        if site in self.looped:
            raise StudentError(
                "timeout",
                _("not run: {call} already timed out once in this run (an endless loop?)").format(
                    call=site
                ),
                self.looped[site].where,
                "Timeout",
            )
        try:
            return self.student.run(op)
        except BaseException as e:
            # in-process a StudentError; in the judge the lost worker carries it (judge/remote.WorkerLost)
            error = e if isinstance(e, StudentError) else getattr(e, "error", None)
            if site and isinstance(error, StudentError) and error.kind == "timeout":
                self.looped[site] = error
            raise


def _site(op) -> str:
    """The function an operation runs ("attention.softmax", "encoder.Encoder.__init__"), or "" (a source read)."""
    if isinstance(op, Call) and isinstance(op.on, Handle):
        return f"{op.on.component}.{op.on.name}.{op.name}"
    if isinstance(op, Call):
        return f"{op.on}.{op.name}"
    if isinstance(op, Build):
        return f"{op.component}.{op.name}.__init__"
    if isinstance(op, Inspect):
        return f"{op.handle.component}.{op.handle.name}.state_dict"
    return ""


# ------------------------------------------------------------------------------------ where, as a student reads it
IMPORT_OF = "import of "  # an Executor's `where` for an import: "import of attention.py" (StudentError.where)


def missing_file(file: str, where: str) -> StudentError:
    """The error of an operation (`where`, an Executor's) that needs `file` of the submission, which has none."""
    # its own import: "needed by the import of attention.py" says nothing
    if where == f"{IMPORT_OF}{file}":
        msg = _("{file} is missing from the submission").format(file=file)
    else:
        msg = _("{file} is missing from the submission (needed by {where})").format(
            file=file, where=where_text(where)
        )
    return StudentError("missing", msg, where, "ModuleNotFoundError")


def where_text(where: str) -> str:
    """An Executor's `where` in the student's language: a call stays code (`attention.softmax`), an import
    ("import of attention.py") is words."""
    if where.startswith(IMPORT_OF):
        return _("import of {file}").format(file=where.removeprefix(IMPORT_OF))
    return where


def in_call(call: str) -> str:
    """'in attention.softmax': where a call timed out or its process died, ending a sentence."""
    return _("in {call}").format(call=call)


def during_import(file: str) -> str:
    """'during import of attention.py', ending a sentence."""
    return _("during import of {file}").format(file=file)
