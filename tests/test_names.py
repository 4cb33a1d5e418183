"""Names that say their side (issue 25 point 5; the decision is docs/extending.md's "Names"). The checking side's
values and models are `expected`; "reference" means solutions/ only; "oracle" and "witness" are gone. This test
parses autograder/ and names each file:line that breaks the rules."""

from __future__ import annotations

import ast
import io
import re
import tokenize

from autograder import KIT

# Words that no name, comment, docstring or message of autograder/ holds: the checking side's values and models
# are "expected", by-hand mistake models live in the graded-only regions of properties/models/.
GONE = re.compile(r"oracle|witness", re.IGNORECASE)
# The checking side's packages: there an identifier with the word "reference" or "ref" would be a checking-side
# computation called by solutions/' name. Elsewhere (the judge, the notebooks, the reports) it means solutions/.
CHECKING_SIDE = ("properties/", "hidden/", "suite/")
REFERENCE_WORDS = {"reference", "references", "ref", "refs"}
# A student-side helper (a module-level function of the checking side's packages whose first parameter is
# `student`) is named for what it calls or builds, as most were (softmax, attend, forward, build_layer: 40 of
# 50): the parameter says its side, so neither a `student_` prefix nor a `_call` suffix, and never `expected`.
HELPER = re.compile(r"^student_|_call$|^expected")


def identifiers(tree: ast.AST):
    """(line, name) for every name the code gives: modules imported, functions, classes, arguments, keywords,
    assignment targets (names and attributes), import aliases, global and nonlocal names."""
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield line, node.name
        elif isinstance(node, ast.arg):
            yield line, node.arg
        elif isinstance(node, ast.keyword) and node.arg:
            yield line, node.arg
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            yield line, node.id
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            yield line, node.attr
        elif isinstance(node, ast.alias):
            yield line, node.asname or node.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield line, node.module
        elif isinstance(node, ast.Global | ast.Nonlocal):
            yield from ((line, name) for name in node.names)


def words(name: str) -> set[str]:
    """The words of an identifier: split on "_" , "." and lower-to-upper case changes (ExpectedRef -> expected,
    ref)."""
    return {w.lower() for w in re.split(r"[_.]|(?<=[a-z0-9])(?=[A-Z])", name) if w}


def student_helpers(tree: ast.Module):
    """(line, name) of each module-level function whose first parameter is `student`, properties (@prop) aside."""
    for node in tree.body:
        if (
            isinstance(node, ast.FunctionDef)
            and node.args.args
            and node.args.args[0].arg == "student"
            and not any("prop" in ast.unparse(d) for d in node.decorator_list)
        ):
            yield node.lineno, node.name


def text_lines(source: str):
    """(line, text) of each comment and string (docstrings and messages included)."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.COMMENT, tokenize.STRING):
            yield token.start[0], token.string


def misnamed(root) -> list[str]:
    found = []
    package = root / "autograder"
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if GONE.search(rel):
            found.append(f"autograder/{rel}: the file's own name")
        source = path.read_text()
        for line, name in identifiers(ast.parse(source)):
            if GONE.search(name):
                found.append(f"autograder/{rel}:{line}: {name}")
            elif rel.startswith(CHECKING_SIDE) and words(name) & REFERENCE_WORDS:
                found.append(f"autograder/{rel}:{line}: {name} (checking side: expected_*)")
        for line, name in (
            student_helpers(ast.parse(source)) if rel.startswith(CHECKING_SIDE) else ()
        ):
            if HELPER.search(name):
                found.append(
                    f"autograder/{rel}:{line}: {name} (a student-side helper: named for what it calls)"
                )
        for line, text in text_lines(source):
            if GONE.search(text):
                found.append(f"autograder/{rel}:{line}: {text.strip()[:80]}")
    return found


def test_names_say_their_side():
    assert misnamed(KIT) == []


def test_the_guard_finds_each_banned_form(tmp_path):
    """Each form the rules forbid is found (so the test above can fail), and the words that merely contain
    "ref" (prefix, refusal) or "reference" outside the checking side are not."""
    package = tmp_path / "autograder"
    (package / "properties").mkdir(parents=True)
    (package / "judge").mkdir()
    (package / "oracles").mkdir()
    (package / "oracles" / "greedy.py").write_text("")
    (package / "properties" / "bad.py").write_text(
        "from ..oracles.greedy import run\n"  # 1: a module imported
        "import torch as Witness\n"  # 2: an alias
        "def np_attention_equals_oracle(student):\n"  # 3: a function
        "    ref = 1\n"  # 4: a checking-side value called ref
        "class ExpectedRef:\n"  # 5: a class
        "    def f(self, *, reference_out=None):\n"  # 6: a keyword-only argument
        "        self.oracles = [run(witness=1)]\n"  # 7: an attribute and a keyword
        "# compared with the oracle\n"  # 8: a comment
        'MESSAGE = "vs the witness"\n'  # 9: a message
        "prefix = refusal = 0\n"  # 10: neither
        "def student_softmax(student, x): pass\n"  # 11: a student-side helper with a prefix
        "def softmax_call(student, x): pass\n"  # 12: with a suffix
        "def expected_softmax(student, x): pass\n"  # 13: called the checking side's
        "def softmax(student, x): pass\n"  # 14: fine
        "@prop(C)\ndef student_call(student): pass\n"  # 15-16: a property, not a helper
    )
    (package / "judge" / "fine.py").write_text("reference_code = 'solutions/'\n")
    found = misnamed(tmp_path)
    assert "autograder/oracles/greedy.py: the file's own name" in found
    lines = {int(f.split(":")[1]) for f in found if f.startswith("autograder/properties/bad.py:")}
    assert lines == set(range(1, 10)) | {11, 12, 13}, found
    assert len([f for f in found if f.startswith("autograder/properties/bad.py:7:")]) == 2
    assert not [f for f in found if "judge/" in f]
