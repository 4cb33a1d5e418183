"""The by-hand rules: which library functions a component may not use, enforced two ways.

At run time a TorchDispatchMode watches every ATen operator while the component under test runs. Every way
of reaching torch's softmax (torch.softmax, F.softmax, Tensor.softmax, getattr(torch, "soft" + "max"),
torch.ops.aten._softmax, torch._C._VariableFunctions...) ends in the same ATen operator, so no spelling slips
through. Statically, an AST scan names forbidden calls and the tricks used to hide them.
"""
from __future__ import annotations

import ast
import contextlib
from dataclasses import dataclass

# ATen operator (overload packet) name -> what a student wrote to reach it.
SOFTMAX = {
    "_softmax": "softmax (torch.softmax / F.softmax / Tensor.softmax)",
    "softmax": "softmax (torch.softmax / F.softmax / Tensor.softmax)",
    "_safe_softmax": "softmax (inside F.scaled_dot_product_attention or nn.MultiheadAttention)",
    "_log_softmax": "log_softmax (torch.log_softmax / F.log_softmax)",
    "log_softmax": "log_softmax (torch.log_softmax / F.log_softmax)",
    "_masked_softmax": "masked softmax (nn.MultiheadAttention fast path)",
}
ATTENTION = {
    "_scaled_dot_product_flash_attention_for_cpu": "F.scaled_dot_product_attention",
    "_scaled_dot_product_flash_attention": "F.scaled_dot_product_attention",
    "_scaled_dot_product_efficient_attention": "F.scaled_dot_product_attention",
    "_scaled_dot_product_cudnn_attention": "F.scaled_dot_product_attention",
    "_scaled_dot_product_attention_math": "F.scaled_dot_product_attention",
    "_scaled_dot_product_fused_attention_overrideable": "F.scaled_dot_product_attention",
    "scaled_dot_product_attention": "F.scaled_dot_product_attention",
    "_fused_sdp_choice": "F.scaled_dot_product_attention",
    "_native_multi_head_attention": "nn.MultiheadAttention",
    "_transformer_encoder_layer_fwd": "nn.TransformerEncoderLayer",
}
LAYER_NORM = {
    "native_layer_norm": "layer norm (F.layer_norm / nn.LayerNorm)",
    "layer_norm": "layer norm (F.layer_norm / nn.LayerNorm)",
    "rms_norm": "F.rms_norm",
    "_fused_rms_norm": "F.rms_norm",
}

# Per component: ATen operators that may not run while it is under test.
RUNTIME: dict[str, dict[str, str]] = {
    "attention_numpy": {**SOFTMAX, **ATTENTION, **LAYER_NORM},
    "attention": {**SOFTMAX, **ATTENTION},
    "mask": {},
    "multi_head": {**SOFTMAX, **ATTENTION},
    "add_norm": {**LAYER_NORM},
    "feed_forward": {},
    "positional_encoding": {},
    "encoder": {**SOFTMAX, **ATTENTION, **LAYER_NORM},
    "decoder": {**SOFTMAX, **ATTENTION, **LAYER_NORM},
    # Softmax stays allowed here: a greedy decoder may take it before argmax, harmlessly.
    "transformer": {**ATTENTION, **LAYER_NORM},
}

# Names that may not appear as attributes or imports from a library, per component.
_ATTENTION_NAMES = {"scaled_dot_product_attention", "MultiheadAttention", "multi_head_attention_forward"}
_SOFTMAX_NAMES = {"softmax", "log_softmax", "_softmax", "_log_softmax", "_safe_softmax"}
_NORM_NAMES = {"layer_norm", "LayerNorm", "native_layer_norm", "rms_norm", "RMSNorm"}
_TRANSFORMER_NAMES = {
    "Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer", "TransformerDecoderLayer",
}
STATIC: dict[str, set[str]] = {
    "attention_numpy": _SOFTMAX_NAMES | _ATTENTION_NAMES | _NORM_NAMES,
    "attention": _SOFTMAX_NAMES | _ATTENTION_NAMES | _TRANSFORMER_NAMES,
    "mask": set(),
    "multi_head": _SOFTMAX_NAMES | _ATTENTION_NAMES | _TRANSFORMER_NAMES,
    "add_norm": _NORM_NAMES | _TRANSFORMER_NAMES,
    "feed_forward": _TRANSFORMER_NAMES,
    "positional_encoding": _TRANSFORMER_NAMES,
    "encoder": _SOFTMAX_NAMES | _ATTENTION_NAMES | _NORM_NAMES | _TRANSFORMER_NAMES,
    "decoder": _SOFTMAX_NAMES | _ATTENTION_NAMES | _NORM_NAMES | _TRANSFORMER_NAMES,
    "transformer": _ATTENTION_NAMES | _NORM_NAMES | _TRANSFORMER_NAMES,
}
# Ways to reach a name without writing it: dynamic attribute access, dynamic import, code from strings.
_HIDING_CALLS = {"getattr", "__import__", "eval", "exec", "compile", "vars", "globals", "__getattribute__"}
_HIDING_MODULES = {"importlib", "ctypes", "inspect", "builtins", "subprocess", "autograder", "gc"}
# Reaching into the checker or torch's mode stack: the run-time guard lives there.
_TAMPERING_ATTRS = {"modules", "_pop_mode", "_push_mode", "_python_dispatch", "_get_current_dispatch_mode",
                    "_disable_current_modes", "RUNTIME"}


