"""Similarity reads what the judge graded and scales (autograder/report/similarity.py, fingerprint.py).

The attacks of issue 32 are recipes that build a small synthetic class at test time (ATTACKS below): each
names what the attacker does to their folder and whether the pair (attacker, innocent) must be flagged. The
old reading (following symlinks, 200,000 bytes a file, component files only) gets each of them wrong.
The index of fingerprints is checked against scoring every pair, and the whole pipeline against copydetect's
own (Pygments, its winnowing, compare_files) on the same class: the same pairs, the same shares.
"""

from __future__ import annotations

import html
import io
import itertools
import os
import re
import shutil
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from autograder import KIT
from autograder.components import NAMES
from autograder.judge.sections import MAX_FILE_BYTES, read_files
from autograder.report import collect, fingerprint, similarity, synthetic

ATTACKER, INNOCENT = "student010", "student003"
COMPONENT = "attention"


@pytest.fixture(scope="module")
def klass(tmp_path_factory):
    """A synthetic class of 12 (enough for the "what everyone writes" rule), no planted copy."""
    base = tmp_path_factory.mktemp("similarity")
    synthetic.make_class(base / "out", 12, seed=3, submissions=base / "subs")
    return base, collect.read(base / "out")


def _innocent_code(subs: Path) -> str:
    return (subs / INNOCENT / f"{COMPONENT}.py").read_text()


def symlinked_file(subs: Path) -> None:
    """The attacker's file is a link to the innocent's: the judge refuses it, the attacker earns nothing."""
    target = subs / ATTACKER / f"{COMPONENT}.py"
    target.unlink()
    target.symlink_to(Path("..") / INNOCENT / f"{COMPONENT}.py")


def symlinked_folder(subs: Path) -> None:
    """The attacker's whole folder is a link to the innocent's: the judge grades no such folder."""
    shutil.rmtree(subs / ATTACKER)
    (subs / ATTACKER).symlink_to(subs / INNOCENT, target_is_directory=True)


def copy_in_helper(subs: Path) -> None:
    """The copy moved into a helper module the component's file imports."""
    (subs / ATTACKER / "notes.py").write_text(_innocent_code(subs))
    (subs / ATTACKER / f"{COMPONENT}.py").write_text("from notes import *  # noqa: F403\n")


def copy_two_helpers_down(subs: Path) -> None:
    """The component imports a helper that imports the helper holding the copy."""
    (subs / ATTACKER / "tools.py").write_text("from .deep_tools import *  # noqa: F403\n")
    (subs / ATTACKER / "deep_tools.py").write_text(_innocent_code(subs))
    (subs / ATTACKER / f"{COMPONENT}.py").write_text(
        "import tools\n\nattention = tools.attention\n"
    )


def copy_in_loose_helper(subs: Path) -> None:
    """The copy in a helper that no file names (loaded by a name computed at run time)."""
    (subs / ATTACKER / "x_impl.py").write_text(_innocent_code(subs))
    (subs / ATTACKER / f"{COMPONENT}.py").write_text(
        "import importlib\n\nattention = importlib.import_module('x' + '_impl').attention\n"
    )


def padded_with_code(subs: Path) -> None:
    """The copy, then dead code past 200,000 bytes (the old reader's cap; the judge takes 1 MiB)."""
    pad = "".join(f"_pad{i} = {i} * {i % 7} + {i % 3}\n" for i in range(12_000))
    (subs / ATTACKER / f"{COMPONENT}.py").write_text(_innocent_code(subs) + pad)


def padded_with_comments(subs: Path) -> None:
    """The copy, then comments past 200,000 bytes."""
    pad = "".join(f"# note {i}: {'x' * 60}\n" for i in range(3_500))
    (subs / ATTACKER / f"{COMPONENT}.py").write_text(pad + _innocent_code(subs))


def over_the_judges_cap(subs: Path) -> None:
    """The copy padded past the judge's own cap: the judge ignores the file, so does the report."""
    code = _innocent_code(subs)
    (subs / ATTACKER / f"{COMPONENT}.py").write_text(code + "#" * (MAX_FILE_BYTES + 1 - len(code)))


