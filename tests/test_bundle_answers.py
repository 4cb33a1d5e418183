"""What a student receives gives no answer away (issue 18, docs/bundle.md).

Two leaks these tests would have caught: notebooks whose solution cells still held the reference (the old test
read the .ipynb as raw JSON, where a line of code never stands alone), and a checker whose functions computed the
exercises' results by hand. Both are checked on the bundles `release` builds, English and Spanish.
"""

import ast
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import tokenize
from pathlib import Path

import pytest

from autograder import release, stubs
from autograder.components import NAMES
from autograder.notebooks import cells

ROOT = Path(__file__).resolve().parent.parent

# Answers that the exercise's own docstring states as a closed form: restating the formula is no leak
# (issue 18). Each is (component, function).
CLOSED_FORMS = {
    ("mask", "causal_mask"),
    ("mask", "padding_mask"),
    ("positional_encoding", "sinusoidal_encoding"),
    ("training", "learning_rate"),
    ("training", "shift_right"),
}


def normalised(line: str) -> str:
    return re.sub(r"\s+", " ", line.split("#")[0]).strip()


def telling(line: str) -> bool:
    """A line that says something of its own: not `return x`, `super().__init__()` or a signature."""
    return len(line) >= 25 and not line.startswith(("return", "raise", "def ", "class ", "super()"))


def enclosing_functions(tree) -> list[tuple[int, int, str]]:
    return [
        (node.lineno, node.end_lineno, node.name)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


def solution_lines() -> dict[str, str]:
    """normalised line -> where: every telling line inside a solution region of solutions/, less the closed forms
    and less whatever line the stubs themselves hold."""
    found = {}
    for name in NAMES:
        source = (ROOT / "solutions" / f"{name}.py").read_text()
        functions = enclosing_functions(ast.parse(source))
        inside = False
        for number, line in enumerate(source.splitlines(), 1):
            if stubs.BEGIN in line:
                inside = True
            elif stubs.END in line:
                inside = False
            elif inside and telling(normalised(line)):
                owner = min(
                    (f for f in functions if f[0] <= number <= f[1]),
                    key=lambda f: f[1] - f[0],
                    default=None,
                )
                if owner is None or (name, owner[2]) not in CLOSED_FORMS:
                    found[normalised(line)] = f"solutions/{name}.py:{number}"
    said = {normalised(line) for text in stubs.generate().values() for line in text.splitlines()}
    return {line: where for line, where in found.items() if line not in said}


def readable_text(path: Path) -> str:
    """A file as a student reads it: a notebook as its cells' sources, one after the other."""
    if path.suffix == ".ipynb":
        return "\n\n".join(cells.source_text(c) for c in cells.read_notebook(path)["cells"])
    return path.read_text(errors="replace")


@pytest.fixture(scope="module", params=["en", "es"])
def bundle(request, tmp_path_factory):
    lang = None if request.param == "en" else request.param
    return release.build(tmp_path_factory.mktemp(f"bundle_{request.param}") / "bundle", lang)


def test_the_measure_sees_a_solution_line_in_a_notebook(tmp_path):
    """The measure itself can fail: a notebook with the reference in a solution cell is caught."""
    lines = solution_lines()
    assert len(lines) > 100, len(lines)
    nb = release.student_notebooks()["04_multi_head.ipynb"]
    _, chunks = cells.split_module((ROOT / "solutions" / "multi_head.py").read_text())
    for cell, chunk in zip(cells.solution_cells(nb), chunks, strict=True):
        cell["source"] = chunk
    path = tmp_path / "04_multi_head.ipynb"
    path.write_text(json.dumps(nb, indent=1))
    seen = {normalised(line) for line in readable_text(path).splitlines()}
    assert len(seen & lines.keys()) >= 5


def test_every_notebook_solution_cell_is_a_stub(bundle):
    """Read as notebooks: each solution cell holds only what exercises/ holds (signatures, docstrings, the stub's
    raise), never a line of the reference."""
    for path in sorted((bundle / "notebooks").glob("*.ipynb")):
        nb = cells.read_notebook(path)
        for cell in cells.solution_cells(nb):
            text = cells.source_text(cell)
            assert stubs.BEGIN not in text and stubs.END not in text, (path.name, text)
        # the module the notebook stands for is the stub's code: it scores what the stubs score, zero
        stub = (ROOT / "exercises" / f"{path.stem[3:]}.py").read_text()
        assert code_of(cells.module_source(nb)) == code_of(stub), path.name


def code_of(source: str) -> str:
    """The module's code without its docstrings (the Spanish bundle translates them)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def test_no_solution_line_anywhere_in_the_bundle(bundle):
    """No telling line of the reference's solution regions, beyond the closed forms and what the stubs say, in any
    file of the bundle (code, README, notebooks read as notebooks)."""
    lines = solution_lines()
    leaked = {}
    for path in sorted(bundle.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".md", ".ipynb", ".txt", ".toml", ".json"):
            hits = lines.keys() & {normalised(line) for line in readable_text(path).splitlines()}
            if hits:
                leaked[path.relative_to(bundle).as_posix()] = sorted(lines[h] for h in hits)
    assert not leaked, leaked


# ------------------------------------------------------------------------------------ pieces, not lines
# The crib of issue 35 assembled answers from pieces of the checker: an expression inside a line, a few lines of
# one helper and one of another. A piece is PIECE tokens in a row (names and operators as written; strings one
# token, comments none), so a renamed local or a reformatted line still matches where its neighbours do.
PIECE = 10
# Pieces a checker may hold because the exercise's docstring states them (as a formula, or as the attributes
# its contract declares): (component, function of the reference) -> the docstring's words.
STATED = {
    ("attention", "scaled_dot_product_attention"): "scores = query @ key^T / sqrt(d_k)",
    ("kv_cache", "CachedDecoder.start"): "the cache's four attributes",
    (
        "positional_encoding",
        "PositionalEncoding.__init__",
    ): "pe: buffer, sinusoidal_encoding(max_len, d_model)",
    ("training", "label_smoothed_cross_entropy"): "q, and the mean over the non-padding positions",
    ("training", "train"): "one train_step per batch, the step counted from 1",
    ("transformer", "Transformer.forward"): "generator(decode(tgt, encode(src, src_mask), ...))",
}


def tokens(code: str) -> list[tuple[str, int]]:
    """(token, line) of Python code: names, numbers and operators as written, a string as S; no comment."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    skip |= {tokenize.ENCODING, tokenize.ENDMARKER}
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type not in skip:
            out.append(("S" if tok.type == tokenize.STRING else tok.string, tok.start[0]))
    return out


def pieces(code: str) -> set[tuple[str, ...]]:
    toks = [t for t, _ in tokens(code)]
    return {tuple(toks[i : i + PIECE]) for i in range(len(toks) - PIECE + 1)}


def solution_pieces() -> dict[tuple[str, ...], tuple[tuple[str, str], str]]:
    """piece -> ((component, function), where: solutions/<name>.py:line): every piece of the reference's solution
    regions, less the closed forms and what the stubs hold."""
    said = set().union(*(pieces(text) for text in stubs.generate().values()))
    found = {}
    for name in NAMES:
        source = (ROOT / "solutions" / f"{name}.py").read_text()
        qualified = {}
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.Module | ast.ClassDef):
                continue
            for child in node.body:
                if isinstance(child, ast.FunctionDef):
                    owner = f"{node.name}." if isinstance(node, ast.ClassDef) else ""
                    for line in range(child.lineno, child.end_lineno + 1):
                        qualified.setdefault(line, f"{owner}{child.name}")
        for region in re.finditer(
            f"{re.escape(stubs.BEGIN)}.*?{re.escape(stubs.END)}", source, re.S
        ):
            first = source.count(
                "\n", 0, region.start()
            )  # the region's lines, numbered as in the file
            body = region.group(0).split("\n", 1)[1].rsplit("\n", 1)[0]
            toks = tokens(textwrap.dedent(body))
            for i in range(len(toks) - PIECE + 1):
                line = first + 1 + toks[i][1]
                owner = qualified.get(line, "")
                if (name, owner.split(".")[-1]) in CLOSED_FORMS:
                    continue
                piece = tuple(t for t, _ in toks[i : i + PIECE])
                if piece not in said:
                    found.setdefault(piece, ((name, owner), f"solutions/{name}.py:{line}"))
    return found


