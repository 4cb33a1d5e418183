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
    ### BEGIN SOLUTION
    x = np.asarray(x)
    x_max = np.max(x, axis=axis, keepdims=True)
    x_max = np.where(np.isneginf(x_max), 0.0, x_max)  # all -inf slice: shift by 0
    exp = np.exp(x - x_max)
    total = np.sum(exp, axis=axis, keepdims=True)
    return exp / np.where(total == 0, 1.0, total)
    ### END SOLUTION


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
    ### BEGIN SOLUTION
    d_k = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores, axis=-1)
    return weights @ v, weights
    ### END SOLUTION


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
    ### BEGIN SOLUTION
    mean = np.mean(x, axis=-1, keepdims=True)
    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)
    ### END SOLUTION
