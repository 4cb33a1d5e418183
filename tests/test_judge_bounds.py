"""Nothing from a worker is trusted in shape or size, and nothing a worker says can break the feedback: issue 11
(items 1-3, 6's bounds), issue 7 (item 10) and issue 19 (wave 3), the fast checks. The reply decoder refuses
bombs before anything walks them, errors and outcome fields are bounded where they are made and where they are
read, the picture and the feedback draw worker text plain, student text has a budget, and the gradebook, the log
and the module loader read names as text. The same attacks graded in a class: tests/test_judge_trust.py.
"""

from __future__ import annotations

import io
import json
import pickle
import time

import pytest
import torch

from autograder import registry
from autograder.judge import feedback, picture, sample, wire
from autograder.judge.grading_process import FIELD_LIMITS, tidy
from autograder.judge.outputs import StudentResult, render_gradebook
from autograder.judge.replies import judged_error
from autograder.student_code import ERROR_LIMITS, InProcessStudentCode, Reply, StudentError
from autograder.suite import core


# ------------------------------------------------------------------------------------ the reply decoder
def self_similar_tuple(levels: int = 64):
    t = ()
    for _ in range(levels):
        t = (t, t)
    return t


def self_similar_list(levels: int = 48):
    x = []
    for _ in range(levels):
        x = [x, x]
    return x


class Forged:
    """Pickles as `fn(*args)`: a frame a worker could write by hand to its socket."""

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


BOMBS = {
    "error kind: a self-similar tuple of 2**64 nodes": Forged(
        StudentError, self_similar_tuple(), "m"
    ),
    "error message: a self-similar list of 2**48 leaves": Forged(
        StudentError, "exception", self_similar_list()
    ),
    "a reply value: a self-similar list": Reply(self_similar_list()),
    # 2**21 nodes, twenty times the cap; building the dict hashes every one (2**31 at 30 levels: 6 s)
    "a dict key: a self-similar tuple": Reply({self_similar_tuple(20): 1}),
    "a dict with a million keys": Reply({i: 0.0 for i in range(1_000_000)}),
    "a string of 60 MiB": Reply("x" * (60 << 20)),
    "a tensor shape of range(10**18)": Forged(wire._tensor, "float32", range(10**18), b""),
    "torch.Size(range(10**18))": Forged(torch.Size, range(10**18)),
    "set(range(10**18))": Forged(set, range(10**18)),
    "bytearray(2**40)": Forged(bytearray, 2**40),
    "one MiB of tensor data, 100 tensors": Reply(
        [Forged(wire._tensor, "uint8", (1 << 20,), b"\0" * (1 << 20))] * 100
    ),
    "a list that contains itself": Reply([]),
    "an integer of a million bits": Reply(1 << 1_000_000),
}
BOMBS["a list that contains itself"].value.append(BOMBS["a list that contains itself"].value)


def frame(obj) -> bytes:
    return pickle.dumps(obj, protocol=5)


@pytest.mark.parametrize("name", list(BOMBS))
def test_the_decoder_refuses_before_anything_walks(name):
    data = frame(BOMBS[name])
    assert len(data) < wire.MAX_FRAME
    start = time.process_time()
    with pytest.raises(wire.WireError):
        wire.loads(data)
    # refused from the opcodes: nothing was built, hashed or printed
    assert time.process_time() - start < 5


def test_honest_replies_still_load():
    """The largest honest replies: a transformer's state dict, and prints up to the worker's limit."""
    state = {f"layers.{i}.w_{n}.weight": torch.randn(16, 16) for i in range(60) for n in "qkvo"}
    info = Reply(
        {
            "module": True,
            "state": state,
            "params": list(state),
            "children": ["a"] * 50,
            "module_types": {n: "Linear" for n in state},
        }
    )
    back = wire.loads(wire.dumps(info))
    assert torch.equal(back.value["state"]["layers.59.w_o.weight"], state["layers.59.w_o.weight"])
    assert wire.loads(wire.dumps(Reply("p" * 24_000))).value == "p" * 24_000
    x = torch.randn(3, 4)  # the judge's own operations may share a tensor: Call(sdpa, (x, x, x))
    assert all(torch.equal(t, x) for t in wire.loads(wire.dumps((x, x, x))))


