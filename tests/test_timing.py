"""The in-process time limit (autograder/timing.cpu_limit): the machine's speed is measured only by a call that has
used the least its limit can be, and such a call still gets its whole scaled limit.

Load-proof: the limit counts this process's CPU time (ITIMER_PROF), so the spin measures that same clock
(time.process_time), never the wall clock nor its own thread's time alone. Measured by the thread
(time.thread_time) the spin once read 0.169 s of a 0.2 s limit at a load average of 10: the timer counts every
thread of the process, and the spinning thread's own clock leaves the others out. The kernel's timer itself samples
the process's time at its ticks and ran ahead of it under load (a 0.2 s limit read 0.177 s in CI at stop 48, 0.146
s at stop 50): the limit's handler now reads the precise clock and re-arms for what is left, so it fires late by a
tick at most. The bounds lie between the right answer and the nearest wrong ones, not at the limit: 0.2 s scaled,
against 0.1 s (the limit not scaled by the machine's speed), 0.025 s (the floor alone) and 2.0 s (never fired)."""

import contextlib
import shutil
import signal
import sys
import time

import pytest
import torch

from autograder import KIT, timing
from autograder.student_code import InProcessStudentCode
from autograder.student_code.interface import Call, StudentError

# A 0.1 s limit on a machine taken as twice as slow fires at 0.2 s of CPU: the bounds lie midway to 0.1 s (the
# limit unscaled) and well under 2.0 s (never fired)
SCALED_LOW, SCALED_HIGH = 0.15, 0.5


@pytest.fixture
def measured(monkeypatch):
    """speed() as a counter: this machine taken as twice as slow as the development machine, at no cost."""
    calls = []

    def speed():
        calls.append(1)
        monkeypatch.setattr(timing, "_speed", 2.0)
        return 2.0

    monkeypatch.setattr(timing, "_speed", None)
    monkeypatch.setattr(timing, "speed", speed)
    return calls


def spin(seconds: float) -> float:
    """CPU seconds of this process used until CallTimedOut (or `seconds`, if it never comes): the clock the
    limit counts."""
    start = time.process_time()
    try:
        while time.process_time() - start < seconds:
            pass
    except timing.CallTimedOut:
        pass
    return time.process_time() - start


def burn(seconds: float) -> None:
    """`seconds` of CPU, unless a CallTimedOut stops it (never caught here, unlike spin)."""
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass


def test_working_code_never_measures_the_machine(measured):
    with timing.cpu_limit(1.0):
        sum(range(1000))
    assert measured == []
    assert timing._speed is None


def test_a_long_call_measures_once_and_gets_its_whole_scaled_limit(measured):
    with timing.cpu_limit(0.1):
        used = spin(2.0)
    # armed at 0.1 × 0.25 s, then 0.1 × (2.0 - 0.25) more: 0.2 s in all, never the floor's 0.025 s alone
    assert measured == [1]
    assert SCALED_LOW <= used < SCALED_HIGH, used
    with timing.cpu_limit(0.1):
        used = spin(2.0)
    assert measured == [1]  # known now: armed at once
    assert SCALED_LOW <= used < SCALED_HIGH, used


def test_a_timer_that_fires_before_the_process_has_used_its_time_does_not_stop_the_call(
    monkeypatch,
):
    """The kernel's timer is tick-sampled and can run ahead of the process's CPU time under load (CI, stop 50:
    a 0.2 s limit fired at 0.146 s). Played here by raising SIGPROF by hand, early: the call runs on to its
    whole limit on the precise clock."""
    monkeypatch.setattr(timing, "_speed", 1.0)
    with timing.cpu_limit(0.2):
        start = time.process_time()
        try:
            signal.raise_signal(signal.SIGPROF)  # 0.2 s early
            while time.process_time() - start < 0.05:
                pass
            signal.raise_signal(signal.SIGPROF)  # 0.15 s early
            while time.process_time() - start < 2.0:
                pass
        except timing.CallTimedOut:
            pass
        used = time.process_time() - start
    assert 0.2 <= used < 0.5, used


class SpinsWhenCollected:
    """CPU spent in a finaliser, where Python ignores whatever is raised (as in Hypothesis's gc callback, where
    CI once saw the limit fire)."""

    def __del__(self):
        start = time.process_time()
        while time.process_time() - start < 0.3:
            pass


def test_a_limit_that_fires_where_exceptions_are_ignored_fires_again(monkeypatch):
    monkeypatch.setattr(timing, "_speed", 1.0)
    with timing.cpu_limit(0.05):
        SpinsWhenCollected()  # the limit fires inside __del__: CallTimedOut is ignored there
        used = spin(2.0)  # ...and must still stop the call's own endless loop
    assert used < 0.5, used


