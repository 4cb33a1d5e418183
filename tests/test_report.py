"""The class report (autograder/report/): its figures equal those computed from the results, bad input gets a
clear message and a page for the rest, student-originated strings are escaped, similarity finds the planted
copies and nothing else. The classes are synthetic, written by the judge's own writers (report/synthetic.py);
the browser test is tests/test_report_browser.py."""

import csv
import io
import json
import os
from pathlib import Path

import pytest

from autograder import i18n
from autograder.cli import main
from autograder.report import (
    CANVAS_CSV,
    MOODLE_CSV,
    REPORT_HTML,
    REPORT_JSON,
    collect,
    hints,
    page,
    similarity,
    stats,
    synthetic,
    write,
)
from autograder.report.model import ClassResults, Student
from autograder.report.model import Test as Result

SIM_COMPONENTS = ("mask", "feed_forward", "multi_head")  # two short components and a longer one


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    base = tmp_path_factory.mktemp("report")
    plan = synthetic.make_class(
        base / "out", 14, submissions=base / "subs", copies=1, hostile_names=True, judge_error=True
    )
    with i18n.chosen("en"):
        write(base / "out")
    return base, plan, json.loads((base / "out" / REPORT_JSON).read_text())


def test_mistake_counts_equal_the_results(built):
    """Every failure a hint named is in one misconception's row of its row, a student once; failing integration
    re-runs are counted at their root (the synthetic class's re-runs fail only when a file they use does)."""
    _, plan, data = built
    expected = synthetic.expected_mistakes(plan)
    found = {(m["row"], m["hint_id"]): set(m["students"]) for m in data["mistakes"]}
    assert found == expected and found
    # every hint the generator drew from the catalog is recognised as its catalog message, not as loose text
    assert not any(h.startswith(hints.TEXT_ID) for _, h in found)


