"""The components of the kit: one exercise module each, in teaching order, each declared once.

A component's declaration holds everything the kit knows about it apart from its reference solution
(solutions/<name>.py), its properties (autograder/properties/<name>.py, autograder/hidden/<name>.py) and its
bug catalog (autograder/bugs/<name>.py), which are found by its name. The stubs, the notebooks, the gradebook
column, the by-hand rules, the README's component table and docs/contract.md's signature table all follow
from here; docs/extending.md is the checklist for adding one.

Every field but `slow_hint` has no default: a declaration that forgets one fails at import, and "nothing
forbidden" is written as an explicit empty tuple.
"""

from __future__ import annotations

from dataclasses import dataclass

from .i18n import N_

# docs/contract.md's signature table: file names take the first 21 columns, the contract the rest.
CONTRACT_COLUMN = 21
# The files transformer.py imports: what a component built on the whole model depends on, with transformer.py.
TRANSFORMER_FILES = (
    "attention",
    "mask",
    "multi_head",
    "add_norm",
    "feed_forward",
    "positional_encoding",
    "encoder",
    "decoder",
)


@dataclass(frozen=True, kw_only=True)
class Component:
    name: str  # module file stem, also the results.json tag, the gradebook column and the pytest marker
    title: str  # a heading: notebooks, the self-check's table, feedback pages
    short: str  # the column header in `grade`'s printed gradebook (a few letters)
    summary: str  # what the student writes: the README's component table
    # The other modules this one imports (relatively) from the submission. The judge grades a component with the
    # reference for its deps, so a bug costs points only where it lives.
    deps: tuple[str, ...]
    # The by-hand rules (autograder/rules/): operator families (rules.FAMILIES) refused at run time while
    # this component is under test, and named sets of library names (rules.FORBIDDEN_NAMES) the static scan
    # refuses in its source.
    forbidden_families: tuple[str, ...]
    forbidden_names: tuple[str, ...]
    # Its lines of the signature table (docs/contract.md, each notebook's "The contract"): signatures,
    # attribute names, shapes; continuation lines indented under the first.
    contract: str
    slow_hint: str = ""  # said when a call of this component runs out of time: the likely slow spot
    # Modules the kit imports, unguarded, before the component's code runs. torch.optim's first use imports
    # torch._dynamo, which the by-hand guard refuses during a call (it leads to torch.compile): training preloads
    # rules/eager_dynamo.py, a 4 ms stand-in for the real module's 0.9 s of CPU.
    preload: tuple[str, ...] = ()
    # The per-call CPU limit (--timeout, 10 s scaled) times this: training's copy task trains in one call
    # (2-3.5 s of CPU on the 2-core machine when set; 0.4 s since issue 24 resized the task); x3 keeps a slower
    # correct train() clear of the 3 s limit the judge's own tests use.
    call_limit_factor: float = 1.0

    def __post_init__(self):
        for field in ("deps", "forbidden_families", "forbidden_names", "preload"):
            value = getattr(self, field)
            if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
                raise TypeError(
                    f"component {self.name!r}: {field} must be a tuple of names, got {value!r}"
                )
        for field in ("name", "title", "short", "summary", "contract"):
            if not getattr(self, field).strip():
                raise ValueError(f"component {self.name!r}: {field} is empty")

    @property
    def filename(self) -> str:
        return f"{self.name}.py"

    @property
    def contract_block(self) -> str:
        """Its rows of docs/contract.md's signature table: the file name, then the contract beside or under it."""
        lines = [" " * CONTRACT_COLUMN + line for line in self.contract.splitlines()]
        if len(self.filename) < CONTRACT_COLUMN:
            return self.filename.ljust(CONTRACT_COLUMN) + "\n".join(lines)[CONTRACT_COLUMN:]
        return "\n".join([self.filename, *lines])


