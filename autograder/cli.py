"""python -m autograder COMMAND: the kit's commands (a student bundle has `check` only)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

from . import i18n
from .components import NAMES
from .i18n import N_, _, ngettext

DESCRIPTION = N_(
    "python -m autograder COMMAND: the kit's commands (a student bundle has `check` only)."
)


# argparse's own messages that a command line can meet (Python 3.11's msgids; another version's that differ stay
# English), in the kit's catalog: ArgumentParser looks them up there.
ARGPARSE_MESSAGES = (
    N_("%(prog)s: error: %(message)s\n"),
    N_("argument %(argument_name)s: %(message)s"),
    N_("invalid choice: %(value)r (choose from %(choices)s)"),
    N_("invalid %(type)s value: %(value)r"),
    N_("the following arguments are required: %s"),
    N_("unrecognized arguments: %s"),
    N_("expected one argument"),
    N_("expected at most one argument"),
    N_("expected at least one argument"),
    N_("ambiguous option: %(option)s could match %(matches)s"),
    N_("ignored explicit argument %r"),
    N_("not allowed with argument %s"),
    N_("one of the arguments %s is required"),
    N_("unknown parser %(parser_name)r (choices: %(choices)s)"),
)


@contextlib.contextmanager
def _argparse_in_language():
    """argparse looks its messages up with gettext's global domain, which this kit does not install: for the
    block, its lookups go through the kit's catalog instead, in the current language."""
    saved = argparse._, argparse.ngettext
    argparse._, argparse.ngettext = _, ngettext
    try:
        yield
    finally:
        argparse._, argparse.ngettext = saved


class ArgumentParser(argparse.ArgumentParser):
    """Its errors ("invalid choice", "the following arguments are required") in the current language."""

    def parse_args(self, args=None, namespace=None):  # "unrecognized arguments" is written here
        with _argparse_in_language():
            return super().parse_args(args, namespace)

    # a subcommand's parser is called with this
    def parse_known_args(self, args=None, namespace=None):
        with _argparse_in_language():
            return super().parse_known_args(args, namespace)


class HelpFormatter(argparse.HelpFormatter):
    """argparse's "usage: " in the current language (argparse translates through gettext's global domain,
    which this kit does not install)."""

    def add_usage(self, usage, actions, groups, prefix=None):
        super().add_usage(usage, actions, groups, _("usage: ") if prefix is None else prefix)


