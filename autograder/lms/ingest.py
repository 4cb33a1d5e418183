"""Submissions as the LMS downloads them, recognised by their layout (docs/judge.md, "The judge's namespace"):

- a folder per student, any name (the kit's own layout);
- Moodle's "Download all submissions": a folder per student `<Full name>_<n>_assignsubmission_file_`, or the
  same prefix on flat files (`<Full name>_<n>_assignsubmission_file_attention.py`);
- Canvas's "Download submissions": flat files `<name>_[late_]<user id>_<submission id>_<file name>`, a re-upload
  numbered before the extension (`attention-1.py`: the highest number is the latest and wins);
- any of them still zipped (the path is a .zip, or a folder holding one .zip and nothing else).

Every submission's module files are copied, bounded as the judge bounds a folder (sections.read_files), into
STAGING/<id>/: the judge and the report read them there, by id. A name is never a path: a zip entry's name is
split into (folder, file) strings, and only a module name (an identifier with .py) is ever written, so no entry
can land outside STAGING (zip-slip), a link is skipped (its mode says so), and a bomb costs at most
MAX_FILE_BYTES + 1 per .py entry read and MAX_ZIP_BYTES in all.
"""

from __future__ import annotations

import re
import stat
import traceback
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from ..i18n import _
from ..judge.sections import (
    MAX_FILE_BYTES,
    MAX_FILES,
    MAX_SUBMISSION_BYTES,
    module_name,
    read_files,
)
from .identity import Member, display, submission_id

MAX_ZIP_ENTRIES = 20_000
MAX_ZIP_BYTES = 256 << 20  # what reading a zip's .py entries may inflate, in all
SKIPPED = {"__MACOSX", "__pycache__"}  # an archiver's or Python's own folders, never a student's
MOODLE_DIR = re.compile(r"^(?P<name>.+)_(?P<n>\d+)_assignsubmission_[a-z]+_$", re.S)
MOODLE_FILE = re.compile(r"^(?P<name>.+)_(?P<n>\d+)_assignsubmission_[a-z]+_(?P<file>.+)$", re.S)
CANVAS_FILE = re.compile(
    r"^(?P<name>[^_]+)_(?:(?P<late>late)_)?(?P<uid>\d+)_(?P<sub>\d+)_(?P<file>.+)$", re.S
)
REUPLOAD = re.compile(r"^(?P<stem>.+?)-(?P<n>\d+)(?P<ext>\.py)$")


@dataclass
class Submission:
    member: Member
    folder: Path  # STAGING/<id>: the module files the judge grades
    # for the instructor's log: what was left out, and why
    notes: list[str] = field(default_factory=list)
    error: str = (
        ""  # a judge error reading them (the instructor's log): nothing of this student was read
    )


@dataclass
class _Group:
    """One student's files while the download is read: (file name, rank, bytes or a reader) per candidate."""

    source: str
    name: str
    lms: str
    user_id: str = ""
    late: bool | None = None
    folders: list[Path] = field(
        default_factory=list
    )  # folders on disk: each read as the judge reads one
    files: list = field(default_factory=list)  # (file name, rank, data: bytes | Path)
    notes: list[str] = field(default_factory=list)


def read_class(path: Path, staging: Path) -> tuple[list[Submission], list[str]]:
    """Every submission in `path` (a folder or a zip), staged under `staging`; and the problems found, one
    sentence each (for the page and the console)."""
    path = Path(path)
    problems: list[str] = []
    zipped = _the_zip(path)
    groups: dict[str, _Group] = {}
    if zipped is not None:
        _read_zip(zipped, groups, problems)
    else:
        _read_folder(path, groups, problems)
    submissions = []
    for g in sorted(groups.values(), key=lambda g: g.source):
        try:
            submissions.append(_stage(g, staging))
        except Exception:  # noqa: BLE001 - one student's files: a judge error for them, never the batch
            sid = submission_id(g.source)
            (staging / sid).mkdir(parents=True, exist_ok=True)
            member = Member(
                sid, display(g.name), g.source, g.lms, g.late, g.user_id, name=display(g.name)
            )
            error = "JUDGE ERROR reading the files: " + traceback.format_exc(limit=6)
            submissions.append(Submission(member, staging / sid, error=error))
    return submissions, problems


def _the_zip(path: Path) -> Path | None:
    if path.is_file():
        return path
    entries = [p for p in path.iterdir() if not p.name.startswith(".")]
    if len(entries) == 1 and entries[0].suffix.lower() == ".zip" and entries[0].is_file():
        return entries[0]
    return None


def _group(groups: dict, source: str, **kw) -> _Group:
    if source not in groups:
        groups[source] = _Group(source, **kw)
    return groups[source]


def moodle_source(m: re.Match) -> str:
    """A Moodle student's source name, whichever submission plugin's folder or file prefix named them (a file
    and an online text submission are two folders of one student)."""
    return f"{m['name']}_{m['n']}_assignsubmission_file_"


def _folder_group(groups: dict, name: str) -> _Group:
    """The group of a student folder: Moodle's `<Full name>_<n>_assignsubmission_<plugin>_`, or any name."""
    m = MOODLE_DIR.match(name)
    if m:
        return _group(groups, moodle_source(m), name=m["name"], lms="moodle", user_id=m["n"])
    return _group(groups, name, name=name, lms="folder")


