"""The by-hand rules hold in the judge against their bypasses (issue 11, items 8-12): each hostile submission
scores no more than the same library calls made plainly, its runtime verdict is "forbidden" and names the
call, its static property names the helper module, and the honest student graded beside it gets full marks.
A stub that does nothing (`pass` in place of `raise NotImplementedError`) scores zero everywhere."""

from __future__ import annotations

import shutil

import pytest

from autograder import registry
from autograder.components import NAMES
from autograder.judge import sample
from autograder.judge.limits import Limits
from autograder.judge.outputs import maxima
from autograder.judge.scheduler import Options, grade
from autograder.suite import core

# name -> (components attacked -> words the runtime message must contain, words the static message must contain,
# whether a helper module no import names tampers: it costs every component its static point)
ATTACKS = {
    "disable_dispatch": ({"attention": "softmax", "add_norm": "layer_norm"}, "fastpath.py", True),
    "clear_guard_config": ({"attention": "softmax"}, "quiet.py", True),
    "sparse_softmax": ({"attention": "_sparse_softmax"}, "sparse_tricks.py", False),
    "library_equivalents": (
        {"attention": "logsumexp", "add_norm": "group_norm"},
        "equivalents.py",
        False,
    ),
    # issue 20: the rules switched off from a helper loaded by pkgutil.resolve_name; library siblings
    "switch_off_rules": ({"attention": "by-hand", "add_norm": "by-hand"}, "", True),
    # the guard's per-call state flipped off and back inside the call: the kernel it set aside is caught at the
    # end of the call, and the scan names the frame walk, which voids
    "frame_flip": ({"attention": "tampering"}, "_getframe", False),
    "logcumsumexp_softmax": ({"attention": "logcumsumexp"}, "logcumsumexp", False),
    "logaddexp_softmax": (
        {"attention": "logaddexp", "attention_numpy": "logaddexp"},
        "logaddexp",
        False,
    ),
    "distributions_loss": ({"training": "kl_divergence"}, "Categorical", False),
    "poisson_loss": ({"training": "poisson_nll_loss"}, "poisson_nll_loss", False),
    # issue 32: code the scan once never saw (len.__self__.exec, a pickle torch.load runs) flips the guard's state
    # around the call; the allowlist names the dunders of the hidden code, and the loader
    "exec_via_builtins": (
        {"attention": "tampering", "add_norm": "tampering"},
        "walks the interpreter",
        False,
    ),
    "pickle_exec": ({"attention": "tampering", "add_norm": "tampering"}, "pickled", False),
}
PLAIN = {  # the same library calls, made plainly in the component file
    "attention": "\n\ndef softmax(x, dim=-1):\n    return torch.softmax(x, dim)\n",
    "add_norm": (
        "\n\nclass LayerNorm(LayerNorm):\n    def forward(self, x):\n"
        "        return torch.nn.functional.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)\n"
    ),
    # issue 20: F.kl_div earned 4/23 where torch.distributions earned 23/23
    "training": (
        "\n\ndef label_smoothed_cross_entropy(logits, target, smoothing=0.1, pad_id=0):\n"
        "    log_probs = torch.log_softmax(logits, -1)\n"
        "    q = torch.full_like(log_probs, smoothing / (logits.size(-1) - 2))\n"
        "    q.scatter_(-1, target.unsqueeze(-1), 1.0 - smoothing)\n"
        "    q[..., pad_id] = 0.0\n"
        "    per_position = torch.nn.functional.kl_div(log_probs, q, reduction='none').sum(-1)\n"
        "    per_position = per_position - (q * torch.log(q.clamp(min=1e-30))).sum(-1)\n"
        "    real = target != pad_id\n"
        "    return per_position.masked_fill(~real, 0.0).sum() / real.sum().clamp(min=1)\n"
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
    full = maxima(registry.load(include_hidden=True))
    assert graded["reference"].points() == full
    assert not graded["reference"].errors


@pytest.mark.parametrize("name", ATTACKS)
def test_a_bypass_is_forbidden_and_earns_no_more_than_the_plain_calls(graded, name):
    attacked, static_words, tampering_helper = ATTACKS[name]
    result, plain, reference = graded[f"h-{name}"], graded["plain"], graded["reference"]
    assert not result.errors, result.errors
    mine, theirs, full = result.points(), plain.points(), reference.points()
    for component, call in attacked.items():
        ceiling = theirs[component] if component in PLAIN else full[component] - 1
        assert mine[component] <= ceiling, (name, component, mine[component], ceiling)
        outcomes = [o for o in result.outcomes if o.property.component == component]
        forbidden = [o for o in outcomes if o.status == "forbidden"]
        assert forbidden, (name, component, [(o.status, o.message) for o in outcomes])
        assert any(call in o.message for o in forbidden), [o.message for o in forbidden]
        static = next(o for o in outcomes if core.is_static(o.property))
        assert not static.passed and static_words in static.message, static.message
    for component in (
        set(NAMES) - set(attacked) - {"multi_head", "encoder", "decoder", "transformer"}
    ):
        if tampering_helper:  # read for tampering whatever loads it: the static point only
            assert full[component] - 1 <= mine[component] <= full[component], (name, component)
        else:
            assert mine[component] == full[component], (name, component)


def test_the_plain_calls_lose_the_by_hand_points(graded):
    full = maxima(registry.load(include_hidden=True))
    points = graded["plain"].points()
    assert all(points[c] < full[c] for c in PLAIN), points


def test_a_stub_that_does_nothing_scores_zero(graded):
    points = graded["pass-stubs"].points()
    assert not any(points.values()), points
    static = [o for o in graded["pass-stubs"].outcomes if core.is_static(o.property)]
    assert static and all(not o.passed for o in static)
