"""The orchestrator: plan sections, farm them out to grading processes, write every output from memory.

A student's grade is made of sections, one per component: a fresh worker holding the student's file for that
component, the *reference* files for its dependencies (components.py) and the student's helper files, never
the reference of the component itself. So a bug costs points where it lives. A small integration share
(INTEGRATION_SHARE of a dependent component's points) re-runs a few of its properties in one more worker
that holds the student's own files only.

Sections are deterministic functions of their files, so a section whose files are byte-identical to one
already graded in this run (an untouched stub, a file copied from the reference...) reuses its result, but
only a result obtained normally (no timeout, no worker lost, no time budget used up): each student's time
budget is their own, spent only on sections graded for them, and no message names another student.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import pickle
import selectors
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.markup import escape

from ..components import COMPONENTS, NAMES
from ..properties import core
from .. import results
from . import grader as grader_mod
from .remote import KIT, MAX_JOBS, Limits, uid_block
from .sandbox import Reaper

INTEGRATION_SHARE = 0.10
GRADER_TRIES = 3  # a section on which grading processes keep dying is marked crashed (for its student) after this
INTEGRATION_PROPS = 2  # properties re-run with the student's own dependencies, per dependent component
MAX_FILE_BYTES = 1 << 20
MAX_FILES = 64
SHORT = {"attention_numpy": "np", "attention": "attn", "mask": "mask", "multi_head": "mha", "add_norm": "norm",
         "feed_forward": "ffn", "positional_encoding": "pe", "encoder": "enc", "decoder": "dec",
         "transformer": "model",
         "training": "train",  # --- training (issue 10, part 3) ---
         results.INTEGRATION: "integ"}
COLUMNS = results.ROWS  # the gradebook's point columns: each component, then the integration share


@dataclass
class Options:
    jobs: int = os.cpu_count() or 1
    limits: Limits = field(default_factory=Limits)
    include_hidden: bool = True
    hidden_visibility: str = results.HIDDEN_VISIBILITY
    only: list[str] | None = None
    cache: bool = True
    solutions: Path = KIT / "solutions"


@dataclass
class Task:
    key: str
    label: str
    kind: str  # a component name, or "integration"
    files: dict[str, bytes]
    props: list[tuple[str, float | None]]
    picture: bool = False
    reference: tuple[str, ...] = ()  # the files of `files` that are the reference's (the dependencies)

    def message(self, budget_s: float) -> dict:
        # The label in the worker's messages names the section, never the student: a result may be reused
        # for another student with the same files.
        return {"key": self.key, "label": f"the {self.kind} section", "files": self.files, "props": self.props,
                "picture": self.picture, "budget_s": budget_s, "reference": self.reference}


@dataclass
class StudentResult:
    name: str
    outcomes: list = field(default_factory=list)
    seconds: float = 0.0
    picture: bytes | None = None
    picture_caption: str = ""  # what the picture shows, in a sentence; or why there is none
    log: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stats: list[dict] = field(default_factory=list)

    def points(self) -> dict[str, float]:
        """Points per gradebook column: each component's own properties, and the integration share apart."""
        by = {name: 0.0 for name in COLUMNS}
        for o in self.outcomes:
            by[results.row_of(o)] += o.score
        return by


# ------------------------------------------------------------------------------------------- submissions
def discover(submissions: Path) -> list[str]:
    return sorted(p.name for p in Path(submissions).iterdir()
                  if p.is_dir() and not p.is_symlink() and not p.name.startswith((".", "_")))


def read_files(folder: Path) -> tuple[dict[str, bytes], list[str]]:
    """The student's .py files: regular files only (a symlink could point at the reference), bounded."""
    files, notes = {}, []
    for p in sorted(Path(folder).iterdir()):
        if not p.name.endswith(".py") or p.name == "__init__.py":
            continue
        if p.is_symlink() or not p.is_file():
            notes.append(f"{p.name} ignored: not a regular file")
            continue
        if len(files) >= MAX_FILES:
            notes.append(f"{p.name} ignored: more than {MAX_FILES} files")
            continue
        data = p.read_bytes()
        if len(data) > MAX_FILE_BYTES:
            notes.append(f"{p.name} ignored: larger than {MAX_FILE_BYTES >> 10} KiB")
            continue
        files[p.name] = data
    return files, notes


