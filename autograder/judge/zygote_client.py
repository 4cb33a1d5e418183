"""The grading process's end of its zygote (zygote.py): the process started with a fixed environment, and the
messages that configure it, take a worker, kill one and learn how it ended. Also the uids of a run's workers.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from .. import KIT
from . import wire
from .control import Configure, Kill, Status, Take, Taken, ZygoteReady

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


class ZygoteClient:
    """The grading process's end of a zygote (zygote.ZygoteServer): a warm process (torch imported) that forks
    workers on request; one per grading process."""

    def __init__(self, log_path: Path | None = None):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        log = open(log_path, "ab") if log_path else subprocess.DEVNULL
        # -c, not -m: the module keeps its own name (not __main__) in the zygote and in every worker it forks.
        cmd = [
            sys.executable,
            "-c",
            "from autograder.judge.zygote import main; main()",
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
        ready = self._recv(120)
        if not isinstance(ready, ZygoteReady):
            raise EOFError(f"the zygote said {type(ready).__name__}, not that it is ready")
        self.vm_bytes, self.euid = ready.vm_bytes, ready.euid
        self.isolation_problem = ready.isolation  # '' when namespaces work
        self.mode = ready.mode  # "root", "user" (unprivileged user namespace) or None

    def _recv(self, timeout: float):
        self.ctrl.settimeout(timeout)
        msg = self.ctrl.recv(1 << 16)
        if not msg:
            raise EOFError("the zygote is gone")
        return wire.loads(msg)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def configure(self, cfg: dict) -> None:
        """The fixed set-up of every worker of this slot (see sandbox.setup_worker)."""
        self.ctrl.send(wire.dumps(Configure(cfg)))
        self._recv(30)

    def take(self) -> tuple[int, socket.socket]:
        """The spare worker, already forked and set up: (pid, socket)."""
        self.ctrl.send(wire.dumps(Take()))
        self.ctrl.settimeout(60)
        msg, fds, _flags, _address = socket.recv_fds(self.ctrl, 1 << 16, 1)
        if not msg or not fds:
            raise EOFError("the zygote is gone")
        taken = wire.loads(msg)
        if not isinstance(taken, Taken):
            raise EOFError(f"the zygote answered {type(taken).__name__}, not a worker")
        return taken.pid, socket.socket(fileno=fds[0])

    def kill(self, pid: int) -> None:
        """Kill a worker; no answer awaited (the zygote handles messages in order, and reaps it while we go on)."""
        self.ctrl.send(wire.dumps(Kill(pid)))

    def status(self, pid: int, grace: float) -> tuple[int | None, bool]:
        """(wait status or None if unknown, killed by us): waits `grace` seconds for the worker to end."""
        self.ctrl.send(wire.dumps(Status(pid, grace)))
        ended = self._recv(grace + 30)
        return ended.status, ended.killed

    def close(self) -> None:
        try:
            self.ctrl.close()
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
