"""Limits: every limit a worker runs under. Kept apart and light: the command line (judge/cli.py) reads its
defaults from here, and is built for every command."""

from __future__ import annotations

from dataclasses import dataclass

from ..timing import DEFAULT_TIMEOUT


@dataclass
class Limits:
    """Every limit a worker runs under; the defaults are the `grade` command's."""

    op_timeout: float = DEFAULT_TIMEOUT  # one operation (an import, a call): CPU seconds, scaled (autograder/timing.py)
    section_timeout: float = 60.0  # one component's section, all properties: CPU seconds, scaled
    submission_timeout: float = 600.0  # one student, all sections
    max_timeouts: int = 2  # timeouts in a section before its remaining properties are not run
    memory_mb: int = 2048  # address space on top of the zygote's own
    fsize_mb: int = 8  # the largest file a worker may write (its captured fd 1/2 included)
    tmp_mb: int = 64  # its private /tmp
    output_limit: int = 20_000  # characters of Python-level prints kept
    isolate: bool = True  # namespaces and hidden paths, when running as root
    hide: tuple[str, ...] = ()  # more folders to hide from workers
