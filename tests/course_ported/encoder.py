import copy
from dataclasses import dataclass

import torch.nn as nn
import torch.nn.functional as F

from .add_norm import AddNorm
from .feed_forward import FeedForward
from .multi_head import MultiHeadAttention


@dataclass
class Configuracion:
    heads: int = 8
    dim_embedding: int = 512
    Nx: int = 6


class EncoderLayer(nn.Module):
    def __init__(self, dim_embedding, heads, d_ff, dropout=0.1):
        super().__init__()
        self.self_attention = MultiHeadAttention(heads, dim_embedding, dropout)
        self.add_norm_1 = AddNorm(dim_embedding, dropout)
        self.feed_forward = FeedForward(dim_embedding, d_ff, dropout)
        self.add_norm_2 = AddNorm(dim_embedding, dropout)

    def forward(self, x, mask=None):
        x = self.add_norm_1(x, self.self_attention(x, x, x, mask))
        return self.add_norm_2(x, F.dropout(self.feed_forward(x), 0.0, self.training))


class Encoder(nn.Module):
    def __init__(self, layer, Nx):
        super().__init__()
        self.layers = nn.ModuleList([copy.deepcopy(layer) for _ in range(Nx)])

    def forward(self, x, mask=None):
        for capa in self.layers:
            x = capa(x, mask)
        return x


if __name__ == "__main__":
    import torch

    config = Configuracion(heads=2, dim_embedding=8, Nx=2)
    encoder = Encoder(EncoderLayer(config.dim_embedding, config.heads, 16), config.Nx)
    print(encoder(torch.rand(1, 3, 8)).shape)
