"""The by-hand rules: which library functions a component may not use, enforced two ways.

At run time, the library's own kernels refuse. Every forbidden operator family (every softmax, log-softmax and
logsumexp; every layer/group/batch/instance/RMS normalisation; every fused attention; sparse, nested, quantized
and backward variants included) is found by name in torch's operator registry, and each of its kernels (CPU,
sparse, nested, mkldnn, quantized, composite...) is shadowed by a Python kernel registered with torch.library.
While a component that forbids the family is under test, that kernel raises ForbiddenCall; otherwise it steps
aside (unregisters itself and runs the original): inside a guard until a guard is entered or left, outside any
guard for that one call. Any route to the operator ends in
one of its kernels (torch.softmax, getattr with a computed name, torch.ops.aten._softmax, .redispatch, a
disabled or popped dispatch mode, an excluded dispatch key, another thread), so no spelling slips through, and
operators outside the families pay nothing. The configuration is computed once, before any student code is
imported, and held in a closure (frozensets); `install()` returns the guard that the Executor keeps.

After every call the guard also checks that torch's dispatch state (the thread's included/excluded dispatch
keys, the dispatch mode stack) is what it was before, and that its own kernels are still registered: a call
that changed either fails as forbidden. A forbidden call the student catches still fails the call. An audit
hook (which cannot be removed) refuses, during a call, the interpreter-walking functions that would find the
guard's objects (gc.get_objects and kin) and the import of torch's compilers (torch.compile generates its own
softmax kernel).

Which families and names a component forbids is its declaration's (autograder/components.py).

Statically, an AST scan names forbidden calls and the tricks used to hide them, in the component's file and in
every helper module of the submission that it imports.
"""

from __future__ import annotations

import ast
import contextlib
import re
import sys
from dataclasses import dataclass
from types import MappingProxyType

from .components import COMPONENTS, NAMES
from .i18n import N_, _

# ------------------------------------------------------------------------------------------------ the rule
# An operator is forbidden where it computes the exercise's result in one call: a softmax (log_softmax and
# logsumexp included: exp(log_softmax) and the gradient of logsumexp are softmax), a normalisation over features
# with its own mean and variance (layer, group, batch, instance, RMS norm), or a fused attention. The ingredients
# stay allowed: reductions (mean, var, var_mean, std, sum, amax, vector norms), elementwise ops, matmul.
FAMILIES: MappingProxyType = MappingProxyType(
    {
        "softmax": re.compile(r"softmax|logsumexp"),
        "norm": re.compile(r"(layer|group|batch|instance|rms)_norm"),
        "attention": re.compile(
            r"attention|_fused_sdp|_transformer_encoder_layer|_transform_bias_rescale_qkv"
        ),
        # a library loss computes the whole (smoothed) cross-entropy in one call
        "loss": re.compile(r"cross_entropy|nll_loss|kl_div"),
    }
)
# What each family is, as a student reads it (translated where a ForbiddenCall is made).
FAMILY_TEXT = MappingProxyType(
    {
        "softmax": N_(
            "a library softmax: torch.softmax, F.softmax, F.log_softmax, torch.sparse.softmax, "
            "torch.logsumexp..."
        ),
        "norm": N_(
            "a library normalisation: F.layer_norm, nn.LayerNorm, F.group_norm, F.batch_norm, "
            "F.instance_norm, F.rms_norm..."
        ),
        "attention": N_(
            "a library attention: F.scaled_dot_product_attention, nn.MultiheadAttention, "
            "nn.TransformerEncoderLayer..."
        ),
        "loss": N_(
            "a library loss: F.cross_entropy (label_smoothing=...), nn.CrossEntropyLoss, F.nll_loss, "
            "F.kl_div..."
        ),
    }
)
# Per component: the operator families that may not run while it is under test (its declaration says which).
RUNTIME: MappingProxyType = MappingProxyType({c.name: c.forbidden_families for c in COMPONENTS})
# Kernels that compute values (not Meta, not the autograd layer: autograd ends in one of these).
_KEYS = (
    "CPU",
    "CUDA",
    "XPU",
    "MPS",
    "SparseCPU",
    "SparseCUDA",
    "SparseCsrCPU",
    "SparseCsrCUDA",
    "NestedTensorCPU",
    "NestedTensorCUDA",
    "MkldnnCPU",
    "QuantizedCPU",
    "QuantizedCUDA",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
    "CompositeImplicitAutograd",
)


