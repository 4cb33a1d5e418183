"""`python -m autograder grade` and `python -m autograder gradescope`: arguments and entry point.

Kept free of heavy imports: the parser is built for every command. The class report that `grade` and `merge`
write when they finish is the caller's to give (`write_report`: autograder/cli.py passes the report's `write`):
the judge grades, the report reads what it wrote, and neither imports the other.
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
    _add_run_arguments(p)
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
    p.add_argument(
        "--shard",
        metavar="K/N",
        help="grade only shard K of N (by a hash of each submission's id; docs/cluster.md); "
        "`python -m autograder merge` joins the N outputs",
    )
    add_lang_argument(p)
    add_lms_arguments(p)


def _add_run_arguments(p: argparse.ArgumentParser) -> None:
    """What grade reads and writes, and what its processes may use: the submissions, the output, the jobs,
    the timeouts and the memory."""
    p.add_argument(
        "submissions",
        type=Path,
        nargs="?",
        help="a folder of student folders, each laid out like exercises/, or an LMS download (Moodle's or "
        "Canvas's, folders or flat files, zipped or not) (default: the sample class)",
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


def add_lms_arguments(p: argparse.ArgumentParser) -> None:
    """The roster and the LMS exports' options, on `grade` and `report` (docs/report.md, "LMS")."""
    p.add_argument(
        "--roster",
        type=Path,
        help="the LMS's gradebook export (Canvas's or Moodle's CSV): joined to the submissions, fills the "
        "exports' identity columns; a roster student with no submission gets 0",
    )
    p.add_argument(
        "--assignment",
        default="",
        help='the LMS files\' grade column, e.g. "Práctica 2 (777)" (Canvas: the title and its assignment '
        "id; default: the roster's own assignment column)",
    )
    p.add_argument(
        "--scale", type=float, metavar="MAX", help="the LMS grade out of MAX (e.g. 10), not points"
    )
    p.add_argument(
        "--components",
        action="store_true",
        help="the LMS files get a column per component besides the total",
    )


def lms_options(args):
    from ..lms.roster import LmsOptions, RosterError, read

    if args.scale is not None and not args.scale > 0:
        raise SystemExit("--scale must be a positive number")
    if (
        args.roster is not None
    ):  # read now: a roster the kit cannot read stops before anything is graded
        try:
            read(args.roster)
        except RosterError as exc:
            raise SystemExit(str(exc)) from None
    return LmsOptions(args.roster, args.assignment, args.scale, args.components)


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
        roster=args.roster,
        shard=_shard(args.shard),
    )


def _shard(text: str | None):
    from .shards import Shard, ShardError

    try:
        return Shard.parse(text) if text else None
    except ShardError as exc:
        raise SystemExit(str(exc)) from None


def add_merge_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "shards", type=Path, nargs="+", help="the OUT folders of `grade --shard K/N`, any order"
    )
    p.add_argument("--out", type=Path, required=True, help="the merged output folder")
    p.add_argument(
        "--submissions",
        type=Path,
        help="the whole class's submissions, for the report's similarity",
    )
    p.add_argument(
        "--report",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="write OUT/report.html over the whole class (default: yes)",
    )
    add_lang_argument(p)
    add_lms_arguments(p)


def merge_main(args, write_report) -> int:
    """`python -m autograder merge`: the shards' outputs into the OUT a single run writes; then, with --report,
    the class report over them (write_report(out, submissions, lang, lms) -> the page's path)."""
    from .. import i18n
    from ..i18n import _
    from .shards import ShardError, merge

    lms = lms_options(args)
    try:
        ids = merge(args.shards, args.out)
    except ShardError as exc:
        raise SystemExit(str(exc)) from None
    with i18n.chosen(args.lang or i18n.current_language()):
        print(
            _("{n} students merged from {k} shards into {out}").format(
                n=len(ids), k=len(args.shards), out=args.out
            )
        )
        if args.report:
            print(
                _("class report: {path}").format(
                    path=write_report(args.out, args.submissions, args.lang, lms)
                )
            )
    return 0


def main(args, write_report) -> int:
    """`grade` (then, with --report, the class report: write_report(out, submissions, lang, lms) -> the page's
    path) or `gradescope`."""
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

    from .. import i18n, registry
    from ..i18n import _
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
    options, lms = options_from(args), lms_options(args)
    start = time.perf_counter()
    graded = grade(submissions, out, options, console if not args.quiet else None)
    wall = time.perf_counter() - start
    # the console speaks the course's language, as the files do
    with i18n.chosen(args.lang or i18n.current_language()):
        render_gradebook(graded, registry.load(options.include_hidden), console)
        _print_problems(out, console)
        if args.report:  # after the grades are written: a report that fails costs no grade
            _write_report(write_report, out, submissions, args.lang, lms, console)
        errors = [e for r in graded.values() for e in r.errors]
        console.print(
            _(
                "{n} submissions graded in {seconds} s with --jobs {jobs}; results in {out} (gradebook.csv, "
                "class.json, <id>/results.json, feedback.html)"
            ).format(n=len(graded), seconds=f"{wall:.1f}", jobs=options.jobs, out=out),
            markup=False,
            highlight=False,
        )
    for e in errors:
        console.print(plain_log(valid_text(e)), style="red", markup=False, highlight=False)
    return 2 if errors else 0


def _write_report(write, out: Path, submissions: Path, lang, lms, console) -> None:
    from ..i18n import _

    try:
        console.print(_("class report: {path}").format(path=write(out, submissions, lang, lms)))
    except Exception as exc:  # noqa: BLE001 - said (even with --quiet); `report OUT` can retry
        print(f"the class report failed: {type(exc).__name__}: {exc}", file=sys.stderr)


def _print_problems(out: Path, console) -> None:
    """The class index's problems (names, the roster's join), each a plain line: names are never markup."""
    from ..lms.identity import read_index
    from .outputs import plain_log

    index = read_index(out)
    for line in (index.problems + index.roster_problems) if index else ():
        console.print(plain_log(line), style="yellow", markup=False, highlight=False)
