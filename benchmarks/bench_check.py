"""Self-check speed on this machine: CPU time (user + system, the process and its children) of fresh
`python -m autograder check` processes on the reference solutions, each against one `python -c "import torch"`
measured in the same run (issue 24's unit). Prints a Markdown table for the README.

    python benchmarks/bench_check.py [--repeat 3] [--write]

CPU time, not wall: on a shared machine the wall clock measures the other work too; CPU time is what the run
takes on a quiet one. Each figure is the median of `--repeat` fresh processes. --write also saves the table as
benchmarks/figures/check.md, which `python -m autograder generate` puts in the README.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys

from autograder import KIT  # the installed kit (pip install -e .)
from autograder.components import NAMES

# Issue 24's targets, in torch imports.
FULL_TARGET, COMPONENT_TARGET = 3.0, 2.0

CASES = [
    ("full graded suite, visible + hidden", ["solutions"], FULL_TARGET),
    ("whole visible suite (self-check)", ["solutions", "--no-hidden"], None),
    ("whole visible suite on the untouched stubs", ["exercises", "--no-hidden"], None),
    *(
        (
            f"one component ({name}), visible + hidden",
            ["solutions", "--component", name],
            COMPONENT_TARGET,
        )
        for name in NAMES
    ),
]


TORCH = [sys.executable, "-c", "import torch"]


def cpu(cmd: list[str]) -> float:
    """User + system CPU seconds of a fresh process (and whatever it starts), from the kernel's accounting."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, cwd=KIT, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median_cpu(cmd: list[str], repeat: int) -> float:
    return statistics.median(cpu(cmd) for _ in range(repeat))


def table(repeat: int) -> str:
    load0 = os.getloadavg()[0]
    # The torch import is measured before every row too, and its figure is the median of all those runs: three
    # runs at the start alone once gave 1.38 s, more than a whole `check --component mask` (1.27 s) measured
    # minutes later, which also imports torch (the first processes of a run pay for a cold machine).
    torch_runs = [cpu(TORCH) for _ in range(repeat)]
    measured = []
    for label, args, target in CASES:
        torch_runs.append(cpu(TORCH))
        seconds = median_cpu([sys.executable, "-m", "autograder", "check", *args], repeat)
        measured.append((label, seconds, target))
    torch_s = statistics.median(torch_runs)
    rows = [
        f"| what (CPU s, median of {repeat} fresh processes, {os.cpu_count()} cores) | CPU s "
        "| torch imports | target |",
        "|---|---:|---:|---:|",
        f"| python -c 'import torch' alone (median of {len(torch_runs)}, spread over the run) "
        f"| {torch_s:.2f} | 1.00 | |",
    ]
    for label, seconds, target in measured:
        goal = f"≤ {target:g}" if target else ""
        rows.append(f"| {label} | {seconds:.2f} | {seconds / torch_s:.2f} | {goal} |")
    rows.append(
        f"| load average (1 min) before / after | {load0:.1f} / {os.getloadavg()[0]:.1f} | | |"
    )
    return "\n".join(rows) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--write", action="store_true", help="save the table in benchmarks/figures/check.md"
    )
    args = parser.parse_args()
    text = table(args.repeat)
    print(text)
    if args.write:
        (KIT / "benchmarks" / "figures" / "check.md").write_text(text)
    from autograder.suite import core

    props = core.load(include_hidden=True)
    print("\n| component | visible properties | hidden | examples per property (min-max) |")
    print("|---|---:|---:|---|")
    for name in NAMES:
        mine = [p for p in props if p.component == name]
        ex = [p.examples for p in mine]
        print(
            f"| {name} | {sum(p.visible for p in mine)} | {sum(not p.visible for p in mine)} | "
            f"{min(ex) if ex else 0}-{max(ex) if ex else 0} |"
        )


if __name__ == "__main__":
    main()
