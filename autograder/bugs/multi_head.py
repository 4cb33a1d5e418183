from ..properties.models.multi_head import MhaMistake
from . import Bug

_SPLIT = (
    "        q = self.w_q(query).view(batch, m_q, self.num_heads, self.d_k).transpose(1, 2)\n"
    "        k = self.w_k(key).view(batch, m_k, self.num_heads, self.d_k).transpose(1, 2)\n"
    "        v = self.w_v(value).view(batch, m_k, self.num_heads, self.d_k).transpose(1, 2)\n"
)

# From the head split to the merge: the bugs that get both wrong edit this whole stretch
_SPLIT_TO_MERGE = _SPLIT + (
    "        _, weights = scaled_dot_product_attention(q, k, v, mask)  # (batch, h, m_q, m_k)\n"
    "        self.attention_weights = weights.detach()\n"
    "        heads = self.dropout(weights) @ v  # (batch, h, m_q, d_k)\n"
    "        merged = heads.transpose(1, 2).contiguous().view(batch, m_q, d_model)\n"
)

BUGS = [
    Bug(
        "multi_head",
        "split_without_transpose",
        "split the heads with view(batch, h, m, d_k), no transpose",
        _SPLIT,
        "        q = self.w_q(query).view(batch, self.num_heads, m_q, self.d_k)\n"
        "        k = self.w_k(key).view(batch, self.num_heads, m_k, self.d_k)\n"
        "        v = self.w_v(value).view(batch, self.num_heads, m_k, self.d_k)\n",
        mistake=MhaMistake.SPLIT_WITHOUT_TRANSPOSE,
    ),
    Bug(
        "multi_head",
        "merge_without_transpose",
        "merged the heads back with view, no transpose",
        "merged = heads.transpose(1, 2).contiguous().view(batch, m_q, d_model)",
        "merged = heads.contiguous().view(batch, m_q, d_model)",
        mistake=MhaMistake.MERGE_WITHOUT_TRANSPOSE,
    ),
    Bug(
        "multi_head",
        "strided_head_split",
        "split d_model as (d_k, h): head i reads columns i::h",
        _SPLIT,
        "        q = self.w_q(query).view(batch, m_q, self.d_k, self.num_heads).permute(0, 3, 1, 2)\n"
        "        k = self.w_k(key).view(batch, m_k, self.d_k, self.num_heads).permute(0, 3, 1, 2)\n"
        "        v = self.w_v(value).view(batch, m_k, self.d_k, self.num_heads).permute(0, 3, 1, 2)\n",
        mistake=MhaMistake.SPLIT_STRIDED,
    ),
    Bug(
        "multi_head",
        "q_k_projections_swapped",
        "projected the query with w_k and the key with w_q",
        "        q = self.w_q(query).view(batch, m_q, self.num_heads, self.d_k).transpose(1, 2)\n"
        "        k = self.w_k(key).view(batch, m_k, self.num_heads, self.d_k).transpose(1, 2)\n",
        "        q = self.w_k(query).view(batch, m_q, self.num_heads, self.d_k).transpose(1, 2)\n"
        "        k = self.w_q(key).view(batch, m_k, self.num_heads, self.d_k).transpose(1, 2)\n",
        mistake=MhaMistake.Q_K_SWAPPED,
    ),
    Bug(
        "multi_head",
        "mask_not_passed",
        "forgot to pass the mask to the attention",
        "_, weights = scaled_dot_product_attention(q, k, v, mask)",
        "_, weights = scaled_dot_product_attention(q, k, v)",
        "mask is ignored",
    ),
    Bug(
        "multi_head",
        "mask_unsqueezed",
        "unsqueezed the mask for the heads, though it already broadcasts",
        "_, weights = scaled_dot_product_attention(q, k, v, mask)",
        "_, weights = scaled_dot_product_attention(q, k, v, None if mask is None else mask.unsqueeze(1))",
        "broadcast",
    ),
    Bug(
        "multi_head",
        "no_output_projection",
        "returned the merged heads without w_o",
        "return self.w_o(merged)",
        "return merged",
        mistake=MhaMistake.NO_W_O,
    ),
    Bug(
        "multi_head",
        "no_value_error",
        "no check that num_heads divides d_model",
        "        if d_model % num_heads != 0:\n"
        '            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")\n',
        "",
        "raise ValueError",
    ),
    Bug(
        "multi_head",
        "assert_instead_of_value_error",
        "asserted divisibility instead of raising ValueError",
        "        if d_model % num_heads != 0:\n"
        '            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")\n',
        '        assert d_model % num_heads == 0, "d_model must be divisible by num_heads"\n',
        "not AssertionError",
    ),
    Bug(
        "multi_head",
        "weights_stored_after_dropout",
        "stored the attention weights after dropout",
        "        self.attention_weights = weights.detach()\n        heads = self.dropout(weights) @ v",
        "        weights = self.dropout(weights)\n        self.attention_weights = weights.detach()\n"
        "        heads = weights @ v",
        "stored after dropout",
    ),
    Bug(
        "multi_head",
        "output_from_detached_weights",
        "computed the output from the detached stored weights",
        "heads = self.dropout(weights) @ v",
        "heads = self.dropout(self.attention_weights) @ v",
        "detached",
    ),
    Bug(
        "multi_head",
        "dropout_always_on",
        "used F.dropout with training=True: dropout also in eval mode",
        "heads = self.dropout(weights) @ v",
        "heads = nn.functional.dropout(weights, self.dropout.p, True) @ v",
        "dropout is active in eval mode",
    ),
    Bug(
        "multi_head",
        "bias_ignored",
        "built the projections with bias=True whatever bias says",
        "        self.w_q = nn.Linear(d_model, d_model, bias=bias)\n"
        "        self.w_k = nn.Linear(d_model, d_model, bias=bias)\n"
        "        self.w_v = nn.Linear(d_model, d_model, bias=bias)\n"
        "        self.w_o = nn.Linear(d_model, d_model, bias=bias)\n",
        "        self.w_q = nn.Linear(d_model, d_model)\n"
        "        self.w_k = nn.Linear(d_model, d_model)\n"
        "        self.w_v = nn.Linear(d_model, d_model)\n"
        "        self.w_o = nn.Linear(d_model, d_model)\n",
        "bias=bias",
    ),
    Bug(
        "multi_head",
        "weights_not_detached",
        "stored the attention weights without detaching them",
        "self.attention_weights = weights.detach()",
        "self.attention_weights = weights",
        "detached copy",
    ),
]

