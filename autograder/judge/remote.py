"""SandboxedStudentCode: the StudentCode whose operations run in a sandboxed worker process.

Properties run here, in the judge; only operations (build this, call that on these inputs) cross to the worker
and only plain data comes back. A worker that hangs is killed at the operation's time limit; one that dies
(exit, segfault, kill) is reported with how and where; either way the property ends at once (WorkerLost is a
BaseException, so Hypothesis does not retry the dead worker while shrinking) and the next property gets a
fresh worker.
"""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import KIT, timing
from ..components import call_limit_factor
from ..i18n import N_, _
from ..student_code.interface import (
    ERROR_KINDS,
    IMPORT_OF,
    Build,
    Call,
    Handle,
    Inspect,
    Modules,
    Probe,
    Reply,
    Source,
    StudentCode,
    StudentError,
    during_import,
    from_files,
    in_call,
    missing_file,
    where_text,
)
from . import wire
from .limits import Limits
from .sandbox import Bye, Import

# As root, the workers of one judge run get uids of their own: a block of UIDS_PER_RUN numbers picked at random
# once per orchestrator (one of UID_BLOCKS: two judges at the same time share a block once in a million), two
# per grading slot. So a worker can signal no worker of another slot, nor of another judge running at the
# same time; and its uid says nothing of the host (a block derived from the orchestrator's pid named it).
UID_BASE, UIDS_PER_RUN, UID_BLOCKS = 2_000_000, 128, 1 << 20
MAX_JOBS = UIDS_PER_RUN // 2
_block: list[int] = []


def uid_block() -> int:
    """This orchestrator's block of uids (the same for the life of the process)."""
    if not _block:
        import secrets

        _block.append(UID_BASE + secrets.randbelow(UID_BLOCKS) * UIDS_PER_RUN)
    return _block[0]


# The whole environment of a zygote, hence of every worker: no HOME, no token, no path of the host. Set at
# exec, because clearing os.environ later would leave the old values in /proc/self/environ and in whatever
# module copied them. The kit is found as the zygote's working directory (python -c puts it on sys.path).
ENVIRONMENT = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONNOUSERSITE": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


class WorkerLost(BaseException):
    """The worker timed out or died; the property stops here. BaseException: Hypothesis must not catch it."""

    def __init__(self, error: StudentError, call: str = ""):
        super().__init__(error.message)
        self.error, self.call = error, call


class JudgeError(BaseException):
    """The judge itself could not do its job (no sandbox): never charged to a student. A BaseException, so that
    neither Hypothesis nor run_property mistakes it for the student's failure."""


