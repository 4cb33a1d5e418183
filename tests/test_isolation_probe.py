"""bench_isolation.py's probe (benchmarks/isolation_probe/sitecustomize.py) wraps the grading process's stages by
name. A renamed stage broke the benchmark at its first grading process (GradingProcess.refuse_the_kit became
refuse_by_the_scan), and no test saw it: every name the probe wraps must exist on what it wraps."""

import ast

from autograder import KIT, timing
from autograder.judge import grading_process, remote, wire

PROBE = KIT / "benchmarks" / "isolation_probe" / "sitecustomize.py"
# the probe's names for what it patches -> the objects they are in a grading process
OWNERS = {
    "gp": grading_process,
    "gp.GradingProcess": grading_process.GradingProcess,
    "remote.SandboxedStudentCode": remote.SandboxedStudentCode,
    "remote": remote,
    "wire": wire,
    "timing": timing,
    "shim": remote.select,  # the probe's stand-in for the select module remote.py calls
}


def wrapped() -> list[tuple[str, str]]:
    """(owner, attribute) of every wrap(...) call and every `owner.attr = ...` patch of the probe."""
    found = []
    for node in ast.walk(ast.parse(PROBE.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "wrap":
            found.append((ast.unparse(node.args[0]), node.args[1].value))
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and ast.unparse(target.value) in OWNERS:
                    found.append((ast.unparse(target.value), target.attr))
    return found


def test_the_probe_wraps_only_what_exists():
    names = wrapped()
    assert len(names) >= 15, names  # the parse found the probe's patches
    missing = [(o, a) for o, a in names if not hasattr(OWNERS[o], a)]
    assert missing == []