BUGS += [
    Bug(
        "multi_head",
        "no_dropout_on_weights",
        "never applied dropout to the attention weights",
        "heads = self.dropout(weights) @ v",
        "heads = weights @ v",
        "dropout is never applied",
        caught_visibly=True,
    ),
    Bug(
        "multi_head",
        "no_attention_weights_attribute",
        "never stored the attention weights",
        "        self.attention_weights = weights.detach()\n",
        "",
        "store the weights in forward",
        one_deduction="multi_head_cross_attention_shape",
    ),
    # issue 22: the course notebooks' own mistakes, each with the hint of its class
    Bug(
        "multi_head",
        "variable_named_like_the_function",
        "stored the attention's result in a variable named like the function (the course's habit)",
        "_, weights = scaled_dot_product_attention(q, k, v, mask)",
        "scaled_dot_product_attention = scaled_dot_product_attention(q, k, v, mask)\n"
        "        weights = scaled_dot_product_attention[1]",
        "is assigned somewhere in this function",
    ),
    Bug(
        "multi_head",
        "pair_not_unpacked",
        "used the (output, weights) pair of the attention as a tensor",
        "heads = self.dropout(weights) @ v",
        "heads = scaled_dot_product_attention(q, k, v, mask).transpose(1, 1)",
        "arrived where a tensor was expected",
    ),
]

