"""Submissions from recipes: the sample class (examples/class.toml) and the test classes.

A recipe names how a student folder is made, so examples/ holds no copy of the solutions:
    reference              solutions/ as is
    stubs                  exercises/ as is
    bug:<component>:<name>  the reference with one cataloged bug (autograder/bugs)
    missing:<component>    the reference without that file
    syntax:<component>     the reference with a syntax error in that file
    partial:<k>            the first k components done (the reference), the rest untouched stubs
    hostile:<name>         the reference with examples/hostile/<name>/*.py over it; a file named
                           <module>.append.py is appended to the reference's <module>.py instead (an attack
                           that redefines one function or class needs no copy of the rest)
    control:<name>         the same, minus the lines between "# >>> hostile" and "# <<< hostile" (what the
                           hostile file earns honestly)
"""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

from .. import KIT

EXAMPLES = KIT / "examples"
CLASS = EXAMPLES / "class.toml"
HOSTILE = EXAMPLES / "hostile"
_BLOCK = re.compile(r"^[ \t]*# >>> hostile.*?^[ \t]*# <<< hostile[^\n]*\n", re.S | re.M)


def hostile_names() -> list[str]:
    return sorted(
        p.name for p in HOSTILE.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))
    )


def _has_code(source: str) -> bool:
    """Whether anything but comments and blank lines is left."""
    return any(line.strip() and not line.lstrip().startswith("#") for line in source.splitlines())


def without_hostile_blocks(source: str) -> str:
    return _BLOCK.sub("", source)


def make(recipe: str, dest: Path, solutions: Path = KIT / "solutions") -> Path:
    kind, _, arg = recipe.partition(":")
    base = KIT / "exercises" if kind == "stubs" else solutions
    dest.mkdir(parents=True)
    for f in sorted(base.glob("*.py")):
        if f.name != "__init__.py":
            shutil.copyfile(f, dest / f.name)
    if kind in ("reference", "stubs"):
        pass
    elif kind == "bug":
        from ..bugs import catalog

        bug = {b.id: b for b in catalog()}.get(arg)
        if bug is None:
            raise ValueError(f"no cataloged bug {arg!r}")
        path = dest / f"{bug.component}.py"
        path.write_text(bug.apply(path.read_text()))
    elif kind == "missing":
        (dest / f"{arg}.py").unlink()
    elif kind == "partial":
        from ..components import NAMES

        for n in NAMES[int(arg) :]:
            shutil.copyfile(KIT / "exercises" / f"{n}.py", dest / f"{n}.py")
    elif kind == "syntax":
        path = dest / f"{arg}.py"
        path.write_text(path.read_text() + "\n\ndef broken(:\n    pass\n")
    elif kind in ("hostile", "control"):
        folder = HOSTILE / arg
        if not folder.is_dir():
            raise ValueError(f"no hostile submission {arg!r} in {HOSTILE}")
        for f in sorted(folder.glob("*.py")):
            text = f.read_text()
            text = text if kind == "hostile" else without_hostile_blocks(text)
            if f.name.endswith(".append.py"):
                if kind == "control" and not _has_code(text):
                    # the attack's comments only: the reference's file byte for byte, whose sections a class
                    # grades once (24 of the hostile controls: the same points as with the comments)
                    continue
                target = dest / f.name.replace(".append.py", ".py")
                target.write_text(target.read_text() + "\n\n" + text)
            else:
                (dest / f.name).write_text(text)
    else:
        raise ValueError(f"unknown recipe {recipe!r}")
    return dest


def materialize(spec: Path | dict, dest: Path) -> Path:
    """Write one folder per student of `spec` (a class.toml, or {student: recipe}) into `dest`."""
    students = spec if isinstance(spec, dict) else tomllib.loads(Path(spec).read_text())["students"]
    dest.mkdir(parents=True, exist_ok=True)
    for name, recipe in students.items():
        make(recipe, dest / name)
    return dest
