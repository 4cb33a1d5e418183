"""The scheduler: a class's sections (sections.py), farmed out to grading processes (grading_process.py), every
output written from memory (outputs.py).

A section whose files are byte-identical to one already graded in this run (an untouched stub, a file copied
from the reference...) reuses its result, but only a result obtained normally (no timeout, no worker lost, no
time budget used up): each student's time budget is their own, spent only on sections graded for them, and no
message names another student.
"""

from __future__ import annotations

import os
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path

from rich.markup import escape

from .. import KIT, i18n, registry, results, timing
from ..components import NAMES
from ..i18n import _, ngettext
from ..lms.identity import ClassIndex, write_index
from ..suite import core
from .frames import read_trusted, write_trusted
from .limits import Limits
from .outputs import (
    StudentResult,
    assemble,
    gradebook_row,
    maxima,
    missing_row,
    read_gradebook,
    write_gradebook,
    write_student,
    write_timing,
)
from .reaper import Reaper
from .records import GradingConfig, OutcomeRecord, Ready, SectionResult
from .sections import Section, plan, read_files
from .shards import Shard, ShardRecord
from .wire import valid_text
from .zygote_client import MAX_JOBS, uid_block

GRADER_TRIES = 3  # a section on which grading processes keep dying is marked crashed (for its student) after this
STALL_S = 120  # a grading process silent this long past its section's time limit is stuck (a judge bug): killed


@dataclass
class Options:
    jobs: int = os.cpu_count() or 1
    limits: Limits = field(default_factory=Limits)
    include_hidden: bool = True
    hidden_visibility: str = results.HIDDEN_VISIBILITY
    only: list[str] | None = None
    cache: bool = True
    solutions: Path = KIT / "solutions"
    lang: str | None = (
        None  # what the students read; None: i18n's choice (TRANSFORMER_KIT_LANG, the locale...)
    )
    roster: Path | None = (
        None  # the LMS's gradebook export (lms/roster.py), joined in the class index
    )
    shard: Shard | None = (
        None  # grade only this shard's students (shards.py); None: the whole class
    )


def grade(
    submissions: Path, out: Path, options: Options | None = None, console=None
) -> dict[str, StudentResult]:
    """Grade every submission in `submissions` (a folder per student, or an LMS download: lms/ingest.py; or
    options.only) into `out`; return the results by the submission's source name (its folder's name, say:
    unique in a class). Each result's `id` names its files in `out` (OUT/<id>/, OUT/logs/<id>.txt)."""
    results_by = Scheduler(submissions, out, options or Options(), console).run()
    return {r.source or r.key: r for r in results_by.values()}


# ---------------------------------------------------------------------------------------- grading slots
class Slot:
    """One grading process (grading_process.py) and the section it is grading for a student."""

    def __init__(self, index: int, cfg: GradingConfig, tmp: Path):
        env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join([str(KIT), os.environ.get("PYTHONPATH", "")]),
            PYTHONHASHSEED="0",
            OMP_NUM_THREADS="1",
            MKL_NUM_THREADS="1",
        )
        self.index, self.section, self.student, self.started = index, None, "", 0.0
        self.log = open(tmp / f"grader-{index}.log", "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from autograder.judge.grading_process import main; main()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            cwd=str(KIT),
            env=env,
        )
        write_trusted(self.proc.stdin, replace(cfg, slot=index))

    def ready(self) -> Ready:
        try:
            return read_trusted(self.proc.stdout)
        except EOFError:
            self.log.flush()
            tail = Path(self.log.name).read_text(errors="replace")[-3000:]
            raise RuntimeError(f"grading process {self.index} failed to start:\n{tail}") from None

    def give(self, section: Section, budget_s: float, student: str) -> None:
        self.section, self.student, self.started = section, student, time.monotonic()
        write_trusted(self.proc.stdin, section.order(budget_s))

    def close(self) -> None:
        try:
            write_trusted(self.proc.stdin, None)
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            self.proc.kill()
            self.proc.wait()
        self.log.close()


