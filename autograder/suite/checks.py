"""Assertions that explain themselves: each failure says what was expected, what came back, and a hint."""

from __future__ import annotations

import numpy as np
import torch

from ..i18n import N_, _, ngettext
from .core import Evidence, Failure, named

# (rtol, atol) per dtype. Tight enough for an unbiased variance at d=512 (1e-3 relative) to fail, loose enough
# for any correct order of float operations, float32 rounding in a deep stack included.
TOLERANCES = {
    torch.float64: (1e-6, 1e-8),
    torch.float32: (2e-4, 2e-5),
    torch.float16: (1e-2, 1e-3),
    torch.bfloat16: (5e-2, 1e-2),
}


def stack_tolerance(dtype, layers: int = 1) -> dict:
    """The keyword tolerances for a stack of `layers` layers: float64 stays tight; float32 through more than one
    layer gets rtol 1e-3 (the rounding of each layer adds up)."""
    return {} if dtype == torch.float64 or layers == 1 else {"rtol": 1e-3, "atol": 1e-4}


def tol(dtype) -> tuple[float, float]:
    if isinstance(dtype, np.dtype) or dtype in (np.float32, np.float64):
        dtype = torch.float64 if np.dtype(dtype) == np.float64 else torch.float32
    return TOLERANCES.get(dtype, TOLERANCES[torch.float32])


def hint_text(hint) -> str:
    """hint: a string, or a callable that returns one: a diagnosis worth running only on failure (the one way the
    kit defers a hint: `close(out, expected, what, lambda: explain(...))`)."""
    return hint() if callable(hint) else hint


def fail(message: str, hint="") -> None:
    """message, hint: already translated where they were written (`_("...").format(...)`)."""
    raise Failure(message, hint_text(hint))


def expect(condition, message: str, hint="") -> None:
    if not bool(condition):
        fail(message, hint)


def tensor(
    value,
    what: str,
    shape=None,
    dtype=None,
    like: torch.Tensor | None = None,
    check_dtype: bool = False,
    shape_only: bool = False,
    nan_hint: str | None = None,
) -> torch.Tensor:
    """Check that `value` is a tensor of the expected shape, with no NaN or inf; return it.

    Every expected value in the kit is finite, so a NaN or inf is reported here, before any other diagnosis
    (nan_hint: the likely cause in this function, if not the usual one). shape_only: a shape property, which
    earns its points on the shape alone (NaN included).

    The dtype is checked only where check_dtype is set: one property per function owns the dtype (and device),
    so a dtype slip costs one property. Elsewhere a float tensor of another float dtype is compared by value
    (with the looser of the two dtypes' tolerances), and a non-float one is cast to the expected dtype.
    """
    if like is not None:
        shape = tuple(like.shape) if shape is None else shape
        dtype = like.dtype if dtype is None else dtype
    if isinstance(value, tuple) and value and isinstance(value[0], torch.Tensor):
        fail(
            _("{what}: expected a tensor, got a tuple of {n}").format(what=what, n=len(value)),
            _("return a single tensor here (a tuple is returned only where the docstring says so)"),
        )
    if isinstance(value, np.ndarray):
        fail(
            _("{what}: expected a torch.Tensor, got a NumPy array").format(what=what),
            _("stay in torch: no .numpy() round trip"),
        )
    if not isinstance(value, torch.Tensor):
        fail(
            _("{what}: expected a torch.Tensor, got {type}").format(
                what=what, type=type(value).__name__
            ),
            _(CHECK_THE_RETURN),
        )
    if shape is not None and tuple(value.shape) != tuple(shape):
        wrong_shape(what, tuple(shape), tuple(value.shape))
    if dtype is not None and value.dtype != dtype:
        if check_dtype:
            fail(
                _(EXPECTED_DTYPE).format(what=what, expected=dtype, got=value.dtype),
                _("keep the input's dtype: build new tensors with dtype=x.dtype, device=x.device"),
            )
        if not (value.is_floating_point() and dtype.is_floating_point):
            value = value.to(dtype)
    if check_dtype and like is not None and value.device != like.device:
        fail(
            _("{what}: expected device {expected}, got {got}").format(
                what=what, expected=like.device, got=value.device
            ),
            _("keep the input's device: build new tensors with device=x.device"),
        )
    if not shape_only:
        finite(value, what, hint=nan_hint)
    return value


