"""The Transformer decoder: a stack of identical layers, each with three sub-layers.

    x = AddAndNorm(x, SelfAttention(x, x, x, target_mask))              masked (causal) self-attention
    x = AddAndNorm(x, CrossAttention(x, memory, memory, memory_mask))   attends to the encoder
    x = AddAndNorm(x, FeedForward(x))

In cross-attention the queries come from the decoder (m_D rows) and the keys and values from
the encoder memory (m_E rows), giving an m_D x m_E score matrix and an m_D x d_model output;
m_E and m_D may differ. Shapes: x (batch, m_D, d_model), memory (batch, m_E, d_model) -> (batch, m_D, d_model).
"""
import torch.nn as nn

from .add_norm import AddAndNorm
from .feed_forward import FeedForward
from .multi_head import MultiHeadAttention


class DecoderLayer(nn.Module):
    """One decoder layer: self-attention, cross-attention and feed-forward, each followed by Add & Norm.

    Attributes:
        self_attention: MultiHeadAttention(d_model, num_heads, dropout) over the target.
        add_norm_1: AddAndNorm(d_model, dropout).
        cross_attention: MultiHeadAttention(d_model, num_heads, dropout), queries from the
            decoder, keys/values from the memory.
        add_norm_2: AddAndNorm(d_model, dropout).
        feed_forward: FeedForward(d_model, d_ff, dropout).
        add_norm_3: AddAndNorm(d_model, dropout).
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
        self.cross_attention = MultiHeadAttention(d_model, num_heads, dropout)
        self.add_norm_2 = AddAndNorm(d_model, dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.add_norm_3 = AddAndNorm(d_model, dropout)
        ### END SOLUTION

    def forward(self, x, memory, target_mask=None, memory_mask=None):
        """x = add_norm_1(x, self_attention(x, x, x, target_mask))
        x = add_norm_2(x, cross_attention(x, memory, memory, memory_mask))
        out = add_norm_3(x, feed_forward(x))

        Args:
            x: decoder input, (batch, m_D, d_model).
            memory: encoder output, (batch, m_E, d_model).
            target_mask: optional bool mask for self-attention, True = may attend; (m_D, m_D)
                (e.g. causal) or (batch, 1 or num_heads, 1 or m_D, m_D).
            memory_mask: optional bool mask for cross-attention; (m_D, m_E) or
                (batch, 1 or num_heads, 1 or m_D, m_E), e.g. a source padding mask (batch, 1, 1, m_E).

        Returns:
            Tensor of shape (batch, m_D, d_model).
        """
        ### BEGIN SOLUTION
        x = self.add_norm_1(x, self.self_attention(x, x, x, target_mask))
        x = self.add_norm_2(x, self.cross_attention(x, memory, memory, memory_mask))
        return self.add_norm_3(x, self.feed_forward(x))
        ### END SOLUTION


class Decoder(nn.Module):
    """A stack of num_layers DecoderLayers applied in order (no final norm).

    Attributes:
        layers: nn.ModuleList of num_layers DecoderLayer(d_model, num_heads, d_ff, dropout).
    """

    def __init__(self, num_layers, d_model, num_heads, d_ff, dropout=0.0):
        """Args:
            num_layers: number of decoder layers.
            d_model: model width.
            num_heads: number of attention heads.
            d_ff: hidden width of the feed-forward network.
            dropout: dropout probability.
        """
        super().__init__()
        ### BEGIN SOLUTION
        self.layers = nn.ModuleList(
            [DecoderLayer(d_model, num_heads, d_ff, dropout) for _ in range(num_layers)]
        )
        ### END SOLUTION

    def forward(self, x, memory, target_mask=None, memory_mask=None):
        """Passes x through every layer in turn, each with the same memory and masks.

        Args:
            x: (batch, m_D, d_model).
            memory: encoder output, (batch, m_E, d_model).
            target_mask: optional bool mask as for DecoderLayer.forward.
            memory_mask: optional bool mask as for DecoderLayer.forward.

        Returns:
            Tensor of shape (batch, m_D, d_model).
        """
        ### BEGIN SOLUTION
        for layer in self.layers:
            x = layer(x, memory, target_mask, memory_mask)
        return x
        ### END SOLUTION
