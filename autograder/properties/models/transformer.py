"""The Transformer on the checking side: one config (the sizes and the seed of the weights, as nanoGPT's
GPTConfig) and one model assembled from torch's own encoder and decoder layers with those weights, right or with
the usual mistakes in assembling it given as flags. The transformer properties, the decoding ones (kv_cache,
beam_search) and the graded side's greedy loop all compute their expected values from it; training's from its
trainable variant (TrainableTransformer: the same model with autograd on)."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from ...i18n import N_
from ...suite import expected_values
from ...suite.expected_values import expected_causal_mask, to_torch_mask
from ...suite.mistakes import Hints
from ...suite.strategies import transformer_state


@dataclass(frozen=True)
class TransformerConfig:
    """Transformer(src_vocab, tgt_vocab, d_model, num_heads, num_layers, d_ff, max_len) with weights from `seed`
    (strategies.transformer_state)."""

    src_vocab: int
    tgt_vocab: int
    d_model: int
    num_heads: int
    num_layers: int
    seed: int
    max_len: int
    d_ff: int = 8

    def kwargs(self, dropout=0.0) -> dict:
        """The constructor's arguments by the exercise's names."""
        return dict(
            src_vocab_size=self.src_vocab,
            tgt_vocab_size=self.tgt_vocab,
            d_model=self.d_model,
            num_heads=self.num_heads,
            num_layers=self.num_layers,
            d_ff=self.d_ff,
            dropout=dropout,
            max_len=self.max_len,
        )

    def state(self, eos_id=None, eos_bias=0.0, dtype=torch.float64) -> dict:
        """The weights (float64 unless `dtype`); eos_bias is added to the generator's bias at eos_id (> 0: rows
        finish early, < 0: eos never wins)."""
        s = transformer_state(
            self.src_vocab,
            self.tgt_vocab,
            self.d_model,
            self.d_ff,
            self.num_layers,
            self.seed,
            dtype,
            self.max_len,
        )
        if eos_id is not None and eos_bias:
            s["generator.bias"] = s["generator.bias"].clone()
            s["generator.bias"][eos_id] += eos_bias
        return s


class SizedCase:
    """The one config builder of the checking side's Transformer cases (suite/model_runs.Case and
    suite/decoding.DecodingCase): their sizes and weight seed, by the config's names, give the config. src_vocab
    and max_len are fields or class attributes of each kind of case."""

    @property
    def config(self) -> TransformerConfig:
        return TransformerConfig(
            self.src_vocab,
            self.tgt_vocab,
            self.d_model,
            self.num_heads,
            self.num_layers,
            self.seed,
            self.max_len,
            self.d_ff,
        )


class ModelMistake(enum.Flag):
    """The usual mistakes in assembling the Transformer, one flag each."""

    NONE = 0
    NO_PE_SRC = enum.auto()  # no positional encoding on the source
    NO_PE_TGT = enum.auto()
    SRC_EMBEDDED_WITH_TGT = enum.auto()  # the source embedded with tgt_embedding
    TGT_EMBEDDED_WITH_SRC = enum.auto()
    NO_EMBEDDING_SCALE = enum.auto()  # embeddings not scaled by sqrt(d_model)
    SOFTMAX_OUTPUT = enum.auto()  # probabilities instead of logits
    NO_ENCODER_MASK = enum.auto()  # src_mask not passed to the encoder
    NO_CROSS_MASK = enum.auto()  # src_mask not passed to the cross-attention
    NO_TARGET_MASK = enum.auto()


# In the order a diagnosis tries them (suite/model_runs.explain_forward)
MODEL_HINTS = Hints(
    ModelMistake,
    {
        ModelMistake.NO_PE_TGT: N_(
            "no positional encoding on the target: decode adds it, "
            "decoder(positional_encoding(tgt_embedding(tgt)), memory, ...)"
        ),
        ModelMistake.NO_PE_SRC: N_(
            "no positional encoding on the source: encode adds it, "
            "encoder(positional_encoding(src_embedding(src)), src_mask)"
        ),
        ModelMistake.NO_PE_SRC | ModelMistake.NO_PE_TGT: N_(
            "no positional encoding: add it to both embeddings"
        ),
        ModelMistake.TGT_EMBEDDED_WITH_SRC: N_(
            "the target is embedded with src_embedding: decode uses tgt_embedding"
        ),
        ModelMistake.SRC_EMBEDDED_WITH_TGT: N_(
            "the source is embedded with tgt_embedding: encode uses src_embedding"
        ),
        ModelMistake.SRC_EMBEDDED_WITH_TGT | ModelMistake.TGT_EMBEDDED_WITH_SRC: N_(
            "the embeddings are swapped: src_embedding for src, tgt_embedding for tgt"
        ),
        ModelMistake.NO_EMBEDDING_SCALE: N_(
            "the embeddings are not scaled by sqrt(d_model): call the "
            "TokenEmbedding modules (src_embedding(src)), not their "
            ".embedding"
        ),
        ModelMistake.SOFTMAX_OUTPUT: N_(
            "forward returns probabilities: return the generator's logits, no softmax"
        ),
        # src_mask's: named only for a case that has one
        ModelMistake.NO_CROSS_MASK: N_(
            "src_mask serves both the encoder and the cross-attention: "
            "generator(decode(tgt, encode(src, src_mask), target_mask, src_mask))"
        ),
        ModelMistake.NO_ENCODER_MASK: N_(
            "src_mask must reach the encoder too: memory = encode(src, src_mask)"
        ),
        ModelMistake.NO_CROSS_MASK | ModelMistake.NO_ENCODER_MASK: N_(
            "src_mask is ignored: it serves the encoder and the cross-attention"
        ),
        ModelMistake.NO_TARGET_MASK: N_("target_mask is not passed on to the decoder"),
    },
)


class ExpectedTransformer:
    """The kit's Transformer assembled from torch's own parts with the weights `state` (no dropout): its layers,
    stacks and encoder-decoder (nn.Transformer), the embeddings and the generator as the docstrings' formulas,
    optionally with `mistake` made on purpose."""

    grad = False  # the expected values need no graph (TrainableTransformer's do)

    def __init__(self, state: dict, config: TransformerConfig, mistake=ModelMistake.NONE):
        self.s, self.config, self.mistake = state, config, mistake
        self._stacks = None

    def stacks(self):
        """torch's encoder and decoder stacks over torch's layers with the weights (built once per model)."""
        if self._stacks is None:
            c, dtype = self.config, self.s["generator.weight"].dtype

            def layers(build, side):
                return [
                    build(self.s, c.d_model, c.num_heads, c.d_ff, dtype, f"{side}.layers.{i}.")
                    for i in range(c.num_layers)
                ]

            self._stacks = (
                expected_values.torch_stack(layers(expected_values.torch_encoder_layer, "encoder")),
                expected_values.torch_stack(layers(expected_values.torch_decoder_layer, "decoder")),
            )
        return self._stacks

    def embed(self, tokens, source: bool, positions=None):
        """The scaled embedding plus the positional encoding at `positions` (default 0..L-1: a decoding step
        restarted per position gives its own)."""
        own, other, no_pe, swapped = (
            ("src", "tgt", ModelMistake.NO_PE_SRC, ModelMistake.SRC_EMBEDDED_WITH_TGT)
            if source
            else ("tgt", "src", ModelMistake.NO_PE_TGT, ModelMistake.TGT_EMBEDDED_WITH_SRC)
        )
        table = other if swapped in self.mistake else own
        d = self.config.d_model
        scale = 1.0 if ModelMistake.NO_EMBEDDING_SCALE in self.mistake else math.sqrt(d)
        x = F.embedding(tokens, self.s[f"{table}_embedding.embedding.weight"]) * scale
        if no_pe in self.mistake:
            return x
        pe = self.s["positional_encoding.pe"]
        pe = pe[:, : tokens.shape[1]] if positions is None else pe[0, positions]
        return x + pe.to(x.dtype)

    def encode(self, src, src_mask=None):
        mask = None if ModelMistake.NO_ENCODER_MASK in self.mistake else src_mask
        return self.encoder_layers(self.embed(src, True), mask)

    def decode(self, tgt, memory, target_mask=None, memory_mask=None, positions=None):
        """The decoder's hidden states; positions: the target's positional encoding (see embed)."""
        target = None if ModelMistake.NO_TARGET_MASK in self.mistake else target_mask
        cross = None if ModelMistake.NO_CROSS_MASK in self.mistake else memory_mask
        return self.decoder_layers(self.embed(tgt, False, positions), memory, target, cross)

    def encoder_layers(self, x, mask):
        b, m = x.shape[:2]
        with torch.set_grad_enabled(self.grad and torch.is_grad_enabled()):
            return self.stacks()[0](x, mask=to_torch_mask(mask, b, self.config.num_heads, m, m))

    def decoder_layers(self, x, memory, target_mask, memory_mask):
        b, m, h = x.shape[0], x.shape[1], self.config.num_heads
        with torch.set_grad_enabled(self.grad and torch.is_grad_enabled()):
            return self.stacks()[1](
                x,
                memory,
                tgt_mask=to_torch_mask(target_mask, b, h, m, m),
                memory_mask=to_torch_mask(memory_mask, b, h, m, memory.shape[1]),
            )

    def generator(self, x):
        logits = F.linear(x, self.s["generator.weight"], self.s["generator.bias"])
        return torch.softmax(logits, -1) if ModelMistake.SOFTMAX_OUTPUT in self.mistake else logits

    def forward(self, src, tgt, src_mask=None, target_mask=None):
        """The generator over torch's nn.Transformer (its encoder-decoder, forbidden in transformer.py) run on the
        embedded source and target: src_mask for the encoder and the cross-attention, target_mask for the
        decoder's self-attention (or not, a mistake)."""
        mistake, b, h = self.mistake, src.shape[0], self.config.num_heads
        m_s, m_t = src.shape[1], tgt.shape[1]
        encoder_mask = None if ModelMistake.NO_ENCODER_MASK in mistake else src_mask
        cross = None if ModelMistake.NO_CROSS_MASK in mistake else src_mask
        target = None if ModelMistake.NO_TARGET_MASK in mistake else target_mask
        with torch.set_grad_enabled(self.grad and torch.is_grad_enabled()):
            hidden = expected_values.torch_transformer(*self.stacks())(
                self.embed(src, True),
                self.embed(tgt, False),
                src_mask=to_torch_mask(encoder_mask, b, h, m_s, m_s),
                tgt_mask=to_torch_mask(target, b, h, m_t, m_t),
                memory_mask=to_torch_mask(cross, b, h, m_t, m_s),
            )
        return self.generator(hidden)

    def log_probs(self, src, ys, src_mask=None, memory=None):
        """log p(next token | ys[:, :t+1], src) for every t: (batch, L, vocab), float64."""
        memory = self.encode(src, src_mask) if memory is None else memory
        logits = self.generator(
            self.decode(ys, memory, expected_causal_mask(ys.shape[1]), src_mask)
        )
        return torch.log_softmax(logits.to(torch.float64), dim=-1)


