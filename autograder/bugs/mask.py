from . import Bug

_CAUSAL = "    return torch.tril(torch.ones(size, size, dtype=torch.bool, device=device))\n"
_CAUSAL_FN = (
    '''def causal_mask(size, device=None):
    """Lower-triangular mask: mask[i, j] = (j <= i).

    Args:
        size: sequence length m.
        device: device of the returned tensor (default: the current default device).

    Returns:
        Bool tensor of shape (size, size), True on and below the diagonal.
    """
    ### BEGIN SOLUTION
'''
    + _CAUSAL
)
_PADDING = "    return (tokens != pad_id)[:, None, None, :]\n"

BUGS = [
    Bug(
        "mask",
        "causal_diagonal_excluded",
        "strictly lower triangle: a position cannot see itself",
        _CAUSAL,
        "    return torch.tril(torch.ones(size, size, dtype=torch.bool, device=device), diagonal=-1)\n",
        "diagonal is excluded",
    ),
    Bug(
        "mask",
        "causal_upper_triangle",
        "triu instead of tril: the future is visible, the past blocked",
        _CAUSAL,
        _CAUSAL.replace("tril", "triu"),
        "upper triangle",
    ),
    Bug(
        "mask",
        "causal_inverted",
        "True marks the blocked (future) positions",
        _CAUSAL,
        "    return torch.triu(torch.ones(size, size, dtype=torch.bool, device=device), diagonal=1)\n",
        "inverted polarity",
    ),
    Bug(
        "mask",
        "causal_float_mask",
        "a float 0/1 mask instead of bool",
        _CAUSAL,
        "    return torch.tril(torch.ones(size, size, device=device))\n",
        "return a bool mask",
        one_deduction="causal_mask_shape_and_dtype",
    ),
    Bug(
        "mask",
        "causal_additive_mask",
        "an additive float mask (0 allowed, -inf blocked) as in nn.Transformer",
        _CAUSAL,
        '    return torch.triu(torch.full((size, size), float("-inf"), device=device), diagonal=1)\n',
        "not a float 0/1 or 0/-inf mask",
    ),
    Bug(
        "mask",
        "causal_no_device_argument",
        "causal_mask(size) has no device parameter",
        _CAUSAL_FN,
        _CAUSAL_FN.replace("(size, device=None)", "(size)").replace(", device=device", ""),
        "accept a device argument",
    ),
    Bug(
        "mask",
        "padding_inverted",
        "True marks the padding (tokens == pad_id)",
        _PADDING,
        "    return (tokens == pad_id)[:, None, None, :]\n",
        "inverted mask",
    ),
    Bug(
        "mask",
        "padding_missing_broadcast_dims",
        "returned (batch, seq) without the two broadcast dims",
        _PADDING,
        "    return tokens != pad_id\n",
        "(batch, 1, 1, seq)",
    ),
    Bug(
        "mask",
        "padding_on_queries",
        "the seq dim in the query position: (batch, 1, seq, 1)",
        _PADDING,
        "    return (tokens != pad_id)[:, None, :, None]\n",
        "seq must be the last dim",
    ),
    Bug(
        "mask",
        "padding_pad_id_zero",
        "compared with 0 instead of pad_id",
        _PADDING,
        "    return (tokens != 0)[:, None, None, :]\n",
        "ignores the pad_id argument",
    ),
]
