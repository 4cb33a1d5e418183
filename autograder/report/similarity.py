"""Submissions that look alike, per component: winnowed fingerprints of normalised code (fingerprint.py:
copydetect's normalisation, names, strings and comments gone), with the released stub as boilerplate and the
reference as one more source. A pointer for a human, never a verdict (the page says so).

What is compared is what the judge graded: a student's files are read by the judge's own reader
(judge.sections.read_files: regular files only, never a symlink, its per-file and per-submission caps), and a
component's text is its file followed by every helper module the judge loaded beside it that the file names
(directly or through another helper); a helper no component names is added to every component, since the
judge puts every helper beside every component.

Calibration (docs/report.md, tests/test_report.py): a short component's correct solutions look alike because
there are few ways to write them. Two rules keep them apart from copies:
- fingerprints that more than COMMON_SHARE of the class's files of a component share are what everyone
  writes (MOSS's "-m"), ignored like the stub, once the class has COMMON_MIN_FILES files or more;
- a pair is flagged when the code they share, outside the stub and the common part, is at least
  MIN_SHARED characters of normalised code and at least THRESHOLD of one of the two files' own code;
- in a class too small to say what everyone writes, a pair must also share more than the reference's own
  code (outside the stub): a correct solution may be the reference, character for character, once
  normalised, so sharing that much is no sign.

Scale: only candidate pairs are scored. A pair can reach THRESHOLD of a's code only if it shares one of a's
*prefix* fingerprints: the rarest ones in the class, as few as leave too little of a's code to reach
THRESHOLD without them (the prefix filter of set-similarity joins). An inverted index (hash -> files) gives
each file's candidates; a student whose code is their own has a prefix nobody else holds and no candidate.
tests/test_similarity.py checks that the index finds exactly the pairs that scoring all pairs finds.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import re
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import KIT
from ..components import NAMES
from . import fingerprint
from .fingerprint import K, Print
from .model import ClassResults

COMMON_SHARE = 0.5
COMMON_MIN_FILES = 10
MIN_SHARED = (
    60  # normalised characters (names, strings, spaces gone): about two lines of one's own code
)
THRESHOLD = 0.8  # independent students with the same bug and alike helpers reached 0.7 in the synthetic class
SHOWN_PER_COMPONENT = 5  # pairs shown side by side (all flagged pairs are listed)
REFERENCE = "/reference"  # a "/" cannot be in a folder's name: no student can be called this
PARALLEL_FROM = 50  # students: from here the components are fingerprinted in worker processes (a spawn costs ~1 s)

log = logging.getLogger(__name__)


@dataclass
class Pair:
    component: str
    a: str
    b: str
    similarity_a: float  # share of a's own code found in b
    similarity_b: float
    shared: int  # normalised characters in common
    marked_a: str = ""  # a's code, HTML-escaped, the shared parts in <mark>
    marked_b: str = ""


@dataclass
class Similarity:
    pairs: list[Pair] = field(default_factory=list)
    clusters: list[tuple[str, list[str]]] = field(default_factory=list)  # (component, members)
    files: dict[str, int] = field(default_factory=dict)  # component -> files compared
    seconds: float = 0.0


@dataclass(frozen=True)
class Sources:
    """What one worker compares for one component: per student, the files the judge read that make the
    component's text (its file first, then its helpers), by name in the student's folder."""

    component: str
    students: tuple[tuple[str, tuple[str, ...]], ...]
    max_bytes: int  # the judge's cap on a file (judge.sections.MAX_FILE_BYTES)


def compare(
    data: ClassResults,
    submissions: Path,
    solutions: Path = KIT / "solutions",
    stubs: Path = KIT / "exercises",
    components: tuple[str, ...] = NAMES,
) -> Similarity:
    """Every component's flagged pairs and clusters. Tokenising is most of the time: a large class's
    components go to one process per core."""
    started = time.perf_counter()
    submissions = Path(submissions)
    plans = plan([st.name for st in data.students], submissions, components)
    jobs = [(plans[c], submissions, Path(solutions), Path(stubs)) for c in components]
    cores = min(len(jobs), os.cpu_count() or 1)
    if len(data.students) >= PARALLEL_FROM and cores > 1:
        # spawn, not fork: the caller (grade) may hold torch's threads
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(cores, mp_context=context) as pool:
            done = list(pool.map(_component, *zip(*jobs)))
    else:
        done = [_component(*job) for job in jobs]
    result = Similarity()
    for component, (files, pairs) in zip(components, done):
        result.files[component] = files
        result.pairs.extend(pairs)
        result.clusters.extend((component, members) for members in _clusters(pairs))
    result.pairs.sort(
        key=lambda p: (NAMES.index(p.component), -max(p.similarity_a, p.similarity_b))
    )
    result.seconds = time.perf_counter() - started
    return result


def plan(names: list[str], submissions: Path, components: tuple[str, ...]) -> dict[str, Sources]:
    """Per component, each student's files that make its text: read once per student, as the judge reads."""
    # imported here: judge.sections imports the suite, and with it torch, which the workers need not load
    from ..judge.sections import MAX_FILE_BYTES, read_files

    per: dict[str, list] = {c: [] for c in components}
    for name in names:
        folder = submissions / name
        try:
            if folder.is_symlink() or not folder.is_dir():  # the judge grades no symlinked folder
                continue
            files, _ = read_files(folder)
        except OSError:
            continue
        for component, chosen in attribute(files).items():
            if component in per:
                per[component].append((name, chosen))
    return {c: Sources(c, tuple(per[c]), MAX_FILE_BYTES) for c in components}


