"""The mutation tool (benchmarks/mutants.py): mutants only inside the solution regions, each kind made, a killed
mutant told from a survivor. About 2 s of CPU (two forked runs of mask's suite)."""

import importlib.util
import sys

from autograder import KIT

_spec = importlib.util.spec_from_file_location("mutants", KIT / "benchmarks" / "mutants.py")
mutants = sys.modules["mutants"] = importlib.util.module_from_spec(_spec)  # dataclasses look it up
_spec.loader.exec_module(mutants)

FRAGMENT = '''\
def f(x, y, flag=True):
    """x + 1 outside the region is never mutated."""
    z = x + 1
    ### BEGIN SOLUTION
    if x < y and not flag:
        return x.sum(dim=-1, keepdim=True) * 2.5
    w = float("-inf") if y == 0 else y // 3
    ### END SOLUTION
    return z
'''


def test_mutants_are_made_inside_the_solution_regions_only_and_every_kind_appears():
    made = mutants.mutants(FRAGMENT)
    assert all(5 <= m.line <= 7 for m in made), [(m.line, m.what) for m in made]
    kinds = {m.what for m in made}
    for expected in [
        "`*` -> `/`",
        "`//` -> `/`",
        "`<` -> `<=`",
        "`==` -> `!=`",
        "`and` -> `or`",
        "`not` dropped",
        "condition negated",
        "True -> False",
        "2.5 -> 3.5",
        "3 -> 4",
        "0 -> 1",
        "'-inf' -> 'inf'",
        "`dim=-1` -> `dim=0`",
        "keyword `keepdim` dropped",
        "`.sum` -> `.mean`",
        "statement dropped",
    ]:
        assert expected in kinds, (expected, sorted(kinds))
    for m in made:
        compile(m.source, "mutant", "exec")
        assert "z = x + 1" in m.source and m.source != FRAGMENT
    assert len({m.source for m in made}) == len(made)
    diff = next(m for m in made if m.what == "`*` -> `/`").diff(FRAGMENT, "f.py")
    assert "+        return (x.sum(dim=-1, keepdim=True) / 2.5)" in diff


def test_a_mutant_the_suite_catches_is_killed_and_the_reference_itself_survives():
    reference = (KIT / "solutions" / "mask.py").read_text()
    dropped = next(m for m in mutants.mutants(reference) if "!=" in m.what)
    killed = mutants.run("mask", dropped, KIT / "solutions")
    assert killed.killed and killed.by, killed
    same = mutants.run("mask", mutants.Mutant(1, "none", reference), KIT / "solutions")
    assert not same.killed and same.by == "", same


def test_the_axis_mutants_read_each_axis_off_every_other_one_and_only_when_asked():
    """--axes (issue 33): the scale's operand, the transposes and the reductions' axes, each moved to every other
    axis of AXES; without it the mutants are the usual ones."""
    fragment = (
        "def g(q, k):\n    ### BEGIN SOLUTION\n"
        "    return q @ k.transpose(-2, -1) / q.size(-1) + q.sum(dim=-1)\n    ### END SOLUTION\n"
    )
    axes = {m.what for m in mutants.mutants(fragment, axes=True)} - {
        m.what for m in mutants.mutants(fragment)
    }
    assert {"`.size` axis -1 -> 1", "`.transpose` axis -2 -> 1", "`dim=-1` -> `dim=-2`"} <= axes
    assert "`.size` axis -1 -> -1" not in axes and len(axes) == 4 + 4 + 4 + 3, sorted(axes)
    assert not {m.what for m in mutants.mutants(FRAGMENT)} & {"`dim=-1` -> `dim=-2`"}
