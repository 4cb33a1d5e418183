"""What each cataloged mistake makes the suite say: per bug, the catalog messages of the hints its own component's
failing properties give, recorded by running the catalog against the suite (generated, then read by the report).

    python -m autograder.report.signatures            # check: exit 1 when the file is stale
    python -m autograder.report.signatures --write    # run the catalog (a few minutes) and rewrite the file

A misconception shows under several wordings: each property diagnoses the symptom it sees ("softmax over the
queries", "subtract the max along the same dim", "equal scores give equal weights" for one wrong-axis softmax),
so a bug's hint fragment (`Bug.hint`) is in one of them, not in all. The report groups a student's messages in a
component by these signatures (misconceptions, below), one row per misconception. The file is current when the
suite says today what it said when the file was written: tests/test_suite_meta.py compares each bug's signature
with the session's own run of that bug.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import sys
import tempfile
from pathlib import Path

from .hints import BUG_ID, JOINT, TEXT_ID, hint_id, mistake_id

SIGNATURES = Path(__file__).with_name("signatures.json")


def of_outcomes(outcomes) -> list[str]:
    """The catalog messages (hints.hint_id) of the failing outcomes' hints, sorted; hints no message matches are
    left out (they cannot be recognised in another class's results either)."""
    ids = {hint_id(o.hint) for o in outcomes if not o.passed and o.hint}
    return sorted(h for h in ids if not h.startswith(TEXT_ID))


# The copy task is drawn at grading time (properties.training.TASK_DRAW: weights trained offline cannot know it),
# so what a bug that fails it makes the suite say can change with the draw (targets_not_shifted's hint reads
# "no causal mask" on some draws). The signatures, and the tests that check them (tests/suite_runs.py), run on
# this one draw, so that the file is reproducible; the reference learns the task on it.
COPY_TASK_DRAW = 0


@contextlib.contextmanager
def fixed_copy_task():
    """The copy task drawn with COPY_TASK_DRAW for the block (properties.training reads TASK_DRAW per call)."""
    from ..properties import training

    drawn = training.TASK_DRAW
    training.TASK_DRAW = COPY_TASK_DRAW
    try:
        yield
    finally:
        training.TASK_DRAW = drawn


def compute() -> dict[str, list[str]]:
    """Run each bug's component suite (visible and hidden, in English, in this process) on the reference with
    that bug planted (the copy task on its fixed draw)."""
    from .. import KIT, i18n, registry
    from ..bugs import catalog, make_submission
    from ..student_code import InProcessStudentCode
    from ..suite import core

    properties = registry.load(include_hidden=True)
    found: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as tmp, i18n.chosen("en"), fixed_copy_task():
        for bug in catalog():
            folder = make_submission(bug, KIT / "solutions", Path(tmp) / bug.id.replace(":", "-"))
            code = InProcessStudentCode(folder, bug.id)
            outcomes = [
                core.run_property(p, code) for p in properties if p.component == bug.component
            ]
            found[bug.id] = of_outcomes(outcomes)
    return found


@functools.cache
def load() -> dict[str, frozenset[str]]:
    """Bug id -> the messages its component's failing properties give (empty if the file is absent)."""
    if not SIGNATURES.is_file():
        return {}
    return {bug: frozenset(msgs) for bug, msgs in json.loads(SIGNATURES.read_text()).items()}


def misconceptions(component: str, hids) -> dict[str, str]:
    """One student's messages in `component` (catalog msgids, hint_id) -> the misconception each names.

    By the bugs' signatures (signatures.py: what each cataloged bug of the component makes the suite say): the bug
    whose signature holds the most of the student's messages claims those it holds (a tie goes to a bug that one
    of the messages names by its hint fragment, then to the bug whose signature the student's messages fill
    most: the fewest it says that the student's results do not; still tied: no bug, the messages stay their
    own), and so on with the rest. Bugs whose signatures are the same (the suite says exactly the same of both)
    are one misconception, named by both: BUG_ID + "A|B" (JOINT). A message no signature holds is named by its
    hint fragment (mistake_id). So a wrong-axis softmax's six wordings across six properties are one row, and a
    student with two mistakes in one file has two."""
    left = {h for h in hids if not h.startswith(TEXT_ID)}
    named = {h: mistake_id(component, h) for h in hids}
    candidates = {
        bug: sig for bug, sig in load().items() if bug.split(":", 1)[0] == component and sig
    }
    while left:
        cover = {bug: len(left & sig) for bug, sig in candidates.items()}
        best = max(cover.values(), default=0)
        if not best:
            break
        tied = [bug for bug, n in cover.items() if n == best]
        # a tie: the bugs a message of the student's names (it holds the bug's hint fragment), then those whose
        # signature the student's messages fill most
        named_here = [bug for bug in tied if any(named.get(h) == BUG_ID + bug for h in left)]
        tied = named_here or tied
        extra = {bug: len(candidates[bug] - set(hids)) for bug in tied}
        fewest = min(extra.values())
        tied = [bug for bug in tied if extra[bug] == fewest]
        if len(tied) > 1 and len({candidates[bug] for bug in tied}) > 1:
            break
        # one bug; or several the suite says exactly the same of (dropout on the input or on the output): one
        # misconception as far as any evidence goes, named by all of them ("bug:A|B")
        sig = candidates[tied[0]]
        for h in left & sig:
            named[h] = BUG_ID + JOINT.join(sorted(tied))
        left -= sig
        for bug in tied:
            candidates.pop(bug)
    return named


def render(found: dict[str, list[str]]) -> str:
    return json.dumps(found, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--write", action="store_true", help="rewrite the file from a run of the catalog"
    )
    args = ap.parse_args(argv)
    text = render(compute())
    if args.write:
        SIGNATURES.write_text(text)
        print(f"wrote {SIGNATURES}")
        return 0
    current = SIGNATURES.read_text() if SIGNATURES.is_file() else ""
    if current != text:
        print(
            f"{SIGNATURES} is stale: python -m autograder.report.signatures --write",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
