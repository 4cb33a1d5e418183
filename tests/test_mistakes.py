"""A mistake's one home (issue 36, autograder/suite/mistakes.py), checked both ways.

Every flag of every mistake model is declared with its hint (`Hints` under the enum); every declared mistake is
exhibited by a catalog bug (`Bug(mistake=...)`), whose run shows that very hint (tests/test_suite_meta.py's
test_bug_is_caught_and_named: a linked bug's `hint` is its flag's declared one); a bug whose fragment points into
a declared hint its run shows (the report's recorded signature, autograder/report/signatures.json) names the flag
instead; and no diagnosis pairs a flag with a hint written beside it (the hint is the declaration's)."""

from __future__ import annotations

import ast
import enum
import importlib
import pkgutil
from pathlib import Path

import pytest

from autograder import KIT
from autograder.bugs import catalog
from autograder.report import signatures
from autograder.suite import mistakes

# Declared mistakes no catalog bug exhibits, and why: checked both ways (each still has no bug).
KNOWN_WITHOUT_BUG = {
    # A DecoderLayer that gives the cross-attention target_mask breaks on a shape first: an (m_D, m_D) mask
    # against (m_D, m_E) scores, and every decoder property draws m_E != m_D; the shape-error hint names the mask
    "LayerMistake.CROSS_GETS_TARGET_MASK": "a shape error first (the shape-error hint names the masks)",
    "LayerMistake.SELF_GETS_MEMORY_MASK|CROSS_GETS_TARGET_MASK": "the same shape error",
}


def _import_every_declaration():
    for name in ("autograder.suite", "autograder.properties", "autograder.properties.models"):
        package = importlib.import_module(name)
        for info in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{name}.{info.name}")


_import_every_declaration()


def name(flag: enum.Flag) -> str:
    return f"{type(flag).__name__}.{flag.name}"


def flag_enums_in_the_kit() -> set[str]:
    """Every `class X(enum.Flag)` in the autograder package, by name."""
    found = set()
    for path in (KIT / "autograder").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                ast.unparse(b) in ("enum.Flag", "Flag") for b in node.bases
            ):
                found.add(node.name)
    return found


def declared() -> list[tuple[str | None, enum.Flag, str]]:
    return [d for hints in mistakes.DECLARED for d in hints.declared()]


def test_every_flag_enum_declares_its_hints():
    assert {h.flags.__name__ for h in mistakes.DECLARED} == flag_enums_in_the_kit()
    assert len({h.flags for h in mistakes.DECLARED}) == len(mistakes.DECLARED), "declared twice"


@pytest.mark.parametrize("hints", mistakes.DECLARED, ids=lambda h: h.flags.__name__)
def test_every_flag_has_a_hint(hints):
    """Alone, or as part of the combination a diagnosis names (a slip never made alone)."""
    named = {f for _, f, _ in hints.declared()}
    singles = [f for f in hints.flags if f.value and f.value & (f.value - 1) == 0]
    unnamed = [f.name for f in singles if not any(f in combination for combination in named)]
    assert not unnamed, f"{hints.flags.__name__}: no hint for {unnamed}"


def test_every_declared_mistake_is_exhibited_by_a_bug():
    bugs = [b for b in catalog() if b.mistake is not None]
    without = {
        name(flag)
        for component, flag, _ in declared()
        if not any(b.mistake == flag and component in (None, b.component) for b in bugs)
    }
    assert without == set(KNOWN_WITHOUT_BUG)


def test_a_fragment_never_points_into_a_declared_hint():
    """A bug that is named by a declared mistake's hint (shown for it, its fragment in it) names that mistake's
    flag: the link is a type, not a substring."""
    texts = {(c, msgid) for c, _, msgid in declared()}
    recorded = signatures.load()
    loose = [
        (b.id, msgid)
        for b in catalog()
        if b.fragment
        for c, msgid in texts
        if c in (None, b.component)
        and b.fragment.lower() in msgid.lower()
        and any(msgid.split("{")[0] in shown for shown in recorded.get(b.id, ()))
    ]
    assert not loose, loose


def test_every_catalog_bug_names_its_mistake_or_a_fragment():
    assert not [b.id for b in catalog() if not (b.fragment or b.mistake is not None)]


def _flag_aliases(tree: ast.Module) -> set[str]:
    """A module's short aliases of a flag enum (M = TrainingMistake); an enum's own name ends in Mistake."""
    return {
        node.targets[0].id
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Name)
        and node.value.id.endswith("Mistake")
        and isinstance(node.targets[0], ast.Name)
    }


def _flag_beside_a_written_hint(path: Path, root: Path = KIT) -> list[str]:
    """(test mentioning SomethingMistake.X, _("...") or _(CONSTANT)) pairs in a diagnosis: a hint written beside
    a flag instead of taken from its declaration."""
    found = []
    tree = ast.parse(path.read_text())
    enums = _flag_aliases(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple) and len(node.elts) == 2:
            test, hint = node.elts
            mentions_flag = any(
                isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name)
                and (n.value.id.endswith("Mistake") or n.value.id in enums)
                for n in ast.walk(test)
            )
            if mentions_flag and isinstance(hint, ast.Call) and getattr(hint.func, "id", "") == "_":
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_diagnosis_writes_a_flags_hint_beside_it():
    found = [
        hit
        for p in sorted((KIT / "autograder").rglob("*.py"))
        for hit in _flag_beside_a_written_hint(p)
    ]
    assert not found, found


