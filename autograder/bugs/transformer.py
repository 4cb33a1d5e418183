from ..properties.models.greedy import GreedyMistake
from ..properties.models.transformer import ModelMistake
from . import Bug

BUGS = [
    Bug(
        "transformer",
        "src_mask_not_in_cross_attention",
        "forward did not pass src_mask on to the decoder",
        "return self.generator(self.decode(tgt, memory, target_mask, src_mask))",
        "return self.generator(self.decode(tgt, memory, target_mask))",
        mistake=ModelMistake.NO_CROSS_MASK,
    ),
    Bug(
        "transformer",
        "no_positional_encoding_on_target",
        "decode embedded the target without positions",
        "return self.decoder(self.positional_encoding(self.tgt_embedding(tgt)), memory,",
        "return self.decoder(self.tgt_embedding(tgt), memory,",
        mistake=ModelMistake.NO_PE_TGT,
    ),
    Bug(
        "transformer",
        "source_embedding_for_target",
        "decode embedded the target with src_embedding",
        "return self.decoder(self.positional_encoding(self.tgt_embedding(tgt)), memory,",
        "return self.decoder(self.positional_encoding(self.src_embedding(tgt)), memory,",
        mistake=ModelMistake.TGT_EMBEDDED_WITH_SRC,
    ),
    Bug(
        "transformer",
        "greedy_no_stop",
        "greedy decoding always runs to max_len",
        "                if finished.all():\n                    break\n",
        "",
        mistake=GreedyMistake.NO_STOP,
    ),
    Bug(
        "transformer",
        "greedy_no_eos_after_finish",
        "finished rows keep getting the argmax, not eos",
        "                next_token = next_token.masked_fill(finished, eos_id)\n",
        "",
        mistake=GreedyMistake.NO_PAD,
        caught_visibly=True,
    ),
    Bug(
        "transformer",
        "greedy_off_by_one",
        "the loop runs while ys.size(1) <= max_len: one token too many",
        "while ys.size(1) < max_len:",
        "while ys.size(1) <= max_len:",
        mistake=GreedyMistake.ONE_STEP_MORE,
    ),
    Bug(
        "transformer",
        "greedy_mode_not_restored",
        "greedy decoding leaves the model in eval mode",
        "    finally:\n        model.train(was_training)\n",
        "    finally:\n        pass\n",
        "restore the model's train/eval mode",
    ),
    Bug(
        "transformer",
        "greedy_train_after",
        "greedy decoding ends with model.train() whatever the mode was",
        "    finally:\n        model.train(was_training)\n",
        "    finally:\n        model.train()\n",
        "restore the model's train/eval mode",
        caught_visibly=True,
    ),
    Bug(
        "transformer",
        "greedy_no_eval",
        "greedy decoding in train mode: dropout stays on",
        "    model.eval()\n",
        "",
        "model.eval()",
    ),
    Bug(
        "transformer",
        "greedy_first_position",
        "took the next token from position 0 instead of the last",
        "next_token = model.generator(hidden[:, -1]).argmax(dim=-1)",
        "next_token = model.generator(hidden[:, 0]).argmax(dim=-1)",
        mistake=GreedyMistake.FIRST_POSITION,
    ),
    Bug(
        "transformer",
        "greedy_decode_without_src_mask",
        "decode inside greedy_decode got no src_mask",
        "hidden = model.decode(ys, memory, target_mask, src_mask)",
        "hidden = model.decode(ys, memory, target_mask)",
        mistake=GreedyMistake.NO_SRC_MASK_IN_DECODE,
        caught_visibly=True,
    ),
    Bug(
        "transformer",
        "greedy_with_gradients",
        "greedy decoding builds an autograd graph (no torch.no_grad)",
        "with torch.no_grad():",
        "with torch.enable_grad():",
        "torch.no_grad",
    ),
]

