"""Each component's declared `deps` (autograder/components.py) cover what its reference really uses (issue 21): the
sibling modules solutions/<component>.py imports, transitively, and every component whose objects its properties
build for it (kv_cache, beam_search and training decode or train a Transformer built from transformer.py). The
self-check names a failing dependency file, and holds back its own hints, only for the deps declared."""

from __future__ import annotations

import ast
import re

import pytest

from autograder import KIT
from autograder.components import NAMES, get

BUILT = re.compile(r"\b(?:build|Build)\(\s*\"(\w+)\"")


def imported_siblings(component: str) -> set[str]:
    tree = ast.parse((KIT / "solutions" / f"{component}.py").read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 1:
            found.update(a.name for a in node.names)
    return found & set(NAMES)


def property_sources(component: str) -> str:
    """The component's visible and hidden property modules, with the property helper modules they import."""
    texts, seen = [], set()
    for folder in ("properties", "hidden"):
        path = KIT / "autograder" / folder / f"{component}.py"
        if not path.is_file():
            continue
        source = path.read_text()
        texts.append(source)
        for module in re.findall(r"from (?:\.\.suite|\.\.properties|\.)\.?(\w+) import", source):
            helper = KIT / "autograder" / "suite" / f"{module}.py"
            if module not in NAMES and helper.is_file() and module not in seen:
                seen.add(module)
                texts.append(helper.read_text())
    return "\n".join(texts)


def closure(names: set[str]) -> set[str]:
    out, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name not in out:
            out.add(name)
            todo.extend(imported_siblings(name))
    return out


@pytest.mark.parametrize("component", NAMES)
def test_declared_deps_cover_what_the_reference_uses(component):
    built = set(BUILT.findall(property_sources(component))) & set(NAMES)
    used = closure(imported_siblings(component) | built) - {component}
    missing = used - set(get(component).deps)
    assert not missing, f"{component} uses {sorted(missing)} but does not declare them in deps"


def test_the_later_components_declare_the_transformer_and_its_files():
    for component in ("kv_cache", "beam_search", "training"):
        assert {"transformer", "attention", "multi_head", "positional_encoding"} <= set(
            get(component).deps
        )