# ------------------------------------------------------------------------------------------- the scheduler
class Scheduler:
    """One run over a class: every student's sections, the grading slots, and what is graded so far.

    A section's result is settled (recorded for its student) when a slot returns it, when the same section was
    graded normally for someone (the cache), or when its student's time is used up. A student whose sections
    are all settled is written at once."""

    def __init__(self, submissions: Path, out: Path, options: Options, console=None):
        self.options, self.console = options, console
        self.submissions, self.out = Path(submissions).resolve(), Path(out).resolve()
        # Every name below is the judge's id (lms/identity.py): a student-chosen name is data, never a path
        # or a key of the judge's own files.
        self.staging = Path(tempfile.mkdtemp(prefix="judge-staging-"))
        self.index, self.staged = class_index(self.submissions, self.staging, options.roster)
        self.students = self._chosen([s for s in self.staged if self._in_shard(s)])
        self.props = registry.load(options.include_hidden)
        reference = {f"{n}.py": (Path(options.solutions) / f"{n}.py").read_bytes() for n in NAMES}
        salt = repr((options.include_hidden, options.limits))
        self.out.mkdir(parents=True, exist_ok=True)
        write_index(self.out, self.index)

        self.results: dict[str, StudentResult] = {}
        self.sections: dict[str, list[Section]] = {}
        for s in self.students:
            sub = self.staged[s]
            member = sub.member
            r = self.results[s] = StudentResult(
                member.display, source=member.source, id=s, late=member.late
            )
            r.log.extend(sub.notes)
            if sub.error:
                r.errors.append(sub.error)
            try:  # a student whose files cannot be read or planned is a judge error, for them alone
                files, notes = read_files(sub.folder)
                r.log.extend(notes)
                self.sections[s] = plan(s, files, reference, self.props, salt)
            except Exception:  # noqa: BLE001 - one student: never the batch
                r.errors.append(judge_error(f"reading the files of {s}"))
                self.sections[s] = []

        # student -> key -> result record
        self.done: dict[str, dict[str, SectionResult]] = {s: {} for s in self.students}
        # section key -> a result obtained normally, reusable for any student
        self.cache: dict[str, SectionResult] = {}
        # each student's own time: never spent on another's behalf
        self.spent = {s: 0.0 for s in self.students}
        self.gradebook = read_gradebook(self.out / "gradebook.csv") if options.only else {}
        self.maximum = maxima(self.props)
        self.finished: set[str] = set()
        # (student, section), in order
        self.pending = [(s, sec) for s in self.students for sec in self.sections[s]]
        # (student, section key) -> grading processes lost on it
        self.deaths: dict[tuple[str, str], int] = {}
        self.slots: list[Slot] = []
        self.selector = selectors.DefaultSelector()
        self.progress = None
        self.tmp = self.cfg = None

    def _chosen(self, students: list[str]) -> list[str]:
        """Everyone, or the ids of the students --only names (by id, source name or shown name)."""
        if not self.options.only:
            return students
        found = {name: self.index.find(name) for name in self.options.only}
        missing = [valid_text(n) for n, m in found.items() if m is None or m.id not in self.staged]
        if missing:
            shutil.rmtree(self.staging, ignore_errors=True)
            raise SystemExit(f"no submission for: {', '.join(missing)}")
        chosen = {m.id for m in found.values()}
        return [s for s in students if s in chosen]

    def run(self) -> dict[str, StudentResult]:
        # One language for the whole run: these messages and files, the grading processes, their workers.
        with i18n.chosen(self.options.lang or i18n.current_language()):
            return self._run()

    def _run(self) -> dict[str, StudentResult]:
        limits = self.options.limits
        self.tmp = Path(tempfile.mkdtemp(prefix="judge-"))
        # workers may reach their own slot's folder (a random name) and list nothing
        self.tmp.chmod(0o711)
        self.cfg = GradingConfig(
            limits=limits,
            tmp=str(self.tmp),
            include_hidden=self.options.include_hidden,
            uid_base=uid_block(),
            hide=[str(self.submissions), str(self.staging), str(self.out), *limits.hide],
            lang=i18n.current_language(),
        )
        self.progress = _progress(self.console, len(self.pending))
        reaper = Reaper()
        try:
            self._start_slots()
            self._feed_idle()
            self._write_finished()
            while any(slot.section is not None for slot in self.slots):
                self._kill_stalled()
                for key, _ in self.selector.select(timeout=5):
                    self._receive(key.data)
                    self._feed_idle()
                    self._write_finished()
            assert not self.pending, self.pending
        finally:
            self.progress.stop()
            for slot in self.slots:
                slot.close()
            reaper.end_all()  # whatever a submission left running (possible only without namespaces) ends here
            reaper.close()
            shutil.rmtree(self.tmp, ignore_errors=True)
            shutil.rmtree(self.staging, ignore_errors=True)
        self._write_again()
        self._write_finished()
        write_timing(self.out, self.results)
        if self.options.shard is not None:  # written last: a shard without it is not finished
            shard = self.options.shard
            self._write_gradebook()  # a shard that drew no student still has its (max) row to merge
            ShardRecord(shard.index, shard.count, tuple(sorted(self.results))).write(self.out)
        return self.results

    def _in_shard(self, submission_id: str) -> bool:
        return self.options.shard is None or self.options.shard.holds(submission_id)

    # -- grading slots
    def _start_slots(self) -> None:
        distinct = (
            len({sec.key for _, sec in self.pending}) if self.options.cache else len(self.pending)
        )
        for i in range(max(1, min(self.options.jobs, MAX_JOBS, distinct or 1))):
            self.slots.append(Slot(i, self.cfg, self.tmp))
        for i, slot in enumerate(self.slots):
            info = slot.ready()
            if (
                i == 0
                and info.isolation
                and self.options.limits.isolate
                and self.console is not None
            ):
                self.console.print(
                    f"[yellow]workers run without namespaces ({escape(info.isolation)}): they "
                    "can read what your user can; every process they start is ended before the "
                    "results are written[/yellow]",
                    highlight=False,
                )

    def _restart(self, slot: Slot) -> Slot:
        try:
            slot.proc.kill()
        except OSError:
            pass
        slot.close()
        fresh = Slot(slot.index, self.cfg, self.tmp)
        fresh.ready()
        self.slots[slot.index] = fresh
        return fresh

    def _kill_stalled(self) -> None:
        """A grading process that stopped answering (a judge bug) is killed: _receive regrades its section."""
        limit = self.options.limits.section_timeout + STALL_S
        for slot in self.slots:
            if slot.section is not None and time.monotonic() - slot.started > limit:
                slot.proc.kill()

    # -- sections
    def _settle(self, student: str, section: Section, record: SectionResult) -> None:
        self.done[student][section.key] = record
        self.progress.advance(valid_text(section.label))

    def _feed_idle(self) -> None:
        for slot in list(self.slots):
            if slot.section is None:
                self._feed(slot)

    def _feed(self, slot: Slot) -> None:
        """Give the slot the first section that must be graded; settle on the way those that need not be."""
        options, limits = self.options, self.options.limits
        busy = {other.section.key for other in self.slots if other.section is not None}
        i = 0
        while i < len(self.pending):
            student, section = self.pending[i]
            # graded normally for someone: the same for everyone
            if options.cache and section.key in self.cache:
                self.pending.pop(i)
                self._settle(student, section, self.cache[section.key])
                continue
            if options.cache and section.key in busy:  # being graded now: wait for that result
                i += 1
                continue
            self.pending.pop(i)
            budget = limits.submission_timeout - self.spent[student]
            if budget <= 0:  # this student's time is used up: the rest is not run
                self._settle(
                    student,
                    section,
                    not_run(
                        section,
                        _("not run: the submission's time limit ({seconds} s) was used up").format(
                            seconds=f"{limits.submission_timeout:g}"
                        ),
                    ),
                )
                continue
            # it died while idle (killed: possible only when not root)
            if slot.proc.poll() is not None:
                slot = self._restart(slot)
            try:
                slot.give(section, min(limits.section_timeout, budget), student)
            except (BrokenPipeError, OSError):
                slot = self._restart(slot)
                slot.give(section, min(limits.section_timeout, budget), student)
            except Exception:  # noqa: BLE001 - this section could not be sent: a judge error, its own
                slot.section = None
                self._settle(student, section, SectionResult(section.key, error=judge_error("")))
                continue
            self.selector.register(slot.proc.stdout, selectors.EVENT_READ, slot)
            return
        slot.section = None

    def _receive(self, slot: Slot) -> None:
        """The slot's answer; if its grading process died or was killed, a new one regrades the section."""
        self.selector.unregister(slot.proc.stdout)
        section, student = slot.section, slot.student
        slot.section = None
        try:
            record = read_trusted(slot.proc.stdout)
        except (EOFError, OSError):
            record = None
        # the student's own section, even if lost
        self.spent[student] += time.monotonic() - slot.started
        if record is None:
            # The new grading process's start is charged to the student whose section it ended on: its CPU
            # time (~4 s, the same on a loaded machine, where its wall time may be several times that).
            fresh = self._restart(slot)
            self.spent[student] += timing.cpu_seconds(fresh.proc.pid) or 0.0
            self.results[student].restarts += 1
            lost = self.deaths[student, section.key] = (
                self.deaths.get((student, section.key), 0) + 1
            )
            if lost < GRADER_TRIES:
                self.pending.insert(0, (student, section))
            else:  # charged to this student's own section only, and never cached
                self._settle(
                    student,
                    section,
                    not_run(
                        section,
                        ngettext(
                            "crashed: the grading process ended {n} time while grading this section",
                            "crashed: the grading process ended {n} times while grading this section",
                            lost,
                        ).format(n=lost),
                        core.Status.CRASHED,
                    ),
                )
            return
        if not isinstance(record, SectionResult) or record.key != section.key:
            record = SectionResult(
                section.key, error=f"a malformed result record: {type(record).__name__}"
            )
        if record.reusable:
            self.cache[section.key] = record
        self._settle(student, section, record)

    # -- outputs
    def _write_finished(self) -> None:
        """Write every student whose sections are all settled and who is not written yet. Whatever fails for
        one student (assembling, a file, the gradebook row) is a judge error for that student alone."""
        for s in self.students:
            if s in self.finished or any(sec.key not in self.done[s] for sec in self.sections[s]):
                continue
            self.finished.add(s)
            self._write_one(s, assemble_first=True)
            try:  # rewritten after each student: a failure here must not stop the batch (written again at the end)
                self._write_gradebook()
            except OSError:
                traceback.print_exc()

    def _write_one(self, s: str, assemble_first: bool = False) -> None:
        r = self.results[s]
        if assemble_first:
            try:
                assemble(r, self.sections[s], self.done[s])
            except Exception:  # noqa: BLE001
                r.errors.append(judge_error(f"assembling the results of {s}"))
                r.outcomes = []
        try:
            write_student(self.out, r, self.options.hidden_visibility)
        except Exception:  # noqa: BLE001
            r.errors.append(judge_error(f"writing the files of {s}"))
        try:
            self.gradebook[s] = gradebook_row(r)
        except Exception:  # noqa: BLE001
            r.errors.append(judge_error(f"the gradebook row of {s}"))
            self.gradebook[s] = {"student": r.name, "total": "judge error"}

    def _write_again(self) -> None:
        """Written again once nothing of the run is left: a leftover process may have changed the files."""
        for s in self.finished:
            self._write_one(s)
        if self.finished:
            self._write_gradebook()

    def _write_gradebook(self) -> None:
        """The gradebook: every student graded so far, and the roster's students who submitted nothing."""
        absent = {m.id: missing_row(m.display) for m in self.index.members if not m.submitted}
        write_gradebook(self.out / "gradebook.csv", {**self.gradebook, **absent}, self.maximum)


