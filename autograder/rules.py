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
operators outside the families pay nothing. Which components refuse an operator is a constant of its kernel's
code (a frozenset the compiler folds), computed once before any student code is imported; `install()` returns
the guard that the Executor keeps. Library functions that compute a family in Python (SciPy's softmax,
torch.distributions' kl_divergence and entropy...) are replaced by refusals for the length of a call.

After every call the guard also checks that torch's dispatch state (the thread's included/excluded dispatch
keys, the dispatch mode stack) is what it was before, and that its own kernels are still registered: a call
that changed either fails as forbidden. A forbidden call the student catches still fails the call. An audit
hook (which cannot be removed) refuses, during a call, the routes to the guard's state (gc's walkers, ctypes,
tracing, generator frames, replacing code objects) and the import of torch's compilers
(torch.compile generates its own softmax kernel). `probe()` lets the checking side verify that the guard still
refuses (a Probe operation).

Which families and names a component forbids is its declaration's (autograder/components.py); how the sets
are derived (survey()) and what is deliberately allowed: docs/byhand.md.

Statically, an AST scan names forbidden calls and the tricks used to hide them, in the component's file and in
every helper module of the submission that it imports, and names tampering in every other .py file of the
submission, whatever loads it.
"""

from __future__ import annotations

import ast
import contextlib
import re
import sys
from dataclasses import dataclass
from types import MappingProxyType, ModuleType

from .components import COMPONENTS, NAMES
from .i18n import N_, _

# ------------------------------------------------------------------------------------------------ the rule
# An operator is forbidden where it computes the exercise's result in one call: a softmax (log_softmax, logsumexp,
# logcumsumexp and logaddexp included: exp(log_softmax), the gradient of logsumexp, exp(x - logcumsumexp(x)[-1])
# and exp(x - logaddexp folded over the axis) are softmax), a normalisation over features with its own mean and
# variance (layer, group, batch, instance, RMS norm), a fused attention, or a library loss. The ingredients stay
# allowed: reductions (mean, var, var_mean, std, sum, amax, cumsum, vector norms), elementwise ops (exp, log,
# xlogy, entr), gather, matmul. docs/byhand.md says how each pattern was found (survey()) and what is allowed.
FAMILIES: MappingProxyType = MappingProxyType(
    {
        "softmax": re.compile(r"softmax|softmin|logsumexp|logcumsumexp|logaddexp"),
        "norm": re.compile(r"(layer|group|batch|instance|rms)_norm"),
        "attention": re.compile(
            r"attention|_fused_sdp|_transformer_encoder_layer|_transform_bias_rescale_qkv"
        ),
        # a library loss computes the whole (smoothed) cross-entropy in one call: cross_entropy, nll_loss,
        # kl_div, and any other library loss (poisson_nll_loss(log_softmax(x), q, log_input=True) is the
        # smoothed cross-entropy plus one)
        "loss": re.compile(r"loss|cross_entropy|nll|kl_div"),
    }
)
# What each family is, as a student reads it (translated where a ForbiddenCall is made).
FAMILY_TEXT = MappingProxyType(
    {
        "softmax": N_(
            "a library softmax: torch.softmax, F.softmax, F.log_softmax, torch.sparse.softmax, "
            "torch.logsumexp, torch.logcumsumexp, torch.logaddexp..."
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
            "F.kl_div, torch.distributions.kl_divergence..."
        ),
    }
)
# Per component: the operator families that may not run while it is under test (its declaration says which).
RUNTIME: MappingProxyType = MappingProxyType({c.name: c.forbidden_families for c in COMPONENTS})
# Library functions outside torch's operator registry that compute a family's result in Python (found by
# survey(): their own code calls no operator of the family, or only ones the component allows). While a
# component that forbids the family is under test they are replaced by refusals (module, attribute).
PYTHON_EQUIVALENTS: MappingProxyType = MappingProxyType(
    {
        "softmax": (
            ("scipy.special", "softmax"),
            ("scipy.special", "log_softmax"),
            ("scipy.special", "logsumexp"),
            ("numpy", "logaddexp"),
            ("numpy", "logaddexp2"),
        ),
        # local_response_norm over all d features of a centred x divides by sqrt(k + mean(x^2)): a layer norm
        # (nn.LocalResponseNorm calls it)
        "norm": (("torch.nn.functional", "local_response_norm"),),
        # KL(q || p) = cross_entropy(q, p) - entropy(q): the smoothed loss as a divergence plus an entropy
        "loss": (
            ("torch.distributions", "kl_divergence"),
            ("torch.distributions.kl", "kl_divergence"),
            ("torch.distributions.kl", "_kl_categorical_categorical"),
            ("torch.distributions.kl", "_kl_onehotcategorical_onehotcategorical"),
            ("torch.distributions.kl", "_dispatch_kl"),
            ("torch.distributions.categorical.Categorical", "entropy"),
            ("torch.distributions.categorical.Categorical", "log_prob"),
            ("torch.distributions.one_hot_categorical.OneHotCategorical", "entropy"),
            ("torch.distributions.one_hot_categorical.OneHotCategorical", "log_prob"),
        ),
    }
)
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


# The survey's wider net (docs/byhand.md): every name in torch's registry and in the Python namespaces a student
# reaches (torch, torch.nn.functional, torch.nn, torch.special, torch.linalg, Tensor, torch.distributions, numpy,
# scipy.special) that looks like a family, so a name the families miss is seen and decided on (tests/test_rules.py).
SURVEY = re.compile(
    r"soft|logsumexp|logcumsumexp|logaddexp|norm|attention|attn|sdp|loss|entrop|nll|kl_|divergence"
)
SURVEYED_NAMESPACES = (
    "torch",
    "torch.nn.functional",
    "torch.nn",
    "torch.special",
    "torch.linalg",
    "torch.distributions",
    "torch.distributions.kl",
    "numpy",
    "scipy.special",
)


def survey() -> dict[str, list[str]]:
    """namespace -> the names in it that SURVEY matches ('aten' for torch's operator registry)."""
    import importlib

    import torch

    found = {
        "aten": sorted(
            {
                n.partition("::")[2].partition(".")[0]
                for n in torch._C._dispatch_get_all_op_names()
                if n.startswith("aten::")
            }
        )
    }
    for name in SURVEYED_NAMESPACES:
        try:
            namespace = importlib.import_module(name)
        except ImportError:
            continue
        # functions and classes, not submodules (torch.nn.attention holds kernel choices, not an attention)
        found[name] = sorted(
            n for n in dir(namespace) if not isinstance(getattr(namespace, n, None), ModuleType)
        )
    found["Tensor"] = sorted(dir(torch.Tensor))
    return {where: [n for n in names if SURVEY.search(n.lower())] for where, names in found.items()}


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


def _frozen_members(members) -> str:
    """A set display of string constants, which the compiler folds into a frozenset constant of the code
    object: immutable, and replacing the code is refused by the audit hook during a call."""
    return "{" + ", ".join(repr(m) for m in sorted(members)) + "}" if members else "()"


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


# One forbidden call of each family, made by the kit under a component's guard: a probe that it still refuses.
def _probe_calls():
    import torch
    import torch.nn.functional as F

    x = torch.zeros(1, 2, 4)
    return {
        "softmax": lambda: torch.softmax(x, -1),
        "norm": lambda: F.layer_norm(x, (4,)),
        "attention": lambda: F.scaled_dot_product_attention(x, x, x),
        "loss": lambda: F.cross_entropy(x[0], torch.zeros(2, dtype=torch.long)),
    }


def probe(guard_for, component: str, families) -> list[str]:
    """The `families` the guard no longer refuses for `component` (empty while it is intact): one call of each,
    made under the guard. The checking side sends it (a Probe operation, with the families it knows the
    component forbids) at points of a section the student's code cannot predict, and after its last property."""
    calls = _probe_calls()
    open_ = []
    for family in families:
        try:
            with guard_for(component):
                calls[family]()
        except ForbiddenCall:
            continue
        except Exception:  # noqa: BLE001 - anything but a refusal: the guard did not refuse
            pass
        open_.append(family)
    return open_


def _make_guard():
    import warnings

    import torch
    from torch._C import _dispatch_has_kernel_for_dispatch_key

    ops = family_ops()
    family_of = {op: family for family, names in ops.items() for op in names}
    runtime = dict(
        RUNTIME
    )  # copied now, before any student code runs (examples/hostile/clear_guard_config)
    # Reported by forbidden_ops(); the kernels below carry their own constants and never read it.
    forbidden = MappingProxyType(
        {c: frozenset(op for f in fams for op in ops[f]) for c, fams in runtime.items()}
    )
    # (component, family) pairs whose Python equivalents are refused: a frozenset constant in code.
    namespace = {}
    pairs = {f"{c}/{f}" for c, fams in runtime.items() for f in fams if f in PYTHON_EQUIVALENTS}
    exec(  # noqa: S102 - the kit's own constants, made code so that no Python object holds them
        f"def python_refused(component, family):\n"
        f"    return component + '/' + family in {_frozen_members(pairs)}\n",
        namespace,
    )
    python_refused = namespace["python_refused"]
    equivalents = tuple(
        PYTHON_EQUIVALENTS.items()
    )  # rebinding the module's name later changes nothing
    # The component under test, the first forbidden call reached.
    state = [None, None]
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

    def refuser(op, family):
        def refuse():
            what = _what(op, family)
            if state[1] is None:
                state[1] = what
            raise ForbiddenCall(what, state[0])

        return refuse

    def allower(op, overload):
        def allowed(args, kwargs):
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

        return allowed

    def shadow(op, overload):
        family = family_of[op]
        # The components that refuse this operator: a constant of the kernel's code, not a Python container
        # (issue 20: a dict in a closure could be emptied from inside).
        refusing = {c for c, fams in runtime.items() if family in fams}
        scope = {"state": state, "refuse": refuser(op, family), "allowed": allower(op, overload)}
        exec(  # noqa: S102 - the kit's own constants
            compile(
                "def kernel(*args, **kwargs):\n"
                f"    if state[0] in {_frozen_members(refusing)}:\n"
                "        refuse()\n"
                "    return allowed(args, kwargs)\n",
                f"<by-hand guard of {op}>",
                "exec",
            ),
            scope,
        )
        return scope["kernel"]

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
    # Which kernels must stay registered: a constant of intact()'s code, not a Python container (a closure's
    # frozenset can be swapped for an empty one through its cell).
    exec(  # noqa: S102 - the kit's own constants
        "def intact(libraries):\n"
        f"    return libraries.keys() >= {_frozen_members(shadowed)} and all(\n"
        "        lib.m is not None for lib in libraries.values()\n"
        "    )\n",
        namespace,
    )
    intact_code = namespace["intact"]

    def dispatch_state():
        return (
            repr(torch._C._dispatch_tls_local_include_set()),
            repr(torch._C._dispatch_tls_local_exclude_set()),
            torch._C._len_torch_dispatch_stack(),
            torch._C._len_torch_function_stack(),
        )

    def intact() -> bool:
        return intact_code(libraries)

    # Audit events refused during a call: walking the interpreter's objects and frames, rewriting code objects,
    # tracing, raw memory (ctypes). Each is a route to the guard's state that no exercise needs.
    refused_events = frozenset(
        {
            "gc.get_objects",
            "gc.get_referrers",
            "gc.get_referents",
            "sys._current_frames",
            "sys.settrace",
            "sys.setprofile",
            "sys.addaudithook",
        }
    )
    # (not tb_frame: traceback.format_exc() reads it, in honest code too; the scan names it)
    frame_attributes = frozenset({"gi_frame", "cr_frame", "ag_frame"})
    # (not __defaults__: namedtuple sets it on the classes it makes, which torch does lazily during a call)
    code_attributes = frozenset({"__code__"})

    def audit(event, args):
        if state[0] is None:
            return
        if event in refused_events or event.startswith("ctypes."):
            what = _(
                "{call}(), which walks the interpreter's objects (the by-hand guard among them),"
            ).format(call=event)
        elif event == "object.__getattr__" and args[1] in frame_attributes:
            what = _("reading .{name}, which walks the interpreter's frames,").format(name=args[1])
        elif event == "object.__setattr__" and args[1] in code_attributes:
            what = _("replacing a function's .{name},").format(name=args[1])
        elif event == "import" and str(args[0]).startswith(("torch._dynamo", "torch._inductor")):
            what = _("torch.compile, which generates its own kernels,")
        else:
            return
        if state[1] is None:
            state[1] = what
        raise ForbiddenCall(what, state[0])

    sys.addaudithook(audit)

    @contextlib.contextmanager
    def guard_for(component: str):
        outer, before = list(state), dispatch_state()
        patched = _patch_python(component, python_refused, refuse_python, equivalents)
        step_back()  # a nested guard: what the outer one allowed may be forbidden here
        state[:] = [component, None]
        try:
            yield
        except BaseException as e:
            reached = _leave(component, outer, patched)
            if reached and not isinstance(
                e, ForbiddenCall
            ):  # caught by the student, then something else failed
                # Keep the student's frames: the message names the file where the call sits.
                raise ForbiddenCall(reached, component).with_traceback(e.__traceback__) from None
            raise
        reached = _leave(component, outer, patched)
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

    def refuse_python(what):
        if state[1] is None:
            state[1] = what
        raise ForbiddenCall(what, state[0])

    def _leave(component, outer, patched):
        mine = state[0] == component
        reached = state[1] if mine else _("tampering with the by-hand guard")
        state[:] = outer
        for obj, name, old in reversed(patched):
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


def _patch_python(component: str, python_refused, refuse, equivalents):
    """Replace the Python equivalents of the component's forbidden families by refusals; [(obj, name, old)].
    A refusal is recorded like a refused operator: caught by the student, it still fails the call."""
    patched = []
    for family, targets in equivalents:
        if not python_refused(component, family):
            continue
        for path, name in targets:
            owner = _lookup(path)
            if owner is None or not hasattr(owner, name):
                continue

            patched.append(
                (owner, name, getattr(owner, "__dict__", {}).get(name, getattr(owner, name)))
            )
            setattr(owner, name, _Refusal(f"{path}.{name}", refuse))  # code: no words
    return patched


class _Refusal:
    """Stands for a refused library function: calling it or reading any of its attributes (np.logaddexp.reduce)
    refuses."""

    __slots__ = ("_what", "_refuse")

    def __init__(self, what, refuse):
        object.__setattr__(self, "_what", what)
        object.__setattr__(self, "_refuse", refuse)

    def __call__(self, *args, **kwargs):
        self._refuse(self._what)

    def __getattr__(self, name):
        self._refuse(self._what)


def _lookup(path: str):
    """The module (or class in a module) at a dotted path, if that module is imported already: the guard never
    imports a library (scipy is not a dependency)."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:cut]))
        if module is not None:
            obj = module
            for part in parts[cut:]:
                obj = getattr(obj, part, None)
            return obj
    return None


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
                "logcumsumexp",
                "_logcumsumexp",
                "logaddexp",
                "logaddexp2",
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
                "local_response_norm",
                "LocalResponseNorm",
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
                "poisson_nll_loss",
                "PoissonNLLLoss",
                # torch.distributions: KL(q || p) plus the entropy of q is the smoothed cross-entropy
                "distributions",
                "kl_divergence",
                "entropy",
                "Categorical",
                "OneHotCategorical",
                "_dispatch_kl",
                "_KL_REGISTRY",
                "_KL_MEMOIZE",
                "rel_entr",
            }
        ),
    }
)
# The survey's names (survey()) that each named set adds to the list above, by pattern over their lower-cased
# names: every name in torch's namespaces, NumPy and SciPy that looks like the family (docs/byhand.md).
NAME_PATTERNS: MappingProxyType = MappingProxyType(
    {
        "softmax": FAMILIES["softmax"],
        "norm": re.compile(r"(layer|group|batch|instance|rms)_?norm"),
        "attention": re.compile(r"attention|_fused_sdp|multihead|multi_head"),
        "transformer": re.compile(r"^transformer"),
        "loss": re.compile(r"loss|cross_entropy|nll|kl_div|entropy|^_kl_"),
    }
)


def _derived_names() -> dict[str, frozenset[str]]:
    found = survey()
    every = {n for names in found.values() for n in names}
    return {
        key: frozenset(n for n in every if pattern.search(n.lower()))
        for key, pattern in NAME_PATTERNS.items()
    }


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
_DERIVED = _derived_names()
STATIC: MappingProxyType = MappingProxyType(
    {
        c.name: frozenset().union(
            *(FORBIDDEN_NAMES[s] | _DERIVED.get(s, frozenset()) for s in c.forbidden_names)
        )
        for c in COMPONENTS
    }
)
# Ways to reach a name without writing it: dynamic attribute access, dynamic import, code from strings. Called
# with a name that is not a constant (or one of the names below), or passed along as a value
# (`functools.reduce(getattr, ...)`), each is reported.
_NAME_TAKING = frozenset(
    {
        "getattr",
        "setattr",
        "delattr",
        "attrgetter",
        "methodcaller",
        "getattr_static",
        "resolve_name",
        "import_module",
        "__import__",
        "find_spec",
        "__getattribute__",
        "run_path",
        "run_module",
        "spec_from_file_location",
        "SourceFileLoader",
        "load_source",
    }
)
# Always reported when called: code from strings, namespaces as dictionaries.
_HIDING_CALLS = frozenset({"eval", "exec", "compile", "vars", "globals"})
# Modules that load code by other routes than an import statement, or walk the interpreter's objects.
_HIDING_MODULES = frozenset(
    {
        "importlib",
        "ctypes",
        "_ctypes",
        "inspect",
        "builtins",
        "subprocess",
        "autograder",
        "gc",
        "pkgutil",
        "runpy",
        "zipimport",
        "marshal",
        "pickle",
        "_pickle",
        "copyreg",
        "dill",
    }
)
# Reaching into the checker, torch's dispatcher (modes, dispatch keys, kernels), torch's own Python
# implementations of the operators (decompositions, references, compilers), or the interpreter's frames,
# closures and code objects: where the run-time guard and its state live.
_TAMPERING_ATTRS = frozenset(
    {
        "modules",
        "_pop_mode",
        "_push_mode",
        "_python_dispatch",
        "_get_current_dispatch_mode",
        "_disable_current_modes",
        "RUNTIME",
        "STATIC",
        "FAMILIES",
        "FORBIDDEN_NAMES",
        "_installed",
        "_make_guard",
        "_guard",
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
        "__wrapped__",
        "__code__",
        "__defaults__",
        "__kwdefaults__",
        "__builtins__",
        "__getattribute__",
        "__traceback__",
        "__loader__",
        "co_consts",
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_code",
        "tb_frame",
        "tb_next",
        "gi_frame",
        "cr_frame",
        "ag_frame",
        "_getframe",
        "_current_frames",
        "settrace",
        "setprofile",
        "FunctionType",
        "CodeType",
        "CellType",
    }
)
# A string that names the kit itself ('autograder.rules', 'autograder.student_code'...)
_KIT = re.compile(r"(^|\.)autograder(\.|$)")
# A string built from constants and so known statically: concatenation, %-formatting, f-strings, str.join and
# str.format of constants ('__clo' + 'sure__', f"{'soft'}max", '.'.join(['autograder', 'rules'])).
_NAMEISH = re.compile(r"[A-Za-z_][\w.]*")


def _folded(node) -> str | None:
    """The value of a string expression made of constants only, else None."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _folded(node.left), _folded(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        text = _folded(node.left)
        count = node.right.value if isinstance(node.right, ast.Constant) else None
        if text is not None and type(count) is int and 0 <= count * len(text) <= 200:
            return text * count
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        text = _folded(node.left)
        values = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
        parts = [_folded(v) for v in values]
        if text is None or None in parts:
            return None
        try:
            return text % tuple(parts)
        except (TypeError, ValueError):
            return None
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                if value.format_spec is not None or value.conversion not in (-1, ord("s")):
                    return None
                value = value.value
            parts.append(_folded(value))
        return None if None in parts else "".join(parts)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("join", "format")
        and not node.keywords
    ):
        owner = _folded(node.func.value)
        if node.func.attr == "join" and len(node.args) == 1:
            items = node.args[0]
            if owner is None or not isinstance(items, (ast.List, ast.Tuple)):
                return None
            parts = [_folded(e) for e in items.elts]
            return None if None in parts else owner.join(parts)
        parts = [_folded(a) for a in node.args]
        if owner is None or None in parts:
            return None
        try:
            return owner.format(*parts)
        except (IndexError, KeyError, ValueError):
            return None
    return None


