"""Issue 33: every mistake whose clause was checked only by hidden properties, and the new catalog bugs, lose
points in the BUNDLE's own self-check, in their own component, and nowhere else: the bundle is built, then
`python -m autograder check` runs in it on the reference with the bugs planted (bugs of components that use none
of the others' files share a submission; a component that uses a failing file has its failures pending, never
charged)."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from autograder import KIT, release
from autograder.bugs import catalog

# One submission per group: no component of a group uses another's file.
GROUPS = {
    "independent": [
        "attention:scale_by_num_heads_times_d_k",
        "attention_numpy:layer_norm_axis_1",
        "add_norm:dropout_on_the_sum",
        "feed_forward:dropout_on_output",
        "positional_encoding:sin_cos_concatenated",
    ],
    "transformer": ["transformer:greedy_no_eos_after_finish"],
    "on_the_model": [
        "kv_cache:cached_greedy_in_train_mode",
        "beam_search:search_in_train_mode",
        "training:train_without_model_train",
    ],
}
BUGS = {b.id: b for b in catalog()}


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> dict[str, list[dict]]:
    """Group -> the tests of the bundle's results.json for its submission."""
    root = tmp_path_factory.mktemp("bundle_clauses")
    bundle = release.build(root / "bundle")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "KIT_"))}
    out = {}
    for group, ids in GROUPS.items():
        sub = root / group
        shutil.copytree(KIT / "solutions", sub, ignore=shutil.ignore_patterns("__pycache__"))
        for bug in (BUGS[i] for i in ids):
            path = sub / f"{bug.component}.py"
            path.write_text(bug.apply(path.read_text()))
        results = root / f"{group}.json"
        proc = subprocess.run(
            [sys.executable, "-m", "autograder", "check", str(sub), "--json", str(results)],
            cwd=bundle,
            env=env | {"TRANSFORMER_KIT_LANG": "en"},
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 1, proc.stderr[-3000:]
        out[group] = json.loads(results.read_text())["tests"]
    return out


def charged(tests: list[dict]) -> dict[str, list[dict]]:
    """Component -> its failed tests that cost points (pending ones and the integration share left out)."""
    out: dict[str, list[dict]] = {}
    for t in tests:
        component = t["tags"][0]
        if t["score"] < t["max_score"] and t["extra_data"]["status"] != "blocked":
            if component != "integration":
                out.setdefault(component, []).append(t)
    return out


@pytest.mark.parametrize("group", GROUPS)
def test_each_bug_loses_points_in_its_own_component_only(checked, group):
    lost = charged(checked[group])
    components = {BUGS[i].component for i in GROUPS[group]}
    assert set(lost) == components, {c: [t["name"] for t in ts] for c, ts in lost.items()}
    for bug in (BUGS[i] for i in GROUPS[group]):
        hints = [t["extra_data"]["hint"] for t in lost[bug.component]]
        assert any(bug.hint.lower() in h.lower() for h in hints), (bug.id, hints)
