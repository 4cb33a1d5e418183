from ..properties.models.layer_norm import NormMistake
from ..suite.numpy_warmup import AttentionMistake
from . import Bug

_MAX = "    x_max = np.max(x, axis=axis, keepdims=True)\n"
_GUARD = "    x_max = np.where(np.isneginf(x_max), 0.0, x_max)  # all -inf slice: shift by 0\n"
_SUM = "    exp = np.exp(x - x_max)\n    total = np.sum(exp, axis=axis, keepdims=True)\n"

BUGS = [
    Bug(
        "attention_numpy",
        "softmax_axis_0",
        "softmax normalised over axis 0 instead of the given axis",
        _MAX + _GUARD + _SUM,
        _MAX.replace("axis=axis", "axis=0") + _GUARD + _SUM.replace("axis=axis", "axis=0"),
        "wrong axis",
    ),
    Bug(
        "attention_numpy",
        "softmax_no_max_subtraction",
        "np.exp(x) without subtracting the max: overflows",
        "    exp = np.exp(x - x_max)\n",
        "    exp = np.exp(x)\n",
        "subtract the max",
    ),
    Bug(
        "attention_numpy",
        "softmax_all_neg_inf_nan",
        "no guard for an all -inf slice: NaN (fully masked rows)",
        _GUARD,
        "",
        "fully masked row",
    ),
    Bug(
        "attention_numpy",
        "attention_no_scale",
        "forgot to divide the scores by sqrt(d_k)",
        "scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k)",
        "scores = q @ np.swapaxes(k, -1, -2)",
        mistake=AttentionMistake.NO_SCALE,
    ),
    Bug(
        "attention_numpy",
        "attention_scale_by_d_k",
        "divided the scores by d_k instead of sqrt(d_k)",
        "scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k)",
        "scores = q @ np.swapaxes(k, -1, -2) / d_k",
        mistake=AttentionMistake.SCALED_BY_D_K,
    ),
    Bug(
        "attention_numpy",
        "attention_inverted_mask",
        "blocked the allowed positions (True = blocked)",
        "scores = np.where(mask, scores, -np.inf)",
        "scores = np.where(mask, -np.inf, scores)",
        "inverted mask",
    ),
    Bug(
        "attention_numpy",
        "attention_softmax_over_queries",
        "softmax over the queries (axis -2)",
        "    weights = softmax(scores, axis=-1)\n    return",
        "    weights = softmax(scores, axis=-2)\n    return",
        mistake=AttentionMistake.SOFTMAX_OVER_QUERIES,
    ),
    Bug(
        "attention_numpy",
        "layer_norm_unbiased_variance",
        "np.var with ddof=1 (unbiased) in layer_norm",
        "    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)\n",
        "    var = np.var(x, axis=-1, ddof=1, keepdims=True)\n",
        mistake=NormMistake.UNBIASED,
    ),
    Bug(
        "attention_numpy",
        "layer_norm_eps_outside_sqrt",
        "added eps to the standard deviation, not the variance",
        "return (x - mean) / np.sqrt(var + eps)",
        "return (x - mean) / (np.sqrt(var) + eps)",
        mistake=NormMistake.EPS_OUTSIDE,
    ),
    Bug(
        "attention_numpy",
        "layer_norm_ignores_eps",
        "hard-coded eps = 1e-5, ignoring the argument",
        "return (x - mean) / np.sqrt(var + eps)",
        "return (x - mean) / np.sqrt(var + 1e-5)",
        "ignores the eps argument",
    ),
    Bug(
        "attention_numpy",
        "layer_norm_wrong_axis",
        "mean and variance over axis 0",
        "    mean = np.mean(x, axis=-1, keepdims=True)\n    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)\n",
        "    mean = np.mean(x, axis=0, keepdims=True)\n    var = np.mean((x - mean) ** 2, axis=0, keepdims=True)\n",
        "wrong axis",
    ),
]

# One mistake, one deduction: a float64 result for float32 inputs fails the one dtype property only.
BUGS.append(
    Bug(
        "attention_numpy",
        "attention_scale_promotes_to_float64",
        "divided by np.sqrt(d_k): a float64 scalar promotes float32 scores to float64 (NumPy 2)",
        "scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k)",
        "scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)",
        "keep the input's dtype",
        one_deduction="np_attention_shapes_and_dtype",
    )
)

# issue 22: the NumPy habits of the course's first notebook
BUGS += [
    Bug(
        "attention_numpy",
        "dot_T_on_a_batch",
        "transposed the keys with .T, which reverses every axis of a batched array",
        "scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k)",
        "scores = q @ k.T / math.sqrt(d_k)",
        "reverses every axis",
    ),
    Bug(
        "attention_numpy",
        "elementwise_weights_times_values",
        "mixed the values with an element-wise product, weights * v",
        "return weights @ v, weights",
        "return weights * v, weights",
        "multiplies element by element",
    ),
]

# issue 33: axis 1, right on 2-D inputs; a 1-D input crashes on it, a 3-D one shows it
BUGS.append(
    Bug(
        "attention_numpy",
        "layer_norm_axis_1",
        "mean and variance over axis 1",
        "    mean = np.mean(x, axis=-1, keepdims=True)\n    var = np.mean((x - mean) ** 2, axis=-1, keepdims=True)\n",
        "    mean = np.mean(x, axis=1, keepdims=True)\n    var = np.mean((x - mean) ** 2, axis=1, keepdims=True)\n",
        "wrong axis",
        caught_visibly=True,
    )
)

# issue 36: a bug for NormMistake.VAR_NOT_STD in the NumPy layer_norm, showing its hint
BUGS += [
    Bug(
        "attention_numpy",
        "layer_norm_divided_by_the_variance",
        "forgot np.sqrt in layer_norm: divided by var + eps",
        "return (x - mean) / np.sqrt(var + eps)",
        "return (x - mean) / (var + eps)",
        mistake=NormMistake.VAR_NOT_STD,
    ),
]