def integration_props(props: list[core.Property]) -> dict[str, list[tuple[str, float]]]:
    """Per dependent component: the properties re-run with the student's own dependencies, and their points."""
    chosen = {}
    for c in COMPONENTS:
        if not c.deps:
            continue
        mine = [p for p in props if p.component == c.name]
        picks = [p for p in mine if p.visible and "hand" not in p.name][:INTEGRATION_PROPS]
        if picks:  # in halves of a point, so that sums stay exact
            share = max(0.5, round(2 * INTEGRATION_SHARE * sum(p.points for p in mine) / len(picks)) / 2)
            chosen[c.name] = [(p.id, share) for p in picks]
    return chosen


def plan(student: str, files: dict[str, bytes], reference: dict[str, bytes], props: list[core.Property],
         salt: str) -> list[Task]:
    """The sections of one student, in component order, then the integration section."""
    helpers = {n: d for n, d in files.items() if n[:-3] not in NAMES}
    tasks = []
    for c in COMPONENTS:
        mine = [(p.id, None) for p in props if p.component == c.name]
        if not mine:
            continue
        package = dict(helpers)
        if c.filename in files:
            package[c.filename] = files[c.filename]
        for dep in c.deps:
            package[f"{dep}.py"] = reference[f"{dep}.py"]
        tasks.append(Task("", f"{student}/{c.name}", c.name, package, mine,
                          reference=tuple(f"{dep}.py" for dep in c.deps)))
    integration = [spec for specs in integration_props(props).values() for spec in specs]
    if integration:  # the picture of the student's own multi-head attention comes from this worker too
        tasks.append(Task("", f"{student}/integration", "integration", dict(files), integration, picture=True))
    for t in tasks:
        t.key = hashlib.sha256(pickle.dumps((salt, t.kind, sorted(t.files.items()), t.props, t.picture))).hexdigest()
    return tasks


# ---------------------------------------------------------------------------------------- grading slots
class Slot:
    """One grading process (grader.py) and the task it is working on."""

    def __init__(self, index: int, cfg: dict, tmp: Path):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(KIT), os.environ.get("PYTHONPATH", "")]),
                   PYTHONHASHSEED="0", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self.index, self.task, self.student = index, None, ""
        self.log = open(tmp / f"grader-{index}.log", "ab")
        self.proc = subprocess.Popen([sys.executable, "-c", "from autograder.judge.grader import main; main()"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, cwd=str(KIT),
                                     env=env)
        grader_mod.send(self.proc.stdin, dict(cfg, slot=index))

    def ready(self) -> dict:
        try:
            return grader_mod.recv(self.proc.stdout)
        except EOFError:
            self.log.flush()
            tail = Path(self.log.name).read_text(errors="replace")[-3000:]
            raise RuntimeError(f"grading process {self.index} failed to start:\n{tail}") from None

    def give(self, task: Task, budget_s: float, student: str) -> None:
        self.task, self.student, self.started = task, student, time.monotonic()
        grader_mod.send(self.proc.stdin, task.message(budget_s))

    def close(self) -> None:
        try:
            grader_mod.send(self.proc.stdin, None)
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired, ValueError):
            self.proc.kill()
            self.proc.wait()
        self.log.close()


# ------------------------------------------------------------------------------------------------ outputs
def outcome_from(record: dict) -> core.Outcome:
    p = core.Property(record["name"], record["component"], record["points"], record["visible"], 0, None,
                      record["summary"])
    return core.Outcome(p, record["status"], record["message"], record["hint"], record["example"],
                        record["detail"], record["seconds"])


def write_atomic(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data.encode() if isinstance(data, str) else data)
    os.replace(tmp, path)


def results_json(r: StudentResult, hidden_visibility: str) -> dict:
    rows = results.summarize(r.outcomes)
    lines = [f"{row.component}: {row.earned:g} / {row.available:g}" for row in rows]
    data = results.gradescope(r.outcomes, r.seconds, hidden_visibility, "\n".join(lines))
    return data


