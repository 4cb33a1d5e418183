"""docs/contract.md states every attribute the stubs declare (issue 33): the reference kv_cache reads
MultiHeadAttention's num_heads and d_k, so a student must know they are part of the contract.

An attribute is stated when the contract declares it: in a list after a signature (`Name(...): a, b (type);`),
as `name: ...`, or after "parameters"/"buffer" (parentheses, which hold shapes and signatures, are left out
first: `(batch, num_heads, m_q, m_k)` names no attribute)."""

import ast
import inspect
import re

import pytest

from autograder import KIT
from autograder.components import COMPONENTS, Component


def stated(contract: str) -> set[str]:
    text = contract
    while (stripped := re.sub(r"\([^()]*\)", "", text)) != text:
        text = stripped
    return set(
        re.findall(
            r"(?:^|[:;,]\s+|\b(?:parameters|buffer)\s+|^\s+)([A-Za-z_]\w*)(?=\s*(?:[:;,]|$))",
            text,
            re.M,
        )
    )


def declared(component: Component) -> dict[str, list[str]]:
    """Class name -> the attributes its stub's docstring declares (its "Attributes:" section)."""
    tree = ast.parse((KIT / "exercises" / component.filename).read_text())
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            doc = inspect.cleandoc(ast.get_docstring(node) or "")
            section = re.search(r"^Attributes:\n((?:[ \t]+.*\n?)*)", doc, re.M)
            if section:
                out[node.name] = [
                    name.strip()
                    for line in section.group(1).splitlines()
                    if re.match(r"^    \S", line)
                    for name in line.strip().split(":")[0].split(",")
                ]
    return out


@pytest.mark.parametrize("component", COMPONENTS, ids=lambda c: c.name)
def test_the_contract_states_every_attribute_the_stubs_declare(component):
    missing = {
        cls: [a for a in attributes if a not in stated(component.contract)]
        for cls, attributes in declared(component).items()
    }
    assert not any(missing.values()), missing


def test_the_stubs_declare_attributes():
    assert (
        "num_heads"
        in declared(next(c for c in COMPONENTS if c.name == "multi_head"))["MultiHeadAttention"]
    )


def test_an_attribute_named_only_in_a_shape_or_a_formula_is_not_stated():
    """The check can fail: the contract before issue 33 named num_heads only in the signature, a shape and the
    ValueError, and d_k only in a column range."""
    before = (
        "MultiHeadAttention(d_model, num_heads, dropout=0.0, bias=True)\n"
        "  w_q, w_k, w_v, w_o: nn.Linear(d_model, d_model, bias=bias); head h reads columns\n"
        "  h*d_k:(h+1)*d_k of each projection; attention_weights: the last forward's weights\n"
        "  before dropout (batch, num_heads, m_q, m_k), detached; ValueError when d_model % num_heads != 0\n"
    )
    assert {"w_q", "w_o", "attention_weights"} <= stated(before)
    assert not {"num_heads", "d_k"} & stated(before)
