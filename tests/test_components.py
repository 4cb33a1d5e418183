"""Every component is complete, and a new one needs only its own files (docs/extending.md).

A component is its declaration (autograder/components.py), its reference (solutions/<name>.py), its stubs
(exercises/<name>.py, generated), its visible and hidden properties (autograder/properties/<name>.py,
autograder/hidden/<name>.py) and its bug catalog (autograder/bugs/<name>.py). `missing_pieces` names what one
lacks; the tests below remove each piece in turn to show that it is named.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import KIT, registry, rules
from autograder.components import NAMES, Component, get
from autograder.suite import core

ROOT = KIT


def _module(name: str):
    """The module, or None if there is no such file (an error inside an existing module still raises)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name != name:
            raise
        return None


def missing_pieces(c: Component, root: Path = ROOT) -> list[str]:
    """What component `c` lacks, one line per piece: '<piece>: <the file or declaration to write>'."""
    missing = []
    if not (root / "solutions" / c.filename).is_file():
        missing.append(f"solution: solutions/{c.filename}")
    if not (root / "exercises" / c.filename).is_file():
        missing.append(f"stubs: exercises/{c.filename} (run python -m autograder generate)")
    for piece, package, visible in (
        ("visible properties", "properties", True),
        ("hidden properties", "hidden", False),
    ):
        module = _module(f"autograder.{package}.{c.name}")
        if module is None:
            missing.append(f"{piece}: autograder/{package}/{c.filename}")
        elif not any(
            p.component == c.name and p.visible == visible and p.fn.__module__ == module.__name__
            for p in core.REGISTRY.values()
        ):
            missing.append(
                f"{piece}: autograder/{package}/{c.filename} registers no property of {c.name} "
                f"(@prop({c.name!r}{'' if visible else ', visible=False'}))"
            )
    bugs = _module(f"autograder.bugs.{c.name}")
    if bugs is None:
        missing.append(f"bugs: autograder/bugs/{c.filename}")
    elif not any(b.component == c.name for b in getattr(bugs, "BUGS", ())):
        missing.append(
            f"bugs: autograder/bugs/{c.filename} catalogs no bug of {c.name} (BUGS = [Bug(...)])"
        )
    missing += [f"rules: {c.name}'s {why}" for why in rules.unknown_rules(c)]
    if c.contract_block not in (root / "docs" / "contract.md").read_text():
        missing.append(
            f"contract: docs/contract.md does not show {c.name}'s contract "
            "(run python -m autograder generate)"
        )
    return missing


@pytest.mark.parametrize("name", NAMES)
def test_every_component_is_complete(name):
    assert missing_pieces(get(name)) == []


# ----------------------------------------------------------------------------- each missing piece is named
def _kit_without(tmp_path: Path, c: Component, left_out: str) -> Path:
    """A kit folder holding c's solution, stubs and docs/contract.md, but for `left_out`."""
    for part in (f"solutions/{c.filename}", f"exercises/{c.filename}", "docs/contract.md"):
        if part != left_out:
            (tmp_path / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / part, tmp_path / part)
    return tmp_path


def _no_module(monkeypatch, name):
    """Import of autograder.<name> fails as for a file that does not exist (None in sys.modules)."""
    monkeypatch.setitem(sys.modules, f"autograder.{name}", None)


def _registry_without(monkeypatch, component, visible):
    kept = {
        k: p
        for k, p in core.REGISTRY.items()
        if not (p.component == component and p.visible == visible)
    }
    monkeypatch.setattr(core, "REGISTRY", kept)


REMOVALS = {
    "solution": lambda mp, tmp: _kit_without(tmp, get("mask"), "solutions/mask.py"),
    "stubs": lambda mp, tmp: _kit_without(tmp, get("mask"), "exercises/mask.py"),
    "visible properties": lambda mp, tmp: _no_module(mp, "properties.mask"),
    "visible properties (none registered)": lambda mp, tmp: _registry_without(
        mp, "mask", visible=True
    ),
    "hidden properties": lambda mp, tmp: _no_module(mp, "hidden.mask"),
    "hidden properties (none registered)": lambda mp, tmp: _registry_without(
        mp, "mask", visible=False
    ),
    "bugs": lambda mp, tmp: _no_module(mp, "bugs.mask"),
    "bugs (none cataloged)": lambda mp, tmp: mp.setattr(
        importlib.import_module("autograder.bugs.mask"), "BUGS", []
    ),
}


@pytest.mark.parametrize("removed", REMOVALS)
def test_a_missing_file_or_registration_is_named(removed, monkeypatch, tmp_path):
    root = REMOVALS[removed](monkeypatch, tmp_path) or ROOT
    missing = missing_pieces(get("mask"), root)
    piece = removed.split(" (")[0]
    assert len(missing) == 1 and missing[0].startswith(f"{piece}: ") and "mask" in missing[0], (
        missing
    )