def write_student(out: Path, r: StudentResult, options: Options) -> None:
    from . import feedback

    folder = out / r.name
    data = results_json(r, options.hidden_visibility)
    write_atomic(folder / "results.json", json.dumps(data, indent=2, sort_keys=True) + "\n")
    write_atomic(folder / "feedback.html", feedback.html(r, options.hidden_visibility))
    write_atomic(folder / "feedback.md", feedback.markdown(r, options.hidden_visibility))
    if r.picture:
        write_atomic(folder / "attention_weights.png", r.picture)
    log = [f"# {r.name}: instructor log (not for students)"] + r.errors + r.log
    write_atomic(out / "logs" / f"{r.name}.txt", "\n".join(log) + "\n")


def maxima(props: list[core.Property]) -> dict[str, float]:
    """The most points per gradebook column (COLUMNS), integration share apart."""
    by = {name: 0.0 for name in COLUMNS}
    for p in props:
        by[p.component] += p.points
    for specs in integration_props(props).values():
        by[results.INTEGRATION] += sum(points for _, points in specs)
    return by


def read_gradebook(path: Path) -> dict[str, dict[str, str]]:
    if not path.is_file():
        return {}
    with open(path, newline="") as f:
        return {row["student"]: row for row in csv.DictReader(f) if row.get("student") and row["student"] != "(max)"}


def write_gradebook(path: Path, rows: dict[str, dict[str, str]], maximum: dict[str, float]) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["student", *COLUMNS, "total"])
    w.writerow(["(max)", *(f"{maximum[n]:g}" for n in COLUMNS), f"{sum(maximum.values()):g}"])
    for name in sorted(rows):
        w.writerow([name, *(rows[name].get(n, "") for n in COLUMNS), rows[name].get("total", "")])
    write_atomic(path, buf.getvalue())


def gradebook_row(r: StudentResult) -> dict[str, str]:
    pts = r.points()
    return {**{n: f"{pts[n]:g}" for n in COLUMNS}, "total": f"{sum(pts.values()):g}"}


