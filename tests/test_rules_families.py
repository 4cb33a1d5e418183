"""What the by-hand rules forbid (autograder/rules/families.py): the operator families checked against an
independent search of torch's operator registry, every family operator shadowed, and the survey of torch,
NumPy and SciPy with each name it finds either forbidden or allowed on purpose."""

import re

import pytest
import torch
import torch.nn.functional as F

from autograder import rules
from autograder.rules.runtime_guard import ForbiddenCall

# Written independently of rules.FAMILIES, broader on purpose; what it matches that is not the exercise's job
# is listed, with the reason, below. A new torch operator named like these lands in one list or the other.
BROAD = re.compile(r"softmax|softmin|logsumexp|norm|attention|attn|sdp|multi_head|transformer")
NOT_THE_EXERCISE = {
    # vector/matrix norms, weight normalisation, renormalisation, random normals: ingredients, not the layer
    "norm",
    "native_norm",
    "norm_except_dim",
    "frobenius_norm",
    "nuclear_norm",
    "renorm",
    "renorm_",
    "linalg_norm",
    "linalg_vector_norm",
    "linalg_matrix_norm",
    "_foreach_norm",
    "embedding_renorm",
    "embedding_renorm_",
    "_weight_norm",
    "_weight_norm_interface",
    "_weight_norm_interface_backward",
    "_weight_norm_differentiable_backward",
    "normal",
    "normal_",
    "normal_functional",
    "log_normal",
    "log_normal_",
    "_philox_normal",
    "_philox_normal_",
    "_cdist_forward",
    "_cdist_backward",
}
FAMILY_OF_MATCH = [
    ("norm", re.compile(r"norm")),
    ("softmax", re.compile(r"softmax|softmin|logsumexp")),
    ("attention", re.compile(r"attention|attn|sdp|multi_head|transformer")),
]


def registry_matches():
    found = {}
    for name in torch._C._dispatch_get_all_op_names():
        packet = name.partition("::")[2].partition(".")[0]
        if BROAD.search(packet) and packet not in NOT_THE_EXERCISE:
            found[name] = next(f for f, pattern in FAMILY_OF_MATCH if pattern.search(packet))
    return found


def test_the_forbidden_sets_cover_every_family_operator_in_torchs_registry():
    matches = registry_matches()
    assert len(matches) > 100, (
        "the registry search found too little: is torch's registry API still there?"
    )
    for component, families in rules.RUNTIME.items():
        wanted = {op for op, family in matches.items() if family in families}
        missing = sorted(wanted - rules.forbidden_ops(component))
        assert not missing, f"{component} does not refuse {missing[:10]}"
    assert rules.forbidden_ops("mask") == frozenset()
    assert "aten::_sparse_softmax" in rules.forbidden_ops("attention")
    assert "aten::native_group_norm" in rules.forbidden_ops("add_norm")
    assert "aten::logsumexp" in rules.forbidden_ops("multi_head")


def test_every_family_operator_that_computes_values_is_shadowed():
    from torch._C import _dispatch_has_kernel_for_dispatch_key as has

    shadowed = rules.install().shadowed()
    for op in registry_matches():
        if op in rules.forbidden_ops("encoder") and has(op, "CPU"):
            assert op in shadowed, op


# What the survey finds that no component forbids, deliberately (docs/byhand.md, "What is deliberately allowed").
SURVEY_ALLOWED = {
    r"normal": "random normals and normal distributions",
    r"^_?soft(plus|sign|shrink)": "activations, not a softmax",
    r"(^|_)(vector_|matrix_|native_|frobenius_|nuclear_|linalg_|foreach_)?norm(_except_dim)?$": "vector and "
    "matrix norms: ingredients (no centring, no scaling per feature)",
    r"renorm|weight_norm|normalize$|denormal": "renormalisation, weight norm, F.normalize, float flags",
    r"^_add_kl_info$": "torch.distributions' documentation helper",
}


def test_every_name_the_survey_finds_is_forbidden_or_allowed_on_purpose():
    found = rules.survey()
    assert len(found["aten"]) > 100 and found["torch.nn.functional"], "the survey found too little"
    static = frozenset().union(*rules.STATIC.values())
    operators = {
        n.partition("::")[2].partition(".")[0] for ops in rules.family_ops().values() for n in ops
    }
    undecided = sorted(
        {
            name
            for names in found.values()
            for name in names
            if name not in static
            and name not in operators
            and not any(re.search(pattern, name.lower()) for pattern in SURVEY_ALLOWED)
        }
    )
    assert not undecided, (
        f"decide: forbid (autograder/rules/) or allow (SURVEY_ALLOWED, docs/byhand.md): {undecided}"
    )
    assert {"_kl_categorical_categorical", "LocalResponseNorm", "logcumsumexp"} <= static


def test_local_response_norm_is_a_layer_norm_and_refused():
    y = torch.randn(3, 8)
    centred = y - y.mean(-1, keepdim=True)
    lrn = F.local_response_norm(
        centred.unsqueeze(-1), size=2 * 8 - 1, alpha=(2 * 8 - 1) / 8, beta=0.5, k=1e-5
    )
    assert torch.allclose(lrn.squeeze(-1), F.layer_norm(y, (8,)), atol=1e-4)
    with pytest.raises(ForbiddenCall, match="local_response_norm"):
        with rules.guard("add_norm"):
            torch.nn.LocalResponseNorm(3)(centred.unsqueeze(-1))
