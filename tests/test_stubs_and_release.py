"""exercises/ is exactly what the generator makes; the Spanish stubs differ only in their words; the student
bundle leaks nothing and works."""

import ast
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import generate, release, stubs
from autograder.components import NAMES
from autograder.suite import graded

ROOT = Path(__file__).resolve().parent.parent


def test_exercises_are_generated_from_solutions():
    assert generate.stale_stubs() == [], (
        "exercises/ drifted from solutions/: run `python -m autograder generate`"
    )


def test_every_solution_region_becomes_a_stub():
    for name in NAMES:
        source = (ROOT / "solutions" / f"{name}.py").read_text()
        stub = stubs.strip_solutions(source)
        assert stubs.solution_regions(source), f"{name}.py has no solution region"
        assert stubs.BEGIN not in stub and stubs.END not in stub
        assert stub.count("raise NotImplementedError") == len(stubs.solution_regions(source))
        compile(stub, f"{name}.py", "exec")  # still valid Python, signatures and docstrings kept


# ------------------------------------------------------------------------------- the stubs in Spanish
def without_words(text):
    """A stub with its docstrings' paragraphs emptied and its comments' words removed: its code."""
    return re.sub(r"#.*", "#", stubs.rewrite_docstrings(text, lambda paragraph: ""))


def docstring_nodes(tree):
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and ast.get_docstring(node)
    ]


def docstrings(text):
    return [ast.get_docstring(node, clean=False) for node in docstring_nodes(ast.parse(text))]


def strip_docstrings(text):
    tree = ast.parse(text)
    for node in docstring_nodes(tree):
        node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)


def test_the_docstrings_round_trip_byte_for_byte():
    """The paragraph machinery changes nothing it is not asked to: through `str`, every file comes back as is."""
    for name, text in stubs.generate().items():
        assert stubs.rewrite_docstrings(text, str) == text, name
        source = (ROOT / "solutions" / name).read_text()
        assert stubs.rewrite_docstrings(source, str) == source, name


def test_spanish_stubs_change_only_the_words():
    """Identifiers, signatures, code and markers byte for byte; the AST without docstrings equal; so one
    solution fits the stubs of both languages."""
    english, spanish = stubs.generate(), stubs.generate(lang="es")
    assert english.keys() == spanish.keys()
    for name in english:
        assert without_words(spanish[name]) == without_words(english[name]), name
        assert strip_docstrings(spanish[name]) == strip_docstrings(english[name]), name
        assert spanish[name].count("raise NotImplementedError") == english[name].count(
            "raise NotImplementedError"
        )
    assert "# TU CÓDIGO AQUÍ\n" in spanish["attention.py"]


def test_every_spanish_docstring_is_the_catalogs_spanish():
    """Paragraph by paragraph, each docstring of a Spanish stub is its English paragraph's translation in the
    catalog, and no docstring is left as it was in English."""
    from autograder import catalogs

    catalog = catalogs.read("es")
    english, spanish = stubs.generate(), stubs.generate(lang="es")
    for name in english:
        en = list(stubs.docstring_paragraphs(english[name]))
        es = list(stubs.docstring_paragraphs(spanish[name]))
        assert len(en) == len(es), name
        for (_, where, source), (_, _, translated) in zip(en, es, strict=True):
            message = catalog.get(source)
            assert message is not None and message.string, (name, where, source)
            assert translated == message.string, (name, where, source)
        for before, after in zip(docstrings(english[name]), docstrings(spanish[name]), strict=True):
            assert before != after, (name, before)
        # The module's explanation as a notebook shows it (ast's cleaned docstring) translates the same.
        module_doc = ast.get_docstring(ast.parse(english[name]))
        assert stubs.translate_text(module_doc, "es") == ast.get_docstring(ast.parse(spanish[name]))