# -------------------------------------------------------------------------------------------------- zygote
class ZygoteClient:
    """The grading process's end of a zygote (sandbox.ZygoteServer): a warm process (torch imported) that forks
    workers on request; one per grading process."""

    def __init__(self, log_path: Path | None = None):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        log = open(log_path, "ab") if log_path else subprocess.DEVNULL
        # -c, not -m: run as __main__, sandbox.py's classes would not be the ones the wire allowlist names.
        cmd = [
            sys.executable,
            "-c",
            "from autograder.judge.sandbox import main; main()",
            str(theirs.fileno()),
        ]
        self.proc = subprocess.Popen(
            cmd,
            pass_fds=[theirs.fileno()],
            cwd=str(KIT),
            env=ENVIRONMENT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
        if log is not subprocess.DEVNULL:
            log.close()
        theirs.close()
        self.ctrl = ours
        info = self._recv(120)
        self.vm_bytes, self.euid = info["vm_bytes"], info["euid"]
        self.isolation_problem = info["isolation"]  # '' when namespaces work
        self.mode = info.get("mode")  # "root", "user" (unprivileged user namespace) or None

    def _recv(self, timeout: float) -> dict:
        self.ctrl.settimeout(timeout)
        msg = self.ctrl.recv(1 << 16)
        if not msg:
            raise EOFError("the zygote is gone")
        return wire.loads(msg)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def configure(self, cfg: dict) -> None:
        """The fixed set-up of every worker of this slot (see sandbox.setup_worker)."""
        self.ctrl.send(wire.dumps({"op": "configure", "cfg": cfg}))
        self._recv(30)

    def take(self) -> tuple[int, socket.socket]:
        """The spare worker, already forked and set up: (pid, socket)."""
        self.ctrl.send(wire.dumps({"op": "take"}))
        self.ctrl.settimeout(60)
        msg, fds, _flags, _address = socket.recv_fds(self.ctrl, 1 << 16, 1)
        if not msg or not fds:
            raise EOFError("the zygote is gone")
        return wire.loads(msg)["pid"], socket.socket(fileno=fds[0])

    def kill(self, pid: int) -> None:
        """Kill a worker; no answer awaited (the zygote handles messages in order, and reaps it while we go on)."""
        self.ctrl.send(wire.dumps({"op": "kill", "pid": pid}))

    def status(self, pid: int, grace: float) -> tuple[int | None, bool]:
        """(wait status or None if unknown, killed by us): waits `grace` seconds for the worker to end."""
        self.ctrl.send(wire.dumps({"op": "status", "pid": pid, "grace": grace}))
        r = self._recv(grace + 30)
        return r["status"], r["killed"]

    def close(self) -> None:
        try:
            self.ctrl.close()
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# -------------------------------------------------------------------------------------------- descriptions
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


# How a worker died, by signal: "{where}" ends the sentence ("in attention.softmax").
SIGNALS = {
    signal.SIGSEGV: N_("segmentation fault {where}"),
    signal.SIGBUS: N_("bus error {where}"),
    signal.SIGFPE: N_("floating-point exception {where}"),
    signal.SIGILL: N_("illegal instruction {where}"),
    signal.SIGABRT: N_("the process aborted {where}"),
    signal.SIGKILL: N_("the process was killed {where}"),
    signal.SIGXCPU: N_("CPU time limit exceeded {where}"),
    signal.SIGTERM: N_("the process was terminated {where}"),
}


def death_message(status: int | None, where: str) -> str:
    if status is None:
        return _("the process ended {where}").format(where=where)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig in SIGNALS:
            return _(SIGNALS[sig]).format(where=where)
        return _("the process was killed by signal {signal} {where}").format(
            signal=signal.Signals(sig).name, where=where
        )
    return _("the process exited (status {status}) {where}").format(
        status=os.WEXITSTATUS(status), where=where
    )


# ----------------------------------------------------------------------------- the student's code, in a worker
@dataclass
class WorkerStats:
    forks: int = 0
    start_s: float = 0.0  # fork request until the worker is ready (limits, mounts, uid drop)
    load_s: float = 0.0  # first import of each module
    teardown_s: float = 0.0  # collecting prints, kill, reap
    ops: int = 0
    log: list[str] = field(default_factory=list)


class SandboxedStudentCode(StudentCode):
    """Operations go to a sandboxed worker; `sources` are the files the judge put in its package folder."""

    def __init__(
        self,
        zygote_factory,
        sources: dict[str, str | None],
        limits: Limits,
        deadline: float,
        label: str,
        preload: list | None = None,
        syntax: dict | None = None,
    ):
        self.zygote_factory, self.zygote = zygote_factory, None
        # [(module, reference bytecode)]: run in each worker before student code
        self.preload = preload or []
        self.sources, self.limits, self.deadline, self.label = sources, limits, deadline, label
        # file name -> (line, message): the section's files that do not compile, as the judge says it
        self.syntax = syntax or {}
        self.pid, self.sock, self.imported = None, None, set()
        self.stats = WorkerStats()
        # Budgets count the worker's CPU time (the kernel's accounting, read from here: the student cannot
        # change it), scaled by this machine's speed; the wall clock is only a backstop WALL_FACTOR larger.
        self.speed = timing.speed()
        # the section's, in (scaled) CPU seconds
        self.budget = max(0.0, deadline - time.monotonic())
        self.cpu_used = 0.0  # scaled CPU seconds used by this section's workers so far
        self.wall_deadline = time.monotonic() + self.budget * self.speed * timing.WALL_FACTOR
        self.cpu_pid = (
            None  # the worker's pid as this process sees it (in its PID namespace it is 1)
        )
        # The worker's CPU seconds when its last operation ended: the next one starts from there (the worker
        # waits for it without using any; whatever its threads do meanwhile is charged), which spares a
        # /proc read per operation (~30 us of the kernel's time, ~1 % of a class's grading).
        self.cpu_mark = None

    # -- worker lifecycle
    def _start(self) -> None:
        t0 = time.perf_counter()
        for attempt in (
            1,
            2,
        ):  # a zygote that died (killed: possible only when not root) is started again
            self.zygote = self.zygote_factory()
            try:
                self.pid, self.sock = self.zygote.take()
                break
            except (OSError, EOFError) as e:
                self.zygote.proc.kill()
                self.zygote.proc.wait()
                if attempt == 2:
                    raise JudgeError(f"the zygote does not answer: {e}") from None
        try:
            hello = wire.recv(self.sock, time.monotonic() + 30)
        except (EOFError, TimeoutError, OSError, wire.WireError) as e:
            hello = {"setup_failed": f"{type(e).__name__}: {e}"}
        if not isinstance(hello, dict) or "setup_failed" in hello:
            self._teardown(collect=False)
            raise JudgeError(f"could not start a sandboxed worker: {hello.get('setup_failed')}")
        self.cpu_pid = hello.get("pid") or self.pid
        self.cpu_mark = None
        if self.preload:  # before any student code: the reference dependencies, from bytecode
            try:
                wire.send(self.sock, {"preload": self.preload})
                done = wire.recv(self.sock, time.monotonic() + 30)
            except (EOFError, TimeoutError, OSError, wire.WireError) as e:
                done = e
            if not isinstance(done, Reply):
                self._teardown(collect=False)
                raise JudgeError(f"could not preload the reference dependencies: {done}"[:300])
        self.stats.forks += 1
        self.stats.start_s += time.perf_counter() - t0
        self.imported = set()

    def _teardown(self, collect: bool = True) -> None:
        if self.pid is None:
            return
        t0 = time.perf_counter()
        if collect:
            try:
                wire.send(self.sock, Bye())
                reply = wire.recv(self.sock, time.monotonic() + 2)
                if isinstance(reply, Reply) and isinstance(reply.value, str) and reply.value:
                    self.stats.log.append(reply.value[:4000])
            except (EOFError, TimeoutError, OSError, wire.WireError):
                pass
        self.sock.close()
        try:
            self.zygote.kill(self.pid)  # the zygote reaps it while we go on
        except (OSError, EOFError):
            pass
        self.pid = self.sock = None
        self.stats.teardown_s += time.perf_counter() - t0

    def close(self) -> None:
        self._teardown()

    # Set when a worker was lost (timeout, crash, bad reply) or the time ran out: such a section's result is not
    # a function of its files alone, so the scheduler never reuses it for another student.
    abnormal = False

    def _lost(self, error: StudentError | None, op, grace: float) -> WorkerLost:
        """The worker is gone or must go: learn how it ended (killing it if need be)."""
        self.abnormal = True
        self.sock.close()
        try:
            status, _killed = self.zygote.status(self.pid, grace)
        except (
            OSError,
            EOFError,
        ):  # the zygote itself was killed (possible only when not running as root)
            status = None
        self.pid = self.sock = None
        if error is None:
            error = StudentError(
                "crashed", death_message(status, where_of(op)), where_of(op), "WorkerDied"
            )
        return WorkerLost(error, call_of(op))

    def budget_left(self) -> float:
        """Scaled CPU seconds left to this section (0 once the wall-clock backstop has passed)."""
        if time.monotonic() >= self.wall_deadline:
            return 0.0
        return self.budget - self.cpu_used

    def _receive(self, limit: float):
        """The worker's reply, or TimeoutError("cpu"/"wall") once it has used `limit` scaled CPU seconds on
        this operation, or waited WALL_FACTOR times as long. CPU time cannot grow faster than the wall clock
        for one thread, so we sleep until the earliest moment the limit could be reached, then look again."""
        cpu_limit = limit * self.speed
        wall_end = min(time.monotonic() + cpu_limit * timing.WALL_FACTOR, self.wall_deadline)
        start = self.cpu_mark
        if start is None:
            start = timing.cpu_seconds(self.cpu_pid) or 0.0
        used = 0.0
        try:
            while True:
                now = time.monotonic()
                if now >= wall_end:
                    raise TimeoutError("wall")
                ready, _w, _x = select.select(
                    [self.sock], [], [], min(cpu_limit - used, wall_end - now) + 0.002
                )
                if ready:
                    return wire.recv(self.sock, wall_end)
                cpu = timing.cpu_seconds(self.cpu_pid)
                used = (cpu - start) if cpu is not None else used
                if used >= cpu_limit:
                    raise TimeoutError("cpu")
        finally:
            cpu = timing.cpu_seconds(self.cpu_pid)
            self.cpu_mark = cpu
            self.cpu_used += ((cpu - start) if cpu is not None else used) / self.speed

    # -- operations
    def run(self, op):
        # answered from the files the judge wrote, never by the worker
        if isinstance(op, (Source, Modules)):
            return from_files(op, self.sources)
        if self.pid is None:
            self._start()
        component = component_of(op)
        if component and component not in self.imported:
            t0 = time.perf_counter()
            self.imported.add(component)
            try:
                self._roundtrip(Import(component))
            finally:
                self.stats.load_s += time.perf_counter() - t0
        return self._roundtrip(op)

    def _roundtrip(self, op):
        where = where_of(op)
        op_timeout = self.limits.op_timeout * call_limit_factor(component_of(op))  # its long call
        limit = min(op_timeout, self.budget_left())
        if limit <= 0:
            self.abnormal = True
            raise WorkerLost(
                StudentError(
                    "timeout",
                    _(
                        "not run: the time limit of {section} was used up before the call {where}"
                    ).format(section=self.label, where=where),
                    where,
                    "Timeout",
                ),
                call_of(op),
            )
        self.stats.ops += 1
        try:
            wire.send(self.sock, op)
            reply = self._receive(limit)
        except TimeoutError as e:
            if limit < op_timeout:
                msg = _("timed out {where}: the time limit of {section} ran out").format(
                    where=where, section=self.label
                )
            else:
                msg = timing.timeout_message(limit, where, component_of(op), wall=str(e) == "wall")
            raise self._lost(StudentError("timeout", msg, where, "Timeout"), op, 0) from None
        except (EOFError, OSError):
            raise self._lost(None, op, 2.0) from None
        except wire.WireError as e:
            error = StudentError(
                "crashed",
                _("the worker sent back something that is not data {where} ({error})").format(
                    where=where, error=e
                )[:300],
                where,
                "BadReply",
            )
            raise self._lost(error, op, 0) from None
        if isinstance(reply, StudentError):
            raise _tidy(reply, where, op, self.sources, self.syntax)
        problem = _malformed(reply)
        if problem:
            raise self._lost(
                StudentError(
                    "crashed",
                    _("the worker sent back {problem} {where}").format(
                        problem=problem, where=where
                    ),
                    where,
                    "BadReply",
                ),
                op,
                0,
            )
        return reply


class WithoutItsFile(StudentCode):
    """The code of a section whose own file the student did not submit, answered without a worker.

    Every operation fails as the import of the file would in a worker. A property's first failing operation
    is its verdict (core ends a property at an input-independent error), and every property of a component
    reaches that file (the untouched stubs score zero), so the outcomes equal a worker's, 0.1 s sooner a
    section; tests/test_judge.py runs both ways on every component."""

    abnormal = False

    def __init__(self, component: str, sources: dict[str, str | None]):
        self.component, self.sources, self.stats = component, sources, WorkerStats()

    def run(self, op):
        # as in a worker's section: answered from the files the judge wrote
        if isinstance(op, (Source, Modules)):
            return from_files(op, self.sources)
        raise missing_file(f"{self.component}.py", f"{IMPORT_OF}{self.component}.py")

    def close(self) -> None:
        pass


def _malformed(reply) -> str:
    """'' for a Reply whose fields have the types the properties expect; else what is wrong (a forged frame)."""
    if type(reply) is not Reply:
        return _("a {type}, not a reply").format(type=type(reply).__name__[:40])
    fields = {
        "attrs": dict,
        "attrs_require_grad": dict,
        "grad_enabled_seen": tuple,
        "training_seen": tuple,
        "input_grads": (list, type(None)),
        "param_grads": (dict, type(None)),
    }
    for name, kinds in fields.items():
        if not isinstance(getattr(reply, name, None), kinds):
            kind = kinds.__name__ if isinstance(kinds, type) else kinds[0].__name__
            return _("a reply whose {field} is not a {type}").format(field=name, type=kind)
    return ""


# Kinds a worker may claim; a timeout or a crash is the judge's to say.
WORKER_KINDS = ERROR_KINDS - {"timeout", "crashed"}


def _tidy(
    e: StudentError,
    where: str,
    op=None,
    sources: dict | None = None,
    syntax: dict | None = None,
) -> StudentError:
    """A worker's error, rebuilt from plain bounded text (StudentError checks each field's type and cuts it: a
    forged frame may carry anything there); name sys.exit as the exit it is. The kit's own kinds (a missing
    file, a syntax error, a stub) are claims, checked against what the judge knows (the section's files, its
    own compile of them, the operation) and their messages written here; a claim that does not hold (a
    student raising the kit's StudentError of kind "missing") is the student's exception it is."""
    fields = e.__dict__
    e = StudentError(*(fields.get(n) for n in ("kind", "message", "where", "exc_type", "detail")))
    if e.exc_type == "SystemExit":
        if e.where.startswith(
            IMPORT_OF
        ):  # the worker's own text: data in a placeholder, never a message
            where = during_import(e.where.removeprefix(IMPORT_OF))
        return StudentError(
            "crashed",
            _("the process exited (sys.exit) {where}").format(where=where),
            e.where,
            "SystemExit",
            e.detail,
        )
    if e.kind in KIT_KINDS and op is not None:
        return _kit_error(e, op, sources or {}, syntax or {}) or _demoted(e, op)
    kind = e.kind if e.kind in WORKER_KINDS else "exception"
    return StudentError(kind, e.message, e.where, e.exc_type, e.detail)


# The kinds whose messages the judge writes: they end a property at once (missing, syntax) or name the kit's
# own verdict (a stub). "forbidden" keeps the guard's words (an operator's name), bounded like any text.
KIT_KINDS = frozenset({"missing", "syntax", "not_implemented"})


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


def _slots(template: str, message: str) -> dict | None:
    """The values of a template's {placeholders} in a message made from it, or None if it was not."""
    parts = re.split(r"\{(\w+)\}", template)
    pattern = "".join(re.escape(x) if i % 2 == 0 else f"(?P<{x}>.*?)" for i, x in enumerate(parts))
    m = re.fullmatch(pattern, message, re.S)
    return m.groupdict() if m else None


def _kit_error(e: StudentError, op, sources: dict, syntax: dict) -> StudentError | None:
    """The kit's error the worker claims, as the judge writes it; None if the claim does not hold."""
    wheres = executor_wheres(op)
    where = e.where if e.where in wheres else wheres[0]
    if e.kind == "missing":
        slots = _slots(_("{file} is missing from the submission (needed by {where})"), e.message)
        file = (slots or {}).get("file", "")
        module = file.removesuffix(".py")
        if file.endswith(".py") and module.isidentifier() and len(module) <= 64:
            if module not in sources:
                return missing_file(file, where)
        return None
    if e.kind == "syntax":
        if not syntax:
            return None
        slots = _slots(_("SyntaxError in {file}, line {line}: {error}"), e.message) or {}
        named = slots.get("file", "")
        own = f"{component_of(op)}.py"
        file = named if named in syntax else own if own in syntax else sorted(syntax)[0]
        if not syntax[
            file
        ]:  # a file too large for the judge to compile: the worker's words, bounded
            return StudentError("syntax", e.message[:300], where, "SyntaxError")
        line, msg = syntax[file]
        message = _("SyntaxError in {file}, line {line}: {error}").format(
            file=file, line=line, error=msg
        )
        return StudentError("syntax", message, where, "SyntaxError")
    if e.kind == "not_implemented":
        message = _("{where} is not implemented yet (raises NotImplementedError)").format(
            where=where_text(where)
        )
        # No traceback: it ends at `raise NotImplementedError` and would carry the student's text unbudgeted.
        return StudentError("not_implemented", message, where, "NotImplementedError")
    return None


def _demoted(e: StudentError, op) -> StudentError:
    """A kit kind the judge did not confirm: the student's own exception, worded as any other."""
    where = executor_wheres(op)[0]
    lines = e.message.strip().splitlines()
    text = lines[0][:300] if lines else ""
    error = e.exc_type or "StudentError"
    msg = (_("{error} in {where}: {text}") if text else _("{error} in {where}")).format(
        error=error, where=where_text(where), text=text
    )
    return StudentError("exception", msg, where, error, e.detail)
