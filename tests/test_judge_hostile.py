"""Hostile submissions (examples/hostile): each earns no point it did not earn, the batch finishes, and the
other students' results are exactly what they are when graded alone.

One class is graded once: the reference, every hostile submission, and each one's control (the same file
without its hostile block: what it earns honestly). Timeouts are set low (3 s) to keep this quick.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from autograder import KIT
from autograder.components import NAMES
from autograder.judge import sample
from autograder.judge.limits import Limits
from autograder.judge.scheduler import Options, grade
from autograder.judge.zygote_client import UIDS_PER_RUN, uid_block
from autograder.lms.identity import folder_of, log_of

# Graded in another test's class, with limits made for them, and checked there against their control as here:
# budget_burner spends its whole time budget on purpose (here, about 100 s of one core's CPU: a quarter of the
# class), and what that must not do to others is tests/test_judge_trust.py's question.
GRADED_ELSEWHERE = {"budget_burner": "tests/test_judge_trust.py"}
HOSTILE = [name for name in sample.hostile_names() if name not in GRADED_ELSEWHERE]
PWNED = Path("/tmp/autograder-hostile-pwned")
# Folder names a class may hold: one that is not UTF-8 (decoded with surrogateescape), formulas for a spreadsheet.
SURROGATE_NAME = os.fsdecode(b"bad-\xff-name")
FORMULA_NAMES = ("=1+2", "@SUM(1+1)", "+cmd", "-2+3")
ROOT_ISOLATION = os.geteuid() == 0

PROBE = """
import json as _json, os as _os, socket as _socket
def _can(f):
    try:
        f()
        return True
    except Exception:
        return False
