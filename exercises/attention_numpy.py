"""Attention in plain NumPy: the formulas with nothing hidden.

    softmax(x)_i = exp(x_i - max(x)) / sum_j exp(x_j - max(x))
    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V
    LayerNorm(x) = (x - mean(x)) / sqrt(var(x) + eps)

Q is (..., m_q, d_k), K is (..., m_k, d_k), V is (..., m_k, d_v): every query row is
compared with every key row, giving an m_q x m_k score matrix, and returns a mix of the value rows.
"""
import math

import numpy as np


def softmax(x, axis=-1):
    """Numerically stable softmax along `axis`.

    softmax(x)_i = exp(x_i - max_j x_j) / sum_j exp(x_j - max_j x_j)

    Subtracting the maximum does not change the result but keeps exp from overflowing.
    A slice that is entirely -inf gives all zeros (not NaN).

    Args:
        x: array of any shape (...), floating dtype.
        axis: the axis to normalise over.

    Returns:
        Array of the same shape and dtype as x; along `axis` the values are >= 0 and sum to 1
        (or are all 0 for an all -inf slice).
    """
    # YOUR CODE HERE
    raise NotImplementedError


def scaled_dot_product_attention(q, k, v, mask=None):
    """Scaled dot-product attention.

    scores  = q @ k^T / sqrt(d_k)                 (masked scores set to -inf)
    weights = softmax(scores, axis=-1)
    output  = weights @ v

    A query row whose keys are all masked gets all-zero weights and an all-zero output.

    Args:
        q: queries, shape (..., m_q, d_k).
        k: keys, shape (..., m_k, d_k).
        v: values, shape (..., m_k, d_v).
        mask: optional bool array broadcastable to (..., m_q, m_k); True = may attend,
            False = blocked.

    Returns:
        (output, weights): output of shape (..., m_q, d_v) and weights of shape (..., m_q, m_k),
        both in the dtype of q.
    """
    # YOUR CODE HERE
    raise NotImplementedError


def layer_norm(x, eps=1e-5):
    """Layer normalisation over the last axis, without learned scale and shift.

    y = (x - mean) / sqrt(var + eps), with mean and the biased variance
    var = mean((x - mean)^2) taken over the last axis.

    Args:
        x: array of shape (..., d), floating dtype.
        eps: small constant added to the variance.

    Returns:
        Array of shape (..., d) and the dtype of x; each row has mean 0 and variance ~1.
    """
    # YOUR CODE HERE
    raise NotImplementedError
