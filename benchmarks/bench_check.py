"""Self-check speed on this machine: wall time of fresh `python -m autograder check` processes, torch import
included, on the reference solutions. Prints a Markdown table for the README.

    python benchmarks/bench_check.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CASES = [
    ("whole visible suite (self-check)", ["solutions", "--no-hidden"], 10.0),
    ("one component (attention)", ["solutions", "--no-hidden", "--component", "attention"], 4.0),
    ("full graded suite, visible + hidden", ["solutions"], 6.0),
    ("whole visible suite on the untouched stubs", ["exercises", "--no-hidden"], None),
]


def wall(args) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "autograder", "check", *args], cwd=ROOT, check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    import_time = statistics.median(wall_import() for _ in range(repeat))
    print(f"| what (median of {repeat}, fresh process) | seconds | target |")
    print("|---|---:|---:|")
    print(f"| python -c 'import torch' alone | {import_time:.2f} | |")
    for label, args, target in CASES:
        seconds = statistics.median(wall(args) for _ in range(repeat))
        print(f"| {label} | {seconds:.2f} | {'≤ %g' % target if target else ''} |")
    from autograder.properties import core

    props = core.load(include_hidden=True)
    print("\n| component | visible properties | hidden | examples per property (min-max) |")
    print("|---|---:|---:|---|")
    from autograder.components import NAMES

    for name in NAMES:
        mine = [p for p in props if p.component == name]
        ex = [p.examples for p in mine]
        print(f"| {name} | {sum(p.visible for p in mine)} | {sum(not p.visible for p in mine)} | "
              f"{min(ex) if ex else 0}-{max(ex) if ex else 0} |")


def wall_import() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=False)
    return time.perf_counter() - start


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