# issue 33: the clauses on finished rows, the model's mode and src_mask in decoding, checked visibly
BUGS += [
    Bug(
        "transformer",
        "greedy_pads_finished_rows_with_zero",
        "finished rows are padded with token 0, not eos_id",
        "                next_token = next_token.masked_fill(finished, eos_id)\n",
        "                next_token = next_token.masked_fill(finished, 0)\n",
        mistake=GreedyMistake.NO_PAD,
        caught_visibly=True,
    ),
]

# issue 36: a bug for each mistake model of the Transformer (greedy decoding's NO_CAUSAL_MASK has none: every
# greedy property decodes with one layer, where the last position sees every token with or without the mask)
_DECODE_DOC = (
    "        ### END SOLUTION\n"
    "\n"
    "    def decode(self, tgt, memory, target_mask=None, memory_mask=None):\n"
    '        """hidden = decoder(positional_encoding(tgt_embedding(tgt)), memory, target_mask, memory_mask).\n'
    "\n"
    "        Args:\n"
    "            tgt: LongTensor of target ids, (batch, m_D).\n"
    "            memory: encoder output, (batch, m_E, d_model).\n"
    "            target_mask: optional bool mask for decoder self-attention, (m_D, m_D) (e.g.\n"
    "                causal_mask(m_D)) or (batch, 1 or num_heads, 1 or m_D, m_D).\n"
    "            memory_mask: optional bool mask for cross-attention, (m_D, m_E) or\n"
    "                (batch, 1 or num_heads, 1 or m_D, m_E), e.g. a padding mask (batch, 1, 1, m_E).\n"
    "\n"
    "        Returns:\n"
    "            Hidden states of shape (batch, m_D, d_model) (not logits).\n"
    '        """\n'
    "        ### BEGIN SOLUTION\n"
)

BUGS += [
    Bug(
        "transformer",
        "no_positional_encoding_on_source",
        "encode embedded the source without positions",
        "return self.encoder(self.positional_encoding(self.src_embedding(src)), src_mask)",
        "return self.encoder(self.src_embedding(src), src_mask)",
        mistake=ModelMistake.NO_PE_SRC,
    ),
    Bug(
        "transformer",
        "target_embedding_for_source",
        "encode embedded the source with tgt_embedding",
        "return self.encoder(self.positional_encoding(self.src_embedding(src)), src_mask)",
        "return self.encoder(self.positional_encoding(self.tgt_embedding(src)), src_mask)",
        mistake=ModelMistake.SRC_EMBEDDED_WITH_TGT,
    ),
    Bug(
        "transformer",
        "embedding_not_scaled",
        "looked the tokens up in the nn.Embedding inside each TokenEmbedding: no sqrt(d_model) scaling",
        "        return self.encoder(self.positional_encoding(self.src_embedding(src)), src_mask)\n"
        + _DECODE_DOC
        + "        return self.decoder(self.positional_encoding(self.tgt_embedding(tgt)), memory,\n",
        "        return self.encoder(self.positional_encoding(self.src_embedding.embedding(src)), src_mask)\n"
        + _DECODE_DOC
        + "        return self.decoder(self.positional_encoding(self.tgt_embedding.embedding(tgt)), memory,\n",
        mistake=ModelMistake.NO_EMBEDDING_SCALE,
    ),
    Bug(
        "transformer",
        "softmax_on_output",
        "forward applied a softmax to the generator's output, to return probabilities",
        "return self.generator(self.decode(tgt, memory, target_mask, src_mask))",
        "return torch.softmax(self.generator(self.decode(tgt, memory, target_mask, src_mask)), dim=-1)",
        mistake=ModelMistake.SOFTMAX_OUTPUT,
    ),
    Bug(
        "transformer",
        "src_mask_not_in_encoder",
        "forward encoded the source without src_mask (it only gave it to the decoder)",
        "memory = self.encode(src, src_mask)",
        "memory = self.encode(src)",
        mistake=ModelMistake.NO_ENCODER_MASK,
    ),
    Bug(
        "transformer",
        "target_mask_not_passed",
        "forward called decode with memory_mask=src_mask only: target_mask never reaches the decoder",
        "return self.generator(self.decode(tgt, memory, target_mask, src_mask))",
        "return self.generator(self.decode(tgt, memory, memory_mask=src_mask))",
        mistake=ModelMistake.NO_TARGET_MASK,
    ),
]

