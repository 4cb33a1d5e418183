"""The records that cross between the scheduler and a grading process (trusted pickles, frames.write_trusted),
typed end to end (issue 36): the process's start (GradingConfig, answered by Ready), a section's order
(SectionOrder, sections.Section.order), its result (SectionResult, with the picture and each property's
OutcomeRecord), cached for another student with the same files.

The outcome record: one property's verdict, cut to the feedback's text budgets. Its one home: the grading
process makes it (`of`), the scheduler writes one for a section it could not run (`not_run`), and
outputs.assemble turns it back into an Outcome (`outcome`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..suite import core
from .limits import Limits


@dataclass
class OutcomeRecord:
    name: str
    component: str
    points: float
    visible: bool
    summary: str
    status: core.Status
    message: str = ""
    hint: str = ""
    example: str = ""
    detail: str = ""  # the student's own traceback, trimmed
    seconds: float = 0.0
    omitted: bool = False  # its text replaced by the budget's sentence (outputs.over_budget)
    kind: core.Kind = core.Kind.BEHAVIOUR
    integration: bool = False  # an integration re-run (judge/sections.py)
    # the passes it went through (core.Outcome.passes): made, where it was made
    passes: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return core.property_id(self.component, self.name, self.integration)

    @classmethod
    def of(cls, o: core.Outcome) -> OutcomeRecord:
        """The record of an outcome, to cross the process boundary."""
        p = o.property
        return cls(
            p.name,
            p.component,
            p.points,
            p.visible,
            p.summary,
            core.Status(o.status),
            o.message,
            o.hint,
            o.example,
            o.detail,
            o.seconds,
            kind=core.Kind(p.kind),
            integration=p.integration,
            passes=tuple(o.passes),
        )

    @classmethod
    def not_run(cls, p: core.Property, status: core.Status, message: str) -> OutcomeRecord:
        """A property the judge did not run (a section's time used up, a lost grading process), made here
        (passes.made)."""
        from .. import passes

        return cls.of(passes.made(core.Outcome(p, status, message)))

    def outcome(self) -> core.Outcome:
        """The Outcome again, on the scheduler's side (its property has no function: it is not run here)."""
        p = core.Property(
            self.name,
            self.component,
            self.points,
            self.visible,
            0,
            None,
            self.summary,
            kind=self.kind,
            integration=self.integration,
        )
        return core.Outcome(
            p,
            self.status,
            self.message,
            self.hint,
            self.example,
            self.detail,
            self.seconds,
            passes=self.passes,
        )


@dataclass(frozen=True)
class GradingConfig:
    """What the scheduler tells a grading process when it starts it (scheduler.Slot)."""

    limits: Limits
    tmp: str  # the run's private folder
    include_hidden: bool
    uid_base: int  # the first of the run's uids (zygote_client.uid_block)
    hide: list[str]  # folders the workers must not see: the submissions, the staging, OUT
    lang: str
    slot: int = 0


@dataclass(frozen=True)
class Ready:
    """A grading process's first answer: started, with the uids its workers take and why they run without
    namespaces ("" if they do not)."""

    uids: list[int]
    isolation: str


@dataclass(frozen=True)
class SectionOrder:
    """What a grading process is asked to grade: one section. The label names the section, never the student
    (a result may be reused for another student with the same files)."""

    key: str  # the hash of everything the result depends on (sections.plan)
    component: str  # a component's name, or INTEGRATION
    label: str
    files: dict[str, bytes]
    props: list[tuple[str, float | None]]  # (property id, points of its integration re-run or None)
    picture: bool
    budget_s: float
    reference: tuple[
        str, ...
    ] = ()  # the files of `files` that are the reference's (the dependencies)


@dataclass(frozen=True)
class Picture:
    """The feedback's picture of the student's attention: a PNG, or None with the sentence that says why."""

    png: bytes | None
    caption: str


@dataclass
class SectionResult:
    """A grading process's answer for one section (or the scheduler's, for a section it could not run): its
    outcomes, or `error`, a judge error (the section is not graded; the student is not charged)."""

    key: str
    outcomes: list[OutcomeRecord] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0
    normal: bool = (
        False  # every call answered in time by a live worker: only such a result is reused
    )
    picture: Picture | None = None
    judge_errors: list[str] = field(default_factory=list)
    log: str = ""  # what the code printed, trimmed
    stats: dict[str, float] = field(
        default_factory=dict
    )  # the workers' forks, start, load, teardown, ops

    @property
    def reusable(self) -> bool:
        """Reused for another student with the same files: graded normally, no judge error."""
        return self.normal and not self.error and not self.judge_errors
