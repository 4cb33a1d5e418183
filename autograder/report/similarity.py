"""Submissions that look alike, per component: copydetect's fingerprints (winnowed k-grams of code whose names,
strings and comments are normalised away), with the released stub as boilerplate and the reference as one
more source. A pointer for a human, never a verdict (the page says so).

Calibration (docs/report.md, tests/test_report_similarity.py): a short component's correct solutions look
alike because there are few ways to write them. Two rules keep them apart from copies:
- fingerprints that more than COMMON_SHARE of the class's files of a component share are what everyone
  writes (MOSS's "-m"), ignored like the stub, once the class has COMMON_MIN_FILES files or more;
- a pair is flagged when the code they share, outside the stub and the common part, is at least
  MIN_SHARED characters of normalised code and at least THRESHOLD of one of the two files' own code;
- in a class too small to say what everyone writes, a pair must also share more than the reference's own
  code (outside the stub): a correct solution may be the reference, character for character, once
  normalised, so sharing that much is no sign.
Figures (synthetic class of 20, tests/test_report.py): a copied file shares 100 % / 100 %; independent
students who differ by a few lines of their own share at most ~50 characters (< 50 %) after the common part.
Comparing all pairs would be 125 000 per component for 500 students: an inverted index of fingerprints
gives the pairs that share any, and only those are compared.
"""

from __future__ import annotations

import copy
import io
import itertools
import logging
import multiprocessing
import os
import time
import zlib
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import KIT
from ..components import NAMES
from .model import ClassResults

K = 25  # copydetect's noise threshold: a match shorter than 25 normalised characters is never counted
WINDOW = 4  # winnowing window: a match of K + WINDOW - 1 = 28 characters is always found
COMMON_SHARE = 0.5
COMMON_MIN_FILES = 10
MIN_SHARED = (
    60  # normalised characters (names, strings, spaces gone): about two lines of one's own code
)
THRESHOLD = 0.8  # independent students with the same bug and alike helpers reached 0.7 in the synthetic class
MAX_BYTES = 200_000  # a bigger file is not a student's solution: left out
SHOWN_PER_COMPONENT = 5  # pairs shown side by side (all flagged pairs are listed)
REFERENCE = "/reference"  # a "/" cannot be in a folder's name: no student can be called this


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


def stable_kgrams(string: str, k: int) -> np.ndarray:
    """copydetect's hashed_kgrams with CRC-32 for Python's hash(), which is salted per process: with it the
    same class flagged different pairs run to run (10 of 10 copies and 0 or 1 other pair, class of 500)."""
    grams = (string[i : i + k].encode("utf-8", "surrogatepass") for i in range(len(string) - k + 1))
    return np.fromiter((zlib.crc32(g) for g in grams), dtype=np.int64)


def _fingerprint(name: str, code: str, boilerplate: np.ndarray):
    from copydetect import CodeFingerprint

    return CodeFingerprint(name, K, WINDOW, boilerplate, fp=io.StringIO(code), language="python")


def _boilerplate(code: str) -> np.ndarray:
    from copydetect.utils import filter_code, get_document_fingerprints

    hashes, _ = get_document_fingerprints(filter_code(code, "stub.py", "python")[0], K, 1)
    return np.array(sorted(hashes), dtype=np.int64)


def _drop(fp, common: set[int]) -> None:
    """Forget fingerprints everyone writes, as copydetect forgets boilerplate."""
    from copydetect.utils import get_token_coverage

    if not common:
        return
    fp.hashes = fp.hashes - common
    fp.hash_idx = {h: i for h, i in fp.hash_idx.items() if h not in common}
    fp.token_coverage = get_token_coverage(fp.hash_idx, fp.k, len(fp.filtered_code))


