"""What the judge writes, from memory and by itself: results.json, the feedback, the instructor's log, the
gradebook (a file and a table) and timing.json. A student's files are written atomically once all their
sections are graded, so a crash of the batch loses nothing."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import passes, results
from ..components import COMPONENTS, NAMES
from ..i18n import N_, _
from ..suite import core
from . import feedback
from .feedback import JUDGE_ERROR_LINE
from .records import OutcomeRecord, SectionResult
from .sections import Section, integration_props
from .wire import valid_text

# Text from the code under test that the feedback shows, per submission: the message and detail (UTF-8 bytes)
# of each outcome the student's code itself ended (an error, a forbidden call, a timeout, a crash; the words
# of a failed comparison and of a stub are the judge's own, and a stub shows no traceback). Each section has
# a smaller budget of its own (grading_process.SECTION_TEXT_BUDGET). Past it, an outcome keeps its verdict and
# a judge-written sentence: whatever a worker holds (reference bytecode beside the student's code) leaves
# through the feedback at this rate at most (docs/judge.md, "What can still leave"). An honest error shows
# ~0.3 KiB of message and ~0.6 KiB of traceback.
SUBMISSION_TEXT_BUDGET = 8 << 10
TEXT_OMITTED = N_(
    "The rest of this message is omitted (the feedback shows at most {kib} KiB of text from your "
    "code per submission)"
)
TEXT_OMITTED_SECTION = N_(
    "The rest of this message is omitted (the feedback shows at most {kib} KiB of text from your "
    "code per component)"
)

SHORT = {**{c.name: c.short for c in COMPONENTS}, results.INTEGRATION: "integ"}
COLUMNS = results.ROWS  # the gradebook's point columns: each component, then the integration share


@dataclass
class StudentResult:
    name: str  # the name people read (lms.identity.display): the feedback's title, the gradebook's "student"
    outcomes: list = field(default_factory=list)
    seconds: float = 0.0
    picture: bytes | None = None
    picture_caption: str = ""  # what the picture shows, in a sentence; or why there is none
    log: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stats: list[dict] = field(default_factory=list)
    restarts: int = 0  # grading processes that ended while grading this student's sections
    source: str = ""  # the submission's source name (lms.identity.Member.source): grade()'s key
    id: str = ""  # the judge's id (lms.identity): OUT/<id>/, OUT/logs/<id>.txt, the gradebook's key
    late: bool | None = None  # what the LMS download records

    @property
    def key(self) -> str:
        """The judge's own name for this student's files and rows (the name itself where no id was made)."""
        return self.id or self.name

    def points(self) -> dict[str, float]:
        """Points per gradebook column: each component's own properties, and the integration share apart."""
        by = {name: 0.0 for name in COLUMNS}
        for o in self.outcomes:
            by[results.row_of(o)] += o.score
        return by


def assemble(r: StudentResult, sections: list[Section], done: dict[str, SectionResult]) -> None:
    """The student's outcomes in a fixed order: component order, section properties, then integration ones."""
    records = []
    for s in sections:
        rec = done[s.key]
        if rec.error:
            r.errors.append(f"JUDGE ERROR in {s.label}: {rec.error}")
            continue
        r.errors.extend(f"JUDGE ERROR in {s.label}: {e}" for e in rec.judge_errors)
        records.extend(rec.outcomes)
        r.seconds += rec.seconds
        r.stats.append(dict(rec.stats, section=s.name, seconds=round(rec.seconds, 3)))
        if rec.picture is not None:
            r.picture, r.picture_caption = rec.picture.png, rec.picture.caption
        if rec.log:
            r.log.append(f"## {s.label}: what the code printed (trimmed)\n{rec.log}")
    order = {n: i for i, n in enumerate(NAMES)}
    # stable within each
    records.sort(key=lambda x: (order[x.component], x.integration))
    # made in the grading process (passes.made); finished here, once, with the student's other sections
    r.outcomes = passes.finish([x.outcome() for x in within_budget(records)])