# ------------------------------------------------------------------------------------------------ grading
def grade(submissions: Path, out: Path, options: Options | None = None, console=None) -> dict[str, StudentResult]:
    """Grade every student folder in `submissions` (or options.only) into `out`; return the results."""
    options = options or Options()
    submissions, out = Path(submissions).resolve(), Path(out).resolve()
    students = discover(submissions)
    if options.only:
        missing = sorted(set(options.only) - set(students))
        if missing:
            raise SystemExit(f"no submission folder for: {', '.join(missing)}")
        students = [s for s in students if s in options.only]
    props = core.load(options.include_hidden)
    reference = {f"{n}.py": (Path(options.solutions) / f"{n}.py").read_bytes() for n in NAMES}
    salt = repr((options.include_hidden, options.limits))
    out.mkdir(parents=True, exist_ok=True)

    results_by: dict[str, StudentResult] = {}
    tasks_of: dict[str, list[Task]] = {}
    for s in students:
        files, notes = read_files(submissions / s)
        results_by[s] = StudentResult(s, log=notes)
        tasks_of[s] = plan(s, files, reference, props, salt)

    done: dict[str, dict[str, dict]] = {s: {} for s in students}  # student -> task key -> result record
    cache: dict[str, dict] = {}  # task key -> a result obtained normally, reusable for any student
    spent = {s: 0.0 for s in students}  # each student's own time: never spent on another's behalf
    gradebook = read_gradebook(out / "gradebook.csv") if options.only else {}
    maximum = maxima(props)
    finished: set[str] = set()

    def finish_ready():
        for s in students:
            if s in finished or any(t.key not in done[s] for t in tasks_of[s]):
                continue
            assemble(results_by[s], tasks_of[s], done[s])
            write_student(out, results_by[s], options)
            gradebook[s] = gradebook_row(results_by[s])
            write_gradebook(out / "gradebook.csv", gradebook, maximum)
            finished.add(s)

    tmp = Path(tempfile.mkdtemp(prefix="judge-"))
    tmp.chmod(0o711)  # workers may reach their own slot's folder (a random name) and list nothing
    cfg = {"limits": options.limits, "tmp": str(tmp), "include_hidden": options.include_hidden,
           "uid_base": uid_block(os.getpid()),
           "hide": [str(submissions), str(out), *options.limits.hide]}
    pending = [(s, t) for s in students for t in tasks_of[s]]  # (student, section) in order
    distinct = len({t.key for _, t in pending}) if options.cache else len(pending)
    progress = _progress(console, len(pending))
    slots: list[Slot] = []
    deaths: dict[tuple[str, str], int] = {}  # (student, task key) -> grading processes lost on it
    reaper = Reaper()
    try:
        slots = [Slot(i, cfg, tmp) for i in range(max(1, min(options.jobs, MAX_JOBS, distinct or 1)))]
        for i, slot in enumerate(slots):
            info = slot.ready()
            if i == 0 and info.get("isolation") and options.limits.isolate and console is not None:
                console.print(f"[yellow]workers run without namespaces ({escape(info['isolation'])}): they can read what "
                              "your user can; every process they start is ended before the results are "
                              "written[/yellow]", highlight=False)
        sel = selectors.DefaultSelector()

        def settle(s: str, t: Task, record: dict) -> None:
            done[s][t.key] = record
            progress.advance(t.label)

        def feed(slot):
            """Give the slot the first section that must be graded; settle on the way those that need not be."""
            busy = {other.task.key for other in slots if other.task is not None}
            i = 0
            while i < len(pending):
                s, t = pending[i]
                if options.cache and t.key in cache:  # graded normally for someone: the same for everyone
                    pending.pop(i)
                    settle(s, t, cache[t.key])
                    continue
                if options.cache and t.key in busy:  # being graded now: wait for that result
                    i += 1
                    continue
                pending.pop(i)
                budget = options.limits.submission_timeout - spent[s]
                if budget <= 0:  # this student's time is used up: the rest is not run
                    settle(s, t, not_run(t, f"not run: the submission's time limit "
                                            f"({options.limits.submission_timeout:g} s) was used up"))
                    continue
                if slot.proc.poll() is not None:  # it died while idle (killed: possible only when not root)
                    slots[slot.index] = slot = restart(slot, cfg, tmp)
                try:
                    slot.give(t, min(options.limits.section_timeout, budget), s)
                except (BrokenPipeError, OSError):
                    slots[slot.index] = slot = restart(slot, cfg, tmp)
                    slot.give(t, min(options.limits.section_timeout, budget), s)
                sel.register(slot.proc.stdout, selectors.EVENT_READ, slot)
                return
            slot.task = None

        def feed_idle():
            for slot in list(slots):
                if slot.task is None:
                    feed(slot)

        feed_idle()
        finish_ready()
        while any(slot.task is not None for slot in slots):
            for slot in slots:  # a grading process that stopped answering (a judge bug) is killed: see below
                if slot.task is not None and time.monotonic() - slot.started > options.limits.section_timeout + 120:
                    slot.proc.kill()
            for key, _ in sel.select(timeout=5):
                slot = key.data
                sel.unregister(slot.proc.stdout)
                task, student = slot.task, slot.student
                slot.task = None
                try:
                    record = grader_mod.recv(slot.proc.stdout)
                except (EOFError, OSError):
                    record = None
                spent[student] += time.monotonic() - slot.started  # the student's own section, even if lost
                if record is None:  # the grading process died or was killed: a new one regrades the section
                    slots[slot.index] = restart(slot, cfg, tmp)
                    lost = deaths[student, task.key] = deaths.get((student, task.key), 0) + 1
                    if lost < GRADER_TRIES:
                        pending.insert(0, (student, task))
                    else:  # charged to this student's own section only, and never cached
                        settle(student, task, not_run(task, f"crashed: the grading process ended {lost} times "
                                                            "while grading this section", "crashed"))
                else:
                    if record.get("normal") and not record.get("error"):
                        cache[task.key] = record
                    settle(student, task, record)
                feed_idle()
                finish_ready()
        assert not pending, pending
    finally:
        progress.stop()
        for slot in slots:
            slot.close()
        reaper.end_all()  # whatever a submission left running (possible only without namespaces) ends here
        reaper.close()
        shutil.rmtree(tmp, ignore_errors=True)
    for s in finished:  # written again once nothing of the run is left: a leftover may have changed them
        write_student(out, results_by[s], options)
    if finished:
        write_gradebook(out / "gradebook.csv", gradebook, maximum)
    finish_ready()
    write_timing(out, results_by)
    return results_by


