"""The kit's import graph (benchmarks/import_graph.py, issue 36): no circle, and no arrow running back up.

KNOWN_UPWARD is where an arrow that must run up would be listed with its reason; it is empty, and the check is an
equality, both ways: a new upward arrow fails it, and so would a listed one that no longer exists."""

import sys

from autograder import KIT

sys.path.insert(0, str(KIT / "benchmarks"))
import import_graph  # the benchmarks folder is not a package

# (importer, imported): why it runs up. The last four went with issue 36: the registry's loader moved to
# autograder/registry.py, grade's report and LMS options to autograder/cli.py and lms/roster.py, and
# notebooks/course.py (a generator) sits in the top layer with the stubs it reads.
KNOWN_UPWARD: dict[tuple[str, str], str] = {}


def test_no_import_circle():
    assert import_graph.circles(import_graph.graph()) == []


def test_no_arrow_runs_back_up_but_the_known_ones():
    assert set(import_graph.upward(import_graph.graph())) == set(KNOWN_UPWARD) == set()
