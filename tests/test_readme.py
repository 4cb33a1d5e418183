"""The counts and figures of README.md and docs/judge.md are generated (benchmarks/update_readme.py), never typed
by hand."""

import subprocess
import sys

from autograder import KIT


def test_readme_generated_blocks_are_up_to_date():
    run = subprocess.run(
        [sys.executable, "benchmarks/update_readme.py", "--check"],
        cwd=KIT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
