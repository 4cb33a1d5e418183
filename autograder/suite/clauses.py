"""The contract's clauses, one enum per component: what a property declares it checks (`@prop(...,
clauses=...)`, issue 33).

A clause is a rule of docs/contract.md that a mistake can break on its own (the scale of the scores, where
dropout goes, what a finished row holds). Every hidden property declares the clauses it checks, and each of
them is checked by a visible property too, on other inputs: the self-check can show every mistake the grade
charges (tests/test_clauses.py). A clause names a rule, never how to meet it, so the enums ship with the
visible properties.
"""

from __future__ import annotations

from enum import StrEnum


class AttentionNumpy(StrEnum):
    SOFTMAX = "softmax(x, axis): non-negative, sums to 1 along axis, stable, an all -inf slice gives zeros"
    ATTENTION = "attention: output = softmax(q k^T / sqrt(d_k)) v, weights (..., m_q, m_k)"
    MASK = (
        "attention's mask: True = may attend, broadcast to (..., m_q, m_k), fully masked rows zero"
    )
    LAYER_NORM = "layer_norm: over the last axis only, biased variance, no affine"
    EPS = "layer_norm's eps: the argument, inside the square root"


class Attention(StrEnum):
    SOFTMAX = "softmax(x, dim): by hand, stable, along dim, shape and dtype kept"
    SCORES = "attention: weights = softmax(q k^T / sqrt(d_k)), output = weights @ value, any leading dims"
    MASK = "the mask: True = may attend, broadcastable, blocked keys get weight 0"
    FULLY_MASKED = "a fully masked query row: zero weights and output, never NaN, finite gradients"
    SHAPES = "(output, weights) in that order, their shapes and the query's dtype"


class Mask(StrEnum):
    CAUSAL = (
        "causal_mask(size): bool (size, size), True on and below the diagonal, on the given device"
    )
    PADDING = "padding_mask(tokens, pad_id): bool (batch, 1, 1, seq), True where tokens != pad_id"


class MultiHead(StrEnum):
    PARAMETERS = "w_q, w_k, w_v, w_o: nn.Linear(d_model, d_model, bias=bias)"
    HEADS = (
        "head h reads columns h*d_k:(h+1)*d_k of each projection; output = w_o of the merged heads"
    )
    MASK = "a 2-D or 4-D mask reaches every head as given"
    FULLY_MASKED = "a fully masked row: zero weights, a finite output"
    WEIGHTS = "attention_weights: the last forward's weights before dropout, detached"
    DROPOUT = "dropout on the attention weights in training, off in eval"
    GRADIENTS = "gradients flow to every projection and input"
    VALUE_ERROR = "ValueError when d_model % num_heads != 0"


class AddNorm(StrEnum):
    PARAMETERS = "LayerNorm's weight (ones) and bias (zeros)"
    LAYER_NORM = "LayerNorm over the last dim, biased variance, any leading dims"
    EPS = "LayerNorm's eps: the one it was built with, inside the square root"
    GRADIENTS = "LayerNorm's gradients are the function's"
    ADD_NORM = "AddAndNorm(x, s) = norm(x + dropout(s))"
    DROPOUT = "AddAndNorm's dropout: on the sublayer output only, off in eval"


class FeedForward(StrEnum):
    PARAMETERS = "linear_1 (d_model -> d_ff), linear_2 (d_ff -> d_model)"
    VALUE = "forward = linear_2(relu(linear_1(x))), position-wise, any leading dims"
    DROPOUT = "dropout on the hidden layer only, off in eval"
    GRADIENTS = "the gradients are the function's"


class PositionalEncoding(StrEnum):
    TABLE = "sinusoidal_encoding: PE[p, 2i] = sin, PE[p, 2i+1] = cos of p / 10000^(2i/d_model)"
    BUFFER = "PositionalEncoding: buffer pe (1, max_len, d_model), max_len=5000 by default"
    ADDS = "PositionalEncoding(x) = dropout(x + pe[:, :seq])"
    EMBEDDING = (
        "TokenEmbedding: embedding (nn.Embedding), forward = embedding(tokens) * sqrt(d_model)"
    )