def attribute(files: dict[str, bytes]) -> dict[str, tuple[str, ...]]:
    """Each component file of a submission with the helpers it names (a module name as a word: import,
    from-import, relative or by a string), directly or through a helper it names; helpers no component
    reaches go with every component (the judge loads every helper beside every component)."""
    words = {n: set(re.findall(rb"\w+", data)) for n, data in files.items()}
    helpers = sorted(n for n in files if n[:-3] not in NAMES)
    reached: dict[str, list[str]] = {}
    for name in files:
        if name[:-3] not in NAMES:
            continue
        seen, todo = [], [name]
        while todo:
            named = words[todo.pop()]
            for h in helpers:
                if h not in seen and h[:-3].encode() in named:
                    seen.append(h)
                    todo.append(h)
        reached[name] = seen
    loose = [h for h in helpers if not any(h in r for r in reached.values())]
    return {n[:-3]: (n, *sorted(set(r) | set(loose))) for n, r in reached.items()}


def _read(path: Path, cap: int) -> str | None:
    """A file of the plan, read again in a worker: still a regular file within the judge's cap."""
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > cap:
            return None
        return path.read_bytes()[:cap].decode("utf-8", errors="replace")
    except OSError:
        return None


def text(folder: Path, files: tuple[str, ...], cap: int) -> str:
    """A component's text: its file, then each helper under a comment naming it (comments are not compared)."""
    parts = []
    for i, name in enumerate(files):
        code = _read(folder / name, cap)
        if code is not None:
            parts.append(code if i == 0 else f"\n# ---- {name} ----\n{code}")
    return "".join(parts)


def _component(
    sources: Sources, submissions: Path, solutions: Path, stubs: Path
) -> tuple[int, list[Pair]]:
    """One component: (files compared, flagged pairs). Runs in a worker process for a large class."""
    prints = fingerprints(sources, submissions, solutions, stubs)
    return len(prints), pairs(sources.component, prints)


def fingerprints(
    sources: Sources, submissions: Path, solutions: Path, stubs: Path
) -> dict[str, Print]:
    """Each student's (and the reference's) fingerprints of one component, the stub's removed; files with
    none left are not compared."""
    component, cap = sources.component, sources.max_bytes
    boilerplate = fingerprint.boilerplate(_read(stubs / f"{component}.py", cap) or "")
    texts = {REFERENCE: _read(solutions / f"{component}.py", cap)}
    for name, files in sources.students:
        texts[name] = text(submissions / name, files, cap)
    prints, seen = {}, {}
    for name, code in texts.items():
        if not code:
            continue
        if (
            code not in seen
        ):  # byte-identical files (an untouched reference, a copy) are fingerprinted once
            seen[code] = fingerprint.fingerprint(code, boilerplate)
        if len(seen[code].positions):
            prints[name] = seen[code]
    return prints


