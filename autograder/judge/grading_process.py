"""A grading process: trusted, it runs properties (and holds hidden ones) against sandboxed workers.

The scheduler (scheduler.py) starts `--jobs` of these and sends each a section at a time over stdin (the files
of one package folder and the properties to run on it; sections.py). It answers over stdout with outcome
records (records.OutcomeRecord). It owns one zygote and forks one fresh worker per section (and another after a
crash or timeout).

It is trusted but not unbounded: it runs with an address-space limit of its own (GRADER_MEMORY_MB above what it
uses once set up) and a CPU limit per section, so that whatever a student's replies make it do, it cannot take
the machine down; if it dies, the scheduler regrades its section in a fresh one.
"""

from __future__ import annotations

import contextlib
import gc
import os
import random
import re
import resource
import tempfile
import time
import traceback
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

# Only light imports at the top: this module is imported before main() sets stdout aside (a stray print would
# corrupt the protocol); torch, the properties and the wire are imported after.
from .. import KIT, i18n
from ..i18n import N_, _, ngettext
from .frames import read_trusted, write_trusted
from .package_folder import PackageFolder
from .sandbox import sandbox_paths

if TYPE_CHECKING:
    from .records import GradingConfig, Picture, SectionOrder, SectionResult

GRADER_MEMORY_MB = (
    3072  # address space on top of a set-up grading process's own (torch, properties: ~0.7 GiB)
)
GRADER_CPU_MARGIN_S = (
    60  # CPU seconds per section beyond its time budget (the picture, Hypothesis' own work)
)
# Characters kept of each field of an outcome, whatever a worker sent to build it: the feedback can never
# carry a file (a reference solution, say) however a worker smuggles it into a message.
FIELD_LIMITS = {"message": 1200, "example": 2000, "hint": 600, "detail": 3000}
# Text from the code under test shown per section (outputs.text_bytes); the submission has a budget of its own
# (outputs.SUBMISSION_TEXT_BUDGET).
SECTION_TEXT_BUDGET = 2 << 10
TIMEOUT_HINT = N_("an endless loop, or far too slow? Every call must finish within the time limit")

CRASH_HINT = N_(
    "the process died: sys.exit / os._exit, a segfault (ctypes?), running out of memory, or a kill"
)