def class_index(submissions: Path, staging: Path, roster: Path | None):
    """The class index (lms/identity.py) of the submissions, joined to the roster if one is given, and each
    submission staged under `staging` by id."""
    from ..lms import ingest
    from ..lms import roster as rosters
    from ..lms.names import name_problems

    subs, problems = ingest.read_class(submissions, staging)
    index = ClassIndex([s.member for s in subs], problems)
    if roster is not None:
        rosters.join(index, *rosters.read(roster))
    index.problems.extend(name_problems(index))
    return index, {s.member.id: s for s in subs}


def judge_error(what: str) -> str:
    """The instructor's line for a judge error (the traceback of the exception being handled)."""
    head = f"JUDGE ERROR {what}: " if what else "JUDGE ERROR: "
    return head + traceback.format_exc(limit=8)


def not_run(
    section: Section, message: str, status: core.Status = core.Status.TIMEOUT
) -> SectionResult:
    """The result record of a section whose properties were not run: each fails with `message`."""
    records = []
    for pid, points in section.props:
        p = core.REGISTRY[pid]
        if points is not None:  # an integration re-run (judge/sections.py)
            p = core.integration_rerun(p, points)
        records.append(OutcomeRecord.not_run(p, status, message))
    return SectionResult(section.key, records)


# -------------------------------------------------------------------------------------------- progress bar
class _NoProgress:
    def advance(self, label):
        pass

    def stop(self):
        pass


class _RichProgress:
    def __init__(self, console, total):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        # A student's folder name is text, never markup.
        self.bar = Progress(
            TextColumn("grading"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}", markup=False),
            console=console,
            transient=True,
        )
        self.task = self.bar.add_task("", total=total)
        self.bar.start()

    def advance(self, label):
        self.bar.update(self.task, advance=1, description=label)

    def stop(self):
        self.bar.stop()


def _progress(console, total):
    return _RichProgress(console, total) if console is not None else _NoProgress()
