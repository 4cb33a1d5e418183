"""The roster (issue 31, item 2) and exports that import (item 3): Canvas's and Moodle's exports recognised by
header and joined as each LMS names a submission; lms-canvas.csv and lms-moodle.csv checked against what each
importer matches on (docs/report.md, "LMS"), on fixtures shaped like each LMS's own files (tests/lms_fixtures)."""

import csv
import io

import pytest

from autograder import i18n
from autograder.lms import ingest, roster
from autograder.lms.identity import ClassIndex, Member
from autograder.report import exports
from autograder.report.model import ClassResults, Student
from autograder.report.model import Test as Result
from autograder.results import ROWS
from tests.lms_fixtures import (
    CANVAS_ROSTER,
    MOODLE_ROSTER,
    MOODLE_ROSTER_ES,
    canvas_download,
    canvas_files,
    moodle_files,
)


def write(tmp_path, text, name="roster.csv", bom=False):
    path = tmp_path / name
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


def index_of(subs, tmp_path) -> ClassIndex:
    found, problems = ingest.read_class(subs, tmp_path / "staging")
    return ClassIndex([s.member for s in found], problems)


def canvas_class(tmp_path) -> ClassIndex:
    index = index_of(canvas_download(tmp_path / "subs", canvas_files(b"a", b"m")), tmp_path)
    with i18n.chosen("en"):
        roster.join(index, *roster.read(write(tmp_path, CANVAS_ROSTER, bom=True)))
    return index


def moodle_class(tmp_path, text=MOODLE_ROSTER) -> ClassIndex:
    subs = tmp_path / "subs"
    for name, data in moodle_files(b"a", folders=False).items():
        subs.mkdir(exist_ok=True)
        (subs / name).write_bytes(data)
    index = index_of(subs, tmp_path)
    with i18n.chosen("en"):
        roster.join(index, *roster.read(write(tmp_path, text)))
    return index


def test_canvas_roster_recognised_and_joined_on_the_user_id(tmp_path):
    kind, rows, assignment = roster.read(write(tmp_path, CANVAS_ROSTER, bom=True))
    assert kind == "canvas" and assignment == "Práctica 2 (777)"
    assert [r.canvas_id for r in rows] == [
        "4242",
        "4343",
        "4444",
    ]  # no Points Possible, no test student
    index = canvas_class(tmp_path)
    by = {m.display: m for m in index.members}
    assert by["García López, Ana"].late is True and by["García López, Ana"].user_id == "4242"
    assert by["Oñate, Íñigo"].roster.sis_login_id == "inigo.onate"
    assert by["Pérez, Luis"].submitted is False and by["Pérez, Luis"].lms == "roster"
    assert [p for p in index.roster_problems if "intrusonobody" in p]  # matches no row: said
    assert by["intrusonobody"].roster is None


def test_moodle_roster_joined_on_the_full_name_as_moodle_writes_it(tmp_path):
    index = moodle_class(tmp_path)
    by = {m.display: m for m in index.members}
    assert by["Ana García López"].roster.email == "ana@uni.es"
    assert by["Íñigo Oñate"].roster.id_number == "A002"
    assert by["Pérez Luis".split()[1] + " Pérez"].submitted is False  # Luis Pérez
    # another case is another name to Moodle: no row, said
    assert by["ana garcía lópez"].roster is None
    assert any("ana garcía lópez" in p for p in index.roster_problems)


def test_a_spanish_moodle_export_is_recognised(tmp_path):
    kind, rows, _ = roster.read(write(tmp_path, MOODLE_ROSTER_ES))
    assert kind == "moodle" and rows[0].name == "Ana García López" and rows[0].email == "ana@uni.es"


def test_two_rows_of_one_name_match_nobody_and_say_so(tmp_path):
    twice = MOODLE_ROSTER + "Ana,García López,A009,,,ana2@uni.es,-,1700000000\n"
    index = moodle_class(tmp_path, twice)
    assert any("2 roster rows" in p for p in index.roster_problems)


def test_an_unknown_roster_is_refused_plainly(tmp_path):
    with pytest.raises(roster.RosterError, match="Canvas"):
        roster.read(write(tmp_path, "name,grade\nAna,3\n"))
    with pytest.raises(roster.RosterError):
        roster.read(tmp_path / "absent.csv")


# ------------------------------------------------------------------------------------------------ exports
MAXIMUM = {r: 0.0 for r in ROWS} | {"attention": 30.0, "mask": 10.0}


def results_of(index: ClassIndex, scores: dict[str, float]) -> ClassResults:
    """The class as collect.read gives it: each submission's points in attention (the rest in mask)."""
    students = []
    for m in index.members:
        if not m.submitted:
            students.append(Student(m.id, display=m.display, missing=True, member=m))
            continue
        got = scores.get(m.display, 0.0)
        tests = [Result("attention::p", "attention", min(got, 30.0), 30.0, "passed", "")]
        tests.append(Result("mask::p", "mask", max(0.0, got - 30.0), 10.0, "passed", ""))
        students.append(Student(m.id, tests, display=m.display, late=m.late, member=m))
    data = ClassResults("out", students, dict(MAXIMUM), [])
    data.roster, data.assignment = index.roster, index.assignment
    return data