class GradingProcess:
    """The grading side of one slot: its zygote, its package folder, the properties; a section at a time."""

    # long: the slot's setup in order: language, torch, zygote, package folder, properties
    def __init__(self, cfg: GradingConfig):
        import torch

        # The run's language, chosen by the orchestrator: every message made here (and, through the zygote, in
        # the workers) is in it.
        i18n.set_language(cfg.lang)
        # one core per grading slot; the same float reductions in every slot
        torch.set_num_threads(1)
        from .. import registry, timing
        from ..suite import core
        from .limits import Limits

        self.core, self.cfg = core, cfg
        self.limits: Limits = cfg.limits
        self.tmp = Path(cfg.tmp)
        # A folder of a random name: without namespaces, a worker of another slot cannot find it (tmp is 0711).
        slot_dir = Path(tempfile.mkdtemp(prefix=f"slot{cfg.slot}-", dir=self.tmp))
        self.pkg, work = slot_dir / "pkg", slot_dir / "work"
        slot_dir.chmod(0o711)
        for d in (self.pkg, work):
            d.mkdir(mode=0o755)
            d.chmod(0o755)
        self.log_path = self.tmp / f"zygote-{cfg.slot}.log"
        self.zygote = None
        self.zygote_factory()
        # As root, workers of slot i alternate between two uids of their own (see zygote.ZygoteServer).
        base = cfg.uid_base + 2 * cfg.slot
        uids = [base, base + 1] if self.zygote.mode == "root" else []
        registry.load(include_hidden=cfg.include_hidden)
        self.registry = core.REGISTRY
        hide, keep = sandbox_paths(KIT, cfg.hide, self.tmp)
        z, limits = self.zygote, self.limits
        self.worker_cfg = {
            "root": str(self.pkg),
            "workdir": str(work),
            "uids": uids,
            "uid": None,
            "isolate": bool(limits.isolate and z.mode),
            "hide": hide,
            "pidns": z.mode if limits.isolate else None,
            "keep": [*keep, str(self.pkg), str(work)],
            "tmp_mb": limits.tmp_mb,
            "as_bytes": z.vm_bytes + (limits.memory_mb << 20) if limits.memory_mb else None,
            # A backstop only: the section's own budget is enforced from here, in scaled CPU seconds.
            "fsize": limits.fsize_mb << 20,
            "cpu_s": int(limits.section_timeout * timing.speed() * 1.5 + 10),
            "nproc": 1 if uids or (z.mode == "user" and limits.isolate) else None,
            "output_limit": limits.output_limit,
            "unpath": [str(KIT), os.path.abspath(".")],
            # The zygote loads its catalog before it forks: a worker's own folders hide the kit.
            "lang": i18n.current_language(),
        }
        self.zygote.configure(self.worker_cfg)
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        self.as_limit = _vm_bytes() + (GRADER_MEMORY_MB << 20)
        if soft == resource.RLIM_INFINITY or soft > self.as_limit:
            resource.setrlimit(resource.RLIMIT_AS, (self.as_limit, hard))
        self.pictures: dict[str, bytes] = {}
        self.package = PackageFolder(self.pkg)
        # The set-up's objects (torch, Hypothesis, the properties: ~250 000) leave the collector's generations:
        # each full collection walked them all, about 8 % of a grading process's CPU time.
        gc.collect()
        gc.freeze()
        # What is left (the properties' caches, Hypothesis's state: ~90 000 objects) a full collection still
        # walks, 45 ms each, 14 times per grading process for 12 students (3.5 % of its CPU time): one full
        # collection per 100 middle ones instead of 10. The young collections, which free the examples'
        # cycles, keep suite/core.py's threshold (GC_THRESHOLD).
        gc.set_threshold(*gc.get_threshold()[:2], 100)

    def zygote_factory(self):
        """The slot's zygote, started (again) if need be."""
        from .zygote_client import ZygoteClient

        if self.zygote is None or not self.zygote.alive():
            if self.zygote is not None:
                self.zygote.close()
            with _unlimited():  # the zygote must not inherit this process's own limits
                self.zygote = ZygoteClient(self.log_path)
            if hasattr(self, "worker_cfg"):
                self.zygote.configure(self.worker_cfg)
        return self.zygote

    def property_for(self, spec):
        """spec: (property id, points or None). A points override marks an integration re-run."""
        pid, points = spec
        p = self.registry[pid]
        return p if points is None else self.core.integration_rerun(p, points)

    # long: a section's steps in order (its files, the guard's probes, each property run, the result kept)
    def run(self, section: SectionOrder) -> SectionResult:
        from ..components import NAMES
        from ..student_code import StopsAtLoops, seed_everything
        from ..suite.core import Status
        from .records import OutcomeRecord, Picture, SectionResult
        from .remote import JudgeError, SandboxedStudentCode, WithoutItsFile

        start = time.perf_counter()
        _limit_cpu(section.budget_s + GRADER_CPU_MARGIN_S)
        self.package.write(section.files, tuple(section.reference))
        sources = {
            Path(n).stem: d.decode("utf-8", errors="replace") for n, d in section.files.items()
        }
        component = section.component
        if component in NAMES and component not in sources:
            student = WithoutItsFile(component, sources)
        else:
            student = SandboxedStudentCode(
                self.zygote_factory,
                sources,
                self.limits,
                time.monotonic() + section.budget_s,
                section.label,
                self.package.preload,
                dict(self.package.syntax),
            )
        # a function that timed out is not called again (student_code.StopsAtLoops, as in the self-check)
        student = StopsAtLoops(student)
        outcomes, timeouts, picture, limits = [], 0, None, self.limits
        # The by-hand guard is probed before a property drawn here (the student's code cannot know which) and
        # after the last one; found switched off, the section earns nothing (docs/byhand.md).
        probe_at, still_allowed = random.SystemRandom().randrange(len(section.props) + 1), []
        judge_errors: list[str] = []
        try:
            for index, spec in enumerate(section.props):
                if index == probe_at and getattr(student, "pid", None) is not None:
                    still_allowed = still_allowed or self.probe_rules(student, component)
                p = self.property_for(spec)
                # after max_timeouts distinct functions timed out, only the static scan (it calls none) runs
                if timeouts >= limits.max_timeouts and not self.core.is_static(p):
                    outcomes.append(
                        self.core.Outcome(
                            p,
                            Status.TIMEOUT,
                            ngettext(
                                "not run: {n} earlier call in this component timed out",
                                "not run: {n} earlier calls in this component timed out",
                                timeouts,
                            ).format(n=timeouts),
                            _(TIMEOUT_HINT),
                        )
                    )
                    continue
                # the judge's own randomness: order-independent
                seed_everything(zlib.crc32(p.id.encode()))
                o = self.run_property(p, student)
                timeouts = len(student.looped)  # each a time limit spent; a repeat costs nothing
                outcomes.append(o)
            # after the last property (a lost worker's successor imports the file again)
            if isinstance(student.student, SandboxedStudentCode):  # under StopsAtLoops
                still_allowed = still_allowed or self.probe_rules(student, component)
            if still_allowed:
                self.core.rules_switched_off(outcomes, component, still_allowed)
            outcomes = self.refuse_by_the_scan(outcomes, sources)
            if section.picture:
                try:
                    picture = self.picture(student)
                except (JudgeError, MemoryError):
                    raise
                except Exception:  # noqa: BLE001 - the picture only: the section's outcomes stand
                    judge_errors.append("the picture: " + traceback.format_exc(limit=8))
                    picture = Picture(None, "")
        except JudgeError as e:
            return SectionResult(section.key, error=str(e))
        finally:
            student.close()
        from .. import passes

        # made here, once (passes.made): every outcome of the section, after the verdicts on the whole of it
        records = [
            tidy(OutcomeRecord.of(passes.made(o)), str(self.pkg), str(self.tmp)) for o in outcomes
        ]
        records = section_budget(records)
        stats = student.stats
        # Normal: every call answered in time by a live worker. Only such a result may be reused for another
        # student whose section has the same files (a timeout depends on the load and on the time left).
        normal = not student.abnormal and not any(
            r.status in (Status.TIMEOUT, Status.CRASHED) for r in records
        )
        return SectionResult(
            section.key,
            records,
            seconds=time.perf_counter() - start,
            normal=normal,
            picture=picture,
            judge_errors=judge_errors,
            log="\n".join(stats.log)[:8000],
            stats={
                "forks": stats.forks,
                "start_s": stats.start_s,
                "load_s": stats.load_s,
                "teardown_s": stats.teardown_s,
                "ops": stats.ops,
            },
        )

    def refuse_by_the_scan(self, outcomes, sources: dict[str, str]) -> list:
        """A passed outcome of a component with no static by-hand property whose file, or a helper it loads,
        names the kit itself or tampers is refused with the sentence check gives it
        (rules.static_scan.scan_refusal, check.SelfCheck.refuse_by_the_scan): here the import fails or the frame
        walk finds nothing, which cost only the properties that reached it. A component with a static by-hand
        property is voided by its scan already (core.require_behaviour)."""
        from ..rules.static_scan import scan_refusal
        from ..suite.core import Status

        static = {p.component for p in self.registry.values() if self.core.is_static(p)}
        refusals: dict[str, str] = {}
        for o in outcomes:
            c = o.property.component
            if not o.passed or c in static:
                continue
            if c not in refusals:
                refusals[c] = scan_refusal(c, sources.get, list(sources))
            if refusals[c]:
                o.status, o.message, o.hint = Status.FORBIDDEN, refusals[c], ""
        return outcomes

    def probe_rules(self, student, component) -> list[str]:
        """The families the section's by-hand guard no longer refuses; [] if intact. A live worker with time
        left that does not answer the probe (a few microsecond calls) refused nothing: all its families."""
        from ..components import BY_NAME
        from .remote import WorkerLost

        if student.budget_left() < 1.0:  # no time left to answer: not the student's doing
            return []
        live = student.pid is not None
        try:
            return self.core.probe_rules(student, component)
        except WorkerLost:
            return (
                list(BY_NAME[component].forbidden_families) if live and component in BY_NAME else []
            )

    def run_property(self, p, student):
        from ..suite.core import Status
        from .remote import WorkerLost

        t0 = time.perf_counter()
        try:
            # A MemoryError this process raised itself (an object it made, never a worker's text) ends the
            # process: the scheduler regrades the section in a fresh one, charged to its student.
            o = self.core.run_property(p, student, reraise=(MemoryError,))
        except (
            WorkerLost
        ) as lost:  # the worker hung or died: this property ends here, the next gets a new one
            e = lost.error
            call = _("the call: {call}").format(call=lost.call) if lost.call else ""
            o = self.core.Outcome(p, Status(e.kind), e.message, "", call)
        if o.status == Status.TIMEOUT and not o.hint:
            o.hint = _(TIMEOUT_HINT)
        if o.status == Status.CRASHED and not o.hint:
            o.hint = _(CRASH_HINT)
        o.seconds = time.perf_counter() - t0
        return o

    def picture(self, student) -> Picture:
        """The PNG (or None) and a plain sentence, drawn once per distinct view in this process."""
        from . import picture
        from .records import Picture

        seen = picture.student_view(student)
        k = picture.key(seen)
        if k not in self.pictures:
            self.pictures[k] = Picture(**picture.draw(seen, FIELD_LIMITS["message"]))
        return self.pictures[k]

    def close(self) -> None:
        if self.zygote is not None:
            self.zygote.close()


