"""The Gradescope bundle: its run_autograder grades a simulated /autograder tree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile

from autograder import KIT
from autograder.components import NAMES  # noqa: F401
from autograder.judge.gradescope import build
from autograder.results import ROWS


def test_bundle_layout_and_reproducibility(tmp_path):
    a, b = build(tmp_path / "a.zip"), build(tmp_path / "b.zip")
    assert a.read_bytes() == b.read_bytes()
    names = zipfile.ZipFile(a).namelist()
    assert {
        "setup.sh",
        "run_autograder",
        "autograder/judge/scheduler.py",
        "solutions/attention.py",
    } <= set(names)
    assert any(n.startswith("autograder/hidden/") for n in names)
    mode = zipfile.ZipFile(a).getinfo("run_autograder").external_attr >> 16
    assert mode & 0o111


def test_a_course_language_is_baked_in_with_the_catalogs(tmp_path):
    english, spanish = build(tmp_path / "en.zip"), build(tmp_path / "es.zip", lang="es")
    for bundle in (english, spanish):
        assert (
            "autograder/locale/es/LC_MESSAGES/autograder.mo" in zipfile.ZipFile(bundle).namelist()
        )
    run = zipfile.ZipFile(spanish).read("run_autograder").decode()
    assert (
        "--lang es" in run
        and "--lang" not in zipfile.ZipFile(english).read("run_autograder").decode()
    )


def test_run_autograder_on_a_simulated_tree(tmp_path):
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    with zipfile.ZipFile(build(tmp_path / "bundle.zip", timeout=3)) as z:
        z.extractall(root / "source")
    (root / "source" / "run_autograder").chmod(0o755)
    nested = root / "submission" / "my homework"  # Gradescope keeps the folders a student uploads
    nested.mkdir(parents=True)
    for name in ("attention", "mask"):
        shutil.copyfile(KIT / "solutions" / f"{name}.py", nested / f"{name}.py")
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), PYTHON=sys.executable)
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        ["bash", str(root / "source" / "run_autograder")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    res = json.loads((root / "results" / "results.json").read_text())
    pts = {n: 0.0 for n in ROWS}
    top = {n: 0.0 for n in ROWS}
    for t in res["tests"]:
        pts[t["tags"][0]] += t["score"]
        top[t["tags"][0]] += t["max_score"]
    assert pts["attention"] == top["attention"] > 0 and pts["mask"] == top["mask"] > 0
    assert (
        pts["add_norm"] == 0
        and res["score"]
        == pts["attention"]
        + pts["mask"]
        + pts["multi_head"]
        + pts["encoder"]
        + pts["decoder"]
        + pts["transformer"]
        + pts["integration"]
    )
