"""A one-node Slurm on this machine for the tests (tests/test_shards.py): munged, slurmctld and slurmd on
localhost, every file in one folder, free ports, stopped and waited for at the end."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

NODE = "kitnode"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _config(d: Path, cpus: int) -> str:
    return "\n".join(
        [
            "ClusterName=kittest",
            "SlurmctldHost=localhost(127.0.0.1)",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            f"AuthInfo=socket={d}/munge.socket",
            f"StateSaveLocation={d}/state",
            f"SlurmdSpoolDir={d}/spool",
            f"SlurmctldPidFile={d}/slurmctld.pid",
            f"SlurmdPidFile={d}/slurmd.pid",
            f"SlurmctldLogFile={d}/slurmctld.log",
            f"SlurmdLogFile={d}/slurmd.log",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "ReturnToService=2",
            "MpiDefault=none",
            "JobAcctGatherType=jobacct_gather/none",
            f"NodeName={NODE} NodeHostname={socket.gethostname()} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN",
            f"PartitionName=kit Nodes={NODE} Default=YES MaxTime=60 State=UP",
            "",
        ]
    )


@contextlib.contextmanager
def one_node(d: Path):
    """Yield the environment (SLURM_CONF) under which sbatch and squeue talk to the node."""
    d.mkdir(parents=True)
    for sub in ("state", "spool"):
        (d / sub).mkdir()
    conf = d / "slurm.conf"
    conf.write_text(_config(d, os.cpu_count() or 1))
    env = dict(os.environ, SLURM_CONF=str(conf))
    key = d / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    procs = []
    try:
        munged = [
            "munged", "--foreground", "--force", f"--socket={d}/munge.socket", f"--key-file={key}",
            f"--pid-file={d}/munged.pid", f"--log-file={d}/munged.log", f"--seed-file={d}/munged.seed",
        ]  # fmt: skip
        procs.append(subprocess.Popen(munged, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
        _wait_for(lambda: (d / "munge.socket").exists(), "munged", d / "munged.log")
        procs.append(_daemon(["slurmctld", "-D", "-i", "-f", str(conf)], env, d / "slurmctld.out"))
        procs.append(_daemon(["slurmd", "-D", "-N", NODE, "-f", str(conf)], env, d / "slurmd.out"))
        _wait_for(lambda: _idle(env), "the node to be idle", d / "slurmd.log")
        yield env
    finally:
        if shutil.which("scancel"):
            subprocess.run(["scancel", "--user=root"], env=env, capture_output=True, timeout=20)
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _daemon(cmd, env, log: Path) -> subprocess.Popen:
    with open(log, "wb") as f:
        return subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT)


def _idle(env) -> bool:
    done = subprocess.run(
        ["sinfo", "-h", "-N", "-o", "%T"], env=env, capture_output=True, text=True, timeout=10
    )
    return done.returncode == 0 and done.stdout.strip() == "idle"


def _wait_for(ready, what: str, log: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"
            raise RuntimeError(f"waited {seconds:g} s for {what}: {tail}")
        time.sleep(0.5)
