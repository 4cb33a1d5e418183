"""What the by-hand rules forbid: the operator families (what a library call must not compute for the student, by
pattern over torch's operator names), the named sets of library names, and the survey of torch, NumPy and SciPy
that keeps both honest (docs/byhand.md). The run-time guard (runtime_guard.py) refuses the families' kernels; the
static scan (static_scan.py) refuses each component's names (STATIC).
"""

from __future__ import annotations

import re
from types import MappingProxyType, ModuleType

from ..components import COMPONENTS
from ..i18n import N_

# An operator is forbidden where it computes the exercise's result in one call: a softmax (log_softmax, logsumexp,
# logcumsumexp and logaddexp included: exp(log_softmax), the gradient of logsumexp, exp(x - logcumsumexp(x)[-1])
# and exp(x - logaddexp folded over the axis) are softmax), a normalisation over features with its own mean and
# variance (layer, group, batch, instance, RMS norm), a fused attention, or a library loss. The ingredients stay
# allowed: reductions (mean, var, var_mean, std, sum, amax, cumsum, vector norms), elementwise ops (exp, log,
# xlogy, entr), gather, matmul. docs/byhand.md says how each pattern was found (survey()) and what is allowed.
FAMILIES: MappingProxyType = MappingProxyType(
    {
        "softmax": re.compile(r"softmax|softmin|logsumexp|logcumsumexp|logaddexp"),
        "norm": re.compile(r"(layer|group|batch|instance|rms)_norm"),
        "attention": re.compile(
            r"attention|_fused_sdp|_transformer_encoder_layer|_transform_bias_rescale_qkv"
        ),
        # a library loss computes the whole (smoothed) cross-entropy in one call: cross_entropy, nll_loss,
        # kl_div, and any other library loss (poisson_nll_loss(log_softmax(x), q, log_input=True) is the
        # smoothed cross-entropy plus one)
        "loss": re.compile(r"loss|cross_entropy|nll|kl_div"),
    }
)
# What each family is, as a student reads it (translated where a ForbiddenCall is made).
FAMILY_TEXT = MappingProxyType(
    {
        "softmax": N_(
            "a library softmax: torch.softmax, F.softmax, F.log_softmax, torch.sparse.softmax, "
            "torch.logsumexp, torch.logcumsumexp, torch.logaddexp..."
        ),
        "norm": N_(
            "a library normalisation: F.layer_norm, nn.LayerNorm, F.group_norm, F.batch_norm, "
            "F.instance_norm, F.rms_norm..."
        ),
        "attention": N_(
            "a library attention: F.scaled_dot_product_attention, nn.MultiheadAttention, "
            "nn.TransformerEncoderLayer..."
        ),
        "loss": N_(
            "a library loss: F.cross_entropy (label_smoothing=...), nn.CrossEntropyLoss, F.nll_loss, "
            "F.kl_div, torch.distributions.kl_divergence..."
        ),
    }
)


def family_ops(op_names=None) -> dict[str, frozenset[str]]:
    """family -> the qualified operator names ('aten::_softmax.out') in torch's registry that belong to it."""
    import torch

    names = torch._C._dispatch_get_all_op_names() if op_names is None else op_names
    found = {}
    for family, pattern in FAMILIES.items():
        found[family] = frozenset(
            n for n in names if pattern.search(n.partition("::")[2].partition(".")[0])
        )
    return found


# The survey's wider net (docs/byhand.md): every name in torch's registry and in the Python namespaces a student
# reaches (torch, torch.nn.functional, torch.nn, torch.special, torch.linalg, Tensor, torch.distributions, numpy,
# scipy.special) that looks like a family, so a name the families miss is seen and decided on (tests/test_rules.py).
SURVEY = re.compile(
    r"soft|logsumexp|logcumsumexp|logaddexp|norm|attention|attn|sdp|loss|entrop|nll|kl_|divergence"
)
SURVEYED_NAMESPACES = (
    "torch",
    "torch.nn.functional",
    "torch.nn",
    "torch.special",
    "torch.linalg",
    "torch.distributions",
    "torch.distributions.kl",
    "numpy",
    "scipy.special",
)


def survey() -> dict[str, list[str]]:
    """namespace -> the names in it that SURVEY matches ('aten' for torch's operator registry)."""
    import importlib

    import torch

    found = {
        "aten": sorted(
            {
                n.partition("::")[2].partition(".")[0]
                for n in torch._C._dispatch_get_all_op_names()
                if n.startswith("aten::")
            }
        )
    }
    for name in SURVEYED_NAMESPACES:
        try:
            namespace = importlib.import_module(name)
        except ImportError:
            continue
        # Functions and classes, not submodules (torch.nn.attention holds kernel choices, not an attention).
        # Read from the namespace's own dict: getattr would import NumPy's lazy submodules (f2py, testing, ...),
        # 0.06 s of CPU at every import of the rules, to leave them out.
        own = vars(namespace)
        found[name] = sorted(
            n for n in dir(namespace) if n in own and not isinstance(own[n], ModuleType)
        )
    found["Tensor"] = sorted(dir(torch.Tensor))
    return {where: [n for n in names if SURVEY.search(n.lower())] for where, names in found.items()}