def family_ops(op_names=None) -> dict[str, frozenset[str]]:
    """family -> the qualified operator names ('aten::_softmax.out') in torch's registry that belong to it."""
    import torch

    names = torch._C._dispatch_get_all_op_names() if op_names is None else op_names
    found = {}
    for family, pattern in FAMILIES.items():
        found[family] = frozenset(
            n for n in names if pattern.search(n.partition("::")[2].partition(".")[0])
        )
    return found


class ForbiddenCall(RuntimeError):
    """Raised inside student code when it reaches a library function the exercise must do by hand."""

    def __init__(self, what: str, component: str):
        self.what, self.component = what, component
        super().__init__(
            _("{what} is forbidden in {component}: this exercise asks for it by hand").format(
                what=what, component=component
            )
        )


def _what(op: str, family: str) -> str:
    """'aten::softmax.int (a library softmax: ...)', in the language of the moment: made when the call is
    refused, never at install (the zygote installs the guard before it learns the language)."""
    return f"{op} ({_(FAMILY_TEXT[family])})"


# --------------------------------------------------------------------------------------------- the guard
_installed = None  # a cache only: the Executor keeps the guard it got from install() before importing students


def install():
    """Shadow the forbidden kernels and add the audit hook, once per process; return the guard factory."""
    global _installed
    if _installed is None:
        _installed = _make_guard()
    return _installed


def guard(component: str):
    """Context manager: the component's forbidden operators raise ForbiddenCall for the duration."""
    return install()(component)


