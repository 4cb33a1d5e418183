"""The static scan (autograder/rules/static_scan.py): forbidden names, the tricks that hide them and tampering
with the rules are named in every file of a submission, honest code and the bug catalog are not, and tampering
voids the component."""

from pathlib import Path

import pytest

from autograder import rules
from autograder.rules import scan_source

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "component,source",
    [
        ("add_norm", "import torch.nn.functional as F\ny = F.layer_norm(x, (4,))"),
        ("add_norm", "from torch.nn import LayerNorm"),
        ("multi_head", "import torch.nn as nn\nm = nn.MultiheadAttention(4, 2)"),
        ("encoder", "import torch.nn as nn\nm = nn.TransformerEncoderLayer(4, 2)"),
        ("attention", "import importlib\nF = importlib.import_module('torch.nn.functional')"),
        ("attention", "f = getattr(torch, name)"),
    ],
)
def test_static_scan_names_the_call(component, source):
    assert scan_source(component, source)


def test_static_scan_accepts_the_reference():
    for name in ("attention", "multi_head", "add_norm", "encoder", "decoder", "transformer"):
        assert scan_source(name, (ROOT / "solutions" / f"{name}.py").read_text()) == [], name


def test_the_scan_follows_helper_modules_but_not_other_components():
    files = {
        "attention": "from .helpers import sm\nfrom .mask import causal_mask\n",
        "helpers": "from . import deeper\ndef sm(x):\n    return x\n",
        "deeper": "import torch\nf = torch._C._DisableTorchDispatch\n",
        "mask": "import torch\ny = torch.softmax\n",
    }
    found = rules.scan_submission("attention", files.get)
    assert {f.file for f in found} == {"deeper.py"}, found
    assert any("_DisableTorchDispatch" in str(f) for f in found)


@pytest.mark.parametrize(
    "source",
    [
        "f = torch.sparse.__dict__['soft' + 'max']",
        "import sys\nm = sys.__dict__['modules']",
        "g = torch.compile(f)",
        "y = torch.logsumexp(x, -1)",
        "y = F.group_norm(x, 1)",
        "with torch._C._DisableTorchDispatch():\n    pass",
        "from torch.utils._python_dispatch import _disable_current_modes",
    ],
)
def test_static_scan_names_the_bypasses(source):
    assert rules.scan_source("encoder", source), source


def test_static_scan_of_training():
    assert scan_source("training", (ROOT / "solutions" / "training.py").read_text()) == []
    assert scan_source(
        "training",
        "import torch.nn.functional as F\nloss = F.cross_entropy(x, y, label_smoothing=0.1)",
    )
    assert scan_source(
        "training", "import torch.nn as nn\nloss = nn.CrossEntropyLoss(label_smoothing=0.1)"
    )


