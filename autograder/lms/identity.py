"""The judge's namespace: every submission gets an id the judge makes, and a student-chosen name is data.

An id is `<slug>-<hash>`: the slug (at most 24 characters of [a-z0-9-], from the name, for the instructor's eye)
and 12 hex digits of the SHA-256 of the submission's source name bytes. So an id is stable (the same download
gives the same ids, and adding or removing a student changes no one else's), differs between case twins, and can
never be one of the judge's own names (`logs`, `gradebook.csv`, ...: none ends in "-" and 12 hex digits).
OUT/<id>/ holds a student's files, OUT/logs/<id>.txt their log, and ids key the gradebook. The class index
(OUT/class.json) says who each id is.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

CLASS_JSON = "class.json"
ID_PATTERN = re.compile(r"^(?:[a-z0-9]+(?:-[a-z0-9]+)*-)?[0-9a-f]{12}$")
DISPLAY_CHARS = 80  # a longer name is shown cut, with "…": the id keeps it apart
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def source_bytes(source: str) -> bytes:
    """A name as the file system gave it (str, decoded with surrogateescape) back to its bytes."""
    return source.encode("utf-8", "surrogateescape")


def submission_id(source: str) -> str:
    """The judge's id for a submission whose source name (folder, file prefix, LMS key) is `source`."""
    digest = hashlib.sha256(source_bytes(source)).hexdigest()[:12]
    text = unicodedata.normalize("NFKD", display(source))
    slug = re.sub(r"[^a-z0-9]+", "-", text.encode("ascii", "ignore").decode().lower()).strip("-")
    slug = slug[:24].strip("-")
    return f"{slug}-{digest}" if slug else digest


def display(name: str) -> str:
    """A name as people read it: valid text (an undecodable byte as its escape), every control or
    direction-changing character as its escape, at most DISPLAY_CHARS characters."""
    try:  # an undecodable byte of a file name (surrogateescape) shown as the byte it was: "caf\xe9"
        text = source_bytes(name).decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a lone surrogate of another origin: its own escape
        text = name.encode("utf-8", "backslashreplace").decode("utf-8")
    text = _CONTROL.sub(lambda m: repr(m.group())[1:-1], text).strip()
    if len(text) > DISPLAY_CHARS:
        text = text[: DISPLAY_CHARS - 1] + "…"
    return text or "?"


@dataclass
class RosterRow:
    """One student of the LMS's own gradebook export (roster.py): what the exports need to name them."""

    name: str  # "Student" (Canvas: "Last, First"), or Moodle's "First name" + " " + "Last name"
    canvas_id: str = ""  # Canvas's "ID": the user id in a download's file names
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""
    id_number: str = ""  # Moodle's "ID number"
    email: str = ""  # Moodle's "Email address"


@dataclass
class Member:
    """One student of the class: a submission, or a roster row without one."""

    id: str
    display: str  # the name to show (escaped already; the roster's when it matched one)
    source: (
        str  # the source name as read (surrogateescape), "" for a roster row without a submission
    )
    lms: str  # the layout: "folder", "moodle", "canvas"; "roster" for a row without a submission
    late: bool | None = (
        None  # what the download records (Canvas's `late` field); None: not recorded
    )
    user_id: str = (
        ""  # the id in the download's names: Canvas's user id, Moodle's participant number
    )
    roster: RosterRow | None = None  # the roster row it matched, if any
    submitted: bool = True
    name: str = ""  # the download's own name for it, shown (display before a roster renamed it)


@dataclass
class ClassIndex:
    """OUT/class.json: who each id is, and what went wrong naming them (one sentence each, escaped)."""

    members: list[Member] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    roster_problems: list[str] = field(
        default_factory=list
    )  # the join's: made again with another roster
    roster: str = ""  # the roster's kind: "canvas", "moodle", or "" without one
    assignment: str = ""  # the roster's own assignment column ("Práctica 2 (777)"), if it had one

    def by_id(self) -> dict[str, Member]:
        return {m.id: m for m in self.members}

    def find(self, name: str) -> Member | None:
        """The member an instructor means by `name`: an id, a source name or a shown name."""
        for key in ("id", "source", "display"):
            for m in self.members:
                if getattr(m, key) == name:
                    return m
        return None


def write_index(out: Path, index: ClassIndex) -> None:
    from ..judge.outputs import write_atomic

    # ensure_ascii: a source name's lone surrogates (undecodable bytes) are escaped and read back exactly
    text = json.dumps(dataclasses.asdict(index), indent=1, ensure_ascii=True) + "\n"
    write_atomic(Path(out) / CLASS_JSON, text)


def read_index(out: Path) -> ClassIndex | None:
    """OUT/class.json, or None if there is none (an OUT graded before the judge kept one)."""
    try:
        data = json.loads((Path(out) / CLASS_JSON).read_text(encoding="utf-8"))
        members = []
        for m in data["members"]:
            row = m.pop("roster", None)
            members.append(Member(**m, roster=RosterRow(**row) if row else None))
        return ClassIndex(
            members,
            list(data["problems"]),
            list(data.get("roster_problems", [])),
            data.get("roster", ""),
            data.get("assignment", ""),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def folder_of(out: Path, source: str) -> Path:
    """OUT/<id>/ of the submission named `source` (its folder's name, say): what a caller that graded one
    folder reads back."""
    index = read_index(out)
    member = index.find(source) if index else None
    return Path(out) / (member.id if member else submission_id(source))


def log_of(out: Path, source: str) -> Path:
    """OUT/logs/<id>.txt of the submission named `source`: its instructor log."""
    return Path(out) / "logs" / f"{folder_of(out, source).name}.txt"
