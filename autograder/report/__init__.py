"""The class report: what the whole class got wrong, at a glance, in one page (docs/report.md).

`python -m autograder report OUT_DIR` (and `grade`, when it finishes) reads the judge's files in OUT_DIR
(class.json, <id>/results.json, timing.json, logs/) and writes OUT_DIR/report.html, report.json and the LMS CSVs.
One module per step: collect (read), hints (which catalog message a hint is), stats (scores, mistakes, item
analysis, judge health), similarity (copydetect), svg (charts), page (HTML), exports (JSON, CSV).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from .model import (  # the report's file names, read by the judge, the CLI and the tests
    CANVAS_CSV,
    CANVAS_SHEET,
    MOODLE_CSV,
    MOODLE_SHEET,
    REPORT_HTML,
    REPORT_JSON,
)


def write(out: Path, submissions: Path | None = None, lang: str | None = None, lms=None) -> Path:
    """Write the report's files into `out` (a graded OUT_DIR); return the page's path. submissions: the
    students' folders, for similarity (None: that section says it was not computed). lms: the exports'
    LmsOptions (lms/roster.py: the roster, the assignment, the scale)."""
    from .. import i18n
    from . import collect, exports, page, stats

    out, lms = Path(out), lms or exports.NO_OPTIONS
    with i18n.chosen(lang or i18n.current_language()):
        data = collect.read(out, lms.roster)
        canvas, said = exports.canvas_csv(data, lms)
        moodle, said_moodle = exports.moodle_csv(data, lms)
        data.lms_notes = said + said_moodle
        summary = stats.summarize(data)
        similar = _similarity(data, out, submissions)
        html = page.render(data, summary, similar, lms.scale)
        _text(out / REPORT_HTML, html)
        _text(out / REPORT_JSON, exports.json_text(data, summary, similar))
        for name, sheet, text in (
            (CANVAS_CSV, CANVAS_SHEET, canvas),
            (MOODLE_CSV, MOODLE_SHEET, moodle),
        ):
            _text(out / name, text)
            _text(out / sheet, exports.BOM + text)
    return out / REPORT_HTML


def _text(path: Path, text: str) -> None:
    """Written as UTF-8 whatever it holds: a name's undecodable byte (a lone surrogate) as its escape."""
    path.write_bytes(text.encode("utf-8", "backslashreplace"))


def _similarity(data, out: Path, submissions: Path | None):
    """Similarity over the files the judge graded, by id: the submissions staged as the judge stages them
    (lms/ingest.py), or, for an OUT graded before the class index, the student folders as they are."""
    from ..lms import identity, ingest
    from . import similarity

    if not submissions:
        return None
    if identity.read_index(out) is None:
        return similarity.compare(data, submissions)
    staging = Path(tempfile.mkdtemp(prefix="report-staging-"))
    try:
        ingest.read_class(Path(submissions), staging)
        return similarity.compare(data, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
