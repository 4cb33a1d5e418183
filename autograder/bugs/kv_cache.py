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
    ),
    Bug(
        "kv_cache",
        "no_causal_mask_inside_step",
        "a multi-token step lets every new token see all the new ones",
        "mask = None if n == 1 else causal_mask(t + n, device=tokens.device)[t:]",
        "mask = None",
        "not masked causally",
    ),
    Bug(
        "kv_cache",
        "positional_encoding_restarted",
        "each step adds the positional encoding of positions 0..n-1",
        "x = encoding.dropout(x + encoding.pe[:, t:t + n].to(x.dtype))",
        "x = encoding(x)",
        "positional encoding restarts at 0",
    ),
    Bug(
        "kv_cache",
        "memory_projected_every_step",
        "cross-attention recomputes the memory's keys/values at every step",
        "x = layer.add_norm_2(x, attend(layer.cross_attention, x, self.memory_keys[i], self.memory_values[i],\n"
        "                                           self.memory_mask))",
        "x = layer.add_norm_2(x, layer.cross_attention(x, self.memory, self.memory, self.memory_mask))",
        "projected again at every step",
    ),
    Bug(
        "kv_cache",
        "cache_shared_across_batch",
        "the memory keys/values of the first row serve every row",
        "            self.memory_keys.append(split_heads(cross.w_k(memory), cross.num_heads))\n"
        "            self.memory_values.append(split_heads(cross.w_v(memory), cross.num_heads))\n",
        "            self.memory_keys.append(split_heads(cross.w_k(memory[:1]), cross.num_heads))\n"
        "            self.memory_values.append(split_heads(cross.w_v(memory[:1]), cross.num_heads))\n",
        "shared across the batch",
    ),
    Bug(
        "kv_cache",
        "prefix_recomputed_every_step",
        "every step recomputes the keys/values of the whole prefix",
        "            k, v = split_heads(own.w_k(x), own.num_heads), split_heads(own.w_v(x), own.num_heads)\n",
        "            k, v = split_heads(own.w_k(x), own.num_heads), split_heads(own.w_v(x), own.num_heads)\n"
        "            if t:  # recompute the prefix's keys and values, then keep only the new ones\n"
        "                prefix = x.new_zeros(x.size(0), t, x.size(2))\n"
        "                own.w_k(prefix), own.w_v(prefix)\n",
        "re-projects the whole prefix",
    ),
    Bug(
        "kv_cache",
        "greedy_without_src_mask",
        "cached_greedy_decode starts the decoder without src_mask",
        "            decoder.start(src, src_mask)\n",
        "            decoder.start(src)\n",
        "src_mask must reach start",
    ),
]
