"""Every derived file (the stubs, the generated blocks of README.md and docs/, the translation catalogs' messages) is
what `python -m autograder generate` makes from its source, never typed by hand."""

import subprocess
import sys

from autograder import KIT, generate


def test_every_derived_file_is_up_to_date():
    run = subprocess.run(
        [sys.executable, "-m", "autograder", "generate", "--check"],
        cwd=KIT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_stale_block_is_named(tmp_path, monkeypatch):
    stale = tmp_path / "README.md"
    stale.write_text(
        "# a kit\n<!-- generated: contract -->\n| stale |\n<!-- end generated: contract -->\n"
    )
    fresh = tmp_path / "fresh.md"
    fresh.write_text(generate.render(stale.read_text()))
    monkeypatch.setattr(generate, "FILES", (stale, fresh))
    assert list(generate.stale_blocks()) == [stale]
