"""The by-hand rules as the suite applies them to a submission: a forbidden call, direct or obfuscated, makes the
run-time property forbidden and fails the static property, whatever the executor's module is made to do, and a
forbidden static outcome voids the component (autograder/suite/core.py)."""

import shutil
import textwrap
from pathlib import Path

import pytest

from autograder import registry, rules
from autograder.student_code import InProcessStudentCode
from autograder.suite import core

ROOT = Path(__file__).resolve().parent.parent

SOFTMAXES = {
    "torch.softmax": "return torch.softmax(x, dim)",
    "F.softmax": "import torch.nn.functional as F\n    return F.softmax(x, dim)",
    "Tensor.softmax": "return x.softmax(dim)",
    "getattr": "return getattr(torch, 'soft' + 'max')(x, dim)",
    "aten op": "return torch.ops.aten._softmax(x, dim, False)",
    "_VariableFunctions": "return torch._C._VariableFunctions.softmax(x, dim)",
    "log_softmax.exp": "return torch.log_softmax(x, dim).exp()",
    "__import__": "return __import__('torch').nn.functional.softmax(x, dim)",
}


def attention_with(body: str) -> str:
    source = (ROOT / "solutions" / "attention.py").read_text()
    start = source.index("    ### BEGIN SOLUTION\n    x_max")
    end = source.index("### END SOLUTION", start)
    return (
        source[:start]
        + textwrap.indent(textwrap.dedent("    " + body), "    ")
        + "\n    "
        + source[end:]
    )


@pytest.mark.parametrize("spelling", SOFTMAXES)
def test_forbidden_softmax_is_caught(spelling, tmp_path):
    sub = tmp_path / "sub"
    shutil.copytree(ROOT / "solutions", sub)
    (sub / "attention.py").write_text(attention_with(SOFTMAXES[spelling]))
    student = InProcessStudentCode(sub)
    props = [p for p in registry.load() if p.component == "attention"]
    outcomes = {p.name: core.run_property(p, student) for p in props}
    runtime = outcomes["softmax_rows_sum_to_one"]
    assert runtime.status == "forbidden", (spelling, runtime.status, runtime.message)
    assert "softmax" in runtime.message and "forbidden" in runtime.message
    static = outcomes["attention_is_written_by_hand"]
    assert not static.passed, spelling


def test_library_functions_work_again_after_the_check(tmp_path):
    import torch

    sub = tmp_path / "sub"
    shutil.copytree(ROOT / "solutions", sub)
    (sub / "attention.py").write_text(attention_with(SOFTMAXES["torch.softmax"]))
    student = InProcessStudentCode(sub)
    core.run_property(
        next(p for p in registry.load() if p.name == "softmax_rows_sum_to_one"), student
    )
    assert torch.softmax(torch.zeros(2), 0).tolist() == [0.5, 0.5]


def test_popping_the_dispatch_modes_hides_nothing(tmp_path):
    sub = tmp_path / "sub"
    shutil.copytree(ROOT / "solutions", sub)
    body = (
        "from torch.utils._python_dispatch import _disable_current_modes\n"
        "    with _disable_current_modes():\n        return torch.softmax(x, dim)"
    )
    (sub / "attention.py").write_text(attention_with(body))
    student = InProcessStudentCode(sub)
    props = {p.name: p for p in registry.load() if p.component == "attention"}
    runtime = core.run_property(props["softmax_rows_sum_to_one"], student)
    assert runtime.status == "forbidden" and "softmax" in runtime.message
    assert not core.run_property(props["attention_is_written_by_hand"], student).passed


def test_a_file_that_cannot_be_imported_earns_no_static_point(tmp_path):
    sub = tmp_path / "sub"
    shutil.copytree(ROOT / "solutions", sub)
    (sub / "attention.py").write_text(
        (ROOT / "solutions" / "attention.py").read_text() + "\nimport sys\nsys.exit(0)\n"
    )
    (sub / "decoder.py").write_text("class DecoderLayer(:\n")
    student = InProcessStudentCode(sub)
    for component in ("attention", "decoder"):
        prop = next(p for p in registry.load() if p.component == component and core.is_static(p))
        assert not core.run_property(prop, student).passed, component


def test_replacing_the_modules_guard_changes_nothing_for_an_executor(tmp_path, monkeypatch):
    import contextlib

    sub = tmp_path / "sub"
    shutil.copytree(ROOT / "solutions", sub)
    (sub / "attention.py").write_text(attention_with(SOFTMAXES["torch.softmax"]))
    student = InProcessStudentCode(sub)
    monkeypatch.setattr(rules, "guard", lambda component: contextlib.nullcontext())
    runtime = core.run_property(
        next(p for p in registry.load() if p.name == "softmax_rows_sum_to_one"), student
    )
    assert runtime.status == "forbidden"


def test_a_forbidden_static_outcome_voids_the_component():
    props = [p for p in registry.load() if p.component == "attention"]
    static = next(p for p in props if core.is_static(p))
    other = next(p for p in props if not core.is_static(p))
    neighbour = next(p for p in registry.load() if p.component == "mask")
    outcomes = [
        core.Outcome(other, core.Status.PASSED),
        core.Outcome(static, core.Status.FORBIDDEN, "tampering in attention.py"),
        core.Outcome(neighbour, core.Status.PASSED),
    ]
    core.require_behaviour(outcomes)
    assert outcomes[0].status == core.Status.FORBIDDEN and "tampering" in outcomes[0].message
    assert outcomes[2].passed


def test_switching_the_rules_off_from_a_helper_earns_nothing_in_process(tmp_path):
    from autograder.judge import sample

    sample.make("hostile:switch_off_rules", tmp_path / "s")
    script = (
        "import sys\nfrom pathlib import Path\nfrom autograder.suite import core\n"
        "from autograder import registry\n"
        "from autograder.student_code import InProcessStudentCode\n"
        "student = InProcessStudentCode(Path(sys.argv[1]))\n"
        "props = [p for p in registry.load() if p.component in ('attention', 'add_norm')]\n"
        "outcomes = core.require_behaviour([core.run_property(p, student) for p in props])\n"
        "print(sum(o.score for o in outcomes), sorted({o.status.value for o in outcomes}))\n"
    )
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "s")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == "0.0 ['forbidden']", run.stdout