def array(
    value,
    what: str,
    shape=None,
    dtype=None,
    check_dtype: bool = False,
    shape_only: bool = False,
    nan_hint: str | None = None,
) -> np.ndarray:
    """NumPy twin of `tensor`: the dtype is checked only where check_dtype is set, NaN and inf first."""
    if isinstance(value, torch.Tensor):
        fail(
            _("{what}: expected a NumPy array, got a torch.Tensor").format(what=what),
            _("this warm-up is NumPy only"),
        )
    if not isinstance(value, np.ndarray):
        fail(
            _("{what}: expected a NumPy array, got {type}").format(
                what=what, type=type(value).__name__
            ),
            _(CHECK_THE_RETURN),
        )
    if shape is not None and tuple(value.shape) != tuple(shape):
        wrong_shape(what, tuple(shape), tuple(value.shape))
    if dtype is not None and value.dtype != dtype:
        if check_dtype:
            fail(
                _(EXPECTED_DTYPE).format(what=what, expected=np.dtype(dtype), got=value.dtype),
                _(
                    "keep the input's dtype: a float64 scalar such as np.sqrt(d_k) promotes a float32 "
                    "array to float64 (NumPy 2); use math.sqrt, or cast back with .astype(x.dtype)"
                ),
            )
        if not (
            np.issubdtype(value.dtype, np.floating) and np.issubdtype(np.dtype(dtype), np.floating)
        ):
            value = value.astype(dtype)
    if not shape_only and value.dtype != object:
        finite(value, what, hint=nan_hint)
    return value


CHECK_THE_RETURN = N_("check what your function returns")
# `what` of two outputs compared with each other: _(VERSUS).format(left="softmax(x + c)", right="softmax(x)")
VERSUS = N_("{left} vs {right}")
EXPECTED_DTYPE = N_("{what}: expected dtype {expected}, got {got}")
EXPECTED_SHAPE = N_("{what}: expected shape {expected}, got {got}")


def wrong_shape(what: str, expected: tuple, got: tuple, hint="") -> None:
    """Fail: `what` has shape `got` where `expected` was expected; hint: the caller's, else the usual causes."""
    fail(
        _(EXPECTED_SHAPE).format(what=what, expected=expected, got=got),
        hint_text(hint) or _shape_hint(expected, got),
    )


def _shape_hint(expected: tuple, got: tuple) -> str:
    if sorted(expected) == sorted(got):
        return _("the right sizes in the wrong order: a missing or extra transpose?")
    if len(expected) != len(got):
        return _(
            "a dimension too many or too few: a missing squeeze/unsqueeze, or heads not merged back?"
        )
    return _("compare each dimension with the shapes in the docstring")


# ----------------------------------------------------------------------------------- NaN first, then values
NAN_HINT = N_(
    "a NaN usually comes from a fully masked row through softmax: its max is -inf and -inf - (-inf) is "
    "NaN; give such a row zero weights (replace a -inf max by 0 and a zero sum by 1). Other sources are "
    "0/0 (a variance of 0 without eps) and exp overflow (subtract the max first)."
)
INF_HINT = N_(
    "an inf usually comes from exp overflow (subtract the max before exp) or from a division by zero "
    "(add eps to the variance)."
)


def _index_text(idx) -> str:
    return "[" + ", ".join(str(int(i)) for i in idx) + "]"