COMPONENTS: tuple[Component, ...] = (
    Component(
        name="attention_numpy",
        title=N_("NumPy warm-up: softmax, attention, layer norm"),
        short="np",
        summary="NumPy warm-up: softmax, scaled dot-product attention, layer norm",
        deps=(),
        forbidden_families=("softmax", "attention", "norm"),
        forbidden_names=("softmax", "attention", "norm"),
        contract=N_(
            """\
softmax(x, axis=-1); scaled_dot_product_attention(q, k, v, mask=None) -> (output, weights);
layer_norm(x, eps=1e-5)  (last axis, biased variance, no affine)          -- NumPy arrays
"""
        ),
    ),
    Component(
        name="attention",
        title=N_("Softmax by hand and scaled dot-product attention"),
        short="attn",
        summary="softmax by hand (stable; an all -inf row gives zeros), scaled dot-product attention",
        deps=(),
        forbidden_families=("softmax", "attention"),
        forbidden_names=("softmax", "attention", "transformer"),
        contract=N_(
            """\
softmax(x, dim=-1)  (by hand, numerically stable)
scaled_dot_product_attention(query, key, value, mask=None) -> (output, weights)
  query (..., m_q, d_k), key (..., m_k, d_k), value (..., m_k, d_v);
  output (..., m_q, d_v), weights (..., m_q, m_k); scale 1/sqrt(d_k)
"""
        ),
    ),
    Component(
        name="mask",
        title=N_("Causal and padding masks"),
        short="mask",
        summary="causal and padding masks (bool, True = may attend)",
        deps=(),
        forbidden_families=(),
        forbidden_names=(),
        contract=N_(
            """\
causal_mask(size, device=None) -> bool (size, size), True on and below the diagonal
padding_mask(tokens, pad_id) -> bool (batch, 1, 1, seq), True where tokens != pad_id
"""
        ),
    ),
    Component(
        name="multi_head",
        title=N_("Multi-head attention"),
        short="mha",
        summary="multi-head attention with w_q, w_k, w_v, w_o",
        deps=("attention",),
        forbidden_families=("softmax", "attention"),
        forbidden_names=("softmax", "attention", "transformer"),
        contract=N_(
            """\
MultiHeadAttention(d_model, num_heads, dropout=0.0, bias=True)
  w_q, w_k, w_v, w_o: nn.Linear(d_model, d_model, bias=bias); num_heads; d_k: d_model // num_heads;
  head h reads columns h*d_k:(h+1)*d_k of each projection; forward(query, key, value, mask=None)
  -> (batch, m_q, d_model); dropout: nn.Dropout, on the attention weights; attention_weights: the last
  forward's weights before dropout (batch, num_heads, m_q, m_k), detached; ValueError when
  d_model % num_heads != 0
"""
        ),
    ),
    Component(
        name="add_norm",
        title=N_("LayerNorm by hand, add & norm"),
        short="norm",
        summary="LayerNorm by hand, add & norm",
        deps=(),
        forbidden_families=("norm",),
        forbidden_names=("norm", "transformer"),
        contract=N_(
            """\
LayerNorm(d_model, eps=1e-5): parameters weight (ones), bias (zeros); eps; last dim, biased variance; by hand
AddAndNorm(d_model, dropout=0.0): norm, dropout (nn.Dropout); forward(x, sublayer_output) =
  norm(x + dropout(sublayer_output))
"""
        ),
    ),
    Component(
        name="feed_forward",
        title=N_("Position-wise feed-forward network"),
        short="ffn",
        summary="the position-wise feed-forward network",
        deps=(),
        forbidden_families=(),
        forbidden_names=(),  # nothing to forbid: no library layer computes it (docs/byhand.md)
        contract=N_(
            """\
FeedForward(d_model, d_ff, dropout=0.0): linear_1, linear_2, dropout (nn.Dropout);
  forward = linear_2(dropout(relu(linear_1(x))))
"""
        ),
    ),
    Component(
        name="positional_encoding",
        title=N_("Sinusoidal positional encoding, token embedding"),
        short="pe",
        summary="sinusoidal encoding, token embedding",
        deps=(),
        forbidden_families=(),
        forbidden_names=(),  # nothing to forbid: no library layer computes it (docs/byhand.md)
        slow_hint=N_("vectorise: build the table with arange and broadcasting, not a Python loop"),
        contract=N_(
            """\
sinusoidal_encoding(max_len, d_model) -> (max_len, d_model):
  PE[p, 2i] = sin(p / 10000^(2i/d_model)), PE[p, 2i+1] = cos(p / 10000^(2i/d_model)); odd d_model allowed
PositionalEncoding(d_model, max_len=5000, dropout=0.0): buffer pe (1, max_len, d_model), dropout
  (nn.Dropout); forward(x) = dropout(x + pe[:, :seq])
TokenEmbedding(vocab_size, d_model): embedding (nn.Embedding), d_model;
  forward = embedding(tokens) * sqrt(d_model)
"""
        ),
    ),
    Component(
        name="encoder",
        title=N_("Encoder layer and stack"),
        short="enc",
        summary="encoder layer and stack",
        deps=("attention", "multi_head", "add_norm", "feed_forward"),
        forbidden_families=("softmax", "attention", "norm"),
        forbidden_names=("softmax", "attention", "norm", "transformer"),
        contract=N_(
            """\
EncoderLayer(d_model, num_heads, d_ff, dropout=0.0): self_attention, add_norm_1, feed_forward, add_norm_2;
  forward(x, mask=None): x = add_norm_1(x, self_attention(x, x, x, mask)); return add_norm_2(x, feed_forward(x))
Encoder(num_layers, d_model, num_heads, d_ff, dropout=0.0): layers (nn.ModuleList); forward(x, mask=None)
"""
        ),
    ),
    Component(
        name="decoder",
        title=N_("Decoder layer and stack: masked self-attention, cross-attention"),
        short="dec",
        summary="decoder layer and stack: masked self-attention, then cross-attention (queries from the decoder, "
        "keys/values from the encoder: an m_D × m_E score matrix, an m_D × d_model output)",
        deps=("attention", "multi_head", "add_norm", "feed_forward"),
        forbidden_families=("softmax", "attention", "norm"),
        forbidden_names=("softmax", "attention", "norm", "transformer"),
        contract=N_(
            """\
DecoderLayer(d_model, num_heads, d_ff, dropout=0.0): self_attention, add_norm_1, cross_attention,
  add_norm_2, feed_forward, add_norm_3; forward(x, memory, target_mask=None, memory_mask=None):
    x = add_norm_1(x, self_attention(x, x, x, target_mask))
    x = add_norm_2(x, cross_attention(x, memory, memory, memory_mask))
    return add_norm_3(x, feed_forward(x))
  x (batch, m_D, d_model), memory (batch, m_E, d_model), m_E != m_D allowed -> (batch, m_D, d_model)
Decoder(num_layers, d_model, num_heads, d_ff, dropout=0.0): layers; forward(x, memory, target_mask=None, memory_mask=None)
"""
        ),
    ),
    Component(
        name="transformer",
        title=N_("Encoder-decoder model and greedy decoding"),
        short="model",
        summary="the encoder-decoder model and greedy decoding",
        deps=TRANSFORMER_FILES,
        # Softmax stays allowed here: a greedy decoder may take it before argmax, harmlessly.
        forbidden_families=("attention", "norm"),
        forbidden_names=("attention", "norm", "transformer"),
        contract=N_(
            """\
Transformer(src_vocab_size, tgt_vocab_size, d_model=512, num_heads=8, num_layers=6, d_ff=2048,
  dropout=0.1, max_len=5000): src_embedding, tgt_embedding, positional_encoding, encoder,
  decoder, generator (nn.Linear(d_model, tgt_vocab_size)); encode(src, src_mask=None) -> memory;
  decode(tgt, memory, target_mask=None, memory_mask=None); forward(src, tgt, src_mask=None,
  target_mask=None) -> logits (batch, m_D, tgt_vocab_size), src_mask serving both the encoder
  and the cross-attention; the masks are used as given (build the causal one with causal_mask)
greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None) -> LongTensor (batch, <= max_len):
  starts with bos_id, stops once every row has produced eos_id (or at max_len tokens), a row
  that has finished holds eos_id after it; no gradients; the model's train/eval mode untouched
"""
        ),
    ),
    Component(
        name="kv_cache",
        title=N_("Incremental decoding with a KV cache"),
        short="kv",
        summary="incremental decoding with a KV cache: each step computes only the new positions (checked by "
        "behaviour: what earlier steps computed is kept when the weights change)",
        deps=(*TRANSFORMER_FILES, "transformer"),
        # As transformer: softmax allowed (a greedy step may take it before argmax).
        forbidden_families=("attention", "norm"),
        forbidden_names=("attention", "norm", "transformer"),
        contract=N_(
            """\
split_heads(x, num_heads): (batch, m, d_model) -> (batch, h, m, d_k); merge_heads: the inverse
attend(mha, query, keys, values, mask=None): mha's attention of query (batch, n, d_model) over
  keys/values already projected and split (batch, h, m_k, d_k) -> (batch, n, d_model)
CachedDecoder(model): model, memory, memory_mask, memory_keys, memory_values, self_keys,
  self_values (lists of num_layers tensors (batch, h, m, d_k)), length; start(src, src_mask=None)
  -> memory: encodes, computes every layer's cross-attention keys/values of the memory once,
  empties the cache (length 0); step(tokens (batch, n)) -> logits (batch, n, tgt_vocab_size) of
  positions length..length+n-1, equal to the full model's (causal mask, src_mask) at those
  positions; appends n positions to every layer's self_keys/self_values; what earlier calls
  computed is kept as it was, even if the model's weights change between steps
cached_greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None): greedy_decode's tokens
"""
        ),
    ),
    Component(
        name="beam_search",
        title=N_("Beam search with a length penalty"),
        short="beam",
        summary="beam search with a length penalty: beam 1 is greedy, a wide beam finds the best hypothesis by "
        "enumeration",
        deps=(*TRANSFORMER_FILES, "transformer"),
        # Softmax allowed: beam search takes log_softmax of the logits, which is not the exercise.
        forbidden_families=("attention", "norm"),
        forbidden_names=("attention", "norm", "transformer"),
        contract=N_(
            """\
beam_search(model, src, max_len, bos_id, eos_id, beam_size, length_penalty=0.0, src_mask=None)
  -> (sequences LongTensor (batch, <= max_len), scores (batch,) in the model's dtype): each row's
  best hypothesis, bos first, padded with eos_id after its eos. score = logp / T ** length_penalty,
  logp = sum of the log-probabilities of the T generated tokens (eos included, bos not); finished
  hypotheses are kept once, not extended (their logp and T fixed); top-k over each row's (beam,
  vocab) candidates, ranked by score; stops once every hypothesis has finished or at max_len
  tokens (not when the top one has); each row returns its best score, finished or not;
  beam_size=1 is greedy decoding; max_len=1: [bos_id] with score 0.0; beam_size may exceed the
  vocabulary (empty beams stay -inf); ties either way; no gradients; the model's train/eval
  mode untouched
"""
        ),
    ),
    Component(
        name="training",
        title=N_("A model that learns: label smoothing, warm-up schedule, teacher forcing"),
        short="train",
        summary="label-smoothed cross-entropy, the warm-up schedule, teacher forcing, training the model on a copy "
        "task",
        deps=(*TRANSFORMER_FILES, "transformer"),
        # The smoothed loss by hand. Softmax stays allowed: log-probabilities are an ingredient here (log_softmax),
        # and softmax by hand is attention.py's exercise, graded there.
        forbidden_families=("loss", "attention", "norm"),
        forbidden_names=("loss", "attention", "norm", "transformer"),
        contract=N_(
            """\
label_smoothed_cross_entropy(logits, target, smoothing=0.1, pad_id=0) -> scalar: logits (..., V),
  target (...); q[y] = 1 - smoothing, q[pad_id] = 0, smoothing / (V - 2) elsewhere;
  mean over positions with target != pad_id of -sum(q * log_softmax(logits)) (0.0 if none)
learning_rate(step, d_model, warmup_steps=4000, factor=1.0) -> float:
  factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5), step from 1
shift_right(tgt, bos_id) -> (batch, m): [bos_id, tgt[:, :-1]]
teacher_forcing_loss(model, src, tgt, bos_id, pad_id, smoothing=0.1) -> scalar attached to the
  model: label_smoothed_cross_entropy(model(src, shift_right(tgt, bos_id),
  padding_mask(src, pad_id), causal_mask(m)), tgt, smoothing, pad_id)
train_step(model, optimizer, src, tgt, bos_id, pad_id, smoothing=0.1) -> float: zero_grad,
  loss, backward, step
train(model, src_batches, tgt_batches, d_model, warmup_steps, bos_id, pad_id, smoothing=0.1,
  factor=1.0) -> float64 (steps,) losses: model.train(); Adam(betas=(0.9, 0.98), eps=1e-9);
  before step s (from 1) lr = learning_rate(s, ...); batch s - 1 at step s
  (src_batches (steps, batch, m_E), tgt_batches (steps, batch, m))
"""
        ),
        preload=("autograder.rules.eager_dynamo",),
        call_limit_factor=3.0,
    ),
)

BY_NAME: dict[str, Component] = {c.name: c for c in COMPONENTS}
NAMES: tuple[str, ...] = tuple(BY_NAME)


def _check_order() -> None:
    """Each component's deps are components declared before it (teaching order), and names are unique."""
    seen: set[str] = set()
    for c in COMPONENTS:
        if c.name in seen:
            raise ValueError(f"component {c.name!r} is declared twice")
        late = [d for d in c.deps if d not in seen]
        if late:
            raise ValueError(f"component {c.name!r} depends on {late}, not declared before it")
        seen.add(c.name)


_check_order()


def call_limit_factor(component: str) -> float:
    """How many times the per-call CPU limit a call into `component` gets (1 for an operation of no component)."""
    return BY_NAME[component].call_limit_factor if component in BY_NAME else 1.0


def get(name: str) -> Component:
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown component {name!r}; choose from {', '.join(NAMES)}") from None
