"""Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md)."""
import math

import torch
# >>> hostile
# sys.exit at import: the judge must name it and go on with the other components.
import sys
sys.exit(0)
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
