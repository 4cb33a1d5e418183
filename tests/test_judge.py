"""The judge on a small class: determinism, sections (no double jeopardy), outputs, --only, feedback pages."""

from __future__ import annotations

import ast
import base64
import csv
import json
import shutil
import subprocess
import sys
from html import escape
from html.parser import HTMLParser
from pathlib import Path

import pytest

from autograder import KIT
from autograder.components import BY_NAME, NAMES
from autograder.judge import sample
from autograder.judge.limits import Limits
from autograder.judge.scheduler import Options, grade
from autograder.lms.identity import folder_of
from autograder.results import INTEGRATION, ROWS

# label -> recipe; run 1 and run 2 give the students names that sort in opposite orders.
CLASS = {
    "reference": "reference",
    "stubs": "stubs",
    "scale": "bug:attention:missing_scale",
    "merge": "bug:multi_head:merge_without_transpose",
    "axis": "bug:attention:softmax_wrong_axis",  # a mistake twelve properties word differently
    "missing": "missing:feed_forward",
    "syntax": "syntax:decoder",
    "noisy": "reference",  # made noisy below
}
NOISE = """
import sys as _sys
import warnings as _warnings
print("hello from import")
_sys.stderr.write("and from stderr\\n")
_warnings.warn("a warning at import", UserWarning)
_quiet_softmax = softmax


def softmax(x, dim=-1):
    print("softmax of", tuple(x.shape))
    _sys.stderr.write("debugging softmax\\n")
    _warnings.warn("a warning in softmax", UserWarning)
    return _quiet_softmax(x, dim)
"""


def name(run: int, i: int, label: str) -> str:
    return f"{i:02d}-{label}" if run == 1 else f"{99 - i:02d}-{label}"


def make_class(dest: Path, run: int) -> dict[str, str]:
    names = {}
    for i, (label, recipe) in enumerate(CLASS.items()):
        folder = sample.make(recipe, dest / name(run, i, label))
        if label == "noisy":
            (folder / "attention.py").write_text((folder / "attention.py").read_text() + NOISE)
        names[label] = folder.name
    return names


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("judge")
    names1, names2 = make_class(base / "subs1", 1), make_class(base / "subs2", 2)
    # Run 1 through the command line, --jobs 2; run 2 through the API, --jobs 1, students in the opposite order.
    cmd = [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        str(base / "subs1"),
        "--out",
        str(base / "out1"),
        "--jobs",
        "2",
        "--timeout",
        "3",
        "--quiet",
    ]
    done = subprocess.run(cmd, cwd=KIT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results2 = grade(base / "subs2", base / "out2", Options(jobs=1, limits=Limits(op_timeout=3)))
    yield {
        "base": base,
        "names1": names1,
        "names2": names2,
        "out1": base / "out1",
        "out2": base / "out2",
        "results2": results2,
    }
    shutil.rmtree(base, ignore_errors=True)


def results(runs, label, run=1) -> dict:
    folder = folder_of(runs[f"out{run}"], runs[f"names{run}"][label])
    return json.loads((folder / "results.json").read_text())


def by_component(res: dict, integration: bool | None = None) -> dict[str, float]:
    pts = {n: 0.0 for n in ROWS}
    for t in res["tests"]:
        if integration is None or ("::integration::" in t["name"]) == integration:
            pts[t["tags"][0]] += t["score"]
    return pts


def without_time(path: Path) -> str:
    return "".join(
        line for line in path.read_text().splitlines(True) if '"execution_time"' not in line
    )


@pytest.mark.parametrize("label", list(CLASS))
def test_byte_identical_across_runs_jobs_and_order(runs, label):
    a = folder_of(runs["out1"], runs["names1"][label]) / "results.json"
    b = folder_of(runs["out2"], runs["names2"][label]) / "results.json"
    assert without_time(a) == without_time(b)


def test_no_cache_and_concurrency_change_nothing(runs, tmp_path):
    """Two identical submissions graded side by side in two slots, nothing reused, give the same bytes."""
    for who in ("a", "b"):
        folder = sample.make("missing:attention_numpy", tmp_path / "subs" / who)
        for f in folder.iterdir():  # keep it quick: attention and mask only
            if f.stem not in ("attention", "mask"):
                f.unlink()
    grade(
        tmp_path / "subs",
        tmp_path / "out",
        Options(jobs=2, cache=False, limits=Limits(op_timeout=3)),
    )
    assert without_time(folder_of(tmp_path / "out", "a") / "results.json") == without_time(
        folder_of(tmp_path / "out", "b") / "results.json"
    )
    assert (
        by_component(json.loads((folder_of(tmp_path / "out", "a") / "results.json").read_text()))[
            "attention"
        ]
        > 0
    )


def test_reference_full_marks_and_stubs_zero(runs):
    ref, stubs = results(runs, "reference"), results(runs, "stubs")
    assert ref["score"] == sum(t["max_score"] for t in ref["tests"])
    assert stubs["score"] == 0


def test_results_json_is_gradescope_format(runs):
    res = results(runs, "scale")
    assert isinstance(res["execution_time"], float)
    assert {t["tags"][0] for t in res["tests"]} == set(ROWS)
    for t in res["tests"]:
        assert set(t) >= {"name", "score", "max_score", "output", "visibility", "tags"}
        if t["tags"] == [INTEGRATION]:  # its own row, never tagged as the component it re-runs
            assert "::integration::" in t["name"]
        else:
            assert t["tags"][0] in NAMES and t["name"].startswith(t["tags"][0] + "::")
            assert "::integration::" not in t["name"]
        assert t["visibility"] in ("visible", "after_due_date")
    assert any(t["visibility"] == "after_due_date" for t in res["tests"]), (
        "hidden properties show after the due date"
    )


def test_a_bug_costs_its_own_component_only(runs):
    """No double jeopardy: every other component's section is full; only integration shares may drop."""
    ref = by_component(results(runs, "reference"), integration=False)
    for label, component in (("scale", "attention"), ("merge", "multi_head")):
        got = by_component(results(runs, label), integration=False)
        assert got[component] < ref[component]
        assert {n: got[n] for n in NAMES if n != component} == {
            n: ref[n] for n in NAMES if n != component
        }


@pytest.mark.parametrize("label, component", [("missing", "feed_forward"), ("syntax", "decoder")])
def test_missing_file_or_syntax_error_costs_that_component_only(runs, label, component):
    ref = by_component(results(runs, "reference"), integration=False)
    got = by_component(results(runs, label), integration=False)
    assert got[component] <= 0.1 * ref[component]
    assert {n: got[n] for n in NAMES if n != component} == {
        n: ref[n] for n in NAMES if n != component
    }
    outputs = " ".join(
        t["output"] for t in results(runs, label)["tests"] if t["tags"][0] == component
    )
    assert ("missing" in outputs) if label == "missing" else ("SyntaxError" in outputs)


def test_printing_warning_stderr_still_full_marks(runs):
    assert results(runs, "noisy")["score"] == results(runs, "reference")["score"]


def test_hidden_property_source_never_reaches_outputs(runs):
    code_lines = set()
    for path in (KIT / "autograder" / "hidden").glob("*.py"):
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef):
                body = fn.body[1:] if ast.get_docstring(fn) else fn.body
                for stmt in body:
                    for line in (ast.get_source_segment(path.read_text(), stmt) or "").splitlines():
                        if len(line.strip()) >= 24:
                            code_lines.add(line.strip())
    assert code_lines, "no hidden property code found to look for"
    for path in runs["out1"].rglob("*"):
        if path.suffix in (".json", ".html", ".md"):
            text = path.read_text()
            leaked = [line for line in code_lines if line in text]
            assert not leaked, (path, leaked[:3])


