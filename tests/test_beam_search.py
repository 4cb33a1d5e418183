"""Beam search's rules, one diagnosis each (issues 21 and 22 item 5), and a beam size that is no signature of the
checking side (issue 20 item 5). About 6 s of CPU: two hostile folders' beam_search suites, five properties."""

import hypothesis
import pytest
from hypothesis import strategies as st

from autograder import KIT, i18n, registry
from autograder.bugs import catalog, make_submission
from autograder.judge import sample
from autograder.properties import beam_search
from autograder.properties.models.beam_search import BeamMistake, exact_beam
from autograder.properties.models.transformer import ExpectedTransformer
from autograder.student_code import InProcessStudentCode
from autograder.suite import core


def outcomes(folder, names=None):
    code = InProcessStudentCode(folder)
    props = [
        p
        for p in registry.load(include_hidden=True)
        if p.component == "beam_search" and (names is None or p.name in names)
    ]
    return core.require_behaviour([core.run_property(p, code) for p in props])


def test_exact_beam_is_far_narrower_than_every_hypothesis():
    assert [exact_beam(v, 2) for v in (3, 4, 5)] == [1, 1, 1]
    assert [exact_beam(v, 3) for v in (3, 4, 5)] == [3, 4, 5]
    assert exact_beam(3, 4) == 7 < 3**3
    assert exact_beam(4, 4) == 13 < 4**3


def test_the_enumeration_draws_beams_narrower_than_the_old_signature():
    """Issue 20 item 5: the drawn beams include ones below vocab ** (max_len - 1), on several shapes."""
    seen = set()

    @hypothesis.settings(max_examples=60, database=None, derandomize=True)
    @hypothesis.given(inputs=beam_search.wide_cases(penalties=(0.0, 1.0)), data=st.data())
    def draw(inputs, data):
        s, v = inputs.settings, inputs.case.tgt_vocab
        assert exact_beam(v, s.max_len) <= s.beam_size
        seen.add((v, s.max_len, s.beam_size < v ** (s.max_len - 1), s.length_penalty > 0))

    draw()
    assert {(v, narrow) for v, _, narrow, _ in seen} >= {(3, True), (4, True), (5, True)}
    assert any(penalised for *_, penalised in seen)


def test_greedy_unless_the_beam_is_enumerable_earns_what_plain_greedy_earns(tmp_path):
    """examples/hostile/greedy_unless_enumerable: the real search only where beam_size >= vocab ** (max_len - 1),
    greedy decoding elsewhere. It earns exactly its control's (greedy alone) 12 of 19 points (issue 33 added two
    visible points, eval mode and src_mask, that greedy decoding earns honestly; issue 35 weighed beam_size=1 at
    3 and added the narrow beams that prune for good, 3, see the next tests)."""
    hostile = outcomes(sample.make("hostile:greedy_unless_enumerable", tmp_path / "h"))
    control = outcomes(sample.make("control:greedy_unless_enumerable", tmp_path / "c"))
    scored = [sum(o.score for o in out) for out in (hostile, control)]
    assert scored == [12.0, 12.0]
    assert [o.passed for o in hostile] == [o.passed for o in control]
    failed = {o.property.name for o in hostile if not o.passed}
    assert "beam_search_finds_best_by_enumeration" in failed


def test_a_brute_force_earns_no_more_than_greedy_decoding(tmp_path):
    """examples/hostile/enumerate_every_hypothesis: the docstring's search with a beam as wide as every hypothesis
    (exhaustive enumeration: nothing pruned). Issue 35: the exercise is the pruning, so the narrow beams
    (beam_size=1 is greedy: 3 points; the recorded narrow searches: 2) weigh at least as much as the wide ones
    enumeration passes (1 + 1, and the finished hypotheses' 1), and the brute force earns less than greedy
    decoding, its control: 12 of 19."""
    brute = outcomes(sample.make("hostile:enumerate_every_hypothesis", tmp_path / "h"))
    greedy = outcomes(sample.make("control:enumerate_every_hypothesis", tmp_path / "c"))
    assert sum(o.score for o in brute) <= sum(o.score for o in greedy) == 12.0
    narrow = {
        "beam_search_size_one_is_greedy",
        "beam_search_recorded_narrow_searches",
        "beam_search_narrow_beam_prunes_for_good",
    }
    wide = {
        "beam_search_finds_best_by_enumeration",
        "beam_search_finds_best_under_length_penalty",
        "beam_search_finished_hypotheses_not_extended",
    }
    points = {o.property.name: o.property.points for o in brute}
    assert sum(points[n] for n in narrow) >= sum(points[n] for n in wide)
    assert narrow <= {o.property.name for o in brute if not o.passed}


