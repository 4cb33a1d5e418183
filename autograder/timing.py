"""Time limits that depend neither on the machine's load nor on its speed.

The rule (the same in `check`, pytest, the notebooks and the judge):
  - a limit is written in seconds (`--timeout`, 10 by default) and counts the CPU time of the code under test,
    never the wall clock: a loaded machine gives a process less of the CPU, not more work to do;
  - it is scaled by this machine's speed: `speed()` = CPU time of a fixed checking-side workload here (the
    positional table and a Python loop, the two kinds of work a student's code does) / its CPU time on the
    machine the kit was tuned on (NOMINAL_S), measured once per process, best of 3, clamped to [0.25, 8],
    and only once a call has used the least its limit can be (seconds × 0.25): working code never pays for it;
  - a wall-clock backstop remains, WALL_FACTOR times larger, for code that waits instead of computing
    (sleep, a blocked read).
So a call that takes 1.2 s of CPU here against a 3 s limit passes on a machine twice as slow, loaded or not.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
import time

from .components import get
from .i18n import _

DEFAULT_TIMEOUT = (
    10.0  # CPU seconds per call into student code: the judge's --timeout and the self-check's
)
NOMINAL_S = 0.065  # CPU seconds of _workload() on the kit's 2-core development machine (best of 5)
WALL_FACTOR = 3.0
# CPU seconds until a limit fires again after its CallTimedOut was swallowed, or when it expired in held()
RETRY_S = 0.01
# CPU seconds (x speed()) past its limit that held() code may run before the limit fires there anyway: the
# kit's bookkeeping takes milliseconds; a bound all the same, should held code ever run on
HELD_GRACE_S = 1.0
CALIBRATION_RUNS = 3
# speed()'s clamp: a machine 4x faster or 8x slower than the development machine is taken as that
SPEED_FLOOR, SPEED_CEILING = 0.25, 8.0
_speed: float | None = None


def _workload() -> int:
    import torch

    pos = torch.arange(5000, dtype=torch.float64)[:, None]
    freq = torch.exp(torch.arange(0, 64, 2, dtype=torch.float64) * (-math.log(10000.0) / 64))
    for _i in range(20):
        torch.sin(pos * freq) + torch.cos(pos * freq)
    total = 0
    for i in range(300_000):
        total += i * i % 7
    return total


def speed() -> float:
    """How much slower than the development machine this one is (2.0: twice as slow), measured once."""
    global _speed
    if _speed is None:
        best = math.inf
        # Best of 3: the first run is the slow one (~1.5x, warming caches), the next two agree within 5 %
        # (best of 5 cost every fresh `check` 0.15-0.4 s of CPU, up to a quarter of a component's check).
        for _i in range(CALIBRATION_RUNS):
            t0 = time.thread_time()
            _workload()
            best = min(best, time.thread_time() - t0)
        _speed = min(SPEED_CEILING, max(SPEED_FLOOR, best / NOMINAL_S))
    return _speed


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) of process `pid` so far, from the kernel's accounting; None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# True while bookkeeping that must run whole is under way (held()): a limit that expires then fires RETRY_S later.
_held = [False]


class held:
    """The block runs whole under a cpu_limit: a limit that expires inside fires RETRY_S of CPU later, where
    the code under test runs again (`interruptible()` inside it) or not at all (the limited block has ended);
    only HELD_GRACE_S past the limit does it fire in the block.
    For the kit's own bookkeeping around a call: a CallTimedOut raised there (between the by-hand guard's
    setting and its restoring, say) would leave it set for every later call of the process. A class, not a
    generator: it is entered three times per call into student code (the call, its context, the code)."""

    __slots__ = ("saved", "value")

    def __init__(self, value: bool = True):
        self.value = value

    def __enter__(self):
        self.saved = _held[0]
        _held[0] = self.value

    def __exit__(self, *exc):
        _held[0] = self.saved


def interruptible() -> held:
    """Inside held(): the code under test, where a limit may fire."""
    return held(False)


class CallTimedOut(BaseException):
    """Raised inside code under test when its call has used its CPU time. A BaseException, so that the student's
    `except Exception` does not swallow it."""


@contextlib.contextmanager
def cpu_limit(seconds: float | None):
    """In-process limit (the self-check): CallTimedOut once this process has used `seconds` × speed() of CPU
    time in the block (speed() measured only once a call has used `seconds` × SPEED_FLOOR). Only in the main
    thread and where there are CPU timers (not on Windows); elsewhere the block runs unlimited."""
    if (
        not seconds
        or not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return

    # The kernel's ITIMER_PROF counts ticks: a process that is running at a tick is charged the whole tick, so
    # under load it can fire well before the process has used its time (a 0.2 s limit fired at 0.146 s of
    # process_time in CI, stop 50). The precise clock decides: the judge's limit reads the same one (/proc).
    budget = [seconds * (_speed if _speed is not None else SPEED_FLOOR)]
    start = time.process_time()

    def expired(signum, frame):
        left = budget[0] - (time.process_time() - start)
        if left > 0:  # the tick-sampled timer ran ahead of the process's CPU time
            signal.setitimer(signal.ITIMER_PROF, left)
            return
        # Armed at the least the limit can be, the machine's speed is measured only by a call that has used
        # that much (never on working code): the calibration cost every fresh `check` 0.15-0.2 s of CPU. Its
        # own CPU time is added to the budget, so it is not charged to the call.
        if _speed is None:
            measuring = time.process_time()
            rest = seconds * (speed() - SPEED_FLOOR)
            if rest > 0:
                budget[0] += rest + time.process_time() - measuring
                signal.setitimer(signal.ITIMER_PROF, rest)
                return
        if _held[0] and -left < HELD_GRACE_S * (_speed or 1.0):
            signal.setitimer(signal.ITIMER_PROF, RETRY_S)
            return
        raise CallTimedOut

    def ignored(unraisable):
        # CallTimedOut raised where Python ignores exceptions (a finaliser, a gc callback: Hypothesis keeps one
        # while a test runs, and a call that allocates runs it often) never reaches the call: it is reported
        # here instead, and the call would run on unlimited. So the timer fires again, RETRY_S later.
        if isinstance(unraisable.exc_value, CallTimedOut):
            signal.setitimer(signal.ITIMER_PROF, RETRY_S)
        else:
            previous_hook(unraisable)

    previous = signal.signal(signal.SIGPROF, expired)
    previous_hook, sys.unraisablehook = sys.unraisablehook, ignored
    signal.setitimer(signal.ITIMER_PROF, budget[0])
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        sys.unraisablehook = previous_hook
        signal.signal(signal.SIGPROF, previous)


def timeout_message(seconds: float, where: str, component: str, wall: bool = False) -> str:
    """'timed out after 3 s in attention.softmax' (where = 'in attention.softmax'), with the reason."""
    why = _("it waited without finishing (the wall-clock limit)") if wall else _("CPU time")
    hint = get(component).slow_hint if component else ""  # "": an operation of no component
    if hint:
        return _("timed out after {seconds} s {where} ({why}): {hint}").format(
            seconds=f"{seconds:g}", where=where, why=why, hint=_(hint)
        )
    return _("timed out after {seconds} s {where} ({why})").format(
        seconds=f"{seconds:g}", where=where, why=why
    )
