"""The self-check on the machine's cores: a run's components checked in forked workers (`check --jobs N`,
`pytest --jobs N`), the outcomes handed back in the suite's order, the same as one process gives.

The parent imports torch, Hypothesis, the kit and the property modules once, then forks `jobs` workers, which
inherit all of it (copy-on-write) and take one property at a time, each sending its outcome back as soon as it
has one. The parent hands the outcomes to its caller in the suite's order (SelfCheck.run), so the
blame, the pipeline, the table and the exit status are computed exactly as in one process.

Why the outcomes are the same as in one process:
- a property's examples come from its own seed (derandomized, the local-constants pool kept empty: suite/core.py),
  not from what ran before it in the process;
- the one state that crosses properties on purpose is the loops already seen (StopsAtLoops: a call that timed
  out once is not called again, and its later calls say so). A worker starts a property knowing the loops the
  parent had read by then, and says with each outcome which loops it knew and which it found. Where it knew
  fewer than the properties before it in the suite's order had found, its outcome may differ from one
  process's: that property runs again in the parent, which knows them all (a loop is answered at once there).
A worker that dies (a crash in the student's code, a kill) costs only the property it was running: that one is
`crashed`, saying how it ended, and the properties still to run go to a fresh worker.
"""

from __future__ import annotations

import os
import pickle
import selectors
import signal
import struct
import sys
import warnings
from collections import deque
from dataclasses import dataclass, field

from .i18n import _
from .suite import core

_SIZE = struct.Struct("<I")


def default_jobs() -> int:
    """The cores this process may use: a worker each."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def can_fork() -> bool:
    return hasattr(os, "fork")


@dataclass
class Done:
    """One property's outcome as a worker sends it (crosses a process: the Property, which holds its function,
    is found again by id in the parent's registry)."""

    pid: str
    status: str
    message: str
    hint: str
    example: str
    detail: str
    seconds: float
    knew: frozenset[str]  # the loops (call sites) the worker knew before this property
    found: dict[str, str] = field(
        default_factory=dict
    )  # loops found by this property: site -> where
    # the passes the worker applied (SelfCheck.outcome_as_run: it is made)
    passes: tuple[str, ...] = ()

    def outcome(self) -> core.Outcome:
        return core.Outcome(
            core.REGISTRY[self.pid],
            core.Status(self.status),
            self.message,
            self.hint,
            self.example,
            self.detail,
            self.seconds,
            passes=self.passes,
        )


@dataclass
class Worker:
    pid: int
    tasks: int  # the write end of its task pipe
    results: int  # the read end of its result pipe
    running: deque = field(default_factory=deque)  # property ids sent, not answered yet
    buffer: bytearray = field(default_factory=bytearray)