def test_a_brute_force_with_greedy_for_one_earns_no_more_than_greedy_decoding(tmp_path):
    """examples/hostile/enumerate_beyond_one: greedy decoding for beam_size=1, exhaustive enumeration for every
    wider beam, so it passes what greedy decoding passes and what the wide beams' enumeration passes. A narrow
    beam prunes for good (beam_size 2 and 3 on cases where the best of all starts with a token the first step
    dropped: 3 points that greedy decoding earns and enumeration does not), so it earns no more than greedy."""
    hybrid = outcomes(sample.make("hostile:enumerate_beyond_one", tmp_path / "h"))
    greedy = outcomes(sample.make("control:enumerate_beyond_one", tmp_path / "c"))
    assert sum(o.score for o in hybrid) <= sum(o.score for o in greedy)
    (pruned,) = [o for o in hybrid if o.property.name == "beam_search_narrow_beam_prunes_for_good"]
    assert not pruned.passed and "best hypothesis of all" in pruned.hint


# (bug, the visible property whose hint names it from the enumeration or the score formula alone)
WITHOUT_THE_GRADED_SIDE = [
    ("final_choice_by_raw_logp", "beam_search_finds_best_under_length_penalty"),
    ("stops_when_top_finished", "beam_search_finds_best_under_length_penalty"),
    ("length_counts_bos", "beam_search_scores_are_log_prob_sums"),
    ("finished_length_grows", "beam_search_scores_are_log_prob_sums"),
    ("returns_raw_logp", "beam_search_scores_are_log_prob_sums"),
]


@pytest.mark.parametrize("bug_name, prop_name", WITHOUT_THE_GRADED_SIDE)
def test_the_bundle_names_each_rule_without_the_mistake_model(
    bug_name, prop_name, tmp_path, monkeypatch
):
    """The student bundle has no graded side (no mistake model of the search): the enumeration and the score
    formulas still name the rule, in English and in Spanish."""
    monkeypatch.setattr(beam_search, "mistake_models", None)
    bug = next(b for b in catalog() if b.id == f"beam_search:{bug_name}")
    folder = make_submission(bug, KIT / "solutions", tmp_path / "sub")
    for lang in ("en", "es"):
        with i18n.chosen(lang):
            (outcome,) = outcomes(folder, {prop_name})
            assert not outcome.passed
            hint = {
                "final_choice_by_raw_logp": beam_search.FINAL_CHOICE_HINT,
                "stops_when_top_finished": beam_search.STOP_HINT,
                "length_counts_bos": beam_search.LENGTH_COUNT_HINT,
                "finished_length_grows": beam_search.LENGTH_GROWS_HINT,
                "returns_raw_logp": beam_search.RAW_SCORE_HINT,
            }[bug_name]
            assert i18n._(hint) in outcome.hint, (lang, outcome.hint)
        if lang == "en":
            assert bug.hint.lower() in outcome.hint.lower()


def test_the_recorded_searches_are_the_graded_sides():
    """The visible property's recorded results (literals: the bundle runs no search) are what the graded side's
    beam search by hand returns on the same cases, so a change to the cases or the model cannot leave them stale."""
    from autograder.properties.models.beam_search import expected_beam_search

    for inputs, want in beam_search.RECORDED + beam_search.PRUNED:
        w = ExpectedTransformer(inputs.state(), inputs.case.config)
        assert expected_beam_search(w, inputs)[0] == list(want), inputs


def test_every_mistake_of_the_search_has_its_hint():
    """The graded search makes each BeamMistake on purpose; a flag without a hint would never name anything."""
    from autograder.properties.models.beam_search import mistake_hints

    assert set(mistake_hints()) == {m for m in BeamMistake if m != BeamMistake.NONE}


def test_the_docstring_answers_the_edge_cases():
    """Issue 22 item 10: max_len=1, ties, beam_size larger than the vocabulary."""
    text = (KIT / "exercises" / "beam_search.py").read_text()
    for words in ("max_len = 1", "Ties", "larger than\nthe vocabulary", "finished or not"):
        assert words in text, words


def test_the_pruned_cases_prune_the_best_of_all():
    """PRUNED's cases are what their property says: in every row the best hypothesis of all (exhaustive
    enumeration) is not the beam's, and greedy decoding's is."""
    import dataclasses

    from autograder.properties.models.beam_search import expected_beam_search

    for inputs, want in beam_search.PRUNED:
        w = ExpectedTransformer(inputs.state(), inputs.case.config)
        for row, beam in enumerate(want):
            assert beam_search.enumerate_row(w, inputs, row).best()[0] != beam
        one = dataclasses.replace(
            inputs, settings=dataclasses.replace(inputs.settings, beam_size=1)
        )
        assert expected_beam_search(w, one)[0] == list(want)