_report = {
    "uid": _os.getuid(),
    "solutions": _can(lambda: open(%(solutions)r).read()),
    "kit": _os.path.exists(%(kit)r),
    "out": _os.path.exists(%(out)r),
    "submissions": _os.path.exists(%(subs)r),
    "interfaces": [name for _, name in _socket.if_nameindex()],
    "tmp_writable": _can(lambda: open("/tmp/probe.txt", "w").write("x")),
    "fork": _can(lambda: _os.fork() == 0 and _os._exit(0)),
}
print("PROBE" + _json.dumps(_report) + "END")
"""


def limits() -> Limits:
    # A student's budget of 100 scaled CPU seconds, not the default 600: no submission here comes near it (the
    # reference about 12, segfault, the most, about 60); the one that spends all it is given is graded in
    # tests/test_judge_trust.py (GRADED_ELSEWHERE).
    return Limits(op_timeout=3, section_timeout=30, submission_timeout=100, memory_mb=1024)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    subs, out = base / "submissions", base / "out"
    spec = {"reference": "reference"}
    for name in HOSTILE:
        spec[f"h-{name}"] = f"hostile:{name}"
        spec[f"c-{name}"] = f"control:{name}"
    sample.materialize(spec, subs)
    # A symlink to the reference must not be followed; a probe reports what a worker can see.
    sample.make("missing:attention", subs / "symlink")
    (subs / "symlink" / "attention.py").symlink_to(KIT / "solutions" / "attention.py")
    sample.make("reference", subs / "probe")
    probe = PROBE % {
        "solutions": str(KIT / "solutions" / "attention.py"),
        "kit": str(KIT / "autograder"),
        "out": str(out),
        "subs": str(subs),
    }
    (subs / "probe" / "mask.py").write_text((subs / "probe" / "mask.py").read_text() + probe)
    # byte-identical to the reference: graded once, reused
    for name in (
        SURROGATE_NAME,
        *FORMULA_NAMES,
    ):
        sample.make("reference", subs / name)
    # A decoy results file the forger will look for; the judge overwrites it with the real one.
    (folder_of(out, "h-forge_results")).mkdir(parents=True)
    (folder_of(out, "h-forge_results") / "results.json").write_text('{"score": 1e9}')
    PWNED.unlink(missing_ok=True)
    results = grade(subs, out, Options(jobs=2, limits=limits()))
    alone_subs = base / "alone"
    sample.materialize({"reference": "reference"}, alone_subs)
    alone = grade(alone_subs, base / "alone-out", Options(jobs=1, limits=limits()))
    yield {"results": results, "out": out, "alone": alone, "alone_out": base / "alone-out"}
    shutil.rmtree(base, ignore_errors=True)


def points(graded, student) -> dict[str, float]:
    return graded["results"][student].points()


def failures(graded, student, component) -> list:
    return [
        o
        for o in graded["results"][student].outcomes
        if o.property.component == component and not o.passed
    ]


def without_time(path: Path) -> str:
    return "".join(
        line for line in path.read_text().splitlines(True) if '"execution_time"' not in line
    )


def test_the_batch_finishes_with_every_student(graded):
    students = set(graded["results"])
    assert {f"h-{n}" for n in HOSTILE} <= students
    for s in students:
        assert (folder_of(graded["out"], s) / "results.json").is_file()
        assert (folder_of(graded["out"], s) / "feedback.html").is_file()
        assert not graded["results"][s].errors, graded["results"][s].errors
    rows = (graded["out"] / "gradebook.csv").read_text().splitlines()
    assert len(rows) == 2 + len(students)


def test_every_hostile_example_is_graded_here_or_where_it_says():
    import test_judge_trust

    assert set(GRADED_ELSEWHERE) <= set(sample.hostile_names())
    for name, module in GRADED_ELSEWHERE.items():
        assert module == "tests/test_judge_trust.py"
        assert f"hostile:{name}" in test_judge_trust.CLASS.values(), name


def test_other_students_are_unaffected(graded):
    """The reference graded beside every hostile submission = the reference graded alone, byte for byte."""
    assert without_time(folder_of(graded["out"], "reference") / "results.json") == without_time(
        folder_of(graded["alone_out"], "reference") / "results.json"
    )
    assert points(graded, "reference") == graded["alone"]["reference"].points()


@pytest.mark.parametrize("name", HOSTILE)
def test_no_point_it_did_not_earn(graded, name):
    hostile, control = points(graded, f"h-{name}"), points(graded, f"c-{name}")
    for component in NAMES:
        assert hostile[component] <= control[component], (
            name,
            component,
            hostile[component],
            control[component],
        )


def _statuses(graded, student, component):
    return {o.status for o in failures(graded, student, component)}


def _messages(graded, student, component):
    return " | ".join(o.message for o in failures(graded, student, component))


def test_sys_exit_at_import(graded):
    msgs = _messages(graded, "h-exit_at_import", "attention")
    assert "the process exited (sys.exit) during import of attention.py" in msgs
    assert points(graded, "h-exit_at_import")["attention"] <= 1  # the static by-hand check, at most
    # Dependents are graded with the reference attention: only their integration share is lost.
    assert (
        points(graded, "h-exit_at_import")["multi_head"]
        >= 0.85 * points(graded, "reference")["multi_head"]
    )


def test_os_exit_inside_forward(graded):
    assert _statuses(graded, "h-os_exit_in_forward", "multi_head") == {"crashed"}
    assert "the process exited (status 0) in multi_head.MultiHeadAttention.forward" in _messages(
        graded, "h-os_exit_in_forward", "multi_head"
    )


def test_endless_loop_in_softmax(graded):
    assert points(graded, "h-loop_in_softmax")["attention"] == 0
    assert _statuses(graded, "h-loop_in_softmax", "attention") <= {"timeout", "failed"}
    assert re.search(
        r"timed out after 3 s in attention\.(softmax|scaled_dot_product_attention)",
        _messages(graded, "h-loop_in_softmax", "attention"),
    )


def test_long_sleep(graded):
    assert "timed out after 3 s in feed_forward.FeedForward.forward" in _messages(
        graded, "h-long_sleep", "feed_forward"
    )


def test_memory_bomb(graded):
    # by-hand scan
    assert (
        points(graded, "h-memory_bomb")["add_norm"] < 0.1 * points(graded, "reference")["add_norm"]
    )
    assert _statuses(graded, "h-memory_bomb", "add_norm") <= {"error", "timeout", "crashed"}
    assert "MemoryError" in _messages(graded, "h-memory_bomb", "add_norm")


def test_fork_storm(graded):
    assert (
        points(graded, "h-fork_storm")["positional_encoding"]
        < 0.1 * points(graded, "reference")["positional_encoding"]
    )
    if ROOT_ISOLATION:
        assert "Resource temporarily unavailable" in _messages(
            graded, "h-fork_storm", "positional_encoding"
        )


def test_200_mb_of_output_is_trimmed_and_costs_nothing(graded):
    assert points(graded, "h-output_flood")["mask"] == points(graded, "reference")["mask"]
    assert (log_of(graded["out"], "h-output_flood")).stat().st_size < 64_000


def test_segfault_through_ctypes(graded):
    assert points(graded, "h-segfault")["attention"] == 0
    assert re.search(
        r"segmentation fault in attention\.", _messages(graded, "h-segfault", "attention")
    )


@pytest.mark.parametrize("name", ["patch_checks", "inspect_frames", "tensor_subclass"])
def test_comparisons_happen_where_the_student_cannot_reach(graded, name):
    """Patched comparisons, frames searched for expected values, a tensor that equals everything: the
    control returns zeros, and the hostile version earns no more."""
    assert points(graded, f"h-{name}")["attention"] <= points(graded, f"c-{name}")["attention"]
    assert points(graded, f"h-{name}")["attention"] < 0.5 * points(graded, "reference")["attention"]


def test_importing_the_reference_or_the_autograder(graded):
    assert points(graded, "h-import_reference")["attention"] == 0


def test_forging_results_files(graded):
    assert points(graded, "h-forge_results")["attention"] == 0
    for path in graded["out"].rglob("*"):
        if path.is_file() and path.suffix in (".json", ".csv", ".html", ".md", ".txt"):
            assert "FORGED" not in path.read_text(errors="replace"), path
    assert (
        json.loads((folder_of(graded["out"], "h-forge_results") / "results.json").read_text())[
            "score"
        ]
        < 1e9
    )


def test_killing_the_parent(graded):
    assert points(graded, "h-kill_parent") == points(graded, "c-kill_parent")


@pytest.mark.parametrize("name", ["forbidden_direct", "forbidden_getattr"])
def test_forbidden_library_calls(graded, name):
    assert points(graded, f"h-{name}")["attention"] == 0
    assert "forbidden" in _statuses(graded, f"h-{name}", "attention")
    assert "softmax" in _messages(graded, f"h-{name}", "attention")


def test_torch_compile_is_refused_past_the_dynamo_stand_in(graded):
    """The worker's torch._dynamo is the kit's stand-in (rules/eager_dynamo.py): torch.compile, reached by a
    computed name, still loads the real module, which the guard refuses and names."""
    name = "compile_in_train"
    assert points(graded, f"h-{name}")["training"] < points(graded, f"c-{name}")["training"]
    assert "forbidden" in _statuses(graded, f"h-{name}", "training")
    assert "torch.compile" in _messages(graded, f"h-{name}", "training")


def test_reseeding_the_generators(graded):
    assert points(graded, "h-reseed") == points(graded, "reference")


def test_a_forged_reply_is_refused_not_unpickled(graded):
    assert not PWNED.exists()
    assert "not data" in _messages(graded, "h-forged_reply", "attention")


def test_symlinks_are_not_followed(graded):
    assert points(graded, "symlink")["attention"] == 0
    assert "missing" in _messages(graded, "symlink", "attention")


@pytest.mark.skipif(not ROOT_ISOLATION, reason="the sandbox's namespaces and uid drop need root")
def test_what_a_worker_can_see(graded):
    log = (log_of(graded["out"], "probe")).read_text()
    report = json.loads(log.split("PROBE", 1)[1].split("END", 1)[0])
    assert uid_block() <= report["uid"] < uid_block() + UIDS_PER_RUN
    assert not report["solutions"] and not report["kit"]
    assert not report["out"] and not report["submissions"]
    assert report["interfaces"] == ["lo"] and not report["fork"]
    assert report["tmp_writable"]
    # the probe's imports (json, socket) are not a submission's to make: its mask is refused by the scan, as any
    # component's is (since stop 46 in the three with no by-hand property too); every other file is the reference
    probed, reference = points(graded, "probe"), points(graded, "reference")
    assert probed["mask"] == 0 and "tampering" in _messages(graded, "probe", "mask")
    assert {c: v for c, v in probed.items() if c != "mask"} == {
        c: v for c, v in reference.items() if c != "mask"
    }


def test_no_worker_is_left_behind(graded):
    stray = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                uid = proc.stat().st_uid
            except OSError:
                continue
            if uid_block() <= uid < uid_block() + UIDS_PER_RUN:  # this test's judge runs
                stray.append((proc.name, (proc / "stat").read_text(errors="replace")[:120]))
    assert not stray


# ------------------------------------------------------------------------------------------ issue 19 (wave 3)
def _report(graded, student: str, marker: str) -> str:
    log = (log_of(graded["out"], student)).read_text()
    return log.split(marker, 1)[1].split("END", 1)[0]


def test_lone_surrogates_become_text(graded):
    """A print, an exception message and a folder name that are not valid text: every file is written."""
    out = graded["out"]
    data = json.loads((folder_of(out, "h-surrogate_text") / "results.json").read_text())
    assert any("\\udcff in an exception message" in t["output"] for t in data["tests"])
    assert "\\udcff lone surrogate" in (log_of(out, "h-surrogate_text")).read_text()
    assert (folder_of(out, SURROGATE_NAME) / "results.json").is_file()
    assert points(graded, SURROGATE_NAME) == points(graded, "reference")
    gradebook = (out / "gradebook.csv").read_bytes().decode("utf-8")  # valid UTF-8
    assert "bad-\\xff-name" in gradebook  # the byte shown as its escape (lms.identity.display)


def test_a_helper_too_long_to_cache_is_ignored_with_a_note(graded):
    assert points(graded, "h-long_helper_name") == points(graded, "c-long_helper_name")
    assert "ignored: not a module name" in (log_of(graded["out"], "h-long_helper_name")).read_text()


def test_the_kits_own_kinds_are_the_judges_to_give(graded):
    """A student raising the kit's StudentError of kind missing, syntax or not_implemented: their exception."""
    statuses = _statuses(graded, "h-kit_error", "attention")
    # failed: a property that expects a raise; forbidden: the by-hand scan voids a file that imports the kit
    assert "error" in statuses and statuses <= {"error", "failed", "forbidden"}
    msgs = _messages(graded, "h-kit_error", "attention")
    assert "StudentError in attention.softmax" in msgs
    assert "is missing from the submission" not in msgs and "SyntaxError in" not in msgs


