"""Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md)."""
import torch

# >>> hostile
# 200 MB of output at import: through print, sys.stderr and straight to file descriptors 1 and 2. Captured
# and trimmed, never passed through; the masks below are correct and earn their points.
import os
import sys
import warnings
_mb = "x" * (1 << 20)
for _ in range(100):
    print(_mb)
    sys.stderr.write(_mb)
for _ in range(50):
    for _fd in (1, 2):
        try:
            os.write(_fd, _mb.encode())
        except OSError:
            pass
warnings.warn("a warning at import")
# <<< hostile


def causal_mask(size, device=None):
    # >>> hostile
    print("causal_mask called", size)
    warnings.warn("a warning in a call")
    # <<< hostile
    return torch.tril(torch.ones(size, size, dtype=torch.bool, device=device))


def padding_mask(tokens, pad_id):
    return (tokens != pad_id)[:, None, None, :]
