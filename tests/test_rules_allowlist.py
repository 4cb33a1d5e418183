"""The static scan's allowlist (autograder/rules/allowlist.py, issue 32): code that could run what the scan cannot
read (exec however reached, dunder walking, pickle-family loading, a library's loading, compiling or private
corners, imports outside the allowlist) voids the component, naming the line, in English and Spanish; and no
honest submission is refused: the reference, the bug catalog, the hostile examples' controls, the nbgrader
notebooks' code and the course's notebooks ported as a student would (tests/course_ported/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder import i18n, rules
from autograder.components import NAMES

ROOT = Path(__file__).resolve().parent.parent

# Routes to code the scan cannot read, each written the way the issue's attacks or their siblings write it.
REFUSED = {
    "exec through a builtin's __self__": "len.__self__.exec('x = 1', {})",
    "eval through print's __self__": "f = getattr(print.__self__, 'eval')",
    "__self__ named in a string": "b = getattr(len, '__self__')",
    "a dunder inside a format string": "s = '{0.__self__}'.format(len)",
    "__builtins__ as a name": "e = __builtins__['exec']",
    "subclasses walk": "c = ().__class__.__base__.__subclasses__()",
    "exec as a value": "run = exec",
    "eval called": "y = eval('1 + 1')",
    "compile called": "c = compile('x', 'f', 'exec')",
    "breakpoint": "breakpoint()",
    "locals": "ns = locals()",
    "torch.load": "import torch\nm = torch.load(f, weights_only=False)",
    "torch.load imported": "from torch import load",
    "torch.load by constant name": "import torch\nf = getattr(torch, 'load')",
    "torch.serialization": "import torch.serialization",
    "np.load": "import numpy as np\na = np.load(f, allow_pickle=True)",
    "torch.jit": "import torch\nf = torch.jit.script(g)",
    "torch.hub": "import torch\nm = torch.hub.load('a', 'b')",
    "torch.ops.load_library": "import torch\ntorch.ops.load_library('x.so')",
    "torch.fx": "import torch.fx",
    "torch.library": "from torch import library",
    "a private module of torch": "import torch._C",
    "a private name of numpy": "import numpy as np\nc = np._core",
    "sys reached through torch": "import torch\nm = torch.nn.modules.module.sys",
    "os reached as torch's attribute": "import torch\ntorch.os.system('x')",
    "builtins imported from a library module": "from numpy.core.numeric import builtins",
    "sys.meta_path": "import sys\nsys.meta_path.insert(0, finder)",
    "sys.modules by import": "from sys import modules",
    "marshal": "import marshal",
    "shelve": "import shelve",
    "timeit runs strings": "import timeit",
    "string.Formatter reads attributes": "import string",
    "code runs strings": "import code",
    "pandas": "import pandas as pd",
    "io": "import io",
    "import_module of a module outside the list": "import importlib\nm = importlib.import_module('timeit')",
    "import_module of builtins": "import importlib\nb = importlib.import_module('builtins')",
    "typing.get_type_hints evaluates strings": "import typing\nh = typing.get_type_hints(f)",
    "__name__ rebound": "__name__ = '__main__'",
    "import * from a library": "from torch import *",
    "__dict__ of a module": "import torch\nd = torch.__dict__",
}


@pytest.mark.parametrize("route", REFUSED)
def test_code_the_scan_cannot_read_voids_the_component(route):
    found = rules.scan_source("attention", REFUSED[route])
    assert any(f.voids for f in found), (route, [str(f) for f in found])
    assert all(f.line >= 1 for f in found)
    # in a helper module the component imports, too
    files = {"attention": "from .tools import x\n", "tools": REFUSED[route]}
    found = rules.scan_submission("attention", files.get, list(files))
    assert any(f.voids and f.file == "tools.py" for f in found), (route, found)


def test_the_refusal_names_the_line_in_english_and_spanish():
    source = "import torch\n\n\nm = torch.load(f, weights_only=False)\n"
    with i18n.chosen("en"):
        english = [str(f) for f in rules.scan_source("attention", source)]
    with i18n.chosen("es"):
        spanish = [str(f) for f in rules.scan_source("attention", source)]
    assert any(t.startswith("line 4:") and "pickle" in t for t in english), english
    assert any(t.startswith("línea 4:") for t in spanish), spanish
    assert not any("pickled" in t for t in spanish), spanish  # the sentence itself is translated


def test_the_hostile_examples_of_issue_32_are_voided():
    from autograder.judge import sample

    for name in ("exec_via_builtins", "pickle_exec"):
        files = {}
        for path in sorted((sample.HOSTILE / name).glob("*.append.py")):
            component = path.name.split(".")[0]
            reference = (ROOT / "solutions" / f"{component}.py").read_text()
            files[component] = reference + "\n\n" + path.read_text()
        for component in files:
            found = rules.scan_submission(component, files.get, list(files))
            assert any(f.voids for f in found), (name, component, [str(f) for f in found])


# ------------------------------------------------------------------------------ no honest submission is refused
def _reference() -> dict[str, str]:
    return {p.stem: p.read_text() for p in (ROOT / "solutions").glob("*.py")}


def _refused(files: dict[str, str], components=None) -> list[str]:
    return [
        f"{component}: {finding}"
        for component in components or rules.STATIC
        if component in files
        for finding in rules.scan_submission(component, files.get, list(files))
    ]


def test_the_course_ported_as_a_student_would_is_not_refused():
    ported = {p.stem: p.read_text() for p in (ROOT / "tests" / "course_ported").glob("*.py")}
    assert {"attention_numpy", "attention", "multi_head", "add_norm", "encoder"} <= set(ported)
    files = dict(_reference(), **ported)
    assert _refused(files) == []


def test_the_controls_of_every_hostile_example_are_not_refused(tmp_path):
    from autograder.judge import sample

    reference = _reference()
    for name in sample.hostile_names():
        folder = sample.make(f"control:{name}", tmp_path / name)
        files = {p.stem: p.read_text() for p in folder.glob("*.py")}
        # the components whose files the example changed (the reference's are checked above); a helper of
        # the example is read by every component, attention's scan among them
        changed = [c for c in rules.STATIC if files.get(c) != reference.get(c)] or ["attention"]
        assert _refused(files, changed) == [], name


def test_the_nbgrader_notebooks_code_is_not_refused():
    from autograder.notebooks import cells

    reference = _reference()
    files = {
        name: cells.module_from_cells(cells.split_module(reference[name])[1]) for name in NAMES
    }
    assert _refused(files) == []


def test_the_reference_and_the_stubs_are_not_refused():
    # the bug catalog: tests/test_rules_scan.py::test_the_bug_catalog_is_not_reported (the same scan)
    assert _refused(_reference()) == []
    stubs = {p.stem: p.read_text() for p in (ROOT / "exercises").glob("*.py")}
    assert _refused(stubs) == []


HONEST = {  # what an honest submission writes that is close to what the allowlist refuses
    "a dataclass and typing": "from dataclasses import dataclass, field\nfrom typing import Optional\n",
    "the main guard": "if __name__ == '__main__':\n    print(__file__, __doc__)\n",
    "super and the class's name": (
        "import torch.nn as nn\nclass A(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "    def __repr__(self):\n        return self.__class__.__name__\n"
    ),
    "its own vars": "def vars(model):\n    return model\n",
    "exception chaining": "try:\n    1 / 0\nexcept ZeroDivisionError as e:\n    raise ValueError() from e\n",
    "sys for printing": "import sys\nprint('x', file=sys.stderr)\nbig = sys.maxsize\n",
    "load_state_dict": "import torch\nm.load_state_dict(other.state_dict())\n",
    "torch.nn.functional and einsum": (
        "import torch\nimport torch.nn.functional as F\ny = F.relu(torch.einsum('ij,jk->ik', a, b))\n"
    ),
    "scipy's special functions": "import scipy.special as sci\ny = sci.expit(x)\n",
    "a dunder in a docstring": 'def f():\n    """Like __getattribute__, but by hand."""\n',
    "importlib with a listed module": (
        "import importlib\nF = importlib.import_module('torch.nn.functional')\n"
    ),
    "an operator's method": "y = x.__matmul__(w)\n",
}


@pytest.mark.parametrize("case", HONEST)
def test_honest_code_close_to_the_refusals_is_not_voided(case):
    found = rules.scan_source("attention", HONEST[case])
    assert not any(f.voids for f in found), (case, [str(f) for f in found])
