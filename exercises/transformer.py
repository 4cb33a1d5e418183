"""The full encoder-decoder Transformer and greedy decoding.

    memory = Encoder(PE(src_embedding(src)), src_mask)                               (batch, m_E, d_model)
    hidden = Decoder(PE(tgt_embedding(tgt)), memory, target_mask, src_mask)          (batch, m_D, d_model)
    logits = generator(hidden)                                                        (batch, m_D, tgt_vocab_size)

src is (batch, m_E) and tgt (batch, m_D), both LongTensors of token ids. The logits at position t
score the token that follows tgt[:, :t+1]; greedy decoding feeds back the argmax one token at a time.
"""
import torch
import torch.nn as nn

from .decoder import Decoder
from .encoder import Encoder
from .mask import causal_mask
from .positional_encoding import PositionalEncoding, TokenEmbedding


class Transformer(nn.Module):
    """Encoder-decoder Transformer (post-norm, as in "Attention Is All You Need").

    Attributes:
        src_embedding: TokenEmbedding(src_vocab_size, d_model).
        tgt_embedding: TokenEmbedding(tgt_vocab_size, d_model).
        positional_encoding: PositionalEncoding(d_model, max_len, dropout), shared by both sides.
        encoder: Encoder(num_layers, d_model, num_heads, d_ff, dropout).
        decoder: Decoder(num_layers, d_model, num_heads, d_ff, dropout).
        generator: nn.Linear(d_model, tgt_vocab_size), hidden states -> logits.
    """

    def __init__(self, src_vocab_size, tgt_vocab_size, d_model=512, num_heads=8, num_layers=6,
                 d_ff=2048, dropout=0.1, max_len=5000):
        """Args:
            src_vocab_size: number of source token ids.
            tgt_vocab_size: number of target token ids.
            d_model: model width.
            num_heads: number of attention heads.
            num_layers: number of layers in the encoder and in the decoder.
            d_ff: hidden width of the feed-forward networks.
            dropout: dropout probability.
            max_len: longest sequence supported by the positional encoding.
        """
        super().__init__()
        # YOUR CODE HERE
        raise NotImplementedError

    def encode(self, src, src_mask=None):
        """memory = encoder(positional_encoding(src_embedding(src)), src_mask).

        Args:
            src: LongTensor of source ids, (batch, m_E).
            src_mask: optional bool mask, True = may attend; (m_E, m_E) or
                (batch, 1 or num_heads, 1 or m_E, m_E), e.g. a padding mask (batch, 1, 1, m_E).

        Returns:
            The memory, shape (batch, m_E, d_model).
        """
        # YOUR CODE HERE
        raise NotImplementedError

    def decode(self, tgt, memory, target_mask=None, memory_mask=None):
        """hidden = decoder(positional_encoding(tgt_embedding(tgt)), memory, target_mask, memory_mask).

        Args:
            tgt: LongTensor of target ids, (batch, m_D).
            memory: encoder output, (batch, m_E, d_model).
            target_mask: optional bool mask for decoder self-attention, (m_D, m_D) (e.g.
                causal_mask(m_D)) or (batch, 1 or num_heads, 1 or m_D, m_D).
            memory_mask: optional bool mask for cross-attention, (m_D, m_E) or
                (batch, 1 or num_heads, 1 or m_D, m_E), e.g. a padding mask (batch, 1, 1, m_E).

        Returns:
            Hidden states of shape (batch, m_D, d_model) (not logits).
        """
        # YOUR CODE HERE
        raise NotImplementedError

    def forward(self, src, tgt, src_mask=None, target_mask=None):
        """logits = generator(decode(tgt, encode(src, src_mask), target_mask, src_mask)).

        src_mask serves both the encoder self-attention and the cross-attention; the masks
        are used as given (none is built here).

        Args:
            src: LongTensor of source ids, (batch, m_E).
            tgt: LongTensor of target ids, (batch, m_D).
            src_mask: optional bool mask, True = may attend; typically a padding mask (batch, 1, 1, m_E).
            target_mask: optional bool mask for decoder self-attention, typically causal_mask(m_D), (m_D, m_D).

        Returns:
            Logits of shape (batch, m_D, tgt_vocab_size).
        """
        # YOUR CODE HERE
        raise NotImplementedError


def greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None):
    """Greedy decoding: start from bos_id and repeatedly append the most likely next token.

    memory = model.encode(src, src_mask); ys = [[bos_id]] * batch; then, while ys has fewer than
    max_len tokens: next = argmax(model.generator(model.decode(ys, memory, causal_mask, src_mask))[:, -1]).
    A row that has produced eos_id keeps getting eos_id; decoding stops once every row has.
    Runs without gradients, in eval mode, and restores the model's train/eval mode afterwards.

    Args:
        model: a Transformer.
        src: LongTensor of source ids, (batch, m_E).
        max_len: maximum output length, counting the bos token (max_len=1 returns just bos).
        bos_id: start token id.
        eos_id: end token id.
        src_mask: optional bool mask for the source, e.g. a padding mask (batch, 1, 1, m_E).

    Returns:
        LongTensor of shape (batch, L) with L <= max_len on src's device; column 0 is bos_id.
    """
    # YOUR CODE HERE
    raise NotImplementedError
