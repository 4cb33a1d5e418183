"""Assertions that explain themselves: each failure says what was expected, what came back, and a hint."""
from __future__ import annotations

import numpy as np
import torch

from .core import Failure

# (rtol, atol) per dtype. Tight enough for an unbiased variance at d=512 (1e-3 relative) to fail, loose enough
# for any correct order of float operations, float32 rounding in a deep stack included.
TOLERANCES = {
    torch.float64: (1e-6, 1e-8),
    torch.float32: (2e-4, 2e-5),
    torch.float16: (1e-2, 1e-3),
    torch.bfloat16: (5e-2, 1e-2),
}


def tol(dtype) -> tuple[float, float]:
    if isinstance(dtype, np.dtype) or dtype in (np.float32, np.float64):
        dtype = torch.float64 if np.dtype(dtype) == np.float64 else torch.float32
    return TOLERANCES.get(dtype, TOLERANCES[torch.float32])


def fail(message: str, hint="") -> None:
    """hint: a string, or a callable that returns one (a diagnosis worth running only on failure)."""
    raise Failure(message, hint() if callable(hint) else hint)


def expect(condition, message: str, hint="") -> None:
    if not bool(condition):
        fail(message, hint)


def tensor(value, what: str, shape=None, dtype=None, like: torch.Tensor | None = None) -> torch.Tensor:
    """Check that `value` is a tensor of the expected shape and dtype; return it."""
    if like is not None:
        shape = tuple(like.shape) if shape is None else shape
        dtype = like.dtype if dtype is None else dtype
    if isinstance(value, tuple) and value and isinstance(value[0], torch.Tensor):
        fail(f"{what}: expected a tensor, got a tuple of {len(value)}",
             "return a single tensor here (a tuple is returned only where the docstring says so)")
    if isinstance(value, np.ndarray):
        fail(f"{what}: expected a torch.Tensor, got a NumPy array", "stay in torch: no .numpy() round trip")
    if not isinstance(value, torch.Tensor):
        fail(f"{what}: expected a torch.Tensor, got {type(value).__name__}", "check what your function returns")
    if shape is not None and tuple(value.shape) != tuple(shape):
        fail(f"{what}: expected shape {tuple(shape)}, got {tuple(value.shape)}", _shape_hint(tuple(shape), tuple(value.shape)))
    if dtype is not None and value.dtype != dtype:
        fail(f"{what}: expected dtype {dtype}, got {value.dtype}",
             "keep the input's dtype: build new tensors with dtype=x.dtype, device=x.device")
    return value


def array(value, what: str, shape=None, dtype=None) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        fail(f"{what}: expected a NumPy array, got a torch.Tensor", "this warm-up is NumPy only")
    if not isinstance(value, np.ndarray):
        fail(f"{what}: expected a NumPy array, got {type(value).__name__}", "check what your function returns")
    if shape is not None and tuple(value.shape) != tuple(shape):
        fail(f"{what}: expected shape {tuple(shape)}, got {tuple(value.shape)}", _shape_hint(tuple(shape), tuple(value.shape)))
    if dtype is not None and value.dtype != dtype:
        fail(f"{what}: expected dtype {dtype}, got {value.dtype}", "keep the input's dtype")
    return value


def _shape_hint(expected: tuple, got: tuple) -> str:
    if sorted(expected) == sorted(got):
        return "the right sizes in the wrong order: a missing or extra transpose?"
    if len(expected) != len(got):
        return "a dimension too many or too few: a missing squeeze/unsqueeze, or heads not merged back?"
    return "compare each dimension with the shapes in the docstring"


def is_close(actual, expected, dtype=None, rtol=None, atol=None) -> bool:
    a, e = _as_tensor(actual), _as_tensor(expected)
    if a.shape != e.shape:
        return False
    r, t = tol(dtype or a.dtype)
    r, t = rtol if rtol is not None else r, atol if atol is not None else t
    a64, e64 = a.to(torch.float64), e.to(torch.float64)
    if torch.isnan(a64).any() != torch.isnan(e64).any():
        return False
    return bool(torch.allclose(a64, e64, rtol=r, atol=t, equal_nan=True))


def close(actual, expected, what: str, hint: str = "", dtype=None, rtol=None, atol=None) -> None:
    """Fail unless actual ≈ expected, reporting the worst element."""
    a, e = _as_tensor(actual), _as_tensor(expected)
    if a.shape != e.shape:
        fail(f"{what}: expected shape {tuple(e.shape)}, got {tuple(a.shape)}",
             hint or _shape_hint(tuple(e.shape), tuple(a.shape)))
    if is_close(a, e, dtype, rtol, atol):
        return
    a64, e64 = a.to(torch.float64), e.to(torch.float64)
    if torch.isnan(a64).any() and not torch.isnan(e64).any():
        idx = tuple(int(i) for i in torch.nonzero(torch.isnan(a64))[0])
        fail(f"{what}: NaN at index {idx}, expected {e64[idx].item():.6g}",
             hint if hint else "a NaN usually comes from exp overflow, 0/0 or -inf - -inf: guard fully masked rows")
    diff = (a64 - e64).abs().nan_to_num(nan=float("inf"))
    flat = int(torch.argmax(diff))
    idx = tuple(int(i) for i in np.unravel_index(flat, tuple(a.shape))) if a.dim() else ()
    fail(f"{what}: at index {idx} got {a64[idx].item():.6g}, expected {e64[idx].item():.6g} "
         f"(max abs difference {diff.max().item():.3g})", hint)


def _as_tensor(x) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x.detach()
    if isinstance(x, (np.ndarray, np.generic)):
        return torch.from_numpy(np.array(x, copy=True))  # keeps 0-d arrays 0-d, unlike ascontiguousarray
    return torch.as_tensor(x)


def diagnose(default: str, *candidates) -> str:
    """The first hint whose test holds: candidates are (callable or bool, hint). Tests that error are skipped."""
    for test, hint in candidates:
        try:
            if test() if callable(test) else test:
                return hint
        except Exception:  # noqa: BLE001 - a diagnosis is best effort
            continue
    return default


def written_by_hand(t, component: str, hint: str) -> None:
    """The static half of the by-hand rule; a file that is still a stub earns nothing here either."""
    from ..rules import scan_submission
    from ..target import StudentError

    src = t.source(component)
    if src is None:
        raise StudentError("missing", f"{component}.py is missing from the submission", component)
    if "NotImplementedError" in src:
        raise StudentError("not_implemented", f"{component}.py still raises NotImplementedError", component)
    # Import the module too (its __dir__, through the narrow interface): a file that cannot be imported,
    # or that exits or crashes on import, earns nothing here either.
    t.call(component, "__dir__")
    # The component's file and every helper module of the submission that it imports (read by the checking
    # side: in the judge, from its own copy of the files).
    findings = scan_submission(component, lambda name: src if name == component else t.source(name))
    expect(not findings, f"forbidden in {component}.py or a helper it imports: "
           + "; ".join(map(str, findings[:3])), hint)
