"""The by-hand guard's cost in the full suite (issue 24): how many shadow kernels torch.library registers, and the
CPU time of the whole graded suite on the reference, in fresh processes, for this tree and optionally another
commit (alternating, so that both see the same load).

    python benchmarks/bench_guard.py [--before REF] [--after REF] [--runs 3]

Both trees are committed states (`git archive`), extracted in turn at the same path before each run: trees at
two paths ran different examples (one property called 4 times in one, once in the other). Each run is two fresh
processes per tree: one that times `check.run_suite(solutions)` with time.process_time()
and counts the registrations, and `python -m autograder check solutions` (CPU of the whole command, user +
system, from the kernel's accounting). Prints the medians. The figures in docs/speed.md ("the third pass")
come from `--before` the commit that kept allowed kernels aside.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder import KIT

# Run in the tree under test: its own autograder (the tree's root first on sys.path), counting the
# Library objects (one per registration of an operator's shadow kernels).
ONE_RUN = """
import sys, time
import torch.library
counts = [0]
init = torch.library.Library.__init__
def counted(self, *args, **kwargs):
    counts[0] += 1
    init(self, *args, **kwargs)
torch.library.Library.__init__ = counted
from pathlib import Path
from autograder import check
start = time.process_time()
outcomes, _ = check.run_suite(Path("solutions"))
seconds = time.process_time() - start
assert all(o.passed for o in outcomes), [o.property.name for o in outcomes if not o.passed]
print(seconds, counts[0])
"""


def suite_run(tree: Path) -> tuple[float, int]:
    """(CPU s of run_suite, registrations) in a fresh process of `tree`."""
    out = subprocess.run(
        [sys.executable, "-c", ONE_RUN],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        check=True,
    )
    seconds, registrations = out.stdout.split()
    return float(seconds), int(registrations)


def check_cpu(tree: Path) -> float:
    """CPU s (user + system) of a fresh `python -m autograder check solutions` in `tree`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-m", "autograder", "check", "solutions"],
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="a commit to compare with")
    parser.add_argument("--after", default="HEAD", help="the commit measured (default HEAD)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    refs = [args.before, args.after] if args.before else [args.after]
    archives = {
        ref: subprocess.run(
            ["git", "archive", ref], cwd=KIT, capture_output=True, check=True
        ).stdout
        for ref in refs
    }
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "kit"
        figures = {ref: ([], [], []) for ref in refs}
        load0 = os.getloadavg()[0]
        for _ in range(args.runs):
            for name, archive in archives.items():
                shutil.rmtree(tree, ignore_errors=True)
                tree.mkdir()
                subprocess.run(["tar", "-x", "-C", tree], input=archive, check=True)
                seconds, registrations = suite_run(tree)
                figures[name][0].append(seconds)
                figures[name][1].append(registrations)
                figures[name][2].append(check_cpu(tree))
        print(
            f"medians of {args.runs} runs, load {load0:.1f} before, {os.getloadavg()[0]:.1f} after"
        )
        for name, (suite, _registrations, command) in figures.items():
            print(f"{name}: run_suite {suite}, check {command}")
        print("| tree | run_suite CPU s | registrations | `check solutions` CPU s |")
        print("|---|---:|---:|---:|")
        for name, (suite, registrations, command) in figures.items():
            print(
                f"| {name} | {statistics.median(suite):.2f} | {statistics.median(registrations)} "
                f"| {statistics.median(command):.2f} |"
            )


if __name__ == "__main__":
    main()