def text_bytes(record: OutcomeRecord) -> int:
    """What an outcome shows of the code under test's text (message and detail), if the student's code ended
    it (a passed or failed property's words are the judge's)."""
    judges = (core.Status.PASSED, core.Status.FAILED, core.Status.NOT_IMPLEMENTED)
    if record.status in judges or record.omitted:
        return 0
    # The static by-hand property's words are the judge's too: its scan reads the judge's own copy of the files
    # (a Source operation never reaches the worker) and the probe's verdict is the grading process's. Its
    # message names the tampering, the one thing the budget must never hide.
    if record.kind == core.Kind.STATIC:
        return 0
    return sum(
        len(text.encode("utf-8", "backslashreplace")) for text in (record.message, record.detail)
    )


def over_budget(record: OutcomeRecord, kib: float, per_section: bool = False) -> OutcomeRecord:
    """The record with a judge-written message in place of the text past the budget."""
    template = TEXT_OMITTED_SECTION if per_section else TEXT_OMITTED
    message = _(template).format(kib=f"{kib:g}")
    return replace(record, message=message, detail="", example="", omitted=True)


def within_budget(
    records: list[OutcomeRecord], budget: int = SUBMISSION_TEXT_BUDGET
) -> list[OutcomeRecord]:
    """The records, in order, each one's text shown while the budget lasts (a record never half shown)."""
    kept = []
    for x in records:
        cost = text_bytes(x)
        if cost > budget:
            x = over_budget(x, SUBMISSION_TEXT_BUDGET / 1024)
            cost = 0
        budget -= cost
        kept.append(x)
    return kept


# ------------------------------------------------------------------------------------------------ files
def write_atomic(path: Path, data: bytes | str) -> None:
    """Written whole or not at all. Text of any origin is written: a lone surrogate (a print of "\\udcff", a
    file name decoded with surrogateescape) becomes its backslash escape, never an error. The temporary name
    is short: a student's folder name may be as long as the system allows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(
        f".tmp-{os.getpid()}-{hashlib.sha256(path.name.encode('utf-8', 'surrogateescape')).hexdigest()[:12]}"
    )
    tmp.write_bytes(data.encode("utf-8", "backslashreplace") if isinstance(data, str) else data)
    os.replace(tmp, path)


def log_path(out: Path, student: str) -> Path:
    """OUT/logs/<student>.txt; a name too long for ".txt" keeps its start and a hash (NAME_MAX is 255 bytes)."""
    raw = student.encode("utf-8", "surrogateescape")
    if len(raw) <= 200:
        return out / "logs" / f"{student}.txt"
    short = raw[:180].decode("utf-8", "ignore")
    return out / "logs" / f"{short}-{hashlib.sha256(raw).hexdigest()[:12]}.txt"


# Terminal control: ESC (CSI and OSC sequences start with it), C1 controls, and every C0 control but tab and
# newline. A student's prints reach the instructor's log, which an instructor may `cat` in a terminal.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain_log(text: str) -> str:
    """Text safe to print in a terminal: each control character as its escape (ESC as \\x1b)."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def results_json(r: StudentResult, hidden_visibility: str) -> dict:
    rows = results.summarize(r.outcomes)
    lines = [f"{row.component}: {row.earned:g} / {row.available:g}" for row in rows]
    if r.errors:
        lines.append(_(JUDGE_ERROR_LINE))
    data = results.gradescope(r.outcomes, r.seconds, hidden_visibility, "\n".join(lines))
    return data


def write_student(out: Path, r: StudentResult, hidden_visibility: str) -> None:
    """Each file on its own: one that cannot be made is a judge error for this student (in the log, and a
    line in the files that could be written), with a plain version in its place; the others are written."""
    folder = out / r.key

    def results_file():
        data = results_json(r, hidden_visibility)
        return json.dumps(data, indent=2, sort_keys=True) + "\n"

    def plain_results():  # the judge's line and the score of what was graded, nothing a worker wrote
        data = {
            "score": sum(o.score for o in r.outcomes) if _outcomes_ok(r) else 0,
            "output": _(JUDGE_ERROR_LINE),
            "tests": [],
        }
        return json.dumps(data, indent=2, sort_keys=True) + "\n"

    def plain_page():
        return f"<!doctype html><meta charset=utf-8><p>{_(JUDGE_ERROR_LINE)}</p>\n"

    for name, make, fallback in (
        ("results.json", results_file, plain_results),
        ("feedback.html", lambda: feedback.html(r, hidden_visibility), plain_page),
        (
            "feedback.md",
            lambda: feedback.markdown(r, hidden_visibility),
            lambda: _(JUDGE_ERROR_LINE) + "\n",
        ),
    ):
        _write_or_fallback(r, folder / name, make, fallback)
    if r.picture:
        _write_or_fallback(r, folder / "attention_weights.png", lambda: r.picture, None)
    log = (
        [f"# {r.name}: instructor log (not for students)"]
        + r.errors
        + [plain_log(x) for x in r.log]
    )
    write_atomic(log_path(out, r.key), "\n".join(log) + "\n")