def restart(slot: Slot, cfg: dict, tmp: Path) -> Slot:
    try:
        slot.proc.kill()
    except OSError:
        pass
    slot.close()
    fresh = Slot(slot.index, cfg, tmp)
    fresh.ready()
    return fresh


def not_run(task: Task, message: str, status: str = "timeout") -> dict:
    records = []
    for pid, points in task.props:
        p = core.REGISTRY[pid]
        name = f"integration::{p.name}" if points is not None else p.name
        records.append({"id": f"{p.component}::{name}", "name": name, "component": p.component,
                        "points": points if points is not None else p.points, "visible": p.visible,
                        "summary": p.summary, "status": status, "message": message, "hint": "", "example": "",
                        "detail": "", "seconds": 0.0})
    return {"key": task.key, "outcomes": records, "seconds": 0.0, "picture": None, "log": "", "stats": {}}


def assemble(r: StudentResult, tasks: list[Task], done: dict[str, dict]) -> None:
    """The student's outcomes in a fixed order: component order, section properties, then integration ones."""
    records = []
    for t in tasks:
        rec = done[t.key]
        if rec.get("error"):
            r.errors.append(f"JUDGE ERROR in {t.label}: {rec['error']}")
            continue
        records.extend(rec["outcomes"])
        r.seconds += rec.get("seconds", 0.0)
        r.stats.append(dict(rec.get("stats", {}), section=t.kind, seconds=round(rec.get("seconds", 0.0), 3)))
        if isinstance(rec.get("picture"), dict):
            r.picture, r.picture_caption = rec["picture"]["png"], rec["picture"]["caption"]
        if rec.get("log"):
            r.log.append(f"## {t.label}: what the code printed (trimmed)\n{rec['log']}")
    order = {n: i for i, n in enumerate(NAMES)}
    records.sort(key=lambda x: (order[x["component"]], "::integration::" in x["id"]))  # stable within each
    r.outcomes = core.require_behaviour([outcome_from(x) for x in records])


def write_timing(out: Path, results_by: dict[str, StudentResult]) -> None:
    """Time fields, kept apart from results.json so that those are byte-identical run to run."""
    data = {s: {"seconds": round(r.seconds, 3), "workers": r.stats} for s, r in sorted(results_by.items())}
    write_atomic(out / "timing.json", json.dumps(data, indent=1, sort_keys=True) + "\n")


class _NoProgress:
    def advance(self, label):
        pass

    def stop(self):
        pass


class _RichProgress:
    def __init__(self, console, total):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        # A student's folder name is text, never markup.
        self.bar = Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("{task.description}", markup=False), console=console, transient=True)
        self.task = self.bar.add_task("", total=total)
        self.bar.start()

    def advance(self, label):
        self.bar.update(self.task, advance=1, description=label)

    def stop(self):
        self.bar.stop()


def _progress(console, total):
    return _RichProgress(console, total) if console is not None else _NoProgress()


def render_gradebook(results_by: dict[str, StudentResult], props, console) -> None:
    """The class at a glance: a column per component, the integration share, the total. Names are plain text."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    maximum = maxima(props)
    table = Table(title="gradebook", box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    table.add_column("student", overflow="fold")
    used = [n for n in COLUMNS if maximum[n]]
    for n in used:
        header = Text(SHORT[n])
        header.append(f"\n{maximum[n]:g}", style="dim")
        table.add_column(header, justify="right", no_wrap=True)
    total = Text("total")
    total.append(f"\n{sum(maximum.values()):g}", style="dim")
    table.add_column(total, justify="right", no_wrap=True)
    for name in sorted(results_by):
        r = results_by[name]
        pts = r.points()
        cells = []
        for n in used:
            style = "green" if pts[n] == maximum[n] else ("red" if pts[n] == 0 else "yellow")
            cells.append(Text(f"{pts[n]:g}", style=style))
        label = Text(name)
        if r.errors:
            label.append(" (judge error)", style="red")
        table.add_row(label, *cells, Text(f"{sum(pts.values()):g}", style="bold"))
    console.print(table)
    console.print(Text(", ".join(f"{SHORT[n]} = {n}" for n in used if n != results.INTEGRATION)
                       + f", {SHORT[results.INTEGRATION]} = {results.INTEGRATION}: {results.INTEGRATION_TITLE}",
                       style="dim"))