def pairs(component: str, prints: dict[str, Print], exhaustive: bool = False) -> list[Pair]:
    """The flagged pairs of one component. `exhaustive` scores every pair instead of the index's candidates
    (tests/test_similarity.py compares the two)."""
    students = [n for n in prints if n != REFERENCE]
    least = MIN_SHARED
    if len(students) < COMMON_MIN_FILES and REFERENCE in prints:
        least = max(MIN_SHARED, prints[REFERENCE].coverage + K)
    else:
        common = _common([prints[n] for n in students])
        prints = {n: p.without(common) for n, p in prints.items()}
    names = sorted(prints)
    unique = [np.unique(prints[n].hashes) for n in names]
    if exhaustive:
        candidates = {(i, j) for i in range(len(names)) for j in range(i + 1, len(names))}
    else:
        candidates = _candidates([prints[n] for n in names], unique)
    found = []
    for i, j in sorted(candidates):
        shared = np.intersect1d(unique[i], unique[j], assume_unique=True)
        # n fingerprints cover at most n * K characters: cannot reach MIN_SHARED
        if len(shared) * K < MIN_SHARED:
            continue
        a, b = prints[names[i]], prints[names[j]]
        over_a = fingerprint.union(a.positions[np.isin(a.hashes, shared)])
        over_b = fingerprint.union(b.positions[np.isin(b.hashes, shared)])
        sim_a = over_a / a.coverage if a.coverage else 0.0
        sim_b = over_b / b.coverage if b.coverage else 0.0
        if over_a < least or max(sim_a, sim_b) < THRESHOLD:
            continue
        found.append(Pair(component, names[i], names[j], sim_a, sim_b, over_a))
    found.sort(key=lambda p: (-max(p.similarity_a, p.similarity_b), p.a, p.b))
    for p in found[:SHOWN_PER_COMPONENT]:
        a, b = prints[p.a], prints[p.b]
        p.marked_a = fingerprint.mark(a, a.shared_with(b))
        p.marked_b = fingerprint.mark(b, b.shared_with(a))
    return found


def _common(students: list[Print]) -> np.ndarray:
    """Fingerprints in more than COMMON_SHARE of the students' files: what everyone writes."""
    if not students:
        return np.zeros(0, dtype=np.int64)
    values, counts = np.unique(
        np.concatenate([np.unique(p.hashes) for p in students]), return_counts=True
    )
    return values[counts > COMMON_SHARE * len(students)]


def _candidates(prints: list[Print], unique: list[np.ndarray]) -> set[tuple[int, int]]:
    """Pairs (i < j) where one holds a fingerprint of the other's prefix: every pair that can be flagged."""
    owners = np.concatenate([np.full(len(u), i) for i, u in enumerate(unique)] or [np.zeros(0)])
    hashes = np.concatenate(unique or [np.zeros(0, dtype=np.int64)])
    order = np.argsort(hashes, kind="stable")
    hashes, owners = hashes[order], owners[order].astype(np.int64)
    found: set[tuple[int, int]] = set()
    for i, p in enumerate(prints):
        prefix = _prefix(p, unique[i], hashes)
        lo, hi = np.searchsorted(hashes, prefix), np.searchsorted(hashes, prefix, side="right")
        for start, end in zip(lo.tolist(), hi.tolist()):
            if end - start > 1:
                found.update((min(i, j), max(i, j)) for j in owners[start:end].tolist() if j != i)
    return found


def _prefix(p: Print, unique: np.ndarray, index: np.ndarray) -> np.ndarray:
    """The fewest of p's fingerprints, rarest in the class first, without which what is left of p's code is
    under THRESHOLD of it (less one character, so that float rounding cannot matter): a file sharing none of
    them shares less than THRESHOLD of p."""
    holders = np.searchsorted(index, unique, side="right") - np.searchsorted(index, unique)
    ranked = unique[np.lexsort((unique, holders))]  # rarest first, ties by hash: the same every run
    rank = np.empty(len(ranked), dtype=np.int64)
    rank[np.searchsorted(unique, ranked)] = np.arange(len(ranked))
    of_position = rank[np.searchsorted(unique, p.hashes)]
    limit = THRESHOLD * p.coverage - 1
    lo, hi = 0, len(ranked)  # the smallest s with union(positions ranked >= s) < limit
    while lo < hi:
        mid = (lo + hi) // 2
        if fingerprint.union(p.positions[of_position >= mid]) < limit:
            hi = mid
        else:
            lo = mid + 1
    return ranked[:lo]


def _clusters(pairs: list[Pair]) -> list[list[str]]:
    """Groups of three or more joined by flagged pairs (a pair alone is already listed)."""
    parent: dict[str, str] = {}

    def root(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for p in pairs:
        parent[root(p.a)] = root(p.b)
    groups: dict[str, list[str]] = {}
    for x in parent:
        groups.setdefault(root(x), []).append(x)
    return sorted((sorted(g) for g in groups.values() if len(g) >= 3), key=lambda g: (-len(g), g))
