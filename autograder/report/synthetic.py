"""A synthetic graded class, written exactly as the judge writes one (its own writers: outputs.write_student,
write_timing, write_gradebook), for the report's tests and benchmark. No student code runs: each student's
outcomes are drawn from the real property registry and bug catalog, each bug failing a few properties of its
component with the catalog hint that names it (Bug.hint is a fragment of that hint).

With `submissions`, each student also gets source files: the reference with the student's bugs planted and a
helper of their own (so that independent students differ), or the stub when a component is left unwritten;
`copies` pairs of students hand in the same files (the similarity section must find them).
"""

from __future__ import annotations

import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .. import KIT
from ..components import NAMES

# no "/": a folder's name
HOSTILE_NAMES = (
    "<img src=x onerror=alert(1)>",
    "=1+2",
    "+cmd|'calc'!A0",
    "@sum(1)",
    "-2",
    "a\"quote'&amp;",
)


@dataclass
class Plan:
    """The ground truth a test compares the page with."""

    results: dict = field(default_factory=dict)  # student -> outputs.StudentResult
    bugs: dict[str, list] = field(default_factory=dict)  # student -> the Bugs planted
    # student -> components left as stubs
    unwritten: dict[str, list[str]] = field(default_factory=dict)
    copies: list[tuple[str, str]] = field(default_factory=list)
    missing: dict[str, list[str]] = field(
        default_factory=dict
    )  # student -> components not handed in
    correct: list[str] = field(default_factory=list)  # students whose every property passes
    # student -> the ids of the bugs a hint names in their results (a bug whose two properties another bug or a
    # rare failure overwrote, or that no catalog message names, is planted but not named)
    named: dict[str, set[str]] = field(default_factory=dict)


def _wordings(bug, messages: list[str]) -> list[str]:
    """The catalog messages that name the bug (its Bug.hint fragment): those only it claims in its component
    (hints.mistake_id), else the shortest that holds the fragment (one wording); [] if none. Those the
    component's own files write first (the catalog's locations), as a real property of it would say them."""
    from .hints import BUG_ID, mistake_id

    here = [m for m, files in messages if any(f"/{bug.component}.py" in f for f in files)]
    mine = [m for m in here or [m for m, _ in messages] if bug.hint.lower() in m.lower()]
    if (
        not mine
    ):  # a hint its component's files do not spell (built elsewhere): anywhere in the catalog
        mine = [m for m, _ in messages if bug.hint.lower() in m.lower()]
    own = [m for m in mine if mistake_id(bug.component, m) == BUG_ID + bug.id]
    return own or sorted(mine, key=len)[:1]


def _naming(bug, wordings: list[str]) -> list[str]:
    """The wordings that name the bug, those the suite really says for it first (its signature), as the judge's
    results would hold them."""
    from .signatures import load

    own = load().get(bug.id, frozenset())
    said = [m for m in wordings if m in own] or sorted(
        m for m in own if bug.hint.lower() in m.lower()
    )
    return said or wordings


def _others(bug, naming: list[str]) -> list[str]:
    """The rest of the bug's signature (report/signatures.json), sorted: what the suite says for it besides."""
    from .hints import TEXT_ID
    from .signatures import load

    return sorted(
        m for m in load().get(bug.id, ()) if m not in naming and not m.startswith(TEXT_ID)
    )


def _say(message: str) -> str:
    """A message as a student reads it: in the current language, each placeholder filled with 1."""
    from ..i18n import _
    from .hints import PLACEHOLDER

    # placeholders only: a message may hold braces of its own (a formula's sum_{t=1..T})
    return PLACEHOLDER.sub("1", _(message)) if message else ""


# A class of 25 as an LMS names it (Moodle's download: "<Full name>_<n>_assignsubmission_file_"), for the
# screenshots and the browser test: accents, ñ, and names whose code-point order is not the alphabet's
SPANISH_NAMES = (
    "Ángela Núñez", "Bruno Ortega", "Valentina Ruiz", "Óscar Iñiguez", "Camila Peña", "Diego Álvarez",
    "Elena Muñoz", "Íñigo Castro", "Lucía Fernández", "Mateo Gil", "Nuria Santos", "Pablo Ñúñez",
    "Sofía Domínguez", "Tomás Herrera", "Úrsula Vega", "Zoe Martín", "Andrés León", "Beatriz Nieto",
    "Carlos Navarro", "Daniela Ibáñez", "Emilio Ramos", "Irene Molina", "Julia Romero", "Nicolás Sáez",
    "Raúl Cortés",
)  # fmt: skip


def moodle_names(n: int) -> list[str]:
    return [f"{name}_{1000 + i}_assignsubmission_file_" for i, name in enumerate(SPANISH_NAMES[:n])]


def _messages() -> list[tuple[str, list[str]]]:
    from babel.messages.pofile import read_po

    from .. import i18n

    with open(i18n.LOCALE_DIR / "es" / "LC_MESSAGES" / f"{i18n.DOMAIN}.po", "rb") as f:
        return [
            (m.id, [path for path, _ in m.locations])
            for m in read_po(f)
            if isinstance(m.id, str) and m.id
        ]


