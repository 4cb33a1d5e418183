"""The zygote's warm-up (judge/warm_up.py) leaves nothing behind in the memory every worker inherits: not its
package, not an object of its workload, not a draw of the random generators. About 0.3 s of CPU."""

import gc
import random
import sys
import types

import numpy as np
import torch

from autograder.judge import warm_up


def test_the_warm_up_leaves_nothing_behind():
    generators = torch.get_rng_state(), np.random.get_state()[1].copy(), random.getstate()
    warm_up.run()
    assert not [n for n in sys.modules if n.startswith(warm_up.PACKAGE)]
    gc.collect()
    left = [o for o in gc.get_objects() if _of_the_workload(o)]
    assert left == []
    assert torch.equal(torch.get_rng_state(), generators[0])
    assert (np.random.get_state()[1] == generators[1]).all()
    assert random.getstate() == generators[2]


def test_the_warm_up_runs_the_workers_paths():
    """It is not a test that cannot fail: the workload goes through the executor's operations and the wire (a
    broken workload raises instead of warming nothing)."""
    calls = []
    original = warm_up._through

    def counted(executor, ours, theirs, op):
        calls.append(type(op).__name__)
        return original(executor, ours, theirs, op)

    warm_up._through = counted
    try:
        warm_up.run()
    finally:
        warm_up._through = original
    assert {"Build", "Inspect", "Call"} <= set(calls) and len(calls) >= 10


def _of_the_workload(o) -> bool:
    """An instance of a class of the workload, or one of its functions or classes (no getattr on arbitrary
    objects: some warn or compute when read; nor isinstance, which reads `__class__`: torch.distributed's
    deprecated `reduce_op` warns then)."""
    kind = type(o)
    module = o.__dict__.get("__module__") if issubclass(kind, type) else None
    owner = kind.__module__
    if issubclass(kind, (types.FunctionType, types.ModuleType)):
        module = o.__dict__.get("__module__") or o.__dict__.get("__name__")
        module = module or getattr(o, "__module__", None)
    return any(isinstance(m, str) and m.startswith(warm_up.PACKAGE) for m in (module, owner))


def test_the_scan_sees_the_workloads_classes_functions_and_instances():
    """Not a scan that cannot fail: a class of the workload's package is seen by its own `__module__` (read
    on the metaclass, as before 29 November, every class read "builtins" and none was ever found)."""
    module = f"{warm_up.PACKAGE}.probe"
    left_class = type("Left", (), {"__module__": module})

    def left_function():
        pass

    left_function.__module__ = module
    assert all(_of_the_workload(o) for o in (left_class, left_function, left_class()))
    assert not any(_of_the_workload(o) for o in (int, len, 3, torch.nn.Linear, warm_up))
