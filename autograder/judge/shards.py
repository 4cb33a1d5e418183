"""A class graded in shards on several machines, merged into the one OUT a single run writes (docs/cluster.md).

`grade SUBS --out OUT_K --shard K/N` grades the students whose judge id (lms/identity.py) falls in shard K of
N: a hash of the id, never a position, so that adding or removing a student moves no one else. Each shard
writes what a single run writes for its students, and OUT_K/shard.json says which shard it was.
`python -m autograder merge OUT_1 ... OUT_N --out OUT` checks that the shards are one class cut once (the same
N, every K once, the same class index, the same maxima) and writes OUT: every student's folder and log, one
gradebook, timing.json, class.json, then the report over the whole class, as a single run would.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

SHARD_JSON = "shard.json"


class ShardError(ValueError):
    """Shards that are not one class cut once: merging them would not give a single run's OUT."""


@dataclass(frozen=True)
class Shard:
    """Shard `index` (1 to `count`) of a class cut in `count`."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """`K/N`, as the command line and a Slurm array task (`$SLURM_ARRAY_TASK_ID/N`) write it."""
        try:
            k, n = (int(part) for part in text.split("/"))
        except ValueError:
            raise ShardError(f"--shard takes K/N (e.g. 2/4), not {text!r}") from None
        if not 1 <= k <= n:
            raise ShardError(f"--shard {text}: K must be between 1 and N")
        return cls(k, n)

    def holds(self, submission_id: str) -> bool:
        """Whether this shard grades the submission: the id's SHA-256 taken as a number, modulo N. The id
        already holds a hash of the source name; hashing it again spreads ids that share a slug evenly."""
        digest = hashlib.sha256(submission_id.encode("ascii", "backslashreplace")).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index - 1


@dataclass(frozen=True)
class ShardRecord:
    """OUT_K/shard.json: which shard an OUT holds, and the students it graded."""

    index: int
    count: int
    ids: tuple[str, ...]

    def write(self, out: Path) -> None:
        from .outputs import write_atomic

        data = dataclasses.asdict(self)
        write_atomic(Path(out) / SHARD_JSON, json.dumps(data, indent=1, sort_keys=True) + "\n")

    @classmethod
    def read(cls, out: Path) -> ShardRecord:
        try:
            data = json.loads((Path(out) / SHARD_JSON).read_text(encoding="utf-8"))
            return cls(int(data["index"]), int(data["count"]), tuple(str(i) for i in data["ids"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ShardError(f"{out}: not a shard's output ({SHARD_JSON}: {exc})") from None


def check_cut(records: list[ShardRecord], outs: list[Path]) -> None:
    """Every shard of one N, each once: else the merge would silently lose or double students."""
    counts = {r.count for r in records}
    if len(counts) != 1:
        raise ShardError(f"the shards were cut in different numbers: {sorted(counts)}")
    (n,) = counts
    seen: dict[int, Path] = {}
    for r, out in zip(records, outs):
        if r.index in seen:
            raise ShardError(f"shard {r.index}/{n} given twice: {seen[r.index]} and {out}")
        seen[r.index] = out
    missing = sorted(set(range(1, n + 1)) - set(seen))
    if missing:
        raise ShardError(f"missing shards of {n}: {', '.join(f'{k}/{n}' for k in missing)}")


def merge(outs: list[Path], out: Path) -> list[str]:
    """Write into `out` the graded files of the shards `outs` (in any order); return the merged ids.
    The report is written by the caller (it needs the submissions and the LMS options)."""
    from ..lms.identity import CLASS_JSON, read_index
    from .outputs import log_path, read_gradebook, read_maximum, write_atomic, write_gradebook

    outs = [Path(o) for o in outs]
    records = [ShardRecord.read(o) for o in outs]
    check_cut(records, outs)
    indexes = [(o / CLASS_JSON).read_bytes() for o in outs]
    if any(i != indexes[0] for i in indexes) or read_index(outs[0]) is None:
        raise ShardError(
            "the shards' class indexes differ: they were not cut from one submissions folder"
        )
    maxima = [read_maximum(o / "gradebook.csv") for o in outs]
    if any(m != maxima[0] for m in maxima):
        raise ShardError("the shards' maxima differ: they were graded with different options")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows: dict[str, dict[str, str]] = {}
    timing: dict[str, object] = {}
    ids: list[str] = []
    for o, r in zip(outs, records):
        for sid in r.ids:
            shutil.copytree(o / sid, out / sid, dirs_exist_ok=True)
            log = log_path(o, sid)
            if log.is_file():
                log_path(out, sid).parent.mkdir(exist_ok=True)
                shutil.copyfile(log, log_path(out, sid))
            ids.append(sid)
        rows.update(read_gradebook(o / "gradebook.csv"))
        timing.update(json.loads((o / "timing.json").read_text(encoding="utf-8")))
    write_gradebook(out / "gradebook.csv", rows, maxima[0])
    write_atomic(out / "timing.json", json.dumps(timing, indent=1, sort_keys=True) + "\n")
    write_atomic(out / CLASS_JSON, indexes[0])
    return sorted(ids)
