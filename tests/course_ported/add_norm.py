import torch
import torch.nn as nn


class LayerNorm(nn.Module):
    def __init__(self, dim_embedding, eps=1e-5):
        super(LayerNorm, self).__init__()  # noqa: UP008 - the older spelling, as students write it
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim_embedding))
        self.bias = nn.Parameter(torch.zeros(dim_embedding))

    def forward(self, x):
        media = x.mean(dim=-1, keepdim=True)
        varianza = ((x - media) ** 2).mean(dim=-1, keepdim=True)
        return self.weight * (x - media) / torch.sqrt(varianza + self.eps) + self.bias


class AddNorm(nn.Module):
    def __init__(self, dim_embedding, dropout=0.1):
        super().__init__()
        self.norm = LayerNorm(dim_embedding)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, sublayer_output):
        return self.norm(x + self.dropout(sublayer_output))
