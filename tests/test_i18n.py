"""The kit in the students' language (docs/i18n.md): the catalogs are complete, the language is chosen in the
documented order, the self-check and the Spanish bundle print Spanish, and the glossary names the kit's names."""

import argparse
import gettext
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import catalogs, glossary, i18n, results, stubs

ROOT = Path(__file__).resolve().parent.parent


def clean_env(**extra):
    """No language asked for: no kit variable, a C locale (the machine's own LANG must not decide a test)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST", "KIT_")) and k not in (i18n.ENV, *i18n.LOCALE_VARIABLES)
    }
    return env | {"LANG": "C.UTF-8", "COLUMNS": "200"} | extra


@pytest.fixture
def lang(monkeypatch):
    """Run a block in a language, with nothing else in the environment that chooses one."""
    for name in (i18n.ENV, *i18n.LOCALE_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(i18n, "REMEMBERED", ROOT / "no-such-file")
    yield i18n.set_language
    i18n.set_language(None)


# ----------------------------------------------------------------------------------------------- catalogs
@pytest.mark.parametrize("language", catalogs.TRANSLATED)
def test_every_message_is_translated_with_its_placeholders_and_compiled(language):
    """Every marked message is in the catalog and translated, none is fuzzy, each translation has exactly the
    placeholders of its source, and the committed .mo is the .po compiled."""
    assert catalogs.problems(language) == []


def test_the_catalog_check_catches_what_it_is_for(tmp_path, monkeypatch):
    po = tmp_path / "autograder.po"
    po.write_bytes(catalogs.po_path("es").read_bytes())
    text = po.read_text()
    # a renamed placeholder
    text = text.replace('msgstr "puntos de {folder}/"', 'msgstr "puntos de {carpeta}/"')
    text = text.replace('msgid "total"\nmsgstr "total"', '#, fuzzy\nmsgid "total"\nmsgstr "total"')
    text = text.replace('msgstr "fallos"', 'msgstr ""')
    po.write_text(text)
    monkeypatch.setattr(catalogs, "po_path", lambda lang: po)
    found = "\n".join(catalogs.problems("es"))
    assert "placeholders ['carpeta'] instead of ['folder']" in found
    assert "fuzzy: 'total'" in found and "untranslated: 'failures'" in found
    assert "is not compiled from its .po" in found
    assert catalogs.fields("{n} of {total:g}, {n}") == ["n", "total"]


# ------------------------------------------------------------------------------------------ which language
def test_the_language_is_chosen_in_the_documented_order(lang, monkeypatch, tmp_path):
    assert i18n.current_language() == "en"  # nothing asks: English
    monkeypatch.setenv("LANG", "es_MX.UTF-8")
    assert i18n.current_language() == "es"  # the locale
    monkeypatch.setenv("LC_ALL", "C")
    assert i18n.current_language() == "en"  # LC_ALL before LANG, as gettext reads them
    monkeypatch.setenv("LANGUAGE", "fr:es")
    assert i18n.current_language() == "es"  # LANGUAGE's first language the kit has
    monkeypatch.setenv("LANGUAGE", "de")
    assert i18n.current_language() == "en"  # a LANGUAGE the kit cannot use is ignored
    remembered = tmp_path / "language.txt"
    remembered.write_text("es\n")
    monkeypatch.setattr(i18n, "REMEMBERED", remembered)
    monkeypatch.setenv("LC_ALL", "en_US.UTF-8")
    assert i18n.current_language() == "es"  # the bundle's default over the locale
    monkeypatch.setenv(i18n.ENV, "en")
    assert i18n.current_language() == "en"  # the environment variable over the bundle's default
    lang("es")
    assert i18n.current_language() == "es"  # the command line over everything
    with pytest.raises(ValueError):
        lang("fr")
    assert i18n.language_in_argv(["check", "x", "--lang", "es"]) == "es"
    assert i18n.language_in_argv(["check", "--lang=en"]) == "en"


def test_english_is_the_source_text_unchanged(lang):
    lang("en")
    assert (
        results.dependency_sentence("encoder", {"multi_head": 1})
        == "encoder uses your multi_head.py, which fails 1 property: fix multi_head.py first."
    )
    assert results.dependency_sentence("encoder", {"attention": 2, "add_norm": 3}) == (
        "encoder uses your attention.py, add_norm.py, which fail 5 properties between them: fix those files first."
    )
    assert results.row_title("integration") == "your pieces together"
    lang("es")
    assert (
        results.dependency_sentence("multi_head", {"attention": 8})
        == "multi_head usa tu attention.py, que no pasa 8 propiedades: corrige primero attention.py."
    )
    assert (
        results.dependency_sentence("multi_head", {"attention": 1})
        == "multi_head usa tu attention.py, que no pasa 1 propiedad: corrige primero attention.py."
    )
    assert results.row_title("multi_head") == "Atención multicabeza"


# ------------------------------------------------------------------------------------------------ glossary
def test_the_glossary_names_the_kits_name_in_both_languages(lang):
    lang("en")
    assert (
        glossary.explain("__init__() got an unexpected keyword argument 'dim_embedding'")
        == "`dim_embedding` is `d_model` here."
    )
    assert (
        glossary.explain("'MultiHeadAttention' object has no attribute 'w_q'")
        == "`w_q` is what the course notebooks call `proyection_Q`: name it `w_q` here."
    )
    assert (
        glossary.explain(
            "MultiHeadAttention.__init__() missing 2 required positional arguments: 'heads' and "
            "'dim_embedding'"
        )
        == "`heads` is `num_heads` here. `dim_embedding` is `d_model` here."
    )
    assert (
        glossary.explain(
            "expected parameters/buffers named w_k.bias, w_k.weight; the module has "
            "proyection_K.bias, proyection_K.weight"
        )
        == "`proyection_K` is `w_k` here."
    )
    # prose is not a name
    assert glossary.explain("your output has NaN at [1, 0]: the attention heads") == ""
    lang("es")
    assert (
        glossary.explain("__init__() got an unexpected keyword argument 'dim_embedding'")
        == "`dim_embedding` aquí se llama `d_model`."
    )
    assert (
        glossary.explain("'MultiHeadAttention' object has no attribute 'w_q'")
        == "`w_q` es lo que los notebooks del curso llaman `proyection_Q`: aquí llámalo `w_q`."
    )


def test_a_module_written_with_the_notebooks_names_is_told_the_kits_names(lang, tmp_path):
    """MultiHeadAttention(heads, dim_embedding), as the course notebooks build it: the self-check's hint says
    which name the kit passes."""
    from autograder.check import run_suite

    folder = tmp_path / "student"
    shutil.copytree(ROOT / "solutions", folder, ignore=shutil.ignore_patterns("__pycache__"))
    source = (folder / "multi_head.py").read_text()
    old = "    def __init__(self, d_model, num_heads, dropout=0.0, bias=True):\n"
    assert old in source
    source = source.replace(
        old,
        "    def __init__(self, heads, dim_embedding, dropout=0.0, bias=True):\n"
        "        d_model, num_heads = dim_embedding, heads\n",
    )
    (folder / "multi_head.py").write_text(source)
    lang("es")
    outcomes, _ = run_suite(folder, ["multi_head"], include_hidden=False)
    hints = {o.hint for o in outcomes if not o.passed}
    assert any(
        h.startswith("`d_model` es lo que los notebooks del curso llaman `dim_embedding`")
        for h in hints
    ), hints


# ---------------------------------------------------------------------------------------- what is printed
def run_kit(*args, cwd=ROOT, **env):
    return subprocess.run(
        [sys.executable, "-m", "autograder", *args],
        cwd=cwd,
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_check_lang_es_on_the_stubs_prints_a_spanish_table():
    proc = run_kit("check", "exercises", "--component", "mask", "--lang", "es")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    for spanish in (
        "componente",
        "puntos",
        "primera propiedad que falla y pista",
        "sin implementar",
        "la entrada más pequeña que falla:",
        "igual que la anterior",
        "Máscara causal",
    ):
        assert spanish in proc.stdout, (spanish, proc.stdout[-3000:])
    english = run_kit("check", "exercises", "--component", "mask")  # nothing asks: English
    assert (
        "first failing property and hint" in english.stdout and "not implemented" in english.stdout
    )
    assert "componente" not in english.stdout


def test_check_help_in_spanish():
    proc = run_kit("check", "--lang", "es", "--help")
    assert proc.returncode == 0 and "solo las propiedades visibles" in proc.stdout, proc.stdout
    assert (
        proc.stdout.startswith("uso: ")
        and "\nopciones:\n" in proc.stdout
        and "muestra esta ayuda" in proc.stdout
    )
    english = run_kit("check", "--help")
    assert english.stdout.startswith("usage: ") and "\noptions:\n" in english.stdout


def test_check_errors_in_spanish(lang, capsys, monkeypatch):
    """argparse's own error lines go through the kit's catalog: Spanish with --lang es (or the environment),
    English otherwise, word for word argparse's."""
    from autograder import cli

    def error(*argv):
        with pytest.raises(SystemExit) as exit_:
            cli.main(list(argv))
        assert exit_.value.code == 2
        return capsys.readouterr().err

    spanish = error("check", "--lang", "es", "--component", "bogus")
    assert spanish.startswith("uso: python -m autograder check ")
    assert (
        "python -m autograder check: error: argumento --component: opción no válida: 'bogus' "
        "(elige entre 'attention_numpy', " in spanish
    ), spanish
    assert "argumentos no reconocidos: extra" in error(
        "check", "--lang", "es", "exercises", "extra"
    )
    assert "argumento --json: se esperaba un argumento" in error("check", "--lang", "es", "--json")
    english = error("check", "--lang", "en", "--component", "bogus")
    assert english.startswith("usage: python -m autograder check ")
    assert "error: argument --component: invalid choice: 'bogus' (choose from " in english
    lang(None)
    monkeypatch.setenv(i18n.ENV, "es")
    assert "error: faltan estos argumentos obligatorios: command" in error()
    monkeypatch.setenv(i18n.ENV, "en")
    assert "error: the following arguments are required: command" in error()
    assert argparse._ is gettext.gettext  # argparse itself is left as it was


