"""`python -m autograder grade` and `python -m autograder gradescope`: arguments and entry point.

Kept free of heavy imports: the parser is built for every command.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..i18n import LANGUAGES
from .limits import Limits

VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")


def add_grade_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "submissions",
        type=Path,
        nargs="?",
        help="a folder of student folders, each laid out like exercises/ (default: the sample class)",
    )
    p.add_argument("--out", type=Path, help="output folder (default: a new temporary folder)")
    p.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="grading processes (default: cores)"
    )
    add_timeout_argument(p)
    p.add_argument(
        "--section-timeout",
        type=float,
        default=Limits.section_timeout,
        help=f"seconds per component (default {Limits.section_timeout:g})",
    )
    p.add_argument(
        "--submission-timeout",
        type=float,
        default=Limits.submission_timeout,
        help=f"seconds per student (default {Limits.submission_timeout:g})",
    )
    p.add_argument(
        "--memory",
        type=int,
        default=Limits.memory_mb,
        metavar="MIB",
        help=f"address space a worker may add to the zygote's (default {Limits.memory_mb} MiB)",
    )
    p.add_argument(
        "--hidden",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run the hidden properties too (default: yes)",
    )
    p.add_argument(
        "--hidden-visibility",
        choices=VISIBILITIES,
        default="after_due_date",
        help="Gradescope visibility of hidden properties' results (default after_due_date)",
    )
    p.add_argument(
        "--only",
        nargs="+",
        metavar="STUDENT",
        help="regrade these students, merge into the gradebook",
    )
    p.add_argument(
        "--no-cache", action="store_true", help="grade identical sections again instead of reusing"
    )
    p.add_argument(
        "--hide",
        action="append",
        default=[],
        metavar="DIR",
        help="another folder workers must not see",
    )
    p.add_argument(
        "--report",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="write OUT/report.html, the class report, when grading ends (default: yes)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar, no table")
    add_lang_argument(p)


def add_lang_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--lang",
        choices=LANGUAGES,
        help="the language of what students read: messages, feedback, results.json (default: "
        "$TRANSFORMER_KIT_LANG, else the locale's)",
    )


def add_timeout_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--timeout",
        type=float,
        default=Limits.op_timeout,
        help=f"seconds per call into student code (default {Limits.op_timeout:g})",
    )


def add_gradescope_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dest", type=Path, help="the zip to write, e.g. autograder.zip")
    add_timeout_argument(p)
    p.add_argument("--hidden-visibility", choices=VISIBILITIES, default="after_due_date")
    add_lang_argument(p)


def options_from(args):
    from .scheduler import Options

    limits = Limits(
        op_timeout=args.timeout,
        section_timeout=args.section_timeout,
        submission_timeout=args.submission_timeout,
        memory_mb=args.memory,
        hide=tuple(str(Path(h).resolve()) for h in args.hide),
    )
    return Options(
        jobs=max(1, args.jobs),
        limits=limits,
        include_hidden=args.hidden,
        hidden_visibility=args.hidden_visibility,
        only=args.only,
        cache=not args.no_cache,
        lang=args.lang,
    )


def main(args) -> int:
    if args.command == "gradescope":
        from .gradescope import build

        path = build(
            args.dest,
            timeout=args.timeout,
            hidden_visibility=args.hidden_visibility,
            lang=args.lang,
        )
        print(f"Gradescope autograder bundle written to {path}")
        return 0
    import tempfile
    import time

    from rich.console import Console

    from ..suite import core
    from . import sample
    from .outputs import plain_log, render_gradebook
    from .scheduler import grade
    from .wire import valid_text

    console = Console(quiet=args.quiet)
    submissions, out = args.submissions, args.out
    if submissions is None:
        base = Path(tempfile.mkdtemp(prefix="kit-sample-class-"))
        submissions = sample.materialize(sample.CLASS, base / "submissions")
        out = out or base / "out"
        console.print(
            f"grading the sample class ({sample.CLASS.name}) materialized in {submissions}"
        )
    elif out is None:
        out = Path(tempfile.mkdtemp(prefix="kit-grades-"))
    options = options_from(args)
    start = time.perf_counter()
    graded = grade(submissions, out, options, console if not args.quiet else None)
    wall = time.perf_counter() - start
    render_gradebook(graded, core.load(options.include_hidden), console)
    if args.report:  # after the grades are written: a report that fails costs no grade
        from ..report import write

        try:
            console.print(f"class report: {write(out, submissions, args.lang)}")
        except Exception as exc:  # noqa: BLE001 - said (even with --quiet); `report OUT` can retry
            print(f"the class report failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    errors = [e for r in graded.values() for e in r.errors]
    console.print(
        f"{len(graded)} submissions graded in {wall:.1f} s with --jobs {options.jobs}; "
        f"results in {out} (gradebook.csv, <student>/results.json, feedback.html)"
    )
    for e in errors:
        console.print(plain_log(valid_text(e)), style="red", markup=False, highlight=False)
    return 2 if errors else 0
