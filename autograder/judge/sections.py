"""Sections: what the judge grades, one worker each.

A student's grade is made of sections, one per component: a fresh worker holding the student's file for that
component, the *reference* files for its dependencies (components.py) and the student's helper files, never
the reference of the component itself. So a bug costs points where it lives. A small integration share
(INTEGRATION_SHARE of a dependent component's points) re-runs a few of its properties in one more section
that holds the student's own files only.

A section is a deterministic function of its files: its key is their hash (with the run's settings), so the
scheduler can reuse a result for a byte-identical section.
"""

from __future__ import annotations

import hashlib
import pickle
from dataclasses import dataclass
from pathlib import Path

from ..components import COMPONENTS, NAMES
from ..i18n import _
from ..results import INTEGRATION
from ..suite import core
from .records import SectionOrder

INTEGRATION_SHARE = 0.10
INTEGRATION_PROPS = (
    2  # properties re-run with the student's own dependencies, per dependent component
)
MAX_FILE_BYTES = 1 << 20
MAX_FILES = 64
MAX_SUBMISSION_BYTES = 4 << 20  # all of a submission's files: what it may cost the judge to load
# A module's file name: an identifier of at most this many UTF-8 bytes. Its bytecode is cached under a name
# about 20 characters longer (name.cpython-312.pyc), and a file name may have 255 bytes.
MAX_NAME_BYTES = 100


@dataclass
class Section:
    label: str  # "<student>/<name>": for the progress bar and the instructor's log only
    name: str  # the component's name, or INTEGRATION
    files: dict[str, bytes]
    props: list[tuple[str, float | None]]  # (property id, points of its integration re-run or None)
    picture: bool = False
    # the files of `files` that are the reference's (the dependencies)
    reference: tuple[str, ...] = ()
    key: str = ""  # set by plan(): the hash of everything the result depends on

    def order(self, budget_s: float) -> SectionOrder:
        """The grading process's order for this section."""
        return SectionOrder(
            key=self.key,
            component=self.name,
            label=_("the {component} section").format(component=self.name),
            files=self.files,
            props=self.props,
            picture=self.picture,
            budget_s=budget_s,
            reference=self.reference,
        )


def discover(submissions: Path) -> list[str]:
    return sorted(
        p.name
        for p in Path(submissions).iterdir()
        if p.is_dir() and not p.is_symlink() and not p.name.startswith((".", "_"))
    )


def read_files(folder: Path) -> tuple[dict[str, bytes], list[str]]:
    """The student's .py files: regular files only (a symlink could point at the reference), bounded."""
    files, notes, total = {}, [], 0
    for p in sorted(Path(folder).iterdir()):
        if not p.name.endswith(".py") or p.name == "__init__.py":
            continue
        shown = ascii(p.name)  # the instructor's log: a name may hold anything but "/"
        if not module_name(p.name):
            notes.append(
                f"{shown} ignored: not a module name (an identifier of at most {MAX_NAME_BYTES} bytes)"
            )
            continue
        if p.is_symlink() or not p.is_file():
            notes.append(f"{shown} ignored: not a regular file")
            continue
        if len(files) >= MAX_FILES:
            notes.append(f"{shown} ignored: more than {MAX_FILES} files")
            continue
        if p.stat().st_size > MAX_FILE_BYTES:
            notes.append(f"{shown} ignored: larger than {MAX_FILE_BYTES >> 10} KiB")
            continue
        data = p.read_bytes()
        if len(data) > MAX_FILE_BYTES:
            notes.append(f"{shown} ignored: larger than {MAX_FILE_BYTES >> 10} KiB")
            continue
        if total + len(data) > MAX_SUBMISSION_BYTES:
            notes.append(
                f"{shown} ignored: the files past it exceed {MAX_SUBMISSION_BYTES >> 20} MiB"
            )
            continue
        total += len(data)
        files[p.name] = data
    return files, notes


def module_name(file: str) -> bool:
    """Is `file` a module's file name the judge loads: an identifier (valid text) with ".py", short enough?"""
    stem = file.removesuffix(".py")
    try:
        size = len(stem.encode("utf-8"))
    except UnicodeEncodeError:  # a name decoded with surrogateescape: not valid text
        return False
    return stem.isidentifier() and size <= MAX_NAME_BYTES


def integration_props(props: list[core.Property]) -> dict[str, list[tuple[str, float]]]:
    """Per dependent component: the properties re-run with the student's own dependencies, and their points."""
    chosen = {}
    for c in COMPONENTS:
        if not c.deps:
            continue
        mine = [p for p in props if p.component == c.name]
        picks = [p for p in mine if p.visible and not core.is_static(p)][:INTEGRATION_PROPS]
        if picks:  # in halves of a point, so that sums stay exact
            share = max(
                0.5, round(2 * INTEGRATION_SHARE * sum(p.points for p in mine) / len(picks)) / 2
            )
            chosen[c.name] = [(p.id, share) for p in picks]
    return chosen


def plan(
    student: str,
    files: dict[str, bytes],
    reference: dict[str, bytes],
    props: list[core.Property],
    salt: str,
) -> list[Section]:
    """The sections of one student, in component order, then the integration section."""
    helpers = {n: d for n, d in files.items() if n[:-3] not in NAMES}
    sections = []
    for c in COMPONENTS:
        mine = [(p.id, None) for p in props if p.component == c.name]
        if not mine:
            continue
        package = dict(helpers)
        if c.filename in files:
            package[c.filename] = files[c.filename]
        for dep in c.deps:
            package[f"{dep}.py"] = reference[f"{dep}.py"]
        sections.append(
            Section(
                f"{student}/{c.name}",
                c.name,
                package,
                mine,
                reference=tuple(f"{dep}.py" for dep in c.deps),
            )
        )
    integration = [spec for specs in integration_props(props).values() for spec in specs]
    # the picture of the student's own multi-head attention comes from this worker too
    if integration:
        sections.append(
            Section(f"{student}/{INTEGRATION}", INTEGRATION, dict(files), integration, picture=True)
        )
    for s in sections:
        s.key = hashlib.sha256(
            pickle.dumps((salt, s.name, sorted(s.files.items()), s.props, s.picture))
        ).hexdigest()
    return sections
