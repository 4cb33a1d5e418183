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