# Combinations of two slips at once, and greedy decoding's loop that stops a token short
BUGS += [
    Bug(
        "transformer",
        "no_positional_encoding",
        "left the positional encoding out: encode and decode only embed the tokens",
        "        return self.encoder(self.positional_encoding(self.src_embedding(src)), src_mask)\n"
        + _DECODE_DOC
        + "        return self.decoder(self.positional_encoding(self.tgt_embedding(tgt)), memory,\n",
        "        return self.encoder(self.src_embedding(src), src_mask)\n"
        + _DECODE_DOC
        + "        return self.decoder(self.tgt_embedding(tgt), memory,\n",
        mistake=ModelMistake.NO_PE_SRC | ModelMistake.NO_PE_TGT,
    ),
    Bug(
        "transformer",
        "embeddings_swapped",
        "mixed up the two embeddings: encode used tgt_embedding and decode src_embedding",
        "        return self.encoder(self.positional_encoding(self.src_embedding(src)), src_mask)\n"
        + _DECODE_DOC
        + "        return self.decoder(self.positional_encoding(self.tgt_embedding(tgt)), memory,\n",
        "        return self.encoder(self.positional_encoding(self.tgt_embedding(src)), src_mask)\n"
        + _DECODE_DOC
        + "        return self.decoder(self.positional_encoding(self.src_embedding(tgt)), memory,\n",
        mistake=ModelMistake.SRC_EMBEDDED_WITH_TGT | ModelMistake.TGT_EMBEDDED_WITH_SRC,
    ),
    Bug(
        "transformer",
        "src_mask_ignored",
        "forward never used src_mask: encode(src) and decode(tgt, memory, target_mask)",
        "        memory = self.encode(src, src_mask)\n"
        "        return self.generator(self.decode(tgt, memory, target_mask, src_mask))\n",
        "        memory = self.encode(src)\n"
        "        return self.generator(self.decode(tgt, memory, target_mask))\n",
        mistake=ModelMistake.NO_CROSS_MASK | ModelMistake.NO_ENCODER_MASK,
    ),
    Bug(
        "transformer",
        "greedy_ignores_eos",
        "greedy decoding never looks at eos: it appends the argmax until max_len, finished rows included",
        "            finished = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)\n"
        "            while ys.size(1) < max_len:\n"
        "                target_mask = causal_mask(ys.size(1), device=src.device)\n"
        "                hidden = model.decode(ys, memory, target_mask, src_mask)\n"
        "                next_token = model.generator(hidden[:, -1]).argmax(dim=-1)  # (batch,)\n"
        "                next_token = next_token.masked_fill(finished, eos_id)\n"
        "                ys = torch.cat([ys, next_token.unsqueeze(1)], dim=1)\n"
        "                finished |= next_token == eos_id\n"
        "                if finished.all():\n"
        "                    break\n",
        "            while ys.size(1) < max_len:\n"
        "                target_mask = causal_mask(ys.size(1), device=src.device)\n"
        "                hidden = model.decode(ys, memory, target_mask, src_mask)\n"
        "                next_token = model.generator(hidden[:, -1]).argmax(dim=-1)  # (batch,)\n"
        "                ys = torch.cat([ys, next_token.unsqueeze(1)], dim=1)\n",
        mistake=GreedyMistake.NO_STOP | GreedyMistake.NO_PAD,
    ),
    Bug(
        "transformer",
        "greedy_one_step_short",
        "the loop runs while ys.size(1) < max_len - 1, counting bos separately: one token too few",
        "while ys.size(1) < max_len:",
        "while ys.size(1) < max_len - 1:",
        mistake=GreedyMistake.ONE_STEP_LESS,
    ),
]
