"""The by-hand rules at run time: the library's own kernels refuse.

Every forbidden operator family (every softmax, log-softmax and logsumexp; every layer/group/batch/instance/RMS
normalisation; every fused attention; sparse, nested, quantized and backward variants included) is found by name
in torch's operator registry, and each of its kernels (CPU, sparse, nested, mkldnn, quantized, composite...) is
shadowed by a Python kernel registered with torch.library. While a component that forbids the family is under
test, that kernel raises ForbiddenCall; otherwise it steps aside (unregisters itself and runs the original)
until a guard of a component that forbids it is entered or resumed, which registers it again (the checking
side's calls outside any guard cost nothing after the first). Any route to the operator ends in one of its
kernels (torch.softmax, getattr with a computed name, torch.ops.aten._softmax, .redispatch, a disabled or popped
dispatch mode, an excluded dispatch key, another thread), so no spelling slips through, and operators outside
the families pay nothing. Which components refuse an operator is a constant of its kernel's code (a frozenset
the compiler folds), computed once before any student code is imported; `install()` returns the guard that the
Executor keeps. Library functions that compute a family in Python (SciPy's softmax, torch.distributions'
kl_divergence and entropy...) are replaced by refusals for the length of a call.

After every call the guard also checks that torch's dispatch state (the thread's included/excluded dispatch
keys, the dispatch mode stack) is what it was before, and that its own kernels are still registered (or set
aside by an allowed call, never one the component forbids): a call that changed either fails as forbidden. A
forbidden call the student catches still fails the call. An audit hook (which cannot be removed) refuses, during
a call, the routes to the guard's state (gc's walkers, ctypes, tracing, generator frames, replacing code
objects) and the import of torch's compilers (torch.compile generates its own softmax kernel). `probe()` lets
the checking side verify that the guard still refuses (a Probe operation).
"""

from __future__ import annotations

import contextlib
import operator
import sys
from types import MappingProxyType

from ..components import COMPONENTS
from ..i18n import _
from .families import FAMILY_TEXT, family_ops

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
def _once():
    """install(), its guard kept in a closure rather than a module global: the Executor keeps the guard it got
    before importing students, and no module attribute names it (issue 32: the fourth wave's attacks found the
    guard's state through `runtime_guard._installed`; the scan refuses the closures and dunders that reach it)."""
    made = []

    def install():
        """Shadow the forbidden kernels and add the audit hook, once per process; return the guard factory."""
        if not made:
            made.append(_make_guard())
        return made[0]

    return install


install = _once()


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


