"""Properties: graded, Hypothesis-driven checks, each with points, a component, a visibility and hints.

A property is a function `prop(student, **drawn)` that talks to the code under test only through `student`, a
StudentCode (autograder/student_code/interface.py).
It raises `Failure(message, hint)` when the code is wrong. `run_property` runs it under fixed, derandomized
Hypothesis settings and turns whatever happens into an `Outcome`: same submission, same outcome, every run.
"""

from __future__ import annotations

import gc
import hashlib
import inspect
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum

import torch
from hypothesis import HealthCheck, Phase, Verbosity, seed, settings
from hypothesis.errors import Flaky, HypothesisException
from hypothesis.internal.conjecture import engine as _engine
from hypothesis.internal.conjecture import providers as _providers

from ..components import NAMES
from ..i18n import N_, _
from ..rules import eager_dynamo  # noqa: F401  (the checking side's optimizers: training's expected model)
from ..student_code.interface import StudentCode, StudentError
from . import error_hints
from .clauses import CLAUSES
from .evidence import Evidence  # hints marked below core; core re-exports them
from .evidence import Hint as Hint
from .evidence import named as named

# The suite's tensors are tiny: one thread is fastest, and it never waits on a busy core (two threads on a
# loaded 2-core machine made it 3x slower). It also fixes the order of float reductions run to run.
torch.set_num_threads(1)

# The cyclic garbage collector: torch and Hypothesis leave ~10^6 long-lived objects that every full collection
# walks again, and Hypothesis makes short-lived ones by the thousand per example (~490 collections in five
# components' properties, 15 % of their CPU time). Frozen (never collected, they live as long as the process)
# and with fewer, larger young collections, the same properties ran in 2.4 s instead of 3.0 s of CPU. Freed
# memory is the same: tensors go by reference count; only cycles wait a little longer.
GC_THRESHOLD = (20_000, 20, 20)
gc.freeze()
gc.set_threshold(*GC_THRESHOLD)

# Shrinking is what turns a failure into a small example a student can read, but a broken submission fails
# dozens of properties and each shrink costs calls. Hypothesis documents this count as monkeypatchable; a
# count (unlike a time limit) keeps the reported example the same on every run and machine.
MAX_SHRINKS = 40
_engine.MAX_SHRINKS = MAX_SHRINKS

# Hypothesis draws about 1 number in 40 from the constants it parses out of every "local" module loaded in the
# process (not site-packages): the kit's own files and, in the self-check, the student's. The examples then
# depend on which files happen to be loaded (the judge's checking process never loads the student's), and the
# parse stops after 100 ms, so on a loaded machine too: 18 of the full suite's draws on the reference were such
# constants. The kit's examples come from the property and its seed alone, so the pool stays empty.
if hasattr(_providers, "_get_local_constants"):
    _providers._get_local_constants = lambda: _providers._local_constants


class Failure(AssertionError):
    """The property does not hold. `hint` names the likely mistake (a Hint carries its evidence)."""

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.message, self.hint = message, hint
        self.evidence = Evidence(getattr(hint, "evidence", Evidence.NONE))


class PassError(RuntimeError):
    """A defect of the kit: an outcome put through one of its passes a second time (Outcome.through), or
    finished before it was made (passes.finish)."""


class Kind(StrEnum):
    """What a property judges, declared with it (`@prop(..., kind=...)`), never read from its name."""

    BEHAVIOUR = "behaviour"  # what the code computes: constant output never passes it
    # Structure alone (parameter names, output shapes and dtypes, a ValueError for a bad argument): code that
    # computes nothing but returns the right shapes may pass it (tests/test_free_points.py)
    SHAPE = "shape"
    # Reads the source instead of running it (the by-hand scan): its point comes only with a passed behaviour
    # property of the same component (require_behaviour)
    STATIC = "static"


# The id segment of an integration re-run (results.json, nbgrader's cells, the report): written here only.
INTEGRATION_SEGMENT = "integration::"


