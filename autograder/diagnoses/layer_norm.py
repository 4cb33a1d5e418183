"""LayerNorm by hand, with each usual mistake as a flag (graded side, never shipped): through
properties/models/layer_norm.py, the diagnoses of the add_norm and attention_numpy properties name the mistake
whose output matches a submission's."""

from __future__ import annotations

from ..properties.models.layer_norm import NormMistake


def ln_variant(x, weight=None, bias=None, eps=1e-5, mistake=NormMistake.NONE, dim=-1):
    """LayerNorm in float64 over dim (an int or a tuple), or with `mistake`."""
    x = x.double()
    mean = x.mean(dim, keepdim=True)
    n = 1
    for i in (dim,) if isinstance(dim, int) else dim:
        n *= x.shape[i]
    ddof = 1 if NormMistake.UNBIASED in mistake else 0
    var = ((x - mean) ** 2).sum(dim, keepdim=True) / (n - ddof)
    if NormMistake.VAR_NOT_STD in mistake:
        y = (x - mean) / (var + eps)
    elif NormMistake.NO_EPS in mistake:
        y = (x - mean) / var.sqrt()
    elif NormMistake.EPS_OUTSIDE in mistake:
        y = (x - mean) / (var.sqrt() + eps)
    else:
        y = (x - mean) / (var + eps).sqrt()
    if weight is not None:
        y = y * weight.double() + bias.double()
    return y
