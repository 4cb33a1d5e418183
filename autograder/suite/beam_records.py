"""beam_search's recorded searches: literal results of the reference on fixed cases, where only a search knows
what a narrow beam keeps (the checking side runs none, issue 18; tests/test_beam_search.py checks each against the
graded side's search, so a change to the cases or the model cannot leave them stale). A literal list of tokens
gives no search away."""

from __future__ import annotations

from .beams import BeamInputs, BeamSettings
from .decoding import fixed_case

# A beam that keeps every hypothesis until the last step never lets the ranking decide (the last step's new
# hypotheses all have one length T), so the ranking by logp / T ** length_penalty shows only where a narrow beam
# prunes, and only a search knows what a narrow beam keeps. The checking side runs none (issue 18): these results
# were recorded from the reference (tests/test_beam_search.py checks them against the graded side's search). A
# literal list of tokens gives no search away. The cases are beam_search_equals_expected's issue-21 examples: in
# them the ranking, the stopping rules, the final choice, the first step's empty slots, the held hypothesis's cost
# and the mask's copies per beam each change the result.
RECORDED = (
    (
        BeamInputs(
            fixed_case(12, b=3, me=3, vocab=3, n=1),
            BeamSettings(
                max_len=6, bos_id=2, eos_id=1, beam_size=3, length_penalty=1.5, eos_bias=1.0
            ),
        ),
        ((2, 2, 2, 2, 2, 2), (2, 2, 2, 2, 2, 1), (2, 2, 2, 2, 2, 2)),
    ),
    (
        BeamInputs(
            fixed_case(34, b=2, me=3, vocab=5, n=1),
            BeamSettings(
                max_len=5, bos_id=3, eos_id=0, beam_size=2, length_penalty=0.5, eos_bias=1.0
            ),
        ),
        ((3, 0), (3, 0)),
    ),
    (
        BeamInputs(
            fixed_case(10, b=3, me=3, vocab=5, n=1),
            BeamSettings(
                max_len=5, bos_id=3, eos_id=4, beam_size=3, length_penalty=2.5, eos_bias=1.5
            ),
        ),
        ((3, 0, 0, 4), (3, 0, 0, 0, 4), (3, 0, 0, 0, 4)),
    ),
    (
        BeamInputs(
            fixed_case(5, b=3, me=5, lengths=[2, 5, 3]),
            BeamSettings(max_len=6, bos_id=0, eos_id=3, beam_size=2, length_penalty=0.6),
        ),
        ((0, 5, 0, 5, 0, 0), (0, 3), (0, 5, 0, 0, 5, 0)),
    ),
)


# A narrow beam prunes for good, which is the exercise: on these cases the best hypothesis of all (found by
# exhaustive enumeration, in every row) starts with a token the beam dropped at its first step, and the beam's
# best is greedy decoding's (issue 35: a brute force, or a brute force with greedy decoding for beam_size=1,
# earns no more than greedy decoding). Found by searching seeds with the graded side's search; beam_size 3 on the
# first case reaches the best of all, which is why its beam is 2.
PRUNED = (
    (
        BeamInputs(
            fixed_case(6, b=2, me=3, vocab=4, n=1),
            BeamSettings(
                max_len=4, bos_id=3, eos_id=0, beam_size=2, length_penalty=0.0, eos_bias=1.0
            ),
        ),
        ((3, 1, 1, 1), (3, 1, 1, 1)),
    ),
    (
        BeamInputs(
            fixed_case(22, b=2, me=3, vocab=5, n=1),
            BeamSettings(max_len=5, bos_id=4, eos_id=0, beam_size=3, length_penalty=0.0),
        ),
        ((4, 3, 2, 3, 2), (4, 3, 2, 3, 3)),
    ),
)