@dataclass(frozen=True)
class Property:
    name: str  # the property's function name
    component: str
    points: float
    visible: bool
    examples: int
    fn: Callable = field(repr=False, compare=False)
    summary: str = ""
    # The likely mistake when the student's code raises here (a msgid): None takes the component's default
    # (default_hint), NO_HINT says nothing beyond the error; read it through hint_on_error
    error_hint: str | None = None
    kind: Kind = Kind.BEHAVIOUR
    # Slow to run (trains a model: 0.4 s of CPU, twice when it falls short): the kit's own tests run a component
    # holding one in the slow tier only
    slow: bool = False
    # An integration re-run: this property run again with the student's own dependencies, for `points` of the
    # integration share (integration_rerun builds it; its id says so, its name stays the property's)
    integration: bool = False
    # The contract clauses it checks, members of its component's enum (suite/clauses.py): a hidden property's
    # are each checked by a visible property too (issue 33, tests/test_clauses.py)
    clauses: tuple[StrEnum, ...] = ()

    @property
    def label(self) -> str:
        """The name reports show: the property's, marked when it is an integration re-run."""
        return INTEGRATION_SEGMENT + self.name if self.integration else self.name

    @property
    def id(self) -> str:
        return property_id(self.component, self.name, self.integration)

    @property
    def hint_on_error(self) -> str:
        """The hint (a msgid, "" for none) when the student's code raises here: the property's own, else its
        component's default_hint; a static property (a scan of the source, not a run) takes no default."""
        if self.error_hint is not None:
            return self.error_hint
        return "" if self.kind is Kind.STATIC else DEFAULT_HINTS.get(self.component, "")


def property_id(component: str, name: str, integration: bool = False) -> str:
    """The id of `component`'s property `name`, or of its integration re-run (as Property.id)."""
    return f"{component}::{INTEGRATION_SEGMENT if integration else ''}{name}"


def integration_rerun(p: Property, points: float) -> Property:
    """`p` as an integration re-run worth `points` (judge/sections.py chooses which and how much)."""
    return replace(p, points=points, integration=True)


