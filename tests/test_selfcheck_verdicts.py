"""What the self-check tells a student is true: a bug upstream is named upstream, never diagnosed downstream;
the integration share is its own row and column; text is printed as text."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from autograder import KIT, registry, results
from autograder.bugs import catalog
from autograder.check import run_suite
from autograder.components import NAMES
from autograder.judge.limits import Limits
from autograder.judge.outputs import COLUMNS
from autograder.judge.scheduler import Options, grade
from autograder.lms.identity import folder_of
from autograder.suite import core

# every component that uses attention.py
DOWNSTREAM = (
    "multi_head",
    "encoder",
    "decoder",
    "transformer",
    "training",
)
SOFTMAX_CALL = "    weights = softmax(scores, dim=-1)\n    return weights @ value, weights"


def env():
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "KIT_"))} | {
        "COLUMNS": "250"
    }


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    """The reference with two mistakes, both in attention.py: Q and K swapped, and torch.softmax."""
    folder = tmp_path_factory.mktemp("upstream") / "upstream"
    shutil.copytree(KIT / "solutions", folder)
    bug = next(b for b in catalog() if b.id == "attention:q_k_swapped")
    source = bug.apply((folder / "attention.py").read_text())
    assert SOFTMAX_CALL in source
    source = source.replace(SOFTMAX_CALL, SOFTMAX_CALL.replace("softmax(", "torch.softmax("))
    (folder / "attention.py").write_text(source)
    return folder


def test_every_downstream_failure_names_the_upstream_file(upstream):
    blocked = {}
    outcomes, _ = run_suite(upstream, include_hidden=False, blocked=blocked)
    own = [o for o in outcomes if results.row_of(o) != results.INTEGRATION]
    failed = [o for o in own if not o.passed and o.property.component in DOWNSTREAM]
    assert {o.property.component for o in failed} == set(DOWNSTREAM)
    # not charged: pending until attention.py passes (the judge grades them with the reference's attention)
    assert all(o.status == core.Status.BLOCKED for o in failed)
    # the integration re-runs are the judge's verdicts on the student's files together: charged as run
    integration = [o for o in outcomes if results.row_of(o) == results.INTEGRATION]
    assert integration and not any(o.status == core.Status.BLOCKED for o in integration)
    for o in failed:
        assert o.message.startswith(
            f"{o.property.component} uses your attention.py, which fails "
        ), o.message
        assert "fix attention.py first" in o.message
        # its own hints would diagnose attention's bug as its own
        assert o.hint == "", (
            o.property.id,
            o.hint,
        )
    forbidden = [o for o in failed if "is forbidden in" in o.message]
    assert forbidden, "torch.softmax in attention.py should be reached from multi_head"
    # the by-hand guard names the file the call is in, not the component under test
    for o in forbidden:
        assert "is forbidden in attention.py, which" in o.message, o.message
        assert f"is forbidden in {o.property.component}:" not in o.message
    for name in DOWNSTREAM:
        assert "fix attention.py first" in blocked[name]
    assert not blocked["mask"] and not blocked["attention"]
    attention = [o for o in outcomes if o.property.component == "attention" and not o.passed]
    assert attention and not any("uses your" in o.message for o in attention)
    assert any(o.hint for o in attention)  # attention's own verdicts keep their hints


def test_check_names_it_in_the_table_and_json_and_runs_the_dependency_quietly(upstream, tmp_path):
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "check",
            str(upstream),
            "--component",
            "multi_head",
            "--no-hidden",
            "--json",
            str(out),
        ],
        cwd=KIT,
        env=env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1
    table = proc.stdout[proc.stdout.index("┏") :]
    assert "multi_head uses your attention.py, which fails" in table, table
    assert "\n│ attention " not in table  # run for its verdicts only: not in the table, not counted
    tests = json.loads(out.read_text())["tests"]
    assert {t["tags"][0] for t in tests} <= {"multi_head", results.INTEGRATION}
    failed = [t for t in tests if t["status"] == "failed"]
    assert failed and all("attention.py" in t["output"] for t in failed)


def test_pytest_names_it_for_one_selected_component(upstream, tmp_path):
    from autograder import release

    bundle = release.build(tmp_path / "bundle")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "multi_head"],
        cwd=bundle,
        env=env() | {"KIT_SUBMISSION": str(upstream)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stdout[-3000:]
    lines = proc.stdout.splitlines()
    blocks = [
        i
        for i, line in enumerate(lines)
        if line.startswith("✗ multi_head") and "the same as above" not in line
    ]
    assert blocks
    for i in blocks:  # the line under each failure's title: the dependency first
        assert lines[i + 1].strip().startswith("multi_head uses your attention.py"), lines[
            i : i + 3
        ]
    table = proc.stdout[proc.stdout.index("┏") :]
    assert "multi_head uses your attention.py" in table


def test_grade_keeps_downstream_full_marks_and_only_integration_drops(upstream, tmp_path):
    subs = tmp_path / "subs"
    shutil.copytree(upstream, subs / "upstream")
    shutil.copytree(KIT / "solutions", subs / "reference")
    # two students: one grading process (docs/speed.md, "One grading process for a small class")
    graded = grade(subs, tmp_path / "out", Options(jobs=1, limits=Limits(op_timeout=3)))
    got, ref = graded["upstream"].points(), graded["reference"].points()
    assert got["attention"] < ref["attention"]
    assert got[results.INTEGRATION] < ref[results.INTEGRATION]
    assert {n: got[n] for n in NAMES if n != "attention"} == {
        n: ref[n] for n in NAMES if n != "attention"
    }
    header = (tmp_path / "out" / "gradebook.csv").read_text().splitlines()[0].split(",")
    assert (
        header == ["student", *COLUMNS, "total", "late", "note", "id"]
        and COLUMNS[-1] == results.INTEGRATION
    )
    tests = json.loads((folder_of(tmp_path / "out", "upstream") / "results.json").read_text())[
        "tests"
    ]
    integration = [t for t in tests if "::integration::" in t["name"]]
    assert integration and all(t["tags"] == [results.INTEGRATION] for t in integration)
    page = (folder_of(tmp_path / "out", "upstream") / "feedback.html").read_text()
    # two components may share a summary; one section may not
    for section in page.split("<section")[1:]:
        passed = [line for line in section.split("<li>") if line.startswith("✓")]
        assert len(passed) == len(set(passed)), (
            "an integration re-run is listed as a duplicate line"
        )
    assert "integration: your pieces together" in page


def test_text_is_never_read_as_markup():
    from rich.console import Console

    p = core.Property("pe_table", "positional_encoding", 2.0, True, 1, None, "the table")
    o = core.Outcome(
        p,
        "failed",
        "PE[p, 2i] differs from sin(p / 10000^(2i/d)) at [bold]0[/bold]",
        "use [red]2i[/red], not i",
    )
    console = Console(record=True, width=200, force_terminal=False)
    results.render_table(results.summarize([o]), title="[b]me[/b]", console=console)
    for block in results.failure_blocks([o]):
        console.print(block, markup=False)
    text = console.export_text()
    assert (
        "PE[p, 2i]" in text
        and "[bold]0[/bold]" in text
        and "[red]2i[/red]" in text
        and "[b]me[/b]" in text
    )


def test_gradebook_table_prints_names_as_text():
    from rich.console import Console

    from autograder.judge.outputs import StudentResult, render_gradebook

    props = registry.load(include_hidden=False, components=["mask"])
    console = Console(record=True, width=250, force_terminal=False)
    render_gradebook({"[red]eve[/red]": StudentResult("[red]eve[/red]")}, props, console)
    text = console.export_text()
    assert "[red]eve[/red]" in text and "integ" in text