def _read(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > MAX_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


PARALLEL_FROM = 50  # students: from here the components are fingerprinted in worker processes (a spawn costs ~1 s)


def compare(
    data: ClassResults,
    submissions: Path,
    solutions: Path = KIT / "solutions",
    stubs: Path = KIT / "exercises",
    components: tuple[str, ...] = NAMES,
) -> Similarity:
    """Every component's flagged pairs and clusters. Pygments' tokenising is ~85 % of the time (~10 ms a file):
    a large class's components go to one process per core."""
    started = time.perf_counter()
    names = [st.name for st in data.students]
    jobs = [(c, names, Path(submissions), Path(solutions), Path(stubs)) for c in components]
    cores = min(len(jobs), os.cpu_count() or 1)
    if len(names) >= PARALLEL_FROM and cores > 1:
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


def _component(
    component: str, names: list[str], submissions: Path, solutions: Path, stubs: Path
) -> tuple[int, list[Pair]]:
    """One component: (files compared, flagged pairs). Runs in a worker process for a large class."""
    import copydetect.utils

    # copydetect warns once per file it cannot tokenise
    logging.getLogger().setLevel(max(logging.getLogger().level, logging.ERROR))
    copydetect.utils.hashed_kgrams = stable_kgrams
    boilerplate = _boilerplate(_read(stubs / f"{component}.py") or "")
    sources = {REFERENCE: _read(solutions / f"{component}.py")}
    for name in names:
        sources[name] = _read(submissions / name / f"{component}.py")
    fps, seen = {}, {}
    for name, code in sources.items():
        if not code:
            continue
        # byte-identical files (an untouched reference, a copy) are tokenised once
        if code not in seen:
            try:
                seen[code] = _fingerprint(name, code, boilerplate)
            except Exception:  # noqa: BLE001 - a file pygments cannot lex is left out, the rest compared
                seen[code] = None
        if seen[code] is not None and seen[code].hashes:
            fps[name] = copy.copy(seen[code])
    return len(fps), _pairs(component, fps)


def _pairs(component: str, fps: dict) -> list[Pair]:
    from copydetect import compare_files
    from copydetect.utils import highlight_overlap

    students = [n for n in fps if n != REFERENCE]
    least = MIN_SHARED
    if len(students) < COMMON_MIN_FILES and REFERENCE in fps:
        least = max(MIN_SHARED, int(fps[REFERENCE].token_coverage) + K)
    else:
        counts = Counter(h for n in students for h in fps[n].hashes)
        common = {h for h, c in counts.items() if c > COMMON_SHARE * len(students)}
        for fp in fps.values():
            _drop(fp, common)
    holders = defaultdict(list)
    for name, fp in fps.items():
        for h in fp.hashes:
            holders[h].append(name)
    shared = Counter()
    for names in holders.values():
        for a, b in itertools.combinations(sorted(names), 2):
            shared[(a, b)] += 1
    found = []
    for (a, b), n in shared.items():
        # n fingerprints cover at most n * K characters: cannot reach MIN_SHARED
        if n * K < MIN_SHARED:
            continue
        overlap, (sim_a, sim_b), slices = compare_files(fps[a], fps[b])
        if overlap < least or max(sim_a, sim_b) < THRESHOLD:
            continue
        found.append(Pair(component, a, b, float(sim_a), float(sim_b), int(overlap)))
    found.sort(key=lambda p: -max(p.similarity_a, p.similarity_b))
    for p in found[:SHOWN_PER_COMPONENT]:
        _, _, (slices_a, slices_b) = compare_files(fps[p.a], fps[p.b])
        p.marked_a = highlight_overlap(
            fps[p.a].raw_code, slices_a, "<mark>", "</mark>", escape_html=True
        )[0]
        p.marked_b = highlight_overlap(
            fps[p.b].raw_code, slices_b, "<mark>", "</mark>", escape_html=True
        )[0]
    return found


def _clusters(pairs: list[Pair]) -> list[list[str]]:
    """Groups of three or more joined by flagged pairs (a pair alone is already listed)."""
    parent: dict[str, str] = {}

    def root(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for p in pairs:
        parent[root(p.a)] = root(p.b)
    groups = defaultdict(list)
    for x in parent:
        groups[root(x)].append(x)
    return sorted((sorted(g) for g in groups.values() if len(g) >= 3), key=lambda g: (-len(g), g))
