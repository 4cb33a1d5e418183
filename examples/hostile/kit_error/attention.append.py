# Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md).
# Raise the kit's own StudentError of kind "missing" (which ended a property at its first example and showed
# 3 000 characters of detail) with a long message, and of kind "not_implemented" and "syntax": each a verdict
# only the kit may give. Each becomes the student's own exception, worded by the judge, its text budgeted.
_softmax = softmax


def softmax(x, dim=-1):
    # >>> hostile
    import sys as _sys

    _error = _sys.modules["autograder.student_code"].StudentError
    _kind = ("missing", "not_implemented", "syntax")[int(x.numel()) % 3]
    raise _error(_kind, "KITERROR " * 200, "attention.softmax", "ModuleNotFoundError", "KITDETAIL " * 400)
    # <<< hostile
    return _softmax(x, dim)
