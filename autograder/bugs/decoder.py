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
