from ..properties.models.layers import LayerMistake, StackMistake
from . import Bug

BUGS = [
    Bug(
        "decoder",
        "kv_from_decoder",
        "took the cross-attention's keys and values from the decoder input",
        "self.cross_attention(x, memory, memory, memory_mask)",
        "self.cross_attention(x, x, x, memory_mask)",
        mistake=LayerMistake.CROSS_KEYS_FROM_X,
    ),
    Bug(
        "decoder",
        "target_mask_for_cross_attention",
        "gave the cross-attention the target mask",
        "self.cross_attention(x, memory, memory, memory_mask)",
        "self.cross_attention(x, memory, memory, target_mask)",
        "memory_mask",
    ),
    Bug(
        "decoder",
        "memory_mask_ignored",
        "called the cross-attention without memory_mask",
        "self.cross_attention(x, memory, memory, memory_mask)",
        "self.cross_attention(x, memory, memory)",
        mistake=LayerMistake.NO_CROSS_MASK,
    ),
    Bug(
        "decoder",
        "target_mask_ignored",
        "called the self-attention without target_mask: not causal",
        "self.self_attention(x, x, x, target_mask)",
        "self.self_attention(x, x, x)",
        mistake=LayerMistake.NO_SELF_MASK,
    ),
    Bug(
        "decoder",
        "norms_1_2_swapped",
        "used add_norm_2 after the self-attention and add_norm_1 after the cross",
        "        x = self.add_norm_1(x, self.self_attention(x, x, x, target_mask))\n"
        "        x = self.add_norm_2(x, self.cross_attention(x, memory, memory, memory_mask))\n",
        "        x = self.add_norm_2(x, self.self_attention(x, x, x, target_mask))\n"
        "        x = self.add_norm_1(x, self.cross_attention(x, memory, memory, memory_mask))\n",
        mistake=LayerMistake.NORMS_1_2_SWAPPED,
    ),
    Bug(
        "decoder",
        "cross_before_self",
        "ran the cross-attention before the masked self-attention",
        "        x = self.add_norm_1(x, self.self_attention(x, x, x, target_mask))\n"
        "        x = self.add_norm_2(x, self.cross_attention(x, memory, memory, memory_mask))\n",
        "        x = self.add_norm_1(x, self.cross_attention(x, memory, memory, memory_mask))\n"
        "        x = self.add_norm_2(x, self.self_attention(x, x, x, target_mask))\n",
        mistake=LayerMistake.CROSS_ATTENTION_FIRST,
    ),
    Bug(
        "decoder",
        "same_layer_n_times",
        "built the stack as [layer] * N: one module shared by every step",
        "[DecoderLayer(d_model, num_heads, d_ff, dropout) for _ in range(num_layers)]",
        "[DecoderLayer(d_model, num_heads, d_ff, dropout)] * num_layers",
        mistake=StackMistake.LAST_LAYER_EVERY_STEP,
    ),
    Bug(
        "decoder",
        "reuses_layer_0",
        "applied self.layers[0] at every step of the loop",
        "        for layer in self.layers:\n            x = layer(x, memory, target_mask, memory_mask)\n",
        "        for _ in self.layers:\n            x = self.layers[0](x, memory, target_mask, memory_mask)\n",
        mistake=StackMistake.FIRST_LAYER_EVERY_STEP,
    ),
    Bug(
        "decoder",
        "stack_drops_memory_mask",
        "forgot to pass memory_mask on to the layers",
        "x = layer(x, memory, target_mask, memory_mask)",
        "x = layer(x, memory, target_mask)",
        mistake=StackMistake.NO_MASK,
    ),
    # issue 22: the cross-attention called key first
    Bug(
        "decoder",
        "cross_attention_memory_first",
        "called the cross-attention with the encoder's memory as the query",
        "self.cross_attention(x, memory, memory, memory_mask)",
        "self.cross_attention(memory, memory, x, memory_mask)",
        "the query comes first",
    ),
]

