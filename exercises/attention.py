"""Scaled dot-product attention in PyTorch, written by hand.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

Q is (..., m_q, d_k), K is (..., m_k, d_k), V is (..., m_k, d_v); the scores are
(..., m_q, m_k) and the output (..., m_q, d_v). Any number of leading dims (batch, heads) is allowed.
A bool mask (True = may attend) sets blocked scores to -inf before the softmax.
"""
import math

import torch


def softmax(x, dim=-1):
    """Numerically stable softmax along `dim`, by hand.

    softmax(x)_i = exp(x_i - max_j x_j) / sum_j exp(x_j - max_j x_j)

    A slice that is entirely -inf gives all zeros (not NaN), and no NaN enters the gradient.

    Args:
        x: tensor of any shape (...), floating dtype.
        dim: the dimension to normalise over.

    Returns:
        Tensor of the same shape, dtype and device as x; along `dim` the values are >= 0 and
        sum to 1 (or are all 0 for an all -inf slice).
    """
    # YOUR CODE HERE
    raise NotImplementedError


def scaled_dot_product_attention(query, key, value, mask=None):
    """Scaled dot-product attention.

    scores  = query @ key^T / sqrt(d_k)           (scores where mask is False set to -inf)
    weights = softmax(scores, dim=-1)
    output  = weights @ value

    A query row whose keys are all masked gets all-zero weights and an all-zero output.

    Args:
        query: (..., m_q, d_k).
        key: (..., m_k, d_k).
        value: (..., m_k, d_v).
        mask: optional bool tensor broadcastable to (..., m_q, m_k); True = may attend,
            False = blocked.

    Returns:
        (output, weights): output (..., m_q, d_v) and weights (..., m_q, m_k), with the dtype
        and device of query.
    """
    # YOUR CODE HERE
    raise NotImplementedError
