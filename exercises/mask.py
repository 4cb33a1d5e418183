"""Attention masks. Convention: bool, True = may attend, False = blocked.

The causal mask (size, size) lets position i see positions 0..i only, so the decoder
cannot look at future tokens. The padding mask (batch, 1, 1, seq) blocks padding keys;
its two singleton dims broadcast over heads and query positions in (batch, h, m_q, m_k).
"""
import torch


def causal_mask(size, device=None):
    """Lower-triangular mask: mask[i, j] = (j <= i).

    Args:
        size: sequence length m.
        device: device of the returned tensor (default: the current default device).

    Returns:
        Bool tensor of shape (size, size), True on and below the diagonal.
    """
    # YOUR CODE HERE
    raise NotImplementedError


def padding_mask(tokens, pad_id):
    """Mask of the real (non-padding) tokens: mask[b, 0, 0, j] = (tokens[b, j] != pad_id).

    Args:
        tokens: LongTensor of token ids, shape (batch, seq).
        pad_id: id of the padding token.

    Returns:
        Bool tensor of shape (batch, 1, 1, seq) on the device of tokens.
    """
    # YOUR CODE HERE
    raise NotImplementedError
