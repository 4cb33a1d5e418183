"""Generate the student stubs (exercises/) from the reference (solutions/).

Each region between `### BEGIN SOLUTION` and `### END SOLUTION` becomes `raise NotImplementedError`, at the
region's indentation; everything else (imports, signatures, docstrings, shapes) is kept as written. This is
nbgrader's own convention, so the same markers serve `nbgrader generate_assignment`.

In another language (`lang="es"`) only the words a student reads change: every docstring, paragraph by paragraph,
from the catalog (`docstring_paragraphs` is what `i18n update` extracts), and the stub's comment. The code, the
signatures and the markers stay byte for byte, so one solution fits the stubs of every language.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from . import KIT, i18n
from .components import COMPONENTS
from .i18n import N_

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
YOUR_CODE_HERE = N_("YOUR CODE HERE")
STUB = "# {comment}\n{indent}raise NotImplementedError"
# a region may end the text without a newline: a notebook cell's last line
_REGION = re.compile(
    rf"^([ \t]*){re.escape(BEGIN)}[^\n]*\n.*?^[ \t]*{re.escape(END)}[^\n]*(\n|\Z)", re.S | re.M
)
# A docstring's paragraphs are separated by blank lines; the separators are kept as they are.
_PARAGRAPH_BREAK = re.compile(r"(\n[ \t]*\n)")
QUOTES = '"""'

SOLUTIONS, EXERCISES = KIT / "solutions", KIT / "exercises"


def strip_solutions(source: str, lang: str = i18n.SOURCE_LANGUAGE) -> str:
    """The stub text of one solution file (or of a notebook's solution cell), in `lang`."""
    if source.count(BEGIN) != source.count(END):
        raise ValueError(
            f"unbalanced markers: {source.count(BEGIN)} {BEGIN!r} vs {source.count(END)} {END!r}"
        )
    comment = i18n.translation(lang).gettext(YOUR_CODE_HERE)
    stub = _REGION.sub(
        lambda m: m.group(1) + STUB.format(comment=comment, indent=m.group(1)) + m.group(2), source
    )
    # a marker the pattern did not take: refuse rather than ship the code
    if BEGIN in stub or END in stub:
        raise ValueError(f"a solution region could not be stubbed:\n{stub}")
    return translate_docstrings(stub, lang)


def solution_regions(source: str) -> list[str]:
    """The code inside each solution region (for tests and notebooks)."""
    return [m.group(0) for m in _REGION.finditer(source)]


def _docstrings(source: str) -> Iterator[tuple[ast.Constant, str]]:
    """(string node, where: `Class.method` or "the module") of every docstring, in source order."""

    def walk(node, where):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                yield value, where or "the module"
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from walk(child, f"{where}.{child.name}" if where else child.name)

    yield from walk(ast.parse(source), "")


def _paragraphs(docstring: str, indent: str) -> list[str]:
    """A docstring's text split at its blank lines, each paragraph without the docstring's own indentation (the
    column of its quotes), so it reads the same in a module, a function or a method. Even items are paragraphs,
    odd ones the blank lines between them."""
    return _PARAGRAPH_BREAK.split(docstring.replace("\n" + indent, "\n"))


def docstring_paragraphs(source: str) -> Iterator[tuple[int, str, str]]:
    """(line, where, paragraph) of every docstring paragraph of a stub: the catalog's messages."""
    for node, where in _docstrings(source):
        parts = _paragraphs(node.value.strip(), " " * node.col_offset)
        for paragraph in parts[::2]:
            if paragraph.strip():
                yield node.lineno, where, paragraph


def _translated(parts: list[str], translate) -> str:
    # never gettext(""): that is the catalog's header
    return "".join(p if i % 2 or not p.strip() else translate(p) for i, p in enumerate(parts))


def translate_text(text: str, lang: str = i18n.SOURCE_LANGUAGE) -> str:
    """A docstring's text as `ast.get_docstring` gives a module's (the notebooks' explanation), in `lang`."""
    return _translated(_paragraphs(text, ""), i18n.translation(lang).gettext)


def rewrite_docstrings(source: str, translate) -> str:
    """`source` with every docstring paragraph passed through `translate`; everything else untouched (with
    `translate=str` the source comes back byte for byte)."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(lineno: int, col: int) -> int:  # ast's columns count UTF-8 bytes
        return starts[lineno - 1] + len(lines[lineno - 1].encode()[:col].decode())

    edits = []
    for node, where in _docstrings(source):
        start = offset(node.lineno, node.col_offset)
        end = offset(node.end_lineno, node.end_col_offset)
        if source[start:end] != QUOTES + node.value + QUOTES:
            raise ValueError(
                f"{where}: write its docstring as a plain {QUOTES} string (no escapes)"
            )
        indent, body = " " * node.col_offset, node.value.strip()
        head = node.value[: node.value.index(body)]
        tail = node.value[len(head) + len(body) :]
        text = _translated(_paragraphs(body, indent), translate)
        text = head + re.sub(r"\n(?=[^\n])", "\n" + indent, text) + tail
        if QUOTES in text or "\\" in text:
            raise ValueError(f"{where}: its translated docstring holds {QUOTES} or a backslash")
        edits.append((start, end, QUOTES + text + QUOTES))
    for start, end, text in reversed(edits):
        source = source[:start] + text + source[end:]
    return source


def translate_docstrings(source: str, lang: str = i18n.SOURCE_LANGUAGE) -> str:
    """`source` with every docstring in `lang`, paragraph by paragraph, from the catalog."""
    if lang == i18n.SOURCE_LANGUAGE:
        return source
    return rewrite_docstrings(source, i18n.translation(lang).gettext)


# exercises/__init__.py: solutions/'s own says "Reference solutions", which is not true where it ships.
PACKAGE_DOC = (
    '"""Your Transformer exercises, one module per component: replace each `raise NotImplementedError` '
    "with your code.\n\nCheck them with `pytest` (or `python -m autograder check exercises`) from the "
    'folder above.\n"""\n'
)


def generate(solutions: Path = SOLUTIONS, lang: str = i18n.SOURCE_LANGUAGE) -> dict[str, str]:
    """File name -> stub text, for every component plus the package marker, in `lang`."""
    files = {"__init__.py": translate_docstrings(PACKAGE_DOC, lang)}
    for c in COMPONENTS:
        files[c.filename] = strip_solutions((solutions / c.filename).read_text(), lang)
    return files


def write(dest: Path = EXERCISES, solutions: Path = SOLUTIONS) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in generate(solutions).items():
        path = dest / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            written.append(path)
    return written


def drift(dest: Path = EXERCISES, solutions: Path = SOLUTIONS) -> list[str]:
    """Names of the files in `dest` that differ from what the generator makes (empty when in sync)."""
    expected = generate(solutions)
    actual = {p.name for p in dest.glob("*.py")}
    out = [
        n
        for n, text in expected.items()
        if not (dest / n).is_file() or (dest / n).read_text() != text
    ]
    return sorted(out + sorted(actual - set(expected)))