class Status(StrEnum):
    """What happened to a property. Its value is the text that reports and results.json show."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"  # the student's code raised
    NOT_IMPLEMENTED = "not_implemented"
    FORBIDDEN = "forbidden"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    # The self-check only: the property failed while a file it uses (components.py `deps`) fails in the
    # student's own folder. Not charged: its points are pending, as the judge grades it with the reference's
    # files (check.SelfCheck.blame; docs/selfcheck.md).
    BLOCKED = "blocked"


@dataclass
class Outcome:
    property: Property
    status: Status
    message: str = ""
    hint: str = ""
    example: str = ""
    detail: str = ""  # the student's own traceback, trimmed
    seconds: float = 0.0
    # How the hint knows its cause (Evidence): in-process only (the judge's records leave it at NONE, and then
    # the table shows the first failure, as before)
    evidence: int = 0
    # The passes (autograder/passes.py) it has been through, in order, each once (issue 36): what the tests
    # count, never what a student reads
    passes: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def through(self, name: str) -> Outcome:
        """Record that the pass `name` has been applied; a second application is an error (PassError), not
        a silent no-op: each route applies each pass once, at one point. In place; the same outcome."""
        if name in self.passes:
            raise PassError(
                f"{self.property.id}: the {name} pass again (after {', '.join(self.passes)})"
            )
        self.passes += (name,)
        return self

    @property
    def passed(self) -> bool:
        return self.status == Status.PASSED

    @property
    def score(self) -> float:
        return self.property.points if self.passed else 0.0


# Property id -> property: `prop` fills it as the property modules are imported (registry.load imports them).
REGISTRY: dict[str, Property] = {}
# Component -> its default error hint (a msgid), declared once by default_hint.
DEFAULT_HINTS: dict[str, str] = {}
# The error_hint of a property that must say nothing beyond the error itself, whatever its component's default.
NO_HINT = ""


def default_hint(component: str, hint: str) -> None:
    """Declare `component`'s default error hint: the hint, when the student's code raises, of each of its
    properties, visible or hidden, that declares no `error_hint` (static ones excepted: Property.hint_on_error).
    Declared once, in properties/<name>.py; a property that must have no hint declares `error_hint=NO_HINT`."""
    if component not in NAMES:
        raise ValueError(f"unknown component {component!r}")
    if DEFAULT_HINTS.setdefault(component, hint) != hint:
        raise ValueError(f"{component}'s default hint declared twice")


def prop(
    component: str,
    points: float = 1.0,
    examples: int = 20,
    visible: bool = True,
    error_hint: str | None = None,
    kind: Kind = Kind.BEHAVIOUR,
    slow: bool = False,
    clauses: tuple[StrEnum, ...] = (),
):
    """Register a property. Stack it on top of `@given` (or on a plain function run once). `error_hint`: the
    likely mistake when the student's code raises here; left out, the component's default_hint; NO_HINT for
    none. `clauses`: the contract clauses it checks, of its component's enum (suite/clauses.py)."""
    if component not in NAMES:
        raise ValueError(f"unknown component {component!r}")
    if not all(isinstance(c, CLAUSES[component]) for c in clauses):
        raise TypeError(f"{component}: clauses must be {CLAUSES[component].__name__} members")

    def register(fn):
        if getattr(fn, "is_hypothesis_test", False):
            fn = hypothesis_settings(examples)(fn)
            # The examples' seed comes from the property's id, not from Hypothesis's digest of its source:
            # the same on every run and machine, and it spares tokenizing the file at every run (~0.5 s/suite).
            key = f"{component}::{fn.__name__}".encode()
            fn = seed(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))(fn)
            fn._hypothesis_internal_database_key = key
        p = Property(
            fn.__name__,
            component,
            float(points),
            visible,
            examples,
            fn,
            summary_of(fn.__doc__) or fn.__name__,
            error_hint,
            Kind(kind),
            slow,
            clauses=tuple(clauses),
        )
        if p.id in REGISTRY:
            raise ValueError(f"property {p.id} registered twice")
        REGISTRY[p.id] = p
        return fn

    return register


def summary_of(docstring: str | None) -> str:
    """A property's one-line summary: the first paragraph of its docstring, on one line (a sentence a docstring
    wraps stays whole, and is one message to translate: catalogs.property_summaries reads the same)."""
    paragraph = inspect.cleandoc(docstring or "").split("\n\n")[0]
    return " ".join(paragraph.split())


def select(properties, components=None, visible_only=False):
    return [
        p
        for p in properties
        if (not components or p.component in components) and (p.visible or not visible_only)
    ]


def hypothesis_settings(examples: int) -> settings:
    # derandomize: the examples depend on the property's code alone, so every run and machine agrees.
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        report_multiple_bugs=False,
        print_blob=False,
        verbosity=Verbosity.normal,  # attaches the falsifying example to the exception as a note
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )


_ARGUMENT = re.compile(r"^ {4}[A-Za-z_]\w*=")
# Inputs as code a student can paste: NumPy as np.array(..., dtype=np.float32), torch as torch.tensor(...).
_AS_CODE = [
    (re.compile(r"(?<![\w.])array\("), "np.array("),
    (re.compile(r"(?<![\w.])tensor\("), "torch.tensor("),
    (re.compile(r"\bnumpy\."), "np."),
    (re.compile(r"dtype=(float32|float64|bool|int64)\b"), r"dtype=np.\1"),
]


def _example_from_notes(exc: BaseException) -> str:
    for note in getattr(exc, "__notes__", []) or []:
        if note.startswith(
            (
                "Falsifying example",
                "Failing test case",
                "Failing explicit example",
                "Falsifying explicit example",
            )
        ):
            return format_example(note.splitlines()[1:-1])
    return ""


