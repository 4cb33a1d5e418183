"""Incremental decoding with a KV cache.

greedy_decode (transformer.py) runs the whole decoder on all t tokens at every step, so step t redoes the work of
every earlier step. But in a decoder layer position p sees positions <= p only: the keys and values of earlier
positions never change once computed. The cache keeps them, per layer, and a step computes the new positions only:

    start(src):   memory = model.encode(src, src_mask)                                    (batch, m_E, d_model)
                  for every layer i, once per sequence:
                      memory_keys[i]   = split_heads(cross_attention.w_k(memory))         (batch, h, m_E, d_k)
                      memory_values[i] = split_heads(cross_attention.w_v(memory))         (batch, h, m_E, d_k)
                  self_keys[i] = self_values[i] = empty                                   (batch, h, 0, d_k)

    step(tokens): n new tokens at positions t..t+n-1 (t = length, the positions already cached)
                  x = dropout(tgt_embedding(tokens) + pe[:, t : t+n])                     (batch, n, d_model)
                      pe and dropout are the model's positional_encoding.pe (the buffer, (1, max_len, d_model))
                      and positional_encoding.dropout: positional_encoding(x) itself would add rows 0..n-1
                  for every layer i:
                      self_keys[i]   = cat(self_keys[i],   split_heads(self_attention.w_k(x)))   (batch, h, t+n, d_k)
                      self_values[i] = cat(self_values[i], split_heads(self_attention.w_v(x)))   (batch, h, t+n, d_k)
                      x = add_norm_1(x, attend(self_attention, x, self_keys[i], self_values[i], mask))
                      x = add_norm_2(x, attend(cross_attention, x, memory_keys[i], memory_values[i], memory_mask))
                      x = add_norm_3(x, feed_forward(x))
                  logits = generator(x)                                                   (batch, n, tgt_vocab_size)

    mask[j, p] = p <= t + j   (n, t+n): new row j sees every cached position and the new ones up to itself.

The logits equal model(src, tgt, src_mask, causal_mask) at the same positions. One single-token step costs
O(d_model^2) per layer for the new position's projections and feed-forward, plus O(t * d_model) for its attention
over the t cached positions: linear in t, where recomputing the prefix costs O(t * d_model^2 + t^2 * d_model).

How the check knows the cache is used: it changes the model's weights between calls (model.load_state_dict), as a
training step would. What start computed (the memory, its keys and values) and what earlier steps computed (their
keys and values) must stay as they were; each step computes its new positions with the model's weights as they
are now. Recomputing the prefix or the memory follows the new weights, a copy of the model taken at start misses
them: both lose those points. No work is counted or timed.
"""
import torch

from .attention import scaled_dot_product_attention
from .mask import causal_mask


def split_heads(x, num_heads):
    """(batch, m, d_model) -> (batch, num_heads, m, d_k), d_k = d_model // num_heads; head i holds columns
    i*d_k:(i+1)*d_k, as in MultiHeadAttention.

    Args:
        x: (batch, m, d_model).
        num_heads: h.

    Returns:
        Tensor of shape (batch, num_heads, m, d_k).
    """
    # YOUR CODE HERE
    raise NotImplementedError


def merge_heads(x):
    """(batch, h, m, d_k) -> (batch, m, h * d_k): the inverse of split_heads.

    Args:
        x: (batch, h, m, d_k).

    Returns:
        Tensor of shape (batch, m, h * d_k).
    """
    # YOUR CODE HERE
    raise NotImplementedError


def attend(mha, query, keys, values, mask=None):
    """Multi-head attention of `query` over keys and values already projected and split by heads.

    q = split_heads(mha.w_q(query)); weights = softmax(q keys^T / sqrt(d_k)) (masked where mask is False);
    output = mha.w_o(merge_heads(mha.dropout(weights) @ values)). Equals mha(query, K, V, mask) when
    keys = split_heads(mha.w_k(K)) and values = split_heads(mha.w_v(V)). Use your own
    scaled_dot_product_attention (attention.py) for the weights. attend does not store the weights:
    mha.attention_weights is left as it was (nothing reads it during cached decoding).

    Args:
        mha: a MultiHeadAttention (its w_q, w_o, num_heads, dropout are used).
        query: (batch, n, d_model).
        keys: (batch, h, m_k, d_k).
        values: (batch, h, m_k, d_k).
        mask: optional bool mask, True = may attend, broadcastable to (batch, h, n, m_k).

    Returns:
        Tensor of shape (batch, n, d_model).
    """
    # YOUR CODE HERE
    raise NotImplementedError


