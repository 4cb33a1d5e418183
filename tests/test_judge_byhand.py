"""The by-hand rules hold in the judge against their bypasses (issue 11, items 8-12): each hostile submission
scores no more than the same library calls made plainly, its runtime verdict is "forbidden" and names the
call, its static property names the helper module, and the honest student graded beside it gets full marks.
A stub that does nothing (`pass` in place of `raise NotImplementedError`) scores zero everywhere."""

from __future__ import annotations

import shutil

import pytest

from autograder.components import NAMES
from autograder.judge import sample
from autograder.judge.limits import Limits
from autograder.judge.outputs import maxima
from autograder.judge.scheduler import Options, grade
from autograder.properties import core

# name -> (components attacked, words the runtime message must contain, the helper module)
ATTACKS = {
    "disable_dispatch": ({"attention": "softmax", "add_norm": "layer_norm"}, "fastpath.py"),
    "clear_guard_config": ({"attention": "softmax"}, "quiet.py"),
    "sparse_softmax": ({"attention": "_sparse_softmax"}, "sparse_tricks.py"),
    "library_equivalents": ({"attention": "logsumexp", "add_norm": "group_norm"}, "equivalents.py"),
}
PLAIN = {  # the same library calls, made plainly in the component file
    "attention": "\n\ndef softmax(x, dim=-1):\n    return torch.softmax(x, dim)\n",
    "add_norm": (
        "\n\nclass LayerNorm(LayerNorm):\n    def forward(self, x):\n"
        "        return torch.nn.functional.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)\n"
    ),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("byhand")
    subs = base / "submissions"
    spec = {"reference": "reference", **{f"h-{n}": f"hostile:{n}" for n in ATTACKS}}
    sample.materialize(spec, subs)
    sample.make("reference", subs / "plain")
    for component, snippet in PLAIN.items():
        path = subs / "plain" / f"{component}.py"
        path.write_text(path.read_text() + snippet)
    sample.make("stubs", subs / "pass-stubs")
    for f in (subs / "pass-stubs").glob("*.py"):
        f.write_text(f.read_text().replace("raise NotImplementedError", "pass"))
    results = grade(
        subs, base / "out", Options(jobs=2, limits=Limits(op_timeout=5, section_timeout=60))
    )
    yield results
    shutil.rmtree(base, ignore_errors=True)


def test_the_honest_neighbour_gets_full_marks(graded):
    full = maxima(core.load(include_hidden=True))
    assert graded["reference"].points() == full
    assert not graded["reference"].errors


@pytest.mark.parametrize("name", ATTACKS)
def test_a_bypass_is_forbidden_and_earns_no_more_than_the_plain_calls(graded, name):
    attacked, helper = ATTACKS[name]
    result, plain = graded[f"h-{name}"], graded["plain"]
    assert not result.errors, result.errors
    mine, theirs = result.points(), plain.points()
    for component, call in attacked.items():
        assert mine[component] <= theirs[component], (
            name,
            component,
            mine[component],
            theirs[component],
        )
        outcomes = [o for o in result.outcomes if o.property.component == component]
        forbidden = [o for o in outcomes if o.status == "forbidden"]
        assert forbidden, (name, component, [(o.status, o.message) for o in outcomes])
        assert any(call in o.message for o in forbidden), [o.message for o in forbidden]
        static = next(o for o in outcomes if core.is_static(o.property))
        assert not static.passed and helper in static.message, static.message
    for component in (
        set(NAMES) - set(attacked) - {"multi_head", "encoder", "decoder", "transformer"}
    ):
        assert mine[component] == graded["reference"].points()[component], (name, component)


def test_the_plain_calls_lose_the_by_hand_points(graded):
    full = maxima(core.load(include_hidden=True))
    points = graded["plain"].points()
    assert points["attention"] < full["attention"] and points["add_norm"] < full["add_norm"]


def test_a_stub_that_does_nothing_scores_zero(graded):
    points = graded["pass-stubs"].points()
    assert not any(points.values()), points
    static = [o for o in graded["pass-stubs"].outcomes if core.is_static(o.property)]
    assert static and all(not o.passed for o in static)
