"""The executor: carries a property's operations (interface.py) out on a loaded submission.

`Executor` imports the submission as a fresh package and runs its code under the component's by-hand guard,
output captured, every failure turned into a StudentError. `InProcessStudentCode` runs it in this process (the
student's self-check); the judge runs the same Executor in a sandboxed worker process and ships the operations
over a pipe, so the same properties grade hostile code without trusting it.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import itertools
import random
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.utils._python_dispatch

from .. import rules, timing
from ..components import (
    BY_NAME as _COMPONENTS,  # imported here, before a judge's worker hides the kit
)
from ..components import call_limit_factor
from ..i18n import _
from ..timing import DEFAULT_TIMEOUT
from .interface import (
    IMPORT_OF,
    Build,
    Call,
    Handle,
    Inspect,
    Modules,
    Opaque,
    Probe,
    Reply,
    Source,
    StudentCode,
    StudentError,
    _error_text,
    cotangent,
    in_call,
    missing_file,
    where_text,
)

_ForbiddenCall = rules.ForbiddenCall


# --------------------------------------------------------------------------------------- loading submissions
_package_ids = itertools.count()


def load_package(path: Path, name: str | None = None) -> str:
    """Register folder `path` as a fresh package (its __init__.py is not run); return the package name."""
    name = name or f"_submission_{next(_package_ids)}"
    spec = importlib.util.spec_from_loader(name, loader=None, is_package=True)
    package = importlib.util.module_from_spec(spec)
    package.__path__ = [str(path)]
    sys.modules[name] = package
    return name


def student_traceback(exc: BaseException, root: Path, limit: int = 6) -> str:
    """The traceback frames inside the submission only: the student's code, never the kit's."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if str(root) in str(f.filename)]
    frame = _("{file}, line {line}, in {function}")
    lines = [
        "  "
        + frame.format(file=Path(f.filename).name, line=f.lineno, function=f.name)
        + f"\n    {f.line}"
        for f in frames[-limit:]
    ]
    return "\n".join(lines)