class CachedDecoder:
    """Incremental decoding of a Transformer (transformer.py) with a cache of keys and values.

    Not an nn.Module: it holds no weights of its own, it uses the model's (its decoder layers' self_attention
    and cross_attention projections, add_norm_1/2/3, feed_forward; the model's tgt_embedding,
    positional_encoding and generator). It runs the model as it is: put the model in eval mode and use
    torch.no_grad() around it for decoding.

    Attributes:
        model: the Transformer.
        memory: the encoder output of the sequence being decoded, (batch, m_E, d_model); None before start.
        memory_mask: the src_mask given to start (None, or a padding mask (batch, 1, 1, m_E)).
        memory_keys, memory_values: lists of num_layers tensors (batch, h, m_E, d_k): each layer's
            cross-attention keys and values of the memory, computed once in start.
        self_keys, self_values: lists of num_layers tensors (batch, h, length, d_k): each layer's
            self-attention keys and values of the positions decoded so far.
        length: the number of target positions in the cache (0 after start).
    """

    def __init__(self, model):
        """Args:
            model: a Transformer.
        """
        # YOUR CODE HERE
        raise NotImplementedError

    def start(self, src, src_mask=None):
        """Encode a new batch of sequences and reset the cache: compute every layer's memory keys and values once,
        here (not lazily in the first step: the check may change the model's weights right after start), empty the
        self-attention cache, length = 0.

        Args:
            src: LongTensor of source ids, (batch, m_E).
            src_mask: optional padding mask (batch, 1, 1, m_E), True = may attend; it serves the encoder and every
                cross-attention of the later steps.

        Returns:
            The memory, (batch, m_E, d_model).
        """
        # YOUR CODE HERE
        raise NotImplementedError

    def step(self, tokens):
        """Decode the next n target tokens (positions length..length+n-1), append their keys and values to the
        cache, and return their logits.

        The new tokens get tgt_embedding, then the rows length..length+n-1 of model.positional_encoding.pe and
        model.positional_encoding.dropout (see the module docstring). Only the new positions are computed, with
        the model's weights as they are now; the cached keys and values are used as they were stored, even if
        the weights changed since (the check does change them between steps).

        Args:
            tokens: LongTensor of target ids, (batch, n), n >= 1 (the first step usually holds bos).

        Returns:
            Logits of shape (batch, n, tgt_vocab_size): row j scores the token after position length+j, as
            model(src, tgt, src_mask, causal_mask) does for tgt = every token given so far.
        """
        # YOUR CODE HERE
        raise NotImplementedError


def cached_greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None):
    """greedy_decode (transformer.py) with a CachedDecoder: the same tokens, one new position per step.

    decoder = CachedDecoder(model); decoder.start(src, src_mask); the first step feeds bos, each later step the
    token chosen last: next = argmax(decoder.step(last)[:, -1]). A row that has produced eos_id keeps getting
    eos_id; decoding stops once every row has, or at max_len tokens. Runs without gradients, in eval mode, and
    restores the model's train/eval mode afterwards.

    Args:
        model: a Transformer.
        src: LongTensor of source ids, (batch, m_E).
        max_len: maximum output length, counting the bos token.
        bos_id: start token id.
        eos_id: end token id.
        src_mask: optional padding mask for the source, (batch, 1, 1, m_E).

    Returns:
        LongTensor of shape (batch, L), L <= max_len, equal to greedy_decode(model, src, max_len, bos_id, eos_id,
        src_mask).
    """
    # YOUR CODE HERE
    raise NotImplementedError