# ------------------------------------------------------------------------ issue 20: the rules cannot be dodged
# Dynamic name-building aimed at the kit or at the interpreter's insides, each reported by the scan.
DYNAMIC = {
    "concatenated dunder": "f = getattr(g, '__clo' + 'sure__')",
    "concatenated, then used later": "name = '__wrap' + 'ped__'",
    "f-string": "name = f\"{'cell_'}contents\"",
    "str.join": "name = ''.join(['f_', 'back'])",
    "str.format": "name = '{}{}'.format('__glo', 'bals__')",
    "percent": "name = '%s%s' % ('tb_', 'frame')",
    "attrgetter on a dotted path": "import operator\ng = operator.attrgetter('_installed.__wrapped__')",
    "attrgetter with a computed name": "import operator\ng = operator.attrgetter(name)",
    "resolve_name of the kit": "import pkgutil\nm = pkgutil.resolve_name('autograder.rules')",
    "resolve_name of a helper": "import pkgutil\nm = pkgutil.resolve_name(__name__ + '.x')",
    "import_module": "from importlib import import_module\nm = import_module(name)",
    "__import__": "m = __import__(name)",
    "getattr passed along": "import functools\nf = functools.reduce(getattr, names, obj)",
    "sys.modules of the kit": "import sys\nm = sys.modules['autograder.rules']",
    "a string naming the kit": "m = table['autograder' + '.student_code']",
    "closure": "c = f.__closure__[0].cell_contents",
    "getframe": "import sys\nf = sys._getframe(1).f_back",
    "traceback frame": "try:\n    1 / 0\nexcept Exception as e:\n    f = e.__traceback__.tb_frame",
    "generator frame": "f = (i for i in ()).gi_frame",
    "gc": "import gc\nobjs = gc.get_objects()",
    "ctypes": "import ctypes",
    "match pattern": "match frame:\n    case FrameType(f_back=caller):\n        pass",
    "setattr of a built name": "setattr(cell, 'cell_' + 'contents', None)",
    "getattr of a loop over built names": "for n in ('f_' + 'back',):\n    getattr(f, n)",
    "getattr of a reassigned name": "n = 'w_q'\nn = n.upper()\ngetattr(self, n)",
    "code replaced": "f.__code__ = g.__code__",
    "pickle": "import pickle\nf = pickle.loads(data)",
    "runpy": "import runpy\nrunpy.run_path('helper.py')",
}


@pytest.mark.parametrize("trick", DYNAMIC)
def test_dynamic_name_building_aimed_at_the_kit_is_reported(trick):
    # a component that forbids no library name
    found = rules.scan_source("feed_forward", DYNAMIC[trick])
    assert found, trick
    # in a helper module the component's file never imports, too
    files = {"feed_forward": "import torch\n", "loaded_somehow": DYNAMIC[trick]}
    found = rules.scan_submission("feed_forward", files.get, list(files))
    assert found and all(f.file == "loaded_somehow.py" for f in found), found


SIBLINGS = {  # (component, source): library equivalents outside the former lists
    "logcumsumexp": ("attention", "y = torch.exp(x - torch.logcumsumexp(x, -1)[..., -1:])"),
    "logaddexp": ("attention", "y = functools.reduce(torch.logaddexp, x.unbind(-1))"),
    "special.logsumexp": ("multi_head", "y = torch.special.logsumexp(x, -1)"),
    "np.logaddexp": ("attention_numpy", "y = np.logaddexp.reduce(x, axis=-1)"),
    "scipy softmax": ("attention_numpy", "from scipy.special import softmax"),
    "kl_divergence": ("training", "from torch.distributions import kl_divergence"),
    "Categorical": ("training", "import torch.distributions as D\nq = D.Categorical(probs=p)"),
    "entropy": ("training", "h = q.entropy()"),
    "poisson_nll_loss": ("training", "l = F.poisson_nll_loss(lp, q, log_input=True)"),
    "BCEWithLogitsLoss": ("training", "l = nn.BCEWithLogitsLoss()(x, q)"),
    "LazyBatchNorm1d": ("add_norm", "n = nn.LazyBatchNorm1d()"),
    "Softmax2d": ("encoder", "s = nn.Softmax2d()"),
}


@pytest.mark.parametrize("sibling", SIBLINGS)
def test_library_siblings_are_named_statically(sibling):
    component, source = SIBLINGS[sibling]
    assert rules.scan_source(component, source), sibling


