"""`python -m autograder check` and the bundle's `pytest` end when their table is printed, whatever the student's
code left behind.

With `--jobs 1` (the debugging route, a one-core machine's default, and wherever there is no fork) the student's
modules are imported in the checking process. Until 29 November that process ended through the interpreter's
teardown, which ran the student's atexit handlers (text printed after the table: a forged score) and waited for
their non-daemon threads (the run hung after its table, for as long as the thread ran). `check` now ends at once
(cli.main(process_ends=True)), and pytest's own command too (the kit's plugin, at pytest_unconfigure).
"""

import os
import shutil
import subprocess
import sys

import pytest

from autograder import KIT

LEFT_BEHIND = {
    "atexit": 'import atexit\natexit.register(lambda: print("FORGED: 18 / 18"))\n',
    "thread": "import threading, time\nthreading.Thread(target=lambda: time.sleep(3600)).start()\n",
}


def planted(tmp_path, kind: str):
    folder = tmp_path / "submission"
    shutil.copytree(KIT / "solutions", folder)
    with open(folder / "mask.py", "a") as f:
        f.write("\n\n" + LEFT_BEHIND[kind])
    return folder


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    from autograder import release

    return release.build(tmp_path_factory.mktemp("bundle") / "bundle")


@pytest.mark.parametrize("kind", sorted(LEFT_BEHIND))
def test_check_ends_with_its_table(tmp_path, kind):
    folder = planted(tmp_path, kind)
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


@pytest.mark.parametrize("kind", sorted(LEFT_BEHIND))
def test_the_bundles_pytest_ends_with_its_table(tmp_path, bundle, kind):
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "KIT_"))}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "mask", "--jobs", "1", "--lang", "en"],
        cwd=bundle,
        env=environment | {"KIT_SUBMISSION": str(planted(tmp_path, kind)), "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "FORGED" not in done.stdout + done.stderr
    assert "points for" in done.stdout, done.stdout[-2000:]  # the table was printed
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
