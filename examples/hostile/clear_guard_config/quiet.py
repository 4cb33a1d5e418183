"""A helper module of the submission, written to attack the judge: the block between the "hostile" markers
is the attack (docs/judge.md). At import, inside the worker, it clears the by-hand guard's configuration
(reached through sys.__dict__['modules']) and replaces the guard, then finds softmax by a computed name."""
import sys

import torch

# >>> hostile
_modules = sys.__dict__["modules"]
for _name, _module in list(_modules.items()):
    if _name.startswith("autograder"):
        for _attr in ("RUNTIME", "STATIC"):
            try:
                getattr(_module, _attr).clear()
            except Exception:  # noqa: BLE001
                pass
        try:
            _module.__dict__["RUNTIME"] = {}
            _module.__dict__["guard"] = lambda component: __import__("contextlib").nullcontext()
        except Exception:  # noqa: BLE001
            pass
library_softmax = getattr(torch, "soft" + "max")
# <<< hostile