HONEST = {  # realistic correct code that must not be reported
    "attention": """
import math
import torch
from .helpers import stable_softmax


def softmax(x, dim=-1):
    '''Softmax by hand: exp(x - max) / sum, as torch.softmax would.'''
    m = x.amax(dim, keepdim=True).clamp(min=-1e30)
    e = torch.exp(x - m)
    return e / e.sum(dim, keepdim=True).clamp(min=1e-30)


def scaled_dot_product_attention(query, key, value, mask=None):
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = stable_softmax(scores)
    return weights @ value, weights


if __name__ == "__main__":
    print(f"softmax of {torch.zeros(3)}: {softmax(torch.zeros(3))}")
""",
    "helpers": """
import functools
import operator

import torch


def stable_softmax(x, dim=-1):
    e = torch.exp(x - x.max(dim, keepdim=True).values)
    return e / e.sum(dim, keepdim=True)


def product(shape):
    return functools.reduce(operator.mul, shape, 1)
""",
    "multi_head": """
import torch.nn as nn

from .attention import scaled_dot_product_attention


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        for name in ("w_q", "w_k", "w_v", "w_o"):
            setattr(self, name, nn.Linear(d_model, d_model))
        self.d_k = d_model // num_heads
        assert hasattr(self, "w_q") and getattr(self, "w_o") is not None
        projections = [getattr(self, n) for n in ["w_q", "w_k", "w_v"]]
        assert all(p.bias is not None for p in projections)
""",
    "scratch": "import torch\nprint(torch.softmax(torch.zeros(2), 0))  # tried once, not used\n",
    "test_mine": "import pytest\nimport torch\n\n\ndef test_shape():\n    assert torch.zeros(2).shape == (2,)\n",
}


def test_honest_code_is_not_reported():
    for component in ("attention", "multi_head"):
        found = rules.scan_submission(component, HONEST.get, list(HONEST))
        assert found == [], (component, [str(f) for f in found])
    reference = {p.stem: p.read_text() for p in (ROOT / "solutions").glob("*.py")}
    reference.update({n: HONEST[n] for n in ("helpers", "scratch", "test_mine")})
    for component in rules.STATIC:
        found = rules.scan_submission(component, reference.get, list(reference))
        assert found == [], (component, [str(f) for f in found])


def test_the_bug_catalog_is_not_reported():
    from autograder.bugs import catalog

    reference = {p.stem: p.read_text() for p in (ROOT / "solutions").glob("*.py")}
    for bug in catalog():
        files = dict(reference, **{bug.component: bug.apply(reference[bug.component])})
        assert rules.scan_submission(bug.component, files.get, list(files)) == [], bug.id


def test_a_helper_no_import_names_is_read_for_tampering_only():
    files = {
        "attention": "import torch\n",
        "mask": "import torch\n",
        "scratch": "import torch\ny = torch.softmax(x, -1)\n",  # forbidden names: not this component's
        "switch": "import operator\nf = operator.attrgetter('_installed.__wrapped__')\n",
    }
    found = rules.scan_submission("attention", files.get, list(files))
    assert [f.file for f in found] == ["switch.py"], found
    assert rules.scan_submission("mask", files.get, list(files)), "every component reads it"


NOT_VOIDING = {"runpy"}  # a constant path: the file it names is scanned under the component's rules


@pytest.mark.parametrize("trick", sorted(set(DYNAMIC) - NOT_VOIDING))
def test_tampering_voids_the_component_not_only_its_by_hand_point(trick):
    found = rules.scan_source("feed_forward", DYNAMIC[trick])
    assert any(f.voids for f in found), (trick, [str(f) for f in found])
    files = {"feed_forward": "import torch\n", "loaded_somehow": DYNAMIC[trick]}
    orphan = rules.scan_submission("feed_forward", files.get, list(files))
    assert orphan and not any(f.voids for f in orphan), "nothing loads it: the by-hand point only"


def test_a_helper_named_in_a_string_is_scanned_as_if_imported():
    files = {
        "attention": "import importlib\nm = importlib.import_module('.switch', __package__)\n",
        "switch": "import sys\nf = sys._getframe(1)\n",
    }
    found = rules.scan_submission("attention", files.get, list(files))
    assert any(f.voids and f.file == "switch.py" for f in found), found


def test_library_names_and_mild_attributes_do_not_void():
    for source in (
        "y = torch.softmax(x, -1)",
        "for m in self.modules():\n    pass",
        "raise ValueError().with_traceback(e.__traceback__)",
        "import importlib\nF = importlib.import_module('torch.nn.functional')",
    ):
        found = rules.scan_source("attention", source)
        assert not any(f.voids for f in found), (source, found)
