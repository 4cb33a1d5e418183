"""Where the judge's CPU time goes beyond the in-process check, on the same all-distinct submissions.

    python benchmarks/bench_isolation.py [--students 12] [--jobs 1] [--repeat 1] [--keep DIR]

A class of N submissions, each the reference with a different cataloged bug (spread over the catalog, so over
every component), is graded with `grade --no-cache` (every section graded) and checked in process
(check.run_suite, one process for all, its imports counted apart). CPU time only (the machine is shared):

- the judge: the whole process tree's (resource.getrusage of the children), split by the probe
  (benchmarks/isolation_probe/sitecustomize.py, put on the grading processes' PYTHONPATH: it wraps their stages
  with CPU accumulators and reads the zygote's own time and its reaped workers'), the orchestrator's being
  what is left;
- the check: each student's run_suite, and within it the Executor's calls (the student's code: what a worker
  runs for the judge).

Prints a Markdown table per run (docs/speed.md, "Where the judge's time goes").
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# this checkout's kit, not the installed one (python benchmarks/bench_isolation.py puts benchmarks/ on sys.path)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from autograder import KIT

PROBE = KIT / "benchmarks" / "isolation_probe"


def make_class(dest: Path, n: int) -> list[str]:
    from autograder.bugs import catalog
    from autograder.judge import sample

    bugs = catalog()
    step = len(bugs) / n
    spec = {f"s{i:03d}": f"bug:{bugs[int(i * step)].id}" for i in range(n)}
    sample.materialize(spec, dest)
    return sorted(spec)


def check_child(folders: list[str]) -> None:
    """In a fresh process: the imports, then run_suite on each folder; JSON on stdout."""
    t0 = time.process_time()
    from autograder.check import run_suite
    from autograder.student_code import executor

    spent = {"student code": 0.0}
    orig = executor.Executor.run

    def run(self, op):
        start = time.thread_time()  # not process_time: see the probe's docstring
        try:
            return orig(self, op)
        finally:
            spent["student code"] += time.thread_time() - start

    executor.Executor.run = run
    imports = time.process_time() - t0
    per = []
    for f in folders:
        start = time.process_time()
        run_suite(Path(f))
        per.append(time.process_time() - start)
    print(json.dumps({"imports": imports, "students": per, **spent}))


def check(folders: list[str]) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [sys.executable, __file__, "--check-child", *folders],
        cwd=KIT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    data = json.loads(out.strip().splitlines()[-1])
    data["total"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return data


def judge(subs: Path, out: Path, jobs: int, probe_out: Path) -> dict:
    probe_out.mkdir(parents=True, exist_ok=True)
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(PROBE), os.environ.get("PYTHONPATH", "")]),
        BENCH_ISOLATION_OUT=str(probe_out),
        BENCH_ISOLATION_PROBE="1",
    )
    cmd = [sys.executable, "-m", "autograder", "grade", str(subs), "--out", str(out)]
    cmd += ["--jobs", str(jobs), "--quiet", "--no-cache"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, cwd=KIT, check=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    cpu: dict[str, float] = {}
    counts: dict[str, int] = {}
    for p in probe_out.glob("grader-*.json"):
        d = json.loads(p.read_text())
        for k, v in d["cpu"].items():
            cpu[k] = cpu.get(k, 0.0) + v
        for k, v in d["counts"].items():
            counts[k] = counts.get(k, 0) + v
    ops = {"component": 0, "integration": 0}
    for student in json.loads((out / "timing.json").read_text()).values():
        for w in student["workers"]:
            ops["integration" if w["section"] == "integration" else "component"] += w.get("ops", 0)
    return {"total": total, "cpu": cpu, "counts": counts, "ops": ops}


def rows(j: dict, c: dict, n: int) -> list[tuple[str, float]]:
    """(stage, CPU seconds per student)."""
    cpu = j["cpu"]

    def g(key: str) -> float:
        return cpu.get(key, 0.0)

    def both(key: str) -> float:
        return g(f"{key}:component") + g(f"{key}:integration")

    graders = g("grading process total")
    zyg_own, workers = g("zygote own"), g("zygote's reaped workers")
    out = [("judge: whole process tree", j["total"])]
    out.append(
        (
            "  orchestrator (what is left: imports, plan, outputs, report)",
            j["total"] - graders - zyg_own - workers,
        )
    )
    out.append(
        (
            "  grading processes: start, imports, set-up (once per process)",
            g("setup") + g("before setup (interpreter, imports)"),
        )
    )
    for part in ("component", "integration"):
        sec = g(f"section:{part}")
        own = sec - g(f"operation round trips:{part}") - g(f"worker start (fork, preload):{part}")
        own -= (
            g(f"worker teardown:{part}")
            + g(f"tidy:{part}")
            + g(f"probe_rules:{part}")
            + g(f"picture:{part}")
        )
        out.append(
            (f"  {part} sections, grading side: properties (checking side, Hypothesis)", own)
        )
        out.append(
            (
                f"  {part} sections, grading side: operations sent and answered",
                g(f"operation round trips:{part}"),
            )
        )
        for key, what in (
            ("select.select", "waiting for the reply (select)"),
            ("wire.send_bytes", "the operation's write (sendall)"),
            ("wire.dumps", "encoding the operation"),
            ("wire.recv", "reading and decoding the reply (scan, load)"),
            ("timing.cpu_seconds", "the worker's CPU time read"),
        ):
            out.append((f"    of which {what}", g(f"{key}:{part}")))
        out.append(
            (
                f"  {part} sections, grading side: worker start (fork request, preload)",
                g(f"worker start (fork, preload):{part}"),
            )
        )
        out.append(
            (
                f"  {part} sections, grading side: teardown, tidy, probe, picture",
                g(f"worker teardown:{part}")
                + g(f"tidy:{part}")
                + g(f"probe_rules:{part}")
                + g(f"picture:{part}"),
            )
        )
        out.append(
            (
                f"  {part} sections: workers' own CPU (set-up, preload, import, operations)",
                g(f"worker CPU (its own, until teardown):{part}"),
            )
        )
    out.append(
        (
            "  workers' exit and reap, zygote's forks (reaped total - measured)",
            workers - both("worker CPU (its own, until teardown)"),
        )
    )
    out.append(("  zygotes (start, imports, forks)", zyg_own))
    out.append(
        (
            "  grading processes: orders read, results written",
            g("orders read") + g("results written"),
        )
    )
    rest = (
        graders
        - g("setup")
        - g("before setup (interpreter, imports)")
        - g("section:component")
        - g("section:integration")
        - g("orders read")
        - g("results written")
    )
    out.append(("  grading processes: the rest (between sections, exit)", rest))
    out.append(("check: in process, per student (imports apart)", sum(c["students"])))
    out.append(("  of which the student's code (Executor calls)", c["student code"]))
    out.append(("  check's imports, once (divided like the rest)", c["imports"]))
    return [(name, v / n) for name, v in out]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--students", type=int, default=12)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--keep", type=Path, default=None, help="keep the class and the OUT folders here"
    )
    parser.add_argument("--check-child", nargs="*", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.check_child is not None:
        check_child(args.check_child)
        return
    base = args.keep or Path(tempfile.mkdtemp(prefix="bench-iso-"))
    base.mkdir(parents=True, exist_ok=True)
    subs = base / "subs"
    names = (
        sorted(p.name for p in subs.iterdir()) if subs.is_dir() else make_class(subs, args.students)
    )
    n = len(names)
    for r in range(args.repeat):
        if (base / f"out-{r}").exists() or (base / f"probe-{r}").exists():
            sys.exit(f"{base} holds a run already (out-{r}, probe-{r}): give --keep a fresh folder")
        c = check([str(subs / s) for s in names])
        j = judge(subs, base / f"out-{r}", args.jobs, base / f"probe-{r}")
        table = rows(j, c, n)
        judge_ps = table[0][1]
        check_ps = next(v for name, v in table if name.startswith("check: in process"))
        print(f"\nrun {r + 1}: {n} students, --jobs {args.jobs}, load {os.getloadavg()[0]:.1f}")
        print(
            f"operations: {j['ops']['component'] / n:.0f} component + "
            f"{j['ops']['integration'] / n:.0f} integration per student"
        )
        print("| stage | CPU s per student |\n|---|---:|")
        for name, v in table:
            print(f"| {name.strip()} | {v:.3f} |")
        print(f"ratio judge / check per student: {judge_ps / check_ps:.2f}")
        print(json.dumps({"judge": j, "check": c}), file=open(base / f"raw-{r}.json", "w"))


if __name__ == "__main__":
    main()
