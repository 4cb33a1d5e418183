"""Every clause of the contract has a visible property (issue 33): each property declares the clauses it checks
(suite/clauses.py), and every clause a hidden property checks is checked by a visible one too, on other inputs."""

import dataclasses

import pytest

from autograder import registry
from autograder.components import NAMES
from autograder.suite import clauses, core
from autograder.suite.clauses import CLAUSES

PROPERTIES = registry.load(include_hidden=True)


def test_every_component_has_its_clauses():
    assert list(CLAUSES) == list(NAMES)


@pytest.mark.parametrize("p", PROPERTIES, ids=lambda p: p.id)
def test_every_property_that_runs_code_declares_its_clauses(p):
    """A static property (the by-hand scan) reads the source and checks no clause; every other one names what it
    checks, in its component's enum."""
    if core.is_static(p):
        assert p.clauses == ()
        return
    assert p.clauses, f"{p.id} declares no clause"
    assert all(isinstance(c, CLAUSES[p.component]) for c in p.clauses)


def test_every_hidden_clause_is_checked_visibly():
    assert clauses.hidden_only(PROPERTIES) == []


@pytest.mark.parametrize("component", NAMES)
def test_every_clause_has_a_visible_property(component):
    seen = {c for p in PROPERTIES if p.component == component and p.visible for c in p.clauses}
    assert set(CLAUSES[component]) <= seen, set(CLAUSES[component]) - seen


def test_a_clause_only_a_hidden_property_checks_is_found():
    """The check can fail: a hidden property with a clause of its own is reported."""
    hidden = next(p for p in PROPERTIES if not p.visible)
    lonely = next(iter(CLAUSES[hidden.component]))
    others = [
        p
        for p in PROPERTIES
        if not (p.visible and p.component == hidden.component and lonely in p.clauses)
    ]
    assert (hidden.id, lonely) in clauses.hidden_only(
        [*others, dataclasses.replace(hidden, clauses=(lonely,))]
    )


def test_a_clause_of_another_component_is_refused():
    with pytest.raises(TypeError):
        core.prop("attention", clauses=(CLAUSES["mask"].CAUSAL,))
