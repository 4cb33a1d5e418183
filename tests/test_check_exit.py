"""`python -m autograder check` ends when its table is printed, whatever the student's code left behind.

With `--jobs 1` (the debugging route, and wherever there is no fork) the student's modules are imported in the
check's own process. Until 29 November that process ended through the interpreter's teardown, which ran the
student's atexit handlers (text printed after the table: a forged score) and waited for their non-daemon threads
(the check hung after its table, for as long as the thread ran). cli.main(process_ends=True) now ends it at once.
"""

import shutil
import subprocess
import sys

import pytest

from autograder import KIT

LEFT_BEHIND = {
    "atexit": 'import atexit\natexit.register(lambda: print("FORGED: 18 / 18"))\n',
    "thread": "import threading, time\nthreading.Thread(target=lambda: time.sleep(3600)).start()\n",
}


@pytest.mark.parametrize("kind", sorted(LEFT_BEHIND))
def test_check_ends_with_its_table(tmp_path, kind):
    folder = tmp_path / "submission"
    shutil.copytree(KIT / "solutions", folder)
    with open(folder / "mask.py", "a") as f:
        f.write("\n\n" + LEFT_BEHIND[kind])
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "check",
            str(folder),
            "--component",
            "mask",
            "--jobs",
            "1",
        ],
        cwd=KIT,
        capture_output=True,
        text=True,
        timeout=120,  # before the fix the thread kept the process for an hour
    )
    assert "FORGED" not in done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("┘"), done.stdout[
        -500:
    ]  # the table is the last thing printed
    assert done.returncode in (0, 1), done.stderr[-2000:]
