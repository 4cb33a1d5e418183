"""The page: one self-contained HTML file (inline CSS and SVG, no script but one that opens the lists for
printing), every word through the catalogs, every student-originated string escaped.

Every `_()` stands outside an f-string: Babel's extractor does not look inside one."""

from __future__ import annotations

import re
import unicodedata
from html import escape
from statistics import fmean, median
from urllib.parse import quote

from ..i18n import N_, _, current_language, ngettext
from ..results import row_title, status_text
from . import svg
from .model import CANVAS_CSV, MOODLE_CSV, REPORT_JSON, ClassResults
from .similarity import REFERENCE, Similarity
from .stats import Summary, component_of, file_state

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em auto;max-width:76em;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{border-bottom:2px solid #ccc;margin-top:1.8em}h3{margin-bottom:.3em}
table{border-collapse:collapse;margin:.5em 0}
td,th{border-bottom:1px solid #ddd;padding:.15em .5em;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.label,td.names{overflow-wrap:anywhere}td.names{font-size:.92em}td.who{white-space:nowrap}
table.mistakes{width:100%;table-layout:fixed;font-size:.93em}col.label{width:50%}col.num{width:4.6em}
.scroll{overflow-x:auto;max-width:100%}
code{overflow-wrap:anywhere;background:#f3f3f3;padding:0 .2em;border-radius:3px}
.charts{display:flex;flex-wrap:wrap;gap:.6em .8em}.charts figure{margin:0;width:250px}
.charts svg{width:100%;height:auto}figcaption{font-size:.9em;color:#444}
svg.chart rect.bar{fill:#4a7ab7}svg.chart line.median{stroke:#c33;stroke-width:2}
svg.chart line.mean{stroke:#2a2;stroke-width:2;stroke-dasharray:4 2}svg.chart line.axis{stroke:#555}
svg.chart text{font-size:10px;fill:#333}
.note{background:#fff6d6;border-left:4px solid #e0b000;padding:.5em 1em}
.problem{background:#fde8e8;border-left:4px solid #c33;padding:.5em 1em}
.flag{color:#a40;font-weight:600}.muted{color:#666}
td.low{background:#fde8e8;color:#900}td.missing,td.stub{background:#eee;color:#555;font-style:italic}
td.total{font-weight:600}.late{color:#a40;font-size:.85em}
table.item-table{width:100%}table.item-table td:first-child{width:38%}table.item-table code{overflow-wrap:normal}
details.items>summary{cursor:pointer;padding:.2em 0}details.items[open]>summary{font-weight:600}
.side{display:grid;grid-template-columns:1fr 1fr;gap:.5em}
.side pre{font-size:11px;max-height:28em;overflow:auto;background:#f6f6f6;padding:.5em;white-space:pre-wrap}
mark{background:#ffd54f}
@media print{body{max-width:none;font-size:11px}.side pre{max-height:none}h2{break-after:avoid}
table,figure{break-inside:avoid}.scroll{overflow:visible}}
"""
# <details> lists stay closed on screen; printing opens them so that the paper has every name.
SCRIPT = "addEventListener('beforeprint',()=>document.querySelectorAll('details').forEach(d=>d.open=true))"
# Headings and sentences that sit inside f-strings, where Babel's extractor cannot see a _().
CLASS_REPORT = N_("Class report")
COULD_NOT_BE_READ = N_("Could not be read:")
SCORES = N_("Scores")
MISTAKES = N_("Mistakes")
NO_FAILURE_IN_THIS_CLASS = N_("No failure in this class.")
NOT_WRITTEN_THE_STUB_LEFT_AS = N_("not written (the stub left as released)")
ITEM_ANALYSIS = N_("Item analysis")
THE_REFERENCE = N_("the reference")
SIMILARITY = N_("Similarity")
NO_PAIR_OF_SUBMISSIONS_LOOKS = N_("No pair of submissions looks suspiciously alike.")
CLUSTER = N_("Cluster:")
JUDGE_HEALTH = N_("Judge health")
NO_TIME_LIMIT_CRASH_JUDGE_ER = N_("No time limit, crash, judge error or by-hand violation.")
STUDENTS = N_("Who needs help")
STUDENT = N_("student")
EXPORTS = N_("Exports")
MAX_LISTED = 100  # flagged pairs listed per component; the JSON export has them all
LOW = 0.5  # a cell under half of its column's points is marked: where a student needs help
FLAGS = {
    "all_pass": N_("every student passes: it tells nothing apart"),
    "all_fail": N_("every student fails: too hard, or broken?"),
    "low_discrimination": N_(
        "failing it does not go with fewer points on the rest of its component, and a failure no "
        "named mistake explains: a test that may be broken"
    ),
}
NOT_HANDED_IN = N_("not handed in")
NOT_WRITTEN = N_("not written")
LATE = N_("late")
ROOTED = N_("integration re-runs that use this file fail because of it: {components}")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
# Moodle's "Download all submissions" folder: "<Full name>_<participant id>_assignsubmission_<plugin>_"
LMS_SUFFIX = re.compile(r"_\d+_assign(?:submission|feedback)_[a-z]+_?$")


def e(text) -> str:
    return escape(str(text), quote=True)


# id -> (the name people read, that name with what the LMS says (late, no submission), whether a feedback
# page exists): set by render() from the class index (lms, issue 32)
_SHOWN: dict[str, tuple[str, str, bool]] = {}


def rich(text: str) -> str:
    """A hint or label, escaped, its `code spans` as <code> (the hints' own convention)."""
    return CODE_SPAN.sub(r"<code>\1</code>", e(text))


def shown(name: str) -> str:
    """The name people read for a student's id; for an id render() was not given (an OUT graded before the
    class index), the folder's name with the LMS download's suffix stripped."""
    if name in _SHOWN:
        return _SHOWN[name][0]
    return _bare(name)


def _bare(name: str) -> str:
    """A folder's name without the LMS download's suffix (a Moodle folder graded as it was unpacked)."""
    return LMS_SUFFIX.sub("", name) or name


def collation_key(name: str) -> tuple:
    """The course language's alphabetical order, not the code points' ("Ángela" before "Bruno"): accents
    and case ignored; in Spanish ñ is a letter of its own, after n. Ties: the name itself."""
    text = shown(name).casefold()
    if current_language() == "es":
        text = text.replace("ñ", "n\U0010ffff")  # after every n-word, before o
    bare = "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))
    return (bare, name)


def link(name: str) -> str:
    """A student's feedback page, relative to the report (OUT/<id>/, beside it), under the name people read
    (a roster student with no submission has no page: the name alone)."""
    _, label, graded = _SHOWN.get(name, ("", shown(name), True))
    if not graded:
        return f'<span class="student">{e(label)}</span>'
    return f'<a class="student" href="{quote(name, safe="")}/feedback.html">{e(label)}</a>'


def students(names: list[str]) -> str:
    """Every student named, in view, in the course's alphabetical order."""
    return ", ".join(link(n) for n in sorted(names, key=collation_key))


def pct(n: int, size: int) -> str:
    return f"{100 * n / size:.0f} %" if size else "–"


def header(*cells: str, numeric_from: int = 99, numeric_to: int = 99) -> str:
    """A header row; the columns numeric_from..numeric_to - 1 hold numbers (aligned right)."""
    return (
        "<tr>"
        + "".join(
            f"<th{' class=n' if numeric_from <= i < numeric_to else ''}>{e(c)}</th>"
            for i, c in enumerate(cells)
        )
        + "</tr>"
    )


def render(
    data: ClassResults, summary: Summary, similar: Similarity | None, scale: float | None = None
) -> str:
    """The page. scale: the course's scale for the total (`--scale 10`); else the report's inputs' own, when
    they carry one (ClassResults.scale), else none."""
    scale = scale or getattr(data, "scale", None)
    _SHOWN.clear()
    for st in data.students:
        name = _bare(st.display or st.name)
        _SHOWN[st.name] = (name, _shown(st, name), not st.missing)
    size = summary.size
    graded = ngettext(
        "{n} student graded in {folder}.", "{n} students graded in {folder}.", size
    ).format(n=size, folder=data.out)
    body = [f"<h1>{e(_(CLASS_REPORT))}</h1>", f"<p>{e(graded)}</p>", _nav()]
    if data.problems:
        body.append(
            f'<div class="problem" id="problems"><strong>{e(_(COULD_NOT_BE_READ))}</strong><ul>'
        )
        body += [f"<li>{e(p)}</li>" for p in data.problems]
        body.append("</ul></div>")
    body += _students(data, scale)
    body += _scores(summary)
    body += _mistakes(summary)
    body += _items(summary)
    body += _similarity(similar)
    body += _health(summary)
    body += _exports()
    if data.lms_notes:  # what the LMS files could not fill (exports.py), under the files
        notes = "".join(f"<li>{e(n)}</li>" for n in data.lms_notes)
        body.append(f'<ul class="problem" id="lms-notes">{notes}</ul>')
    title = e(_("Class report"))
    return (
        f'<!DOCTYPE html><html lang="{current_language()}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{title}</title><style>{CSS}</style><script>{SCRIPT}</script></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )


def _nav() -> str:
    parts = [
        ("students", _("Who needs help")),
        ("scores", _("Scores")),
        ("mistakes", _("Mistakes")),
        ("items", _("Item analysis")),
        ("similarity", _("Similarity")),
        ("health", _("Judge health")),
        ("exports", _("Exports")),
    ]
    return "<nav>" + " · ".join(f'<a href="#{i}">{e(label)}</a>' for i, label in parts) + "</nav>"


def _title(row: str) -> str:
    return _("total") if row == "total" else f"{row}: {row_title(row)}"


def _scores(s: Summary) -> list[str]:
    legend = e(_("Red line: median; green dashes: mean."))
    out = [
        f'<h2 id="scores">{e(_(SCORES))}</h2>',
        f'<p class="muted">{legend}</p><div class="charts">',
    ]
    for d in s.distributions:
        title = _title(d.row)
        chart = svg.histogram(d.values, d.maximum, title, d.median, d.mean)
        figures = _(
            "{points:g} points: median {median:.3g}, mean {mean:.3g}; {zero} at zero, {full} with full marks"
        ).format(points=d.maximum, median=d.median, mean=d.mean, zero=d.at_zero, full=d.at_full)
        out.append(
            f'<figure data-row="{e(d.row)}" data-median="{d.median:g}" data-at-zero="{d.at_zero}" '
            f'data-at-full="{d.at_full}">{chart}<figcaption>{e(title)}<br><span class="muted">'
            f"{e(figures)}</span></figcaption></figure>"
        )
    if s.seconds:
        top, mid, mean = max(s.seconds), median(s.seconds), fmean(s.seconds)
        title = _("grading time per student (s)")
        caption = _("median {median:.1f} s, mean {mean:.1f} s, longest {top:.1f} s").format(
            median=mid, mean=mean, top=top
        )
        chart = svg.histogram(s.seconds, top, title, mid, mean, " s")
        out.append(
            f'<figure data-row="seconds">{chart}<figcaption>{e(title)}<br><span class="muted">'
            f"{e(caption)}</span></figcaption></figure>"
        )
    out.append("</div>")
    return out


def _count_row(cls: str, label: str, names: list[str], size: int, attrs: str = "") -> str:
    return (
        f'<tr class="{cls}"{attrs}><td class="label">{label}</td><td class="n count">{len(names)}</td>'
        f'<td class=n>{pct(len(names), size)}</td><td class="names">{students(names)}</td></tr>'
    )


def _mistakes(s: Summary) -> list[str]:
    intro = e(
        _(
            "What the hints diagnosed, per component, most frequent first: one row per mistake, however many "
            "properties or wordings named it, a student counted once. An integration re-run that fails "
            "because of the student's own file it uses counts under that file."
        )
    )
    out = [f'<h2 id="mistakes">{e(_(MISTAKES))}</h2>', f"<p>{intro}</p>"]
    order = [d.row for d in s.distributions]
    rows = (
        {m.row for m in s.mistakes}
        | set(s.not_written)
        | set(s.missing)
        | {u.row for u in s.unexplained}
        | {r.row for r in s.rooted}
    )
    if not rows:
        out.append(f"<p>{e(_(NO_FAILURE_IN_THIS_CLASS))}</p>")
    for row in sorted(rows, key=lambda r: order.index(r) if r in order else len(order)):
        out.append(
            f'<h3>{e(_title(row))}</h3><div class="scroll"><table class="mistakes" data-row="{e(row)}">'
            '<colgroup><col class="label"><col class="num"><col class="num"><col></colgroup>'
        )
        out += _mistake_rows(s, row)
        out.append("</table></div>")
    return out


def _mistake_rows(s: Summary, row: str) -> list[str]:
    out = []
    for m in (m for m in s.mistakes if m.row == row):
        attrs = f' data-hint="{e(m.hint_id)}"'
        out.append(_count_row("mistake", rich(m.label), m.students, s.size, attrs))
    for r in (r for r in s.rooted if r.row == row):
        label = e(_(ROOTED)).replace(
            "{components}", ", ".join(f"<code>{e(c)}</code>" for c in r.downstream)
        )
        attrs = f' data-downstream="{e(" ".join(r.downstream))}"'
        out.append(_count_row("rooted", label, r.students, s.size, attrs))
    if row in s.missing:
        label = f"<em>{e(_(NOT_HANDED_IN))}</em>"
        out.append(_count_row("missing", label, s.missing[row], s.size))
    if row in s.not_written:
        label = f"<em>{e(_(NOT_WRITTEN_THE_STUB_LEFT_AS))}</em>"
        out.append(_count_row("not-written", label, s.not_written[row], s.size))
    unexplained = [u for u in s.unexplained if u.row == row]
    if unexplained:
        head = e(_("Failures no hint named, by property (what the catalog does not yet explain):"))
        out.append(f'<tr><th colspan="4">{head}</th></tr>')
    for u in unexplained:
        attrs = f' data-test="{e(u.test)}"'
        out.append(
            _count_row("unexplained", f"<code>{e(u.test)}</code>", u.students, s.size, attrs)
        )
    return out


def _items(s: Summary) -> list[str]:
    intro = e(
        _(
            "Per property: the share of students who pass it, and its discrimination, the correlation of "
            "passing it with the points on the rest of its own component. Flagged when it is under 0.1 "
            "and some failure no named mistake explains. Folded per component; a component with a flag "
            "is open."
        )
    )
    cells = (
        _("property"),
        _("points"),
        _("graded"),
        _("pass rate"),
        _("discrimination"),
        _("flag"),
    )
    out = [f'<h2 id="items">{e(_(ITEM_ANALYSIS))}</h2>', f"<p>{intro}</p>"]
    groups: dict[tuple[str, str], list] = {}
    for it in s.items:
        groups.setdefault((it.row, component_of(it.test)), []).append(it)
    for (row, component), items in groups.items():
        flagged = sum(bool(it.flag) and it.flag != "all_pass" for it in items)
        summary = ngettext(
            "{n} property; flagged: {flagged}", "{n} properties; flagged: {flagged}", len(items)
        ).format(n=len(items), flagged=flagged)
        where = f"{row} · {component}" if row != component else row
        out.append(
            f'<details class="items" data-row="{e(row)}" data-component="{e(component)}"'
            f"{' open' if flagged else ''}><summary><code>{e(where)}</code>: {e(summary)}</summary>"
            f'<div class="scroll"><table class="item-table">{header(*cells, numeric_from=1, numeric_to=5)}'
        )
        for it in items:
            flag = e(_(FLAGS[it.flag])) if it.flag else ""
            disc = "–" if it.discrimination is None else f"{it.discrimination:.2f}"
            out.append(
                f'<tr class="item" data-test="{e(it.test)}" data-flag="{it.flag}"><td><code>'
                f"{_breakable(it.test.rsplit('::', 1)[-1])}</code></td><td class=n>{it.points:g}</td>"
                f"<td class=n>{it.students}</td>"
                f"<td class=n>{100 * it.pass_rate:.0f} %</td><td class=n>{disc}</td>"
                f'<td class="flag">{flag}</td></tr>'
            )
        out.append("</table></div></details>")
    return out


def _shown(st, name: str) -> str:
    """A student's name, and what the LMS says: late, or nothing submitted."""
    if st.missing:
        return _("{name} (no submission)").format(name=name)
    return _("{name} (late)").format(name=name) if st.late else name


def _breakable(name: str) -> str:
    """An identifier that may break after its underscores, never inside a word."""
    return e(name).replace("_", "_<wbr>")


def _name(n: str) -> str:
    return f"<em>{e(_(THE_REFERENCE))}</em>" if n == REFERENCE else link(n)


def _similarity(sim: Similarity | None) -> list[str]:
    note = e(
        _(
            "A pointer for a human, never a verdict: code that looks alike may have been written alike. The "
            "released stubs are left out, the reference counts as a source, and what most of the class wrote "
            "alike is left out too (docs/report.md)."
        )
    )
    out = [f'<h2 id="similarity">{e(_(SIMILARITY))}</h2>', f'<p class="note">{note}</p>']
    if sim is None:
        missing = e(
            _("Not computed: the submissions folder was not given (report OUT --submissions DIR).")
        )
        out.append(f"<p>{missing}</p>")
        return out
    compared = _("{files} files compared in {seconds:.1f} s.").format(
        files=sum(sim.files.values()), seconds=sim.seconds
    )
    out.append(f'<p class="muted">{e(compared)}</p>')
    if not sim.pairs:
        out.append(f"<p>{e(_(NO_PAIR_OF_SUBMISSIONS_LOOKS))}</p>")
        return out
    cells = (_("submission"), _("submission"), _("alike (share of each)"), _("shared characters"))
    for component in dict.fromkeys(p.component for p in sim.pairs):
        mine = [p for p in sim.pairs if p.component == component]
        out.append(
            f'<h3>{e(_title(component))}</h3><div class="scroll"><table class="pairs" '
            f'data-row="{e(component)}">' + header(*cells)
        )
        for p in mine[:MAX_LISTED]:
            out.append(
                f'<tr class="pair"><td>{_name(p.a)}</td><td>{_name(p.b)}</td><td class=n>'
                f"{100 * p.similarity_a:.0f} % / {100 * p.similarity_b:.0f} %</td><td class=n>{p.shared}</td></tr>"
            )
        out.append("</table></div>")
        for members in (m for c, m in sim.clusters if c == component):
            out.append(f"<p>{e(_(CLUSTER))} " + ", ".join(_name(n) for n in members) + "</p>")
        for p in (p for p in mine if p.marked_a):
            out.append(
                f'<div class="side"><div>{_name(p.a)}<pre>{p.marked_a}</pre></div>'
                f"<div>{_name(p.b)}<pre>{p.marked_b}</pre></div></div>"
            )
    return out


def _health(s: Summary) -> list[str]:
    out = [f'<h2 id="health">{e(_(JUDGE_HEALTH))}</h2>']
    if not s.health:
        out.append(f"<p>{e(_(NO_TIME_LIMIT_CRASH_JUDGE_ER))}</p>")
        return out
    out.append(
        '<div class="scroll"><table id="health-table">'
        + header(_("student"), _("what happened"), _("where"))
    )
    for h in sorted(s.health, key=lambda h: collation_key(h.student)):
        kind = _("judge error") if h.kind == "judge_error" else status_text(h.kind)
        where = "<br>".join(f"<code>{e(w)}</code>" for w in h.where[:20])
        out.append(
            f'<tr class="health" data-kind="{h.kind}"><td>{link(h.student)}</td><td>{e(kind)}</td>'
            f"<td>{where}</td></tr>"
        )
    out.append("</table></div>")
    return out


def _students(data: ClassResults, scale: float | None) -> list[str]:
    """Who needs help: the students by total, lowest first, with the share and the course's scale; per
    component a cell under half its points marked, a file not handed in or left as the stub said so."""
    rows = [r for r, m in data.maximum.items() if m]
    top = data.total_maximum
    head = [
        f"<th>{e(_(STUDENT))}</th>",
        f"<th class=n>{e(_('total'))}<br><span class=muted>{top:g}</span></th>",
    ]
    head.append("<th class=n>%</th>")
    if scale:
        head.append(f"<th class=n>/ {scale:g}</th>")
    head += [
        f"<th class=n>{e(r)}<br><span class=muted>{data.maximum[r]:g}</span></th>" for r in rows
    ]
    intro = e(
        _(
            "Lowest total first. A cell under half of its points is marked; a file not handed in, or left "
            "as the released stub, says so."
        )
    )
    out = [
        f'<h2 id="students">{e(_(STUDENTS))}</h2><p class="muted">{intro}</p>'
        f'<div class="scroll"><table id="student-table"><tr>{"".join(head)}</tr>'
    ]
    ranked = sorted(data.students, key=lambda st: (st.total, collation_key(st.name)))
    for st in ranked:
        share = st.total / top if top else 0.0
        cells = [
            f'<td class="n total">{st.total:g}</td>',
            f'<td class="n share">{100 * share:.0f} %</td>',
        ]
        if scale:
            cells.append(f'<td class="n scaled">{share * scale:.1f}</td>')
        by_component = {}
        for t in st.tests:
            by_component.setdefault(t.row, []).append(t)
        # a roster's student with no submission at all (Student.missing, when the record has it)
        nothing = "missing" if getattr(st, "missing", False) else ""
        for r in rows:
            state = nothing or file_state(by_component.get(r, []))
            cells.append(_cell(st.points(r), data.maximum[r], state))
        late = f' <span class="late">{e(_(LATE))}</span>' if getattr(st, "late", False) else ""
        name = link(st.name)
        out.append(
            f'<tr class="student-row"><td class="who">{name}{late}</td>{"".join(cells)}</tr>'
        )
    out.append("</table></div>")
    return out


def _cell(points: float, maximum: float, state: str) -> str:
    if state == "missing":
        return f'<td class="n missing" data-points="{points:g}">{e(_(NOT_HANDED_IN))}</td>'
    if state == "stub":
        return f'<td class="n stub" data-points="{points:g}">{e(_(NOT_WRITTEN))}</td>'
    low = " low" if maximum and points < LOW * maximum else ""
    return f'<td class="n{low}" data-points="{points:g}">{points:g}</td>'


def _exports() -> list[str]:
    items = (
        (REPORT_JSON, _("everything on this page, for scripting")),
        (CANVAS_CSV, _("the gradebook for Canvas (with its Points Possible row)")),
        (MOODLE_CSV, _("the gradebook for Moodle (an email address or ID number column)")),
    )
    lines = "".join(f'<li><a href="{f}">{f}</a>: {e(what)}</li>' for f, what in items)
    return [f'<h2 id="exports">{e(_(EXPORTS))}</h2><ul>{lines}</ul>']