def test_the_reference_with_spanish_docstrings_earns_the_same_points(tmp_path):
    """Docstrings are not code: the reference, its docstrings in Spanish, passes the self-check as it does in
    English (by-hand rules included)."""
    folder = tmp_path / "solutions_es"
    folder.mkdir()
    for name in NAMES:
        source = (ROOT / "solutions" / f"{name}.py").read_text()
        (folder / f"{name}.py").write_text(stubs.translate_docstrings(source, "es"))
        assert strip_docstrings((folder / f"{name}.py").read_text()) == strip_docstrings(source)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "KIT_"))}

    def table(folder):
        proc = subprocess.run(
            [sys.executable, "-m", "autograder", "check", str(folder), "--component", "attention"],
            cwd=ROOT,
            env=env | {"COLUMNS": "120", "TRANSFORMER_KIT_LANG": "en"},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
        return proc.stdout.split("\n", 2)[2]  # below the title, which names the folder and the time

    assert table(folder) == table(ROOT / "solutions")


def test_unbalanced_markers_are_refused():
    with pytest.raises(ValueError):
        stubs.strip_solutions("def f():\n    ### BEGIN SOLUTION\n    return 1\n")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return release.build(tmp_path_factory.mktemp("release") / "bundle")


def code_lines(text):
    return [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def solution_snippets():
    """Every two consecutive lines of solution code: none may appear, consecutive, anywhere in the bundle.

    (Single lines are too generic to count: an independent expected model may well write `x = x.transpose(1, 2)`.)
    """
    pairs = set()
    for name in NAMES:
        for region in stubs.solution_regions((ROOT / "solutions" / f"{name}.py").read_text()):
            lines = code_lines(region)[1:-1]
            pairs.update(zip(lines, lines[1:]))
    return pairs


def test_bundle_holds_no_solution_code_and_no_hidden_property(bundle):
    files = [p for p in bundle.rglob("*") if p.is_file()]
    names = {p.relative_to(bundle).as_posix() for p in files}
    assert not any(
        n.startswith(
            (
                "solutions/",
                "autograder/hidden/",
                "autograder/bugs/",
                "autograder/judge/",
                "autograder/notebooks/course",
                "autograder/notebooks/grading",
                "examples/",
            )
        )
        for n in names
    ), names
    text = "\n".join(p.read_text(errors="replace") for p in files)
    # a marker line, not a name
    region = re.compile(r"^\s*### (BEGIN SOLUTION|BEGIN HIDDEN TESTS)\s*$", re.M)
    assert not region.search(text)
    bundle_pairs = set()
    for p in files:
        lines = code_lines(p.read_text(errors="replace"))
        bundle_pairs.update(zip(lines, lines[1:]))
    leaked = sorted(solution_snippets() & bundle_pairs)
    assert not leaked, f"solution code in the bundle: {leaked[:5]}"
    from autograder import registry

    hidden = [p for p in registry.load(include_hidden=True) if not p.visible]
    assert hidden, "the suite should have hidden properties"
    assert not [p.name for p in hidden if p.name in text], (
        "a hidden property's name is in the bundle"
    )
    points = json.loads((bundle / "autograder" / "hidden_points.json").read_text())
    # hidden points, and the visible points of the components whose self-check is not shipped (docs/bundle.md)
    graded_only = [p for p in registry.load(include_hidden=True) if release.graded_only(p)]
    assert sum(points.values()) == sum(p.points for p in graded_only)


def test_bundle_ships_the_checking_sides_models_and_no_by_hand_model(bundle):
    """What ships of the checking side beyond the property modules is one folder, listed here: a model added to
    it is a decision to ship it (no answer: docs/bundle.md), made by editing this list. Its by-hand mistake models
    do not ship: the graded-only regions are stripped, so every module's BY_HAND is None in the bundle, and the
    kit's own is not (the regions exist: this check can fail)."""
    shipped = sorted(
        p.relative_to(bundle / "autograder" / "properties" / "models").as_posix()
        for p in (bundle / "autograder" / "properties" / "models").rglob("*")
        if p.is_file()
    )
    assert shipped == [
        "__init__.py",
        "beam_search.py",
        "greedy.py",
        "layer_norm.py",
        "layers.py",
        "multi_head.py",
        "positional_encoding.py",
        "trainer.py",
        "transformer.py",
    ]
    assert not (bundle / "autograder" / "diagnoses").exists()
    assert not (bundle / "autograder" / "oracles").exists()
    marked = [
        p.name
        for p in (bundle / "autograder").rglob("*.py")
        for line in p.read_text().splitlines()
        if line.lstrip().startswith(graded.GRADED_ONLY)
    ]
    assert not marked, marked
    by_hand = {
        "multi_head": "expected_multi_head",
        "layer_norm": "ln_variant",
        "layers": "expected_encoder_layer",
        "greedy": "expected_greedy_decode",
        "beam_search": "expected_beam_search",
        "trainer": "smoothed_loss",
    }
    for module, function in by_hand.items():
        kit = importlib.import_module(f"autograder.properties.models.{module}")
        assert getattr(kit.BY_HAND, function), module
        text = (bundle / "autograder" / "properties" / "models" / f"{module}.py").read_text()
        assert f"def {function}(" not in text and "BY_HAND = SimpleNamespace(" not in text, module


def test_a_graded_only_region_is_stripped_or_refused():
    text = "a = 1\n# >>> graded only: why\ndef answer():\n    pass\n# <<< graded only\nb = 2\n"
    assert graded.strip(text) == "a = 1\nb = 2\n"
    for broken in (
        "# >>> graded only\nx = 1\n",  # never closed
        "# <<< graded only\n",  # closed, never opened
        "# >>> graded only\n# >>> graded only\n# <<< graded only\n",  # nested
    ):
        with pytest.raises(ValueError):
            graded.strip(broken, "planted.py")


def run_bundle_pytest(bundle, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "KIT_"))}
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=bundle,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_bundle_check_exits_0_at_full_marks_with_points_pending_and_the_totals_add_up(
    bundle, tmp_path
):
    from autograder.judge.outputs import maxima

    work = tmp_path / "student"
    shutil.copytree(bundle, work)
    for name in NAMES:
        shutil.copy2(ROOT / "solutions" / f"{name}.py", work / "exercises" / f"{name}.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "KIT_"))} | {
        "COLUMNS": "250"
    }
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "check"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    # hidden points pending: no failure
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    total = sum(maxima(core_load()).values())
    assert re.search(
        rf"visible \+ \d+ hidden \+ \d+ integration = {total:g} points in all", proc.stdout
    ), proc.stdout[-800:]
    assert "integration" in proc.stdout and "your pieces together" in proc.stdout


