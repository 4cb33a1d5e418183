"""The one place for translation: what a student reads, in English or Spanish (docs/i18n.md).

Messages are English in the code, marked `_("...")` (or `N_("...")` where the text is defined before the
language is known and translated where it is shown, `ngettext(singular, plural, n)` where a count decides the
form), and translated at the moment they are shown through the standard library's gettext, from the catalogs
in autograder/locale/<lang>/LC_MESSAGES/autograder.mo. Placeholders are named, str.format style, filled after
translation: `_("{component} uses your {file}").format(component=..., file=...)`; a test checks that every
translation has exactly the placeholders of its source.

The language, first that applies: `set_language` (the `--lang` of `check` and of `pytest`), the environment
variable TRANSFORMER_KIT_LANG, the default a student bundle remembers (autograder/language.txt, written by
`release --lang`), the locale (LANGUAGE, LC_ALL, LC_MESSAGES, LANG), then English.
"""

from __future__ import annotations

import contextlib
import gettext
import os
from pathlib import Path

LANGUAGES = ("en", "es")
SOURCE_LANGUAGE = "en"  # the language of the msgids: no catalog
ENV = "TRANSFORMER_KIT_LANG"
LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")  # gettext's own order
DOMAIN = "autograder"
PACKAGE = Path(__file__).resolve().parent
LOCALE_DIR = PACKAGE / "locale"
REMEMBERED = PACKAGE / "language.txt"  # a bundle's default, written by `release --lang`

_chosen: str | None = None  # set_language: the command line's choice, above everything else
_translations: dict[str, gettext.NullTranslations] = {}
_decided: dict[tuple, str] = {}  # current_language's answers, by what decided them


def set_language(lang: str | None) -> None:
    """The command line's choice (None: let the environment, the bundle and the locale decide)."""
    global _chosen
    if lang is not None and lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}: choose from {', '.join(LANGUAGES)}")
    _chosen = lang


@contextlib.contextmanager
def chosen(lang: str | None):
    """`set_language(lang)` for a block, then the previous choice again: what the instructor generates in a
    language (a course's notebooks) whatever the environment says, or the judge's run called as a library."""
    global _chosen
    saved = _chosen
    set_language(lang)
    try:
        yield
    finally:
        _chosen = saved


def _supported(value: str | None) -> str | None:
    """'es_ES.UTF-8' -> 'es'; a language the kit has not, or C/POSIX, -> None."""
    code = (value or "").split(".")[0].split("@")[0].split("_")[0].split("-")[0].strip().lower()
    return code if code in LANGUAGES else None


def remembered_default() -> str | None:
    try:
        return _supported(REMEMBERED.read_text())
    except OSError:
        return None


def from_locale(environ=None) -> str | None:
    """The language the locale asks for: the first variable that is set decides (LANGUAGE may list several,
    `es:en`; its first supported entry counts)."""
    environ = os.environ if environ is None else environ
    for name in LOCALE_VARIABLES:
        value = environ.get(name)
        if value:
            found = [code for part in value.split(":") if (code := _supported(part))]
            if name == "LANGUAGE" and not found:
                continue  # gettext ignores a LANGUAGE it cannot use
            return found[0] if found else None
    return None


def current_language(environ=None) -> str:
    if _chosen:
        return _chosen
    environ = os.environ if environ is None else environ
    # Every `_()` asks (some 4 000 times a suite, most for messages built before a check passes): the answer is
    # kept per value of what decides it, so the bundle's file is read once, not at every message (5 % of a
    # self-check's CPU time before).
    key = (REMEMBERED, *(environ.get(name) for name in (ENV, *LOCALE_VARIABLES)))
    if key not in _decided:
        _decided[key] = (
            _supported(environ.get(ENV))
            or remembered_default()
            or from_locale(environ)
            or SOURCE_LANGUAGE
        )
    return _decided[key]


def translation(lang: str) -> gettext.NullTranslations:
    if lang not in _translations:
        _translations[lang] = (
            gettext.NullTranslations()
            if lang == SOURCE_LANGUAGE
            else gettext.translation(DOMAIN, LOCALE_DIR, languages=[lang], fallback=True)
        )
    return _translations[lang]


def _(message: str) -> str:
    """The message in the current language (the English source where no translation exists)."""
    return translation(current_language()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    return translation(current_language()).ngettext(singular, plural, n)


def N_(message: str) -> str:
    """Marks a message for the catalog without translating it: `_()` translates it where it is shown."""
    return message


def add_language_argument(parser) -> None:
    """`--lang en|es` on a command a student runs."""
    parser.add_argument(
        "--lang",
        choices=LANGUAGES,
        help=_("the language of what is printed (default: the course's, else the locale's)"),
    )


def language_in_argv(argv: list[str]) -> str | None:
    """The `--lang X` / `--lang=X` of a command line, read before the parser is built, so that its help is
    already in that language."""
    for i, arg in enumerate(argv):
        if arg == "--lang" and i + 1 < len(argv):
            return argv[i + 1] if argv[i + 1] in LANGUAGES else None
        if arg.startswith("--lang="):
            value = arg.split("=", 1)[1]
            return value if value in LANGUAGES else None
    return None