def test_a_message_like_the_judges_memory_note_restarts_nothing(graded):
    statuses = _statuses(graded, "h-fake_memory_error", "attention")
    # forbidden: what the by-hand scan voids in a file that names the kit (docs/byhand.md)
    assert "error" in statuses and statuses <= {"error", "failed", "forbidden"}
    assert all(r.restarts == 0 for r in graded["results"].values())


def test_reference_bytecode_leaves_only_within_the_text_budget(graded):
    """The transformer section holds the reference's bytecode beside the student's; the student sends it out in
    numbered chunks. What reaches the feedback is bounded by the budgets of student text (docs/judge.md)."""
    from autograder.judge.grading_process import SECTION_TEXT_BUDGET
    from autograder.judge.outputs import SUBMISSION_TEXT_BUDGET
    from autograder.results import row_of

    def student_text(outcomes) -> int:
        return sum(
            len((o.message + o.detail).encode())
            for o in outcomes
            if o.status not in ("passed", "failed")
            and "is omitted (the feedback shows" not in o.message
            # the judge's words: a passed property voided by the by-hand scan repeats the scan's finding
            and not o.message.startswith("not awarded: ")
        )

    r = graded["results"]["h-exfiltrate_reference"]
    # its section, not integration
    transformer = [o for o in r.outcomes if row_of(o) == "transformer"]
    data = json.loads(
        (folder_of(graded["out"], "h-exfiltrate_reference") / "results.json").read_text()
    )
    text = "\n".join(t["output"] for t in data["tests"] if t["tags"] == ["transformer"])
    chunks = dict(re.findall(r"REF(\d+):([A-Za-z0-9+/=]+)", text))
    leaked = sum(len(c) for c in chunks.values()) * 3 // 4
    print(
        f"reference bytecode out: {leaked} bytes in {len(chunks)} chunks; student text shown: "
        f"{student_text(transformer)} B in the section, {student_text(r.outcomes)} B in the submission"
    )
    assert student_text(r.outcomes) <= SUBMISSION_TEXT_BUDGET
    assert student_text(transformer) <= SECTION_TEXT_BUDGET
    assert leaked <= SECTION_TEXT_BUDGET


