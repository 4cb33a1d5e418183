"""Every fact about a property or a bug has a typed home on it (issue 25 point 1): its kind, whether it is an
integration re-run, its slowness, a bug's visibility and its one-deduction expectation. Nothing reads them back
from a name, and this test keeps it so."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from autograder import KIT, registry
from autograder.bugs import catalog
from autograder.suite import core

# Reading meaning from a property's name or id: a prefix or suffix test, a split on "::", a word searched in it,
# or a name spelled with its marker ("integration::...", "..._written_by_hand"). `p` is also the kit's name for a
# path: its name tested for a file's "." or "_" is not a property's.
CUT = r"\s*\.\s*(?:startswith|endswith|removeprefix|removesuffix|split|partition)\("
PARSING = [
    re.compile(rf"(?:\.property|\bprop|\bproperty|\bpid|\bprop_id)(?:\.(?:name|id))?{CUT}"),
    re.compile(rf"""\bp\.(?:name|id){CUT}(?!\(?\s*["'][._])"""),
    re.compile(rf"""\[["'](?:name|id)["']\]{CUT}"""),
    re.compile(rf"""\.get\(["'](?:name|id)["'][^)]*\){CUT}"""),
    re.compile(
        r"""["'][^"'\n]*["']\s+(?:not\s+)?in\s+(?:p|o\.property|prop|property)\.(?:name|id)\b"""
    ),
    re.compile(r"""["'](?:::)?integration::"""),
    re.compile(r"""["'][^"'\n]*written_by_hand["']"""),
]
# The one place that spells the integration marker: the id of a re-run is built there.
ALLOWED = {("suite/core.py", 'INTEGRATION_SEGMENT = "integration::"')}


def name_parsing(root) -> list[str]:
    found = []
    for path in sorted((root / "autograder").rglob("*.py")):
        rel = path.relative_to(root / "autograder").as_posix()
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if any(rule.search(line) for rule in PARSING) and not any(
                rel == f and text in line for f, text in ALLOWED
            ):
                found.append(f"autograder/{rel}:{number}: {line.strip()}")
    return found


def test_nothing_reads_meaning_from_a_property_name():
    assert name_parsing(KIT) == []


def test_the_grep_finds_what_it_forbids(tmp_path):
    """The rules match the parsing that issue 25 found (so the test above can fail)."""
    (tmp_path / "autograder").mkdir()
    samples = [
        "return p.name.endswith(STATIC_SUFFIX)",
        'if o.property.name.startswith("integration::"):',
        'name = f"integration::{p.name}"',
        'if pid.split("::")[0] not in ran:',
        'picks = [p for p in mine if p.visible and "hand" not in p.name]',
        'if record.get("name", "").endswith(core.STATIC_SUFFIX):',
        'key = "::integration::" in x["id"]',
    ]
    (tmp_path / "autograder" / "bad.py").write_text("\n".join(samples) + "\n")
    assert len(name_parsing(tmp_path)) == len(samples)


def test_kinds_are_declared():
    """Every by-hand scan is declared static; a component has at most one static property."""
    props = registry.load(include_hidden=True)
    static = [p for p in props if p.kind == core.Kind.STATIC]
    assert static and all(p.examples == 1 for p in static)
    assert len({p.component for p in static}) == len(static)
    assert any(p.kind == core.Kind.SHAPE for p in props)


def test_an_integration_rerun_is_a_record_not_a_name():
    p = next(p for p in registry.load() if p.component == "multi_head")
    rerun = core.integration_rerun(p, 0.5)
    assert (rerun.name, rerun.points, rerun.integration) == (p.name, 0.5, True)
    assert rerun.id == core.property_id(p.component, p.name, integration=True) != p.id
    assert rerun.kind == p.kind and not p.integration


def test_bug_expectations_live_on_the_bug():
    bugs = catalog()
    assert any(b.caught_visibly for b in bugs) and any(b.one_deduction for b in bugs)


def test_a_components_default_hint_is_declared_once_and_taken_where_none_is_declared(monkeypatch):
    """A property that declares no error_hint takes its component's default_hint; NO_HINT and a static property
    take none; a second, different default for a component fails at import."""
    monkeypatch.setattr(core, "DEFAULT_HINTS", {})
    core.default_hint("mask", "the default")
    core.default_hint("mask", "the default")  # the same again is harmless (a module imported twice)
    with pytest.raises(ValueError, match="declared twice"):
        core.default_hint("mask", "another")
    plain = core.Property("p", "mask", 1.0, True, 1, fn=lambda student: None)
    assert plain.hint_on_error == "the default"
    assert replace(plain, error_hint="its own").hint_on_error == "its own"
    assert replace(plain, error_hint=core.NO_HINT).hint_on_error == ""
    assert replace(plain, kind=core.Kind.STATIC).hint_on_error == ""
    assert replace(plain, component="attention").hint_on_error == ""