class TrainableTransformer(ExpectedTransformer, nn.Module):
    """ExpectedTransformer (no mistake) with autograd on, to train on the checking side: torch's layers built once,
    each with parameters of its own copied from `state`, the embeddings and the generator parameters too, in train
    mode (dropout is 0; torch's general path, not eval's fused one). `kit()` names its parameters, or their
    gradients, as the kit's state dict does."""

    def __init__(self, state: dict, config: TransformerConfig):
        nn.Module.__init__(self)
        c, dtype = config, state["generator.weight"].dtype
        # torch's own stacks (nn.TransformerEncoder, nn.TransformerDecoder) over layers of their own
        self.encoder = expected_values.torch_stack(
            [
                expected_values.torch_encoder_layer(
                    state, c.d_model, c.num_heads, c.d_ff, dtype, f"encoder.layers.{i}.", fresh=True
                )
                for i in range(c.num_layers)
            ]
        )
        self.decoder = expected_values.torch_stack(
            [
                expected_values.torch_decoder_layer(
                    state, c.d_model, c.num_heads, c.d_ff, dtype, f"decoder.layers.{i}.", fresh=True
                )
                for i in range(c.num_layers)
            ]
        )
        self.register_buffer("pe", state["positional_encoding.pe"].clone())
        own = {"positional_encoding.pe": self.pe}
        for name in OWN_PARAMETERS:
            own[name] = nn.Parameter(state[name].clone())
            self.register_parameter(name.replace(".", "_"), own[name])
        ExpectedTransformer.__init__(self, own, config)
        self.train()

    grad = True

    def stacks(self):
        return self.encoder, self.decoder

    def kit(self, pick=lambda p: p.detach()) -> dict:
        """{kit name: pick(parameter)}: its value by default, or its gradient (pick=lambda p: p.grad)."""
        out = {name: pick(self.s[name]) for name in OWN_PARAMETERS}
        for side, layers in (("encoder", self.encoder.layers), ("decoder", self.decoder.layers)):
            for i, layer in enumerate(layers):
                prefix = f"{side}.layers.{i}."
                for torch_name, kit_name in KIT_ATTENTION.items():
                    mha = getattr(layer, torch_name, None)
                    if mha is None:
                        continue
                    for kind, whole in (("weight", mha.in_proj_weight), ("bias", mha.in_proj_bias)):
                        for w, part in zip(("w_q", "w_k", "w_v"), pick(whole).chunk(3)):
                            out[f"{prefix}{kit_name}.{w}.{kind}"] = part
                    out[f"{prefix}{kit_name}.w_o.weight"] = pick(mha.out_proj.weight)
                    out[f"{prefix}{kit_name}.w_o.bias"] = pick(mha.out_proj.bias)
                for torch_name, kit_name in KIT_MODULES.items():
                    module = getattr(layer, torch_name, None)
                    if module is not None:
                        out[f"{prefix}{kit_name}.weight"] = pick(module.weight)
                        out[f"{prefix}{kit_name}.bias"] = pick(module.bias)
        return out


# The kit's names of what TrainableTransformer holds outside torch's layers, and of those layers' parts.
OWN_PARAMETERS = (
    "src_embedding.embedding.weight",
    "tgt_embedding.embedding.weight",
    "generator.weight",
    "generator.bias",
)
KIT_ATTENTION = {"self_attn": "self_attention", "multihead_attn": "cross_attention"}
KIT_MODULES = {
    "linear1": "feed_forward.linear_1",
    "linear2": "feed_forward.linear_2",
    "norm1": "add_norm_1.norm",
    "norm2": "add_norm_2.norm",
    "norm3": "add_norm_3.norm",
}
