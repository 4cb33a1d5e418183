"""bench_isolation.py's probe: loaded by every Python process of a judge run through PYTHONPATH, it acts only in
a grading process (BENCH_ISOLATION_OUT set, the zygote's environment does not carry it). It wraps the grading
process's stages with CPU-time accumulators (time.thread_time: see below) and, at exit, writes them with
its zygote's own CPU time and its workers' (the zygote reaps them: its children's time) to
BENCH_ISOLATION_OUT/grader-<pid>.json. The judge's code is not changed.

Per call, thread_time and not process_time. A grading process sets RLIMIT_CPU for each section (its allowance),
which makes the kernel keep a process-wide CPU timer; while one is active, the process clock is read from that
timer's totals, which are brought up to date only at a tick or a context switch. A call that blocks (select,
waiting for a worker's reply) then shows all the CPU time spent since the last tick, by whatever ran before it:
measured so (until 29 November), `select` seemed to take 1.3 s a student, 0.8 ms an operation, and its own thread
time was 0.03 ms. The thread clock is read from the thread itself, up to date; the grading process has one
thread, so its totals agree with the process clock's at exit (4.687 s both, one grading of the reference).
The limit is the cause: the same grading with `_limit_cpu` made a no-op read 0.044 s in `select` on the process
clock and 0.043 s on the thread clock; with it, 1.32 s and 0.04 s.
The check's in-process time limit (ITIMER_PROF) does the same to the process clock: bench_isolation.py's
per-call figures use thread_time too."""

import os

_OUT = os.environ.get("BENCH_ISOLATION_OUT")


def _install() -> None:
    import atexit
    import builtins
    import json
    import time

    acc: dict[str, float] = {}
    counts: dict[str, int] = {}
    state = {"section": "?", "zygote": None, "t_start": time.process_time()}

    def add(name: str, dt: float) -> None:
        acc[name] = acc.get(name, 0.0) + dt
        counts[name] = counts.get(name, 0) + 1

    def wrap(owner, attr: str, name, per_section: bool = True):
        orig = getattr(owner, attr)

        def wrapper(*a, **k):
            t0 = time.thread_time()
            try:
                return orig(*a, **k)
            finally:
                label = name(a) if callable(name) else name
                add(
                    f"{label}:{state['section']}" if per_section else label,
                    time.thread_time() - t0,
                )

        setattr(owner, attr, wrapper)

    def patch() -> None:
        from autograder import timing
        from autograder.judge import grading_process as gp
        from autograder.judge import remote, wire

        wrap(gp.GradingProcess, "__init__", "setup", per_section=False)
        orig_run = gp.GradingProcess.run

        def run(self, section):
            state["section"] = "integration" if section.component == "integration" else "component"
            state["zygote"] = self.zygote
            t0 = time.thread_time()
            try:
                return orig_run(self, section)
            finally:
                add(f"section:{state['section']}", time.thread_time() - t0)

        gp.GradingProcess.run = run
        wrap(remote.SandboxedStudentCode, "_start", "worker start (fork, preload)")
        wrap(remote.SandboxedStudentCode, "_roundtrip", "operation round trips")
        wrap(remote.SandboxedStudentCode, "_receive", "reply wait+decode")
        wrap(wire, "send", "wire.send")
        wrap(wire, "recv", "wire.recv")
        wrap(wire, "dumps", "wire.dumps")
        wrap(wire, "send_bytes", "wire.send_bytes")
        wrap(timing, "cpu_seconds", "timing.cpu_seconds")
        import types

        shim = types.SimpleNamespace(select=remote.select.select)
        wrap(shim, "select", "select.select")
        remote.select = shim
        wrap(gp, "tidy", "tidy")
        wrap(gp, "section_budget", "section_budget")
        wrap(gp.GradingProcess, "refuse_by_the_scan", "refuse_by_the_scan")
        wrap(gp.GradingProcess, "probe_rules", "probe_rules")
        wrap(gp.GradingProcess, "picture", "picture")
        wrap(gp, "read_trusted", "orders read", per_section=False)
        wrap(gp, "write_trusted", "results written", per_section=False)
        orig_teardown = remote.SandboxedStudentCode._teardown

        def teardown(self, collect=True):
            if self.pid is not None and self.cpu_pid is not None:
                cpu = timing.cpu_seconds(self.cpu_pid)
                if cpu is not None:
                    add(f"worker CPU (its own, until teardown):{state['section']}", cpu)
            t0 = time.thread_time()
            try:
                return orig_teardown(self, collect)
            finally:
                add(f"worker teardown:{state['section']}", time.thread_time() - t0)

        remote.SandboxedStudentCode._teardown = teardown
        orig_close = gp.GradingProcess.close

        def close(self):
            z = self.zygote
            if z is not None and z.proc.poll() is None:
                with open(f"/proc/{z.proc.pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                tick = os.sysconf("SC_CLK_TCK")
                acc["zygote own"] = (int(fields[11]) + int(fields[12])) / tick
                acc["zygote's reaped workers"] = (int(fields[13]) + int(fields[14])) / tick
            return orig_close(self)

        gp.GradingProcess.close = close
        state["t_patched"] = (
            time.process_time()
        )  # the hook imported the wire, hence torch: the start's imports

    def dump() -> None:
        acc["grading process total"] = time.process_time()
        acc["before setup (interpreter, imports)"] = state.get("t_patched", state["t_start"])
        with open(os.path.join(_OUT, f"grader-{os.getpid()}.json"), "w") as f:
            json.dump({"cpu": acc, "counts": counts}, f, indent=1)

    # patch once autograder.judge.grading_process is imported (the grading process's -c imports it first)
    orig_import = builtins.__import__

    def hook(name, *a, **k):
        module = orig_import(name, *a, **k)
        if name == "autograder.judge.grading_process" and not state.get("done"):
            state["done"] = True
            builtins.__import__ = orig_import
            patch()
            atexit.register(dump)
        return module

    builtins.__import__ = hook


if _OUT and os.environ.get("BENCH_ISOLATION_PROBE") == "1":
    _install()