def test_terminal_escapes_never_reach_the_log_raw(graded):
    for log in (graded["out"] / "logs").iterdir():
        assert "\x1b" not in log.read_text(errors="replace"), log
    assert "\\x1b]0;PWNED" in (log_of(graded["out"], "h-terminal_escapes")).read_text()


def test_gradebook_cells_are_never_formulas(graded):
    import csv

    with open(graded["out"] / "gradebook.csv", newline="") as f:
        rows = list(csv.reader(f))
    names = {row[0] for row in rows}
    assert {"'" + n for n in FORMULA_NAMES} <= names
    assert not [c for row in rows for c in row if c.startswith(("=", "+", "-", "@", "\t", "\r"))]


def test_no_host_path_in_a_workers_reach(graded):
    """Walking its own stack, a worker finds its own folder and the Python installation, nothing else of the
    host: not the kit, the submissions or output folders, nor the zygote's configuration. The covers over the
    host's top-level folders are read-only."""
    import sys

    found = _report(graded, "h-host_paths", "HOSTPATHS").splitlines()
    python = tuple(os.path.realpath(p) for p in (sys.prefix, sys.base_prefix))
    host = [p for p in found if not os.path.realpath(p.split(":")[0]).startswith(python)]
    subs, out = str(graded["out"].parent / "submissions"), str(graded["out"])
    assert not [p for p in host if subs in p or out in p or str(KIT) in p], host
    assert _report(graded, "h-host_paths", "COVERS-WRITABLE") == ""