@dataclass(frozen=True)
class Attack:
    build: Callable[[Path], None]
    flagged: bool  # whether (attacker, innocent) must be flagged in COMPONENT
    graded: bool  # whether the judge reads the attacker's COMPONENT file at all


ATTACKS = {
    "symlinked_file": Attack(symlinked_file, flagged=False, graded=False),
    "symlinked_folder": Attack(symlinked_folder, flagged=False, graded=False),
    "copy_in_helper": Attack(copy_in_helper, flagged=True, graded=True),
    "copy_two_helpers_down": Attack(copy_two_helpers_down, flagged=True, graded=True),
    "copy_in_loose_helper": Attack(copy_in_loose_helper, flagged=True, graded=True),
    "padded_with_code": Attack(padded_with_code, flagged=True, graded=True),
    "padded_with_comments": Attack(padded_with_comments, flagged=True, graded=True),
    "over_the_judges_cap": Attack(over_the_judges_cap, flagged=False, graded=False),
}


@pytest.mark.parametrize("name", ATTACKS)
def test_an_attack_is_judged_on_what_the_judge_graded(klass, tmp_path, name):
    base, data = klass
    subs = tmp_path / "subs"
    shutil.copytree(base / "subs", subs, symlinks=True)
    attack = ATTACKS[name]
    attack.build(subs)
    folder = subs / ATTACKER
    graded = not folder.is_symlink() and f"{COMPONENT}.py" in read_files(folder)[0]
    assert graded == attack.graded  # the recipe does what it says to the judge
    found = similarity.compare(data, subs, components=(COMPONENT,))
    pairs = {(p.a, p.b) for p in found.pairs}
    assert ((INNOCENT, ATTACKER) in pairs) == attack.flagged
    # the innocent is never flagged with anyone but the attacker who copied them
    assert all(ATTACKER in pair for pair in pairs if INNOCENT in pair)
    # and nobody else is flagged: the class has no other copy
    assert pairs <= {(INNOCENT, ATTACKER)}


def test_without_attack_nothing_is_flagged(klass):
    base, data = klass
    assert similarity.compare(data, base / "subs", components=(COMPONENT, "mask")).pairs == []


def test_helpers_go_with_the_components_that_name_them():
    files = {
        "attention.py": b"from .scaling import scale\n",
        "scaling.py": b"import numeric_tools\n",
        "numeric_tools.py": b"x = 1\n",
        "mask.py": b"def causal_mask(n): ...\n",
        "multi_head.py": b"m = __import__('heads_impl')\n",
        "heads_impl.py": b"y = 2\n",
        "unused.py": b"z = 3\n",
    }
    assert similarity.attribute(files) == {
        "attention": ("attention.py", "numeric_tools.py", "scaling.py", "unused.py"),
        "mask": ("mask.py", "unused.py"),
        "multi_head": ("multi_head.py", "heads_impl.py", "unused.py"),
    }


# --- the fingerprints are copydetect's ------------------------------------------------------------------


def _corpus(subs: Path | None = None) -> list[str]:
    from autograder.bugs import catalog

    texts = [
        p.read_text() for d in ("solutions", "exercises") for p in sorted((KIT / d).glob("*.py"))
    ]
    for bug in catalog():
        source = (KIT / "solutions" / f"{bug.component}.py").read_text()
        if source.count(bug.find) == 1:
            texts.append(bug.apply(source))
    if subs is not None:
        texts += [p.read_text() for p in sorted(subs.glob("*/*.py"))]
    return texts


def test_the_normalised_text_is_copydetects_on_the_kits_code(klass):
    from copydetect.utils import filter_code

    for text in _corpus(klass[0] / "subs"):
        assert fingerprint.normalise(text) == filter_code(text, "x.py", "python")[0]