def finite(actual, what: str, expected=None, hint: str | None = None) -> None:
    """Fail, before any other diagnosis, where `actual` has NaN or inf and `expected` is finite there.

    Without `expected` every NaN and inf fails: two outputs of the student's code compared with each other must
    be numbers (NaN never equals NaN, and a NaN that 'matches' a NaN proves nothing).
    """
    a = _as_tensor(actual)
    if not (a.is_floating_point() or a.is_complex()):
        return
    bad = ~torch.isfinite(a)
    e = None
    if expected is not None:
        e = _as_tensor(expected)
        if e.shape == a.shape and (e.is_floating_point() or e.is_complex()):
            bad &= torch.isfinite(e)
        elif e.shape != a.shape:
            e = None
    if not bool(bad.any()):
        return
    idx = tuple(int(i) for i in torch.nonzero(bad)[0])
    value = a[idx].item()
    kind = "NaN" if value != value else ("inf" if value > 0 else "-inf")
    others = int(bad.sum()) - 1  # a scalar has no other place
    hint = hint or (_(NAN_HINT) if kind == "NaN" else _(INF_HINT))
    if e is None:
        if not idx:
            message = _("{what}: your output has {kind} at (a scalar)")
        elif not others:
            message = _("{what}: your output has {kind} at {at}")
        else:  # one English form for every count, as before ("and at 1 other places")
            message = ngettext(
                "{what}: your output has {kind} at {at} and at {others} other places",
                "{what}: your output has {kind} at {at} and at {others} other places",
                others,
            )
    elif not idx:
        message = _("{what}: your output has {kind} at (a scalar), where {expected} was expected")
    elif not others:
        message = _("{what}: your output has {kind} at {at}, where {expected} was expected")
    else:
        message = ngettext(
            "{what}: your output has {kind} at {at} and at {others} other places, where {expected} "
            "was expected",
            "{what}: your output has {kind} at {at} and at {others} other places, where {expected} "
            "was expected",
            others,
        )
    expected = "" if e is None else f"{e[idx].item():.6g}"
    fail(
        message.format(what=what, kind=kind, at=_index_text(idx), others=others, expected=expected),
        hint,
    )


def _spread(x: torch.Tensor) -> float:
    x = x.to(torch.float64)
    return float(x.max() - x.min()) if x.numel() else 0.0


def not_constant(actual, expected, what: str, given=None) -> None:
    """Fail when the output is one constant where the expected output is not, or (with `given`, the input it was
    computed from) is that input unchanged where the expected output is not: code that computes nothing (zeros,
    a placeholder, `return x`) must not pass a property that compares the student's output with itself."""
    a, e = _as_tensor(actual).detach(), _as_tensor(expected).detach()
    if given is not None:
        the_input(a, e, _as_tensor(given).detach(), what)
    if a.numel() < 2 or e.numel() < 2 or not (e.is_floating_point() or e.dtype == torch.bool):
        return
    if _spread(e) > 1e-6 and _spread(a) == 0.0:
        fail(
            _(
                "{what}: your output is {value} everywhere, where the expected output is not constant "
                "(it ranges from {low} to {high})"
            ).format(
                what=what,
                value=f"{a.flatten()[0].item():.6g}",
                low=f"{e.to(torch.float64).min().item():.6g}",
                high=f"{e.to(torch.float64).max().item():.6g}",
            ),
            _(
                "the function returns a constant: compute the result from the inputs (is a placeholder "
                "such as zeros_like still returned?)"
            ),
        )


def the_input(a: torch.Tensor, e: torch.Tensor, given: torch.Tensor, what: str) -> None:
    """not_constant's second half: the output `a` is the input `given` unchanged where the expected `e` is not."""
    if a.shape != given.shape or e.shape != given.shape or not a.is_floating_point():
        return
    # the expected output clearly not the input (far beyond any tolerance: eps alone is no difference)
    far = not torch.allclose(e.double(), given.double(), rtol=1e-2, atol=1e-3)
    if far and torch.equal(a, given.to(a.dtype)):
        fail(
            _(
                "{what}: your output is its input, unchanged, where the expected output is not"
            ).format(what=what),
            _(
                "the function returns its input: compute the result from it (is a placeholder such as "
                "return x still there?)"
            ),
        )


