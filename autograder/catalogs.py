"""The translation catalogs, kept with Babel: `python -m autograder i18n extract|update|compile|check`.

extract: the marked messages of the package (babel.cfg) -> autograder/locale/autograder.pot (not committed).
update: merges them into each language's autograder/locale/<lang>/LC_MESSAGES/autograder.po; a new message
    arrives untranslated (no guessed "fuzzy" translation), an old one is dropped.
compile: every .po -> its .mo, which is committed beside it: the kit, the student bundle and the Gradescope
    bundle read the .mo with the standard library's gettext, with no Babel at run time.
check: what the tests check (tests/test_i18n.py): every message translated, none fuzzy, the placeholders of each
    translation those of its source, the .po in step with the code and the .mo with the .po.
Instructor's tool: Babel is a dependency of the kit, not of the bundle.
"""

from __future__ import annotations

import ast
import io
import string
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

from . import stubs
from .i18n import DOMAIN, LANGUAGES, LOCALE_DIR, SOURCE_LANGUAGE
from .suite.core import summary_of

ROOT = LOCALE_DIR.parent.parent
TEMPLATE = LOCALE_DIR / f"{DOMAIN}.pot"
TRANSLATED = [lang for lang in LANGUAGES if lang != SOURCE_LANGUAGE]
COMMENT_TAGS = ("TRANSLATORS:",)


def po_path(lang: str) -> Path:
    return LOCALE_DIR / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


def extract() -> Catalog:
    """Every marked message of the package, as a template catalog."""
    with open(ROOT / "babel.cfg") as f:
        method_map, options_map = parse_mapping_cfg(f)
    template = Catalog(project="transformer-autograder", domain=DOMAIN)
    for filename, lineno, message, comments, context in extract_from_dir(
        ROOT,
        method_map,
        options_map,
        keywords=DEFAULT_KEYWORDS,
        comment_tags=COMMENT_TAGS,
        strip_comment_tags=True,
    ):
        template.add(message, None, [(filename, lineno)], auto_comments=comments, context=context)
    for filename, lineno, summary in property_summaries():
        template.add(summary, None, [(filename, lineno)], auto_comments=["a property's summary"])
    for filename, lineno, where, paragraph in stub_docstrings():
        template.add(
            paragraph,
            None,
            [(filename, lineno)],
            auto_comments=[
                f"a stub's docstring, {where}: code names, shapes, formulas stay as they are"
            ],
        )
    return template


def property_summaries():
    """(file, line, summary) of every property: the first line of a `@prop` function's docstring, which a student
    reads as the property's one-line summary. Babel extracts no docstrings, so they are read here from the
    source (no import: extraction never runs the properties)."""
    for package in ("properties", "hidden"):
        for path in sorted((ROOT / "autograder" / package).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.FunctionDef) and any(
                    isinstance(d, ast.Call) and getattr(d.func, "id", None) == "prop"
                    for d in node.decorator_list
                ):
                    if summary := summary_of(ast.get_docstring(node)):
                        yield str(path.relative_to(ROOT)), node.lineno, summary


def stub_docstrings():
    """(file, line, where, paragraph) of every paragraph of the stubs' docstrings (exercises/, made from
    solutions/ by the generator): what a student reads above each `raise NotImplementedError`. One message per
    paragraph, so a formula block or an `Args:` list is one message, kept whole."""
    for name, text in stubs.generate().items():
        for lineno, where, paragraph in stubs.docstring_paragraphs(text):
            yield f"exercises/{name}", lineno, where, paragraph


def read(lang: str) -> Catalog:
    with open(po_path(lang), "rb") as f:
        return read_po(f, locale=lang, domain=DOMAIN)


def po_bytes(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    # File names without line numbers: an edit elsewhere in a file does not touch the catalogs.
    write_po(out, catalog, width=110, include_lineno=False, ignore_obsolete=True)
    return out.getvalue()


def mo_bytes(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    write_mo(out, catalog, use_fuzzy=False)
    return out.getvalue()


def update(template: Catalog) -> None:
    for lang in TRANSLATED:
        path = po_path(lang)
        if path.exists():
            catalog = read(lang)
            catalog.update(template, no_fuzzy_matching=True, update_creation_date=False)
        else:
            catalog = Catalog(locale=lang, domain=DOMAIN, project=template.project)
            catalog.update(template, no_fuzzy_matching=True)
        catalog.fuzzy = False  # the header: Babel marks a new catalog's header fuzzy
        catalog.last_translator = catalog.language_team = "the kit's maintainers"
        catalog.msgid_bugs_address = "the kit's issue tracker"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(po_bytes(catalog))


def compile_all() -> list[Path]:
    written = []
    for lang in TRANSLATED:
        path = po_path(lang).with_suffix(".mo")
        path.write_bytes(mo_bytes(read(lang)))
        written.append(path)
    return written


def fields(text: str) -> list[str]:
    """The placeholders of a message, sorted, repeated ones once: '{component} uses {file}' -> [component, file]."""
    return sorted({name for _, name, _, _ in string.Formatter().parse(text) if name is not None})


def message_ids(catalog: Catalog) -> set[str]:
    """The messages of a catalog (a plural by its singular)."""
    return {m.id if isinstance(m.id, str) else m.id[0] for m in catalog if m.id}


def problems(lang: str) -> list[str]:
    """What is wrong with one language's catalog, one line each (empty: nothing)."""
    catalog, found = read(lang), []
    wanted, have = message_ids(extract()), message_ids(catalog)
    found += [f"not in the catalog (run `i18n update`): {m!r}" for m in sorted(wanted - have)]
    found += [
        f"in the catalog, no longer in the code (run `i18n update`): {m!r}"
        for m in sorted(have - wanted)
    ]
    for m in catalog:
        if not m.id:
            continue
        sources = [m.id] if isinstance(m.id, str) else list(m.id)
        translations = [m.string] if isinstance(m.string, str) else list(m.string)
        if m.fuzzy:
            found.append(f"fuzzy: {sources[0]!r}")
        if not all(translations):
            found.append(f"untranslated: {sources[0]!r}")
            continue
        for t in translations:
            if fields(t) != fields(sources[-1]) or any(
                fields(s) != fields(sources[-1]) for s in sources
            ):
                found.append(
                    f"placeholders {fields(t)} instead of {fields(sources[-1])}: {sources[0]!r}"
                )
    mo = po_path(lang).with_suffix(".mo")
    if not mo.exists() or mo.read_bytes() != mo_bytes(catalog):
        found.append(f"{mo.name} is not compiled from its .po (run `i18n compile`)")
    return found


def main(action: str) -> int:
    if action == "extract":
        TEMPLATE.write_bytes(po_bytes(extract()))
        print(f"wrote {TEMPLATE.relative_to(ROOT)}")
    elif action == "update":
        update(extract())
        print(
            "updated "
            + ", ".join(str(po_path(lang).relative_to(ROOT)) for lang in TRANSLATED)
            + ": translate the empty msgstr entries, then `i18n compile`"
        )
    elif action == "compile":
        for path in compile_all():
            print(f"wrote {path.relative_to(ROOT)}")
    else:
        found = [f"{lang}: {line}" for lang in TRANSLATED for line in problems(lang)]
        print("\n".join(found) if found else "the catalogs are complete and compiled")
        return 1 if found else 0
    return 0