def _constant_bindings(tree) -> dict[str, list[str]]:
    """Variables that only ever hold string constants: `for name in ("w_q", "w_k"): getattr(self, name)` names
    its attributes as plainly as `self.w_q` does. A variable bound any other way (a parameter, a computed
    value, a loop over anything else) is left out: its value is not known."""
    values: dict[str, list[str]] = {}
    unknown: set[str] = set()

    def bind(target, items):
        if not isinstance(target, ast.Name):
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    unknown.add(name.id)
            return
        texts = [_folded(i) for i in items] if items is not None else [None]
        if None in texts:
            unknown.add(target.id)
        else:
            values.setdefault(target.id, []).extend(texts)

    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.comprehension)):
            items = node.iter.elts if isinstance(node.iter, (ast.Tuple, ast.List)) else None
            bind(node.target, items)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                bind(target, [node.value])
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            bind(
                node.target,
                [node.value] if isinstance(node, ast.AnnAssign) and node.value else None,
            )
        elif isinstance(node, (ast.arg, ast.Global, ast.Nonlocal)):
            unknown.update([node.arg] if isinstance(node, ast.arg) else node.names)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            unknown.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            unknown.add(node.name)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    bind(item.optional_vars, None)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            unknown.add(node.name)
    return {name: texts for name, texts in values.items() if name not in unknown}


