"""The judge's speed: grade 100 generated submissions with --jobs 2 and compare with the in-process check.

    python benchmarks/bench_grade.py [--jobs 2] [--cold] [--skip-check] [--repeat 3]

The class: 10 references, 70 cataloged bugs (spread over every component), 8 partial submissions (the first
k components done), 2 untouched stubs, 2 with a missing file, 2 with a syntax error, and 6 hostile ones (an
exit at import, a segfault, a forbidden call through getattr, an import of the reference, an os._exit in
forward, an endless loop). Prints Markdown tables for docs/judge.md.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder import KIT  # the installed kit (pip install -e .)


HOSTILE = ["exit_at_import", "segfault", "forbidden_getattr", "import_reference", "os_exit_in_forward",
           "loop_in_softmax"]


def recipes() -> list[str]:
    from autograder.bugs import catalog

    bugs = catalog()
    step = len(bugs) / 70
    chosen = [bugs[int(i * step)].id for i in range(70)]
    out = ["reference"] * 10 + [f"bug:{b}" for b in chosen]
    out += [f"partial:{k}" for k in (1, 2, 3, 4, 5, 6, 7, 8)]
    out += ["stubs", "stubs", "missing:feed_forward", "missing:decoder", "syntax:attention", "syntax:encoder"]
    out += [f"hostile:{h}" for h in HOSTILE]
    assert len(out) == 100, len(out)
    return out


def make_class(dest: Path) -> dict[str, str]:
    from autograder.judge import sample

    names = list(recipes())
    random.Random(0).shuffle(names)
    spec = {f"s{i:03d}": r for i, r in enumerate(names)}
    sample.materialize(spec, dest)
    return spec


def check_many(folders: list[str]) -> float:
    """The in-process self-check (check.run_suite) on each folder, in this process: seconds."""
    from autograder.check import run_suite

    start = time.perf_counter()
    for f in folders:
        run_suite(Path(f))
    return time.perf_counter() - start


def judge(subs: Path, out: Path, jobs: int, cache: bool = True) -> float:
    cmd = [sys.executable, "-m", "autograder", "grade", str(subs), "--out", str(out), "--jobs", str(jobs),
           "--quiet"] + ([] if cache else ["--no-cache"])
    start = time.perf_counter()
    subprocess.run(cmd, cwd=KIT, check=True)
    return time.perf_counter() - start


def overhead(base: Path, repeat: int) -> tuple[list[float], list[dict]]:
    """A correct submission graded alone (--jobs 1), `repeat` times: its workers' start + load + teardown."""
    from autograder.judge import sample

    sample.materialize({"ref": "reference"}, base / "alone")
    totals, workers = [], []
    for i in range(repeat):
        judge(base / "alone", base / f"alone-out-{i}", 1)
        ws = json.loads((base / f"alone-out-{i}" / "timing.json").read_text())["ref"]["workers"]
        totals.append(sum(w["start_s"] + w["load_s"] + w["teardown_s"] for w in ws))
        workers += ws
    return totals, workers


