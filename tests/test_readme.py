"""Every derived file (the stubs, the generated blocks of README.md and docs/, the translation catalogs' messages) is
what `python -m autograder generate` makes from its source, never typed by hand."""

import re
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
        re.sub(
            r"(<!-- generated: counts -->\n).*?(<!-- end generated: counts -->)",
            r"\1| stale |\n\2",
            generate.README.read_text(),
            flags=re.S,
        )
    )
    monkeypatch.setattr(generate, "FILES", (stale, KIT / "docs" / "contract.md"))
    assert list(generate.stale_blocks()) == [stale]
