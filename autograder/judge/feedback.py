"""Per-student feedback: feedback.html (self-contained: inline CSS, the picture as a data: URI) and feedback.md.

What passed, what failed with the smallest failing input and the hint, the student's own traceback, and the
attention picture. Hidden properties show their verdict, message and hint (never their source) unless the
instructor chose Gradescope visibility "hidden", in which case only their count and points show.
"""

from __future__ import annotations

import base64
import re
from html import escape

from .. import i18n, results
from ..components import BY_NAME
from ..i18n import N_, _, ngettext

# The line a student reads where the judge failed on part of their submission (the details are in the
# instructor's log only: a traceback names the judge's own files).
JUDGE_ERROR_LINE = N_(
    "The judge failed on part of your submission (a fault of the judge, not of your code): your instructor "
    "has been told, and the parts concerned are not graded yet."
)

CSS = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 980px; margin: 2em auto;
       padding: 0 1em; color: #1d1d1f; }
h1 { font-size: 1.6em; margin-bottom: .2em; } h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ddd; }
.total { font-size: 1.15em; } .dim { color: #666; }
table.components { border-collapse: collapse; width: 100%; margin: 1em 0; }
table.components th, table.components td { text-align: left; padding: .35em .6em; border-bottom: 1px solid #e5e5e5; }
table.components td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.full td.num { color: #16794a; } tr.partial td.num { color: #9a6700; } tr.zero td.num { color: #b3261e; }
.badge { font-size: .75em; padding: .05em .45em; border-radius: .6em; background: #eee; color: #444;
         margin-left: .4em; }
details { margin: .5em 0; padding: .4em .7em; border-left: 4px solid #b3261e; background: #fdf3f2; }
details.timeout, details.crashed { border-color: #8e44ad; background: #f7f1fa; }
details.forbidden { border-color: #c0651b; background: #fdf5ee; }
summary { cursor: pointer; font-weight: 600; }
pre { background: #f6f8fa; padding: .6em; overflow: auto; max-height: 22em; font-size: 13px; }
.hint { background: #fff8d6; padding: .3em .6em; border-radius: 4px; }
ul.passed { columns: 2; color: #16794a; padding-left: 0; list-style: none; }
ul.passed li { break-inside: avoid; margin-bottom: .2em; }
img.picture { max-width: 100%; border: 1px solid #ddd; }
"""

EXPLAIN_PICTURE = N_(
    "Your <code>MultiHeadAttention</code> on one fixed example: the six tokens “the cat sat on the mat”, "
    "d_model = 8, two heads, a causal mask, the same weights for you and for the reference "
    "(torch's <code>nn.MultiheadAttention</code>). Each row is a query; its weights over the keys should sum to 1, "
    "and nothing may fall above the diagonal. The bottom row shows your output minus the reference's output on "
    "the same example: weights can match while the output does not. This is your multi_head.py with your own "
    "attention.py (for the points, multi_head is graded with the reference attention.py)."
)
PICTURE_TITLE = N_("Your multi-head attention, pictured")
PICTURE_ALT = N_("attention weights: yours beside the reference")


def _sections(r):
    """Outcomes per table row: each component's own, then the integration re-runs in a section of their own
    (listed under the component they re-run, they read as duplicates)."""
    by = {n: [] for n in results.ROWS}
    for o in r.outcomes:
        by[results.row_of(o)].append(o)
    return {n: os for n, os in by.items() if os}


def _label(o) -> str:
    """What a property is called in its section: an integration re-run names the component it re-runs."""
    if results.row_of(o) == results.INTEGRATION:
        return f"{o.property.component}: {_(o.property.summary)}"
    return _(o.property.summary)


def _visible(o, hidden_visibility):
    return o.property.visible or hidden_visibility != "hidden"


def _note(component: str) -> str:
    if component == results.INTEGRATION:
        return _(
            "A few properties of each component that uses others, re-run with your own files for all of "
            "them: a bug in a file costs points in its own component and here, nowhere else."
        )
    deps = BY_NAME[component].deps
    if not deps:
        return ""
    return _(
        "Graded with the reference {files}, so a bug there costs nothing here; the integration "
        "section re-runs a few of these checks with your own {files}."
    ).format(files=", ".join(f"{d}.py" for d in deps))


def _verdict(o) -> str:
    return results.status_text(o.status)


def _tag(o) -> str:
    """After a hidden property's name."""
    return "" if o.property.visible else " " + _("(hidden)")


def _concealed(outcomes) -> str:
    points = f"{sum(o.property.points for o in outcomes):g}"
    # The English said "1 hidden properties" and still does (the same words in both forms); a translation
    # has its own singular.
    return ngettext(
        "{n} hidden properties, {points} points: results shown after grading.",
        "{n} hidden properties, {points} points: results shown after grading.",
        len(outcomes),
    ).format(n=len(outcomes), points=points)


# long: the feedback page's markup, top to bottom
def html(r, hidden_visibility: str = results.HIDDEN_VISIBILITY) -> str:
    rows = results.summarize(r.outcomes)
    earned, available = sum(x.earned for x in rows), sum(x.available for x in rows)
    total = f"{earned:g} / {available:g}"
    title = _("Feedback: {name}").format(name=r.name)
    heading = _("Transformer kit: feedback for {name}").format(name=r.name)
    hidden, smallest, yours = _("hidden"), _("Smallest failing input:"), _("Your code:")
    out = [
        "<!doctype html>",
        f'<html lang="{i18n.current_language()}"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{escape(heading)}</h1>",
        '<p class="total">'
        + escape(_("Total: {total} points")).format(total=f"<b>{total}</b>")  # numbers: no markup
        + "</p>",
        *([f'<p class="hint"><b>{escape(_(JUDGE_ERROR_LINE))}</b></p>'] if r.errors else []),
        '<table class="components"><thead><tr>'
        + "".join(
            f"<th>{escape(h)}</th>"
            for h in (_("component"), _("what"), _("points"), _("properties passed"))
        )
        + "</tr></thead><tbody>",
    ]
    for x in rows:
        cls = "full" if x.earned == x.available else ("zero" if x.earned == 0 else "partial")
        out.append(
            f'<tr class="{cls}"><td><a href="#c-{x.component}">{x.component}</a></td>'
            f"<td>{escape(results.row_title(x.component))}</td>"
            f'<td class="num">{x.earned:g} / {x.available:g}</td><td class="num">{x.passed} / {x.total}</td></tr>'
        )
    out.append("</tbody></table>")
    if r.picture or r.picture_caption:
        out += [
            f'<section id="picture"><h2>{escape(_(PICTURE_TITLE))}</h2>',
            f"<p>{_(EXPLAIN_PICTURE)}</p>",  # the catalog's own markup (<code>), no worker's text
        ]
        if r.picture:
            data = base64.b64encode(r.picture).decode()
            out.append(
                f'<img class="picture" alt="{escape(_(PICTURE_ALT))}" '
                f'src="data:image/png;base64,{data}">'
            )
        if r.picture_caption:
            out.append(f"<p><b>{escape(r.picture_caption)}</b></p>")
        out.append("</section>")
    for component, outcomes in _sections(r).items():
        shown = [o for o in outcomes if _visible(o, hidden_visibility)]
        x = next(row for row in rows if row.component == component)
        out.append(
            f'<section id="c-{component}"><h2>{component}: {escape(results.row_title(component))} '
            f'<span class="dim">({x.earned:g} / {x.available:g})</span></h2>'
        )
        if _note(component):
            out.append(f'<p class="dim">{escape(_note(component))}</p>')
        for o in shown:
            if o.passed:
                continue
            badge = "" if o.property.visible else f'<span class="badge">{escape(hidden)}</span>'
            points = escape(_("({points} pt)").format(points=f"{o.property.points:g}"))
            out.append(
                f'<details class="{o.status}" open><summary>{escape(_verdict(o))}: '
                f"{escape(_label(o))}{badge} "
                f'<span class="dim">{points}</span></summary>'
            )
            out.append(f"<p>{escape(o.message)}</p>")
            if o.example:
                out.append(f"<p>{escape(smallest)}</p><pre>{escape(o.example)}</pre>")
            if o.hint:
                hint = _("Hint: {hint}").format(hint=o.hint)
                out.append(f'<p class="hint">{escape(hint)}</p>')
            if o.detail:
                out.append(f"<p>{escape(yours)}</p><pre>{escape(o.detail)}</pre>")
            out.append("</details>")
        passed = [o for o in shown if o.passed]
        if passed:
            out.append(
                '<ul class="passed">'
                + "".join(f"<li>✓ {escape(_label(o) + _tag(o))}</li>" for o in passed)
                + "</ul>"
            )
        concealed = [o for o in outcomes if not _visible(o, hidden_visibility)]
        if concealed:
            out.append(f'<p class="dim">{escape(_concealed(concealed))}</p>')
        out.append("</section>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def markdown(r, hidden_visibility: str = results.HIDDEN_VISIBILITY) -> str:
    rows = results.summarize(r.outcomes)
    earned, available = sum(x.earned for x in rows), sum(x.available for x in rows)
    out = [
        "# " + _("Transformer kit: feedback for {name}").format(name=_md_text(r.name)),
        "",
        "**" + _("Total: {total} points").format(total=f"{earned:g} / {available:g}") + "**",
        "",
        *([f"**{_md_text(_(JUDGE_ERROR_LINE))}**", ""] if r.errors else []),
        "| {} | {} | {} |".format(_("component"), _("points"), _("properties passed")),
        "|---|---:|---:|",
    ]
    out += [
        f"| {x.component} | {x.earned:g} / {x.available:g} | {x.passed} / {x.total} |" for x in rows
    ]
    if r.picture or r.picture_caption:
        out += ["", f"## {_(PICTURE_TITLE)}", ""]
        if r.picture:
            out += [f"![{_(PICTURE_ALT)}](attention_weights.png)", ""]
        if r.picture_caption:
            out += [_md_text(r.picture_caption), ""]
    for component, outcomes in _sections(r).items():
        out += ["", f"## {component}: {results.row_title(component)}", ""]
        if _note(component):
            out += [_note(component), ""]
        for o in outcomes:
            if not _visible(o, hidden_visibility):
                continue
            if o.passed:
                out.append(f"- ✓ {_label(o)}{_tag(o)}")
                continue
            points = _("({points} pt)").format(points=f"{o.property.points:g}")
            out.append(f"- ✗ **{_verdict(o)}**: {_label(o)}{_tag(o)} {points}")
            out.append(f"  - {_md_text(o.message)}")
            if o.example:
                smallest = _("smallest failing input:")
                out.append(f"  - {smallest}\n\n" + _md_code(o.example) + "\n")
            if o.hint:
                out.append("  - " + _("hint: {hint}").format(hint=_md_text(o.hint)))
            if o.detail:
                yours = _("your code:")
                out.append(f"  - {yours}\n\n" + _md_code(o.detail) + "\n")
    return "\n".join(out) + "\n"


_MD_SPECIAL = re.compile(r"([\\`*_\[\]#|~])")  # inline markup; block markup cannot start mid-line


_CODE_SPAN = re.compile(r"(`[^`<>&]+`)")  # no HTML character inside: none raw in the file


def _md_text(text: str) -> str:
    """Text from a worker as one line of plain Markdown: no markup, no HTML, no line that starts a new block. A
    code span the messages write (`d_model`) stays one: its content is literal in Markdown (no markup, no HTML,
    and without a backtick inside it cannot end early); everything around it is escaped."""
    parts = _CODE_SPAN.split(" ".join(text.split()))
    return "".join(
        part if i % 2 else escape(_MD_SPECIAL.sub(r"\\\1", part), quote=False)
        for i, part in enumerate(parts)
    )


def _md_code(text: str) -> str:
    """A fenced block that the text cannot close: the fence is longer than any run of backticks inside."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"