def layers(n: int = 40) -> list[tuple[str, str]]:
    """The cost of each isolation layer of a worker (issue 11): workers forked back to back from one zygote,
    configured with and without each layer, fork to ready (median of n); the reference preload; the CPU-time
    accounting of one operation; the machine-speed calibration; the end-of-run sweep."""
    from autograder import timing
    from autograder.judge import wire
    from autograder.judge.grading_process import GradingProcess
    from autograder.judge.limits import Limits
    from autograder.judge.remote import Zygote
    from autograder.judge.sandbox import Reaper

    tmp = Path(tempfile.mkdtemp(prefix="bench-layers-"))
    tmp.chmod(0o711)
    grader = GradingProcess({"limits": Limits(), "tmp": str(tmp), "include_hidden": False, "uid_base": 3_000_000,
                     "hide": [], "slot": 0})
    base = dict(grader.worker_cfg)
    z = grader.zygote
    rows = [("isolation mode", str(z.mode or f"none ({z.isolation_problem})"))]

    def start_ms(cfg) -> float:
        z.configure(cfg)
        pid, sock = z.take()  # the spare forked at configure: not timed
        wire.recv(sock)
        z.kill(pid)
        sock.close()
        times = []
        for _ in range(n):  # back to back: each take waits for the next spare's fork and set-up
            t0 = time.perf_counter()
            pid, sock = z.take()
            hello = wire.recv(sock)
            times.append(time.perf_counter() - t0)
            assert "ready" in hello, hello
            z.kill(pid)
            sock.close()
        return 1000 * statistics.median(times)

    plain = start_ms(dict(base, isolate=False, pidns=None, uids=[]))
    rows.append(("worker fork to ready, no isolation (rlimits, fds, setsid)", f"{plain:.1f} ms"))
    if z.mode == "user":  # the namespaces come together: the user namespace is what allows the others
        full = start_ms(base)
        rows.append(("+ user, PID (keeper fork, own /proc), mount/net/IPC namespaces, covers, capabilities dropped",
                     f"{full - plain:+.1f} ms"))
    elif z.mode:
        ns = start_ms(dict(base, pidns=None))
        full = start_ms(base)
        rows.append(("+ mount/net/IPC namespaces, hidden folders, read-only binds, uid drop", f"{ns - plain:+.1f} ms"))
        rows.append(("+ PID namespace: keeper fork and its own /proc (the default)", f"{full - ns:+.1f} ms"))
    z.configure(base)
    reference = {f"{d}.py": (KIT / "solutions" / f"{d}.py").read_bytes() for d in
                 ("attention", "multi_head", "add_norm", "feed_forward", "mask", "positional_encoding",
                  "encoder", "decoder")}
    grader.write_package(reference, tuple(reference))
    times = []
    for _ in range(n):
        pid, sock = z.take()
        wire.recv(sock)
        t0 = time.perf_counter()
        wire.send(sock, {"preload": grader.preload})
        wire.recv(sock)
        times.append(time.perf_counter() - t0)
        z.kill(pid)
        sock.close()
    rows.append(("preload of the 8 reference dependencies (the transformer's section), per worker",
                 f"{1000 * statistics.median(times):.1f} ms"))
    t0 = time.perf_counter()
    for _ in range(1000):
        timing.cpu_seconds(os.getpid())
    rows.append(("CPU-time accounting, per operation (two reads of /proc/<pid>/stat)",
                 f"{2 * (time.perf_counter() - t0):.3f} ms"))
    timing._speed = None
    t0 = time.perf_counter()
    timing.speed()
    rows.append(("machine-speed calibration, once per process", f"{1000 * (time.perf_counter() - t0):.0f} ms"))
    reaper = Reaper()
    t0 = time.perf_counter()
    reaper.end_all()
    reaper.close()
    rows.append(("end-of-run sweep for leftover processes, once per run", f"{1000 * (time.perf_counter() - t0):.1f} ms"))
    grader.close()
    shutil.rmtree(tmp, ignore_errors=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cold", action="store_true", help="also grade with --no-cache (every section graded)")
    parser.add_argument("--skip-check", action="store_true", help="do not time the in-process check")
    parser.add_argument("--repeat", type=int, default=3, help="runs of the reference alone, for the overhead")
    parser.add_argument("--layers", action="store_true", help="only the cost of each isolation layer of a worker")
    args = parser.parse_args()
    if args.layers:
        print("| layer | cost |\n|---|---:|")
        for k, v in layers():
            print(f"| {k} | {v} |")
        return
    base = Path(tempfile.mkdtemp(prefix="bench-grade-"))
    rows = []
    try:
        spec = make_class(base / "subs")
        load0 = os.getloadavg()[0]
        wall = judge(base / "subs", base / "out", args.jobs)
        rows.append((f"judge, 100 submissions, --jobs {args.jobs}: wall", f"{wall:.1f} s"))
        rows.append(("per student (wall / 100)", f"{wall / 100:.2f} s"))
        # The non-hostile ones (the in-process check can run only those: the others would kill it).
        honest = [s for s, r in spec.items() if not r.startswith("hostile")]
        for s in honest:
            shutil.copytree(base / "subs" / s, base / "honest" / s)
        if args.cold:
            cold = judge(base / "honest", base / "out-cold", args.jobs, cache=False)
            rows.append((f"judge --no-cache (every section graded), the {len(honest)} non-hostile ones: wall",
                         f"{cold:.1f} s"))
            rows.append(("per student, --no-cache", f"{cold / len(honest):.2f} s"))
        totals, workers = overhead(base, args.repeat)
        sections = sum(w["seconds"] for w in workers) / args.repeat
        rows.append((f"a correct submission graded alone, --jobs 1: its {len(workers) // args.repeat} sections",
                     f"{sections:.2f} s"))
        rows.append(("its worker overhead, start + load + teardown of all its workers (median)",
                     f"{1000 * statistics.median(totals):.0f} ms"))
        rows.append(("per worker: start / load / teardown (mean)",
                     f"{1000 * statistics.mean(w['start_s'] for w in workers):.1f} / "
                     f"{1000 * statistics.mean(w['load_s'] for w in workers):.1f} / "
                     f"{1000 * statistics.mean(w['teardown_s'] for w in workers):.1f} ms"))
        if not args.skip_check:
            # The in-process check on the same submissions, hostile ones excluded (they would kill this process).
            folders = [str(base / "honest" / s) for s in honest]
            start = time.perf_counter()
            with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
                pool.map(check_many, [folders[i::args.jobs] for i in range(args.jobs)])
            check = time.perf_counter() - start
            per_check = check / len(honest)
            rows.append((f"in-process check, the {len(honest)} non-hostile submissions, {args.jobs} processes",
                         f"{check:.1f} s"))
            rows.append(("per student, check", f"{per_check:.2f} s"))
            rows.append(("ratio judge / check per student", f"{wall / 100 / per_check:.2f}"))
            if args.cold:
                rows.append(("ratio judge --no-cache / check, same submissions", f"{cold / len(honest) / per_check:.2f}"))
        rows.append(("load average (1 min) before / after, 2-core machine",
                     f"{load0:.1f} / {os.getloadavg()[0]:.1f}"))
        print("| measure | value |\n|---|---:|")
        for k, v in rows:
            print(f"| {k} | {v} |")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
