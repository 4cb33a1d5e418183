"""The kit's tests on two workers keep their groups (tests/conftest.py): a group's tests run on one worker.

pytest 9.2 stopped reading the node id that pytest-xdist 3.8 writes a test's group into, and nothing failed: every
test went to whichever worker was free, and the module fixtures that grade a class were set up once per worker
(pytest-dev/pytest-xdist#1386). This runs a few cheap grouped tests on two workers and reads where each ran.
"""

import re
import subprocess
import sys

from autograder import KIT

COMPONENTS = ("mask", "feed_forward", "positional_encoding")


def test_a_groups_tests_run_on_one_worker_and_carry_the_group_in_their_id():
    selection = " or ".join(COMPONENTS)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-v",
            "-m",
            "not slow",
            "-k",
            selection,
            "tests/test_free_points.py::test_constant_output_earns_only_shape_points",
        ],
        cwd=KIT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    ran = re.findall(
        r"\[(gw\d)\].*?test_constant_output_earns_only_shape_points\[[^\]]*\]@component:(\w+)",
        proc.stdout,
    )
    workers: dict[str, set[str]] = {}
    for worker, component in ran:
        workers.setdefault(component, set()).add(worker)
    assert len(ran) == 4 * len(COMPONENTS), proc.stdout[-3000:]
    assert set(workers) == set(COMPONENTS)
    assert all(len(w) == 1 for w in workers.values()), workers