def test_score_figures_equal_the_results(built):
    _, plan, data = built
    totals = {name: sum(o.score for o in r.outcomes) for name, r in plan.results.items()}
    assert {s["name"]: s["total"] for s in data["students"]} == pytest.approx(totals)
    total = next(d for d in data["distributions"] if d["row"] == "total")
    assert total["at_zero"] == sum(v == 0 for v in totals.values())
    assert total["median"] == pytest.approx(
        sorted(totals.values())[len(totals) // 2 - 1 : len(totals) // 2 + 1][0] / 2
        + sorted(totals.values())[len(totals) // 2] / 2
    )
    judged = {h["student"] for h in data["health"] if h["kind"] == "judge_error"}
    assert judged == {list(plan.results)[-1]}


def test_item_analysis_pass_rates(built):
    _, plan, data = built
    item = data["items"][0]
    outcomes = [
        o for r in plan.results.values() for o in r.outcomes if o.property.id == item["test"]
    ]
    assert item["pass_rate"] == pytest.approx(sum(o.passed for o in outcomes) / len(outcomes))
    assert {i["flag"] for i in data["items"]} <= {"", "all_pass", "all_fail", "low_discrimination"}


def test_a_spanish_hint_is_the_same_mistake_as_the_english_one():
    msgid = "inverted mask: True means may attend"
    with i18n.chosen("es"):
        spanish = i18n._(msgid)
    assert spanish != msgid and hints.hint_id(spanish) == hints.hint_id(msgid) == msgid


def test_student_names_are_escaped_in_the_page_and_neutralised_in_the_csvs(built):
    base, _, _ = built
    page = (base / "out" / REPORT_HTML).read_text()
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    for name in (CANVAS_CSV, MOODLE_CSV):
        rows = list(csv.reader(io.StringIO((base / "out" / name).read_text())))
        cells = [c for row in rows for c in row]
        assert not any(c.startswith(("=", "+", "@")) for c in cells)
        if name == CANVAS_CSV:
            assert "'=1+2" in cells and "'@sum(1)" in cells and "'-2" in cells
        else:  # no roster: Moodle has nothing to map a name to, so no row (tests/test_lms_roster.py has one)
            assert len(rows) == 1
    canvas = list(csv.reader(io.StringIO((base / "out" / CANVAS_CSV).read_text())))
    assert canvas[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert canvas[1][0].strip() == "Points Possible" and len(canvas) == 2 + 14


def test_similarity_finds_the_copy_and_nothing_else(built):
    base, plan, _ = built
    data = collect.read(base / "out")
    found = similarity.compare(data, base / "subs", components=SIM_COMPONENTS)
    assert {(p.a, p.b) for p in found.pairs} == {tuple(sorted(plan.copies[0]))}
    # the copy is found in each component where the two wrote code of their own
    assert len(found.pairs) >= 2
    assert all("<mark>" in p.marked_a and "<img" not in p.marked_a for p in found.pairs)


def test_correct_solutions_of_a_small_class_are_not_flagged(tmp_path):
    """Three students who all hand in the reference (once normalised, what a correct short solution often is):
    too small a class to tell what everyone writes, so sharing the reference's own code is no sign."""
    plan = synthetic.make_class(tmp_path / "out", 3, seed=5)
    subs = tmp_path / "subs"
    for name in plan.results:
        for c in SIM_COMPONENTS:
            (subs / name).mkdir(parents=True, exist_ok=True)
            source = (Path(similarity.KIT) / "solutions" / f"{c}.py").read_text()
            (subs / name / f"{c}.py").write_text(
                source.replace("x", "inputs") if c == "mask" else source
            )
    found = similarity.compare(collect.read(tmp_path / "out"), subs, components=SIM_COMPONENTS)
    assert found.pairs == []


@pytest.mark.parametrize("damage", ["missing", "malformed", "wrong_shape", "no_gradebook"])
def test_a_bad_results_json_is_named_and_the_rest_reported(tmp_path, damage):
    synthetic.make_class(tmp_path, 3, seed=1)
    path = tmp_path / "student001" / "results.json"
    if damage == "missing":
        path.unlink()
    elif damage == "malformed":
        path.write_text("{not json")
    elif damage == "wrong_shape":
        path.write_text(json.dumps({"tests": [{"name": 3}]}))
    else:  # points possible then come from the results themselves
        maximum = (tmp_path / "gradebook.csv").read_text().splitlines()[1].split(",")
        (tmp_path / "gradebook.csv").unlink()
    assert main(["report", str(tmp_path), "--lang", "en"]) == 0
    data = json.loads((tmp_path / REPORT_JSON).read_text())
    if damage == "no_gradebook":
        columns = maximum[
            1 : 1 + len(data["maximum"])
        ]  # after the name, before the total and the rest
        assert [f"{v:g}" for v in data["maximum"].values()] == columns and not data["problems"]
        return
    assert [s["name"] for s in data["students"]] == ["student000", "student002"]
    assert len(data["problems"]) == 1 and data["problems"][0].startswith("student001: ")
    assert "student001: " in (tmp_path / REPORT_HTML).read_text()


def test_an_empty_class_and_one_student(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    write(empty, lang="es")
    page = (empty / REPORT_HTML).read_text()
    assert '<html lang="es">' in page and "Informe de la clase" in page and "Ningún fallo" in page
    synthetic.make_class(tmp_path / "one", 1, seed=2)
    write(tmp_path / "one", lang="en")
    data = json.loads((tmp_path / "one" / REPORT_JSON).read_text())
    assert data["size"] == 1 and all(i["discrimination"] is None for i in data["items"])


# A class of 25 whose bugs were planted (each in one component, from autograder/bugs), three correct students
# and two who did not hand in a file, named as Moodle's download names them, graded in Spanish: the ground
# truth the report's mistakes and flags are compared with.
@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    out = tmp_path_factory.mktemp("planted") / "out"
    with i18n.chosen("es"):
        plan = synthetic.make_class(
            out, 25, seed=3, names=synthetic.moodle_names(25), correct=3, missing=2, bug_rate=0.5
        )
        write(out, lang="es")
    return out, plan, json.loads((out / REPORT_JSON).read_text())


def test_one_row_per_misconception_naming_exactly_its_students(planted):
    """A bug's row names exactly the students whose results a hint of that bug is in, across every property
    and wording it failed; no student is in two rows of one bug; several wordings do share a row."""
    _, plan, data = planted
    truth: dict[str, set[str]] = {}
    for name, ids in plan.named.items():
        for b in ids:
            truth.setdefault(b, set()).add(name)
    rows = [m for m in data["mistakes"] if m["hint_id"].startswith(hints.BUG_ID)]
    assert rows and len({m["hint_id"] for m in rows}) == len(rows)
    for m in rows:
        # a joint id (bugs the suite says the same of: signatures.misconceptions) names each member's students
        bugs = m["hint_id"].removeprefix(hints.BUG_ID).split(hints.JOINT)
        assert set(m["students"]) == set().union(*(truth.get(b, set()) for b in bugs)), m["hint_id"]
    assert any(
        len(m["wordings"]) > 1 for m in rows
    )  # grouped: one row where hint texts were several
    # every student who made a mistake is named in view: no list closed around the names
    html = (out := planted[0] / REPORT_HTML).read_text()
    assert "<details><summary>" not in html.split('id="mistakes"')[1].split('id="items"')[0], out


def test_integration_failures_count_at_their_root(planted):
    """A re-run that fails because a file it uses fails in the student's own folder (a planted bug there, the
    stub, or the file not handed in) is counted under that file, never as a mistake of the re-run component."""
    from autograder.components import BY_NAME

    _, plan, data = planted
    assert not [m for m in data["mistakes"] if m["row"] == "integration"]
    assert not [u for u in data["unexplained"] if u["row"] == "integration"]
    rooted = {(r["row"], s) for r in data["rooted"] for s in r["students"]}
    failed = 0
    for name, r in plan.results.items():
        broken = (
            {b.component for b in plan.bugs[name]}
            | set(plan.unwritten[name])
            | set(plan.missing[name])
        )
        for o in r.outcomes:
            if o.property.integration and not o.passed:
                failed += 1
                roots = broken & set(BY_NAME[o.property.component].deps)
                assert roots and all((root, name) in rooted for root in roots), (
                    name,
                    o.property.id,
                )
    assert failed


def test_flags_are_true_on_the_planted_class(planted):
    """ "May be broken" only where a failing student's failure no evidence explains (here: the generator's rare
    failures with no hint, and the two bugs no catalog message names); never where every failing student's
    hint names their planted bug; and discrimination is against the rest of the property's own component."""
    _, plan, data = planted
    failures: dict[str, list] = {}
    for r in plan.results.values():
        for o in r.outcomes:
            if not o.passed:
                failures.setdefault(o.property.id, []).append(o)
    explained_everywhere = {
        pid for pid, os in failures.items() if all(o.hint or o.status != "failed" for o in os)
    }
    flagged = {i["test"] for i in data["items"] if i["flag"] == "low_discrimination"}
    assert not flagged & explained_everywhere
    for i in data["items"]:
        if i["test"] in flagged:
            assert any(not o.hint and o.status == "failed" for o in failures[i["test"]])
    # against the whole total, as before, explained properties of this class would read as poor items
    before = _discrimination_against_total(plan)
    assert any(
        before[pid] < stats.LOW_DISCRIMINATION for pid in explained_everywhere if pid in before
    )


def _discrimination_against_total(plan) -> dict[str, float]:
    import numpy as np

    totals = {n: sum(o.score for o in r.outcomes) for n, r in plan.results.items()}
    found = {}
    ids = {o.property.id for r in plan.results.values() for o in r.outcomes}
    for pid in ids:
        xs, ys = [], []
        for n, r in plan.results.items():
            o = next((o for o in r.outcomes if o.property.id == pid), None)
            if o is None:
                continue
            xs.append(float(o.passed))
            ys.append(totals[n] - o.score)
        if np.std(xs) and np.std(ys):
            found[pid] = float(np.corrcoef(xs, ys)[0, 1])
    return found


def _student(name: str, marks: dict[str, bool], other: float) -> Student:
    tests = [
        Result(f"a::{p}", "a", 1.0 if ok else 0.0, 1.0, "passed" if ok else "failed", "")
        for p, ok in marks.items()
    ]
    return Student(name, [*tests, Result("b::big", "b", other, 50.0, "passed", "")])


def test_discrimination_is_against_the_rest_of_its_own_component():
    """p1's failures go with failing p2 and p3 (its component) but with more points elsewhere: against the rest
    of its component it discriminates well, against the total it would not."""
    import numpy as np

    rows = [
        ({"p1": False, "p2": False, "p3": False}, 50.0),
        ({"p1": False, "p2": False, "p3": True}, 49.0),
        ({"p1": False, "p2": True, "p3": False}, 48.0),
        ({"p1": True, "p2": True, "p3": True}, 10.0),
        ({"p1": True, "p2": True, "p3": False}, 12.0),
        ({"p1": True, "p2": True, "p3": True}, 11.0),
    ]
    data = ClassResults(
        "x", [_student(f"s{i}", m, o) for i, (m, o) in enumerate(rows)], {"a": 3, "b": 50}
    )
    item = next(i for i in stats.summarize(data).items if i.test == "a::p1")
    passed = [float(m["p1"]) for m, _ in rows]
    rest = [m["p2"] + m["p3"] for m, _ in rows]
    assert item.discrimination == pytest.approx(float(np.corrcoef(passed, rest)[0, 1]))
    assert item.discrimination > 0.5 and not item.flag
    total = [m["p2"] + m["p3"] + o for m, o in rows]
    assert np.corrcoef(passed, total)[0, 1] < 0  # what the old statistic saw


def test_an_unexplained_poor_item_is_flagged_and_an_explained_one_is_not():
    """The same poor correlation: flagged when a failure carries no hint, not when every failure's hint is a
    catalog message naming a mistake."""
    hint = "inverted mask: True means may attend"
    marks = [
        True,
        False,
        True,
        False,
        True,
        False,
    ]  # p1's failures go with nothing else in the component
    others = [False, True, False, True, True, False]
    for with_hint, flag in ((False, "low_discrimination"), (True, "")):
        students = []
        for i, (ok, other) in enumerate(zip(marks, others, strict=True)):
            p1 = Result(
                "a::p1",
                "a",
                float(ok),
                1.0,
                "passed" if ok else "failed",
                "" if ok or not with_hint else hint,
            )
            p2 = Result("a::p2", "a", float(other), 1.0, "passed" if other else "failed", "")
            students.append(Student(f"s{i}", [p1, p2]))
        item = next(
            i
            for i in stats.summarize(ClassResults("x", students, {"a": 2})).items
            if i.test == "a::p1"
        )
        assert item.discrimination is not None and item.discrimination < stats.LOW_DISCRIMINATION
        assert item.flag == flag


def test_who_needs_help_lowest_first_in_the_course_collation(planted):
    """The students table: by total, lowest first, ties in the course language's alphabetical order (Spanish:
    accents ignored, ñ after n), the LMS download's suffix stripped, % shown, missing and stub files said so."""
    out, plan, data = planted
    html = (out / REPORT_HTML).read_text()
    table = html.split('id="student-table"')[1].split("</table>")[0]
    rows = table.split('<tr class="student-row">')[1:]
    shown = [r.split('">', 2)[2].split("</a>")[0] for r in rows]
    totals = [float(r.split('class="n total">')[1].split("<")[0]) for r in rows]
    assert totals == sorted(totals) and len(rows) == 25
    assert not any("assignsubmission" in n for n in shown)
    full = [n for n, t in zip(shown, totals, strict=True) if t == max(totals)]
    assert full == sorted(full, key=page.collation_key)
    assert 'class="n missing"' in table and "no entregado" in table and 'class="n share"' in table
    with i18n.chosen("es"):
        names = ["Óscar", "Bruno", "Ñandú", "Nuria", "Ángela", "Zoe", "Oso"]
        assert sorted(names, key=page.collation_key) == [
            "Ángela",
            "Bruno",
            "Nuria",
            "Ñandú",
            "Óscar",
            "Oso",
            "Zoe",
        ]
    assert page.shown("Ángela Núñez_1000_assignsubmission_file_") == "Ángela Núñez"


def test_labels_keep_their_content_and_code_spans_render(planted):
    out, _, _ = planted
    html = (out / REPORT_HTML).read_text()
    assert "…" not in html.split('id="mistakes"')[1].split('id="items"')[0]
    assert "`" not in html and "<code>" in html
    assert "con la nota completa" in html and "nota máxima" not in html
    assert page.rich("use `x.T` & <b>") == "use <code>x.T</code> &amp; &lt;b&gt;"


def test_the_item_table_is_folded_by_component_flagged_ones_open(planted):
    out, _, data = planted
    html = (out / REPORT_HTML).read_text()
    folds = html.split('<details class="items"')[1:]
    assert len(folds) >= 13
    # a fold per (gradebook row, component): a component's own properties, and its integration re-runs apart
    flagged = {
        (i["row"], i["test"].split("::")[0])
        for i in data["items"]
        if i["flag"] in ("low_discrimination", "all_fail")
    }
    for fold in folds:
        row = fold.split('data-row="')[1].split('"')[0]
        component = fold.split('data-component="')[1].split('"')[0]
        opened = " open>" in fold.split("<summary>")[0]
        assert opened == ((row, component) in flagged), (row, component)


def test_the_missing_hint_is_the_judges():
    from autograder.suite.core import ERROR_KIND_HINTS

    assert stats.MISSING_HINT == ERROR_KIND_HINTS["missing"]


def test_the_course_scale_is_shown_when_given(planted):
    """`--scale 10` (the CLI's, passed to render, or carried by the report's inputs): the total out of 10."""
    out, _, _ = planted
    data = collect.read(out)
    summary = stats.summarize(data)
    assert 'class="n scaled"' not in page.render(data, summary, None)
    html = page.render(data, summary, None, scale=10)
    first = html.split('id="student-table"')[1].split('<tr class="student-row">')[1]
    total = float(first.split('class="n total">')[1].split("<")[0])
    scaled = first.split('class="n scaled">')[1].split("<")[0]
    assert "<th class=n>/ 10</th>" in html
    assert scaled == f"{10 * total / data.total_maximum:.1f}"


def test_the_browser_tests_skip_cleanly_without_playwright(tmp_path):
    """The README's install (no dev extra) has no playwright: the browser tests skip, they do not error."""
    import subprocess
    import sys

    block = tmp_path / "sitecustomize.py"
    block.write_text(
        "import sys\nsys.modules['playwright'] = None\nsys.modules['playwright.sync_api'] = None\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH", "")]))
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "0",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rs",
            "tests/test_report_browser.py",
        ],
        cwd=Path(__file__).parent.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:]
    assert "skipped" in run.stdout and "playwright is not installed" in run.stdout


def test_a_student_without_any_submission_reads_not_handed_in(planted):
    """A roster's student with no submission (the record's `missing`, which the LMS import sets) shows "not
    handed in" in every column, never a row of zeros, and comes first (lowest total)."""
    out, _, _ = planted
    data = collect.read(out)
    data.students.append(Student("Zacarías Ñúñez"))
    data.students[-1].missing = True
    with i18n.chosen("es"):
        html = page.render(data, stats.summarize(data), None)
    first = (
        html.split('id="student-table"')[1].split('<tr class="student-row">')[1].split("</tr>")[0]
    )
    assert "Zacarías Ñúñez" in first
    assert first.count('class="n missing"') == len([r for r, m in data.maximum.items() if m])
