"""Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md)."""
import math

import torch


def softmax(x, dim=-1):
    # >>> hostile
    # The library softmax, called directly.
    return torch.softmax(x, dim=dim)
    # <<< hostile
    raise NotImplementedError


def scaled_dot_product_attention(query, key, value, mask=None):
    # >>> hostile
    import torch.nn.functional as F
    output = F.scaled_dot_product_attention(query, key, value, attn_mask=mask)
    return output, softmax(query @ key.transpose(-2, -1) / math.sqrt(query.size(-1)), -1)
    # <<< hostile
    raise NotImplementedError
