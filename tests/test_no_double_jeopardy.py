"""One mistake, one deduction, in the self-check too (issue 21): a bug in a file that others use costs points in
that file only; every component that uses it shows its failures as pending (Status.BLOCKED), naming the file,
and `check`'s earned points stay within what `grade` gives the same folder: check <= grade <= check + pending
(docs/selfcheck.md)."""

import os

import pytest

from autograder import KIT, passes, registry, results
from autograder.bugs import Bug, catalog, make_submission
from autograder.check import SelfCheck, run_suite
from autograder.components import NAMES, get
from autograder.judge.limits import Limits
from autograder.judge.scheduler import Options, grade
from autograder.suite import core

# The bug cases issue 21 measured costing kv_cache's and beam_search's points (and transformer's, for the buffer)
# in `check`. The float32 cast is not in the catalog: planted here.
FLOAT32_CAST = Bug(
    "attention",
    "scores_cast_to_float32",
    "cast the scores to float32",
    "scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)",
    "scores = (query @ key.transpose(-2, -1)).float() / math.sqrt(d_k)",
    "",
)
CASES = (
    "attention:q_k_swapped",
    "multi_head:q_k_projections_swapped",
    "multi_head:no_output_projection",
    "add_norm:residual_after_norm",
    "decoder:cross_attention_memory_first",
    "positional_encoding:pe_as_parameter",
)
BUGS = [next(b for b in catalog() if b.id == case) for case in CASES] + [FLOAT32_CAST]


def users(component: str) -> list[str]:
    """The components that use `component`'s file (components.py deps), in teaching order."""
    return [n for n in NAMES if component in get(n).deps]


def own_rows(outcomes):
    return [o for o in outcomes if results.row_of(o) != results.INTEGRATION]


def env():
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "KIT_"))} | {
        "COLUMNS": "250"
    }


def planted(bug: Bug, folder) -> str:
    return str(make_submission(bug, KIT / "solutions", folder / bug.name))


@pytest.mark.parametrize("bug", BUGS, ids=[b.id for b in BUGS])
def test_check_charges_only_the_component_where_the_bug_lives(bug, tmp_path):
    downstream = users(bug.component)
    components = [bug.component, *downstream]
    outcomes, _ = run_suite(planted(bug, tmp_path), components, include_hidden=True)
    charged = [o for o in own_rows(outcomes) if not o.passed and o.status != core.Status.BLOCKED]
    assert charged, f"{bug.id} costs nothing in {bug.component}"
    assert {o.property.component for o in charged} == {bug.component}, [
        (o.property.id, o.status, o.message[:80]) for o in charged
    ]
    blocked = [o for o in own_rows(outcomes) if o.status == core.Status.BLOCKED]
    for o in blocked:
        assert o.property.component in downstream and o.score == 0 and not o.hint
        assert o.message.startswith(f"{o.property.component} uses your {bug.component}.py"), (
            o.message
        )
    rows = {r.component: r for r in results.summarize(outcomes)}
    for name in downstream:  # whatever it failed is pending, never lost
        assert rows[name].earned == rows[name].available, (name, rows[name])


def test_check_stays_within_grade_and_pending(tmp_path):
    """check earned <= grade earned <= check earned + pending, per component, on two bug folders graded as
    one class (the judge runs each component with the reference's files)."""
    subs = tmp_path / "subs"
    subs.mkdir()
    cases = [b for b in BUGS if b.id in ("add_norm:residual_after_norm", "attention:q_k_swapped")]
    for bug in cases:
        planted(bug, subs)
    # two students: one grading process (docs/speed.md, "One grading process for a small class")
    graded = grade(subs, tmp_path / "out", Options(jobs=1, limits=Limits(op_timeout=3)))
    for bug in cases:
        outcomes, _ = run_suite(subs / bug.name, include_hidden=True)
        rows = {r.component: r for r in results.summarize(outcomes)}
        judged = graded[bug.name].points()
        for name in NAMES:
            check, held = rows[name].earned, rows[name].held
            assert check <= judged[name] <= check + held, (bug.id, name, check, held, judged[name])
        assert sum(r.held for r in rows.values()) > 0  # the case does block something
        # the integration share is the same verdict on the same files together
        assert rows[results.INTEGRATION].earned == judged[results.INTEGRATION], bug.id