# issue 36: a bug for each of MhaMistake's flags that had none, each showing its flag's hint
BUGS += [
    Bug(
        "multi_head",
        "k_v_projections_swapped",
        "projected the key with w_v and the value with w_k",
        "        k = self.w_k(key).view(batch, m_k, self.num_heads, self.d_k).transpose(1, 2)\n"
        "        v = self.w_v(value).view(batch, m_k, self.num_heads, self.d_k).transpose(1, 2)\n",
        "        k = self.w_v(key).view(batch, m_k, self.num_heads, self.d_k).transpose(1, 2)\n"
        "        v = self.w_k(value).view(batch, m_k, self.num_heads, self.d_k).transpose(1, 2)\n",
        mistake=MhaMistake.K_V_SWAPPED,
    ),
    Bug(
        "multi_head",
        "q_v_projections_swapped",
        "projected the query with w_v and the value with w_q",
        _SPLIT,
        "        q = self.w_v(query).view(batch, m_q, self.num_heads, self.d_k).transpose(1, 2)\n"
        "        k = self.w_k(key).view(batch, m_k, self.num_heads, self.d_k).transpose(1, 2)\n"
        "        v = self.w_q(value).view(batch, m_k, self.num_heads, self.d_k).transpose(1, 2)\n",
        mistake=MhaMistake.Q_V_SWAPPED,
    ),
    Bug(
        "multi_head",
        "values_projected_with_w_k",
        "copied the key's line for the value and left w_k in it",
        "v = self.w_v(value)",
        "v = self.w_k(value)",
        mistake=MhaMistake.V_FROM_W_K,
    ),
    Bug(
        "multi_head",
        "scaled_by_d_model",
        "wrote the attention inline, as in the course's notebook, and divided by sqrt(d_model)",
        "_, weights = scaled_dot_product_attention(q, k, v, mask)",
        "scores = q @ k.transpose(-2, -1) / d_model**0.5\n"
        "        if mask is not None:\n"
        '            scores = scores.masked_fill(mask == 0, float("-inf"))\n'
        "        scores = (scores - scores.amax(dim=-1, keepdim=True)).exp()\n"
        "        weights = scores / scores.sum(dim=-1, keepdim=True)",
        mistake=MhaMistake.SCALED_BY_D_MODEL,
    ),
    Bug(
        "multi_head",
        "split_and_merge_without_transpose",
        "split the heads with view(batch, h, m, d_k) and merged them back with a view, no transpose either way",
        _SPLIT_TO_MERGE,
        "        q = self.w_q(query).view(batch, self.num_heads, m_q, self.d_k)\n"
        "        k = self.w_k(key).view(batch, self.num_heads, m_k, self.d_k)\n"
        "        v = self.w_v(value).view(batch, self.num_heads, m_k, self.d_k)\n"
        "        _, weights = scaled_dot_product_attention(q, k, v, mask)  # (batch, h, m_q, m_k)\n"
        "        self.attention_weights = weights.detach()\n"
        "        heads = self.dropout(weights) @ v  # (batch, h, m_q, d_k)\n"
        "        merged = heads.contiguous().view(batch, m_q, d_model)\n",
        mistake=MhaMistake.SPLIT_WITHOUT_TRANSPOSE | MhaMistake.MERGE_WITHOUT_TRANSPOSE,
    ),
]

# The strided split of strided_head_split with the merge of merge_without_transpose
BUGS += [
    Bug(
        "multi_head",
        "strided_split_and_merge_without_transpose",
        "split d_model as (d_k, h) and permuted the heads forward, then merged them back with a plain view",
        _SPLIT_TO_MERGE,
        "        q = self.w_q(query).view(batch, m_q, self.d_k, self.num_heads).permute(0, 3, 1, 2)\n"
        "        k = self.w_k(key).view(batch, m_k, self.d_k, self.num_heads).permute(0, 3, 1, 2)\n"
        "        v = self.w_v(value).view(batch, m_k, self.d_k, self.num_heads).permute(0, 3, 1, 2)\n"
        "        _, weights = scaled_dot_product_attention(q, k, v, mask)  # (batch, h, m_q, m_k)\n"
        "        self.attention_weights = weights.detach()\n"
        "        heads = self.dropout(weights) @ v  # (batch, h, m_q, d_k)\n"
        "        merged = heads.contiguous().view(batch, m_q, d_model)\n",
        mistake=MhaMistake.SPLIT_STRIDED | MhaMistake.MERGE_WITHOUT_TRANSPOSE,
    ),
]