def _send(fd: int, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_SIZE.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _receive_task(fd: int):
    """The next task (property ids, the loops known) from the parent, or None at the end."""
    head = _read_exactly(fd, _SIZE.size)
    if head is None:
        return None
    return pickle.loads(_read_exactly(fd, _SIZE.unpack(head)[0]))


def _read_exactly(fd: int, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _serve(session, tasks: int, results: int) -> None:
    """A worker's life: run each task's properties in order, send each outcome, until the parent says stop."""
    from .student_code.interface import StudentError

    looped = session.student.looped
    while (task := _receive_task(tasks)) is not None:
        ids, known = task
        looped.clear()
        looped.update({site: StudentError("timeout", "", where) for site, where in known.items()})
        for pid in ids:
            knew = frozenset(looped)
            o = session.outcome_as_run(core.REGISTRY[pid])
            found = {site: e.where for site, e in looped.items() if site not in knew}
            fields = (o.message, o.hint, o.example, o.detail, o.seconds)
            _send(results, Done(pid, str(o.status), *fields, knew, found, o.passes))


def _start(session, others) -> Worker:
    """Fork a worker. The parent may hold threads (rich's progress bar): the child touches none of their locks
    (its own stdout and stderr objects on the same files) and ends with os._exit, never the parent's cleanup."""
    task_r, task_w = os.pipe()
    result_r, result_w = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with a thread: handled as above
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's coverage is its outcomes
        status = 1
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the parent ends its workers
            os.close(task_w)
            os.close(result_r)
            for fd in others:
                os.close(fd)
            sys.stdout = open(os.dup(1), "w", buffering=1, closefd=True)
            sys.stderr = open(os.dup(2), "w", buffering=1, closefd=True)
            _serve(session, task_r, result_w)
            status = 0
        finally:
            os._exit(status)
    os.close(task_r)
    os.close(result_w)
    return Worker(pid, task_w, result_r)


class Jobs:
    """The workers of one run and the outcomes they sent, read in the suite's order by `outcome`."""

    def __init__(self, session, jobs: int):
        self.session, self.jobs = session, jobs
        self.queue: deque[list[str]] = deque()  # tasks not sent: property ids (one each)
        self.done: dict[str, Done | core.Outcome] = {}
        self.expected: set[str] = set()
        self.workers: dict[int, Worker] = {}  # by result fd
        self.cpu: list[
            float
        ] = []  # CPU seconds of each worker reaped (benchmarks/bench_check.py reads them)
        self.selector = selectors.DefaultSelector()

    def submit(self, properties) -> None:
        """Queue these properties (not queued or run yet), one task each: the slow ones (training's copy task,
        the longest) first, then in the suite's order. Workers take the next task as they finish one, so they
        end within about one property of each other; whole components as tasks left one worker alone with the
        last ones for a third of the run."""
        fresh = [
            p for p in properties if p.id not in self.expected and p.id not in self.session.raw
        ]
        fresh.sort(key=lambda p: not p.slow)  # stable: the suite's order otherwise
        self.expected.update(p.id for p in fresh)
        self.queue.extend([p.id] for p in fresh)
        self._dispatch()

    def covers(self, p: core.Property) -> bool:
        return p.id in self.expected

    def outcome(self, p: core.Property) -> core.Outcome:
        """p's outcome, waiting for its worker; run in this process where the worker knew fewer loops than
        the properties before it had found."""
        while p.id not in self.done:
            self._wait()
        self.expected.discard(p.id)
        got = self.done.pop(p.id)
        if isinstance(got, core.Outcome):  # crashed: made here
            return got
        looped = self.session.student.looped
        if got.knew != frozenset(looped):
            return self.session.outcome_as_run(p)
        from .student_code.interface import StudentError

        looped.update(
            {site: StudentError("timeout", "", where) for site, where in got.found.items()}
        )
        return got.outcome()

    # -- the workers
    def _dispatch(self) -> None:
        idle = [w for w in self.workers.values() if not w.running]
        while self.queue and (idle or len(self.workers) < self.jobs):
            worker = idle.pop() if idle else self._fork()
            ids = self.queue.popleft()
            known = {site: e.where for site, e in self.session.student.looped.items()}
            try:
                _send(worker.tasks, (ids, known))
            except BrokenPipeError:
                # it ended between two tasks (a thread of the student's code): the task goes to another
                self.queue.appendleft(ids)
                self._close(worker)
                self._reap(worker.pid)
                continue
            worker.running.extend(ids)

    def _fork(self) -> Worker:
        others = [fd for w in self.workers.values() for fd in (w.tasks, w.results)]
        worker = _start(self.session, others)
        self.workers[worker.results] = worker
        self.selector.register(worker.results, selectors.EVENT_READ)
        return worker

    def _wait(self) -> None:
        if not self.workers:
            raise RuntimeError("an outcome expected from no worker")  # a defect of this module
        for key, _events in self.selector.select():
            worker = self.workers[key.fd]
            chunk = os.read(key.fd, 1 << 16)
            if not chunk:
                self._lost(worker)
                continue
            worker.buffer += chunk
            while len(worker.buffer) >= _SIZE.size:
                n = _SIZE.unpack_from(worker.buffer)[0]
                if len(worker.buffer) < _SIZE.size + n:
                    break
                done = pickle.loads(bytes(worker.buffer[_SIZE.size : _SIZE.size + n]))
                del worker.buffer[: _SIZE.size + n]
                self.done[worker.running.popleft()] = done
        self._dispatch()

    def _lost(self, worker: Worker) -> None:
        """A worker ended before its task did: the property it was running crashed, the rest go to another."""
        self._close(worker)
        status = self._reap(worker.pid)
        if not worker.running:
            return
        pid = worker.running.popleft()
        self.done[pid] = self.session.made(
            core.Outcome(core.REGISTRY[pid], core.Status.CRASHED, crash_message(status))
        )
        if worker.running:
            self.queue.appendleft(list(worker.running))

    def _close(self, worker: Worker) -> None:
        self.selector.unregister(worker.results)
        del self.workers[worker.results]
        for fd in (worker.tasks, worker.results):
            os.close(fd)

    def close(self) -> None:
        """End every worker (at the end of the run, or on Ctrl-C) and reap it."""
        for worker in list(self.workers.values()):
            if worker.running:
                os.kill(worker.pid, signal.SIGKILL)
            self._close(worker)  # an idle worker reads the end of its task pipe and exits
            self._reap(worker.pid)
        self.selector.close()

    def _reap(self, pid: int) -> int:
        """Wait for the worker's end: its status, its CPU time noted."""
        _pid, status, usage = os.wait4(pid, 0)
        self.cpu.append(usage.ru_utime + usage.ru_stime)
        return status


def crash_message(status: int) -> str:
    """What a student reads where the worker running a property died (os.waitpid's status)."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:  # a real-time signal has no name
            name = str(sig)
        return _(
            "the check stopped while running this property: its process was killed by {signal}"
        ).format(signal=name)
    return _(
        "the check stopped while running this property: its process exited (status {status})"
    ).format(status=os.WEXITSTATUS(status))
