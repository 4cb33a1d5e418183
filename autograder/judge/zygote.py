"""The zygote: a warm interpreter that forks the workers (worker.py) for one grading process.

The zygote is a fresh interpreter that imports torch, numpy and autograder.student_code once, pins torch to one
thread (no OpenMP pool to break fork, and the same float reductions in every worker), and then only forks:
a worker costs a fork (milliseconds), not an import of torch (a second and a half). It never imports a
property, a mistake model or a hidden test, so nothing of the sort can be found in a worker's memory.

The zygote is exec'd with an empty environment plus a fixed allowlist (ENVIRONMENT in zygote_client.py), so no
worker can find the instructor's variables in os.environ, posix.environ or /proc/self/environ. The grading
process's end of it is zygote_client.ZygoteClient.
"""

from __future__ import annotations

import gc
import os
import signal
import socket
import sys
import time

import numpy as np  # noqa: F401 - imported once here so that workers inherit it
import torch
import torch.nn
import torch.nn.functional

from .. import i18n, rules
from . import warm_up as warm_up_workers
from . import wire
from .control import Configure, Configured, Ended, Kill, Status, Take, Taken, ZygoteReady
from .sandbox import PR_SET_CHILD_SUBREAPER, fork_into_new_pid_namespace, prctl, probe_isolation
from .worker import worker


def warm_up() -> None:
    """Pay every lazy initialisation once, here, instead of in each worker."""
    torch.set_num_threads(1)
    x = torch.randn(2, 3, 4, dtype=torch.float64)
    with rules.guard("attention"):
        (x @ x.transpose(-2, -1)).exp().sum(-1)
        torch.nn.Linear(4, 4)(x.float()).relu()
    torch.manual_seed(0)
    # The components' preloads, then the paths every worker runs (the executor, the wire, torch's layers,
    # autograd, Adam): see warm_up.py.
    warm_up_workers.run()


class ZygoteServer:
    """Serves one grader. It keeps one worker forked and set up ahead of time (the spare), so that taking a
    worker costs the grader a message, not a fork; consecutive workers alternate between two uids, so a
    running worker cannot signal the spare that will grade the next section."""

    def __init__(self, ctrl: socket.socket):
        self.ctrl, self.cfg, self.spare, self.count = ctrl, None, None, 0
        self.exited: dict[int, int] = {}  # pid -> wait status, the most recent few hundred
        self.dying: set[int] = set()  # killed by us, not yet reaped
        # this process's own PID namespace, to come back to after forking a worker into a new one (as root)
        self.own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)

    def _record(self, pid: int, st: int) -> None:
        self.exited[pid] = st
        self.dying.discard(pid)
        while len(self.exited) > 256:
            del self.exited[next(iter(self.exited))]

    def reap_all(self) -> None:
        """Collect exit statuses without waiting (orphans of workers come here too: we are their subreaper)."""
        while True:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self._record(pid, st)

    def wait_for(self, pid: int, block: bool) -> bool:
        """True once `pid` has ended (its status is in self.exited, unless it was never ours)."""
        if pid in self.exited:
            return True
        try:
            got, st = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            self.dying.discard(pid)
            return True
        if got == 0:
            return False
        self._record(got, st)
        return True

    def fork_spare(self) -> None:
        for pid in list(self.dying):  # the last worker under the uid we are about to reuse is gone
            self.wait_for(pid, block=True)
        self.reap_all()
        cfg = dict(self.cfg)
        if cfg["uids"]:
            cfg["uid"] = cfg["uids"][self.count % len(cfg["uids"])]
        self.count += 1
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        if cfg.get("pidns") == "root":
            pid = fork_into_new_pid_namespace(self.own_pidns)
        else:
            pid = os.fork()
        if pid == 0:
            self.ctrl.close()
            ours.close()
            self.cfg = None  # the worker's own copy (cfg) is cleared once it is set up
            worker(cfg, theirs)
        theirs.close()
        self.spare = (pid, ours)

    def kill(self, pid: int) -> None:
        for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
            try:
                kill()
            except (ProcessLookupError, PermissionError):
                pass
        if pid not in self.exited:
            self.dying.add(pid)

    def status(self, pid: int, grace: float) -> tuple[int | None, bool]:
        """How a worker ended: wait up to `grace` seconds for it, then kill it."""
        deadline, killed = time.monotonic() + grace, False
        while not self.wait_for(pid, block=False):
            if time.monotonic() >= deadline:
                self.kill(pid)
                killed = True
                self.wait_for(pid, block=True)
                break
            time.sleep(0.0005)
        self.kill(pid)  # whatever is left of its process group
        self.dying.discard(pid)
        return self.exited.pop(pid, None), killed

    def serve(self) -> None:
        while True:
            try:
                msg = self.ctrl.recv(1 << 16)
            except OSError:
                return
            if not msg:  # the grader hung up: take our workers down before we go
                if self.spare:
                    self.kill(self.spare[0])
                for pid in list(self.dying):
                    self.wait_for(pid, block=True)
                return
            req = wire.loads(msg)
            msg = None  # a worker forked below must find no frame of the host's configuration
            if isinstance(req, Configure):
                self.cfg = req.cfg
                # The run's language, with its catalog read now: a worker's mounts hide the kit's folder,
                # and its environment is an allowlist. The choice is a name from i18n.LANGUAGES, not a path.
                lang = self.cfg.get("lang")
                i18n.set_language(lang if lang in i18n.LANGUAGES else None)
                i18n.translation(i18n.current_language())
                # Nothing of the kit's own folder on the path, here once rather than in each worker (where
                # it is hidden anyway): the worker's configuration need not name it.
                unpath = set(self.cfg.pop("unpath", ()))
                sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) not in unpath]
                req = unpath = None
                self.ctrl.send(wire.dumps(Configured()))
                self.fork_spare()
            elif isinstance(req, Take):
                req = None
                pid, sock = self.spare
                socket.send_fds(self.ctrl, [wire.dumps(Taken(pid))], [sock.fileno()])
                sock.close()
                self.fork_spare()  # after answering: the grader does not wait for this
            elif isinstance(req, Kill):  # no answer: the grader goes on at once
                self.kill(req.pid)
            elif isinstance(req, Status):
                st, killed = self.status(req.pid, req.grace)
                self.ctrl.send(wire.dumps(Ended(st, killed)))


def _vm_kb() -> int:
    with open("/proc/self/status") as f:
        return int(f.read().split("VmSize:")[1].split()[0])


def zygote(ctrl: socket.socket) -> None:
    warm_up()
    prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphans of a worker come back here to be reaped
    # (no local of this frame, which every worker's stack holds, keeps the host's pids)
    vm_kb = _vm_kb()
    mode, problem = probe_isolation()
    # Everything imported so far leaves the collector's generations: a worker's first full collection would
    # otherwise walk torch's ~250 000 objects and copy every page they sit on (a tenth of a worker's CPU time).
    gc.collect()
    gc.freeze()
    ctrl.send(wire.dumps(ZygoteReady(vm_kb * 1024, os.geteuid(), problem, mode)))
    ZygoteServer(ctrl).serve()


def main() -> None:
    ctrl = socket.socket(fileno=int(sys.argv[1]))
    try:
        zygote(ctrl)
    finally:
        os._exit(0)