# long: the guard's closures share its state (the modes, the refusals) and are installed together
def _make_guard():
    import warnings

    import torch
    from torch._C import _dispatch_has_kernel_for_dispatch_key

    ops = family_ops()
    family_of = {op: family for family, names in ops.items() for op in names}
    # copied now, before any student code runs (examples/hostile/clear_guard_config)
    runtime = dict(RUNTIME)
    # Reported by forbidden_ops(); the kernels below carry their own constants and never read it.
    forbidden = MappingProxyType(
        {c: frozenset(op for f in fams for op in ops[f]) for c, fams in runtime.items()}
    )
    # (component, family) pairs whose Python equivalents are refused: a frozenset constant in code.
    namespace = {"module_of": operator.attrgetter("m")}  # a Library's module: None once destroyed
    pairs = {f"{c}/{f}" for c, fams in runtime.items() for f in fams if f in PYTHON_EQUIVALENTS}
    exec(  # noqa: S102 - the kit's own constants, made code so that no Python object holds them
        f"def python_refused(component, family):\n"
        f"    return component + '/' + family in {_frozen_members(pairs)}\n",
        namespace,
    )
    python_refused = namespace["python_refused"]
    # rebinding the module's name later changes nothing
    equivalents = tuple(PYTHON_EQUIVALENTS.items())
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
        # "overriding a previously registered kernel": that is the point
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for key in keys_of[op]:
                library.impl(name, kernels[op], key)
        libraries[op] = library

    # Allowed operators that stepped aside: unregistered, so that their next calls cost nothing (a training step
    # calls log_softmax and its backward: stepping aside and back at every call, 0.3 ms each against 6 us for
    # the call, was a tenth of the copy task's time). Each stays aside until a guard of a component that forbids
    # it is entered or resumed (`step_back`). Outside any guard the checking side's calls used to step aside for
    # one call and register again right after: 6 208 of the full suite's 6 667 registrations, 0.2 s of CPU; now
    # its consecutive calls, and the student calls of components that allow the operator, register nothing (1 716
    # registrations in all, docs/speed.md, "the third pass").
    # Student code only runs inside a guard, whose entry registers what it forbids; the end of each call checks
    # that no operator the component forbids was left aside (`_leave`).
    aside: set[str] = set()

    # An operator is registered before it leaves `aside`, and joins `aside` before its library is destroyed: an
    # interruption in between (the CPU timer's signal, during a call) leaves it in both, never in neither.
    def step_back(component):
        for op in forbidden_of(component, aside):
            register(op)
            aside.discard(op)

    def refuser(op, family):
        def refuse():
            what = _what(op, family)
            if state[1] is None:
                state[1] = what
            raise ForbiddenCall(what, state[0])

        return refuse

    def allower(op, overload):
        def allowed(args, kwargs):
            aside.add(op)  # allowed here: step aside
            library = libraries.pop(op, None)
            if library is not None:
                library._destroy()
            return overload(*args, **kwargs)

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
    # Which kernels must stay registered, and which (component, operator) pairs refuse: constants of intact()'s
    # and forbidden_of()'s code, not Python containers (a closure's frozenset can be swapped for an empty one
    # through its cell). A kernel may be missing only if it stepped aside, and never one the component forbids.
    refused_pairs = {f"{c}|{op}" for c, ops in forbidden.items() for op in ops & shadowed}
    exec(  # noqa: S102 - the kit's own constants
        "def forbidden_of(component, ops):\n"
        "    if component is None:\n"
        "        return []\n"
        f"    return [op for op in ops if component + '|' + op in {_frozen_members(refused_pairs)}]\n"
        "\n"
        "def intact(libraries, aside):\n"
        f"    return libraries.keys() | aside >= {_frozen_members(shadowed)} and all(\n"
        "        map(module_of, libraries.values())\n"
        "    )\n",
        namespace,
    )
    forbidden_of, intact_code = namespace["forbidden_of"], namespace["intact"]

    def dispatch_state():
        # the key sets' bits (raw_repr) rather than their reprs: 0.55 us a state against 1.7, twice per call
        return (
            torch._C._dispatch_tls_local_include_set().raw_repr(),
            torch._C._dispatch_tls_local_exclude_set().raw_repr(),
            torch._C._len_torch_dispatch_stack(),
            torch._C._len_torch_function_stack(),
        )

    def intact() -> bool:
        return intact_code(libraries, aside)

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
        state[:] = [component, None]
        try:
            # What an earlier call (the checking side's, an outer guard's) set aside may be forbidden here. After
            # the state is set: from then on a call of another thread can no longer set aside what it forbids.
            step_back(component)
            yield
        except BaseException as e:
            reached = _leave(component, outer, patched)
            # caught by the student, then something else failed
            if reached and not isinstance(e, ForbiddenCall):
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
        # Checked before the state is restored (once it is, an allowed call of another thread may step aside): an
        # operator this component forbids, aside and unregistered, was set aside only if the call flipped the
        # state around an allowed call of it (examples/hostile/frame_flip), which the kernel decided from the state.
        if [op for op in forbidden_of(component, aside) if op not in libraries]:
            reached = reached or _("tampering with the by-hand guard")
        kept = intact()
        state[:] = outer
        for obj, name, old in reversed(patched):
            setattr(obj, name, old)
        step_back(outer[0])  # back in an outer guard: what this one allowed may be forbidden there
        if not kept:
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