def export(value):
    """Turn whatever the student returned into plain data, detached from their autograd graph."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(
        value, (bool, int, float, complex, str, type(None), np.generic, torch.dtype, torch.device)
    ):
        return value
    if isinstance(value, tuple):
        return tuple(export(v) for v in value)
    if isinstance(value, list):
        return [export(v) for v in value]
    if isinstance(value, dict):
        return {k: export(v) for k, v in value.items() if isinstance(k, (str, int))}
    return Opaque(type(value).__name__, repr(value)[:200])


def _copy_in(value):
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, (tuple, list)):
        return type(value)(_copy_in(v) for v in value)
    if isinstance(value, dict):
        return {k: _copy_in(v) for k, v in value.items()}
    return value


def _first_tensor(value):
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)):
        for v in value:
            tensor = _first_tensor(v)
            if tensor is not None:
                return tensor
    return None


def seed_everything(seed: int) -> None:
    # The default generator directly: torch.manual_seed also visits the CUDA generators, which costs more
    # than the tiny calls it precedes. Seed CUDA only where it is in use.
    torch.default_generator.manual_seed(seed)
    if torch.cuda.is_initialized():
        torch.cuda.manual_seed_all(seed)
    np.random.seed(seed % 2**32)
    random.seed(seed)


def _raised_here(e: StudentError) -> bool:
    """Was `e` raised by the Executor's own code (a call whose result has no autograd graph), rather than by
    the student's? The frame that raised it runs the kit's code object, which student code cannot run as its
    own frame."""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code is Executor._call.__code__


class Executor:
    """Carries out operations on one submission folder. Runs in-process or inside a judge worker."""

    def __init__(self, root: Path, output_limit: int = 20_000, package: str | None = None):
        """`package`: the name to register the folder under (the zygote's warm-up names its own); by default
        a fresh _submission_<n>."""
        self.root = Path(root).resolve()
        # The by-hand guard, taken before any student code is imported: replacing rules.guard later changes
        # nothing here.
        self._guard = rules.install()
        self.package = load_package(self.root, package)
        self.objects: dict[int, Any] = {}
        self.ids = itertools.count(1)
        self.output = io.StringIO()
        self.output_limit = output_limit
        self.import_errors: dict[str, StudentError] = {}

    # -- helpers
    def module(self, component: str):
        if component in self.import_errors:
            raise self.import_errors[component]
        # the component's library preloads, imported by the kit, unguarded (the
        # judge's zygote has imported them already).
        for name in _COMPONENTS[component].preload if component in _COMPONENTS else ():
            importlib.import_module(name)
        try:
            with self._student_context(component, f"{IMPORT_OF}{component}.py"):
                return importlib.import_module(f"{self.package}.{component}")
        except StudentError as e:
            self.import_errors[component] = e
            raise

    def _resolve(self, value):
        if isinstance(value, Handle):
            return self.objects[value.id]
        if isinstance(value, (tuple, list)):
            return type(value)(self._resolve(v) for v in value)
        if isinstance(value, dict):
            return {k: self._resolve(v) for k, v in value.items()}
        return value

    @contextlib.contextmanager
    def _student_context(self, component: str, where: str):
        """Run student code: forbidden calls raise, output is captured, exceptions become StudentError."""
        out = _BoundedWriter(self.output, self.output_limit)
        try:
            # The self-check's time limit (timing.cpu_limit) fires in the student's code only: raised while
            # the guard or the captured output is being set or restored, it would leave them set for the
            # process's later calls (every one then refused, its output lost).
            with (
                timing.held(),
                warnings.catch_warnings(),
                contextlib.redirect_stdout(out),
                contextlib.redirect_stderr(out),
            ):
                warnings.simplefilter("ignore")
                with self._guard(component), timing.interruptible():
                    yield
        except StudentError as e:
            if _raised_here(e):
                raise
            # The student's code raised the kit's own error (of kind "missing", say): it is their exception
            # like any other, never a verdict of the kit (the judge checks the kit's kinds again).
            raise self._exception(e, where) from None
        except _ForbiddenCall as e:
            raise StudentError(
                "forbidden",
                self._forbidden_message(e, component),
                where,
                "ForbiddenCall",
                student_traceback(e, self.root),
            ) from None
        except ModuleNotFoundError as e:
            missing = (e.name or "").rsplit(".", 1)[-1]
            if e.name and e.name.startswith(self.package):
                raise missing_file(f"{missing}.py", where) from None
            raise StudentError(
                "exception",
                _("ModuleNotFoundError during {where}: {error}").format(
                    where=where_text(where), error=e
                ),
                where,
                "ModuleNotFoundError",
                student_traceback(e, self.root),
            ) from None
        except SyntaxError as e:
            msg = _("SyntaxError in {file}, line {line}: {error}").format(
                file=Path(e.filename or "?").name, line=e.lineno, error=e.msg
            )
            raise StudentError("syntax", msg, where, "SyntaxError") from None
        except NotImplementedError as e:
            raise StudentError(
                "not_implemented",
                _("{where} is not implemented yet (raises NotImplementedError)").format(
                    where=where_text(where)
                ),
                where,
                "NotImplementedError",
                student_traceback(e, self.root),
            ) from None
        except (Exception, SystemExit, KeyboardInterrupt, GeneratorExit) as e:  # noqa: BLE001 - hostile code
            raise self._exception(e, where) from None

    def _exception(self, e: BaseException, where: str) -> StudentError:
        """An exception of the student's code, as the kit words it: its type, where, its first line."""
        try:  # the kit's own error: its message checked as text first (a bomb is named, never walked)
            raw = (
                _error_text(e.__dict__.get("message"), 300)
                if isinstance(e, StudentError)
                else str(e)
            )
            text = raw.strip()
        except Exception:  # noqa: BLE001 - a __str__ that raises
            text = ""
        text = text.splitlines()[0][:300] if text else ""
        msg = (_("{error} in {where}: {text}") if text else _("{error} in {where}")).format(
            error=type(e).__name__, where=where_text(where), text=text
        )
        return StudentError(
            "exception", msg, where, type(e).__name__, student_traceback(e, self.root)
        )

    def _forbidden_message(self, e: rules.ForbiddenCall, component: str) -> str:
        """The guard watches the component under test; the call may sit in a file it uses (attention.py's
        torch.softmax while multi_head runs): name that file."""
        frames = [
            f for f in traceback.extract_tb(e.__traceback__) if str(self.root) in str(f.filename)
        ]
        where = Path(frames[-1].filename).stem if frames else component
        if where == component:
            return str(e)
        return _(
            "{what} is forbidden in {file}, which {component} uses: this exercise asks for it by hand"
        ).format(what=e.what, file=f"{where}.py", component=component)

    # -- operations
    def run(self, op) -> Reply:
        if isinstance(op, Build):
            return self._build(op)
        if isinstance(op, Call):
            return self._call(op)
        if isinstance(op, Inspect):
            return self._inspect(op)
        if isinstance(op, Source):
            # a component or a helper module of the submission
            path = self.root / f"{op.component}.py"
            ok = op.component.isidentifier() and path.is_file()
            return Reply(path.read_text(errors="replace") if ok else None)
        if isinstance(op, Modules):
            return Reply(sorted(p.stem for p in self.root.glob("*.py") if p.stem.isidentifier()))
        if isinstance(op, Probe):
            return Reply(rules.probe(self._guard, op.component, tuple(op.families)))
        raise TypeError(f"unknown operation {op!r}")

    def _build(self, op: Build) -> Reply:
        module = self.module(op.component)
        where = f"{op.component}.{op.name}.__init__"
        with self._student_context(op.component, where):
            cls = getattr(module, op.name)
            seed_everything(op.seed)
            obj = cls(**self._resolve(_copy_in(op.kwargs)))  # a built module may be an argument
            if op.dtype is not None and isinstance(obj, torch.nn.Module):
                obj.to(op.dtype)
            if op.state is not None:
                _load_state(obj, op.state)
            if isinstance(obj, torch.nn.Module):
                obj.train(op.train)
        handle = Handle(next(self.ids), op.component, op.name)
        self.objects[handle.id] = obj
        return Reply(handle)

    # long: one call's steps (resolve the arguments, hook the modules, run, backward, read back) sharing its hooks
    def _call(self, op: Call) -> Reply:
        if isinstance(op.on, Handle):
            obj, component = self.objects[op.on.id], op.on.component
            where = f"{component}.{op.on.name}.{op.name}"
        else:
            obj, component = None, op.on
            where = f"{component}.{op.name}"
        module = self.module(component) if obj is None else None
        args, kwargs = self._resolve(_copy_in(op.args)), self._resolve(_copy_in(op.kwargs))
        watched = [a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.nn.Module)]
        seen_grad, seen_train, hooks = [], [], []

        def pre_hook(mod, inputs):
            seen_grad.append(torch.is_grad_enabled())
            seen_train.append(mod.training)

        # every submodule: greedy_decode calls model.encode/decode, never model(...)
        for m in watched:
            hooks.extend(sub.register_forward_pre_hook(pre_hook) for sub in m.modules())
        if op.backward:
            args = tuple(_requires_grad(a) for a in args)
            kwargs = {k: _requires_grad(v) for k, v in kwargs.items()}
        reply = Reply()
        # grad mode is set and restored by the kit, outside the student's (interruptible) code: a time limit
        # that fired on its way out timed the call out and left the mode as the student's code had it
        grad = torch.enable_grad() if op.backward else contextlib.nullcontext()
        try:
            with grad, self._student_context(component, where):
                fn = getattr(obj if obj is not None else module, op.name)
                seed_everything(op.seed)
                value = fn(*args, **kwargs)
                if op.backward:
                    out = _first_tensor(value)
                    if out is None or not out.requires_grad:
                        raise StudentError(
                            "exception",
                            _(
                                "{where} returned no tensor connected to its inputs "
                                "(the autograd graph is cut: .detach(), .data, numpy or no_grad?)"
                            ).format(where=where),
                            where,
                            "NoGraph",
                        )
                    # drawn on the CPU (the same numbers on every device), then moved to the output's
                    grad_out = cotangent(out.shape, out.dtype, op.seed + 1).to(out.device)
                    (out * grad_out).sum().backward()
                reply.value = export(value)
                read = {name: getattr(obj, name, None) for name in op.read}
                reply.attrs = {name: export(v) for name, v in read.items()}
                reply.attrs_require_grad = {
                    n: bool(getattr(v, "requires_grad", False)) for n, v in read.items()
                }
        finally:
            for h in hooks:
                h.remove()
        if op.backward:
            reply.input_grads = [
                export(a.grad) if isinstance(a, torch.Tensor) else None for a in args
            ]
            # A function of one model (teacher_forcing_loss(model, ...)) returns
            # that model's gradients, as a method returns its own module's.
            module = (
                obj
                if isinstance(obj, torch.nn.Module)
                else (watched[0] if len(watched) == 1 else None)
            )
            if module is not None:
                reply.param_grads = {n: export(p.grad) for n, p in module.named_parameters()}
        reply.grad_enabled_seen, reply.training_seen = tuple(seen_grad), tuple(seen_train)
        return reply

    def _inspect(self, op: Inspect) -> Reply:
        obj = self.objects[op.handle.id]
        if not isinstance(obj, torch.nn.Module):
            return Reply({"module": False, "type": type(obj).__name__})
        with self._student_context(
            op.handle.component, f"{op.handle.component}.{op.handle.name}.state_dict"
        ):
            info = {
                "module": True,
                "type": type(obj).__name__,
                "training": obj.training,
                "state": {k: export(v) for k, v in obj.state_dict().items()},
                "params": [n for n, _ in obj.named_parameters()],
                "children": [n for n, _ in obj.named_children()],
                "module_types": {n: type(m).__name__ for n, m in obj.named_modules()},
            }
        return Reply(info)


