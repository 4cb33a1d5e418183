from ..properties.models.layers import LayerMistake, StackMistake
from . import Bug

_FORWARD = (
    "        x = self.add_norm_1(x, self.self_attention(x, x, x, mask))\n"
    "        return self.add_norm_2(x, self.feed_forward(x))\n"
)

BUGS = [
    Bug(
        "encoder",
        "pre_norm",
        "normalised before each sub-layer (pre-norm) instead of after the residual",
        _FORWARD,
        "        y = self.add_norm_1.norm(x)\n"
        "        x = x + self.self_attention(y, y, y, mask)\n"
        "        return x + self.feed_forward(self.add_norm_2.norm(x))\n",
        mistake=LayerMistake.PRE_NORM,
    ),
    Bug(
        "encoder",
        "residual_after_norm",
        "added the residual after normalising the sub-layer's output",
        _FORWARD,
        "        x = x + self.add_norm_1.norm(self.self_attention(x, x, x, mask))\n"
        "        return x + self.add_norm_2.norm(self.feed_forward(x))\n",
        mistake=LayerMistake.NORM_INSIDE_RESIDUAL,
    ),
    Bug(
        "encoder",
        "feed_forward_skipped",
        "returned after the attention sub-layer: no feed-forward",
        "        return self.add_norm_2(x, self.feed_forward(x))\n",
        "        return x\n",
        mistake=LayerMistake.NO_FEED_FORWARD,
    ),
    Bug(
        "encoder",
        "norms_swapped",
        "used add_norm_2 after the attention and add_norm_1 after the feed-forward",
        _FORWARD,
        "        x = self.add_norm_2(x, self.self_attention(x, x, x, mask))\n"
        "        return self.add_norm_1(x, self.feed_forward(x))\n",
        mistake=LayerMistake.NORMS_1_2_SWAPPED,
    ),
    Bug(
        "encoder",
        "mask_not_passed",
        "called the self-attention without the mask",
        "self.self_attention(x, x, x, mask)",
        "self.self_attention(x, x, x)",
        mistake=LayerMistake.NO_SELF_MASK,
    ),
    Bug(
        "encoder",
        "same_layer_n_times",
        "built the stack as [layer] * N: one module shared by every step",
        "[EncoderLayer(d_model, num_heads, d_ff, dropout) for _ in range(num_layers)]",
        "[EncoderLayer(d_model, num_heads, d_ff, dropout)] * num_layers",
        mistake=StackMistake.LAST_LAYER_EVERY_STEP,
    ),
    Bug(
        "encoder",
        "reuses_layer_0",
        "applied self.layers[0] at every step of the loop",
        "        for layer in self.layers:\n            x = layer(x, mask)\n",
        "        for _ in self.layers:\n            x = self.layers[0](x, mask)\n",
        mistake=StackMistake.FIRST_LAYER_EVERY_STEP,
    ),
    Bug(
        "encoder",
        "stack_drops_mask",
        "forgot to pass the mask on to the layers",
        "x = layer(x, mask)",
        "x = layer(x)",
        mistake=StackMistake.NO_MASK,
    ),
    Bug(
        "encoder",
        "mask_only_first_layer",
        "passed the mask to the first layer only",
        "        for layer in self.layers:\n            x = layer(x, mask)\n",
        "        for i, layer in enumerate(self.layers):\n            x = layer(x, mask if i == 0 else None)\n",
        mistake=StackMistake.MASK_AT_FIRST_ONLY,
    ),
    # issue 22: the course notebooks' order, MultiHeadAttention(heads, dim_embedding)
    Bug(
        "encoder",
        "heads_first",
        "built the self-attention with the number of heads first, as the course notebooks do",
        "self.self_attention = MultiHeadAttention(d_model, num_heads, dropout)",
        "self.self_attention = MultiHeadAttention(num_heads, d_model, dropout)",
        "d_model first",
    ),
]

# issue 36: a bug for each mistake model of the layer and the stack that had none
_LOOP = "        for layer in self.layers:\n            x = layer(x, mask)\n        return x\n"

BUGS += [
    Bug(
        "encoder",
        "no_residual",
        "did the Norm of Add & Norm but not the Add: normalised each sub-layer's output on its own",
        _FORWARD,
        "        x = self.add_norm_1.norm(self.self_attention(x, x, x, mask))\n"
        "        return self.add_norm_2.norm(self.feed_forward(x))\n",
        mistake=LayerMistake.NO_RESIDUAL,
    ),
    Bug(
        "encoder",
        "attention_result_unused",
        "kept the attention sub-layer's result in a new variable and went on with x: the feed-forward never sees it",
        "        x = self.add_norm_1(x, self.self_attention(x, x, x, mask))\n",
        "        attended = self.add_norm_1(x, self.self_attention(x, x, x, mask))\n",
        mistake=LayerMistake.NO_SELF_ATTENTION,
    ),
    Bug(
        "encoder",
        "layers_reversed",
        "looped over reversed(self.layers), from the top of the stack down",
        "for layer in self.layers:",
        "for layer in reversed(self.layers):",
        mistake=StackMistake.REVERSED,
    ),
    Bug(
        "encoder",
        "layers_not_chained",
        "gave every layer the encoder's input x instead of the previous layer's output",
        _LOOP,
        "        for layer in self.layers:\n            out = layer(x, mask)\n        return out\n",
        mistake=StackMistake.ONLY_LAST,
    ),
    Bug(
        "encoder",
        "return_inside_loop",
        "indented the return inside the loop: it returns after the first layer",
        _LOOP,
        "        for layer in self.layers:\n            x = layer(x, mask)\n            return x\n",
        mistake=StackMistake.ONLY_FIRST,
    ),
]
