"""Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md)."""
import torch
import torch.nn as nn

# >>> hostile
# A memory bomb at import, bounded at 6 GiB (what the machine survives even if the limit failed): the worker's
# address-space limit (2 GiB) refuses the first 3 GiB block at once, with a MemoryError. (Blocks of 256 MiB
# filled up to the limit raced the 3 s CPU limit of an import: zeroing 2 GiB took longer on a loaded machine,
# and the verdict became a timeout, 0 points either way.)
_hoard = []
for _ in range(2):
    _hoard.append(bytearray(3 << 30))
del _hoard
# <<< hostile


class LayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias


class AddAndNorm(nn.Module):
    def __init__(self, d_model, dropout=0.0):
        super().__init__()
        self.norm = LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, sublayer_output):
        return self.norm(x + self.dropout(sublayer_output))
