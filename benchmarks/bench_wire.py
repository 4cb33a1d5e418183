"""The reply scan and the encoder, per frame and per opcode: the scan of today (wire._Scan, its own reader) and
the one it replaced (pickletools.genops, kept as the oracle of tests/test_judge_wire_scan.py), on the same frames.

    python benchmarks/bench_wire.py          # the kit's honest replies and operations, built with wire.dumps
    python benchmarks/bench_wire.py DIR      # frames saved one per file (DIR/*.bin), e.g. recorded in grading

CPU time, best of 5. Figures in docs/judge.md, "Speed".
"""

from __future__ import annotations

import pickletools
import sys
import time
from pathlib import Path

from autograder import KIT

sys.path.insert(0, str(KIT))  # tests.<module>, as tests/conftest.py makes it importable

from autograder.judge import wire
from tests.test_judge_wire_scan import _OldScan, honest_values


def best(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    values = honest_values()
    if len(sys.argv) > 1:
        frames = [p.read_bytes() for p in sorted(Path(sys.argv[1]).glob("*.bin"))]
    else:
        frames = [wire.dumps(v) for v in values] * 20
    ops = sum(1 for data in frames for _ in pickletools.genops(data))
    print(f"{len(frames)} frames, {ops} opcodes ({ops / len(frames):.0f} a frame)")
    for name, scan in (("pickletools.genops (before)", _OldScan), ("wire._Scan", wire._Scan)):
        t = best(lambda scan=scan: [scan().run(data) for data in frames])
        print(f"{name}: {t / ops * 1e6:.3f} us an opcode, {t / len(frames) * 1e6:.1f} us a frame")
    t = best(lambda: [wire.dumps(v) for v in values * 20])
    print(
        f"wire.dumps of the {len(values)} honest values: {t / len(values) / 20 * 1e6:.1f} us each"
    )


if __name__ == "__main__":
    main()