def test_the_piece_measure_finds_a_copied_expression():
    """A piece of the reference inside a checker's line, with other names around it, is found."""
    reference = solution_pieces()
    assert len(reference) > 1000, len(reference)
    line = (
        (ROOT / "solutions" / "multi_head.py").read_text().split(stubs.BEGIN)[1].split(stubs.END)[0]
    )
    planted = "def helper(z):\n    other = 1\n" + textwrap.indent(textwrap.dedent(line), "    ")
    assert pieces(planted) & reference.keys()


def test_no_piece_of_a_solution_in_the_checker():
    """The bundle's checker code (every .py under its autograder/) holds no piece of the reference's solution
    regions beyond the closed forms and what the docstrings state (STATED, each with its words); and every
    entry of STATED is still needed (checked both ways: a piece that no longer ships leaves the list)."""
    bundle = release.build(Path(tempfile.mkdtemp()) / "bundle")
    try:
        reference = solution_pieces()
        leaked, stated = {}, set()
        for path in sorted((bundle / "autograder").rglob("*.py")):
            for piece in pieces(path.read_text()) & reference.keys():
                owner, where = reference[piece]
                if owner in STATED:
                    stated.add(owner)
                else:
                    leaked.setdefault(f"{where} {owner[1]}", set()).add(path.name)
        assert not leaked, leaked
        assert stated == STATED.keys(), STATED.keys() - stated
    finally:
        shutil.rmtree(bundle.parent, ignore_errors=True)