def _values(node, constants) -> list[str | None]:
    """The strings an argument can be: a constant, a string built from constants, or a variable that only
    ever holds constants; [None] when it is not known."""
    if isinstance(node, ast.Name) and node.id in constants:
        return constants[node.id]
    return [_folded(node)]


def _named_in(text: str, names: frozenset) -> str:
    """The part of a name-like string ('torch.softmax', '_installed.__wrapped__', 'autograder.rules') that a
    scan refuses: a forbidden name, a tampering name or the kit; '' if none. Prose (with spaces) is not read."""
    if not _NAMEISH.fullmatch(text):
        return ""
    if _KIT.search(text):
        return text
    for part in text.split("."):
        if part in names or part in _TAMPERING_ATTRS:
            return part
    return ""


def _callee(node: ast.Call) -> str:
    func = node.func
    return (
        func.id
        if isinstance(func, ast.Name)
        else func.attr
        if isinstance(func, ast.Attribute)
        else ""
    )


# Findings that void the whole component, not only its by-hand point: a route to the guard's state or to the
# interpreter's insides, or code whose names cannot be read. No correct solution needs one (the reference, the
# bug catalog and honest variants are checked in tests/test_rules.py), and a student who uses one can have
# switched the rules off for the length of a call, so nothing the component ran is trusted.
_MILD_ATTRS = frozenset(
    {"modules", "__traceback__"}
)  # nn.Module.modules(), exception chaining: honest uses
_VOIDING_MODULES = frozenset(
    {"ctypes", "_ctypes", "gc", "inspect", "builtins", "autograder", "pickle", "_pickle", "marshal"}
    | {"copyreg", "dill"}
)
_VOIDING_CALLS = frozenset({"eval", "exec", "compile"})