def rows_of(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def canvas_import(export: list[list[str]], roster_text: str) -> tuple[dict[str, str], list[str]]:
    """What Canvas's gradebook importer does with the file, as far as the tests need: the header's assignment
    columns against the course's (a title without its "(id)" is a new assignment), the Points Possible row
    skipped, each row matched to a student by ID, then SIS User ID, then SIS Login ID, then name; ({ID: grade},
    the rows it leaves to the instructor to match by hand)."""
    course = rows_of(roster_text)
    assignments = {h for h in course[0][5:] if h.endswith(")")}
    # header?: "Student" and "ID" first, SIS User ID then SIS Login ID, the last identity column "Section"
    assert "Student" in export[0][0] and "ID" in export[0][1] and export[0][4] == "Section"
    assert export[0][:5] == course[0][:5] and set(export[0][5:]) <= assignments, "a new assignment"
    students = [r for r in course[2:] if r[0] != "Student, Test"]
    grades, unknown = {}, []
    for row in export[1:]:
        if "Points Possible" in row[0]:  # check_for_non_student_row: the maxima, not a student
            continue
        match = next(
            (s for key in (1, 2, 3, 0) for s in students if row[key] and s[key] == row[key]), None
        )
        if match is None:
            unknown.append(row[0])
        else:
            grades[match[1]] = row[5]
    return grades, unknown


def moodle_import(export: list[list[str]], roster_text: str) -> dict[str, str]:
    """What Moodle's CSV grade import does (grade/import/csv load_data.php): the identifier column mapped to a
    user field; a row whose identifier matches no user aborts the whole import; {identifier: grade}."""
    users = rows_of(roster_text)
    field = {"Email address": 5, "ID number": 2}[export[0][0]]
    known = {u[field] for u in users[1:]}
    grades = {}
    for row in export[1:]:
        assert len(row) > 1, "Moodle skips a row of one cell"
        assert row[0] and row[0] in known, (
            f"user mapping error: {row[0]!r}: the whole import aborts"
        )
        grades[row[0]] = row[1]
    return grades


def test_lms_canvas_csv_imports_every_student_into_the_rosters_assignment(tmp_path):
    index = canvas_class(tmp_path)
    data = results_of(index, {"García López, Ana": 40.0, "Oñate, Íñigo": 20.0})
    with i18n.chosen("en"):
        text, said = exports.canvas_csv(data)
    rows = rows_of(text)
    assert rows[0] == [
        "Student",
        "ID",
        "SIS User ID",
        "SIS Login ID",
        "Section",
        "Práctica 2 (777)",
    ]
    assert rows[1] == ["    Points Possible", "", "", "", "", "40"]
    grades, unknown = canvas_import(rows, CANVAS_ROSTER)
    assert grades == {"4242": "40", "4343": "20", "4444": "0"}  # Luis: no submission, 0
    assert unknown == ["intrusonobody"]  # in no roster row: Canvas asks, and the page said it
    assert ["García López, Ana", "4242", "A001", "ana.garcia", "Grupo 1", "40"] in rows
    # the submission no roster row names is in the file, by name, and said
    assert any(r[0] == "intrusonobody" for r in rows) and any(
        "intrusonobody" in p for p in index.roster_problems
    )


def test_lms_canvas_csv_scale_assignment_and_components(tmp_path):
    index = canvas_class(tmp_path)
    data = results_of(index, {"García López, Ana": 40.0, "Oñate, Íñigo": 21.0})
    opts = exports.LmsOptions(assignment="Práctica 3 (888)", scale=10, components=True)
    rows = rows_of(exports.canvas_csv(data, opts)[0])
    assert rows[0][5:] == [
        "Práctica 3 (888)",
        "Práctica 3 (888): attention",
        "Práctica 3 (888): mask",
    ]
    assert rows[1][5:] == ["10", "30", "10"]
    ana = next(r for r in rows if r[1] == "4242")
    inigo = next(r for r in rows if r[1] == "4343")
    assert ana[5:] == ["10", "30", "10"] and inigo[5] == "5.25"


def test_lms_canvas_csv_without_an_assignment_id_says_canvas_makes_a_new_one(tmp_path):
    index = index_of(canvas_download(tmp_path / "subs", canvas_files(b"a", b"m")), tmp_path)
    with i18n.chosen("en"):
        text, said = exports.canvas_csv(results_of(index, {}))
    rows = rows_of(text)
    # without a roster, a Canvas download still gives Canvas's ID
    assert {r[1] for r in rows[2:]} == {"4242", "4343", "5555"}
    assert any("new assignment" in s for s in said)


def test_lms_moodle_csv_imports_without_aborting(tmp_path):
    index = moodle_class(tmp_path)
    data = results_of(index, {"Ana García López": 40.0, "Íñigo Oñate": 10.0})
    with i18n.chosen("en"):
        text, said = exports.moodle_csv(data, exports.LmsOptions(scale=10))
    rows = rows_of(text)
    assert rows[0] == ["Email address", "Transformer"]
    assert moodle_import(rows, MOODLE_ROSTER) == {
        "ana@uni.es": "10",
        "inigo@uni.es": "2.5",
        "luis@uni.es": "0",
    }
    # the submission no row names is left out (it would abort the import), and said
    assert any("ana garcía lópez" in s for s in said)


def test_without_a_roster_the_exports_say_which_identity_is_missing(tmp_path):
    subs = tmp_path / "subs"
    (subs / "=1+2").mkdir(parents=True)
    (subs / "=1+2" / "attention.py").write_bytes(b"x")
    index = index_of(subs, tmp_path)
    data = results_of(index, {})
    with i18n.chosen("en"):
        canvas, said_c = exports.canvas_csv(data)
        moodle, said_m = exports.moodle_csv(data)
    assert rows_of(canvas)[2][:2] == ["'=1+2", ""] and any("no Canvas ID" in s for s in said_c)
    assert rows_of(moodle) == [["Email address", "Transformer"]]
    assert any("'=1+2" not in s and "=1+2" in s for s in said_m)


def test_a_hostile_roster_is_neutralised_in_both_files(tmp_path):
    hostile = MOODLE_ROSTER.replace("ana@uni.es", "=cmd|' /C calc'!A0").replace("Ana,", "@SUM(1),")
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "@SUM(1) García López_11_assignsubmission_file_attention.py").write_bytes(b"x")
    index = index_of(subs, tmp_path)
    with i18n.chosen("en"):
        roster.join(index, *roster.read(write(tmp_path, hostile)))
    data = results_of(index, {})
    cells = [
        c for f in (exports.canvas_csv, exports.moodle_csv) for r in rows_of(f(data)[0]) for c in r
    ]
    assert "'=cmd|' /C calc'!A0" in cells and "'@SUM(1) García López" in cells
    assert not any(c.startswith(("=", "+", "@")) for c in cells)