class ForbiddenCall(RuntimeError):
    """Raised inside student code when it reaches a library function the exercise must do by hand."""

    def __init__(self, what: str, component: str):
        self.what, self.component = what, component
        super().__init__(f"{what} is forbidden in {component}: this exercise asks for it by hand")


def _make_guard():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Guard(TorchDispatchMode):
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            # torch wraps __torch_dispatch__ to skip dynamo, importing torch._dynamo on first use (~1 s).
            # This mode never runs under torch.compile, so the wrapper buys nothing.
            return False

        def __init__(self, component: str, forbidden: dict[str, str]):
            super().__init__()
            self.component, self.forbidden = component, forbidden

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            what = self.forbidden.get(func._overloadpacket.__name__)
            if what is not None:
                raise ForbiddenCall(what, self.component)
            return func(*args, **(kwargs or {}))

    return Guard


_Guard = None


@contextlib.contextmanager
def guard(component: str):
    """Make the component's forbidden library functions raise ForbiddenCall for the duration."""
    global _Guard
    forbidden = RUNTIME.get(component, {})
    patched = _patch_scipy(component) if component == "attention_numpy" else []
    try:
        if not forbidden:
            yield
            return
        if _Guard is None:
            _Guard = _make_guard()
        from torch.utils._python_dispatch import _get_current_dispatch_mode

        mode = _Guard(component, forbidden)
        mode.__enter__()
        try:
            yield
        finally:
            # The student's code ran inside: it must not have popped the guard off torch's mode stack.
            intact = _get_current_dispatch_mode() is mode
            if intact:
                mode.__exit__(None, None, None)
        if not intact:
            raise ForbiddenCall("removing the by-hand guard from torch's dispatch mode stack", component)
    finally:
        for obj, name, old in patched:
            setattr(obj, name, old)


def _patch_scipy(component: str):
    import sys

    special = sys.modules.get("scipy.special")
    if special is None:
        return []
    patched = []
    for name in ("softmax", "log_softmax"):
        if hasattr(special, name):
            def refuse(*a, _n=name, **k):
                raise ForbiddenCall(f"scipy.special.{_n}", component)
            patched.append((special, name, getattr(special, name)))
            setattr(special, name, refuse)
    return patched


@dataclass(frozen=True)
class Finding:
    line: int
    what: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.what}"


def scan_source(component: str, source: str) -> list[Finding]:
    """Static by-hand check: forbidden library names and the tricks that hide them."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []  # the import itself reports the syntax error
    names = STATIC.get(component, set())
    found: list[Finding] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in names:
            found.append(Finding(node.lineno, f"uses .{node.attr}, a library function this exercise does by hand"))
        elif isinstance(node, ast.Attribute) and node.attr in _TAMPERING_ATTRS:
            found.append(Finding(node.lineno, f"uses .{node.attr}, which reaches into the checker or torch's "
                                              "dispatch modes"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            root = (node.module or "").split(".")[0]
            if root in _HIDING_MODULES:
                found.append(Finding(node.lineno, f"imports from {node.module}, which this kit does not allow"))
            for alias in node.names:
                if alias.name in names:
                    found.append(Finding(node.lineno, f"imports {alias.name} from {node.module}"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in _HIDING_MODULES:
                    found.append(Finding(node.lineno, f"imports {alias.name}, which this kit does not allow"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _HIDING_CALLS:
            dynamic = node.func.id != "getattr" or not (
                len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value not in names
            )
            if dynamic:
                found.append(Finding(node.lineno, f"calls {node.func.id}(...) with a computed name, which can hide a forbidden call"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
            found.append(Finding(node.lineno, f"names {node.value!r} in a string"))
    return sorted(set(found), key=lambda f: f.line)