def test_an_error_is_flat_and_bounded_where_it_is_made_and_where_it_is_read():
    e = StudentError(self_similar_tuple(), self_similar_list(), "w" * 10_000, None, "d" * 10**6)
    assert e.kind == "exception" and "not text" in e.message
    assert len(e.where) == ERROR_LIMITS["where"] and len(e.detail) == ERROR_LIMITS["detail"]
    e.kind, e.message = self_similar_tuple(), self_similar_list()  # replaced after the checks
    back = wire.loads(wire.dumps(e))
    assert back.kind == "exception" and "not text" in back.message
    # A frame that sets the fields after construction (BUILD) gets past __init__: the judge rebuilds it.
    forged = StudentError("timeout", "m")
    forged.__dict__.update(kind=("a",) * 1000, message=["x"] * 1000, detail=b"bytes")
    judged = judged_error(forged, "in attention.softmax")
    assert (
        judged.kind == "exception" and "not text" in judged.message and "not text" in judged.detail
    )
    # the judge's word
    assert judged_error(StudentError("timeout", "I timed out, honest"), "x").kind == "exception"


def test_outcome_fields_are_bounded_in_the_judge():
    from autograder.judge.records import OutcomeRecord

    record = OutcomeRecord(
        "p",
        "attention",
        1.0,
        True,
        "",
        core.Status.ERROR,
        *["M" * 10**6, "H" * 10**6, "E" * 10**6, "D" * 10**6],
    )
    bounded = tidy(record)
    assert all(len(getattr(bounded, f)) <= limit for f, limit in FIELD_LIMITS.items())


# ------------------------------------------------------------------------------------------- the picture
def test_the_picture_tells_when_weights_match_but_the_output_does_not(tmp_path):
    """Heads merged without a transpose: the weights are the reference's, the output is not."""
    folder = sample.make("bug:multi_head:merge_without_transpose", tmp_path / "merge")
    seen = picture.student_view(InProcessStudentCode(folder))
    assert torch.allclose(seen.weights, picture.reference().weights)
    text = picture.caption(seen)
    assert "weights match the reference, but your output does not" in text
    drawn = picture.draw(seen)
    assert drawn["png"].startswith(b"\x89PNG") and drawn["caption"] == text
    good = picture.student_view(InProcessStudentCode(sample.make("reference", tmp_path / "ref")))
    assert (
        picture.caption(good) == "Your weights and your output match the reference on this example."
    )


def test_worker_text_is_drawn_plain_and_a_failed_drawing_is_a_note(monkeypatch):
    drawn = picture.draw(picture.View(problem=r"ValueError in forward: $\frac{ $ [bold]"))
    # mathtext would raise here: the text is drawn as it is
    assert drawn["png"].startswith(b"\x89PNG")

    def broken(view):
        raise ValueError("matplotlib could not draw this")

    monkeypatch.setattr(picture, "render", broken)
    drawn = picture.draw(picture.View(problem="anything"))
    assert drawn["png"] is None and drawn["caption"].startswith(
        "The picture could not be drawn (ValueError)."
    )


@pytest.mark.parametrize("lang", ["en", "es"])
def test_the_pictures_fixed_layout_holds_every_text(lang, monkeypatch):
    """The layout is fixed in inches (no constrained layout, which cost half of a picture's time): every text
    drawn lies inside the picture and over no other panel or its texts, in each language (the longest tokens,
    "pescado", "consulta"), whether the student's weights, output or both are missing."""
    from matplotlib.text import Text

    from autograder import i18n

    drawn = []
    draw = Text.draw

    def recorded(text, renderer):
        if text.get_visible() and text.get_text():
            drawn.append(text)
        return draw(text, renderer)

    monkeypatch.setattr(Text, "draw", recorded)
    ref = picture.reference()
    views = (ref, picture.View(ref.weights, None), picture.View(problem="ValueError: " + "x" * 90))
    with i18n.chosen(lang):
        for view in views:
            drawn.clear()
            fig = picture.figure(view)
            fig.canvas.draw()
            renderer = fig.canvas.get_renderer()
            texts = [(t, t.get_window_extent(renderer)) for t in drawn]
            assert len(texts) > 60  # values, tokens, titles, labels, the caption
            for t, box in texts:
                inside = fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1
                assert inside and fig.bbox.y0 <= box.y0 and box.y1 <= fig.bbox.y1, t.get_text()
                for ax in fig.axes:
                    assert ax is t.axes or not box.overlaps(ax.bbox), (t.get_text(), ax.get_title())
                for other, other_box in texts:
                    if other.axes is not t.axes:
                        assert not box.overlaps(other_box), (t.get_text(), other.get_text())


# ------------------------------------------------------------------------------------------ the feedback
def test_worker_text_is_never_markup(tmp_path):
    outcome = core.Outcome(
        core.Property("p", "attention", 1.0, True, 0, None, "a summary"),
        "failed",
        "<script>x</script> **bold** [link](http://x) ``` fence",
        "hint <b>",
        "``` example ```",
        "detail",
    )
    r = StudentResult(
        "student",
        [outcome],
        picture_caption="There are no weights to picture: <img src=x> $\\frac{ $",
    )
    html, md = feedback.html(r), feedback.markdown(r)
    assert "<script>" not in html and "<img src=x>" not in html and "&lt;script&gt;" in html
    assert "<script>" not in md and "<img src=x>" not in md and "\\*\\*bold\\*\\*" in md
    assert "````text\n``` example ```\n````" in md  # a fence the example cannot close