def consistent(
    actual,
    original,
    what: str,
    hint="",
    dtype=None,
    rtol=None,
    atol=None,
    expected=None,
    given=None,
) -> None:
    """Two outputs of the student's code that must agree (an invariance): both finite, not constant (nor the
    input `given`, unchanged) where `expected` (the true output for `original`'s input) is not, then equal
    within tolerance."""
    finite(original, what)
    finite(actual, what)
    if expected is not None:
        not_constant(original, expected, what, given)
    close(actual, original, what, hint, dtype, rtol, atol)


def is_close(actual, expected, dtype=None, rtol=None, atol=None) -> bool:
    """True when actual ≈ expected elementwise. NaN matches only a NaN at the same place. The tolerance is the
    looser of `dtype`'s and the actual value's own dtype's (a float64 result for a float32 input is judged by
    its value; the dtype is another property's business)."""
    a, e = _as_tensor(actual), _as_tensor(expected)
    if a.shape != e.shape:
        return False
    relative, absolute = tol(dtype or a.dtype)
    if a.is_floating_point() and dtype is not None:
        relative = max(relative, tol(a.dtype)[0])
        absolute = max(absolute, tol(a.dtype)[1])
    relative = rtol if rtol is not None else relative
    absolute = atol if atol is not None else absolute
    a64, e64 = a.to(torch.float64), e.to(torch.float64)
    return bool(torch.allclose(a64, e64, rtol=relative, atol=absolute, equal_nan=True))


def close(actual, expected, what: str, hint="", dtype=None, rtol=None, atol=None) -> None:
    """Fail unless actual ≈ expected: first a NaN or inf where a number was expected, then the worst element.
    hint: a string, or a callable run only on failure."""
    a, e = _as_tensor(actual), _as_tensor(expected)
    if a.shape != e.shape:
        wrong_shape(what, tuple(e.shape), tuple(a.shape), hint)
    finite(a, what, e)
    if is_close(a, e, dtype, rtol, atol):
        return
    a64, e64 = a.to(torch.float64), e.to(torch.float64)
    diff = (a64 - e64).abs().nan_to_num(nan=float("inf"))
    flat = int(torch.argmax(diff))
    idx = tuple(int(i) for i in np.unravel_index(flat, tuple(a.shape))) if a.dim() else ()
    if not idx:  # a scalar has no index to name
        fail(
            _("{what}: got {got}, expected {expected} (a scalar)").format(
                what=what, got=f"{a64.item():.6g}", expected=f"{e64.item():.6g}"
            ),
            hint,
        )
    fail(
        _(
            "{what}: at index {index} got {got}, expected {expected} (max abs difference {difference})"
        ).format(
            what=what,
            index=_index_text(idx),
            got=f"{a64[idx].item():.6g}",
            expected=f"{e64[idx].item():.6g}",
            difference=f"{diff.max().item():.3g}",
        ),
        hint,
    )


def close_input_grad(reply, expected, hint, rtol, atol) -> None:
    """The gradient that reached the student's input x (reply.input_grads[0], from a Call with a cotangent)
    equals the expected layer's d loss / d x."""
    expect(
        reply.input_grads and reply.input_grads[0] is not None,
        _("no gradient reached the input x"),
        hint,
    )
    close(
        reply.input_grads[0],
        expected,
        _("d loss / d {name}").format(name="x"),
        hint,
        rtol=rtol,
        atol=atol,
    )


def equal(actual, expected, what: str, hint="") -> None:
    """Exact equality (repeatability, bool masks), NaN checked first: NaN never equals NaN."""
    finite(actual, what, expected)
    a, e = _as_tensor(actual), _as_tensor(expected)
    expect(
        a.shape == e.shape and bool(torch.equal(a, e.to(a.dtype))),
        _("{what}: the values differ").format(what=what),
        hint,
    )


