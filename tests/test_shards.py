"""A class graded in shards and merged is the class graded once (issue 38, docs/cluster.md).

The slow test grades a class of four once and as three shards (in a scrambled order), merges them, and compares
the files byte for byte; the Slurm test does the same through a one-node Slurm started on this machine
(skipped where slurmctld, slurmd and munged are not installed: .ci/run installs them).
"""

import filecmp
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder import KIT
from autograder.judge import sample
from autograder.judge.shards import Shard, ShardError, ShardRecord, check_cut
from autograder.lms.identity import submission_id

# Small, because it is graded five times (once, as three shards, as two Slurm shards): a full mark, a bug, the
# stubs, a missing file under a name with accents. With three shards, one may draw no student: merged too.
CLASS = {
    "ada": "reference",
    "cai": "bug:multi_head:merge_without_transpose",
    "ben": "stubs",
    "Ñandú Óscar": "missing:mask",
}
# ...and each hands in three files: a section whose file is missing needs no worker, and what is checked here is
# the merge, byte for byte, not the suite (the whole suite on a class: tests/test_judge.py). Every component's
# column is still in the gradebook and the LMS files. With all thirteen files the module took 97 s (72 s of CPU).
FILES = {"attention.py", "mask.py", "multi_head.py"}
# What a single run writes that must come out of the merge byte for byte (timing.json varies run to run).
SAME = ("gradebook.csv", "class.json", "lms-canvas.csv", "lms-moodle.csv")


def test_a_shard_is_a_hash_of_the_id_not_a_position():
    ids = [submission_id(f"student{i:04d}") for i in range(2000)]
    shards = [Shard(k, 4) for k in range(1, 5)]
    owners = [[s.index for s in shards if s.holds(i)] for i in ids]
    assert all(len(o) == 1 for o in owners)  # every student in exactly one shard
    sizes = [sum(o == [k] for o in owners) for k in range(1, 5)]
    assert min(sizes) > 400, sizes  # about even: 500 each
    # stable: a student removed moves no one else (a split by position would move everyone after them)
    fewer = [[s.index for s in shards if s.holds(i)] for i in ids[:10] + ids[11:]]
    assert fewer == owners[:10] + owners[11:]


@pytest.mark.parametrize("text", ["0/4", "5/4", "2", "a/b", "1/0", "-1/3"])
def test_a_shard_that_is_not_k_of_n_is_refused(text):
    with pytest.raises(ShardError):
        Shard.parse(text)


def test_a_merge_needs_every_shard_once(tmp_path):
    outs = [tmp_path / f"o{k}" for k in range(3)]
    with pytest.raises(ShardError, match="missing shards of 3: 3/3"):
        check_cut([ShardRecord(1, 3, ()), ShardRecord(2, 3, ())], outs[:2])
    with pytest.raises(ShardError, match="given twice"):
        check_cut([ShardRecord(1, 2, ()), ShardRecord(1, 2, ()), ShardRecord(2, 2, ())], outs)
    with pytest.raises(ShardError, match="different numbers"):
        check_cut([ShardRecord(1, 2, ()), ShardRecord(2, 3, ())], outs[:2])


def kit(*args, cwd=None, timeout=900):
    cmd = [sys.executable, "-m", "autograder", *map(str, args)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    assert done.returncode in (0, 2), done.stdout[-3000:] + done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    base = tmp_path_factory.mktemp("shards")
    subs = sample.materialize(CLASS, base / "subs")
    for f in subs.glob("*/*.py"):
        if f.name not in FILES:
            f.unlink()
    # --jobs 1: a small class (docs/speed.md, "One grading process for a small class")
    kit("grade", subs, "--out", base / "single", "--quiet", "--jobs", "1")
    return base, subs


def timeless(path: Path) -> str:
    return "".join(
        line for line in path.read_text().splitlines(True) if '"execution_time"' not in line
    )


def assert_same_as_single(single_out: Path, merged: Path):
    for name in SAME:
        assert (merged / name).read_bytes() == (single_out / name).read_bytes(), name
    index = json.loads((single_out / "class.json").read_text())
    for member in index["members"]:
        sid = member["id"]
        for f in ("feedback.html", "feedback.md"):
            assert filecmp.cmp(single_out / sid / f, merged / sid / f, shallow=False), (sid, f)
        # byte-identical as the judge means it between two runs (docs/judge.md): execution_time aside
        assert timeless(single_out / sid / "results.json") == timeless(
            merged / sid / "results.json"
        )
    timing = json.loads((merged / "timing.json").read_text())
    assert sorted(timing) == sorted(json.loads((single_out / "timing.json").read_text()))
    assert (merged / "report.html").is_file()


def test_three_shards_merged_in_any_order_are_the_single_run(single):
    base, subs = single
    shards = []
    for k in (3, 1, 2):
        out = base / f"shard{k}"
        kit(
            "grade",
            subs,
            "--out",
            out,
            "--shard",
            f"{k}/3",
            "--quiet",
            "--jobs",
            "1",
            "--no-report",
        )
        shards.append(out)
    graded = [ShardRecord.read(o).ids for o in shards]
    assert sorted(i for ids in graded for i in ids) == sorted(
        m["id"] for m in json.loads((base / "single" / "class.json").read_text())["members"]
    )
    kit("merge", *shards, "--out", base / "merged", "--submissions", subs)
    assert_same_as_single(base / "single", base / "merged")
    # a shard left out is refused, naming it
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "merge", *shards[:2], "--out", base / "bad"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and "missing shards of 3: 2/3" in done.stderr


SLURM = ("slurmctld", "slurmd", "munged", "sbatch")


@pytest.fixture
def slurm(tmp_path):
    """A one-node Slurm on localhost (slurmctld + slurmd, munge for auth), stopped at the end."""
    if not all(shutil.which(b) for b in SLURM) or os.geteuid() != 0:
        pytest.skip("slurm-wlm and munge are not installed, or not root (.ci/run installs them)")
    from tests.slurm_node import one_node

    with one_node(tmp_path / "slurm") as env:
        yield env


def test_a_slurm_array_of_shards_and_a_dependent_merge_give_the_single_run(single, slurm):
    base, subs = single
    recipe = KIT / "examples" / "cluster" / "slurm"
    out = base / "slurm"
    env = dict(
        slurm,
        KIT_PYTHON=sys.executable,
        KIT_SUBMISSIONS=str(subs),
        KIT_OUT=str(out),
        KIT_SHARDS="2",
    )
    done = subprocess.run(
        ["bash", str(recipe / "submit.sh")], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    deadline = time.monotonic() + 900
    while not (out / "merged.done").is_file():
        merge_log = out / "merge.log"
        ended = merge_log.is_file() and not _queued(slurm)
        assert not ended, merge_log.read_text(errors="replace")[-3000:]
        assert time.monotonic() < deadline, [p.read_text()[-500:] for p in out.glob("*.log")]
        time.sleep(2)
    assert_same_as_single(base / "single", out / "merged")


def _queued(env) -> bool:
    """Whether a job is still pending or running (the merge's log appears when it starts)."""
    done = subprocess.run(["squeue", "-h"], env=env, capture_output=True, text=True, timeout=20)
    return bool(done.stdout.strip())