def format_example(lines: list[str]) -> str:
    """Hypothesis's argument lines as `name=value` blocks, one per parameter, without the student argument (it
    says nothing about the input) and with values written as code."""
    blocks: list[list[str]] = []
    for line in lines:
        if _ARGUMENT.match(line) or not blocks:
            blocks.append([line[4:] if line.startswith("    ") else line])
        else:
            blocks[-1].append(line[4:] if line.startswith("    ") else line)
    text = "\n".join(
        "\n".join(b).rstrip().removesuffix(",") for b in blocks if not b[0].startswith("student=")
    )
    for pattern, code in _AS_CODE:
        text = pattern.sub(code, text)
    return text


def _unwrap(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


# Errors no input can change: the file is missing, or cannot be parsed. Every example would fail the same way,
# so the first one ends the property: generating and shrinking the rest took ~45 ms of a missing component's
# ~120 ms section in the judge, for the same verdict (and an input that says nothing about the mistake).
# A timeout ends it too, as in the judge (whose lost worker ends the property): shrinking a loop costs one time
# limit per try (a looping Transformer cost the self-check ~90 s for one verdict).
INPUT_INDEPENDENT_KINDS = frozenset({"missing", "syntax", "timeout"})


class _EndsTheProperty(BaseException):
    """Carries an input-independent StudentError out of Hypothesis, which lets through what is not an
    Exception instead of shrinking it."""

    def __init__(self, error: StudentError):
        super().__init__(error.message)
        self.error = error


class _EndingAtImportErrors(StudentCode):
    """The student's code as a property sees it, but an input-independent error ends the property."""

    def __init__(self, student: StudentCode):
        self.student, self.label = student, student.label

    def run(self, op):
        try:
            return self.student.run(op)
        except StudentError as e:
            if e.kind in INPUT_INDEPENDENT_KINDS:
                raise _EndsTheProperty(e) from None
            raise


def run_property(p: Property, student: StudentCode, reraise: tuple = ()) -> Outcome:
    """Run one property against the student's code; never raises for anything the student's code does.
    `reraise`: exception types of the checking side itself that the caller handles (the judge's grading
    process ends on its own MemoryError: an object it made, never a message a worker wrote)."""
    test = p.fn
    start = time.perf_counter()
    try:
        test(_EndingAtImportErrors(student))
        outcome = Outcome(p, Status.PASSED)
    except _EndsTheProperty as ended:
        outcome = _outcome_from(p, ended.error)
    except (Failure, StudentError, Flaky, Exception) as raw:  # noqa: BLE001
        if (
            reraise
            and isinstance(_unwrap(raw), reraise)
            and not isinstance(_unwrap(raw), StudentError)
        ):
            raise _unwrap(raw) from None
        outcome = _outcome_from(p, raw)
    outcome.seconds = time.perf_counter() - start
    return outcome


# The hint of an error kind that is the same in every property (any other kind takes the property's hint_on_error).
ERROR_KIND_HINTS = {
    "not_implemented": N_("replace `raise NotImplementedError` with your implementation"),
    "forbidden": N_("write it yourself from tensor operations (exp, sum, matmul, mean...)"),
    "missing": N_("submit every exercise file, named as in exercises/"),
    "syntax": N_("fix the syntax error; the file could not be imported"),
    "timeout": N_("an endless loop, or far too slow? Every call must finish within the time limit"),
}


def _outcome_from(p: Property, raw: BaseException) -> Outcome:
    example = _example_from_notes(raw)
    exc = _unwrap(raw)
    example = example or _example_from_notes(exc)
    if isinstance(exc, Failure):
        # a plain str crosses to the judge's records; the evidence has its own field
        return Outcome(p, Status.FAILED, exc.message, str(exc.hint), example, evidence=exc.evidence)
    if isinstance(exc, StudentError):
        # The error kinds that are statuses of their own; any other (missing, syntax, exception) is an error.
        status = {
            "not_implemented": Status.NOT_IMPLEMENTED,
            "forbidden": Status.FORBIDDEN,
            "timeout": Status.TIMEOUT,
            "crashed": Status.CRASHED,
        }.get(exc.kind, Status.ERROR)
        if exc.kind in ERROR_KIND_HINTS:
            hint = _(ERROR_KIND_HINTS[exc.kind])
        elif exc.kind == "exception":  # the property's hint only where the error's evidence fits it
            hint = error_hints.hint_for(exc.exc_type, exc.message, exc.detail, p.hint_on_error)
        else:
            hint = _(p.hint_on_error) if p.hint_on_error else ""
        evidence = getattr(hint, "evidence", Evidence.NONE)
        return Outcome(p, status, exc.message, str(hint), example, exc.detail, evidence=evidence)
    if isinstance(exc, (Flaky, HypothesisException)):
        return Outcome(
            p,
            Status.FAILED,
            _("the result changed between two identical calls"),
            _("does your code depend on global state, randomness or an earlier call?"),
            example,
        )
    # An exception on the checking side, caused by what the student returned (a wrong type, say).
    return Outcome(
        p,
        Status.FAILED,
        _("the result could not be checked: {error}").format(error=f"{type(exc).__name__}: {exc}")[
            :400
        ],
        _("check the return type and shape against the docstring"),
        example,
    )


# ------------------------------------------------------------------------------------------ scoring rules
# The static by-hand property (a scan of the source) is the only property code that does nothing can pass:
# its points come only with working code. One rule, applied wherever outcomes are scored (check, pytest,
# the judge, the notebooks).
NO_BEHAVIOUR = N_(
    "{component}.py earns its by-hand point only together with a property of what the code does, "
    "and none of those passed yet."
)
NO_BEHAVIOUR_HINT = N_("make the component work first: this point follows.")


def is_static(p: Property) -> bool:
    """A property that reads the source instead of running it."""
    return p.kind == Kind.STATIC


def probe_rules(student: StudentCode, component: str) -> list[str]:
    """The forbidden families of `component` that its by-hand guard no longer refuses in the student's process
    (a Probe operation: the kit's own call of each, under the guard); [] while intact, or when the process
    could not answer (a lost worker is reported by the properties themselves)."""
    from ..components import BY_NAME
    from ..student_code.interface import Probe

    families = BY_NAME[component].forbidden_families if component in BY_NAME else ()
    if not families:
        return []
    try:
        still_allowed = student.run(Probe(component, families)).value
    except Exception:  # noqa: BLE001 - a worker lost on the probe: its properties say why
        return []
    return list(still_allowed) if isinstance(still_allowed, list) else list(families)


def rules_switched_off(outcomes: list[Outcome], component: str, still_allowed: list[str]) -> None:
    """Every outcome of `component` becomes forbidden: its guard was found switched off, so nothing it ran
    can be trusted to be the student's own work (issue 20)."""
    message = _(
        "the by-hand rules were switched off while {component} was graded ({families} no longer "
        "refused): none of its properties is awarded"
    ).format(component=component, families=", ".join(map(str, still_allowed))[:200])
    for o in outcomes:
        if o.property.component == component:
            o.status, o.message, o.hint = Status.FORBIDDEN, message, ""


def require_behaviour(outcomes: list[Outcome]) -> list[Outcome]:
    """A passed static property of a component with no passed behavioural property becomes failed, saying why;
    a component whose static property is forbidden (the by-hand rules tampered with or switched off, found by
    the scan or a probe) has every passed property forbidden too: nothing it ran can be trusted (issue 20).
    Changes the outcomes in place and returns them."""
    voided = {
        o.property.component: o.message
        for o in outcomes
        if is_static(o.property) and o.status == Status.FORBIDDEN
    }
    for o in outcomes:
        if o.passed and o.property.component in voided:
            o.status, o.hint = Status.FORBIDDEN, ""
            o.message = _("not awarded: {reason}").format(reason=voided[o.property.component])
    behaving = {o.property.component for o in outcomes if o.passed and not is_static(o.property)}
    for o in outcomes:
        if o.passed and is_static(o.property) and o.property.component not in behaving:
            o.status, o.hint = Status.FAILED, _(NO_BEHAVIOUR_HINT)
            o.message = _(NO_BEHAVIOUR).format(component=o.property.component)
    return outcomes