def _as_tensor(x) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x.detach()
    if isinstance(x, (np.ndarray, np.generic)):
        # keeps 0-d arrays 0-d, unlike ascontiguousarray
        return torch.from_numpy(np.array(x, copy=True))
    return torch.as_tensor(x)


def diagnose(default: str, *candidates) -> str:
    """The first hint whose test holds: candidates are (callable or bool, hint) or (test, hint, evidence); a hint
    may be a callable that returns it (a hint that quotes what the test found). A found hint is marked with its
    evidence (Evidence.MODEL unless the candidate says DIRECT; a nested diagnosis keeps its own). Tests that
    error are skipped."""
    for test, hint, *evidence in candidates:
        try:
            if test() if callable(test) else test:
                return named(hint_text(hint), evidence[0] if evidence else Evidence.MODEL)
        except Exception:  # noqa: BLE001 - a diagnosis is best effort
            continue
    return default


def nearest(got: float, default: str, *candidates, tol: float = 1e-4) -> str:
    """The hint of the (value, hint) candidate nearest `got`, if within tol and no candidate with another hint is
    within tol too (two mistakes that give the same number on this input are no evidence for either: a score
    difference near 0 made "no scaling" and "scaled by sqrt(d_v)" both fit); else `default`."""
    near = [(abs(got - value), hint) for value, hint in candidates if abs(got - value) < tol]
    if not near or len({hint for _, hint in near}) > 1:
        return default
    # a closed form's one number, exact: the cause shown directly
    return named(min(near, key=lambda pair: pair[0])[1], Evidence.DIRECT)


def written_by_hand(student, component: str, hint: str) -> None:
    """The static half of the by-hand rule; a file that is still a stub earns nothing here either."""
    from ..components import BY_NAME
    from ..rules.static_scan import scan_submission
    from ..student_code.interface import Modules, Probe, StudentError

    src = student.source(component)
    file = f"{component}.py"
    if src is None:
        raise StudentError(
            "missing", _("{file} is missing from the submission").format(file=file), component
        )
    if "NotImplementedError" in src:
        raise StudentError(
            "not_implemented",
            _("{file} still raises NotImplementedError").format(file=file),
            component,
        )
    # Import the module too (its __dir__, through the narrow interface): a file that cannot be imported,
    # or that exits or crashes on import, earns nothing here either.
    student.call(component, "__dir__")
    # The by-hand guard still refuses what this component forbids, once its file is loaded: a file that
    # switched the rules off earns nothing here (the judge also probes at other points, see docs/byhand.md).
    families = BY_NAME[component].forbidden_families
    still_allowed = student.run(Probe(component, families)).value if families else []
    if still_allowed:
        raise StudentError(
            "forbidden",
            _(
                "the by-hand rules were switched off after {file} was loaded: {families} no longer "
                "refused"
            ).format(file=file, families=", ".join(map(str, still_allowed))[:200]),
            component,
        )
    # The component's file and every helper module of the submission that it imports, then every other helper
    # module for tampering (read by the checking side: in the judge, from its own copy of the files).
    findings = scan_submission(
        component,
        lambda name: src if name == component else student.source(name),
        student.run(Modules()).value,
    )
    tampering = [f for f in findings if f.voids]
    if tampering:  # a route to the guard's state: nothing the component ran is trusted (core.require_behaviour)
        raise StudentError(
            "forbidden",
            _(
                "tampering in {file} or a helper module it loads: {findings}: none of {component}'s "
                "properties is awarded"
            ).format(file=file, findings="; ".join(map(str, tampering[:3])), component=component),
            component,
        )
    expect(
        not findings,
        _("forbidden in {file} or a helper module of the submission: {findings}").format(
            file=file, findings="; ".join(map(str, findings[:3]))
        ),
        hint,
    )
