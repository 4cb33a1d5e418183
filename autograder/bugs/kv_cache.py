from ..properties.kv_cache import StepMistake
from ..properties.models.greedy import GreedyMistake
from . import Bug

BUGS = [
    Bug(
        "kv_cache",
        "cache_appended_twice",
        "the new keys and values are appended to the cache twice",
        "            self.self_keys[i] = torch.cat([self.self_keys[i], k], dim=2)  # (batch, h, t+n, d_k)\n"
        "            self.self_values[i] = torch.cat([self.self_values[i], v], dim=2)\n",
        "            self.self_keys[i] = torch.cat([self.self_keys[i], k], dim=2)  # (batch, h, t+n, d_k)\n"
        "            self.self_values[i] = torch.cat([self.self_values[i], v], dim=2)\n"
        "            self.self_keys[i] = torch.cat([self.self_keys[i], k], dim=2)\n"
        "            self.self_values[i] = torch.cat([self.self_values[i], v], dim=2)\n",
        "appended twice",
        caught_visibly=True,
    ),
    Bug(
        "kv_cache",
        "no_causal_mask_inside_step",
        "a multi-token step lets every new token see all the new ones",
        "mask = None if n == 1 else causal_mask(t + n, device=tokens.device)[t:]",
        "mask = None",
        mistake=StepMistake.STEP_SEES_ITSELF_WHOLE,
    ),
    Bug(
        "kv_cache",
        "positional_encoding_restarted",
        "each step adds the positional encoding of positions 0..n-1",
        "x = encoding.dropout(x + encoding.pe[:, t:t + n].to(x.dtype))",
        "x = encoding(x)",
        mistake=StepMistake.POSITIONS_RESTARTED,
    ),
    Bug(
        "kv_cache",
        "memory_projected_every_step",
        "cross-attention recomputes the memory's keys/values at every step",
        "x = layer.add_norm_2(x, attend(layer.cross_attention, x, self.memory_keys[i], self.memory_values[i],\n"
        "                                           self.memory_mask))",
        "x = layer.add_norm_2(x, layer.cross_attention(x, self.memory, self.memory, self.memory_mask))",
        "projected again at every step",
        caught_visibly=True,
    ),
    Bug(
        "kv_cache",
        "cache_shared_across_batch",
        "the memory keys/values of the first row serve every row",
        "            self.memory_keys.append(split_heads(cross.w_k(memory), cross.num_heads))\n"
        "            self.memory_values.append(split_heads(cross.w_v(memory), cross.num_heads))\n",
        "            self.memory_keys.append(split_heads(cross.w_k(memory[:1]), cross.num_heads))\n"
        "            self.memory_values.append(split_heads(cross.w_v(memory[:1]), cross.num_heads))\n",
        mistake=StepMistake.SHARED_MEMORY,
    ),
    Bug(
        "kv_cache",
        "prefix_recomputed_every_step",
        "every step re-projects the keys/values of the whole prefix from each layer's cached inputs",
        "            k, v = split_heads(own.w_k(x), own.num_heads), split_heads(own.w_v(x), own.num_heads)\n"
        "            self.self_keys[i] = torch.cat([self.self_keys[i], k], dim=2)  # (batch, h, t+n, d_k)\n"
        "            self.self_values[i] = torch.cat([self.self_values[i], v], dim=2)\n",
        "            if t == 0 and i == 0:\n"
        "                self.inputs = [x[:, :0]] * len(self.model.decoder.layers)\n"
        "            self.inputs[i] = torch.cat([self.inputs[i], x], dim=1)  # every position's input, re-projected\n"
        "            self.self_keys[i] = split_heads(own.w_k(self.inputs[i]), own.num_heads)\n"
        "            self.self_values[i] = split_heads(own.w_v(self.inputs[i]), own.num_heads)\n",
        "re-projects the whole prefix",
        caught_visibly=True,
    ),
    Bug(
        "kv_cache",
        "memory_keys_projected_in_step",
        "the memory's keys/values are projected in step (from the kept memory), not once in start",
        "self.memory_keys[i], self.memory_values[i],\n",
        "split_heads(layer.cross_attention.w_k(self.memory), own.num_heads),\n"
        "                                           split_heads(layer.cross_attention.w_v(self.memory), own.num_heads),\n",
        "projected again at every step",
    ),
    Bug(
        "kv_cache",
        "greedy_without_src_mask",
        "cached_greedy_decode starts the decoder without src_mask",
        "            decoder.start(src, src_mask)\n",
        "            decoder.start(src)\n",
        "src_mask must reach start",
    ),
    Bug(
        "kv_cache",
        "finished_rows_keep_decoding",
        "a row that produced eos_id goes on decoding while another row is unfinished",
        "                next_token = next_token.masked_fill(finished, eos_id)\n",
        "",
        mistake=GreedyMistake.NO_PAD,
    ),
    Bug(
        "kv_cache",
        "stops_when_one_row_finishes",
        "decoding stops as soon as one row has produced eos_id",
        "if finished.all():",
        "if finished.any():",
        "stop once every row has produced eos_id",
    ),
]

# issue 33: decoding in eval mode, checked visibly
BUGS.append(
    Bug(
        "kv_cache",
        "cached_greedy_in_train_mode",
        "cached_greedy_decode without model.eval(): dropout stays on while decoding",
        "    was_training = model.training\n    model.eval()\n",
        "    was_training = model.training\n",
        "decode with model.eval()",
        caught_visibly=True,
    )
)

# issue 36: a bug for each of StepMistake's flags that had none, each showing its flag's hint
_STEP_MASK = (
    "        mask = None if n == 1 else causal_mask(t + n, device=tokens.device)[t:]  # (n, t+n)\n"
)
BUGS += [
    Bug(
        "kv_cache",
        "step_mask_hides_the_token_itself",
        "built the step's mask as a strict lower triangle, tril(t - 1): a new token does not see itself",
        _STEP_MASK,
        "        mask = None if n == 1 else torch.ones(n, t + n, dtype=torch.bool, device=tokens.device).tril(t - 1)\n",
        mistake=StepMistake.STEP_MASK_BEHIND,
    ),
    Bug(
        "kv_cache",
        "step_mask_sees_the_next_token",
        "built the step's mask with tril(t + 1), counting new token j's position from 1: it sees the next token",
        _STEP_MASK,
        "        mask = None if n == 1 else torch.ones(n, t + n, dtype=torch.bool, device=tokens.device).tril(t + 1)\n",
        mistake=StepMistake.STEP_MASK_AHEAD,
    ),
    Bug(
        "kv_cache",
        "cross_attention_without_memory_mask",
        "forgot to pass the memory_mask to the cross-attention in step",
        "self.memory_keys[i], self.memory_values[i],\n                                           self.memory_mask))",
        "self.memory_keys[i], self.memory_values[i]))",
        mistake=StepMistake.NO_MEMORY_MASK,
    ),
]