def test_names_are_not_console_markup():
    from rich.console import Console

    console = Console(record=True, width=200, file=io.StringIO())
    render_gradebook(
        {"[red]bob[/red]": StudentResult("[red]bob[/red]")}, registry.load(False), console
    )
    assert "[red]bob[/red]" in console.export_text()


# ------------------------------------------------------------------------------- issue 19 (wave 3), fast
def test_lone_surrogates_arrive_as_text():
    frame = wire.dumps(Reply({"k\udcff": ["\ud800", StudentError("exception", "m\udfff")]}))
    value = wire.loads(frame).value
    key, (text, error) = next(iter(value)), value["k\\udcff"]
    assert key == "k\\udcff" and text == "\\ud800" and error.message == "m\\udfff"
    json.dumps(value["k\\udcff"][0], ensure_ascii=False).encode("utf-8")  # encodable
    assert wire.loads(wire.dumps(Reply("plain"))).value == "plain"


def test_the_kits_kinds_are_checked_and_worded_by_the_judge():
    from autograder.judge.operations import Import
    from autograder.student_code.interface import Call

    op = Call("attention", "softmax", (), {})
    sources = {"attention": "...", "helper": "..."}
    forged = StudentError("missing", "KIT " * 150, "attention.softmax", "X", "D" * 3000)
    judged = judged_error(forged, "in attention.softmax", op, sources, {})
    assert judged.kind == "exception" and judged.message.startswith("X in attention.softmax: KIT")
    assert len(judged.message) < 400
    # a real missing file: a module the section lacks, worded by the judge, no detail
    real = StudentError(
        "missing",
        "mask.py is missing from the submission (needed by attention.softmax)",
        "attention.softmax",
    )
    judged = judged_error(real, "in attention.softmax", op, sources, {})
    assert judged.kind == "missing" and judged.message == real.message and judged.detail == ""
    # a file the section has is not missing
    has = StudentError(
        "missing", "helper.py is missing from the submission (needed by attention.softmax)"
    )
    assert judged_error(has, "w", op, sources, {}).kind == "exception"
    # a syntax error the judge's own compile did not find is the student's exception
    assert judged_error(
        StudentError("syntax", "SyntaxError in x.py, line 1: no"), "w", op, sources, {}
    ).kind == ("exception")
    found = {"attention.py": (3, "invalid syntax")}
    syntax = judged_error(
        StudentError("syntax", "anything"), "w", Import("attention"), sources, found
    )
    assert (
        syntax.kind == "syntax"
        and syntax.message == "SyntaxError in attention.py, line 3: invalid syntax"
    )


def test_a_student_raised_kit_error_is_their_exception_in_the_worker(tmp_path):
    (tmp_path / "attention.py").write_text(
        "from autograder.student_code import StudentError\n"
        "def softmax(x, dim=-1):\n"
        "    raise StudentError('missing', 'x.py is missing from the submission', 'w', 'E', 'D' * 3000)\n"
    )
    student = InProcessStudentCode(tmp_path)
    with pytest.raises(StudentError) as info:
        student.call("attention", "softmax", torch.zeros(2))
    assert info.value.kind == "exception"
    assert info.value.message.startswith("StudentError in attention.softmax: x.py is missing")


def test_student_text_has_a_budget_per_section_and_per_submission():
    from dataclasses import replace

    from autograder.judge.grading_process import SECTION_TEXT_BUDGET, section_budget
    from autograder.judge.outputs import SUBMISSION_TEXT_BUDGET, text_bytes, within_budget
    from autograder.judge.records import OutcomeRecord

    def record(status, n):
        return OutcomeRecord(
            "p",
            "attention",
            1.0,
            True,
            "",
            status,
            message="m" * n,
            hint="h",
            example="e",
            detail="d" * n,
        )

    records = [record(core.Status.ERROR, 500) for _ in range(40)] + [
        record(core.Status.FAILED, 900)
    ]
    section = section_budget([replace(r) for r in records])
    assert sum(text_bytes(r) for r in section) <= SECTION_TEXT_BUDGET
    # a failed comparison's words are the judge's: not counted
    assert section[-1].message == "m" * 900
    assert "omitted" in section[5].message and section[5].status == core.Status.ERROR
    whole = within_budget([replace(r) for r in records] * 4)
    assert sum(text_bytes(r) for r in whole) <= SUBMISSION_TEXT_BUDGET
    # the static by-hand property's words are the judge's (its scan reads the judge's copy): never omitted
    static = replace(record(core.Status.FORBIDDEN, 5000), kind=core.Kind.STATIC)
    assert text_bytes(static) == 0
    assert section_budget([replace(r) for r in records] + [static])[-1].message == "m" * 5000


