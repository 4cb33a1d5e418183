"""A class graded as shards and merged, against the same class graded in one run (docs/cluster.md).

    python benchmarks/bench_shards.py [--students 1000] [--shards 4] [--jobs 2] [--write]

The class: bench_grade's 100 recipes (references, cataloged bugs, partial, stubs, missing files, syntax errors,
hostile submissions), each given to students/100 students under their own names, so the section cache reuses
identical files as it would in a class where many files are the same. Graded once (`grade --jobs J`), then as
N shards one after another on this machine (`grade --shard K/N --jobs J`, then `merge`): on a cluster the shards
run side by side, so a cluster's wall time is about the slowest shard's plus the merge. Each figure is the wall
time and the CPU time of the whole process tree, beside a torch import timed in the same run; the load average
is printed with them (the machine may be shared).

--write saves the table as benchmarks/figures/shards.md, which `python -m autograder generate` puts in the
README.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder import KIT

sys.path.insert(0, str(KIT / "benchmarks"))
from bench_grade import emit, measures, recipes  # the benchmarks folder is not a package


def run(*args: str) -> tuple[float, float]:
    """(wall, CPU) seconds of one kit command; CPU: its whole process tree's user + system time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "autograder", *args], cwd=KIT)
    if done.returncode not in (0, 2):  # 2: a judge error for some student, written in their files
        raise SystemExit(f"{args[0]} failed with {done.returncode}")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # as it goes: a long run that is stopped still says what it measured
    print(
        f"{' '.join(args[:1] + args[3:])}: wall {wall:.1f} s, CPU {cpu:.1f} s",
        file=sys.stderr,
        flush=True,
    )
    return wall, cpu


def torch_import() -> float:
    return run_python("import torch")


def run_python(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def make_class(dest: Path, students: int) -> None:
    from autograder.judge import sample

    pool = recipes()
    spec = {f"s{i:05d}": pool[i % len(pool)] for i in range(students)}
    sample.materialize(spec, dest)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--students", type=int, default=1000)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-shards-"))
    subs = base / "subs"
    make_class(subs, args.students)
    torch_before = torch_import()
    load_before = os.getloadavg()[0]
    grade = ["--quiet", "--jobs", str(args.jobs)]
    single = run("grade", str(subs), "--out", str(base / "single"), *grade)
    shards = [
        run(
            "grade",
            str(subs),
            "--out",
            str(base / f"shard-{k}"),
            "--shard",
            f"{k}/{args.shards}",
            "--no-report",
            *grade,
        )  # fmt: skip
        for k in range(1, args.shards + 1)
    ]
    outs = [str(base / f"shard-{k}") for k in range(1, args.shards + 1)]
    merged = run("merge", *outs, "--out", str(base / "merged"), "--submissions", str(subs))
    torch_after = torch_import()
    load_after = os.getloadavg()[0]
    same = (base / "single" / "gradebook.csv").read_bytes() == (
        base / "merged" / "gradebook.csv"
    ).read_bytes()
    torch_s = (torch_before + torch_after) / 2
    n, j = args.students, args.jobs
    rows = [
        (
            "class",
            f"{n} students from 100 recipes, --jobs {j}, this machine's {os.cpu_count()} cores",
        ),
        ("a torch import in the same run (mean of one before, one after)", f"{torch_s:.2f} s"),
        ("load average (1 min) before / after", f"{load_before:.1f} / {load_after:.1f}"),
        ("one run: wall", f"{single[0]:.0f} s"),
        ("one run: CPU of all its processes", f"{single[1]:.0f} s"),
        (
            f"{args.shards} shards one after another: wall, summed",
            f"{sum(s[0] for s in shards):.0f} s",
        ),
        (f"{args.shards} shards: the slowest shard's wall", f"{max(s[0] for s in shards):.0f} s"),
        (f"{args.shards} shards: CPU, summed", f"{sum(s[1] for s in shards):.0f} s"),
        (
            "merge (gradebook, report with similarity over the class, LMS files): wall",
            f"{merged[0]:.1f} s",
        ),
        (
            "on a cluster of one such machine per shard: slowest shard + merge, against one run",
            f"{max(s[0] for s in shards) + merged[0]:.0f} s vs {single[0]:.0f} s",
        ),
        ("merged gradebook.csv byte-identical to the one run's", "yes" if same else "NO"),
    ]
    emit(measures(rows), "shards", args.write)


if __name__ == "__main__":
    main()