# Names that may not appear as attributes or imports from a library, in named sets; a component's declaration
# says which sets apply to it.
FORBIDDEN_NAMES: MappingProxyType = MappingProxyType(
    {
        "attention": frozenset(
            {
                "scaled_dot_product_attention",
                "MultiheadAttention",
                "multi_head_attention_forward",
                "_native_multi_head_attention",
                "_scaled_dot_product_attention_math",
                "_scaled_dot_product_flash_attention_for_cpu",
                "_transformer_encoder_layer_fwd",
            }
        ),
        "softmax": frozenset(
            {
                "softmax",
                "log_softmax",
                "_softmax",
                "_log_softmax",
                "_safe_softmax",
                "_sparse_softmax",
                "_masked_softmax",
                "softmin",
                "gumbel_softmax",
                "logsumexp",
                "logcumsumexp",
                "_logcumsumexp",
                "logaddexp",
                "logaddexp2",
                "Softmax",
                "LogSoftmax",
                "Softmin",
            }
        ),
        "norm": frozenset(
            {
                "layer_norm",
                "LayerNorm",
                "native_layer_norm",
                "rms_norm",
                "RMSNorm",
                "_fused_rms_norm",
                "group_norm",
                "GroupNorm",
                "native_group_norm",
                "batch_norm",
                "native_batch_norm",
                "BatchNorm1d",
                "BatchNorm2d",
                "BatchNorm3d",
                "instance_norm",
                "InstanceNorm1d",
                "InstanceNorm2d",
                "InstanceNorm3d",
                "local_response_norm",
                "LocalResponseNorm",
            }
        ),
        "transformer": frozenset(
            {
                "Transformer",
                "TransformerEncoder",
                "TransformerDecoder",
                "TransformerEncoderLayer",
                "TransformerDecoderLayer",
            }
        ),
        # a library loss computes the whole (smoothed) cross-entropy in one call
        "loss": frozenset(
            {
                "cross_entropy",
                "CrossEntropyLoss",
                "nll_loss",
                "NLLLoss",
                "kl_div",
                "KLDivLoss",
                "binary_cross_entropy",
                "binary_cross_entropy_with_logits",
                "poisson_nll_loss",
                "PoissonNLLLoss",
                # torch.distributions: KL(q || p) plus the entropy of q is the smoothed cross-entropy
                "distributions",
                "kl_divergence",
                "entropy",
                "Categorical",
                "OneHotCategorical",
                "_dispatch_kl",
                "_KL_REGISTRY",
                "_KL_MEMOIZE",
                "rel_entr",
            }
        ),
    }
)
# The survey's names (survey()) that each named set adds to the list above, by pattern over their lower-cased
# names: every name in torch's namespaces, NumPy and SciPy that looks like the family (docs/byhand.md).
NAME_PATTERNS: MappingProxyType = MappingProxyType(
    {
        "softmax": FAMILIES["softmax"],
        "norm": re.compile(r"(layer|group|batch|instance|rms)_?norm"),
        "attention": re.compile(r"attention|_fused_sdp|multihead|multi_head"),
        "transformer": re.compile(r"^transformer"),
        "loss": re.compile(r"loss|cross_entropy|nll|kl_div|entropy|^_kl_"),
    }
)


def _derived_names() -> dict[str, frozenset[str]]:
    found = survey()
    every = {n for names in found.values() for n in names}
    return {
        key: frozenset(n for n in every if pattern.search(n.lower()))
        for key, pattern in NAME_PATTERNS.items()
    }


def unknown_rules(component) -> list[str]:
    """What a component's declaration names that these rules do not know (a typo would forbid nothing)."""
    return [
        f"{field} {name!r} is not one of {', '.join(known)}"
        for field, known in (("forbidden_families", FAMILIES), ("forbidden_names", FORBIDDEN_NAMES))
        for name in getattr(component, field)
        if name not in known
    ]


_UNKNOWN = [f"{c.name}'s {why}" for c in COMPONENTS for why in unknown_rules(c)]
if _UNKNOWN:  # at import: a misspelt rule must not forbid nothing
    raise ValueError("autograder/components.py: " + "; ".join(_UNKNOWN))
# Per component: the names its static scan refuses.
_DERIVED = _derived_names()
STATIC: MappingProxyType = MappingProxyType(
    {
        c.name: frozenset().union(
            *(FORBIDDEN_NAMES[s] | _DERIVED.get(s, frozenset()) for s in c.forbidden_names)
        )
        for c in COMPONENTS
    }
)
