"""The hint corpus of issue 34 (benchmarks/hint_corpus.py) stays runnable: every case's mistake applies to the
reference once, changes it, and names a component; every marker is the words of a hint the kit says (so that the
Spanish measure can find its translation). The measure itself runs the bundle (minutes): docs/selfcheck.md."""

from __future__ import annotations

import sys

import pytest

from autograder import KIT, catalogs
from autograder.components import NAMES

sys.path.insert(0, str(KIT / "benchmarks"))
import hint_corpus


@pytest.mark.parametrize("case", hint_corpus.CORPUS, ids=lambda c: c.id)
def test_each_case_is_the_reference_with_one_mistake(tmp_path, case):
    assert case.component in NAMES
    folder = hint_corpus.apply(case, KIT / "solutions", tmp_path / "sub")
    changed = (folder / f"{case.component}.py").read_text()
    assert changed != (KIT / "solutions" / f"{case.component}.py").read_text()


def test_the_corpus_spans_the_components_and_is_the_issues_size():
    cases = hint_corpus.CORPUS
    assert 30 <= len(cases) <= 45 and len({c.id for c in cases}) == len(cases)
    assert len({c.component for c in cases}) >= 12


def test_each_marker_is_a_kit_message():
    ids = [str(m.id) for m in catalogs.read("es") if m.id]
    missing = [c.id for c in hint_corpus.CORPUS if not any(c.marker in i for i in ids)]
    assert not missing, missing