def test_the_pairing_check_can_fail(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "a = (lambda: same(PeMistake.ALL_SIN), _('every column is a sin'))\n"
        "b = (lambda: same(PeMistake.ALL_SIN), PE_HINTS(PeMistake.ALL_SIN))\n"
        "M = TrainingMistake\n"
        "c = (same(M.SUMMED), _(NOT_MEAN))\n"
    )
    assert _flag_beside_a_written_hint(planted, tmp_path) == ["planted.py:1", "planted.py:4"]


def _is_flag(node: ast.AST, enums: set[str]) -> bool:
    """SomethingMistake.X, an alias's M.X, or a combination of them with |."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _is_flag(node.left, enums) and _is_flag(node.right, enums)
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and (node.value.id.endswith("Mistake") or node.value.id in enums)
        and node.attr != "NONE"
    )


def _flags_listed_by_hand(path: Path, root: Path = KIT) -> list[str]:
    """A list, tuple or call's arguments naming three or more flags: an order of mistakes written in a diagnosis
    instead of declared (Hints' `order`)."""
    tree = ast.parse(path.read_text())
    enums = _flag_aliases(tree)
    found = []
    for node in ast.walk(tree):
        items = node.args if isinstance(node, ast.Call) else getattr(node, "elts", None)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Call)) and items is not None:
            if sum(_is_flag(item, enums) for item in items) >= 3:
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_diagnosis_lists_an_order_of_mistakes_by_hand():
    """A diagnosis takes its order from the declaration (`tried`, `candidates(component=)`); what it names by hand
    is at most two flags its property's inputs alone can show. The declarations (properties/models/) and the
    graded side's models by hand beside them, which test flags one at a time, are where flags are written."""
    package = KIT / "autograder"
    homes = (package / "properties" / "models", package / "bugs")
    found = [
        hit
        for p in sorted(package.rglob("*.py"))
        if not any(home in p.parents for home in homes) and p.name != "mistakes.py"
        for hit in _flags_listed_by_hand(p)
    ]
    assert not found, found


def test_the_order_check_can_fail(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "M = TrainingMistake\n"
        "a = [LayerMistake.PRE_NORM, LayerMistake.NO_RESIDUAL, LayerMistake.A | LayerMistake.B]\n"
        "b = HINTS.candidates(same, M.SUMMED, M.PAD_MASS, M.PAD_COUNTED)\n"
        "c = HINTS.candidates(same, M.SUMMED, M.PAD_MASS)\n"
    )
    assert _flags_listed_by_hand(planted, tmp_path) == ["planted.py:2", "planted.py:3"]


def test_a_declared_order_is_what_a_diagnosis_tries():
    class Slip(enum.Flag):
        NONE = 0
        ONE = enum.auto()
        TWO = enum.auto()
        MASK = enum.auto()

    with pytest.raises(KeyError):  # a flag tried where it has no hint
        mistakes.Hints(Slip, {Slip.ONE: "one"}, order={"c": (Slip.TWO,)})
    hints = mistakes.Hints(
        Slip,
        {Slip.ONE: "one", Slip.MASK: "mask", Slip.ONE | Slip.MASK: "both"},
        worded={"c": {Slip.TWO: "two in c"}},
        order={"d": (Slip.MASK, Slip.ONE | Slip.MASK, Slip.ONE)},
    )
    try:
        assert hints.tried() == [Slip.ONE, Slip.MASK, Slip.ONE | Slip.MASK]
        # the shared ones, then its own
        assert hints.tried("c") == [Slip.ONE, Slip.MASK, Slip.ONE | Slip.MASK, Slip.TWO]
        assert hints.tried("d", without=Slip.MASK) == [Slip.ONE]  # a combination with it goes too
        assert [h for _, h in hints.candidates(bool, component="c", without=Slip.ONE)] == [
            "mask",
            "two in c",
        ]
    finally:
        del mistakes.DECLARED[-1:]


def test_a_flag_with_no_declaration_is_refused():
    class Slip(enum.Flag):
        NONE = 0
        ONE = enum.auto()

    class Other(enum.Flag):
        NONE = 0
        TWO = enum.auto()

    with pytest.raises(TypeError):
        mistakes.Hints(Other, {Slip.ONE: "x"})
    hints = mistakes.Hints(Slip, {Slip.ONE: "one"}, worded={"c": {Slip.ONE: "one in c"}})
    try:
        assert hints.msgid(Slip.ONE) == "one" and hints.msgid(Slip.ONE, "c") == "one in c"
        with pytest.raises(KeyError):
            mistakes.Hints(Other, {}).msgid(Other.TWO)
    finally:
        del mistakes.DECLARED[-2:]