def test_a_limit_that_expires_in_held_bookkeeping_fires_just_after_it(monkeypatch):
    monkeypatch.setattr(timing, "_speed", 1.0)
    with timing.cpu_limit(0.05):
        with timing.held():
            inside = spin(0.3)  # the kit's bookkeeping around a call: runs whole
            with timing.interruptible():
                student = spin(2.0)  # the code under test, inside it: stopped
        after = spin(0.5)  # past the bookkeeping: the limit, spent, fires no more
    assert inside >= 0.3 and student < 0.1 and after >= 0.5, (inside, student, after)
    with timing.cpu_limit(0.05):
        with timing.held():
            spin(0.3)
        after = spin(2.0)  # expired in the bookkeeping: fires RETRY_S after it
    assert after < 0.1, after
    with timing.cpu_limit(0.05):
        with timing.held():
            inside = spin(3.0)  # bookkeeping that runs on: stopped HELD_GRACE_S past the limit
    assert timing.HELD_GRACE_S <= inside < timing.HELD_GRACE_S + 0.5, inside


class SlowToRestore(contextlib.redirect_stdout):
    """contextlib.redirect_stdout whose restoring takes 0.2 s of CPU once the student's code has run (`ran`):
    the time limit expires on the way out of the call, and only there (the import's restoring is quick)."""

    ran = False

    def __exit__(self, *exc):
        start = time.process_time()
        while SlowToRestore.ran and time.process_time() - start < 0.2:
            pass
        SlowToRestore.ran = False
        return super().__exit__(*exc)


def test_a_limit_that_expires_while_a_call_is_unwound_leaves_nothing_set(tmp_path, monkeypatch):
    """The self-check's limit fires in the student's code only. Raised while the by-hand guard or the captured
    output was being restored (CI saw it once: a retried limit, 0.01 s after a swallowed one), it left them set
    for the process's later calls: every later property of the worker refused or silent."""
    folder = tmp_path / "sub"
    shutil.copytree(KIT / "solutions", folder, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(timing, "_speed", 1.0)
    code = InProcessStudentCode(folder, timeout=0.05)
    seen = []
    module = code.executor.module("attention")

    def softmax(x, dim=-1):
        seen.append(timing._held[0])
        SlowToRestore.ran = True
        return x

    monkeypatch.setattr(module, "softmax", softmax)
    real_guard = code.executor._guard

    @contextlib.contextmanager
    def recording_guard(component):
        seen.append(timing._held[0])
        with real_guard(component):
            yield
        seen.append(timing._held[0])

    code.executor._guard = recording_guard
    stdout = sys.stdout
    monkeypatch.setattr(contextlib, "redirect_stdout", SlowToRestore)
    code.run(Call("attention", "softmax", (torch.ones(3),)))
    # the guard set and restored held (the module's import, the call), the student's code not
    assert seen == [True, True, True, False, True]
    assert sys.stdout is stdout
    torch.softmax(torch.ones(3), dim=0)  # the guard is off: the checking side may call anything


def test_a_limit_that_expires_in_the_kits_bookkeeping_stops_only_the_students_code(
    tmp_path, monkeypatch
):
    """Spent by the kit's own work around a call, the limit lets a call whose code has ended return its reply,
    and stops one whose code runs on, as soon as it runs."""
    folder = tmp_path / "sub"
    shutil.copytree(KIT / "solutions", folder, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(timing, "_speed", 1.0)
    code = InProcessStudentCode(folder, timeout=0.05)
    run = code.executor.run
    monkeypatch.setattr(code.executor, "run", lambda op: (run(op), burn(0.2))[0])
    assert code.run(Call("attention", "softmax", (torch.ones(3),))).value is not None
    monkeypatch.setattr(code.executor, "run", lambda op: (burn(0.2), run(op))[1])

    def endless(x, dim=-1):
        burn(5.0)

    monkeypatch.setattr(code.executor.module("attention"), "softmax", endless)
    start = time.process_time()
    with pytest.raises(StudentError, match="timed out"):
        code.run(Call("attention", "softmax", (torch.ones(3),)))
    assert time.process_time() - start < 0.5


class SlowToDisable:
    """torch.enable_grad whose restoring takes 0.2 s of CPU: the time limit expires on the way out of a call
    with backward."""

    def __enter__(self):
        self.prev = torch.is_grad_enabled()
        torch.set_grad_enabled(True)

    def __exit__(self, *exc):
        burn(0.2)
        torch.set_grad_enabled(self.prev)


def test_grad_mode_is_restored_even_when_the_limit_expires_on_the_way_out(tmp_path, monkeypatch):
    folder = tmp_path / "sub"
    shutil.copytree(KIT / "solutions", folder, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(timing, "_speed", 1.0)
    code = InProcessStudentCode(folder, timeout=0.05)
    code.executor.module("attention")
    monkeypatch.setattr(torch, "enable_grad", SlowToDisable)
    with torch.no_grad():
        reply = code.run(Call("attention", "softmax", (torch.ones(3),), backward=True))
        assert not torch.is_grad_enabled()
    assert reply.input_grads[0] is not None