def _make_guard():
    import warnings

    import torch
    from torch._C import _dispatch_has_kernel_for_dispatch_key

    ops = family_ops()
    family_of = {op: family for family, names in ops.items() for op in names}
    # The configuration is copied into this closure now, before any student code runs: a submission that
    # rewrites the module's RUNTIME later changes nothing here (examples/hostile/clear_guard_config).
    forbidden = {
        c: frozenset(op for f in families for op in ops[f]) for c, families in RUNTIME.items()
    }
    scipy_softmax = frozenset(c for c, families in RUNTIME.items() if "softmax" in families)
    # The component under test, its forbidden operators, the first one reached.
    state = [None, frozenset(), None]
    # operator -> the torch.library.Library holding its shadow kernels
    libraries: dict[str, object] = {}
    kernels, keys_of = {}, {}

    def has_kernel(op, key):
        try:
            return _dispatch_has_kernel_for_dispatch_key(op, key)
        except RuntimeError:  # a key this build does not know
            return False

    def register(op):
        if op in libraries:
            return
        ns, _sep, name = op.partition("::")
        library = torch.library.Library(ns, "IMPL")
        with (
            warnings.catch_warnings()
        ):  # "overriding a previously registered kernel": that is the point
            warnings.simplefilter("ignore")
            for key in keys_of[op]:
                library.impl(name, kernels[op], key)
        libraries[op] = library

    # Allowed operators that stepped aside inside the guard of the component under test: registered again when
    # a guard is entered or left (a training step calls log_softmax and its backward: stepping aside and back
    # at every call, 0.3 ms each against 6 us for the call, was a tenth of the copy task's time).
    aside: set[str] = set()

    def step_back():
        while aside:
            register(aside.pop())

    def shadow(op, overload):
        family = family_of[op]

        def kernel(*args, **kwargs):
            if op in state[1]:
                what = _what(op, family)
                if state[2] is None:
                    state[2] = what
                raise ForbiddenCall(what, state[0])
            library = libraries.pop(op, None)  # allowed here: step aside
            if library is not None:
                library._destroy()
            if state[0] is not None:  # in a guard: until a guard is entered or left
                aside.add(op)
                return overload(*args, **kwargs)
            try:  # outside any guard: for this one call
                return overload(*args, **kwargs)
            finally:
                register(op)

        return kernel

    for op in sorted(family_of):
        keys = tuple(k for k in _KEYS if has_kernel(op, k))
        if not keys:
            continue  # no kernel that computes values in this build (Meta only, or another device)
        ns, _sep, name = op.partition("::")
        packet, _sep, overload = name.partition(".")
        try:
            target = getattr(getattr(getattr(torch.ops, ns), packet), overload or "default")
        except (AttributeError, RuntimeError):
            continue
        keys_of[op], kernels[op] = keys, shadow(op, target)
        register(op)
    shadowed = frozenset(libraries)

    def dispatch_state():
        return (
            repr(torch._C._dispatch_tls_local_include_set()),
            repr(torch._C._dispatch_tls_local_exclude_set()),
            torch._C._len_torch_dispatch_stack(),
            torch._C._len_torch_function_stack(),
        )

    def intact() -> bool:
        return set(libraries) >= shadowed and all(lib.m is not None for lib in libraries.values())

    refused_events = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents"})

    def audit(event, args):
        if state[0] is None:
            return
        if event in refused_events:
            what = _(
                "{call}(), which walks the interpreter's objects (the by-hand guard among them),"
            ).format(call=event)
        elif event == "import" and str(args[0]).startswith(("torch._dynamo", "torch._inductor")):
            what = _("torch.compile, which generates its own kernels,")
        else:
            return
        if state[2] is None:
            state[2] = what
        raise ForbiddenCall(what, state[0])

    sys.addaudithook(audit)

    @contextlib.contextmanager
    def guard_for(component: str):
        banned = forbidden[component]
        outer, before = list(state), dispatch_state()
        patched = _patch_scipy(component) if component in scipy_softmax else []
        step_back()  # a nested guard: what the outer one allowed may be forbidden here
        state[:] = [component, banned, None]
        try:
            yield
        except BaseException as e:
            reached = _leave(component, banned, outer, patched)
            if reached and not isinstance(
                e, ForbiddenCall
            ):  # caught by the student, then something else failed
                # Keep the student's frames: the message names the file where the call sits.
                raise ForbiddenCall(reached, component).with_traceback(e.__traceback__) from None
            raise
        reached = _leave(component, banned, outer, patched)
        if reached:  # reached and caught inside: the call still used it
            raise ForbiddenCall(reached, component)
        if dispatch_state() != before:
            raise ForbiddenCall(
                _(
                    "changing torch's dispatch state (a dispatch mode, or an included or excluded "
                    "dispatch key, left changed)"
                ),
                component,
            )

    def _leave(component, banned, outer, patched):
        mine = state[0] == component and state[1] is banned
        reached = state[2] if mine else _("tampering with the by-hand guard")
        state[:] = outer
        for obj, name, old in patched:
            setattr(obj, name, old)
        step_back()
        if not intact():
            reached = reached or _("removing the by-hand guard's kernels")
        return reached

    guard_for.forbidden = lambda component: forbidden[component]
    guard_for.shadowed = lambda: shadowed
    return guard_for


def forbidden_ops(component: str) -> frozenset[str]:
    """The qualified operator names the guard refuses while `component` is under test."""
    return install().forbidden(component)


def _patch_scipy(component: str):
    special = sys.modules.get("scipy.special")
    if special is None:
        return []
    patched = []
    for name in ("softmax", "log_softmax", "logsumexp"):
        if hasattr(special, name):

            def refuse(*a, _n=name, **k):
                raise ForbiddenCall(f"scipy.special.{_n}", component)  # code: no words

            patched.append((special, name, getattr(special, name)))
            setattr(special, name, refuse)
    return patched


