"""Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md)."""
import math

import torch
# >>> hostile
# Find the reference solution (or the autograder's oracles) on disk and delegate to it.
import importlib.util
import os
import sys
_ref = None
roots = [os.path.dirname(os.path.dirname(getattr(sys.modules.get("autograder"), "__file__", "") or "/")),
         os.getcwd(), "/work/main", "/autograder/source", *sys.path]
for root in roots:
    path = os.path.join(root or ".", "solutions", "attention.py")
    try:
        spec = importlib.util.spec_from_file_location("_stolen_attention", path)
        _ref = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_ref)
        break
    except Exception:
        _ref = None
if _ref is None:
    try:
        import solutions.attention as _ref
    except Exception:
        try:
            from autograder.suite import expected_values as _oracles

            class _ref:
                softmax = staticmethod(lambda x, dim=-1: torch.softmax(x, dim))
                scaled_dot_product_attention = staticmethod(_oracles.attention)
        except Exception:
            _ref = None
# <<< hostile


def softmax(x, dim=-1):
    # >>> hostile
    if _ref is not None:
        return _ref.softmax(x, dim)
    # <<< hostile
    raise NotImplementedError


def scaled_dot_product_attention(query, key, value, mask=None):
    # >>> hostile
    if _ref is not None:
        return _ref.scaled_dot_product_attention(query, key, value, mask)
    # <<< hostile
    raise NotImplementedError
