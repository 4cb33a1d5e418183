"""The Gradescope autograder bundle, and what runs inside it.

    python -m autograder gradescope autograder.zip

writes a zip with setup.sh (installs the pinned dependencies), run_autograder and the kit (the autograder
package with its hidden properties and its compiled catalogs, the reference solutions; `--lang es` bakes the
course's language into run_autograder: every student's results.json is in it). Gradescope unpacks it to
/autograder/source and, for every submission, runs run_autograder, which runs
`python -m autograder.judge.gradescope run`: the same judge as `grade`, on one student, writing
/autograder/results/results.json. The root is $AUTOGRADER_ROOT (default /autograder), so a test can run it
against a simulated tree.
"""

from __future__ import annotations

import argparse
import os
import shutil
import stat
import sys
import tempfile
import zipfile
from pathlib import Path

from .. import KIT
from ..components import NAMES
from ..i18n import LANGUAGES
from .limits import Limits

SETUP = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image.
set -euo pipefail
cd /autograder/source
apt-get update -qq && apt-get install -y -qq python3 python3-pip python3-venv >/dev/null
python3 -m venv /autograder/venv
# torch from the CPU index: the default one pulls several GB of CUDA wheels.
/autograder/venv/bin/pip install -q --index-url https://download.pytorch.org/whl/cpu -c constraints.txt torch
/autograder/venv/bin/pip install -q -c constraints.txt numpy 'hypothesis>=6.100' 'rich>=13' 'matplotlib>=3.7'
"""

RUN = """#!/usr/bin/env bash
# Gradescope runs this for every submission: grade /autograder/submission into /autograder/results/results.json.
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
PYTHON="${{PYTHON:-$ROOT/venv/bin/python}}"
cd "$ROOT/source" || exit 1
exec "$PYTHON" -m autograder.judge.gradescope run --root "$ROOT" --timeout {timeout} \
    --hidden-visibility {visibility}{lang}
"""


def _add(z: zipfile.ZipFile, arcname: str, data: bytes, executable: bool = False) -> None:
    # fixed: the same kit, the same zip
    info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
    info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, data)


def build(
    dest: Path,
    timeout: float = Limits.op_timeout,
    hidden_visibility: str = "after_due_date",
    lang: str | None = None,
) -> Path:
    """lang: the course's language (None: the language of Gradescope's container, English)."""
    if lang is not None and lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}: choose from {', '.join(LANGUAGES)}")
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    package = KIT / "autograder"
    files = [p for p in sorted(package.rglob("*.py")) if "__pycache__" not in p.parts]
    files += sorted(package.glob("locale/*/LC_MESSAGES/*.mo"))  # the catalogs, compiled
    files += [KIT / "solutions" / f"{n}.py" for n in NAMES] + [KIT / "solutions" / "__init__.py"]
    with zipfile.ZipFile(dest, "w") as z:
        _add(z, "setup.sh", SETUP.encode(), executable=True)
        _add(
            z,
            "run_autograder",
            RUN.format(
                timeout=timeout,
                visibility=hidden_visibility,
                lang=f" --lang {lang}" if lang else "",
            ).encode(),
            executable=True,
        )
        for extra in ("constraints.txt", "pyproject.toml"):
            if (KIT / extra).is_file():
                _add(z, extra, (KIT / extra).read_bytes())
        for p in files:
            if p.is_file():
                _add(z, p.relative_to(KIT).as_posix(), p.read_bytes())
    return dest


def find_files(submission: Path) -> dict[str, Path]:
    """The exercise files wherever the student put them (Gradescope keeps uploaded folders): shallowest wins."""
    found: dict[str, Path] = {}
    for p in sorted(Path(submission).rglob("*.py"), key=lambda p: (len(p.parts), str(p))):
        if p.stem in NAMES and p.name not in found and p.is_file() and not p.is_symlink():
            found[p.name] = p
    return found


def run(root: Path, timeout: float, hidden_visibility: str, lang: str | None = None) -> int:
    from .scheduler import Options, grade

    root = Path(root).resolve()
    results = root / "results"
    results.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gradescope-"))
    try:
        student = work / "submissions" / "student"
        student.mkdir(parents=True)
        for name, path in find_files(root / "submission").items():
            shutil.copyfile(path, student / name)
        options = Options(
            limits=Limits(op_timeout=timeout, hide=(str(root),)),
            hidden_visibility=hidden_visibility,
            lang=lang,
        )
        graded = grade(work / "submissions", work / "out", options)
        # Written whatever happened: a judge error on part of the submission is a line in it (and the
        # exit status), never a submission with no results at all.
        mine = work / "out" / graded["student"].key  # the judge's id for the folder "student"
        shutil.copyfile(mine / "results.json", results / "results.json")
        if graded["student"].errors:
            print("\n".join(graded["student"].errors), file=sys.stderr)
            return 2
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.judge.gradescope")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="grade $ROOT/submission into $ROOT/results/results.json")
    p.add_argument(
        "--root", type=Path, default=Path(os.environ.get("AUTOGRADER_ROOT", "/autograder"))
    )
    p.add_argument("--timeout", type=float, default=Limits.op_timeout)
    p.add_argument("--hidden-visibility", default="after_due_date")
    p.add_argument(
        "--lang", choices=LANGUAGES, help="what the student reads (default: the locale's)"
    )
    args = parser.parse_args(argv)
    return run(args.root, args.timeout, args.hidden_visibility, args.lang)


if __name__ == "__main__":
    sys.exit(main())
