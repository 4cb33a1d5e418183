from ..properties.models.layer_norm import NormMistake
from . import Bug

_STATS = (
    "        mean = x.mean(dim=-1, keepdim=True)\n"
    "        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)\n"
)
_OUT = "        return (x - mean) / torch.sqrt(var + self.eps) * self.weight + self.bias\n"
_ADD = "        return self.norm(x + self.dropout(sublayer_output))\n"

BUGS = [
    Bug(
        "add_norm",
        "unbiased_variance",
        "x.var(dim=-1) uses the unbiased variance (divides by d - 1)",
        "        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)\n",
        "        var = x.var(dim=-1, keepdim=True)\n",
        mistake=NormMistake.UNBIASED,
    ),
    Bug(
        "add_norm",
        "eps_outside_sqrt",
        "added eps to the standard deviation instead of the variance",
        _OUT,
        "        return (x - mean) / (torch.sqrt(var) + self.eps) * self.weight + self.bias\n",
        mistake=NormMistake.EPS_OUTSIDE,
    ),
    Bug(
        "add_norm",
        "normalise_over_dim_0",
        "mean and variance over dim 0 (the batch)",
        _STATS,
        _STATS.replace("dim=-1", "dim=0"),
        "wrong dim",
    ),
    Bug(
        "add_norm",
        "no_affine",
        "forgot to apply weight and bias",
        _OUT,
        "        return (x - mean) / torch.sqrt(var + self.eps)\n",
        "weight and bias are not applied",
    ),
    Bug(
        "add_norm",
        "weight_initialised_randomly",
        "weight initialised with randn instead of ones",
        "self.weight = nn.Parameter(torch.ones(d_model))",
        "self.weight = nn.Parameter(torch.randn(d_model))",
        "initialise weight to ones",
    ),
    Bug(
        "add_norm",
        "eps_ignored",
        "hard-coded eps = 1e-5 in forward",
        _OUT,
        _OUT.replace("self.eps", "1e-5"),
        "ignores the eps argument",
    ),
    Bug(
        "add_norm",
        "residual_after_norm",
        "norm(x) + sublayer_output",
        _ADD,
        "        return self.norm(x) + self.dropout(sublayer_output)\n",
        "residual",
    ),
    Bug(
        "add_norm",
        "residual_missing",
        "norm(sublayer_output): no residual connection",
        _ADD,
        "        return self.norm(self.dropout(sublayer_output))\n",
        "residual is missing",
    ),
    Bug(
        "add_norm",
        "dropout_always_on",
        "F.dropout(..., training=True): dropout also in eval mode",
        _ADD,
        "        return self.norm(x + nn.functional.dropout(sublayer_output, self.dropout.p, training=True))\n",
        "in eval mode dropout is the identity",
    ),
    Bug(
        "add_norm",
        "dropout_after_norm",
        "dropout applied to the normalised sum",
        _ADD,
        "        return self.dropout(self.norm(x + sublayer_output))\n",
        "dropout goes on the sublayer output",
        caught_visibly=True,
    ),
]

BUGS.append(
    Bug(
        "add_norm",
        "no_dropout",
        "never applied dropout to the sublayer output",
        _ADD,
        "        return self.norm(x + sublayer_output)\n",
        "dropout is never applied",
        caught_visibly=True,
    )
)

# issue 22: the course's LayerNorm constant
BUGS.append(
    Bug(
        "add_norm",
        "eps_1e_6",
        "used eps=1e-6 (the course's constant) as LayerNorm's default",
        "def __init__(self, d_model, eps=1e-5):",
        "def __init__(self, d_model, eps=1e-6):",
        "eps = 1e-6",
    )
)

# issue 33: dropout in the wrong place in training mode, checked visibly (the self-check shows it)
BUGS += [
    Bug(
        "add_norm",
        "dropout_on_the_sum",
        "dropout applied to the sum x + sublayer_output",
        _ADD,
        "        return self.norm(self.dropout(x + sublayer_output))\n",
        "not dropout of the sum",
        caught_visibly=True,
    ),
    Bug(
        "add_norm",
        "dropout_on_the_residual",
        "dropout applied to x (the residual) instead of the sublayer output",
        _ADD,
        "        return self.norm(self.dropout(x) + sublayer_output)\n",
        "dropout goes on the sublayer output only",
        caught_visibly=True,
    ),
]

# issue 36: a bug for NormMistake.VAR_NOT_STD, showing its hint
BUGS += [
    Bug(
        "add_norm",
        "divided_by_the_variance",
        "forgot the square root: divided by var + eps",
        _OUT,
        "        return (x - mean) / (var + self.eps) * self.weight + self.bias\n",
        mistake=NormMistake.VAR_NOT_STD,
    ),
]

# NormMistake.NO_EPS: eps stored in __init__ but never used
BUGS += [
    Bug(
        "add_norm",
        "eps_left_out",
        "stored eps in __init__ but divided by torch.sqrt(var) alone",
        _OUT,
        "        return (x - mean) / torch.sqrt(var) * self.weight + self.bias\n",
        mistake=NormMistake.NO_EPS,
    ),
]