_HEX = re.compile(r"0x[0-9a-fA-F]{6,}")


def section_budget(records: list) -> list:
    """The section's OutcomeRecords with at most SECTION_TEXT_BUDGET bytes of text from the code under test."""
    from .outputs import over_budget, text_bytes

    left, kept = SECTION_TEXT_BUDGET, []
    for r in records:
        cost = text_bytes(r)
        if cost > left:
            r, cost = over_budget(r, SECTION_TEXT_BUDGET / 1024, per_section=True), 0
        left -= cost
        kept.append(r)
    return kept


def host_paths() -> list[tuple[str, str]]:
    """(path, what a student reads instead), the longest first: the host's folders a worker can name (issue 32:
    the kit's checkout from the editable install's finder in sys.modules, the Python installation and the home
    folder from sys.path), each as given and resolved. The root itself is never one."""
    import sys

    named = [(str(KIT), "<kit>"), (os.path.expanduser("~"), "<home>")]
    named += [(p, "<python>") for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)]
    named += [(p, "<python>") for p in sys.path if p and os.path.isabs(p)]
    found = {}
    for path, label in named:
        for p in (path.rstrip("/"), os.path.realpath(path).rstrip("/")):
            if p and p != "/" and p.count("/") >= 1:
                found.setdefault(p, label)
    return sorted(found.items(), key=lambda pair: -len(pair[0]))