def test_unknown_rules_are_named():
    typo = dataclasses.replace(get("attention"), forbidden_families=("softmax", "sofmax"))
    (missing,) = missing_pieces(typo)
    assert missing.startswith(
        "rules: attention's forbidden_families 'sofmax' is not one of softmax, norm,"
    )
    typo = dataclasses.replace(get("mask"), forbidden_names=("transformers",))
    assert missing_pieces(typo)[0].startswith(
        "rules: mask's forbidden_names 'transformers' is not one of"
    )


def test_a_contract_that_docs_do_not_show_is_named():
    changed = dataclasses.replace(get("mask"), contract="causal_mask(size) -> something else\n")
    assert missing_pieces(changed) == [
        "contract: docs/contract.md does not show mask's contract (run python -m autograder "
        "generate)"
    ]


REQUIRED = (
    "name",
    "title",
    "short",
    "summary",
    "deps",
    "forbidden_families",
    "forbidden_names",
    "contract",
)


@pytest.mark.parametrize("field", REQUIRED)
def test_a_declaration_that_forgets_a_field_fails(field):
    """Forgetting the rules or the contract is an error at import, not a component that forbids nothing."""
    fields = {f: getattr(get("mask"), f) for f in REQUIRED}
    del fields[field]
    with pytest.raises(TypeError, match=field):
        Component(**fields)
    if field not in ("deps", "forbidden_families", "forbidden_names"):
        with pytest.raises(ValueError, match=f"{field} is empty"):
            Component(**{**fields, field: " "})


def test_a_declaration_spells_tuples_and_orders_deps():
    with pytest.raises(TypeError, match="deps must be a tuple"):
        dataclasses.replace(get("multi_head"), deps="attention")  # ("attention") without its comma
    with pytest.raises(TypeError, match="forbidden_families must be a tuple"):
        dataclasses.replace(get("add_norm"), forbidden_families="norm")


def test_property_and_bug_modules_are_imported_by_name(monkeypatch):
    """A component whose module is missing is an import error where the kit loads it, never a silent gap."""
    _no_module(monkeypatch, "properties.mask")
    with pytest.raises(ModuleNotFoundError):
        registry.load(include_hidden=False, components=["mask"])
    from autograder.bugs import catalog

    _no_module(monkeypatch, "bugs.mask")
    with pytest.raises(ModuleNotFoundError):
        catalog()


# ------------------------------------------------------------------- a new component needs only its files
TOY = Path(__file__).resolve().parent / "toy_component"
# What the author of a new component writes (docs/extending.md), and what the two generators then rewrite.
HAND_WRITTEN = {
    "solutions/temperature.py",
    "autograder/properties/temperature.py",
    "autograder/hidden/temperature.py",
    "autograder/bugs/temperature.py",
    "autograder/components.py",
}
GENERATED = {
    "exercises/temperature.py",
    "README.md",
    "docs/contract.md",
    "autograder/locale/es/LC_MESSAGES/autograder.po",  # its summaries and stub docstrings, to translate
}
# Written by `i18n compile` once the author has translated the catalog (not run here).
COMPILED = {"autograder/locale/es/LC_MESSAGES/autograder.mo"}
# Issue 25: a new component touches at most this many files (the student READMEs are rendered at release).
MOST_FILES = 10
KIT = (
    "autograder",
    "solutions",
    "exercises",
    "docs",
    "benchmarks",
    "README.md",
    "pyproject.toml",
    "babel.cfg",  # what `generate` extracts the catalogs' messages from
    "tests/conftest.py",
    "tests/suite_runs.py",
    "tests/test_components.py",
    "tests/test_suite_meta.py",
)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def _add_declaration(kit: Path) -> None:
    """Append the toy's Component(...) call to COMPONENTS, as its author would."""
    entry, in_string = "", False
    for line in (
        (TOY / "declaration.py").read_text().split("TOY = ", 1)[1].splitlines(keepends=True)
    ):
        entry += line if in_string else "    " + line  # the contract's text stays as written
        in_string ^= line.count('"""') % 2 == 1
    path = kit / "autograder" / "components.py"
    text = path.read_text()
    assert text.count("\n)\n\nBY_NAME") == 1
    path.write_text(text.replace("\n)\n\nBY_NAME", "\n" + entry.rstrip("\n") + ",\n)\n\nBY_NAME"))


