"""Every hint true, in the student's language (issue 22): each class of mistake a course student makes gets the
hint of that mistake, in English and in Spanish, and no hint whose evidence does not hold.

Each case plants the course's mistake in a copy of the reference and runs one property in-process (a fraction
of a second each); the loop case runs one component with a 0.3 s limit."""

from __future__ import annotations

import re
import shutil
import time

import pytest

from autograder import KIT, i18n, registry, results
from autograder.check import run_suite
from autograder.student_code import InProcessStudentCode, StopsAtLoops
from autograder.suite import core, error_hints

ROOT = KIT


@pytest.fixture(params=["en", "es"])
def lang(request, monkeypatch):
    for name in (i18n.ENV, *i18n.LOCALE_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(i18n, "REMEMBERED", ROOT / "no-such-file")
    i18n.set_language(request.param)
    yield request.param
    i18n.set_language(None)


def planted(tmp_path, *edits):
    folder = tmp_path / "sub"
    shutil.copytree(ROOT / "solutions", folder, ignore=shutil.ignore_patterns("__pycache__"))
    for component, old, new in edits:
        path = folder / f"{component}.py"
        source = path.read_text()
        assert source.count(old) == 1, (component, old)
        path.write_text(source.replace(old, new))
    return folder


def outcome(folder, pid: str) -> core.Outcome:
    registry.load()
    student = StopsAtLoops(InProcessStudentCode(folder))
    return core.run_property(core.REGISTRY[pid], student)


SDPA = "_, weights = scaled_dot_product_attention(q, k, v, mask)"
SHAPE_HINT_WORDS = {"en": "a shape error", "es": "error de forma"}

# (edits, property, what the hint must say in English, in Spanish)
PYTHON_ERRORS = {
    "unbound_local": (
        [
            (
                "multi_head",
                SDPA,
                "scaled_dot_product_attention = scaled_dot_product_attention(q, k, v, mask)\n"
                "        weights = scaled_dot_product_attention[1]",
            )
        ],
        "multi_head::multi_head_equals_torch",
        "is assigned somewhere in this function",
        "se asigna en algún punto de esta función",
    ),
    "tuple_not_unpacked": (
        [
            (
                "multi_head",
                "heads = self.dropout(weights) @ v",
                "heads = scaled_dot_product_attention(q, k, v, mask).transpose(1, 1)",
            )
        ],
        "multi_head::multi_head_equals_torch",
        "a `tuple` arrived where a tensor was expected",
        "llegó un `tuple` donde se esperaba un tensor",
    ),
    "missing_attribute": (
        [("multi_head", "return self.w_o(merged)", "return self.attention(merged)")],
        "multi_head::multi_head_cross_attention_shape",
        "your code reads `attention` of a `MultiHeadAttention`",
        "tu código lee `attention` de un `MultiHeadAttention`",
    ),
    "name_error": (
        [("multi_head", "heads = self.dropout(weights) @ v", "heads = dropout(weights) @ v")],
        "multi_head::multi_head_equals_torch",
        "`dropout` is not defined where it is used",
        "`dropout` no está definido donde se usa",
    ),
}


SWAP = "scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k)"
PYTHON_ERRORS |= {
    "numpy_dot_T_on_a_batch": (
        [("attention_numpy", SWAP, "scores = q @ k.T / math.sqrt(d_k)")],
        "attention_numpy::np_attention_equals_expected",
        "`.T` reverses every axis of a batched array",
        "`.T` invierte todos los ejes de un arreglo con lotes",
    ),
    "numpy_elementwise_product": (
        [("attention_numpy", "return weights @ v, weights", "return weights * v, weights")],
        "attention_numpy::np_attention_equals_expected",
        "`*` multiplies element by element",
        "`*` multiplica elemento a elemento",
    ),
    "scipy_import": (
        [("attention_numpy", "import math\n", "import math\nimport scipy.special\n")],
        "attention_numpy::np_softmax_rows_sum_to_one",
        "`scipy` is not available where your code is checked",
        "`scipy` no está disponible donde se comprueba tu código",
    ),
}


@pytest.mark.parametrize("case", PYTHON_ERRORS)
def test_a_python_error_gets_a_hint_about_that_error_never_a_shape_hint(tmp_path, lang, case):
    edits, pid, english, spanish = PYTHON_ERRORS[case]
    o = outcome(planted(tmp_path, *edits), pid)
    assert o.status == "error", (o.status, o.message)
    assert (english if lang == "en" else spanish).lower() in o.hint.lower(), o.hint
    assert SHAPE_HINT_WORDS[lang] not in o.hint


def test_a_shape_hint_speaks_only_on_a_shape_error(lang):
    hint = "a shape error? query is (batch, m_q, d_model)"  # a property's error_hint (a msgid)
    assert error_hints.hint_for(
        "RuntimeError", "shape '[2, 4]' is invalid for input of size 6", "", hint
    )
    assert (
        error_hints.hint_for(
            "RuntimeError", "expected scalar type Float but found Double", "", hint
        )
        == ""
    )
    # a hint that is not about shapes (a contract's names) keeps speaking on other errors
    names = "EncoderLayer(d_model, num_heads, d_ff, dropout) / Encoder(num_layers, ...) must build"
    assert error_hints.hint_for("KeyError", "'x'", "", names)
    arguments = error_hints.hint_for(
        "TypeError", "Foo.__init__() got an unexpected keyword argument 'd_model'", "", hint
    )
    assert ("Foo.__init__()" in arguments) and SHAPE_HINT_WORDS[lang] not in arguments


def test_heads_first_in_an_encoder_layer_is_named_and_blamed_on_encoder_py(tmp_path, lang):
    folder = planted(
        tmp_path,
        (
            "encoder",
            "self.self_attention = MultiHeadAttention(d_model, num_heads, dropout)",
            "self.self_attention = MultiHeadAttention(num_heads, d_model, dropout)",
        ),
    )
    o = outcome(folder, "encoder::encoder_layer_equals_torch")
    assert o.status == "error"
    assert "MultiHeadAttention(num_heads, d_model, ...)" in o.hint
    assert ("d_model first" if lang == "en" else "d_model primero") in o.hint
    # the short block shows the line in encoder.py, not multi_head.py's own ValueError
    shown = results.short_text(o)
    assert "encoder.py, " in shown and "multi_head.py, " not in shown, shown


def test_key_first_cross_attention_is_named_and_blamed_on_decoder_py(tmp_path, lang):
    folder = planted(
        tmp_path,
        (
            "decoder",
            "self.cross_attention(x, memory, memory, memory_mask)",
            "self.cross_attention(memory, memory, x, memory_mask)",
        ),
    )
    o = outcome(folder, "decoder::decoder_layer_equals_torch")
    assert o.status == "error", (o.status, o.message)
    assert "cross_attention(memory, ...)" in o.hint
    assert ("the query comes first" if lang == "en" else "la consulta va primero") in o.hint
    shown = results.short_text(o)
    assert "decoder.py, " in shown and "multi_head.py, " not in shown, shown


def test_a_different_eps_is_named_with_the_value_the_contract_wants(tmp_path, lang):
    folder = planted(
        tmp_path,
        (
            "add_norm",
            "def __init__(self, d_model, eps=1e-5):",
            "def __init__(self, d_model, eps=1e-6):",
        ),
    )
    o = outcome(folder, "add_norm::layer_norm_equals_torch")
    assert o.status == "failed"
    assert "eps = 1e-6" in o.hint and "eps=1e-5" in o.hint, o.hint
    assert ("with another value" if lang == "en" else "con otro valor") in o.hint
    assert "missing" not in o.hint and "falta" not in o.hint


LOOP = (
    "add_norm",
    "        return self.norm(x + self.dropout(sublayer_output))",
    "        while True:\n            pass",
)


@pytest.mark.usefixtures("settled_heap")
def test_a_loop_stops_early_gives_the_loop_hint_and_charges_only_what_it_touched(tmp_path, lang):
    folder = planted(tmp_path, LOOP)
    # CPU time, the clock the limits count: the wall clock of a loaded machine says nothing about the loop
    start = time.process_time()
    outcomes, _ = run_suite(folder, ["add_norm"], timeout=0.3)
    seconds = time.process_time() - start
    timed_out = [o for o in outcomes if o.status == "timeout"]
    assert timed_out and all(o.property.name.startswith("add_and_norm") for o in timed_out)
    # every other property (LayerNorm's, the static scan, the hidden ones) ran and passed
    assert all(o.passed for o in outcomes if o not in timed_out)
    loop = "an endless loop" if lang == "en" else "un bucle infinito"
    assert all(loop in o.hint for o in timed_out), [o.hint for o in timed_out]
    # one time limit spent, the repeats answered at once (0.3 s scaled by this machine's speed, each)
    fresh = [o for o in timed_out if "0.3 s" in o.message]
    assert len(fresh) == 1, [o.message for o in timed_out]
    assert seconds < 60


@pytest.mark.usefixtures("settled_heap")
def test_grade_charges_a_loop_as_check_does(tmp_path):
    """The judge route: the same per-property verdicts as the self-check for a looping AddAndNorm (before, grade
    stopped the section after two timeouts and lost the static scan and the hidden LayerNorm properties)."""
    from autograder.judge.limits import Limits
    from autograder.judge.scheduler import Options, grade

    subs = tmp_path / "subs"
    subs.mkdir()
    folder = planted(tmp_path, LOOP)
    shutil.move(folder, subs / "looping")
    checked, _ = run_suite(subs / "looping", ["add_norm"], timeout=0.5)
    graded = grade(subs, tmp_path / "out", Options(jobs=1, limits=Limits(op_timeout=0.5)))
    judge = [o for o in graded["looping"].outcomes if o.property.component == "add_norm"]
    assert {o.property.label: o.score for o in checked} == {
        o.property.label: o.score for o in judge
    }
    assert {o.property.label: o.status for o in checked} == {
        o.property.label: o.status for o in judge
    }


def test_a_numpy_property_prints_its_failing_input_as_numpy_code(tmp_path):
    folder = planted(
        tmp_path,
        (
            "attention_numpy",
            "return weights @ v, weights",
            "return weights * v, weights",
        ),
    )
    o = outcome(folder, "attention_numpy::np_attention_shapes_and_dtype")
    assert "`*` multiplies element by element" in o.hint
    o = outcome(
        planted(
            tmp_path / "axis",
            ("attention_numpy", "total = np.sum(exp, axis=axis", "total = np.sum(exp, axis=0"),
        ),
        "attention_numpy::np_softmax_respects_axis",
    )
    assert o.example.startswith("x=np.array("), o.example
    assert "torch" not in o.example


# ------------------------------------------------------------------------------------------- the glossary
GLOSSARY_CASES = {
    "'MultiHeadAttention' object has no attribute 'attention'": (
        "`attention` is `w_o` here.",
        "`attention` aquí se llama `w_o`.",
    ),
    "__init__() got an unexpected keyword argument 'dim_proyection'": (
        "`dim_proyection` is `d_k` here.",
        "`dim_proyection` aquí se llama `d_k`.",
    ),
    "__init__() got an unexpected keyword argument 'increment'": (
        "`d_ff` = increment * d_model",
        "`d_ff` = increment * d_model",
    ),
    "cannot import name 'ScaledDotProductAttention' from 'x'": (
        "is a function here: `scaled_dot_product_attention(",
        "aquí es una función: `scaled_dot_product_attention(",
    ),
    "cannot import name 'create_mask' from 'x'": (
        "`causal_mask(size)` and `padding_mask(tokens, pad_id)`",
        "`causal_mask(size)` y `padding_mask(tokens, pad_id)`",
    ),
    "expected parameters/buffers named pe; the module has positional_encoding": (
        "buffer is `pe` here",
        "aquí se llama `pe`",
    ),
    "'AddAndNorm' object has no attribute 'normalization'": (
        "`normalization` is `norm` here.",
        "`normalization` aquí se llama `norm`.",
    ),
    "'Encoder' object has no attribute 'encoder_layers'": (
        "`encoder_layers` is `layers` here.",
        "`encoder_layers` aquí se llama `layers`.",
    ),
}


@pytest.mark.parametrize("error", GLOSSARY_CASES)
def test_the_glossary_knows_the_course_names(lang, error):
    from autograder import glossary

    english, spanish = GLOSSARY_CASES[error]
    assert (english if lang == "en" else spanish) in glossary.explain(error)


def test_the_glossary_reaches_every_route_from_the_outcome_itself(tmp_path, lang):
    """passes.made adds it where each route makes its outcomes (check, pytest, the notebooks' check cells, the
    judge's grading process), once; the self-check does not say it twice; the hint after it starts with a
    capital."""
    from autograder import passes
    from autograder.check import SelfCheck
    from autograder.judge import feedback
    from autograder.judge.outputs import StudentResult

    folder = planted(
        tmp_path, ("multi_head", "return self.w_o(merged)", "return self.attention(merged)")
    )
    o = passes.made(outcome(folder, "multi_head::multi_head_equals_torch"))
    sentence = "`attention` is `w_o` here." if lang == "en" else "`attention` aquí se llama `w_o`."
    assert o.hint.startswith(sentence + " ") and o.hint[len(sentence) + 1].isupper(), o.hint
    session = SelfCheck(folder)
    checked = passes.finish([session.run(o.property)], blame=session.blame)[0]
    assert checked.hint.count(sentence) == 1
    md = feedback.markdown(StudentResult("s", [o]))
    # a code span stays a code span in feedback.md (its backticks not escaped)
    assert sentence in md


def test_module_errors_name_no_glossary_entry():
    from autograder import glossary

    assert glossary.explain("No module named 'attention'") == ""


# ------------------------------------------------------------------------------------------ small things
def test_a_mistyped_folder_says_so_in_one_line(tmp_path, lang, capsys):
    from autograder import cli

    assert cli.main(["check", str(tmp_path / "exercsies"), "--lang", lang]) == 2
    out = capsys.readouterr().out
    assert ("no such folder" if lang == "en" else "no existe la carpeta") in out
    assert len(out.strip().splitlines()) == 1


def test_a_missing_file_is_not_needed_by_its_own_import(tmp_path, lang):
    folder = planted(tmp_path)
    (folder / "encoder.py").unlink()
    o = outcome(folder, "encoder::encoder_layer_equals_torch")
    assert o.status == "error"
    assert "encoder.py" in o.message
    assert "needed by" not in o.message and "lo necesita" not in o.message, o.message


def test_the_table_fits_80_columns_and_says_integration_in_the_language(lang):
    import io

    from rich.console import Console

    from autograder.suite.core import Outcome, Property

    def row(component, name, status):
        p = Property(name, component, 2.0, True, 1, None, "s")
        return Outcome(p, status, "a message " * 12, "a hint " * 12)

    outcomes = [
        row("positional_encoding", "sinusoidal_equals_closed_form", "failed"),
        row("multi_head", "integration::multi_head_equals_torch", "failed"),
    ]
    rows = results.summarize(outcomes, {"multi_head": 3.0})
    console = Console(width=80, record=True, file=io.StringIO(), force_terminal=True)
    results.render_table(rows, console=console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert ("integration" if lang == "en" else "integración") in text
    # every integration property ran: only the hidden points are pending, and only they are named
    assert "not run here" not in text and "no se ejecutan" not in text, text


def test_a_scalar_has_no_index(lang):
    import torch

    from autograder.suite import checks

    with pytest.raises(core.Failure) as e:
        checks.close(torch.tensor(1.0), torch.tensor(2.0), "loss")
    assert "[]" not in e.value.message
    assert ("(a scalar)" if lang == "en" else "(es un escalar)") in e.value.message


def test_the_picture_speaks_the_courses_language(lang):
    from autograder.judge import picture

    labels = picture.LABELS.get(lang, picture.TOKENS)
    assert labels[0] == labels[4] and len(labels) == len(picture.TOKENS)
    assert labels[0] == ("the" if lang == "en" else "el")


def test_the_gradebook_reads_at_80_columns():
    import io

    from rich.console import Console

    from autograder.judge.outputs import StudentResult, render_gradebook

    props = registry.load(True)
    everything = [core.Outcome(p, "passed") for p in props]
    console = Console(width=80, record=True, file=io.StringIO(), force_terminal=True)
    render_gradebook(
        {"maria_garcia_lopez": StudentResult("maria_garcia_lopez", everything)}, props, console
    )
    text = console.export_text()
    assert "maria_garcia_lopez" in text and "…" not in text  # nothing cut
    assert re.search(r"attn \d+/\d+", text.replace("\u00a0", " ")), text


# ------------------------------------------------------------------------------------------------ words
def test_the_spanish_notebooks_contract_and_setup_comment_are_spanish():
    from autograder.release import student_notebooks

    def first_cells(lang):
        nb = student_notebooks(lang)["02_attention.ipynb"]
        return "".join(nb["cells"][0]["source"]), "".join(nb["cells"][1]["source"])

    intro, setup = first_cells("es")
    assert "softmax(x, dim=-1)  (a mano, numéricamente estable)" in intro
    assert "# la carpeta del paquete, que contiene el comprobador (autograder/)" in setup
    intro, setup = first_cells(None)
    assert "softmax(x, dim=-1)  (by hand, numerically stable)" in intro
    assert "# the bundle's folder, which holds the checker (autograder/)" in setup


def test_the_spanish_words_the_trial_found(lang):
    from autograder import catalogs
    from autograder.judge.operations import _brief

    po = catalogs.po_path("es").read_text()
    assert "entero -inf" not in po and "tus propios {files}" not in po
    assert "tgt[:, t - 1] para t >= 1" in po
    import torch

    brief = _brief(torch.zeros(2, 5))
    assert brief == (
        "tensor of shape (2, 5), float32" if lang == "en" else "tensor de forma (2, 5), float32"
    )