def test_no_nested_user_namespace(graded):
    """A seccomp filter refuses a worker any new user namespace (x86_64)."""
    import platform

    log = (log_of(graded["out"], "h-nested_userns")).read_text()
    if "USERNS-ATTACK" not in log:
        # The by-hand guard's audit hook refuses ctypes first (docs/byhand.md): the attack never reaches the
        # kernel, and its component is voided. The filter itself: test_judge_isolation's seccomp test.
        assert "forbidden" in _statuses(graded, "h-nested_userns", "add_norm")
        return
    report = _report(graded, "h-nested_userns", "USERNS-ATTACK")
    assert "clone=ok" not in report and "unshare=ok" not in report, report
    if platform.machine() == "x86_64":
        assert (
            "unshare=Operation not permitted" in report
            and "clone3=Function not implemented" in report
        )


# ------------------------------------------------------------------------------------------ issue 32 (wave 4)
# Hostile examples whose attacked components earn nothing, by the judge and by the self-check alike.
REFUSED_BY_BOTH = {
    "exec_via_builtins": ("attention", "add_norm"),
    "pickle_exec": ("attention", "add_norm"),
    "kit_checker_import": ("mask", "positional_encoding"),
    # the crib's frame walk to the checker's own functions (stop 46): check gave 48 points, grade fewer
    "frame_walk": ("mask", "positional_encoding", "feed_forward"),
}


