"""The nbgrader notebooks, without nbgrader: module <-> cells, points, hidden tests, the in-kernel check."""

import ast
import copy
import json
import os
import re

import pytest

from autograder import KIT, i18n, registry, stubs
from autograder.bugs import catalog
from autograder.check import run_suite
from autograder.components import NAMES, get
from autograder.notebooks import cells, course, kernel
from autograder.results import outcome_text
from tests.test_i18n_suite import marked, unmarked, untranslated

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

    props = registry.load(include_hidden=True)
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
    assert total == pytest.approx(sum(maxima(registry.load(include_hidden=True)).values()))


def test_hidden_property_names_only_inside_hidden_regions(notebooks):
    hidden = [p for p in registry.load(include_hidden=True) if not p.visible]
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
    nb = copy.deepcopy(notebooks["attention"])  # the module's fixture stays the course as generated
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


# ------------------------------------------------------------------------------------------ in Spanish
def read_course(dest):
    return {
        p.stem: json.loads(p.read_text()) for p in (dest / "source" / "transformer").glob("*.ipynb")
    }


def code_of(cell):
    """A code cell's code: a solution cell's module without docstrings (the stubs' docstrings may be in the
    course's language), any other cell's lines that are not comments."""
    source = cells.source_text(cell)
    if not cells.is_solution(cell):
        return [line for line in source.splitlines() if not line.startswith("# ")]
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def kit_words(nb) -> str:
    """What the kit wrote in words in a notebook: its Markdown (less the module docstring and the contract, the
    module's own text) and the comments of its read-only cells."""
    doc = cells.split_module(course.reference_source(get(nb["metadata"]["kit"]["component"])))[0]
    texts = []
    for c in nb["cells"]:
        source = cells.source_text(c)
        if c["cell_type"] == "markdown":
            texts.append(re.sub(r"```text\n.*?```", "", source.replace(doc, ""), flags=re.S))
        elif not cells.is_solution(c):
            texts += [line for line in source.splitlines() if line.startswith("# ")]
    return "\n".join(texts)


def test_the_spanish_course_has_the_english_code_markers_and_points(notebooks, tmp_path):
    dest = course.build(tmp_path / "curso", lang="es")
    spanish = read_course(dest)
    assert sorted(spanish) == sorted(notebooks)
    for name, english in notebooks.items():
        nb = spanish[name]
        assert nb["metadata"]["kit"] == {"component": name, "lang": "es"}
        assert {**nb["metadata"], "kit": english["metadata"]["kit"]} == english["metadata"]
        assert [(c["cell_type"], c["id"], c["metadata"]) for c in nb["cells"]] == [
            (c["cell_type"], c["id"], c["metadata"]) for c in english["cells"]
        ], name
        for es_cell, en_cell in zip(nb["cells"], english["cells"]):
            if es_cell["cell_type"] == "code":
                assert code_of(es_cell) == code_of(en_cell), (name, cells.source_text(es_cell))
            else:
                assert cells.source_text(es_cell) != cells.source_text(en_cell)
        assert cells.source_text(nb["cells"][0]).startswith(f"# {NAMES.index(name) + 1}. ")
    # the course remembers its language for grading: kernels and the judge inherit it
    config = (dest / "nbgrader_config.py").read_text()
    english_config = (course.build(tmp_path / "course").joinpath("nbgrader_config.py")).read_text()
    assert config.startswith(english_config)
    assert "os.environ.setdefault('TRANSFORMER_KIT_LANG', 'es')\n" in config
    # a released solution cell gets the stub of the Spanish exercises/
    assert config.endswith(
        "code_stub = dict(python='# TU CÓDIGO AQUÍ\\nraise NotImplementedError')\n"
    )
    assert "TRANSFORMER_KIT_LANG" not in english_config


def test_every_word_the_kit_writes_in_a_spanish_notebook_is_translated(tmp_path, monkeypatch):
    """Built with every translation marked: no word of the Markdown or of a comment outside the marks, and every
    message the notebooks use is in the Spanish catalog (the properties' summaries are checked with their
    suite, tests/test_i18n_suite.py)."""
    monkeypatch.delenv(i18n.ENV, raising=False)
    with marked("es") as spanish_catalog:
        spanish = read_course(course.build(tmp_path / "curso", lang="es"))
    for name, nb in spanish.items():
        assert untranslated(kit_words(nb)) is None, (name, unmarked(kit_words(nb)))
    summaries = {p.summary for p in registry.load(include_hidden=True)}
    assert spanish_catalog.missing <= summaries, spanish_catalog.missing - summaries


def test_the_english_course_is_the_same_with_lang_en(notebooks, tmp_path):
    english = course.build(tmp_path / "en", lang="en")
    assert read_course(english) == notebooks
    default = course.build(tmp_path / "default")
    assert (english / "nbgrader_config.py").read_text() == (
        default / "nbgrader_config.py"
    ).read_text()
    for name, nb in notebooks.items():
        assert nb["metadata"]["kit"] == {"component": name}
        assert untranslated(kit_words(nb))  # English words, outside any mark: no catalog was used


def test_a_spanish_notebook_makes_the_kernels_check_speak_spanish(tmp_path, monkeypatch):
    """The setup cell of a Spanish notebook sets the course's language, unless the student's environment chose
    one; a failing test cell then explains itself in Spanish."""
    bug = next(b for b in catalog() if b.id == "attention:missing_scale")
    props = [p for p in registry.load(include_hidden=False) if p.component == "attention"]
    nb = course.notebook("attention", props, 2, lang="es")
    for c in cells.solution_cells(nb):
        if bug.find in cells.source_text(c):
            c["source"] = bug.apply(cells.source_text(c))
    (tmp_path / "attention.ipynb").write_text(json.dumps(nb))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(i18n.ENV, "en")
    kernel.setup("attention")
    assert os.environ[i18n.ENV] == "en"  # the student's own choice stays
    monkeypatch.delenv(i18n.ENV)
    kernel.setup("attention")
    assert os.environ[i18n.ENV] == "es"
    with pytest.raises(kernel.PropertyFailed) as info:
        for p in props:
            kernel.check("attention", p.name)
    assert "la entrada más pequeña que falla:" in info.value.text, info.value.text
