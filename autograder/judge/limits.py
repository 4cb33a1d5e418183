"""Limits: every limit a worker runs under. Their defaults are the `grade` command's defaults (judge/cli.py
reads them from here), so this module imports nothing heavy."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Limits:
    op_timeout: float = 10.0  # one operation (an import, a call): CPU seconds, scaled (autograder/timing.py)
    section_timeout: float = 60.0  # one component's section, all properties: CPU seconds, scaled
    submission_timeout: float = 600.0  # one student, all sections
    max_timeouts: int = 2  # timeouts in a section before its remaining properties are not run
    memory_mb: int = 2048  # address space on top of the zygote's own
    fsize_mb: int = 8  # the largest file a worker may write (its captured fd 1/2 included)
    tmp_mb: int = 64  # its private /tmp
    output_limit: int = 20_000  # characters of Python-level prints kept
    isolate: bool = True  # namespaces and hidden paths, when running as root
    hide: tuple[str, ...] = ()  # more folders to hide from workers
