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
import re
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


def _hint_for(bug, messages: list[str]) -> str:
    """The catalog message that names the bug, formatted with 1 for each placeholder; "" if none."""
    for m in messages:
        if bug.hint.lower() in m.lower():
            return re.sub(r"\{[^{}]*\}", "1", m)
    return ""


def _messages() -> list[str]:
    from babel.messages.pofile import read_po

    from .. import i18n

    with open(i18n.LOCALE_DIR / "es" / "LC_MESSAGES" / f"{i18n.DOMAIN}.po", "rb") as f:
        return [m.id for m in read_po(f) if isinstance(m.id, str) and m.id]


def make_class(
    out: Path,
    n: int,
    seed: int = 0,
    submissions: Path | None = None,
    copies: int = 0,
    hostile_names: bool = False,
    judge_error: bool = False,
) -> Plan:
    from ..bugs import catalog
    from ..judge.outputs import (
        StudentResult,
        gradebook_row,
        maxima,
        write_gradebook,
        write_student,
        write_timing,
    )
    from ..judge.sections import integration_props
    from ..suite import core
    from ..suite.core import ERROR_KIND_HINTS, Outcome, Status, integration_rerun

    rng = random.Random(seed)
    props = core.load(include_hidden=True)
    integration = {
        c: [(next(p for p in props if p.id == pid), share) for pid, share in specs]
        for c, specs in integration_props(props).items()
    }
    bugs = catalog()
    messages = _messages()
    hints = {b.id: _hint_for(b, messages) for b in bugs}
    names = [f"student{i:03d}" for i in range(n)]
    if hostile_names:
        names[: len(HOSTILE_NAMES)] = HOSTILE_NAMES[:n]
    plan = Plan()
    for index, name in enumerate(names):
        ability = rng.uniform(0.2, 1.0)
        outcomes, planted, unwritten = [], [], []
        for component in NAMES:
            mine = [p for p in props if p.component == component]
            if rng.random() < 0.04 * (1.2 - ability):
                unwritten.append(component)
                hint = ERROR_KIND_HINTS["not_implemented"]
                outcomes += [
                    Outcome(p, Status.NOT_IMPLEMENTED, "NotImplementedError", hint) for p in mine
                ]
                continue
            failing: dict[str, Outcome] = {}
            for bug in (b for b in bugs if b.component == component):
                if rng.random() < 0.12 * (1.0 - ability):
                    planted.append(bug)
                    hit = random.Random(bug.id).sample(mine, k=min(len(mine), 2))
                    for p in hit:
                        failing[p.id] = Outcome(p, Status.FAILED, "does not hold", hints[bug.id])
            if rng.random() < 0.03:
                p = rng.choice(mine)
                status = rng.choice(
                    [Status.TIMEOUT, Status.CRASHED, Status.FORBIDDEN, Status.FAILED]
                )
                failing[p.id] = Outcome(p, status, str(status), "")
            outcomes += [failing.get(p.id, Outcome(p, Status.PASSED)) for p in mine]
            for p, share in integration.get(component, ()):
                ip = integration_rerun(p, share)
                ok = not any(b.component in _deps(component) for b in planted)
                outcomes.append(Outcome(ip, Status.PASSED if ok else Status.FAILED, "", ""))
        r = StudentResult(name, outcomes, seconds=rng.uniform(2.0, 8.0))
        if judge_error and index == n - 1:
            r.errors.append("JUDGE ERROR in decoder: the grading process died twice")
        plan.results[name], plan.bugs[name], plan.unwritten[name] = r, planted, unwritten
    out.mkdir(parents=True, exist_ok=True)
    for r in plan.results.values():
        write_student(out, r, "after_due_date")
    write_timing(out, plan.results)
    write_gradebook(
        out / "gradebook.csv", {s: gradebook_row(r) for s, r in plan.results.items()}, maxima(props)
    )
    if submissions is not None:
        plan.copies = _write_submissions(submissions, plan, rng, copies)
    return plan


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
