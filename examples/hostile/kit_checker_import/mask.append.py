# >>> hostile
# Written to attack the judge (docs/judge.md). The kit's own checker, found in sys.modules where the self-check
# runs (in-process, the kit is loaded): check gave the full mask; grade, whose worker has no checker to find,
# gave the properties that never reached it.
import sys as _sys


def causal_mask(size, device=None):
    return _sys.modules["autograder.suite.expected_values"].expected_causal_mask(size).to(device)


# <<< hostile
