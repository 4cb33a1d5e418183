"""Multi-head attention: h attention heads run side by side on slices of d_model.

    head_i = Attention(Q W_q[:, i], K W_k[:, i], V W_v[:, i])      (each slice is d_k = d_model / h wide)
    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W_o

query is (batch, m_q, d_model), key and value are (batch, m_k, d_model). After projection the
heads are split to (batch, h, m, d_k), attention gives (batch, h, m_q, d_k) and weights
(batch, h, m_q, m_k), and the heads are merged back to (batch, m_q, d_model).
"""
import torch.nn as nn

from .attention import scaled_dot_product_attention


class MultiHeadAttention(nn.Module):
    """Multi-head attention with learned projections w_q, w_k, w_v, w_o.

    Attributes:
        w_q, w_k, w_v, w_o: nn.Linear(d_model, d_model, bias=bias); head i uses columns
            i*d_k:(i+1)*d_k of the w_q, w_k, w_v outputs.
        num_heads: h.
        d_k: d_model // num_heads, the width of one head.
        dropout: nn.Dropout applied to the attention weights.
        attention_weights: weights of the last forward before dropout,
            (batch, num_heads, m_q, m_k), detached; None before the first forward.
    """

    def __init__(self, d_model, num_heads, dropout=0.0, bias=True):
        """Args:
            d_model: model width; must be divisible by num_heads (else ValueError).
            num_heads: number of heads h.
            dropout: dropout probability on the attention weights.
            bias: whether the four projections have a bias.
        """
        super().__init__()
        # YOUR CODE HERE
        raise NotImplementedError

    def forward(self, query, key, value, mask=None):
        """Project, split into heads, attend, merge the heads, project out.

        q, k, v = w_q(query), w_k(key), w_v(value), each reshaped to (batch, h, m, d_k)
        weights = softmax(q k^T / sqrt(d_k))   (masked where mask is False), stored detached
        output  = w_o(merge_heads(dropout(weights) @ v))

        Args:
            query: (batch, m_q, d_model).
            key: (batch, m_k, d_model).
            value: (batch, m_k, d_model).
            mask: optional bool mask, True = may attend; (m_q, m_k) or
                (batch, 1 or num_heads, 1 or m_q, m_k), broadcast against (batch, h, m_q, m_k).

        Returns:
            Tensor of shape (batch, m_q, d_model).
        """
        # YOUR CODE HERE
        raise NotImplementedError
