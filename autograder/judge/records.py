"""The judge's outcome record: one property's verdict as it crosses from a grading process to the scheduler (a
trusted pickle, frames.write_trusted), is cached for another student with the same files, and is cut to the
feedback's text budgets. Its one home: the grading process makes it (`of`), the scheduler writes one for a
section it could not run (`not_run`), and outputs.assemble turns it back into an Outcome (`outcome`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..suite import core


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
        )

    @classmethod
    def not_run(cls, p: core.Property, status: core.Status, message: str) -> OutcomeRecord:
        """A property the judge did not run (a section's time used up, a lost grading process)."""
        return cls(
            p.name,
            p.component,
            p.points,
            p.visible,
            p.summary,
            status,
            message,
            kind=p.kind,
            integration=p.integration,
        )

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
            p, self.status, self.message, self.hint, self.example, self.detail, self.seconds
        )
