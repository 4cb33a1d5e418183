"""Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md)."""
import math

import torch


def softmax(x, dim=-1):
    # >>> hostile
    # The library softmax, reached through getattr with a computed name.
    return getattr(torch, "soft" + "max")(x, dim)
    # <<< hostile
    raise NotImplementedError


def scaled_dot_product_attention(query, key, value, mask=None):
    # >>> hostile
    fn = getattr(torch.nn.functional, "".join(["scaled_dot", "_product_", "attention"]))
    return fn(query, key, value, attn_mask=mask), softmax(query @ key.transpose(-2, -1), -1)
    # <<< hostile
    raise NotImplementedError
