"""The Transformer encoder: a stack of identical layers, each with two sub-layers.

    x = AddAndNorm(x, SelfAttention(x, x, x, mask))
    x = AddAndNorm(x, FeedForward(x))

In self-attention queries, keys and values all come from the same sequence, so the score
matrix is m_E x m_E. Shapes are kept throughout: (batch, m_E, d_model) -> (batch, m_E, d_model).
"""
import torch.nn as nn

from .add_norm import AddAndNorm
from .feed_forward import FeedForward
from .multi_head import MultiHeadAttention


class EncoderLayer(nn.Module):
    """One encoder layer: self-attention and feed-forward, each followed by Add & Norm.

    Attributes:
        self_attention: MultiHeadAttention(d_model, num_heads, dropout).
        add_norm_1: AddAndNorm(d_model, dropout), after self-attention.
        feed_forward: FeedForward(d_model, d_ff, dropout).
        add_norm_2: AddAndNorm(d_model, dropout), after the feed-forward.
    """

    def __init__(self, d_model, num_heads, d_ff, dropout=0.0):
        """Args:
            d_model: model width.
            num_heads: number of attention heads.
            d_ff: hidden width of the feed-forward network.
            dropout: dropout probability used in every sub-module.
        """
        super().__init__()
        ### BEGIN SOLUTION
        self.self_attention = MultiHeadAttention(d_model, num_heads, dropout)
        self.add_norm_1 = AddAndNorm(d_model, dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.add_norm_2 = AddAndNorm(d_model, dropout)
        ### END SOLUTION

    def forward(self, x, mask=None):
        """x = add_norm_1(x, self_attention(x, x, x, mask)); out = add_norm_2(x, feed_forward(x)).

        Args:
            x: (batch, m_E, d_model).
            mask: optional bool mask, True = may attend; (m_E, m_E) or
                (batch, 1 or num_heads, 1 or m_E, m_E), e.g. a padding mask (batch, 1, 1, m_E).

        Returns:
            Tensor of shape (batch, m_E, d_model).
        """
        ### BEGIN SOLUTION
        x = self.add_norm_1(x, self.self_attention(x, x, x, mask))
        return self.add_norm_2(x, self.feed_forward(x))
        ### END SOLUTION


class Encoder(nn.Module):
    """A stack of num_layers EncoderLayers applied in order (no final norm).

    Attributes:
        layers: nn.ModuleList of num_layers EncoderLayer(d_model, num_heads, d_ff, dropout).
    """

    def __init__(self, num_layers, d_model, num_heads, d_ff, dropout=0.0):
        """Args:
            num_layers: number of encoder layers.
            d_model: model width.
            num_heads: number of attention heads.
            d_ff: hidden width of the feed-forward network.
            dropout: dropout probability.
        """
        super().__init__()
        ### BEGIN SOLUTION
        self.layers = nn.ModuleList(
            [EncoderLayer(d_model, num_heads, d_ff, dropout) for _ in range(num_layers)]
        )
        ### END SOLUTION

    def forward(self, x, mask=None):
        """Passes x through every layer in turn, each with the same mask.

        Args:
            x: (batch, m_E, d_model).
            mask: optional bool mask as for EncoderLayer.forward.

        Returns:
            The memory, shape (batch, m_E, d_model).
        """
        ### BEGIN SOLUTION
        for layer in self.layers:
            x = layer(x, mask)
        return x
        ### END SOLUTION