def test_bundle_check_command_works_without_the_instructor_tools(bundle):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "KIT_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "check", "exercises", "--component", "mask"],
        cwd=bundle,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the stubs earn nothing: not full marks
    assert "0 / " in proc.stdout and "hidden" in proc.stdout, proc.stdout


def test_bundle_pytest_on_stubs_reports_zero(bundle):
    proc = run_bundle_pytest(bundle, "-m", "attention")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "0 / " in proc.stdout and "not implemented yet" in proc.stdout
    assert "hidden" in proc.stdout  # the table says points remain to be decided at grading


def test_bundle_pytest_from_exercises_on_stubs_is_a_screenful_per_component_and_ends_with_the_table(
    bundle,
):
    """Run where a student edits (cwd=exercises/): the tests are found, every failure is one short block, the
    table comes last (only pytest's one-line count after it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "KIT_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest"],
        cwd=bundle / "exercises",
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert len(lines) <= 50 * len(NAMES), len(lines)
    for name in NAMES:
        assert len([line for line in lines if line.startswith(f"✗ {name} · ")]) <= 40, name
    end = max(i for i, line in enumerate(lines) if line.startswith("└"))  # the table's last border
    assert all("✗" not in line for line in lines[end:]) and len(lines) - end <= 4, lines[end:]
    assert "Traceback" not in proc.stdout and "_____" not in proc.stdout


def test_bundle_offers_only_what_works_there_and_says_what_it_is(bundle):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "KIT_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "--help"],
        cwd=bundle,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "check" in proc.stdout
    assert not {"generate", "release", "grade", "gradescope", "nbgrader-course"} & set(
        re.findall(r"\w[\w-]*", proc.stdout)
    )
    assert "Reference" not in (bundle / "exercises" / "__init__.py").read_text()
    for name, text in stubs.generate().items():  # no --lang: the English stubs, as in exercises/
        assert (bundle / "exercises" / name).read_text() == text, name
    assert "NotImplementedError" in (bundle / "exercises" / "__init__.py").read_text()
    assert (
        "jupyter" in (bundle / "requirements.txt").read_text()
        or "notebook" in (bundle / "requirements.txt").read_text()
    )
    names = sorted(p.name for p in (bundle / "notebooks").glob("*.ipynb"))
    assert names == [f"{i:02d}_{n}.ipynb" for i, n in enumerate(NAMES, 1)]  # sorted = course order
    points = json.loads((bundle / "autograder" / "integration_points.json").read_text())
    from autograder.judge.sections import integration_props

    assert points == {
        pid: x for specs in integration_props(core_load()).values() for pid, x in specs
    }


def core_load():
    from autograder import registry

    return registry.load(include_hidden=True)


def filled_notebooks(bundle, dest, bug=None):
    """The bundle's notebooks with the reference in their solution cells; bug: (component, find, replace)."""
    from autograder.notebooks import cells

    shutil.copytree(bundle / "notebooks", dest)
    for path in sorted(dest.glob("*.ipynb")):
        name = path.stem[3:]
        _, chunks = cells.split_module((ROOT / "solutions" / f"{name}.py").read_text())
        nb = json.loads(path.read_text())
        solution = cells.solution_cells(nb)
        assert len(solution) == len(chunks), name
        for cell, chunk in zip(solution, chunks):
            cell["source"] = chunk.replace(bug[1], bug[2]) if bug and bug[0] == name else chunk
        path.write_text(json.dumps(nb))
    return dest