# ------------------------------------------------------------------------------------------- the static scan
# Names that may not appear as attributes or imports from a library, in named sets; a component's declaration
# says which sets apply to it.
FORBIDDEN_NAMES: MappingProxyType = MappingProxyType(
    {
        "attention": frozenset(
            {
                "scaled_dot_product_attention",
                "MultiheadAttention",
                "multi_head_attention_forward",
                "_native_multi_head_attention",
                "_scaled_dot_product_attention_math",
                "_scaled_dot_product_flash_attention_for_cpu",
                "_transformer_encoder_layer_fwd",
            }
        ),
        "softmax": frozenset(
            {
                "softmax",
                "log_softmax",
                "_softmax",
                "_log_softmax",
                "_safe_softmax",
                "_sparse_softmax",
                "_masked_softmax",
                "softmin",
                "gumbel_softmax",
                "logsumexp",
                "Softmax",
                "LogSoftmax",
                "Softmin",
            }
        ),
        "norm": frozenset(
            {
                "layer_norm",
                "LayerNorm",
                "native_layer_norm",
                "rms_norm",
                "RMSNorm",
                "_fused_rms_norm",
                "group_norm",
                "GroupNorm",
                "native_group_norm",
                "batch_norm",
                "native_batch_norm",
                "BatchNorm1d",
                "BatchNorm2d",
                "BatchNorm3d",
                "instance_norm",
                "InstanceNorm1d",
                "InstanceNorm2d",
                "InstanceNorm3d",
            }
        ),
        "transformer": frozenset(
            {
                "Transformer",
                "TransformerEncoder",
                "TransformerDecoder",
                "TransformerEncoderLayer",
                "TransformerDecoderLayer",
            }
        ),
        # a library loss computes the whole (smoothed) cross-entropy in one call
        "loss": frozenset(
            {
                "cross_entropy",
                "CrossEntropyLoss",
                "nll_loss",
                "NLLLoss",
                "kl_div",
                "KLDivLoss",
                "binary_cross_entropy",
                "binary_cross_entropy_with_logits",
            }
        ),
    }
)


def unknown_rules(component) -> list[str]:
    """What a component's declaration names that these rules do not know (a typo would forbid nothing)."""
    return [
        f"{field} {name!r} is not one of {', '.join(known)}"
        for field, known in (("forbidden_families", FAMILIES), ("forbidden_names", FORBIDDEN_NAMES))
        for name in getattr(component, field)
        if name not in known
    ]


_UNKNOWN = [f"{c.name}'s {why}" for c in COMPONENTS for why in unknown_rules(c)]
if _UNKNOWN:  # at import: a misspelt rule must not forbid nothing
    raise ValueError("autograder/components.py: " + "; ".join(_UNKNOWN))
# Per component: the names its static scan refuses.
STATIC: MappingProxyType = MappingProxyType(
    {
        c.name: frozenset().union(*(FORBIDDEN_NAMES[s] for s in c.forbidden_names))
        for c in COMPONENTS
    }
)
# Ways to reach a name without writing it: dynamic attribute access, dynamic import, code from strings.
_HIDING_CALLS = {
    "getattr",
    "__import__",
    "eval",
    "exec",
    "compile",
    "vars",
    "globals",
    "__getattribute__",
}
_HIDING_MODULES = {"importlib", "ctypes", "inspect", "builtins", "subprocess", "autograder", "gc"}
# Reaching into the checker, torch's dispatcher (modes, dispatch keys, kernels) or torch's own Python
# implementations of the operators (decompositions, references, compilers): the run-time guard lives there.
_TAMPERING_ATTRS = frozenset(
    {
        "modules",
        "_pop_mode",
        "_push_mode",
        "_python_dispatch",
        "_get_current_dispatch_mode",
        "_disable_current_modes",
        "RUNTIME",
        "_C",
        "_DisableTorchDispatch",
        "_disabled_torch_dispatch_impl",
        "_ExcludeDispatchKeyGuard",
        "_IncludeDispatchKeyGuard",
        "_ForceDispatchKeyGuard",
        "_unset_dispatch_mode",
        "_set_dispatch_mode",
        "_pop_torch_dispatch_stack",
        "_push_on_torch_dispatch_stack",
        "_dispatch_tls_set_dispatch_key_excluded",
        "_dispatch_tls_set_dispatch_key_included",
        "redispatch",
        "_op_dk",
        "library",
        "_decomp",
        "_refs",
        "_prims",
        "_dynamo",
        "_inductor",
        "__closure__",
        "cell_contents",
        "__subclasses__",
        "__globals__",
        "f_back",
        "f_globals",
        "f_locals",
    }
)