class Encoder(StrEnum):
    NAMES = "the sub-modules' names, N distinct layers"
    LAYER = "EncoderLayer: post-norm self-attention then feed-forward"
    MASK = "the mask reaches the self-attention of every layer"
    STACK = "Encoder: the layers in order"
    EVAL = "dropout off in eval mode"
    GRADIENTS = "gradients reach every parameter"


class Decoder(StrEnum):
    NAMES = "the sub-modules' names, N distinct layers"
    LAYER = "DecoderLayer: post-norm self-attention, cross-attention, feed-forward"
    CAUSAL = "target_mask reaches the self-attention of every layer"
    MEMORY = "cross-attention reads the memory, memory_mask reaches every layer"
    STACK = "Decoder: the layers in order"
    GRADIENTS = "gradients reach x, the memory and every parameter"


class Transformer(StrEnum):
    NAMES = "the sub-modules' names"
    FORWARD = "forward, encode and decode: the logits of the assembled model"
    SRC_MASK = "src_mask serves the encoder and the cross-attention"
    DROPOUT = "dropout is passed on: on in train mode, off in eval"
    GREEDY = "greedy_decode: bos first, argmax of the last position, max_len tokens at most"
    FINISHED = "a finished row holds eos_id; stop once every row has finished"
    GREEDY_SRC_MASK = "greedy_decode uses src_mask in encode and every decode"
    MODE = "decoding runs in eval mode without gradients and leaves the model's mode as it was"


class KvCache(StrEnum):
    STEPS = "each step's logits equal the full model's at those positions"
    CACHE = "self_keys / self_values grow by the step's positions; start empties the cache"
    KEPT = "what earlier calls computed is kept, even if the weights change"
    SRC_MASK = "start's src_mask serves every step"
    GREEDY = "cached_greedy_decode gives greedy_decode's tokens"
    MODE = "decoding runs in eval mode without gradients and leaves the model's mode as it was"


class BeamSearch(StrEnum):
    SEARCH = "each row's best hypothesis by logp / T ** length_penalty, rows independent"
    SCORES = "the scores: log-probability sums over T ** length_penalty"
    FINISHED = "finished hypotheses kept once, padded with eos_id"
    SRC_MASK = "src_mask serves encode and every decode"
    MODE = "the search runs in eval mode without gradients and leaves the model's mode as it was"
    TYPES = "(sequences, scores): their shapes and dtypes"


class Training(StrEnum):
    LOSS = "label_smoothed_cross_entropy: q[y] = 1 - s, q[pad] = 0, s / (V - 2) elsewhere, logits (..., V)"
    PADDING = "the loss: mean over non-padding positions, 0.0 if none"
    SCHEDULE = "learning_rate's closed form"
    SHIFT = "shift_right: [bos_id, tgt[:, :-1]]"
    TEACHER_FORCING = "teacher_forcing_loss: the model on shift_right with both masks"
    TRAIN = "train: Adam on the schedule, a batch per step, the losses returned"
    TRAIN_MODE = "train puts the model in train mode"
    TYPES = "the contract's return types"


# Component name -> its clauses (components.py names them; tests/test_clauses.py checks the two agree).
CLAUSES: dict[str, type[StrEnum]] = {
    "attention_numpy": AttentionNumpy,
    "attention": Attention,
    "mask": Mask,
    "multi_head": MultiHead,
    "add_norm": AddNorm,
    "feed_forward": FeedForward,
    "positional_encoding": PositionalEncoding,
    "encoder": Encoder,
    "decoder": Decoder,
    "transformer": Transformer,
    "kv_cache": KvCache,
    "beam_search": BeamSearch,
    "training": Training,
}


def hidden_only(properties) -> list[tuple[str, StrEnum]]:
    """(hidden property id, clause) for each clause a hidden property checks that no visible property of its
    component checks: what the grade would charge and the self-check could not show. [] is the rule."""
    visible = {(p.component, c) for p in properties if p.visible for c in p.clauses}
    return [
        (p.id, c)
        for p in properties
        if not p.visible
        for c in p.clauses
        if (p.component, c) not in visible
    ]
