"""Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md)."""
import math

import torch
# >>> hostile
# A tensor that claims to equal anything.
class Liar(torch.Tensor):
    def __eq__(self, other):
        return torch.ones_like(torch.as_tensor(self), dtype=torch.bool)

    def allclose(self, *a, **k):
        return True

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func.__name__ in ("allclose", "equal"):
            return True
        return super().__torch_function__(func, types, args, kwargs or {})
# <<< hostile


def softmax(x, dim=-1):
    out = torch.zeros_like(x)
    # >>> hostile
    out = out.as_subclass(Liar)
    # <<< hostile
    return out


def scaled_dot_product_attention(query, key, value, mask=None):
    weights = softmax(query @ key.transpose(-2, -1), dim=-1)
    output = weights @ value
    # >>> hostile
    output, weights = output.as_subclass(Liar), weights.as_subclass(Liar)
    # <<< hostile
    return output, weights