def test_bundle_grades_the_notebooks_and_names_the_cell(bundle, tmp_path):
    """The notebooks are graded by the same suite; a traceback names the notebook's cell, not a generated file."""
    boom = (
        "attention",
        "    exp = torch.exp(x - x_max)\n",
        "    exp = torch.exp(x - x_max)\n    raise ValueError('boom')\n",
    )
    folder = filled_notebooks(bundle, tmp_path / "notebooks", boom)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "KIT_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "check", str(folder), "--component", "attention"],
        cwd=bundle,
        env=env | {"COLUMNS": "250"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "ValueError in attention.softmax: boom" in proc.stdout
    assert '02_attention.ipynb, the cell that starts "import math", line ' in proc.stdout, (
        proc.stdout[:3000]
    )
    assert "attention.py, line" not in proc.stdout


def test_bundle_pytest_on_reference_passes_and_says_hidden_points_remain(bundle, tmp_path):
    import shutil

    work = tmp_path / "student"
    shutil.copytree(bundle, work)
    for name in NAMES:
        shutil.copy2(ROOT / "solutions" / f"{name}.py", work / "exercises" / f"{name}.py")
    proc = run_bundle_pytest(work)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "more points are decided at grading" in proc.stdout


def test_bundle_notebook_runs_in_a_kernel_and_a_failure_names_the_cell(bundle, tmp_path):
    """The student's way: open notebooks/02_attention.ipynb in Jupyter and run it (setup cell, tests)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    work = tmp_path / "student"
    shutil.copytree(bundle, work)
    shutil.rmtree(work / "notebooks")
    boom = (
        "attention",
        "    exp = torch.exp(x - x_max)\n",
        "    exp = torch.exp(x - x_max)\n    raise ValueError('boom')\n",
    )
    filled_notebooks(bundle, work / "notebooks", boom)
    nb = nbformat.read(work / "notebooks" / "02_attention.ipynb", as_version=4)
    env_backup = {k: os.environ.pop(k) for k in list(os.environ) if k.startswith("PYTHONPATH")}
    try:
        nbclient.NotebookClient(
            nb,
            timeout=300,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(work / "notebooks")}},
        ).execute()
    finally:
        os.environ.update(env_backup)
    errors = [
        "\n".join(o["traceback"])
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o["output_type"] == "error"
    ]
    # Every behavioural cell fails on the raise; the static by-hand cell fails because none of them passed.
    assert errors and all(
        ("ValueError" in e and "boom" in e) or "by-hand point" in e for e in errors
    ), errors[:2]
    assert sum("ValueError" in e for e in errors) >= len(errors) - 1
    assert any(
        '02_attention.ipynb, the cell that starts "import math", line ' in e for e in errors
    ), errors[:2]


def test_the_bundles_readmes_show_the_course_order_and_the_glossary(bundle):
    """The committed student READMEs leave their generated blocks empty (a new component does not edit them);
    the bundle's are rendered at release: every module in teaching order, and the glossary, in both languages."""
    from autograder.components import COMPONENTS
    from autograder.glossary import GLOSSARY

    order = [f"`{c.filename}`" for c in COMPONENTS]
    for name in ("README.md", "README.es.md"):
        template = (release.readme_path("en" if name == "README.md" else "es")).read_text()
        assert generate.BLOCK.search(template) and not any(
            m.group("body") for m in generate.BLOCK.finditer(template)
        ), name
        text = " ".join((bundle / name).read_text().split())
        positions = [text.find(f) for f in order]
        assert -1 not in positions and positions == sorted(positions), (name, positions)
        for theirs, ours in GLOSSARY.items():
            assert f"| `{theirs}` | `{ours}` |" in text, (name, theirs)