def _requires_grad(value):
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value.detach().clone().requires_grad_(True)
    return value


def _load_state(module, state: dict) -> None:
    """Load exactly these tensors; a missing or extra name, or a wrong shape, is the student's error."""
    own = module.state_dict()
    missing = sorted(set(state) - set(own))
    if missing:
        raise AttributeError(
            (
                _("expected parameters/buffers named {names}; the module has {have}")
                if own
                else _("expected parameters/buffers named {names}; the module has nothing")
            ).format(names=", ".join(missing), have=", ".join(sorted(own)))
        )
    for name, tensor in state.items():
        if tuple(own[name].shape) != tuple(tensor.shape):
            raise ValueError(
                _("{name} has shape {shape}, expected {expected}").format(
                    name=name, shape=tuple(own[name].shape), expected=tuple(tensor.shape)
                )
            )
    with torch.no_grad():
        for name, tensor in state.items():
            own[name].copy_(tensor)


class _BoundedWriter(io.TextIOBase):
    """Keeps the first `limit` characters of what the student prints; drops the rest."""

    def __init__(self, sink: io.StringIO, limit: int):
        self.sink, self.limit = sink, limit

    def write(self, s):
        room = self.limit - self.sink.tell()
        if room > 0:
            self.sink.write(s[:room])
        return len(s)

    def writable(self):
        return True


