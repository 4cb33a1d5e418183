from typing import Optional

import torch
import torch.nn as nn

from .attention import scaled_dot_product_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, heads, dim_embedding, dropout=0.0):
        super().__init__()
        assert dim_embedding % heads == 0, "dim_embedding debe ser divisible entre heads"
        self.heads = heads
        self.num_heads = heads
        self.dim_embedding = dim_embedding
        self.d_k = dim_embedding // heads
        self.w_q = nn.Linear(dim_embedding, dim_embedding)  # proyection_Q
        self.w_k = nn.Linear(dim_embedding, dim_embedding)  # proyection_K
        self.w_v = nn.Linear(dim_embedding, dim_embedding)  # proyection_V
        self.w_o = nn.Linear(dim_embedding, dim_embedding)
        self.dropout = nn.Dropout(dropout)

    def dividir(self, x):
        batch, longitud, _dim = x.shape
        return x.view(batch, longitud, self.heads, self.d_k).transpose(1, 2)

    def forward(self, query, key, value, mask: Optional[torch.Tensor] = None):  # noqa: UP045
        Q, K, V = (
            self.dividir(self.w_q(query)),
            self.dividir(self.w_k(key)),
            self.dividir(self.w_v(value)),
        )
        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)
        salidas = []
        pesos = []
        for h in range(self.heads):  # una cabeza cada vez, como en el cuaderno
            m = None if mask is None else mask[:, 0]
            salida, peso = scaled_dot_product_attention(Q[:, h], K[:, h], V[:, h], m)
            salidas.append(salida)
            pesos.append(peso)
        concatenado = torch.cat(salidas, dim=-1)
        self.attention_weights = torch.stack(pesos, dim=1)
        return self.w_o(self.dropout(concatenado))

    def __repr__(self):
        return f"{self.__class__.__name__}(heads={self.heads}, dim_embedding={self.dim_embedding})"
