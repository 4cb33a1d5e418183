"""How many cataloged bugs the visible self-check catches and names, with the graded side's diagnoses and as the
student bundle runs it (without them): docs/bundle.md quotes the figures.

    python benchmarks/bundle_diagnosis.py [--bundle] [--json OUT]

--bundle: as the student bundle runs it: no by-hand mistake models (suite/graded.as_in_the_bundle: every diagnosis
that needs one falls back to its default hint), and no visible property of release.GRADED_ONLY's components.
Caught: a visible property fails; named: a failing visible property's hint holds the bug's catalog hint.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bundle", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--component", action="append")
    args = parser.parse_args()
    from autograder import KIT, i18n, registry
    from autograder.bugs import catalog, make_submission
    from autograder.student_code import InProcessStudentCode
    from autograder.suite import core

    visible = [p for p in registry.load() if p.visible]
    if (
        args.bundle
    ):  # no by-hand models, nor the components whose self-check the bundle does not ship
        from autograder import release
        from autograder.suite import graded

        graded.as_in_the_bundle()

        visible = [p for p in visible if not release.graded_only(p)]
    rows = {}
    with tempfile.TemporaryDirectory() as tmp, i18n.chosen("en"):
        for bug in catalog():
            if args.component and bug.component not in args.component:
                continue
            folder = make_submission(
                bug, KIT / "solutions", Path(tmp) / bug.id.replace(":", "-") / "sub"
            )
            student = InProcessStudentCode(folder, bug.id)
            failed = [
                o
                for p in visible
                if p.component == bug.component
                for o in [core.run_property(p, student)]
                if not o.passed
            ]
            rows[bug.id] = {
                "caught": bool(failed),
                "named": any(bug.hint.lower() in o.hint.lower() for o in failed),
            }
            print(bug.id, rows[bug.id], flush=True)
    caught = sum(r["caught"] for r in rows.values())
    named = sum(r["named"] for r in rows.values())
    print(f"{len(rows)} bugs: {caught} caught by a visible property, {named} named by its hint")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