@given(st.text(alphabet='VF(),.=+-*:[]S"0123456789é', max_size=120))
def test_kgram_hashes_are_crc32(text):
    expected = [zlib.crc32(text[i : i + 25].encode()) for i in range(len(text) - 24)]
    assert fingerprint.kgram_hashes(text).tolist() == expected


@given(st.lists(st.integers(0, 4) | st.integers(0, 2**32), max_size=60))
def test_winnowing_is_copydetects(values):
    from copydetect.utils import winnow

    hashes = np.array(values, dtype=np.int64)
    expected = winnow(hashes, 4, remove_duplicates=False)[1].tolist() if values else []
    assert fingerprint.winnow(hashes).tolist() == expected


# --- the index finds what all pairs find ----------------------------------------------------------------


@pytest.fixture(scope="module")
def larger(tmp_path_factory):
    """A class of 40 with three planted copies and, in three components, near-copies: a student's file with
    the last one, two or three lines of their own helper rewritten (shares of 0.7 to 0.9, about THRESHOLD)."""
    base = tmp_path_factory.mktemp("similarity-40")
    plan = synthetic.make_class(base / "out", 40, seed=7, submissions=base / "subs", copies=3)
    for i, component in enumerate(NEAR):
        for k in (1, 2, 3):
            lines = (base / "subs" / f"student02{i}" / f"{component}.py").read_text().splitlines()
            own = [j for j, line in enumerate(lines) if re.match(r"    y\d+ = ", line)]
            for j in own[-k:]:
                lines[j] = lines[j].split("=")[0] + f"= abs(x) * {j + 7 * k}"
            near = base / "subs" / f"student0{k}{i + 7}" / f"{component}.py"
            near.write_text("\n".join(lines) + "\n")
    return base, plan, collect.read(base / "out")


NEAR = ("multi_head", "kv_cache", "training")


def test_the_index_finds_the_pairs_that_scoring_every_pair_finds(larger):
    base, plan, data = larger
    names = [s.name for s in data.students]
    plans = similarity.plan(names, base / "subs", NAMES)
    found_any = 0
    for component in NAMES:
        prints = similarity.fingerprints(
            plans[component], base / "subs", KIT / "solutions", KIT / "exercises"
        )
        fast = similarity.pairs(component, prints)
        slow = similarity.pairs(component, prints, exhaustive=True)
        key = [(p.a, p.b, p.similarity_a, p.similarity_b, p.shared) for p in fast]
        assert key == [(p.a, p.b, p.similarity_a, p.similarity_b, p.shared) for p in slow]
        found_any += len(fast)
    # not vacuous: every planted copy's files, and a near-copy in each component that has them at least
    copied = sum(
        1 for a, _ in plan.copies for c in NAMES if (base / "subs" / a / f"{c}.py").is_file()
    )
    assert found_any >= copied + len(NEAR) and copied >= 3 * len(NAMES) - 2


def _copydetect_pairs(
    component: str, texts: dict[str, str], monkeypatch
) -> dict[tuple[str, str], tuple]:
    """The report's similarity before the index, as it was: copydetect's fingerprints, every pair."""
    import copydetect.utils
    from copydetect import CodeFingerprint, compare_files
    from copydetect.utils import filter_code, get_document_fingerprints, get_token_coverage

    def crc_kgrams(string, k):
        grams = (string[i : i + k].encode("utf-8") for i in range(len(string) - k + 1))
        return np.fromiter((zlib.crc32(g) for g in grams), dtype=np.int64)

    # the report gave copydetect CRC-32 for Python's salted hash(): the same pairs every run
    monkeypatch.setattr(copydetect.utils, "hashed_kgrams", crc_kgrams)
    stub = (KIT / "exercises" / f"{component}.py").read_text()
    hashes, _ = get_document_fingerprints(filter_code(stub, "s.py", "python")[0], 25, 1)
    boilerplate = np.array(sorted(hashes), dtype=np.int64)
    fps = {}
    for name, text in texts.items():
        fp = CodeFingerprint(name, 25, 4, boilerplate, fp=io.StringIO(text), language="python")
        if fp.hashes:
            fps[name] = fp
    students = [n for n in fps if n != similarity.REFERENCE]
    counts = {}
    for n in students:
        for h in fps[n].hashes:
            counts[h] = counts.get(h, 0) + 1
    common = {h for h, c in counts.items() if c > 0.5 * len(students)}
    for fp in fps.values():
        fp.hashes -= common
        fp.hash_idx = {h: i for h, i in fp.hash_idx.items() if h not in common}
        fp.token_coverage = get_token_coverage(fp.hash_idx, 25, len(fp.filtered_code))
    found = {}
    for a, b in itertools.combinations(sorted(fps), 2):
        if len(fps[a].hashes & fps[b].hashes) * 25 < similarity.MIN_SHARED:
            continue
        overlap, (sim_a, sim_b), _ = compare_files(fps[a], fps[b])
        if overlap >= similarity.MIN_SHARED and max(sim_a, sim_b) >= similarity.THRESHOLD:
            found[(a, b)] = (round(float(sim_a), 9), round(float(sim_b), 9), int(overlap))
    return found


