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
