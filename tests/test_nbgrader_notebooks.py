"""The nbgrader notebooks, without nbgrader: module <-> cells, points, hidden tests, the in-kernel check."""

import json
import os
import re

import pytest

from autograder import KIT, stubs
from autograder.bugs import catalog
from autograder.check import run_suite
from autograder.components import NAMES
from autograder.notebooks import cells, course, kernel
from autograder.properties import core
from autograder.results import outcome_text

CALL = re.compile(r'_kit\.check\("(\w+)", "(\w+)"(, integration=True)?\)')


def lines(text):
    return [line for line in text.splitlines() if line.strip()]


def without_docstring(source):
    return source.split('"""', 2)[2]


def test_solution_cells_are_the_module():
    for name in NAMES:
        source = (KIT / "solutions" / f"{name}.py").read_text()
        doc, chunks = cells.split_module(source)
        assert doc and all(
            stubs.BEGIN in c and c.count(stubs.BEGIN) == c.count(stubs.END) for c in chunks
        ), name
        assert lines(cells.module_from_cells(chunks)) == lines(without_docstring(source)), name


def test_magics_are_commented_out():
    text = cells.module_from_cells(["%timeit f()\nx = 1", "!pip install torch"])
    compile(text, "m.py", "exec")
    assert "x = 1" in text


@pytest.fixture(scope="module")
def notebooks(tmp_path_factory):
    dest = course.build(tmp_path_factory.mktemp("course"))
    return {
        p.stem: json.loads(p.read_text()) for p in (dest / "source" / "transformer").glob("*.ipynb")
    }


def test_one_test_cell_per_property_worth_what_grade_gives(notebooks):
    from autograder.judge.outputs import maxima
    from autograder.judge.sections import integration_props

    props = core.load(include_hidden=True)
    assert sorted(notebooks) == sorted({p.component for p in props})
    shares = integration_props(props)
    for name, nb in notebooks.items():
        graded = [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]
        ids = [
            c["metadata"]["nbgrader"]["grade_id"]
            for c in nb["cells"]
            if "nbgrader" in c["metadata"]
        ]
        assert len(ids) == len(set(ids)), name
        # A notebook's total: its component's column of the gradebook plus the integration cells it holds.
        share = sum(points for _, points in shares.get(name, []))
        assert sum(c["metadata"]["nbgrader"]["points"] for c in graded) == pytest.approx(
            maxima(props)[name] + share
        )
        expected = [p.name for p in props if p.component == name] + [
            f"integration::{pid.split('::')[1]}" for pid, _ in shares.get(name, [])
        ]
        called = []
        for c in graded:
            component, prop, integration = CALL.search(cells.source_text(c)).groups()
            assert component == name
            called.append(f"integration::{prop}" if integration else prop)
        assert sorted(called) == sorted(expected), name


def test_nbgrader_total_is_the_gradebook_total(notebooks):
    from autograder.judge.outputs import maxima

    total = sum(
        c["metadata"]["nbgrader"]["points"]
        for nb in notebooks.values()
        for c in nb["cells"]
        if c["metadata"].get("nbgrader", {}).get("grade")
    )
    assert total == pytest.approx(sum(maxima(core.load(include_hidden=True)).values()))


def test_hidden_property_names_only_inside_hidden_regions(notebooks):
    hidden = [p for p in core.load(include_hidden=True) if not p.visible]
    for nb in notebooks.values():
        for c in nb["cells"]:
            src = cells.source_text(c)
            outside = src.split("### BEGIN HIDDEN TESTS")[0] + src.split("### END HIDDEN TESTS")[-1]
            assert not [
                p.name for p in hidden if p.name in outside or p.name in json.dumps(c["metadata"])
            ]


def test_markdown_explains_cross_attention_shapes(notebooks):
    intro = cells.source_text(notebooks["decoder"]["cells"][0])
    assert "m_D x m_E score matrix" in intro and "m_D x d_model output" in intro
    assert "memory (batch, m_E, d_model)" in intro  # the contract's lines for decoder.py
    for name, nb in notebooks.items():
        assert f"`{name}.py`" in cells.source_text(nb["cells"][0])


def test_kernel_check_shows_what_grade_shows(tmp_path, notebooks, monkeypatch):
    """`_kit.check` in a notebook folder: the reference passes; a bug raises with run_suite's exact text."""
    bug = next(b for b in catalog() if b.id == "attention:missing_scale")
    nb = notebooks["attention"]
    for c in cells.solution_cells(nb):
        if bug.find in cells.source_text(c):
            c["source"] = bug.apply(cells.source_text(c))
    (tmp_path / "attention.ipynb").write_text(json.dumps(nb))
    monkeypatch.chdir(tmp_path)
    folder = cells.write_package(
        {"attention": kernel.notebook_module("attention")}, tmp_path / "pkg"
    )
    outcomes, _ = run_suite(folder, ["attention"], include_hidden=True)
    failed = [o for o in outcomes if not o.passed]
    assert failed
    for o in outcomes[:4] + failed[:2]:
        if o.passed:
            kernel.check("attention", o.property.name)
        else:
            with pytest.raises(kernel.PropertyFailed) as info:
                kernel.check("attention", o.property.name)
            assert info.value.text == outcome_text(o) and o.hint in info.value.text
    assert os.environ.get(kernel.STUDENT_MODULES) is None