def _read_folder(path: Path, groups: dict, problems: list[str]) -> None:
    for p in sorted(path.iterdir()):
        if p.name in SKIPPED:
            continue
        if p.name.startswith(".") or p.is_symlink():
            # never graded (a link may point anywhere; a hidden folder is a tool's), but never silently
            if p.is_dir() and _holds_modules(p):
                problems.append(_skipped(p))
            continue
        if p.is_dir():
            _folder_group(groups, p.name).folders.append(p)
        elif p.is_file():
            _flat_file(groups, p.name, p)


def _holds_modules(folder: Path) -> bool:
    try:
        return any(x.name.endswith(".py") for x in folder.iterdir())
    except OSError:
        return False


def _skipped(p: Path) -> str:
    what = _("a link") if p.is_symlink() else _("a hidden folder")
    return _("{name}: not graded ({what}), though it holds Python files.").format(
        name=display(p.name), what=what
    )


def _flat_file(groups: dict, file_name: str, data) -> None:
    """A loose file of a Moodle or Canvas download, into its student's group; any other is not a student's."""
    m = MOODLE_FILE.match(file_name)
    if m:
        g = _group(groups, moodle_source(m), name=m["name"], lms="moodle", user_id=m["n"])
        g.files.append((m["file"], 0, data))
        return
    c = CANVAS_FILE.match(file_name)
    if c:
        g = _group(
            groups, f"{c['name']}_{c['uid']}", name=c["name"], lms="canvas", user_id=c["uid"]
        )
        g.late = bool(g.late) or bool(c["late"])
        again = REUPLOAD.match(c["file"])
        name, rank = (again["stem"] + again["ext"], int(again["n"])) if again else (c["file"], 0)
        g.files.append((name, rank, data))


def _read_zip(path: Path, groups: dict, problems: list[str]) -> None:
    """A zip's entries as names (data, never paths): `folder/file` or a flat `file`, each .py read bounded."""
    budget = MAX_ZIP_BYTES
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            if len(infos) > MAX_ZIP_ENTRIES:
                problems.append(
                    f"{display(path.name)}: more than {MAX_ZIP_ENTRIES} entries: only the first read"
                )
            for info in infos[:MAX_ZIP_ENTRIES]:
                parts = [x for x in info.filename.replace("\\", "/").split("/") if x]
                mode = info.external_attr >> 16
                if info.is_dir() or not parts or stat.S_ISLNK(mode) or info.flag_bits & 1:
                    continue
                if parts[0] in SKIPPED or parts[0].startswith(".") or len(parts) > 2:
                    continue
                if not parts[-1].endswith(".py"):
                    continue
                size_read = min(MAX_FILE_BYTES + 1, budget)
                if size_read <= 0:
                    problems.append(
                        f"{display(path.name)}: past {MAX_ZIP_BYTES >> 20} MiB of files: the rest not read"
                    )
                    break
                with zf.open(info) as f:
                    data = f.read(size_read)
                budget -= len(data)
                if len(parts) == 1:
                    _flat_file(groups, parts[0], data)
                    continue
                _folder_group(groups, parts[0]).files.append((parts[1], 0, data))
    except (OSError, zipfile.BadZipFile, RuntimeError, NotImplementedError, EOFError) as e:
        problems.append(f"{display(path.name)}: not a zip the judge can read ({type(e).__name__})")


def _stage(g: _Group, staging: Path) -> Submission:
    sid = submission_id(g.source)
    member = Member(sid, display(g.name), g.source, g.lms, g.late, g.user_id, name=display(g.name))
    notes = list(g.notes)
    files: dict[str, bytes] = {}
    for folder in g.folders:
        more, found = read_files(folder)
        files.update({k: v for k, v in more.items() if k not in files})
        notes.extend(found)
    files.update(_bounded(g.files, notes, sum(map(len, files.values())), len(files)))
    folder = staging / sid
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return Submission(member, folder, notes)


def _bounded(candidates: list, notes: list[str], total: int, count: int) -> dict[str, bytes]:
    """Loose files as sections.read_files bounds a folder's: module names, regular files, sizes, counts; of a
    name uploaded again, the highest rank (the latest upload)."""
    latest: dict[str, tuple[int, object]] = {}
    for name, rank, data in candidates:
        if name not in latest or rank > latest[name][0]:
            latest[name] = (rank, data)
    files = {}
    for name in sorted(latest):
        data, shown = latest[name][1], ascii(name)
        if not module_name(name) or name == "__init__.py":
            notes.append(f"{shown} ignored: not a module name")
            continue
        if isinstance(data, Path):
            if data.is_symlink() or not data.is_file():
                notes.append(f"{shown} ignored: not a regular file")
                continue
            with open(data, "rb") as f:
                data = f.read(MAX_FILE_BYTES + 1)
        if (
            count >= MAX_FILES
            or len(data) > MAX_FILE_BYTES
            or total + len(data) > MAX_SUBMISSION_BYTES
        ):
            notes.append(f"{shown} ignored: past the judge's limits on files")
            continue
        files[name], total, count = data, total + len(data), count + 1
    return files
