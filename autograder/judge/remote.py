"""SandboxedStudentCode: the StudentCode whose operations run in a sandboxed worker process.

Properties run here, in the judge; only operations (build this, call that on these inputs) cross to the worker
and only plain data comes back. A worker that hangs is killed at the operation's time limit; one that dies
(exit, segfault, kill) is reported with how and where; either way the property ends at once (WorkerLost is a
BaseException, so Hypothesis does not retry the dead worker while shrinking) and the next property gets a
fresh worker.
"""

from __future__ import annotations

import select
import time
from dataclasses import dataclass, field

from .. import timing
from ..components import call_limit_factor
from ..i18n import _
from ..student_code.interface import (
    IMPORT_OF,
    Modules,
    Reply,
    Source,
    StudentCode,
    StudentError,
    from_files,
    missing_file,
)
from . import wire
from .control import Preload, SetupFailed, WorkerReady
from .limits import Limits
from .operations import Bye, Import, call_of, component_of, where_of
from .replies import death_message, judged_error, malformed


class WorkerLost(BaseException):
    """The worker timed out or died; the property stops here. BaseException: Hypothesis must not catch it."""

    def __init__(self, error: StudentError, call: str = ""):
        super().__init__(error.message)
        self.error, self.call = error, call


class JudgeError(BaseException):
    """The judge itself could not do its job (no sandbox): never charged to a student. A BaseException, so that
    neither Hypothesis nor run_property mistakes it for the student's failure."""


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
            hello = SetupFailed(f"{type(e).__name__}: {e}")
        if not isinstance(hello, WorkerReady):
            self._teardown(collect=False)
            why = hello.reason if isinstance(hello, SetupFailed) else type(hello).__name__
            raise JudgeError(f"could not start a sandboxed worker: {why}")
        self.cpu_pid = hello.pid or self.pid
        self.cpu_mark = None
        if self.preload:  # before any student code: the reference dependencies, from bytecode
            try:
                wire.send(self.sock, Preload(self.preload))
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
            raise judged_error(reply, where, op, self.sources, self.syntax)
        problem = malformed(reply)
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
