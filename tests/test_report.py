"""The class report (autograder/report/): its figures equal those computed from the results, bad input gets a
clear message and a page for the rest, student-originated strings are escaped, similarity finds the planted
copies and nothing else. The classes are synthetic, written by the judge's own writers (report/synthetic.py);
the browser test is tests/test_report_browser.py."""

import csv
import io
import json
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
    similarity,
    synthetic,
    write,
)

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
    _, plan, data = built
    expected = {}
    for name, r in plan.results.items():
        for o in r.outcomes:
            if not o.passed and o.hint and o.status != "not_implemented":
                row = "integration" if o.property.integration else o.property.component
                expected.setdefault((row, hints.hint_id(o.hint)), set()).add(name)
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
