"""Token embeddings and sinusoidal positional encodings.

    PE[p, 2i]   = sin(p / 10000^(2i / d_model))
    PE[p, 2i+1] = cos(p / 10000^(2i / d_model))
    input = TokenEmbedding(tokens) + PE[:seq] = embedding(tokens) * sqrt(d_model) + PE[:seq]

Attention itself ignores order; adding PE gives every position a distinct signature.
Shapes: tokens (batch, seq) -> embeddings (batch, seq, d_model); PE is (max_len, d_model).
"""
import math

import torch
import torch.nn as nn


def sinusoidal_encoding(max_len, d_model):
    """The sinusoidal position table.

    PE[p, 2i] = sin(p / 10000^(2i / d_model)),  PE[p, 2i+1] = cos(p / 10000^(2i / d_model)),
    for p = 0..max_len-1; with an odd d_model the last column is a sin.

    Args:
        max_len: number of positions.
        d_model: encoding width (may be odd).

    Returns:
        Tensor of shape (max_len, d_model) in torch.get_default_dtype().
    """
    ### BEGIN SOLUTION
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # (max_len, 1)
    even = torch.arange(0, d_model, 2, dtype=torch.float64)  # the 2i values
    angle = position / torch.pow(10000.0, even / d_model)  # (max_len, ceil(d_model / 2))
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe.to(torch.get_default_dtype())
    ### END SOLUTION


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal encoding to a sequence of embeddings, then applies dropout.

    Attributes:
        pe: buffer of shape (1, max_len, d_model), sinusoidal_encoding(max_len, d_model).
        dropout: nn.Dropout.
    """

    def __init__(self, d_model, max_len=5000, dropout=0.0):
        """Args:
            d_model: model width.
            max_len: longest sequence supported.
            dropout: dropout probability on the sum.
        """
        super().__init__()
        ### BEGIN SOLUTION
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model).unsqueeze(0))
        ### END SOLUTION

    def forward(self, x):
        """out = dropout(x + pe[:, :seq]), pe cast to x's dtype.

        Args:
            x: (batch, seq, d_model), seq <= max_len.

        Returns:
            Tensor of shape (batch, seq, d_model).
        """
        ### BEGIN SOLUTION
        return self.dropout(x + self.pe[:, : x.size(1)].to(x.dtype))
        ### END SOLUTION


class TokenEmbedding(nn.Module):
    """Learned token embedding scaled by sqrt(d_model).

    Attributes:
        embedding: nn.Embedding(vocab_size, d_model).
        d_model: model width.
    """

    def __init__(self, vocab_size, d_model):
        """Args:
            vocab_size: number of token ids.
            d_model: model width.
        """
        super().__init__()
        ### BEGIN SOLUTION
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.d_model = d_model
        ### END SOLUTION

    def forward(self, tokens):
        """out = embedding(tokens) * sqrt(d_model).

        Args:
            tokens: LongTensor of token ids, (batch, seq).

        Returns:
            Tensor of shape (batch, seq, d_model).
        """
        ### BEGIN SOLUTION
        return self.embedding(tokens) * math.sqrt(self.d_model)
        ### END SOLUTION