def test_a_new_component_needs_only_its_own_files(tmp_path):
    kit = tmp_path / "kit"
    for part in KIT:
        if (ROOT / part).is_dir():
            shutil.copytree(ROOT / part, kit / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (kit / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / part, kit / part)
    before = _snapshot(kit)
    for path in (TOY / "solutions").rglob("*.py"):
        shutil.copy2(path, kit / "solutions" / path.name)
    for path in (TOY / "autograder").rglob("*.py"):
        shutil.copy2(path, kit / path.relative_to(TOY))
    _add_declaration(kit)
    # A partial copy of the kit: tests/conftest.py lets its slow-test table name modules the copy lacks.
    env = {**os.environ, "PYTHONPATH": str(kit), "KIT_PARTIAL_COPY": "1"}

    def run(*args):
        proc = subprocess.run(
            [sys.executable, *args], cwd=kit, env=env, capture_output=True, text=True, timeout=600
        )
        return proc.returncode, proc.stdout + proc.stderr

    rc, out = run("-m", "autograder", "generate")
    assert rc == 0, out
    changed = {p for p, data in _snapshot(kit).items() if before.get(p) != data}
    assert changed == HAND_WRITTEN | GENERATED, sorted(changed ^ (HAND_WRITTEN | GENERATED))
    assert len(HAND_WRITTEN | GENERATED | COMPILED) <= MOST_FILES
    readme = (kit / "README.md").read_text()
    assert "| `temperature.py` | softmax with a temperature" in readme  # the component table
    assert "| temperature | 2 (3) | 1 (1) | 1 |" in readme  # the counts: properties (points), bugs

    # The self-check runs it under its rules: the reference earns its points, the stub none.
    rc, out = run("-m", "autograder", "check", "solutions", "--component", "temperature")
    assert rc == 0 and "temperature" in out, out
    rc, out = run("-m", "autograder", "check", "exercises", "--component", "temperature")
    assert rc == 1 and "NotImplementedError" in out, out
    # The by-hand rules its declaration names are enforced: a library softmax is refused at run time.
    cheat = kit / "cheat"
    shutil.copytree(kit / "solutions", cheat, ignore=shutil.ignore_patterns("__pycache__"))
    source = (cheat / "temperature.py").read_text()
    (cheat / "temperature.py").write_text(
        source.replace(
            "    z = x / temperature\n", "    return torch.softmax(x / temperature, dim)\n"
        )
    )
    rc, out = run("-m", "autograder", "check", "cheat", "--component", "temperature")
    assert (
        rc == 1
        and "aten::softmax.int (a library softmax: torch.softmax, F.softmax" in out
        and "is forbidden in temperature" in out
    ), out
    # The gradebook's column, the judge's short label, the by-hand rules and the pytest marker follow.
    rc, out = run(
        "-c",
        "from autograder import results, rules; from autograder.judge.outputs import SHORT; "
        "from autograder.pytest_plugin import NAMES; "
        "print(results.ROWS[-2], SHORT['temperature'], 'LogSoftmax' in rules.STATIC['temperature'], "
        "rules.RUNTIME['temperature'], NAMES[-1])",
    )
    assert rc == 0 and out.split() == [
        "temperature",
        "temp",
        "True",
        "('softmax',)",
        "temperature",
    ], out
    # The kit's own tests take it in: complete, full marks for the reference, zero for the stubs, its bug caught.
    rc, out = run(
        "-m",
        "pytest",
        "-n",
        "0",
        "-q",
        "-rA",
        "tests/test_components.py",
        "tests/test_suite_meta.py",
        "-k",
        "component_is_complete or temperature",
    )
    assert rc == 0, out
    for test in (
        "test_every_component_is_complete[temperature]",
        "test_reference_scores_full_marks[temperature]",
        "test_stubs_score_zero[temperature]",
        "test_bug_is_caught_and_named[temperature:",
    ):
        assert any(line.startswith("PASSED") and test in line for line in out.splitlines()), (
            test,
            out,
        )


# ------------------------------------------------------------------- completeness both ways (issue 25 point 2)
@pytest.mark.parametrize("name", NAMES)
def test_a_component_that_forbids_something_has_its_static_property(name):
    """A declaration that forbids families or names has the static by-hand property that scans for them (the
    run-time guard alone enforces families only, and `forbidden_names` only ever reaches the static scan)."""
    c = get(name)
    static = [
        p for p in registry.load(include_hidden=True) if p.component == name and core.is_static(p)
    ]
    if c.forbidden_families or c.forbidden_names:
        assert len(static) == 1, f"{name} forbids something but has {len(static)} static properties"
        assert static[0].visible, "the student must see the by-hand verdict in the self-check"
    else:
        assert not static, f"{name} forbids nothing, yet has a static by-hand property"


def test_the_declared_components_are_the_modules():
    """Both ways, as Hypothesis checks its strategy registry: every declared component has its module in
    properties/, hidden/, bugs/ and solutions/ (test_every_component_is_complete names a missing one), and every
    module there is a declared component (the suite's machinery lives in autograder/suite/): a module left
    behind by a renamed or removed component, or one never declared, is named here."""
    folders = ("autograder/properties", "autograder/hidden", "autograder/bugs", "solutions")
    extra = {
        f"{folder}/{path.name}"
        for folder in folders
        for path in (ROOT / folder).glob("*.py")
        if path.stem != "__init__" and path.stem not in NAMES
    }
    assert not extra, (
        f"modules of no declared component (autograder/components.py): {sorted(extra)}"
    )
    missing = {
        f"{folder}/{name}.py"
        for folder in folders
        for name in NAMES
        if not (ROOT / folder / f"{name}.py").is_file()
    }
    assert not missing, sorted(missing)