@dataclass(frozen=True)
class Finding:
    line: int
    what: str
    file: str = ""

    def __str__(self) -> str:
        return (_("{file}, line {line}: {what}") if self.file else _("line {line}: {what}")).format(
            file=self.file, line=self.line, what=self.what
        )


def scan_source(component: str, source: str, file: str = "") -> list[Finding]:
    """Static by-hand check: forbidden library names and the tricks that hide them."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []  # the import itself reports the syntax error
    names = STATIC[component]
    found: list[Finding] = []
    add = lambda node, what: found.append(Finding(node.lineno, what, file))  # noqa: E731
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in names:
            add(
                node,
                _("uses {name}, a library function this exercise does by hand").format(
                    name=f".{node.attr}"
                ),
            )
        elif isinstance(node, ast.Attribute) and node.attr in _TAMPERING_ATTRS:
            add(
                node,
                _("uses {name}, which reaches into the checker or torch's dispatcher").format(
                    name=f".{node.attr}"
                ),
            )
        elif (
            isinstance(node, ast.Attribute)
            and node.attr == "compile"
            and isinstance(node.value, ast.Name)
            and node.value.id == "torch"
        ):
            add(node, _("uses torch.compile, which generates its own kernels"))
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "__dict__"
            and not isinstance(node.slice, ast.Constant)
        ):
            add(node, _("looks up a computed name in a __dict__, which can hide a forbidden call"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            root = (node.module or "").split(".")[0]
            if root in _HIDING_MODULES:
                add(
                    node,
                    _("imports from {module}, which this kit does not allow").format(
                        module=node.module
                    ),
                )
            for alias in node.names:
                if alias.name in names or alias.name in _TAMPERING_ATTRS:
                    add(
                        node,
                        _("imports {name} from {module}").format(
                            name=alias.name, module=node.module
                        ),
                    )
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in _HIDING_MODULES:
                    add(
                        node,
                        _("imports {name}, which this kit does not allow").format(name=alias.name),
                    )
                elif set(alias.name.split(".")) & _TAMPERING_ATTRS:
                    add(
                        node,
                        _(
                            "imports {name}, which reaches into the checker or torch's dispatcher"
                        ).format(name=alias.name),
                    )
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _HIDING_CALLS
        ):
            dynamic = node.func.id != "getattr" or not (
                len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value not in names
                and node.args[1].value not in _TAMPERING_ATTRS
            )
            if dynamic:
                add(
                    node,
                    _(
                        "calls {name}(...) with a computed name, which can hide a forbidden call"
                    ).format(name=node.func.id),
                )
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and (node.value in names or node.value in _TAMPERING_ATTRS)
        ):
            add(node, _("names {text} in a string").format(text=repr(node.value)))
    return sorted(set(found), key=lambda f: (f.file, f.line))


def imported_helpers(source: str) -> list[str]:
    """Names of the sibling modules a file imports (`from .x import y`, `from . import x`, `import x`)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            names.append(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 1:
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            names.extend(alias.name.split(".")[0] for alias in node.names)
    return list(dict.fromkeys(n for n in names if n.isidentifier()))


def scan_submission(component: str, read) -> list[Finding]:
    """scan_source over the component's file and every helper module of the submission it imports, directly or
    through other helpers, under the component's rules. `read(name)` is a module's text, or None if the
    submission has no such file. Other components' files are not followed: their own check covers them, so one
    mistake costs one point."""
    source = read(component)
    if source is None:
        return []
    found = scan_source(component, source)
    seen, todo = {component}, imported_helpers(source)
    while todo:
        name = todo.pop(0)
        if name in seen or name in NAMES:
            continue
        seen.add(name)
        text = read(name)
        if text is None:  # a library (torch, numpy...), not a file of the submission
            continue
        found += scan_source(component, text, f"{name}.py")
        todo += imported_helpers(text)
    return found