def _outcomes_ok(r: StudentResult) -> bool:
    try:
        sum(o.score for o in r.outcomes)
        return True
    except Exception:  # noqa: BLE001 - a fallback must not fail in turn
        return False


def _write_or_fallback(r: StudentResult, path: Path, make, fallback) -> None:
    import traceback

    try:
        write_atomic(path, make())
        return
    except Exception:  # noqa: BLE001 - one file of one student: never the batch
        r.errors.append(f"JUDGE ERROR writing {path.name}: {traceback.format_exc(limit=6)}")
    if fallback is not None:
        write_atomic(path, fallback())


def write_timing(out: Path, results_by: dict[str, StudentResult]) -> None:
    """Time fields, kept apart from results.json so that those are byte-identical run to run."""
    data = {
        s: {"seconds": round(r.seconds, 3), "workers": r.stats}
        for s, r in sorted(results_by.items())
    }
    write_atomic(out / "timing.json", json.dumps(data, indent=1, sort_keys=True) + "\n")


# -------------------------------------------------------------------------------------------- gradebook
def maxima(props: list[core.Property]) -> dict[str, float]:
    """The most points per gradebook column (COLUMNS), integration share apart."""
    by = {name: 0.0 for name in COLUMNS}
    for p in props:
        by[p.component] += p.points
    for specs in integration_props(props).values():
        by[results.INTEGRATION] += sum(points for _, points in specs)
    return by


# After the points: `late` ("late" where the LMS download says so), `note` ("no submission" for a roster row
# nobody submitted), and `id`, the judge's key (lms.identity): the (max) row is the one row without an id, so no
# student's name, "(max)" included, can pass for it. Fixed words: the gradebook is the same in every language.
EXTRA = ("late", "note", "id")
NO_SUBMISSION = "no submission"


def read_gradebook(path: Path) -> dict[str, dict[str, str]]:
    """The gradebook's rows by id (an older gradebook, without ids: by name)."""
    if not path.is_file():
        return {}
    with open(path, newline="", encoding="utf-8", errors="surrogateescape") as f:
        rows = [{k: csv_value(v) for k, v in row.items()} for row in csv.DictReader(f)]
    if rows and "id" not in rows[0]:
        return {r["student"]: r for r in rows if r.get("student") and r["student"] != "(max)"}
    return {row["id"]: row for row in rows if row.get("id")}


def read_maximum(path: Path) -> dict[str, float]:
    """The gradebook's (max) row: the most points per column, as write_gradebook wrote them."""
    with open(path, newline="", encoding="utf-8", errors="surrogateescape") as f:
        for row in csv.DictReader(f):
            if row.get("student") == "(max)":
                return {n: float(row[n]) for n in COLUMNS}
    raise ValueError(f"{path} has no (max) row")