# issue 36: a bug for each mistake model of the decoder layer and stack that had none. CROSS_GETS_TARGET_MASK
# (alone or with SELF_GETS_MEMORY_MASK, the masks swapped) has none that shows its hint: a (m_D, m_D) target_mask
# in the (m_D, m_E) cross-attention is a shape error on the cases with m_E != m_D, which every property with a
# mask draws (target_mask_for_cross_attention is caught by the shape error's hint)
_FORWARD = (
    "        x = self.add_norm_1(x, self.self_attention(x, x, x, target_mask))\n"
    "        x = self.add_norm_2(x, self.cross_attention(x, memory, memory, memory_mask))\n"
    "        return self.add_norm_3(x, self.feed_forward(x))\n"
)

BUGS += [
    Bug(
        "decoder",
        "norms_2_3_swapped",
        "used add_norm_3 after the cross-attention and add_norm_2 after the feed-forward",
        "        x = self.add_norm_2(x, self.cross_attention(x, memory, memory, memory_mask))\n"
        "        return self.add_norm_3(x, self.feed_forward(x))\n",
        "        x = self.add_norm_3(x, self.cross_attention(x, memory, memory, memory_mask))\n"
        "        return self.add_norm_2(x, self.feed_forward(x))\n",
        mistake=LayerMistake.NORMS_2_3_SWAPPED,
    ),
    Bug(
        "decoder",
        "cross_attention_skipped",
        "wrote the layer like the encoder's with a masked self-attention: no cross-attention sub-layer",
        "        x = self.add_norm_2(x, self.cross_attention(x, memory, memory, memory_mask))\n",
        "",
        mistake=LayerMistake.NO_CROSS_ATTENTION,
    ),
    Bug(
        "decoder",
        "feed_forward_skipped",
        "returned after the cross-attention sub-layer: no feed-forward",
        "        x = self.add_norm_2(x, self.cross_attention(x, memory, memory, memory_mask))\n"
        "        return self.add_norm_3(x, self.feed_forward(x))\n",
        "        return self.add_norm_2(x, self.cross_attention(x, memory, memory, memory_mask))\n",
        mistake=LayerMistake.NO_FEED_FORWARD,
    ),
    Bug(
        "decoder",
        "no_residual",
        "did the Norm of Add & Norm but not the Add: normalised each sub-layer's output on its own",
        _FORWARD,
        "        x = self.add_norm_1.norm(self.self_attention(x, x, x, target_mask))\n"
        "        x = self.add_norm_2.norm(self.cross_attention(x, memory, memory, memory_mask))\n"
        "        return self.add_norm_3.norm(self.feed_forward(x))\n",
        mistake=LayerMistake.NO_RESIDUAL,
    ),
    Bug(
        "decoder",
        "stack_drops_target_mask",
        "called the layers with memory_mask=memory_mask only: target_mask never reaches them",
        "x = layer(x, memory, target_mask, memory_mask)",
        "x = layer(x, memory, memory_mask=memory_mask)",
        mistake=StackMistake.NO_TARGET_MASK,
    ),
    Bug(
        "decoder",
        "target_mask_only_first_layer",
        "passed target_mask to the first layer only: after it the future is already hidden",
        "        for layer in self.layers:\n            x = layer(x, memory, target_mask, memory_mask)\n",
        "        for i, layer in enumerate(self.layers):\n"
        "            x = layer(x, memory, target_mask if i == 0 else None, memory_mask)\n",
        mistake=StackMistake.TARGET_MASK_AT_FIRST_ONLY,
    ),
]

# The cross-attention line copy-pasted from the self-attention's, and memory_mask given to the first layer only
BUGS += [
    Bug(
        "decoder",
        "cross_attention_copy_of_self",
        "copy-pasted the self-attention line for the cross-attention and only renamed the module",
        "self.cross_attention(x, memory, memory, memory_mask)",
        "self.cross_attention(x, x, x, target_mask)",
        mistake=LayerMistake.CROSS_KEYS_FROM_X | LayerMistake.CROSS_GETS_TARGET_MASK,
    ),
    Bug(
        "decoder",
        "memory_mask_only_first_layer",
        "passed memory_mask to the first layer only, thinking the padding is hidden after it",
        "        for layer in self.layers:\n            x = layer(x, memory, target_mask, memory_mask)\n",
        "        for i, layer in enumerate(self.layers):\n"
        "            x = layer(x, memory, target_mask, memory_mask if i == 0 else None)\n",
        mistake=StackMistake.MASK_AT_FIRST_ONLY,
    ),
]
