"""Submissions straight from the LMS (issue 31, item 1): Moodle's and Canvas's download layouts, zipped or not,
recognised by layout, the kit's own layout still; a zip is untrusted input (examples/hostile/zips.toml)."""

import io
import stat
import tomllib
import zipfile

import pytest

from autograder import KIT
from autograder.judge.sections import MAX_FILE_BYTES
from autograder.lms import ingest
from autograder.lms.identity import submission_id
from tests.lms_fixtures import canvas_download, canvas_files, moodle_files

ATTENTION, MASK = b"# attention\n", b"# mask, uploaded again\n"
ZIPS = tomllib.loads((KIT / "examples" / "hostile" / "zips.toml").read_text())["entry"]


def staged(subs, tmp_path):
    found, problems = ingest.read_class(subs, tmp_path / "staging")
    return {s.member.source: s for s in found}, problems


def files_of(sub) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sub.folder.iterdir()}


def zipped(files: dict[str, bytes], path):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return path


def test_canvas_flat_files_one_student_per_user_id_late_kept_reupload_wins(tmp_path):
    subs = canvas_download(tmp_path / "subs", canvas_files(ATTENTION, MASK))
    by, problems = staged(subs, tmp_path)
    assert set(by) == {"garcialopezana_4242", "onateinigo_4343", "intrusonobody_5555"}
    ana = by["garcialopezana_4242"]
    assert (ana.member.lms, ana.member.user_id, ana.member.late) == ("canvas", "4242", True)
    assert ana.member.display == "garcialopezana" and ana.member.id == submission_id(
        "garcialopezana_4242"
    )
    assert files_of(ana) == {"attention.py": ATTENTION, "mask.py": MASK}
    assert by["onateinigo_4343"].member.late is False
    assert ana.folder.parent == tmp_path / "staging" and not problems


@pytest.mark.parametrize("folders", [True, False], ids=["folders", "flat"])
def test_moodle_download_in_folders_or_flat(tmp_path, folders):
    subs = tmp_path / "subs"
    for name, data in moodle_files(ATTENTION, folders).items():
        (subs / name).parent.mkdir(parents=True, exist_ok=True)
        (subs / name).write_bytes(data)
    by, _ = staged(subs, tmp_path)
    ana = by["Ana García López_11_assignsubmission_file_"]
    assert (ana.member.lms, ana.member.user_id, ana.member.display) == (
        "moodle",
        "11",
        "Ana García López",
    )
    assert files_of(ana) == {"attention.py": ATTENTION}
    assert len(by) == 3  # case twins stay two students


@pytest.mark.parametrize("where", ["the zip", "a folder holding the zip"])
def test_a_zipped_download_is_the_same_class(tmp_path, where):
    files = {**canvas_files(ATTENTION, MASK), **moodle_files(ATTENTION, True)}
    flat = tmp_path / "flat"
    for name, data in files.items():
        (flat / name).parent.mkdir(parents=True, exist_ok=True)
        (flat / name).write_bytes(data)
    (tmp_path / "z").mkdir()
    path = zipped(files, tmp_path / "z" / "submissions.zip")
    by_zip, problems = staged(path if where == "the zip" else path.parent, tmp_path / "a")
    by_dir, _ = staged(flat, tmp_path / "b")
    assert not problems
    assert {k: files_of(v) for k, v in by_zip.items()} == {
        k: files_of(v) for k, v in by_dir.items()
    }
    assert {k: v.member for k, v in by_zip.items()} == {k: v.member for k, v in by_dir.items()}


def test_the_kits_own_layout_still_works(tmp_path):
    subs = tmp_path / "subs"
    for name in ("student001", "Ana García", "_underscore"):
        (subs / name).mkdir(parents=True)
        (subs / name / "attention.py").write_bytes(ATTENTION)
        (subs / name / "notes.txt").write_text("not a module")
    (subs / "__pycache__").mkdir()
    by, problems = staged(subs, tmp_path)
    assert set(by) == {"student001", "Ana García", "_underscore"} and not problems
    assert all(
        s.member.lms == "folder" and files_of(s) == {"attention.py": ATTENTION} for s in by.values()
    )


def hostile_zip(path):
    """examples/hostile/zips.toml as a zip: each entry's name, mode and size as the recipe says."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for entry in ZIPS:
            info = zipfile.ZipInfo(entry["name"])
            info.compress_type = zipfile.ZIP_DEFLATED
            if entry.get("link"):
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
            data = (
                b"0" * entry["size"] if "size" in entry else entry.get("text", "x = 1\n").encode()
            )
            zf.writestr(info, data)
    return path


def test_a_hostile_zip_is_bounded_and_writes_nothing_outside_staging(tmp_path):
    path = hostile_zip(tmp_path / "evil.zip")
    assert path.stat().st_size < 1 << 20  # the bomb: about 64 MiB of zeros compressed
    (tmp_path / "work").mkdir()
    by, _ = staged(path, tmp_path / "work")
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert all(p.parts[:2] == ("work", "staging") for p in written if p.name != "evil.zip")
    got = {k: files_of(v) for k, v in by.items()}
    for entry in ZIPS:
        parts = [x for x in entry["name"].split("/") if x]
        if entry["expect"] == "skipped":
            assert parts[0] not in got or parts[-1] not in got[parts[0]], entry
            assert parts[-1] == "attention.py" or not any(parts[-1] in f for f in got.values())
        elif entry["expect"] == "too large":
            assert got[parts[0]] == {}, entry
        else:  # a plain student, staged under its id
            assert parts[-1] in got[parts[0]], entry
    assert not (tmp_path / "evil.py").exists() and not (tmp_path.parent / "evil.py").exists()


def test_a_zip_reads_no_more_than_its_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(ingest, "MAX_ZIP_BYTES", 3 * MAX_FILE_BYTES // 2)
    files = {f"s{i}/attention.py": b"#" * (MAX_FILE_BYTES // 2) for i in range(6)}
    by, problems = staged(zipped(files, tmp_path / "big.zip"), tmp_path)
    assert sum(len(files_of(s)) for s in by.values()) == 3
    assert problems and "MiB" in problems[0]


def test_not_a_zip_is_a_problem_not_a_crash(tmp_path):
    bad = tmp_path / "download.zip"
    bad.write_bytes(b"PK\x03\x04 not really")
    by, problems = staged(bad, tmp_path)
    assert by == {} and problems


def test_a_zip_with_a_non_utf8_name_is_read(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("Jos\u00e9_7_assignsubmission_file_/attention.py", ATTENTION)
    (tmp_path / "d.zip").write_bytes(buf.getvalue())
    by, _ = staged(tmp_path / "d.zip", tmp_path)
    assert [s.member.display for s in by.values()] == ["José"]


def test_a_moodle_student_with_a_file_and_an_online_text_is_one_student(tmp_path):
    subs = tmp_path / "subs"
    (subs / "Ana García_11_assignsubmission_file_").mkdir(parents=True)
    (subs / "Ana García_11_assignsubmission_file_" / "attention.py").write_bytes(ATTENTION)
    (subs / "Ana García_11_assignsubmission_onlinetext_").mkdir()
    (subs / "Ana García_11_assignsubmission_onlinetext_" / "onlinetext.html").write_text(
        "<p>hola</p>"
    )
    by, _ = staged(subs, tmp_path)
    assert list(by) == ["Ana García_11_assignsubmission_file_"]
    assert files_of(by["Ana García_11_assignsubmission_file_"]) == {"attention.py": ATTENTION}
