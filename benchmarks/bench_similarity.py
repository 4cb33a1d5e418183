"""How the similarity check scales (issue 37): one synthetic class of 5,000 (make_class below, 10 planted
copies among the first students), compared whole and as its first 500, 1,000 and 2,000 students, each in a fresh
process; then `python -m autograder report OUT --submissions SUBS` on the 5,000 (the whole report, page and
exports included), and what one student's big files cost (issue 32). Every figure against a torch import
measured in the same run.

    python benchmarks/bench_similarity.py            # print the table
    python benchmarks/bench_similarity.py --write    # also benchmarks/figures/similarity.md (the README's block)

CPU time (user + system of the process and its workers, from the kernel's accounting) is what a run takes on a
quiet machine; CPU / 2 is the wall clock a quiet 2-core machine would show, since the components are compared in
one worker per core. The machine is shared: the table gives the load average beside the figures.
Targets (issue 37): the report with similarity for 5,000 students in <= 5 minutes on 2 cores; the cost per file
flat from 500 to 5,000 (no term quadratic in the class).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder import KIT
from autograder.report import synthetic

SIZES = (500, 1_000, 2_000, 5_000)
COPIES = 10
GRADED = 500  # students written by the judge's writers; the rest repeat their results (make_class)
TORCH = [sys.executable, "-c", "import torch"]
CORES = 2  # the machine the figures are for


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument(
        "--measure", type=int, help=argparse.SUPPRESS
    )  # in a child: compare the first N
    ap.add_argument(
        "--base", type=Path, help="a class this script wrote before, kept (default: a new one)"
    )
    args = ap.parse_args()
    if args.measure:
        return measure(args.base, args.measure)
    load0 = os.getloadavg()[0]
    base = args.base or Path(tempfile.mkdtemp(prefix="bench-similarity-"))
    try:
        rows = run(base, sorted(args.sizes))
    finally:
        if not args.base:
            shutil.rmtree(base, ignore_errors=True)
    rows.append(
        f"| load average (1 min) before / after, {CORES}-core machine shared with other work | "
        f"{load0:.1f} / {os.getloadavg()[0]:.1f} | | | |"
    )
    table = "\n".join(rows) + "\n"
    print(table)
    if args.write:
        (KIT / "benchmarks" / "figures" / "similarity.md").write_text(table)


def run(base: Path, sizes: list[int]) -> list[str]:
    """The largest class through the whole report, the smaller ones through `similarity.compare`, each in a
    fresh process, the report running beside the others (each process's CPU is its own: os.wait4)."""
    start = time.perf_counter()
    if not (base / "subs").exists():
        make_class(base, sizes[-1])
    generated = time.perf_counter() - start
    planted = {(f"student{2 * i:03d}", f"student{2 * i + 1:03d}") for i in range(COPIES)}
    n = sizes[-1]
    command = [sys.executable, "-m", "autograder", "report", str(base / "out"), "--submissions"]
    report = subprocess.Popen(
        [*command, str(base / "subs"), "--lang", "en"], cwd=KIT, stdout=subprocess.DEVNULL
    )
    torch_runs, measured = [cpu(TORCH)[0]], []
    for size in sizes[:-1]:
        seconds, out = cpu([sys.executable, __file__, "--measure", str(size), "--base", str(base)])
        torch_runs.append(cpu(TORCH)[0])
        found = {tuple(p) for p in json.loads(out)["pairs"]}
        files = json.loads(out)["files"]
        measured.append((size, seconds, files, found))
    report_s = waited(report.pid)
    wall = time.perf_counter() - start - generated
    torch_runs.append(cpu(TORCH)[0])
    torch_s = statistics.median(torch_runs)
    similar = json.loads((base / "out" / "report.json").read_text())["similarity"]
    found = {(p["a"], p["b"]) for p in similar["pairs"]}
    written = f", written in {generated:.0f} s" if generated > 1 else ""
    rows = [
        f"| similarity of a synthetic class (the first N of {n}{written}; "
        f"{COPIES} planted copies) | CPU, all processes | per file | CPU / {CORES} cores, in torch "
        "imports | pairs: planted found / others |",
        "|---|---:|---:|---:|---:|",
    ]
    for size, seconds, files, pairs in measured:
        rows.append(
            f"| {size} students, {files} files: `similarity.compare` in a fresh process | "
            f"{seconds:.1f} s | {1000 * seconds / files:.2f} ms | {seconds / CORES / torch_s:.1f} | "
            f"{len(planted & pairs)} of {COPIES} / {len(pairs - planted)} |"
        )
    files = sum(similar["files"].values())
    rows.append(
        f"| {n} students, {files} files: `report OUT --submissions SUBS` (read, figures, similarity, page, "
        f"exports) | {report_s:.1f} s | {1000 * report_s / files:.2f} ms | {report_s / CORES / torch_s:.1f}; "
        f"≤ 5 min is {300 / torch_s:.0f} (CPU / {CORES} = {report_s / CORES:.0f} s; wall here {wall:.0f} s, "
        f"beside the rows above) | {len(planted & found)} of {COPIES} / {len(found - planted)} |"
    )
    rows += big_files(base, torch_s)
    rows.append(
        f"| python -c 'import torch' (median of {len(torch_runs)}, spread over the run) | "
        f"{torch_s:.2f} s | | 1.0 | |"
    )
    return rows


def make_class(base: Path, n: int, graded: int = GRADED) -> synthetic.Plan:
    """A class of n: `graded` students drawn and written by the judge's own writers (synthetic.make_class: about
    0.1 s a student on a quiet machine, most of it the writers), each of the others a copy of one of them
    (same results, same bugs, same unwritten components) with source files of its own: a helper drawn anew,
    as synthetic.py draws every student's."""
    first = synthetic.make_class(base / "out", min(n, graded))
    names = list(first.results)
    plan = synthetic.Plan()
    for i in range(n):
        source = names[i % len(names)]
        name = source if i < len(names) else f"student{i:03d}"
        plan.results[name] = first.results[source]
        plan.bugs[name], plan.unwritten[name] = first.bugs[source], first.unwritten[source]
        if name != source:
            shutil.copytree(base / "out" / source, base / "out" / name)
    plan.copies = synthetic._write_submissions(base / "subs", plan, random.Random(1), COPIES)
    return plan


def measure(base: Path, n: int) -> None:
    """In a child process: compare the first n students, print the pairs and the files compared."""
    from autograder.report import collect, similarity

    data = collect.read(base / "out")
    data.students = data.students[:n]
    found = similarity.compare(data, base / "subs")
    pairs = sorted({(p.a, p.b) for p in found.pairs})
    print(json.dumps({"pairs": pairs, "files": sum(found.files.values())}))


def big_files(base: Path, torch_s: float) -> list[str]:
    """Issue 32's student: thirteen valid 199-KB files; and one file at the judge's cap (1 MiB). Dead code
    (a short assignment a line) is the densest in tokens, so the costliest a byte."""
    from copydetect.utils import filter_code

    from autograder.judge.sections import MAX_FILE_BYTES
    from autograder.report import fingerprint

    source = (KIT / "solutions" / "attention.py").read_text()
    pad = "".join(f"z{i} = {i} * 3 + {i % 7}\n" for i in range(70_000))
    rows = []
    for size, count in ((199_000, 13), (MAX_FILE_BYTES, 1)):
        code = (source + pad)[:size]
        before = time.process_time()
        for _ in range(count):
            fingerprint.fingerprint(code, fingerprint.boilerplate(""))
        seconds = time.process_time() - before
        row = f"| {count} file(s) of {size // 1000} KB of dead code: fingerprinted | {seconds:.1f} s |"
        if count > 1:  # Pygments' tokenising alone, as before: once, times thirteen
            before = time.process_time()
            filter_code(code, "x.py", "python")
            old = (time.process_time() - before) * count
            row += f" | {seconds / torch_s:.1f} | Pygments' tokenising alone, before: {old:.1f} s |"
        else:
            row += f" | {seconds / torch_s:.1f} | |"
        rows.append(row)
    return rows


def cpu(cmd: list[str]) -> tuple[float, str]:
    """User + system CPU seconds of a fresh process and everything it started, and what it printed."""
    child = subprocess.Popen(
        cmd, cwd=KIT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    out = child.stdout.read()
    return waited(child.pid), out


def waited(pid: int) -> float:
    """Wait for a child: its CPU seconds and its waited-for descendants' (Linux's wait4 reports both)."""
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"process {pid} failed")
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    sys.exit(main())
