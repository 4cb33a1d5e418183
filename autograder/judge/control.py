"""The messages that start, configure and end workers: the zygote's control channel (grading process <-> zygote)
and a worker's first words, typed records end to end (issue 36), loaded by wire.loads through its allowlist.

The operations on a worker's code are operations.py's and student_code's; what a worker answers to them is a
Reply or a StudentError. What stays a mapping is the workers' configuration (`Configure.cfg`, built by
grading_process, read by sandbox.setup_worker): a worker empties it in place before any student code runs, so
that no frame it inherited from the zygote still holds the host's folders, and a record cannot be emptied so.
"""

from __future__ import annotations

from dataclasses import dataclass


# ---------------------------------------------------------------------------- the zygote's control channel
@dataclass(frozen=True)
class ZygoteReady:
    """The zygote's first message: its address-space size (the workers' memory limit adds to it), its effective
    uid, why namespaces do not work ('' when they do) and the isolation mode ("root", "user" or None)."""

    vm_bytes: int
    euid: int
    isolation: str
    mode: str | None


@dataclass(frozen=True)
class Configure:
    """The fixed set-up of every worker the zygote forks from now on (see sandbox.setup_worker)."""

    cfg: dict


@dataclass(frozen=True)
class Configured:
    """The zygote has read its configuration (and forked its spare worker)."""


@dataclass(frozen=True)
class Take:
    """Hand over the spare worker: answered by Taken, with the worker's socket passed beside it."""


@dataclass(frozen=True)
class Taken:
    pid: int


@dataclass(frozen=True)
class Kill:
    """Kill a worker; no answer (the zygote reaps it while the grading process goes on)."""

    pid: int


@dataclass(frozen=True)
class Status:
    """How a worker ended, waiting up to `grace` seconds: answered by Ended."""

    pid: int
    grace: float


@dataclass(frozen=True)
class Ended:
    """A worker's wait status (None if unknown) and whether the zygote killed it."""

    status: int | None
    killed: bool


# ------------------------------------------------------------------------------------- a worker's first words
@dataclass(frozen=True)
class WorkerReady:
    """Set up, before any student code: the worker's pid as the host sees it (its CPU time is read there)."""

    pid: int | None


@dataclass(frozen=True)
class SetupFailed:
    """The worker refused to run student code unprotected: why."""

    reason: str


@dataclass(frozen=True)
class Preload:
    """Run the reference dependencies, (module name, bytecode) in dependency order, before any student code."""

    modules: list


MESSAGES = (
    ZygoteReady,
    Configure,
    Configured,
    Take,
    Taken,
    Kill,
    Status,
    Ended,
    WorkerReady,
    SetupFailed,
    Preload,
)
