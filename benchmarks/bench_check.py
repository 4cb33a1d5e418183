"""Self-check speed on this machine: CPU time (user + system, the process and its children) of fresh
`python -m autograder check` processes on the reference solutions, each against one `python -c "import torch"`
measured in the same run (issue 24's unit). Prints a Markdown table for the README.

    python benchmarks/bench_check.py [--repeat 3] [--write]
    python benchmarks/bench_check.py --cores [--repeat 3] [--write]

CPU time, not wall: on a shared machine the wall clock measures the other work too; CPU time is what the run
takes on a quiet one. Each figure is the median of `--repeat` fresh processes. --write also saves the table as
benchmarks/figures/check.md, which `python -m autograder generate` puts in the README. The rows of that table
run `check --jobs 1` (one process: their CPU time is issue 24's figure).

--cores: the self-check on the machine's cores (`check --jobs N`, issue 37): its wall time against a torch
import's, both measured in the same run, and the same for --jobs 1; and, as the wall time a quiet machine with
N cores would take, its critical path in CPU time: the parent's own CPU time (the imports, handing the outcomes
over, the table) + the busiest worker's (each worker's CPU time from the kernel at its reaping). --write saves
it as benchmarks/figures/check-cores.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder import KIT  # the installed kit (pip install -e .)
from autograder.components import NAMES

# Issue 24's targets, in torch imports.
FULL_TARGET, COMPONENT_TARGET = 3.0, 2.0
# Issue 37's, wall time on the machine's cores, in torch imports: the visible suite (a student's `check`), the
# full graded suite
VISIBLE_WALL_TARGET, FULL_WALL_TARGET = 2.0, 2.5

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
# A student's Python caches the kit's compiled modules (__pycache__); a development shell that sets
# PYTHONDONTWRITEBYTECODE compiles them in every process (0.6 s of CPU of a fresh check), which no student pays
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


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
        seconds = median_cpu(
            [sys.executable, "-m", "autograder", "check", *args, "--jobs", "1"], repeat
        )
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


def probe(path: str, jobs: int, hidden: bool, out: str) -> None:
    """Run in a fresh process (--probe): one `check` through the CLI's own function, then its CPU figures in
    `out` (JSON): the process's own, and each worker's (check_jobs.Jobs notes them at reaping)."""
    from autograder import check, check_jobs

    workers: list[float] = []
    close = check_jobs.Jobs.close

    def noting(self):
        close(self)
        workers.extend(self.cpu)

    check_jobs.Jobs.close = noting
    args = argparse.Namespace(
        path=path, component=None, no_hidden=not hidden, verbose=False, json=None, jobs=jobs
    )
    with open(os.devnull, "w") as quiet:
        sys.stdout = quiet
        check.main(args)
        sys.stdout = sys.__stdout__
    me = resource.getrusage(resource.RUSAGE_SELF)
    with open(out, "w") as f:
        json.dump({"self": me.ru_utime + me.ru_stime, "workers": workers}, f)
    # as `python -m autograder check` ends (cli.main, process_ends): without the interpreter's teardown
    os._exit(0)


def wall_and_path(jobs: int, hidden: bool) -> tuple[float, float]:
    """(wall s, critical path in CPU s) of a fresh check of the reference with `jobs` workers."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [sys.executable, __file__, "--probe", str(jobs), "hidden" if hidden else "visible"]
        start = time.perf_counter()
        subprocess.run([*cmd, f.name], cwd=KIT, check=True)
        wall = time.perf_counter() - start
        got = json.loads(Path(f.name).read_text())
    return wall, got["self"] + max(got["workers"], default=0.0)


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=KIT, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def cores_table(repeat: int) -> str:
    """Issue 37: the self-check on the machine's cores, wall and critical path, against a torch import."""
    load0 = os.getloadavg()[0]
    jobs = check_jobs_default()
    torch_wall, torch_cpu = [], []
    rows = [
        (f"{label}, --jobs {n}", hidden, n, [], target if n > 1 else None)
        for label, hidden, target in (
            ("visible suite (a student's `check`)", False, VISIBLE_WALL_TARGET),
            ("full graded suite, visible + hidden", True, FULL_WALL_TARGET),
        )
        for n in (jobs, 1)
    ]
    # Round robin, a run of each row in turn: a slow minute of a shared machine (runs minutes apart differ by a
    # tenth) then slows one run of every row, where a block of runs per row gave it all to one row.
    for _ in range(repeat):
        for _label, hidden, n, runs, _target in rows:
            torch_wall.append(wall(TORCH))
            torch_cpu.append(cpu(TORCH))
            runs.append(wall_and_path(n, hidden))
    tw, tc = statistics.median(torch_wall), statistics.median(torch_cpu)
    lines = [
        f"| `check` on the reference ({os.cpu_count()} cores; median of {repeat} fresh processes) "
        "| wall s | torch imports (wall) | critical path, CPU s | torch imports (CPU) | target |",
        "|---|---:|---:|---:|---:|---:|",
        f"| python -c 'import torch' (median of {len(torch_wall)}, spread over the run) | {tw:.2f} "
        f"| 1.00 | {tc:.2f} | 1.00 | |",
    ]
    for label, _hidden, _n, runs, target in rows:
        w = statistics.median(r[0] for r in runs)
        c = statistics.median(r[1] for r in runs)
        goal = f"≤ {target:g}" if target else ""
        lines.append(f"| {label} | {w:.2f} | {w / tw:.2f} | {c:.2f} | {c / tc:.2f} | {goal} |")
    lines.append(
        f"| load average (1 min) before / after | {load0:.1f} / {os.getloadavg()[0]:.1f} | | | | |"
    )
    return "\n".join(lines) + "\n"


def check_jobs_default() -> int:
    from autograder.check_jobs import default_jobs

    return default_jobs()


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--probe":
        probe(str(KIT / "solutions"), int(sys.argv[2]), sys.argv[3] == "hidden", sys.argv[4])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--write", action="store_true", help="save the table in benchmarks/figures/check.md"
    )
    parser.add_argument(
        "--cores", action="store_true", help="only the self-check on the machine's cores (wall)"
    )
    args = parser.parse_args()
    if args.cores:
        text = cores_table(args.repeat)
        print(text)
        if args.write:
            (KIT / "benchmarks" / "figures" / "check-cores.md").write_text(text)
        return
    text = table(args.repeat)
    print(text)
    if args.write:
        (KIT / "benchmarks" / "figures" / "check.md").write_text(text)
    from autograder import registry

    props = registry.load(include_hidden=True)
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
