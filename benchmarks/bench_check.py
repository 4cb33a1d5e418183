"""Self-check speed on this machine: wall time of fresh `python -m autograder check` processes, torch import
included, on the reference solutions. Prints a Markdown table for the README.

    python benchmarks/bench_check.py [--repeat 3] [--write]

--write also saves the table as benchmarks/figures/check.md, which `python -m autograder generate` puts in the README.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from autograder import KIT  # the installed kit (pip install -e .)

CASES = [
    ("whole visible suite (self-check)", ["solutions", "--no-hidden"], "≤ 10"),
    ("one component (attention)", ["solutions", "--no-hidden", "--component", "attention"], "≤ 4"),
    # ≤ 6 s was set for the ten components before kv_cache, beam_search and training (training alone trains a
    # model on the copy task: the row of its own below).
    ("full graded suite, visible + hidden", ["solutions"], "≤ 6 for the first ten"),
    ("whole visible suite on the untouched stubs", ["exercises", "--no-hidden"], None),
    # The components added after the targets above were set: each one alone, torch import included.
    *(
        (f"one component ({name}), visible + hidden", ["solutions", "--component", name], None)
        for name in ("kv_cache", "beam_search", "training")
    ),
]


def wall(args) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "autograder", "check", *args],
        cwd=KIT,
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--write", action="store_true", help="save the table in benchmarks/figures/check.md"
    )
    args = parser.parse_args()
    repeat = args.repeat
    load0 = os.getloadavg()[0]
    import_time = statistics.median(wall_import() for _ in range(repeat))
    rows = [
        f"| what (median of {repeat}, fresh process, {os.cpu_count()} cores) | seconds | target |",
        "|---|---:|---:|",
        f"| python -c 'import torch' alone | {import_time:.2f} | |",
    ]
    for label, args_, target in CASES:
        seconds = statistics.median(wall(args_) for _ in range(repeat))
        rows.append(f"| {label} | {seconds:.2f} | {target or ''} |")
    rows.append(
        f"| load average (1 min) before / after | {load0:.1f} / {os.getloadavg()[0]:.1f} | |"
    )
    table = "\n".join(rows) + "\n"
    print(table)
    if args.write:
        (KIT / "benchmarks" / "figures" / "check.md").write_text(table)
    from autograder.suite import core

    props = core.load(include_hidden=True)
    print("\n| component | visible properties | hidden | examples per property (min-max) |")
    print("|---|---:|---:|---|")
    from autograder.components import NAMES

    for name in NAMES:
        mine = [p for p in props if p.component == name]
        ex = [p.examples for p in mine]
        print(
            f"| {name} | {sum(p.visible for p in mine)} | {sum(not p.visible for p in mine)} | "
            f"{min(ex) if ex else 0}-{max(ex) if ex else 0} |"
        )


def wall_import() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=False)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