# Known since the merge of issue 31's synthetic class: one identical pair's shared-character count differed from
# copydetect's (270 against 258), for kv_cache until the synthetic class planted one bug a file (27 November) and
# for multi_head until the catalog grew to 225 bugs (28 November, issue 36): neither pair is drawn now, and every
# component agrees. The cause was not found; a pair that shows it again fails here.
@pytest.mark.parametrize(
    "component",
    [*NEAR, "mask"],
)
def test_the_same_pairs_as_copydetect_scoring_every_pair(larger, component, monkeypatch):
    base, plan, data = larger
    names = [s.name for s in data.students]
    sources = similarity.plan(names, base / "subs", (component,))[component]
    texts = {similarity.REFERENCE: (KIT / "solutions" / f"{component}.py").read_text()}
    texts |= {n: similarity.text(base / "subs" / n, f, MAX_FILE_BYTES) for n, f in sources.students}
    old = _copydetect_pairs(component, texts, monkeypatch)
    new = similarity.compare(data, base / "subs", components=(component,)).pairs
    assert {
        (p.a, p.b): (round(p.similarity_a, 9), round(p.similarity_b, 9), p.shared) for p in new
    } == old
    if component in NEAR:  # the copies, and pairs about the threshold: a test that can fail
        assert {tuple(sorted(c)) for c in plan.copies} <= set(old)
        assert any(min(v[:2]) < 0.9 for v in old.values())


def test_a_file_that_is_not_valid_utf8_or_python_is_compared_not_fatal(tmp_path):
    plan = synthetic.make_class(tmp_path / "out", 3, seed=2, submissions=tmp_path / "subs")
    first = next(iter(plan.results))
    (tmp_path / "subs" / first / "mask.py").write_bytes(b"\xff\xfe'''unterminated \x00 \"\n(((")
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "subs" / first / "helper_pipe.py")  # not a regular file: never opened
    found = similarity.compare(
        collect.read(tmp_path / "out"), tmp_path / "subs", components=("mask",)
    )
    assert found.files["mask"] >= 1


def test_the_marked_code_is_the_raw_code_escaped_with_the_copy_marked():
    raw = (KIT / "solutions" / "mask.py").read_text()
    copy = raw.replace("def causal_mask", "# <b>mine</b>\nx = 3 + 4 * 5\n\n\ndef causal_mask")
    a, b = (fingerprint.fingerprint(t, fingerprint.boilerplate("")) for t in (raw, copy))
    marked = fingerprint.mark(b, b.shared_with(a))
    assert "<b>" not in marked and "&lt;b&gt;mine" in marked
    unmarked = marked.replace("<mark>", "").replace("</mark>", "")
    assert html.unescape(unmarked) == copy
    assert (
        "<mark>def causal_mask(size, device=None):" in marked
    )  # a run marked whole, spaces included
    assert (
        "x = 3 + 4 * 5" in unmarked and "<mark>x = 3" not in marked
    )  # the student's own line is not
