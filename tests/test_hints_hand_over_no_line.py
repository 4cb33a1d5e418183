"""A hint names the mistake and where to look; it never hands over the reference's line (issue 35).

Every message a student can read (the Spanish catalog holds every message with its translation) is searched for
every code line of the reference (solutions/) that the exercises do not already show: whitespace and quotes
aside, no message may hold one. Left out, and why: the lines that declare what the docstring's contract
declares (`self.<attribute> = ...`, `self.register_buffer(...)`: the attribute list is the exercise's
interface, and naming it is where to look), and lines under 16 characters (`return x`: no answer).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from autograder import catalogs

KIT = Path(__file__).resolve().parent.parent
SHORTEST = 16  # characters, whitespace aside


def normal(text: str) -> str:
    return re.sub(r"\s+", "", text).replace('"', "'")


def declares(line: str) -> bool:
    return bool(re.match(r"self\.\w+\s*=", line)) or line.startswith("self.register_buffer(")


def answer_lines(source: str, shown: str) -> set[str]:
    """The code lines of a reference module a student does not see: not in a docstring, not a comment, not a
    declaration, and not in the exercises' own text (`shown`, normalised)."""
    tree = ast.parse(source)
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(getattr(node, "value", None), ast.Constant):
            docs.update(range(node.lineno, node.end_lineno + 1))
    found = set()
    for number, line in enumerate(source.splitlines(), 1):
        code = line.split("#")[0].strip()
        if number in docs or not code or code.startswith(("def ", "class ", "import ", "from ")):
            continue
        if len(normal(code)) >= SHORTEST and not declares(code) and normal(code) not in shown:
            found.add(code)
    return found


def handed_over(messages: list[str], references: dict[str, str], shown: str) -> list[str]:
    lines = {
        (name, line) for name, source in references.items() for line in answer_lines(source, shown)
    }
    wanted = [(name, line, normal(line)) for name, line in sorted(lines)]
    return [
        f"{name}: {line!r} in {message[:120]!r}"
        for message, text in ((m, normal(m)) for m in messages)
        for name, line, code in wanted
        if code in text
    ]


def every_message() -> list[str]:
    catalog = catalogs.read("es")
    return [text for m in catalog if m.id for text in (m.id, m.string) if isinstance(text, str)]


def test_no_message_holds_a_line_of_the_reference():
    shown = normal("\n".join(p.read_text() for p in sorted((KIT / "exercises").glob("*.py"))))
    references = {p.stem: p.read_text() for p in sorted((KIT / "solutions").glob("*.py"))}
    assert handed_over(every_message(), references, shown) == []


@pytest.mark.parametrize(
    "message, caught",
    [
        ("dropout is never applied: heads = self.dropout(weights) @ v", True),
        ("dropout is never applied to the weights before they multiply v", False),
        ("keep it: self.dropout = nn.Dropout(dropout)", False),  # a declaration
    ],
)
def test_the_search_finds_a_line_and_only_a_line(message, caught):
    reference = (
        "def f(self, weights, v):\n"
        "    heads = self.dropout(weights) @ v\n"
        "    self.dropout = nn.Dropout(dropout)\n"
    )
    assert bool(handed_over([message], {"multi_head": reference}, shown="")) == caught