def test_members_are_records_that_cross_a_file():
    m = Member("a-0123456789ab", "A", "a", "folder")
    assert m.submitted and m.roster is None and m.late is None


def test_report_roster_joins_a_graded_out_again(tmp_path):
    """`report OUT --roster`: the exports and the page take the roster given now (here on an OUT of folders
    named by login, the kit's own layout)."""
    from autograder.cli import main
    from autograder.report import synthetic

    synthetic.make_class(tmp_path, 3, seed=1)
    text = CANVAS_ROSTER.replace("ana.garcia", "student000").replace("inigo.onate", "student001")
    roster_path = write(tmp_path.parent, text, name="canvas-roster.csv")
    args = ["report", str(tmp_path), "--lang", "en", "--roster", str(roster_path), "--scale", "10"]
    assert main(args) == 0
    export = rows_of((tmp_path / "lms-canvas.csv").read_text(encoding="utf-8"))
    grades, unknown = canvas_import(export, CANVAS_ROSTER)
    assert set(grades) == {"4242", "4343", "4444"} and grades["4444"] == "0"
    assert unknown == ["student002"] and export[1][5] == "10"
    data = __import__("json").loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert [s["name"] for s in data["students"] if s["missing"]] == ["Pérez, Luis"]
    assert any("student002" in p for p in data["problems"])
    assert (tmp_path / "lms-canvas-spreadsheet.csv").read_bytes()[:3] == b"\xef\xbb\xbf"
    with pytest.raises(SystemExit, match="not a roster"):
        main(
            [
                "report",
                str(tmp_path),
                "--roster",
                str(write(tmp_path.parent, "a,b\n1,2\n", "x.csv")),
            ]
        )


def test_a_name_canvas_would_read_as_the_maxima_row_is_changed(tmp_path):
    subs = tmp_path / "subs"
    (subs / "x Points Possible").mkdir(parents=True)
    (subs / "x Points Possible" / "attention.py").write_bytes(b"x")
    data = results_of(index_of(subs, tmp_path), {"x Points Possible": 40.0})
    export = rows_of(exports.canvas_csv(data)[0])
    assert [r[0] for r in export if "Points Possible" in r[0]] == ["    Points Possible"]
    assert export[2][0] == "x Points-Possible" and export[1][5] == "40"


def test_a_semicolon_separated_roster_is_read(tmp_path):
    kind, rows, _ = roster.read(write(tmp_path, MOODLE_ROSTER.replace(",", ";")))
    assert kind == "moodle" and rows[0].email == "ana@uni.es" and rows[2].name == "Luis Pérez"