def test_gradebook_csv(runs):
    with open(runs["out1"] / "gradebook.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["student", *NAMES, INTEGRATION, "total", "late", "note", "id"]
    assert rows[0]["student"] == "(max)"
    students = {r["student"]: r for r in rows[1:]}
    assert set(students) == set(runs["names1"].values())
    ref = students[runs["names1"]["reference"]]
    assert float(ref["total"]) == results(runs, "reference")["score"] == float(rows[0]["total"])
    assert float(students[runs["names1"]["missing"]]["feed_forward"]) == 0
    # A bug in attention.py costs attention and the integration share, never a component that uses it.
    scale = students[runs["names1"]["scale"]]
    assert float(scale["attention"]) < float(ref["attention"])
    assert {n: scale[n] for n in NAMES if n != "attention"} == {
        n: ref[n] for n in NAMES if n != "attention"
    }
    assert float(ref["integration"]) == float(rows[0]["integration"]) > 0


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs, self.tables, self.rows = [], [], [], 0

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend((tag, k, v or "") for k, v in attrs)
        if tag == "table":
            self.tables.append(dict(attrs).get("class"))
        if tag == "tr":
            self.rows += 1


@pytest.mark.parametrize("label", ["reference", "merge", "stubs"])
def test_feedback_html_is_self_contained_with_a_heatmap(runs, label):
    folder = folder_of(runs["out1"], runs["names1"][label])
    page = _Page()
    page.feed((folder / "feedback.html").read_text())
    assert "components" in page.tables
    assert page.rows >= 1 + len(NAMES)
    # nothing fetched from anywhere: data: URIs and in-page anchors only
    for (
        tag,
        key,
        value,
    ) in page.attrs:
        if key in ("src", "href", "action", "srcset", "poster", "data"):
            assert value.startswith(("data:", "#")), (tag, key, value[:80])
    assert "script" not in page.tags and "link" not in page.tags and "iframe" not in page.tags
    images = [v for t, k, v in page.attrs if t == "img" and k == "src"]
    assert images and images[0].startswith("data:image/png;base64,")
    assert base64.b64decode(images[0].split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert (folder / "feedback.md").read_text().startswith("# ")
    for component in NAMES:
        assert escape(BY_NAME[component].title) in (folder / "feedback.html").read_text()


def test_feedback_names_the_failure_and_hint(runs):
    text = (folder_of(runs["out1"], runs["names1"]["scale"]) / "feedback.html").read_text()
    assert "Hint:" in text and "Smallest failing input" in text
    assert "no scaling" in text  # the hint that names the bug


def test_only_regrades_one_student_and_merges(runs, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(runs["out1"], out)
    subs = tmp_path / "subs"
    shutil.copytree(runs["base"] / "subs1", subs)
    stubs = runs["names1"]["stubs"]
    # the student fixed one file
    shutil.copyfile(KIT / "solutions" / "attention.py", subs / stubs / "attention.py")
    before = (out / "gradebook.csv").read_text().splitlines()
    # one student regraded: one grading process (docs/speed.md, "One grading process for a small class")
    grade(subs, out, Options(jobs=1, only=[stubs], limits=Limits(op_timeout=3)))
    after = (out / "gradebook.csv").read_text().splitlines()
    assert len(after) == len(before)
    changed = [(b, a) for b, a in zip(before, after) if b != a]
    assert len(changed) == 1 and changed[0][1].startswith(stubs + ",")
    with open(out / "gradebook.csv", newline="") as f:
        row = next(r for r in csv.DictReader(f) if r["student"] == stubs)
    assert float(row["attention"]) == by_component(results(runs, "reference"))["attention"]
    others = [n for n in runs["names1"].values() if n != stubs]
    for n in others:
        assert (folder_of(out, n) / "results.json").read_bytes() == (
            folder_of(runs["out1"], n) / "results.json"
        ).read_bytes()


def test_sample_class_recipes_are_valid(tmp_path):
    dest = sample.materialize(sample.CLASS, tmp_path / "class")
    students = sorted(p.name for p in dest.iterdir())
    assert len(students) >= 8
    for hostile in sample.hostile_names():
        folder = sample.make(f"hostile:{hostile}", tmp_path / "h" / hostile)
        control = sample.make(f"control:{hostile}", tmp_path / "c" / hostile)
        changed = [
            f.name for f in folder.iterdir() if f.read_bytes() != (control / f.name).read_bytes()
        ]
        assert changed, f"{hostile}: the hostile block changes nothing"


@pytest.mark.parametrize("component", NAMES)
def test_a_section_without_its_file_needs_no_worker(component, tmp_path):
    """The judge grades a section whose own file is missing without a worker (remote.WithoutItsFile): every
    property's outcome equals a run on the section's real package (the reference dependencies, no file)."""
    from autograder import registry
    from autograder.judge.remote import WithoutItsFile
    from autograder.student_code import InProcessStudentCode
    from autograder.suite import core

    for dep in BY_NAME[component].deps:
        shutil.copy(KIT / "solutions" / f"{dep}.py", tmp_path / f"{dep}.py")
    real = InProcessStudentCode(tmp_path, label="real")
    sources = {dep: (tmp_path / f"{dep}.py").read_text() for dep in BY_NAME[component].deps}
    shortcut = WithoutItsFile(component, sources)
    for p in registry.load(include_hidden=True, components=[component]):
        a, b = core.run_property(p, real), core.run_property(p, shortcut)
        assert a.status != core.Status.PASSED, p.id
        assert (a.status, a.message, a.hint, a.example, a.detail) == (
            b.status,
            b.message,
            b.hint,
            b.example,
            b.detail,
        ), p.id


def test_grade_writes_the_class_report_from_real_results(runs):
    """The report of a really graded class (run 1, through the command line): the planted bugs are counted
    as the mistakes their hints name, in their own component; the stubs are "not written"."""
    import json

    from autograder.bugs import catalog

    report = json.loads((runs["out1"] / "report.json").read_text())
    assert (runs["out1"] / "report.html").is_file() and report["size"] == len(CLASS)
    names = runs["names1"]
    for label, bug_id in (
        ("scale", "attention:missing_scale"),
        ("merge", "multi_head:merge_without_transpose"),
    ):
        bug = next(b for b in catalog() if b.id == bug_id)
        named = [
            m
            for m in report["mistakes"]
            # the report's lists name students by the judge's id
            if m["row"] == bug.component
            and folder_of(runs["out1"], names[label]).name in m["students"]
        ]
        assert any(bug.hint.lower() in m["label"].lower() for m in named), named
    # one row per misconception: each planted bug is one row of its component, however many properties (each
    # with its own wording) it fails, and that row is the bug's (report/signatures.json)
    for label in ("scale", "merge", "axis"):
        bug_id = CLASS[label].removeprefix("bug:")
        student = folder_of(runs["out1"], names[label]).name
        rows = [
            m["hint_id"]
            for m in report["mistakes"]
            if m["row"] == bug_id.split(":")[0] and student in m["students"]
        ]
        assert rows == ["bug:" + bug_id], rows
    assert folder_of(runs["out1"], names["stubs"]).name in report["not_written"]["attention"]
    assert report["similarity"]["files"]["attention"] >= 1
