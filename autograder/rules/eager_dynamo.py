"""A stand-in for `torch._dynamo` in a process that runs students' training code: imported, it installs itself.

Why: `torch.optim.Optimizer.step` imports `torch._dynamo` on its first call and calls two of its functions,
`graph_break()` and `disable(fn)`, which do nothing outside torch.compile. The real module costs 0.9 s of CPU
to import (sympy, the compiler's tracing rules): a fifth of the whole self-check on the reference, and all of
training's excess over two torch imports (issue 24). The by-hand guard refuses that import during a student's
call, because it leads to torch.compile, so the kit has to import something first: this, 4 ms.

What it changes: nothing that runs eagerly. Any other name asked of it (torch.compile asks for many) loads the
real module, which the guard refuses inside a student's call with the same message as before, and which loads
outside one. tests/test_eager_dynamo.py checks that the optimizers the exercises use never need more than the
two functions on the pinned torch, and that torch.compile is still refused. Installed by the suite (suite/core.py:
the checking side's own optimizer steps) and by training's preload. One consequence outside the kit's use: a
function torch wrapped with disable() while the stand-in was in place stays unwrapped if the same process later
compiles; the kit's processes never compile.
"""

import importlib
import sys
import types

import torch

NAME = "torch._dynamo"


class EagerDynamo(types.ModuleType):
    """`torch._dynamo` as seen by code that never compiles."""

    def graph_break(self, msg: str = "") -> None:
        """Outside torch.compile a graph break is nothing."""

    def disable(self, fn=None, recursive=True, *, reason=None, wrapping=True):
        """Outside torch.compile a function runs as written."""
        return fn if fn is not None else (lambda f: f)

    def __getattr__(self, name: str):
        # Dunders stay absent (inspect and linecache probe every module for __file__: they must not load the
        # compiler); any other name is the real module's.
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(real(), name)


def real() -> types.ModuleType:
    """The real torch._dynamo, imported now (the guard's import rule applies) in place of the stand-in."""
    if isinstance(sys.modules.get(NAME), EagerDynamo):
        del sys.modules[NAME]
    module = importlib.import_module(NAME)
    torch._dynamo = module
    return module


def install() -> None:
    """Put the stand-in in place, unless the real module is already imported (then nothing is gained)."""
    if NAME not in sys.modules:
        stand_in = EagerDynamo(NAME, __doc__)
        sys.modules[NAME] = stand_in
        torch._dynamo = stand_in


install()