@pytest.mark.parametrize("name", ["exec_via_builtins", "pickle_exec"])
def test_code_hidden_from_the_scan_earns_nothing(graded, name):
    """torch.softmax and F.layer_norm behind code the scan once never saw (len.__self__.exec, a pickle that
    torch.load runs) that flips the guard's state for the call: the allowlist voids the component."""
    for component in REFUSED_BY_BOTH[name]:
        assert points(graded, f"h-{name}")[component] == 0, component
        assert "forbidden" in _statuses(graded, f"h-{name}", component)
        assert "tampering" in _messages(graded, f"h-{name}", component)


def test_check_refuses_what_grade_refuses(graded, tmp_path):
    """The self-check (in-process, where the kit is importable) gives each attacked component what the judge
    gives it: nothing, for code hidden from the scan and for the kit's own checker imported or found in
    sys.modules, or walked to in the callers' frames (check used to give mask and positional_encoding 37 points
    that grade did not, and the frame walk 48 in the three components that forbid nothing)."""
    import subprocess
    import sys

    for name in REFUSED_BY_BOTH:
        sample.make(f"hostile:{name}", tmp_path / name)
    script = (
        "import json, sys\nfrom autograder.check import run_suite\nfound = {}\n"
        "for name, components in json.loads(sys.argv[1]).items():\n"
        "    outcomes, _ = run_suite(sys.argv[2] + '/' + name, components=components)\n"
        "    found[name] = {c: sum(o.score for o in outcomes if o.property.component == c) for c in components}\n"
        "print('POINTS' + json.dumps(found))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script, json.dumps(REFUSED_BY_BOTH), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=KIT,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    checked = json.loads(run.stdout.split("POINTS", 1)[1])
    for name, components in REFUSED_BY_BOTH.items():
        for component in components:
            graded_points = points(graded, f"h-{name}")[component]
            assert checked[name][component] == graded_points == 0, (name, component)


def test_no_host_path_reaches_what_a_student_sees(graded):
    """An error message made of the host's paths a worker can name (the kit's checkout from the editable
    install's finder, the Python installation and the home folder from sys.path): results.json and
    feedback.html show placeholders, never the paths."""
    import sys

    out = folder_of(graded["out"], "h-host_paths_feedback")
    shown = (out / "results.json").read_text() + (out / "feedback.html").read_text()
    assert "HOSTPATHS" in shown
    host = {str(KIT), sys.prefix, sys.base_prefix, os.path.expanduser("~")}
    host |= {os.path.realpath(p) for p in host}
    assert not [p for p in host if p in shown], [p for p in host if p in shown]


@pytest.mark.parametrize("name", ["constant_loss", "nan_gradient_loss"])
def test_a_loss_with_nothing_to_learn_from_earns_no_step(graded, name):
    """5 + 0 * the loss (zero gradients) and a train that takes no step; a NaN gradient and NaN weights: train's
    Adam property asks the student's loss for something to learn from (tests/test_free_points.py, in process)."""
    failed = {o.property.name: o.message for o in failures(graded, f"h-{name}", "training")}
    assert "copy_task_is_learned" in failed
    assert "teacher_forcing_loss's" in failed["train_takes_adam_steps_on_the_schedule"]


def test_a_search_that_computes_nothing_earns_no_mode_point(graded):
    """beam_search handles the model's mode and returns one constant (scores -3): it agreed with itself in train
    and in eval mode; scores no search gives are checked against the model (tests/test_free_points.py found it)."""
    failed = {o.property.name for o in failures(graded, "h-constant_search", "beam_search")}
    assert "beam_search_searches_in_eval_mode" in failed
    assert points(graded, "h-constant_search")["beam_search"] == 0
