"""LayerNorm by hand, with each usual mistake as an option (graded side, never shipped): the diagnoses of the
add_norm and attention_numpy properties name the mistake whose output matches a submission's."""

from __future__ import annotations


def ln_variant(
    x,
    weight=None,
    bias=None,
    eps=1e-5,
    ddof=0,
    eps_outside=False,
    dim=-1,
    no_eps=False,
    var_not_std=False,
):
    """LayerNorm in float64, or one of its usual mistakes (dims: an int or a tuple)."""
    x = x.double()
    mean = x.mean(dim, keepdim=True)
    n = 1
    for i in (dim,) if isinstance(dim, int) else dim:
        n *= x.shape[i]
    var = ((x - mean) ** 2).sum(dim, keepdim=True) / (n - ddof)
    if var_not_std:
        y = (x - mean) / (var + eps)
    elif no_eps:
        y = (x - mean) / var.sqrt()
    else:
        y = (x - mean) / (var.sqrt() + eps) if eps_outside else (x - mean) / (var + eps).sqrt()
    if weight is not None:
        y = y * weight.double() + bias.double()
    return y


def np_ln_variant(x, eps=1e-5, ddof=0, eps_outside=False, axis=-1, no_eps=False, var_not_std=False):
    """attention_numpy's layer_norm in float64 (x: a float64 tensor), or one of its usual mistakes."""
    mean = x.mean(axis, keepdim=True)
    var = ((x - mean) ** 2).sum(axis, keepdim=True) / (x.shape[axis] - ddof)
    if var_not_std:
        return (x - mean) / (var + eps)
    if no_eps:
        return (x - mean) / var.sqrt()
    return (x - mean) / (var.sqrt() + eps) if eps_outside else (x - mean) / (var + eps).sqrt()