# long: the synthetic class's steps in order, sharing its random draws
def make_class(
    out: Path,
    n: int,
    seed: int = 0,
    submissions: Path | None = None,
    copies: int = 0,
    hostile_names: bool = False,
    judge_error: bool = False,
    names: list[str] | None = None,
    correct: int = 0,
    missing: int = 0,
    bug_rate: float = 1.0,
) -> Plan:
    """A class of n (or of `names`); `correct` students (the last ones) with no mistake at all, `missing`
    students (the first ones) who did not hand in one file each (the judge's missing-file error on its
    properties and on the re-runs that use it). bug_rate scales each bug's chance (1: about 7 bugs a student,
    the benchmark's dense class; the screenshots' class takes 0.5, about 3.5). Hints are in the current
    language."""
    from .. import registry
    from ..bugs import catalog
    from ..judge.outputs import StudentResult
    from ..judge.sections import integration_props
    from ..suite.core import Outcome, Status

    rng = random.Random(seed)
    props = registry.load(include_hidden=True)
    integration = {
        c: [(next(p for p in props if p.id == pid), share) for pid, share in specs]
        for c, specs in integration_props(props).items()
    }
    bugs = catalog()
    messages = _messages()
    wordings = {b.id: _wordings(b, messages) for b in bugs}
    names = list(names) if names else [f"student{i:03d}" for i in range(n)]
    n = len(names)
    if hostile_names:
        names[: len(HOSTILE_NAMES)] = HOSTILE_NAMES[:n]
    plan = Plan()
    for index, name in enumerate(names):
        ability = rng.uniform(0.2, 1.0)
        outcomes, planted, unwritten, named = _student(
            rng, ability, bug_rate, props, bugs, wordings, integration
        )
        gone = []
        if (
            index < missing
        ):  # one file not handed in: its properties and the re-runs that use it fail
            gone = [NAMES[(index * 5 + 1) % len(NAMES)]]
            outcomes = [_missing(o, gone[0]) for o in outcomes]
            named = {b for b in named if not b.startswith(f"{gone[0]}:")}
        if index >= n - correct:
            outcomes = [Outcome(o.property, Status.PASSED) for o in outcomes]
            planted, unwritten, named = [], [], set()
            plan.correct.append(name)
        r = StudentResult(name, outcomes, seconds=rng.uniform(2.0, 8.0))
        if judge_error and index == n - 1:
            r.errors.append("JUDGE ERROR in decoder: the grading process died twice")
        plan.results[name], plan.bugs[name], plan.unwritten[name] = r, planted, unwritten
        plan.missing[name], plan.named[name] = gone, named
    _write_results(out, plan, props)
    if submissions is not None:
        plan.copies = _write_submissions(submissions, plan, rng, copies)
    return plan


def _write_results(out: Path, plan: Plan, props) -> None:
    """The judge's files for the class, by the judge's own writers."""
    from ..judge.outputs import gradebook_row, maxima, write_gradebook, write_student, write_timing

    out.mkdir(parents=True, exist_ok=True)
    for r in plan.results.values():
        write_student(out, r, "after_due_date")
    write_timing(out, plan.results)
    write_gradebook(
        out / "gradebook.csv", {s: gradebook_row(r) for s, r in plan.results.items()}, maxima(props)
    )


def expected_mistakes(plan: Plan) -> dict[tuple[str, str], set[str]]:
    """What the report must count for the plan, from its outcomes: (component, misconception) -> students, each
    failure a hint named in its own component, a student's messages in a component grouped together
    (signatures.misconceptions); integration re-runs (counted at their root), stubs and missing files apart."""
    from .hints import hint_id
    from .signatures import misconceptions
    from .stats import MISSING_HINT

    expected: dict[tuple[str, str], set[str]] = {}
    for name, r in plan.results.items():
        own = [o for o in r.outcomes if not o.passed and o.hint and not o.property.integration]
        said: dict[str, set[str]] = {}
        for o in own:
            said.setdefault(o.property.component, set()).add(hint_id(o.hint))
        for o in own:
            hid = hint_id(o.hint)
            if o.status == "not_implemented" or hid == MISSING_HINT:
                continue
            c = o.property.component
            expected.setdefault((c, misconceptions(c, said[c])[hid]), set()).add(name)
    return expected


