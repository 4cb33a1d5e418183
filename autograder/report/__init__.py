"""The class report: what the whole class got wrong, at a glance, in one page (docs/report.md).

`python -m autograder report OUT_DIR` (and `grade`, when it finishes) reads the judge's files in OUT_DIR
(<student>/results.json, timing.json, logs/) and writes OUT_DIR/report.html, report.json and the LMS CSVs.
One module per step: collect (read), hints (which catalog message a hint is), stats (scores, mistakes, item
analysis, judge health), similarity (copydetect), svg (charts), page (HTML), exports (JSON, CSV).
"""

from __future__ import annotations

from pathlib import Path

REPORT_HTML = "report.html"
REPORT_JSON = "report.json"
CANVAS_CSV = "lms-canvas.csv"
MOODLE_CSV = "lms-moodle.csv"


def write(out: Path, submissions: Path | None = None, lang: str | None = None) -> Path:
    """Write the report's files into `out` (a graded OUT_DIR); return the page's path. submissions: the
    students' folders, for similarity (None: that section says it was not computed)."""
    from .. import i18n
    from . import collect, exports, page, similarity, stats

    out = Path(out)
    with i18n.chosen(lang or i18n.current_language()):
        data = collect.read(out)
        summary = stats.summarize(data)
        similar = similarity.compare(data, submissions) if submissions else None
        html = page.render(data, summary, similar)
        (out / REPORT_HTML).write_text(html, encoding="utf-8")
        (out / REPORT_JSON).write_text(exports.json_text(data, summary, similar), encoding="utf-8")
        (out / CANVAS_CSV).write_text(exports.canvas_csv(data), encoding="utf-8")
        (out / MOODLE_CSV).write_text(exports.moodle_csv(data), encoding="utf-8")
    return out / REPORT_HTML