def test_the_bundle_pytest_shows_a_blocked_component_as_pending(tmp_path):
    """pytest (the student bundle) on the same folder: kv_cache's failures are skips naming add_norm.py, its
    points pending in the table, and the run still fails (as `check` exits 1)."""
    import subprocess
    import sys

    from autograder import release

    bug = next(b for b in BUGS if b.id == "add_norm:residual_after_norm")
    folder = planted(bug, tmp_path)
    bundle = release.build(tmp_path / "bundle")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "kv_cache", "-rs"],
        cwd=bundle,
        env=env() | {"KIT_SUBMISSION": folder},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert " skipped" in proc.stdout and " failed" not in proc.stdout.splitlines()[-1]
    assert "kv_cache uses your add_norm.py" in proc.stdout
    table = proc.stdout[proc.stdout.index("┏") :]
    assert "pending)" in table and "points are pending" in table


def test_a_notebook_check_cell_without_the_reference_shows_the_same_pending(
    tmp_path, monkeypatch, capsys
):
    """A student's environment (no reference): multi_head's check cell uses the student's own attention notebook.
    With attention's Q and K swapped there, the cell prints the failure as pending, naming attention's
    notebook, and does not raise; attention's own cell still fails."""
    import json

    from autograder.notebooks import cells, course, kernel

    bug = next(b for b in BUGS if b.id == "attention:q_k_swapped")
    for number, name in enumerate(("attention", "multi_head")):
        nb = course.notebook(name, registry.load(include_hidden=False, components=[name]), number)
        if name == bug.component:
            for c in cells.solution_cells(nb):
                if bug.find in cells.source_text(c):
                    c["source"] = bug.apply(cells.source_text(c))
        (tmp_path / f"{name}.ipynb").write_text(json.dumps(nb))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(kernel, "reference_dir", lambda: None)
    kernel.check("multi_head", "multi_head_equals_torch")
    printed = capsys.readouterr().out
    assert results.status_text("blocked") in printed
    assert "multi_head uses your attention.ipynb" in printed, printed
    with pytest.raises(kernel.PropertyFailed):
        kernel.check("attention", "attention_equals_torch")


def test_what_the_by_hand_scan_finds_in_its_own_file_is_charged_not_pending(tmp_path):
    """multi_head.py calls a library softmax (its by-hand scan fails, as in `grade`) while attention.py fails:
    the static point is charged with the dependency sentence first; the rest of multi_head is pending."""
    bug = next(b for b in BUGS if b.id == "attention:q_k_swapped")
    folder = make_submission(bug, KIT / "solutions", tmp_path / "scanned")
    path = folder / "multi_head.py"
    path.write_text(
        path.read_text().replace(
            "return self.w_o(merged)",
            "return self.w_o(nn.functional.softmax(merged, dim=-1) * 0 + merged)",
        )
    )
    outcomes, _ = run_suite(folder, ["multi_head"], include_hidden=False)
    static = [o for o in own_rows(outcomes) if core.is_static(o.property)]
    assert len(static) == 1 and static[0].status == core.Status.FAILED, static
    assert static[0].message.startswith("multi_head uses your attention.py")
    # blamed once (the sentence was once said 13 times over on the stubs), and a second blame is an error,
    # never a silent no-op (issue 36: each pass once per outcome)
    assert static[0].message.count("multi_head uses your attention.py") == 1, static[0].message
    assert static[0].passes.count("blame") == 1, static[0].passes
    session = SelfCheck(folder)
    blamed = passes.finish([session.run(static[0].property)], blame=session.blame)[0]
    assert blamed.message.startswith("multi_head uses your attention.py")
    with pytest.raises(core.PassError):
        passes.finish([blamed], blame=session.blame)
    others = [o for o in own_rows(outcomes) if not o.passed and not core.is_static(o.property)]
    assert others and all(o.status == core.Status.BLOCKED for o in others)