def _student(rng, ability, bug_rate, props, bugs, wordings, integration):
    """One student's outcomes: per component the stub (rarely), else at most one bug of the catalog, each tried
    with a chance that falls with ability, failing properties of its component (two at least), the first with
    the wording that names the bug, the others with the rest of its signature (what the suite says for it); a
    rare property that timed out, crashed, broke a by-hand rule or failed with no hint; and the integration
    re-runs, failing when a file they use is the student's stub or has a bug, with the hint of a mistake of the
    re-run component (what a real re-run says: its symptom, blamed on the wrong file)."""
    from ..components import NAMES
    from ..suite import core
    from ..suite.core import ERROR_KIND_HINTS, Outcome, Status, integration_rerun

    outcomes, planted, unwritten, named = [], [], [], set()
    for component in NAMES:
        mine = [p for p in props if p.component == component]
        if rng.random() < 0.04 * (1.2 - ability):
            unwritten.append(component)
            hint = _say(ERROR_KIND_HINTS["not_implemented"])
            outcomes += [
                Outcome(p, Status.NOT_IMPLEMENTED, "NotImplementedError", hint) for p in mine
            ]
            continue
        failing: dict[str, core.Outcome] = {}
        origin: dict[str, str] = {}  # property -> the bug whose hint its outcome carries
        # at most one mistake a file, as the judge's class of planted bugs (two in one file can say what a third
        # says alone: the report names the misconception the messages show, signatures.misconceptions)
        for bug in (b for b in bugs if b.component == component):
            if rng.random() < 0.12 * (1.0 - ability) * bug_rate:
                planted.append(bug)
                # the first property's hint names the bug; the others say the rest of the bug's messages (its
                # signature: what the suite says for it), as real properties each diagnose the symptom they see
                said = _naming(bug, wordings[bug.id])[:1]
                said += _others(bug, said)
                hit = random.Random(bug.id).sample(mine, k=min(len(mine), max(2, len(said))))
                for i, p in enumerate(hit):
                    hint = _say(said[min(i, len(said) - 1)] if said else "")
                    failing[p.id] = Outcome(p, Status.FAILED, "does not hold", hint)
                    origin[p.id] = bug.id
                break
        if rng.random() < 0.03:
            p = rng.choice(mine)
            status = rng.choice([Status.TIMEOUT, Status.CRASHED, Status.FORBIDDEN, Status.FAILED])
            failing[p.id] = Outcome(p, status, str(status), "")
            origin.pop(p.id, None)
        named |= {b for pid, b in origin.items() if failing[pid].hint}
        outcomes += [failing.get(p.id, Outcome(p, Status.PASSED)) for p in mine]
        broken = {b.component for b in planted} | set(unwritten)
        blamed = [b for b in bugs if b.component == component and wordings[b.id]]
        for p, share in integration.get(component, ()):
            ip = integration_rerun(p, share)
            if broken & _deps(component):
                wrong = random.Random(p.id).choice(blamed) if blamed else None
                hint = _say(wordings[wrong.id][0]) if wrong else ""
                outcomes.append(Outcome(ip, Status.FAILED, "does not hold", hint))
            else:
                outcomes.append(Outcome(ip, Status.PASSED))
    return outcomes, planted, unwritten, named


def _missing(o, component: str):
    """The outcome as the judge gives it when `component`'s file was not handed in."""
    from ..suite.core import ERROR_KIND_HINTS, Outcome, Status

    own = o.property.component == component and not o.property.integration
    if own or (o.property.integration and component in _deps(o.property.component)):
        hint = _say(ERROR_KIND_HINTS["missing"])
        return Outcome(o.property, Status.ERROR, f"{component}.py is missing", hint)
    return o


def _deps(component: str) -> set[str]:
    from ..components import BY_NAME

    return set(BY_NAME[component].deps)


def _helper(rng: random.Random) -> str:
    """Six to ten lines of the student's own (a helper nobody else writes the same): what makes independent
    students differ beyond their bugs, where the rest is the reference."""
    ops = [
        "x + {a}",
        "x * {a}",
        "x - {a}",
        "x ** 2 + {a}",
        "abs(x) * {a}",
        "max(x, {a})",
        "min(x, -{a})",
    ]
    body = [
        f"    y{i} = "
        + rng.choice(ops).format(a=rng.randint(2, 99)).replace("x", f"y{i - 1}" if i else "x")
        for i in range(rng.randint(6, 10))
    ]
    return "\n\ndef _my_helper(x):\n" + "\n".join(body) + f"\n    return y{len(body) - 1}\n"


def _write_submissions(
    dest: Path, plan: Plan, rng: random.Random, copies: int
) -> list[tuple[str, str]]:
    solutions, stubs = KIT / "solutions", KIT / "exercises"
    if dest.exists():
        shutil.rmtree(dest)
    for name in plan.results:
        folder = dest / name
        folder.mkdir(parents=True)
        for component in NAMES:
            if component in plan.missing.get(name, ()):
                continue
            if component in plan.unwritten[name]:
                shutil.copy(stubs / f"{component}.py", folder / f"{component}.py")
                continue
            source = (solutions / f"{component}.py").read_text()
            for bug in plan.bugs[name]:
                # two bugs may edit the same line: the second then has nothing to replace
                if bug.component == component and source.count(bug.find) == 1:
                    source = bug.apply(source)
            (folder / f"{component}.py").write_text(source + _helper(rng))
    names = list(plan.results)
    pairs = []
    for i in range(min(copies, len(names) // 2)):
        a, b = names[2 * i], names[2 * i + 1]
        shutil.rmtree(dest / b)
        shutil.copytree(dest / a, dest / b)
        pairs.append((a, b))
    return pairs
