from ..suite.numpy_warmup import AttentionMistake
from . import Bug

BUGS = [
    Bug(
        "attention",
        "softmax_wrong_axis",
        "softmax over dim 0 instead of the given dim",
        '    x_max = x.amax(dim=dim, keepdim=True)\n    x_max = torch.where(x_max == float("-inf"), torch.zeros_like(x_max), x_max)\n    exp = torch.exp(x - x_max)\n    total = exp.sum(dim=dim, keepdim=True)',
        '    x_max = x.amax(dim=0, keepdim=True)\n    x_max = torch.where(x_max == float("-inf"), torch.zeros_like(x_max), x_max)\n    exp = torch.exp(x - x_max)\n    total = exp.sum(dim=0, keepdim=True)',
        "wrong axis",
    ),
    Bug(
        "attention",
        "softmax_no_max_subtraction",
        "exp(x) without subtracting the max: overflows",
        "exp = torch.exp(x - x_max)",
        "exp = torch.exp(x)",
        "subtract the row max",
    ),
    Bug(
        "attention",
        "missing_scale",
        "forgot to divide the scores by sqrt(d_k)",
        "scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)",
        "scores = query @ key.transpose(-2, -1)",
        mistake=AttentionMistake.NO_SCALE,
    ),
    Bug(
        "attention",
        "scale_by_d_k",
        "divided by d_k instead of sqrt(d_k)",
        "scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)",
        "scores = query @ key.transpose(-2, -1) / d_k",
        mistake=AttentionMistake.SCALED_BY_D_K,
    ),
    Bug(
        "attention",
        "inverted_mask",
        "masked the allowed positions (True = blocked)",
        'scores = scores.masked_fill(~mask, float("-inf"))',
        'scores = scores.masked_fill(mask, float("-inf"))',
        "inverted mask",
    ),
    Bug(
        "attention",
        "softmax_over_queries",
        "softmax over the queries (dim -2)",
        "weights = softmax(scores, dim=-1)\n    return",
        "weights = softmax(scores, dim=-2)\n    return",
        "over the queries",
    ),
    Bug(
        "attention",
        "q_k_swapped",
        "scores computed as key @ query^T",
        "scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)",
        "scores = key @ query.transpose(-2, -1) / math.sqrt(d_k)",
        "swapped",
    ),
    Bug(
        "attention",
        "mask_after_softmax",
        "zeroed the masked weights after the softmax",
        '        scores = scores.masked_fill(~mask, float("-inf"))\n    weights = softmax(scores, dim=-1)\n',
        "        pass\n    weights = softmax(scores, dim=-1)\n    if mask is not None:\n        weights = weights.masked_fill(~mask, 0.0)\n",
        "mask applied after the softmax",
    ),
    Bug(
        "attention",
        "fully_masked_nan",
        "no guard for fully masked rows: NaN",
        '    x_max = torch.where(x_max == float("-inf"), torch.zeros_like(x_max), x_max)\n',
        "",
        "fully masked row",
    ),
    Bug(
        "attention",
        "minus_1e9_mask",
        "masked with -1e9 instead of -inf",
        'scores = scores.masked_fill(~mask, float("-inf"))',
        "scores = scores.masked_fill(~mask, -1e9)",
        "-1e9",
    ),
]

BUGS.append(
    Bug(
        "attention",
        "returns_weights_first",
        "returned (weights, output) instead of (output, weights)",
        "return weights @ value, weights",
        "return weights, weights @ value",
        "return output, weights",
        one_deduction="attention_shapes_for_cross_attention",
    )
)

# issue 33: a scale that reads a leading dim, and a reshape taken for a transpose
BUGS += [
    Bug(
        "attention",
        "scale_by_num_heads_times_d_k",
        "on (batch, heads, m, d_k) inputs the scores are divided by sqrt(num_heads * d_k)",
        "    d_k = query.size(-1)\n",
        "    d_k = query.size(-1) * (query.size(1) if query.dim() == 4 else 1)\n",
        "the scale counts the heads",
        caught_visibly=True,
    ),
    Bug(
        "attention",
        "key_view_as_transpose",
        "key.view(..., d_k, m_k) used as the transpose of the keys",
        "scores = query @ key.transpose(-2, -1) / math.sqrt(d_k)",
        "scores = query @ key.view(*key.shape[:-2], key.size(-1), key.size(-2)) / math.sqrt(d_k)",
        "a view is not a transpose",
        caught_visibly=True,
    ),
]