def test_a_spanish_bundle_speaks_spanish_by_default_and_english_when_asked(tmp_path):
    bundle = tmp_path / "bundle"
    proc = run_kit("release", str(bundle), "--lang", "es")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (bundle / "README.md").read_text().startswith("# Ejercicios del Transformer")
    assert (bundle / "README.en.md").read_text().startswith("# Transformer exercises")
    assert "| `dim_embedding` | `d_model` |" in (bundle / "README.md").read_text()
    assert (bundle / "autograder" / "language.txt").read_text() == "es\n"
    assert (bundle / "autograder" / "locale" / "es" / "LC_MESSAGES" / "autograder.mo").is_file()
    # The stubs in Spanish (their code as in English: tests/test_stubs_and_release.py).
    for name, text in stubs.generate(lang="es").items():
        assert (bundle / "exercises" / name).read_text() == text, name
    attention = (bundle / "exercises" / "attention.py").read_text()
    assert (
        '"""Atención de producto punto escalado.' in attention and "# TU CÓDIGO AQUÍ" in attention
    )

    spanish = run_kit("check", "exercises", "--component", "mask", cwd=bundle)
    assert "componente" in spanish.stdout and "ocultos" in spanish.stdout, spanish.stdout[-3000:]
    assert "Quedan " in spanish.stdout and " puntos por decidir al calificar" in spanish.stdout
    english = run_kit("check", "exercises", "--component", "mask", cwd=bundle, **{i18n.ENV: "en"})
    assert "first failing property and hint" in english.stdout and "hidden" in english.stdout
    pytest_en = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "mask", "--lang", "en"],
        cwd=bundle,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "points for exercises/" in pytest_en.stdout and "not implemented" in pytest_en.stdout, (
        pytest_en.stdout[-3000:]
    )
    pytest_es = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "mask"],
        cwd=bundle,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "puntos de exercises/" in pytest_es.stdout and " fallos " in pytest_es.stdout, (
        pytest_es.stdout[-3000:]
    )