def _voids(part: str) -> bool:
    """Does a name (an attribute, a string's part) reach the guard's state or the kit?"""
    return bool(_KIT.search(part)) or (part in _TAMPERING_ATTRS and part not in _MILD_ATTRS)


@dataclass(frozen=True)
class Finding:
    line: int
    what: str
    file: str = ""
    voids: bool = False  # tampering: the whole component earns nothing (core.require_behaviour)

    def __str__(self) -> str:
        return (_("{file}, line {line}: {what}") if self.file else _("line {line}: {what}")).format(
            file=self.file, line=self.line, what=self.what
        )


def scan_source(
    component: str,
    source: str,
    file: str = "",
    names: frozenset | None = None,
    voiding: bool = True,
) -> list[Finding]:
    """Static by-hand check: forbidden library names and the tricks that hide them or tamper with the rules.

    `names`: the library names refused (the component's, by default); a helper module that nothing the
    component loads names is scanned with none (`frozenset()`) and `voiding=False`: only for tampering, which
    costs the by-hand point (it cannot run in the component's process: nothing loads it)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []  # the import itself reports the syntax error
    names = STATIC[component] if names is None else names
    found: list[Finding] = []

    def add(node, what, voids=False):
        found.append(Finding(node.lineno, what, file, voids and voiding))

    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    constants = _constant_bindings(tree)

    def attribute(node, name):
        if name in names:
            add(
                node,
                _("uses {name}, a library function this exercise does by hand").format(
                    name=f".{name}"
                ),
            )
        elif name in _TAMPERING_ATTRS:
            on_sys = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            on_sys = on_sys and node.value.id == "sys"
            add(
                node,
                _("uses {name}, which reaches into the checker or torch's dispatcher").format(
                    name=f".{name}"
                ),
                _voids(name) or on_sys,  # sys.modules: every module, the kit's among them
            )

    def module(node, path):
        parts = path.split(".")
        if parts[0] in _HIDING_MODULES:
            add(
                node,
                _("imports {name}, which this kit does not allow").format(name=path),
                parts[0] in _VOIDING_MODULES,
            )
        elif set(parts) & _TAMPERING_ATTRS:
            add(
                node,
                _("imports {name}, which reaches into the checker or torch's dispatcher").format(
                    name=path
                ),
                any(_voids(part) for part in parts),
            )
        elif set(parts) & names:
            add(
                node,
                _("uses {name}, a library function this exercise does by hand").format(name=path),
            )

    def string(node, text):
        hit = _named_in(text, names)
        if hit:
            add(node, _("names {text} in a string").format(text=repr(text)), _voids(hit))

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            attribute(node, node.attr)
            if (
                node.attr == "compile"
                and isinstance(node.value, ast.Name)
                and node.value.id == "torch"
            ):
                add(node, _("uses torch.compile, which generates its own kernels"))
        elif isinstance(node, ast.MatchClass):  # case FrameType(f_back=...): attributes by pattern
            for name in node.kwd_attrs:
                attribute(node, name)
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "__dict__"
            and _folded(node.slice) is None
        ):
            add(node, _("looks up a computed name in a __dict__, which can hide a forbidden call"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            module(node, node.module or "")
            for alias in node.names:
                if alias.name in names or alias.name in _TAMPERING_ATTRS:
                    add(
                        node,
                        _("imports {name} from {module}").format(
                            name=alias.name, module=node.module
                        ),
                        _voids(alias.name),
                    )
                elif alias.name in _NAME_TAKING | _HIDING_CALLS and node.module != "operator":
                    add(
                        node,
                        _("imports {name} from {module}").format(
                            name=alias.name, module=node.module
                        ),
                    )
        elif isinstance(node, ast.Import):
            for alias in node.names:
                module(node, alias.name)
        elif (
            isinstance(node, ast.Call)
            and _callee(node) in _HIDING_CALLS
            and isinstance(node.func, ast.Name)
        ):
            add(
                node,
                _("calls {name}(...) with a computed name, which can hide a forbidden call").format(
                    name=_callee(node)
                ),
                _callee(node) in _VOIDING_CALLS,
            )
        elif isinstance(node, ast.Call) and _callee(node) in _NAME_TAKING:
            # the name argument: getattr(obj, NAME), attrgetter(NAME, ...), import_module(NAME)...
            takes_object = _callee(node) in ("getattr", "setattr", "delattr", "getattr_static")
            args = node.args[1:2] if takes_object else node.args
            if _callee(node) == "__getattribute__":
                args = node.args[-1:]
            texts = [t for a in args for t in _values(a, constants)]
            if (not args or None in texts) and _callee(node) not in ("setattr", "delattr"):
                add(
                    node,
                    _(
                        "calls {name}(...) with a computed name, which can hide a forbidden call"
                    ).format(name=_callee(node)),
                    True,
                )
            for text in texts:
                if text:
                    string(node, text)
        elif (
            isinstance(node, ast.Name)
            and node.id in _NAME_TAKING | _HIDING_CALLS
            and id(node) not in called
        ):  # getattr passed along: functools.reduce(getattr, ['f_back', ...], frame)
            add(
                node,
                _("passes {name} along as a value, which can hide a forbidden call").format(
                    name=node.id
                ),
                True,
            )
        if isinstance(node, (ast.Constant, ast.BinOp, ast.JoinedStr, ast.Call)):
            text = _folded(node)  # a string, written whole or built from constants
            if text:
                string(node, text)
    return sorted(set(found), key=lambda f: (f.file, f.line, f.what))


def named_helpers(source: str, modules) -> list[str]:
    """The submission's modules a file names in a string ('.switch', 'pkg.switch', 'switch.py'): what
    importlib, pkgutil or runpy could load with a constant name."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    modules, found = set(modules), []
    for node in ast.walk(tree):
        text = _folded(node) if isinstance(node, (ast.Constant, ast.BinOp, ast.JoinedStr)) else None
        if text:
            for part in re.split(r"[./\\]", text):
                if part in modules:
                    found.append(part)
    return list(dict.fromkeys(found))


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


def scan_submission(component: str, read, modules=()) -> list[Finding]:
    """scan_source over the component's file and every helper module of the submission it loads, directly or
    through other helpers (an import statement, or a string naming the module: importlib, pkgutil, runpy), under
    the component's rules; then every other helper module of the submission (a .py file that is not a
    component's), which nothing the component loads names, for tampering. `read(name)` is a module's text, or
    None if the submission has no such file; `modules` names the submission's modules. Other components' files
    are not followed: their own check covers them, so one mistake costs one point."""
    source = read(component)
    if source is None:
        return []
    found = scan_source(component, source)
    seen, todo = {component}, imported_helpers(source) + named_helpers(source, modules)
    while todo:
        name = todo.pop(0)
        if name in seen or name in NAMES:
            continue
        seen.add(name)
        text = read(name)
        if text is None:  # a library (torch, numpy...), not a file of the submission
            continue
        found += scan_source(component, text, f"{name}.py")
        todo += imported_helpers(text) + named_helpers(text, modules)
    for name in sorted(set(modules) - seen - set(NAMES)):
        text = read(name)
        if text is not None:  # loaded by nothing the component loads: read for tampering
            found += scan_source(component, text, f"{name}.py", names=frozenset(), voiding=False)
    return found