def _in_language(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """argparse's own titles and -h's help, which it writes at construction, in the current language."""
    parser._positionals.title = _("positional arguments")
    parser._optionals.title = _("options")
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            action.help = _("show this help message and exit")
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The parser, its help in the current language (main reads `--lang` before building it)."""
    parser = _in_language(
        ArgumentParser(
            prog="python -m autograder", description=_(DESCRIPTION), formatter_class=HelpFormatter
        )
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=ArgumentParser)

    p = _in_language(
        sub.add_parser(
            "check",
            help=_("run the property suite in-process on a submission folder"),
            formatter_class=HelpFormatter,
        )
    )
    p.add_argument(
        "path",
        type=Path,
        nargs="?",
        default=Path("exercises"),
        help=_("a folder of <component>.py files, or of the course notebooks (default: exercises)"),
    )
    p.add_argument("--component", choices=NAMES, help=_("check this component only"))
    p.add_argument("--json", metavar="FILE", help=_("also write Gradescope results.json"))
    p.add_argument("--no-hidden", action="store_true", help=_("visible properties only"))
    p.add_argument("-v", "--verbose", action="store_true", help=_("print every failure in full"))
    p.add_argument(
        "--jobs",
        type=int,
        default=None,
        help=_(
            "components checked at once, each in its own process (default: the cores; 1: all in this "
            "process, for debugging)"
        ),
    )
    i18n.add_language_argument(p)

    if not (Path(__file__).resolve().parent / "judge").is_dir():
        return parser  # the student bundle ships the self-check only: no judge, no stubs, no course builder
    _add_bundle_commands(sub)
    _add_grading_commands(sub)
    _add_course_commands(sub)
    return parser


def _add_bundle_commands(sub) -> None:
    """The instructor's commands that write the kit's derived files and the student bundle."""
    p = sub.add_parser(
        "generate",
        help="regenerate every derived file: exercises/ from solutions/, the README's and docs' generated "
        "blocks, the translation catalogs' messages",
    )
    p.add_argument(
        "--check", action="store_true", help="exit 1 naming each stale file, write nothing"
    )

    p = sub.add_parser(
        "release", help="build the student bundle (no solutions, no hidden properties)"
    )
    p.add_argument("dest", type=Path)
    p.add_argument(
        "--lang",
        choices=i18n.LANGUAGES,
        default=None,
        help="the bundle's default language: its README and what its checker prints (default: none "
        "remembered, the student's locale decides)",
    )


def _add_grading_commands(sub) -> None:
    """The instructor's commands that grade a class and report on it (the judge's arguments: judge/cli.py)."""
    from .judge.cli import (
        add_grade_arguments,
        add_gradescope_arguments,
        add_lms_arguments,
        add_merge_arguments,
    )

    p = sub.add_parser(
        "grade", help="grade a class in sandboxed workers (no folder: the bundled sample class)"
    )
    add_grade_arguments(p)
    p = sub.add_parser(
        "report", help="the class report of a graded OUT folder: report.html, report.json, LMS CSVs"
    )
    p.add_argument("out", type=Path, help="the folder `grade --out` wrote")
    p.add_argument(
        "--submissions", type=Path, help="the students' folders, for the similarity section"
    )
    p.add_argument("--lang", choices=i18n.LANGUAGES, help="the report's language (as grade's)")
    add_lms_arguments(p)
    p = sub.add_parser(
        "merge", help="merge the outputs of `grade --shard K/N` into one OUT (docs/cluster.md)"
    )
    add_merge_arguments(p)
    p = sub.add_parser(
        "gradescope", help="build a Gradescope autograder bundle (setup.sh, run_autograder)"
    )
    add_gradescope_arguments(p)


def _add_course_commands(sub) -> None:
    """The instructor's commands for the course: its nbgrader notebooks, its translation catalogs."""
    p = sub.add_parser(
        "nbgrader-course", help="write an nbgrader course: one notebook per component"
    )
    p.add_argument("dest", type=Path)
    p.add_argument("--components", help="comma-separated subset (default: all, in teaching order)")
    p.add_argument(
        "--assignment", default="transformer", help="assignment name (default: transformer)"
    )
    p.add_argument(
        "--grader",
        choices=("judge", "kernel"),
        default="judge",
        help="who runs the student's code at autograde (docs/nbgrader.md)",
    )
    p.add_argument(
        "--timeout", type=int, default=60, help="kernel mode: seconds per cell (default 60)"
    )
    p.add_argument(
        "--lang",
        choices=i18n.LANGUAGES,
        default=None,
        help="the course's language: the notebooks' text, and what their test cells print at grading "
        "(default: English)",
    )

    p = sub.add_parser(
        "i18n",
        help="the translation catalogs: extract the messages, update, compile (docs/i18n.md)",
    )
    p.add_argument("action", choices=("extract", "update", "compile", "check"))


def _class_report(out: Path, submissions: Path | None, lang: str | None, lms) -> Path:
    """What `grade` and `merge` end with (--report): the class report of OUT. Given to the judge from here, above
    both, so that the judge does not import the report (benchmarks/import_graph.py)."""
    from .report import write

    return write(out, submissions, lang, lms)


def main(argv=None, process_ends: bool = False) -> int:
    """process_ends: this process ends when main returns (`python -m autograder`), so a check may end it at once."""
    argv = sys.argv[1:] if argv is None else list(argv)
    i18n.set_language(i18n.language_in_argv(argv))
    args = build_parser().parse_args(argv)
    if args.command == "check":
        from .check import main as check

        code = check(args)
        if process_ends:
            # The check has written and closed what it writes and reaped its workers: the interpreter's
            # teardown (every module's objects freed, torch's among them) is 0.15 s of a 3.4 s check that the
            # student waits for and nothing reads. A student's atexit handler or thread (--jobs 1 runs their
            # code here) does not run or wait either.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        return code
    if args.command == "generate":
        from . import generate

        return generate.main(args.check)
    if args.command == "release":
        from .release import build

        # in the bundle's language (--lang, which also chose this process's): the instructor chose it
        print(_("student bundle written to {path}").format(path=build(args.dest, args.lang)))
        return 0
    if args.command == "i18n":
        from . import catalogs

        return catalogs.main(args.action)
    if args.command == "report":
        from .judge.cli import lms_options
        from .report import write

        path = write(args.out, args.submissions, args.lang, lms_options(args))
        print(f"class report written to {path}")
        return 0
    if args.command == "merge":
        from .judge.cli import merge_main

        return merge_main(args, _class_report)
    if args.command in ("grade", "gradescope"):
        from .judge.cli import main as judge

        return judge(args, _class_report)
    if args.command == "nbgrader-course":
        from .notebooks.course import build as course

        names = args.components.split(",") if args.components else None
        bad = sorted(set(names or ()) - set(NAMES))
        if bad:
            raise SystemExit(f"unknown components: {', '.join(bad)}")
        dest = course(args.dest, names, args.assignment, args.grader, args.timeout, args.lang)
        print(
            f"nbgrader course written to {dest}: cd there, then `nbgrader generate_assignment {args.assignment}`"
        )
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