def write_gradebook(path: Path, rows: dict[str, dict[str, str]], maximum: dict[str, float]) -> None:
    """rows: id -> the row's cells ("student", each column, "total", EXTRA), sorted by name, then id."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["student", *COLUMNS, "total", *EXTRA])
    w.writerow(
        ["(max)", *(f"{maximum[n]:g}" for n in COLUMNS), f"{sum(maximum.values()):g}", "", "", ""]
    )
    for key in sorted(rows, key=lambda k: (rows[k].get("student", k), k)):
        row = dict(rows[key], id=key)
        cells = [row.get("student", key), *(row.get(n, "") for n in (*COLUMNS, "total", *EXTRA))]
        w.writerow([csv_cell(c) for c in cells])
    write_atomic(path, buf.getvalue())


# A spreadsheet reads a cell starting with one of these as a formula (CSV injection): OWASP's advice is to
# prefix it with a single quote, which the spreadsheet shows and no formula starts with.
# A cell that starts with the quote itself gets one more, so that reading the file back (--only) is exact.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "'")


def csv_cell(value) -> str:
    """A gradebook cell a spreadsheet reads as text (no score is negative: a leading "-" is a name's)."""
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def csv_value(cell):
    """A cell as csv_cell was given it."""
    return cell[1:] if isinstance(cell, str) and cell.startswith("'") else cell


def gradebook_row(r: StudentResult) -> dict[str, str]:
    pts = r.points()
    return {
        "student": r.name,
        **{n: f"{pts[n]:g}" for n in COLUMNS},
        "total": f"{sum(pts.values()):g}",
        "late": "late" if r.late else "",
    }


def missing_row(name: str) -> dict[str, str]:
    """The gradebook row of a roster student who submitted nothing: 0 everywhere, and why."""
    return {"student": name, **{n: "0" for n in COLUMNS}, "total": "0", "note": NO_SUBMISSION}


def _fits(table, console) -> bool:
    from rich.measure import Measurement

    wide = console.options.update_width(10_000)  # its width unwrapped, not clamped to the console's
    return Measurement.get(console, wide, table).maximum <= console.width


def _gradebook_narrow(results_by: dict[str, StudentResult], maximum: dict, used: list):
    """The gradebook for a terminal too narrow for a column per component (80 columns hold about 9): a row per
    student, their total, then each component's points as `short points/maximum`, wrapped."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(title=_("gradebook"), box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    table.add_column(_("student"), overflow="fold", max_width=24)
    table.add_column(f"{_('total')}\n{sum(maximum.values()):g}", justify="right", no_wrap=True)
    table.add_column(_("per column"), overflow="fold")
    for r in sorted(results_by.values(), key=lambda r: (r.name, r.key)):
        pts = r.points()
        cells = Text()
        for n in used:
            style = "green" if pts[n] == maximum[n] else ("red" if pts[n] == 0 else "yellow")
            # no break inside
            cells.append(f"{SHORT[n]}\u00a0{pts[n]:g}/{maximum[n]:g}", style=style)
            cells.append("  ")
        label = _label(r)
        table.add_row(label, Text(f"{sum(pts.values()):g}", style="bold"), cells)
    return table


def _label(r: StudentResult):
    """A student's name in the console table: plain text (a name decoded with surrogateescape prints as its
    escapes), marked when the download says late or the judge failed on part of it."""
    from rich.text import Text

    label = Text(valid_text(r.name))
    if r.late:
        label.append(" " + _("(late)"), style="yellow")
    if r.errors:
        label.append(" " + _("(judge error)"), style="red")
    return label


def render_gradebook(results_by: dict[str, StudentResult], props, console) -> None:
    """The class at a glance: a column per component, the integration share, the total. Names are plain text."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    maximum = maxima(props)
    table = Table(title=_("gradebook"), box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    table.add_column(_("student"), overflow="fold")
    used = [n for n in COLUMNS if maximum[n]]
    for n in used:
        header = Text(SHORT[n])
        header.append(f"\n{maximum[n]:g}", style="dim")
        table.add_column(header, justify="right", no_wrap=True)
    total = Text(_("total"))
    total.append(f"\n{sum(maximum.values()):g}", style="dim")
    table.add_column(total, justify="right", no_wrap=True)
    for r in sorted(results_by.values(), key=lambda r: (r.name, r.key)):
        pts = r.points()
        cells = []
        for n in used:
            style = "green" if pts[n] == maximum[n] else ("red" if pts[n] == 0 else "yellow")
            cells.append(Text(f"{pts[n]:g}", style=style))
        label = _label(r)
        table.add_row(label, *cells, Text(f"{sum(pts.values()):g}", style="bold"))
    console.print(table if _fits(table, console) else _gradebook_narrow(results_by, maximum, used))
    console.print(
        Text(
            ", ".join(f"{SHORT[n]} = {n}" for n in used if n != results.INTEGRATION)
            + f", {SHORT[results.INTEGRATION]} = {results.INTEGRATION}: {_(results.INTEGRATION_TITLE)}",
            style="dim",
        )
    )