# ------------------------------------------------------------------------------ the checker computes no answer
def probe(cwd: Path, package: str, out: Path) -> dict:
    """tests/bundle_probe.py on the checker whose autograder/ is in `cwd`: every function of `package` whose
    signature fits an exercise function, called on that exercise's inputs (see the script)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "KIT_"))}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "bundle_probe.py"), str(ROOT), package, str(out)],
        cwd=cwd,
        env=env | {"TRANSFORMER_KIT_LANG": "en"},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


def test_the_probe_finds_the_graded_sides_answers(tmp_path):
    """The probe can fail: on the kit's checking-side models with their graded-only regions (never shipped) it finds
    by-hand multi-head attention, LayerNorm, the encoder and decoder layers and the greedy loop, each by its
    signature alone."""
    found = {
        tuple(x)
        for x in probe(ROOT, "autograder.properties.models", tmp_path / "out.json")["leaks"]
    }
    for exercise, function in [
        ("multi_head.MultiHeadAttention.forward", "multi_head.expected_multi_head"),
        ("add_norm.LayerNorm.forward", "layer_norm.ln_variant"),
        ("encoder.EncoderLayer.forward", "layers.expected_encoder_layer"),
        ("decoder.DecoderLayer.forward", "layers.expected_decoder_layer"),
        ("transformer.greedy_decode", "greedy.expected_greedy_decode"),
    ]:
        assert (exercise, f"autograder.properties.models.{function}") in found, found


def test_no_shipped_function_computes_an_exercise(tmp_path):
    """Every function and class of the bundle's checker whose signature fits an exercise function, called on the
    exercise's inputs, reproduces none of the reference's results (beyond the closed forms, which the probe does
    not ask for), unless it needs the library call the component forbids. (The checker's code is the same in
    every language: the English bundle stands for all.)"""
    bundle = release.build(tmp_path / "bundle")
    result = probe(bundle, "autograder", tmp_path / "out.json")
    assert not result["leaks"], result["leaks"]
    assert len(result["fitted"]) > 100  # the probe reached the checker's functions


# ------------------------------------------------------------------------------ the bundle's diagnoses
# Bugs the bundle's self-check still names without the diagnoses (docs/bundle.md): each through a mistake model
# that is torch's layer with other weights, masks or eps; and the kit's CAUGHT_VISIBLY outside GRADED_ONLY.
NAMED_WITHOUT_DIAGNOSES = [
    "multi_head:q_k_projections_swapped",
    "multi_head:strided_head_split",
    "multi_head:no_output_projection",
    "multi_head:mask_not_passed",
    "multi_head:no_dropout_on_weights",
    "add_norm:unbiased_variance",
    "attention_numpy:layer_norm_wrong_axis",
    "attention_numpy:layer_norm_eps_outside_sqrt",
    "decoder:norms_1_2_swapped",
    "positional_encoding:cos_at_next_pair_frequency",
    "kv_cache:cache_appended_twice",
    "training:smoothing_mass_on_padding",  # the identity on F.cross_entropy without its padding term
    "beam_search:rows_mixed",  # each row searched alone differs from the batch's
    "beam_search:decode_without_src_mask",  # a padded row differs from the row with its padding cut off
]


@pytest.mark.parametrize("bug_id", NAMED_WITHOUT_DIAGNOSES)
def test_the_bundle_still_names_the_bug(bug_id, tmp_path, monkeypatch):
    """With no by-hand models (as in the bundle), a visible property fails and its hint names the bug."""
    from autograder import KIT, i18n, registry
    from autograder.bugs import catalog, make_submission
    from autograder.student_code import InProcessStudentCode
    from autograder.suite import core, graded

    bug = next(b for b in catalog() if b.id == bug_id)
    assert bug.component not in release.GRADED_ONLY
    properties = [p for p in registry.load() if p.visible and p.component == bug.component]
    graded.as_in_the_bundle(
        monkeypatch.setattr
    )  # every module's by-hand models, as `release` strips them
    student = InProcessStudentCode(make_submission(bug, KIT / "solutions", tmp_path / "s"), bug.id)
    with i18n.chosen("en"):
        failed = [o for p in properties for o in [core.run_property(p, student)] if not o.passed]
    assert any(bug.hint.lower() in o.hint.lower() for o in failed), [
        (o.property.name, o.hint) for o in failed
    ]


@pytest.mark.parametrize("shape", [(6,), (4, 7), (2, 3, 5)])
def test_the_library_variance_is_the_variance(shape):
    """The bundle's LayerNorm mistake models and add_norm's eps diagnosis take a row's variance from F.layer_norm
    alone (models.layer_norm.library_variance), so no variance by hand ships: it is the biased variance, over the
    last dim or the whole tensor, and 0 for a constant row."""
    import torch

    from autograder.properties.models.layer_norm import library_variance

    y = torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 3 + 1
    for dims in (shape[-1:], shape):
        want = y.var(tuple(range(-len(dims), 0)), unbiased=False, keepdim=True)
        assert torch.allclose(library_variance(y, dims), want, rtol=1e-12, atol=0)
    constant = torch.full(shape, 2.5, dtype=torch.float64)
    assert not library_variance(constant, shape[-1:]).any()