def test_gradebook_cells_read_as_text_and_read_back_exactly(tmp_path):
    from autograder.judge.outputs import csv_cell, read_gradebook, write_gradebook

    assert [csv_cell(c) for c in ("=1+2", "+x", "-y", "@z", "\tq", "\rr", "'s", "ok", "3.5")] == [
        "'=1+2",
        "'+x",
        "'-y",
        "'@z",
        "'\tq",
        "'\rr",
        "''s",
        "ok",
        "3.5",
    ]
    rows = {name: {"total": "1"} for name in ("=1+2", "'s", "ok", "bad-\udcff")}
    write_gradebook(
        tmp_path / "g.csv", rows, {n: 1.0 for n in __import__("autograder.results").results.ROWS}
    )
    back = read_gradebook(tmp_path / "g.csv")
    assert set(back) == {"=1+2", "'s", "ok", "bad-\\udcff"}


def test_the_log_shows_control_characters_as_escapes():
    from autograder.judge.outputs import plain_log

    assert (
        plain_log("a\x1b]0;t\x07b\x1b[2J\rc\x9bd\te\nf")
        == "a\\x1b]0;t\\x07b\\x1b[2J\\rc\\x9bd\te\nf"
    )


def test_module_names_the_judge_loads():
    from autograder.judge.sections import module_name

    assert module_name("helper.py") and module_name("ayudante_ñ.py")
    assert not module_name("h" * 245 + ".py") and not module_name("bad-name.py")
    assert not module_name("x\udcff.py")


def test_a_file_too_large_to_compile_here_is_left_to_the_worker(tmp_path, monkeypatch):
    from autograder.judge import package_folder as gp

    grader = gp.PackageFolder(tmp_path)
    big = b'a = "x" * 4096\n' * (gp.COMPILE_SOURCE_BYTES // 15 + 1)
    assert grader.compiled("big.py", big, str(tmp_path / "big.py")) is None
    assert (
        grader.syntax["big.py"] == gp.UNCHECKED and not grader.code[gp.cache_key("big.py", big)][0]
    )
    assert grader.compiled("ok.py", b"x = 1\n", str(tmp_path / "ok.py"))
    assert grader.compiled("bad.py", b"def (:\n", str(tmp_path / "bad.py")) is None
    assert grader.syntax["bad.py"][0] == 1
    grader.syntax = {}
    # from the cache: the same verdict
    grader.compiled("bad.py", b"def (:\n", str(tmp_path / "bad.py"))
    assert grader.syntax["bad.py"][0] == 1
    monkeypatch.setattr(gp, "CODE_CACHE_BYTES", 0)
    grader.compiled("other.py", b"y = 2\n", str(tmp_path / "other.py"))
    assert sum(len(c or b"") for c, _ in grader.code.values()) == 0


def test_the_code_cache_is_bounded_whatever_the_files(tmp_path):
    """Issue 32: the cache was keyed by the source and counted only code, so files too large to compile here
    (or that do not compile) were kept whole: 4 MiB a student (64 files, 4 MiB at most), 160 MiB of sources
    held after 40 such students. Every entry now counts, its key a digest: the bound holds for any class."""
    from autograder.judge import package_folder as gp
    from autograder.judge.sections import MAX_FILE_BYTES, MAX_SUBMISSION_BYTES

    grader = gp.PackageFolder(tmp_path)
    per_student = MAX_SUBMISSION_BYTES // MAX_FILE_BYTES
    for student in range(12):
        files = {
            f"h{i}.py": (f"# {student}\n" + "x = 1\n" * (MAX_FILE_BYTES // 6)).encode()[
                :MAX_FILE_BYTES
            ]
            for i in range(per_student)
        }
        for i in range(3):  # syntax errors under the size compiled here
            files[f"bad{i}.py"] = f"# {student}\ndef (:\n".encode() + b"#" * (
                gp.COMPILE_SOURCE_BYTES - 20
            )
        grader.write(files)
    held = sum(len(name) + len(key) for name, key in grader.code) + grader.cached_bytes()
    sources = sum(len(k[1]) for k in grader.code if isinstance(k[1], bytes) and len(k[1]) > 64)
    assert sources == 0, "a source held as a key"
    assert held <= gp.CODE_CACHE_BYTES + 64 * 1024, held
