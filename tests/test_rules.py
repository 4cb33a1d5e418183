"""The by-hand rules catch direct and obfuscated calls, at run time and statically."""
import shutil
import textwrap
from pathlib import Path

import pytest

from autograder.properties import core
from autograder.rules import scan_source
from autograder.target import InProcessTarget

ROOT = Path(__file__).resolve().parent.parent

SOFTMAXES = {
    "torch.softmax": "return torch.softmax(x, dim)",
    "F.softmax": "import torch.nn.functional as F\n    return F.softmax(x, dim)",
    "Tensor.softmax": "return x.softmax(dim)",
    "getattr": "return getattr(torch, 'soft' + 'max')(x, dim)",
    "aten op": "return torch.ops.aten._softmax(x, dim, False)",
    "_VariableFunctions": "return torch._C._VariableFunctions.softmax(x, dim)",
    "log_softmax.exp": "return torch.log_softmax(x, dim).exp()",
    "__import__": "return __import__('torch').nn.functional.softmax(x, dim)",
}


def attention_with(body: str) -> str:
    source = (ROOT / "solutions" / "attention.py").read_text()
    start = source.index("    ### BEGIN SOLUTION\n    x_max")
    end = source.index("### END SOLUTION", start)
    return source[:start] + textwrap.indent(textwrap.dedent("    " + body), "    ") + "\n    " + source[end:]


@pytest.mark.parametrize("spelling", SOFTMAXES)
def test_forbidden_softmax_is_caught(spelling, tmp_path):
    sub = tmp_path / "sub"
    shutil.copytree(ROOT / "solutions", sub)
    (sub / "attention.py").write_text(attention_with(SOFTMAXES[spelling]))
    target = InProcessTarget(sub)
    props = [p for p in core.load() if p.component == "attention"]
    outcomes = {p.name: core.run_property(p, target) for p in props}
    runtime = outcomes["softmax_rows_sum_to_one"]
    assert runtime.status == "forbidden", (spelling, runtime.status, runtime.message)
    assert "softmax" in runtime.message and "forbidden" in runtime.message
    static = outcomes["attention_is_written_by_hand"]
    assert not static.passed, spelling


def test_library_functions_work_again_after_the_check(tmp_path):
    import torch

    sub = tmp_path / "sub"
    shutil.copytree(ROOT / "solutions", sub)
    (sub / "attention.py").write_text(attention_with(SOFTMAXES["torch.softmax"]))
    target = InProcessTarget(sub)
    core.run_property(next(p for p in core.load() if p.name == "softmax_rows_sum_to_one"), target)
    assert torch.softmax(torch.zeros(2), 0).tolist() == [0.5, 0.5]


@pytest.mark.parametrize("component,source", [
    ("add_norm", "import torch.nn.functional as F\ny = F.layer_norm(x, (4,))"),
    ("add_norm", "from torch.nn import LayerNorm"),
    ("multi_head", "import torch.nn as nn\nm = nn.MultiheadAttention(4, 2)"),
    ("encoder", "import torch.nn as nn\nm = nn.TransformerEncoderLayer(4, 2)"),
    ("attention", "import importlib\nF = importlib.import_module('torch.nn.functional')"),
    ("attention", "f = getattr(torch, name)"),
])
def test_static_scan_names_the_call(component, source):
    assert scan_source(component, source)


def test_static_scan_accepts_the_reference():
    for name in ("attention", "multi_head", "add_norm", "encoder", "decoder", "transformer"):
        assert scan_source(name, (ROOT / "solutions" / f"{name}.py").read_text()) == [], name


def test_popping_the_guard_is_caught(tmp_path):
    sub = tmp_path / "sub"
    shutil.copytree(ROOT / "solutions", sub)
    body = ("from torch.utils._python_dispatch import _pop_mode\n    _pop_mode()\n"
            "    return torch.softmax(x, dim)")
    (sub / "attention.py").write_text(attention_with(body))
    target = InProcessTarget(sub)
    props = {p.name: p for p in core.load() if p.component == "attention"}
    runtime = core.run_property(props["softmax_rows_sum_to_one"], target)
    assert runtime.status == "forbidden" and "guard" in runtime.message
    assert not core.run_property(props["attention_is_written_by_hand"], target).passed


def test_a_file_that_cannot_be_imported_earns_no_static_point(tmp_path):
    sub = tmp_path / "sub"
    shutil.copytree(ROOT / "solutions", sub)
    (sub / "attention.py").write_text((ROOT / "solutions" / "attention.py").read_text() + "\nimport sys\nsys.exit(0)\n")
    (sub / "decoder.py").write_text("class DecoderLayer(:\n")
    target = InProcessTarget(sub)
    for component in ("attention", "decoder"):
        prop = next(p for p in core.load() if p.component == component and p.name.endswith("written_by_hand"))
        assert not core.run_property(prop, target).passed, component