_HOST_PATHS = host_paths()


def tidy(record, *paths: str):
    """Same submission, same text: no temp paths, no host paths (host_paths), no memory addresses; each field
    bounded (FIELD_LIMITS). Changes the OutcomeRecord in place and returns it."""
    for field, limit in FIELD_LIMITS.items():
        text = getattr(record, field)
        # cut before replacing: the text may be long
        text = text[: 4 * limit] if isinstance(text, str) else ""
        for path in paths:
            text = text.replace(path, "<submission>")
        for path, label in _HOST_PATHS:
            text = text.replace(path, label)
        text = _HEX.sub("0x…", text)
        setattr(record, field, text if len(text) <= limit else text[: limit - 1] + "…")
    return record


def _vm_bytes() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) << 10 for line in f if line.startswith("VmSize:"))


def _limit_cpu(seconds: float) -> None:
    """SIGXCPU (which ends this process) after `seconds` more of CPU time: one section's allowance."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = int(used.ru_utime + used.ru_stime + seconds) + 1
    resource.setrlimit(
        resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard)
    )


@contextlib.contextmanager
def _unlimited():
    """This process's soft memory and CPU limits lifted (to their hard limits) while it starts a child."""
    saved = {r: resource.getrlimit(r) for r in (resource.RLIMIT_AS, resource.RLIMIT_CPU)}
    for r, (_soft, hard) in saved.items():
        resource.setrlimit(r, (hard, hard))
    try:
        yield
    finally:
        for r, limits in saved.items():
            resource.setrlimit(r, limits)


def main() -> None:
    proto_in, proto_out = os.fdopen(os.dup(0), "rb"), os.fdopen(os.dup(1), "wb")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)  # a stray print must not corrupt the protocol
    grading = None
    try:
        grading = GradingProcess(read_trusted(proto_in))
        from .records import Ready

        write_trusted(
            proto_out, Ready(grading.worker_cfg["uids"], grading.zygote.isolation_problem or "")
        )
        while True:
            try:
                section = read_trusted(proto_in)
            except EOFError:
                break
            if section is None:
                break
            try:
                result = grading.run(section)
            except (
                MemoryError
            ):  # past this process's own limit: end it, the scheduler regrades the section
                os._exit(3)
            except Exception:  # noqa: BLE001 - a judge bug: report it, do not charge the student
                from .records import SectionResult

                result = SectionResult(section.key, error=traceback.format_exc(limit=8))
            write_trusted(proto_out, result)
    finally:
        if grading is not None:
            grading.close()


if __name__ == "__main__":
    main()