class InProcessStudentCode(StudentCode):
    """The self-check: student code runs in this process. Fast, and trusts the code (students check themselves).
    Each operation has the judge's time limit (`timeout` CPU seconds, scaled by this machine's speed: see
    autograder/timing.py), so a call too slow for the judge fails here first."""

    def __init__(
        self, root: Path, label: str | None = None, timeout: float | None = DEFAULT_TIMEOUT
    ):
        self.executor = Executor(Path(root))
        self.label = label or Path(root).name
        self.timeout = timeout

    def run(self, op):
        from .. import timing

        component, where = _where(op)
        # a component may declare a longer per-call limit (components.call_limit_factor)
        factor = call_limit_factor(component)
        timeout = self.timeout * factor if self.timeout else self.timeout
        try:
            # only the student's code is interruptible (_student_context): a limit that expires in the kit's
            # bookkeeping (hooks, reading back) fires when the student's code runs again, never after it ended
            with timing.cpu_limit(timeout), timing.held():
                return self.executor.run(op)
        except timing.CallTimedOut:
            raise StudentError(
                "timeout", timing.timeout_message(timeout, where, component), where, "Timeout"
            ) from None


def _where(op) -> tuple[str, str]:
    """(component, 'in attention.softmax'): where a call ran out of time."""
    if isinstance(op, Call) and isinstance(op.on, Handle):
        return op.on.component, in_call(f"{op.on.component}.{op.on.name}.{op.name}")
    if isinstance(op, Call):
        return op.on, in_call(f"{op.on}.{op.name}")
    if isinstance(op, Build):
        return op.component, in_call(f"{op.component}.{op.name}.__init__")
    if isinstance(op, Inspect):
        return op.handle.component, in_call(f"{op.handle.component}.{op.handle.name}.state_dict")
    return "", ""
