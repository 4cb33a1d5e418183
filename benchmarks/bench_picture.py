"""The attention picture's cost (autograder/judge/picture.py `render`), CPU time, as a grading process pays it.

    python benchmarks/bench_picture.py [--processes 3] [--lang en]

Each fresh process imports torch and the picture module, computes the reference and freezes the garbage
collector (as a grading process does after its set-up), then times: the import of matplotlib's Figure and Agg
canvas, the first picture, and four more different pictures (the merge bug, wrong weights, a worker's error,
no output), each drawn three times (median). A grading process draws one picture per distinct view; a class
of 100 generated submissions draws about 20. Prints a Markdown table: the median over the processes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys


def child(lang: str) -> None:
    import gc
    import time

    from autograder import i18n
    from autograder.judge import picture

    ref = picture.reference()
    gc.freeze()
    views = [
        ref,
        picture.View(ref.weights.clone(), ref.output.flip(0).clone()),
        picture.View(ref.weights.transpose(-1, -2).contiguous(), ref.output * 1.5),
        picture.View(
            problem="ValueError in forward: shapes (1, 6, 8) and (8, 4) cannot be multiplied"
        ),
        picture.View(ref.weights * 0.9, None),
    ]
    with i18n.chosen(lang):
        t = time.process_time()
        import matplotlib.backends.backend_agg
        import matplotlib.figure  # noqa: F401 - timed, not used

        figures = {"import": time.process_time() - t}
        t = time.process_time()
        png = picture.render(views[0])
        figures["first"] = time.process_time() - t
        later = []
        for view in views[1:]:
            times = []
            for _ in range(3):
                t = time.process_time()
                png = picture.render(view)
                times.append(time.process_time() - t)
            later.append(statistics.median(times))
        figures["later"] = statistics.mean(later)
        figures["kB"] = len(png) / 1000
    print(json.dumps(figures))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--lang", default="en")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.lang)
    runs = []
    for _ in range(args.processes):
        cmd = [sys.executable, __file__, "--child", "--lang", args.lang]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600)
        runs.append(json.loads(done.stdout.splitlines()[-1]))

    def median(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    print(f"| measure (CPU time, median of {args.processes} processes) | value |")
    print("|---|---:|")
    print(
        f"| import of matplotlib's Figure and Agg canvas, once per process | {median('import'):.3f} s |"
    )
    print(f"| first picture, after the import | {median('first'):.3f} s |")
    print(
        f"| 2nd-5th picture, each (median of 3 draws, mean of the four) | {median('later'):.3f} s |"
    )
    print(f"| a picture's PNG | {median('kB'):.0f} kB |")
    print(f"| load average (1 min) after | {os.getloadavg()[0]:.1f} |")


if __name__ == "__main__":
    main()
