"""A property's examples come from the property and its seed alone, never from which files are loaded.

Hypothesis draws about 1 number in 40 from constants it parses out of the "local" modules in the process; in the
self-check those include the student's files, which the judge's checking process never loads, and the parse is
cut after 100 ms (a loaded machine would draw differently). suite/core.py keeps that pool empty. Two fresh
processes draw 400 seeds with the kit's settings, one after importing a module full of seeds-like constants
(about 3 s of CPU)."""

import subprocess
import sys

DRAW = r"""
import sys
sys.path.insert(0, sys.argv[1])
from hypothesis import given
from autograder.suite import core
from autograder.suite.strategies import seeds
if sys.argv[2] == "planted":
    import planted_constants  # noqa: F401
drawn = []

@core.hypothesis_settings(400)
@given(seed=seeds())
def draw(seed):
    drawn.append(seed)

draw()
print(drawn)
"""

PLANTED = "SEEDS = [" + ", ".join(str(1000 + 7 * i) for i in range(40)) + "]\n"


def test_loaded_files_change_no_example(tmp_path):
    (tmp_path / "planted_constants.py").write_text(PLANTED)
    runs = [
        subprocess.run(
            [sys.executable, "-c", DRAW, str(tmp_path), mode],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
            cwd=tmp_path,
        ).stdout
        for mode in ("plain", "planted")
    ]
    assert runs[0] and runs[0] == runs[1]


def test_a_composite_strategy_is_made_once_per_plain_argument_list():
    """strategies.composite keeps one strategy per argument list (issue 24: building and validating a new one at
    every draw was half a drawn tensor's cost); the same object draws the same values from the same choices."""
    import torch

    from autograder.suite.strategies import tensors

    assert tensors((2, 3)) is tensors((2, 3))
    assert tensors((2, 3), torch.float32) is not tensors((2, 3))
    assert tensors((2, 3), lo=-1) is not tensors((2, 3), lo=-1.0)  # types are part of the key
    # not a plain value: made each time, as st.composite does
    assert tensors([2, 3]) is not tensors([2, 3])


def test_every_composite_of_the_kit_goes_through_the_cache():
    from autograder import KIT

    direct = [
        p.relative_to(KIT).as_posix()
        for p in sorted((KIT / "autograder").rglob("*.py"))
        if "@st.composite" in p.read_text()
    ]
    assert direct == [], f"use strategies.composite instead of st.composite in {direct}"
