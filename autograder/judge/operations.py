"""The operations a grading process sends a worker, and how the judge names them in its messages.

The operations on the student's code (Build, Call, Inspect, Probe...) are the kit's own
(student_code/interface.py); Import and Bye are the judge's, for the worker's life. Every name here describes
an operation on the checking side: which component it touches, where a crash or a timeout happened, the call
and its inputs in brief.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..i18n import _
from ..student_code.interface import (
    IMPORT_OF,
    Build,
    Call,
    Handle,
    Inspect,
    Probe,
    during_import,
    in_call,
)


@dataclass(frozen=True)
class Import:
    """Import a component's module (the first thing a worker does with it, so a crash there is named)."""

    component: str


@dataclass(frozen=True)
class Bye:
    """Return what the student's code printed (trimmed); the worker is killed right after."""


def component_of(op) -> str:
    if isinstance(op, Build):
        return op.component
    if isinstance(op, Call):
        return op.on.component if isinstance(op.on, Handle) else op.on
    if isinstance(op, Inspect):
        return op.handle.component
    if isinstance(op, (Import, Probe)):  # a probe of the guard comes after the component's import
        return op.component
    return ""


def where_of(op) -> str:
    """'during import of x.py' / 'in attention.softmax': where a crash or a timeout happened (translated)."""
    if isinstance(op, Import):
        return during_import(f"{op.component}.py")
    if isinstance(op, Build):
        return in_call(f"{op.component}.{op.name}.__init__")
    if isinstance(op, Call):
        if isinstance(op.on, Handle):
            return in_call(f"{op.on.component}.{op.on.name}.{op.name}")
        return in_call(f"{op.on}.{op.name}")
    if isinstance(op, Inspect):
        return in_call(f"{op.handle.component}.{op.handle.name}.state_dict")
    return ""


def _brief(v) -> str:
    import numpy as np
    import torch

    if isinstance(v, torch.Tensor):
        return _("tensor of shape {shape}, {dtype}").format(
            shape=tuple(v.shape), dtype=str(v.dtype).removeprefix("torch.")
        )
    if isinstance(v, np.ndarray):
        return _("array of shape {shape}, {dtype}").format(shape=v.shape, dtype=v.dtype)
    if isinstance(v, Handle):
        return f"<{v.name}>"
    if isinstance(v, dict):
        return "{...}"
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def call_of(op) -> str:
    """The call that was running, with its inputs in brief: what the student needs to reproduce a hang."""
    if isinstance(op, Call):
        args = [_brief(a) for a in op.args] + [f"{k}={_brief(v)}" for k, v in op.kwargs.items()]
        return f"{op.name}({', '.join(args)})"
    if isinstance(op, Build):
        return f"{op.name}({', '.join(f'{k}={_brief(v)}' for k, v in op.kwargs.items())})"
    if isinstance(op, Import):
        return f"import {op.component}"
    return ""


def executor_wheres(op) -> tuple[str, ...]:
    """Where an Executor may say an operation failed (StudentError.where): the operation itself, or the
    import of its component's file (an import error is raised again by every later operation)."""
    component = component_of(op)
    if isinstance(op, Import):
        return (f"{IMPORT_OF}{component}.py",)
    if isinstance(op, Build):
        own = f"{component}.{op.name}.__init__"
    elif isinstance(op, Call):
        own = (
            f"{component}.{op.on.name}.{op.name}"
            if isinstance(op.on, Handle)
            else f"{component}.{op.name}"
        )
    elif isinstance(op, Inspect):
        own = f"{component}.{op.handle.name}.state_dict"
    else:
        own = ""
    return (own, f"{IMPORT_OF}{component}.py")
