"""Does any function of a checker compute an exercise's result from its inputs? (issue 18; tests/test_bundle_answers.py)

    python bundle_probe.py KIT PACKAGE [OUT.json]

Run with the folder whose `autograder/` is the checker under probe as the working directory (the student bundle, or
the kit itself). Every function and class of the modules under PACKAGE (e.g. `autograder`, or
`autograder.properties.models` in the kit) whose signature fits an exercise function (its parameters bound by name
from the exercise's inputs and the context a checker would know: the weights `state`, `heads`, `d_model`, `model`,
..., or its inputs by position) is called on the exercise's inputs, under the by-hand rules of the exercise's
component. It is an answer when it returns the reference's result; one that needs the library call the component
forbids (the rules refuse it) is not. Nothing here knows the checker's function names: it keeps working as the
checker changes.

Prints a JSON object: {"leaks": [[target, function], ...], "fitted": [[target, function, verdict], ...]}.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import sys
from types import SimpleNamespace

sys.path.insert(0, os.getcwd())  # the checker under probe, ahead of any installed kit

import numpy as np
import torch

KIT = sys.argv[1]
PACKAGE = sys.argv[2]
sys.path.append(KIT)  # solutions/, the reference: after the checker under probe

ALIASES = {
    "q": "query",
    "k": "key",
    "v": "value",
    "ys": "tgt",
    "inputs": "x",
    "h": "heads",
    "num_heads": "heads",
    "d": "d_model",
    "n": "num_layers",
    "sublayer": "sublayer_output",
    "s": "sublayer_output",
    "target": "target",
    "tokens": "tokens",
}


# Context records the checker builds from an exercise's own inputs (greedy decoding's settings: max_len, bos_id,
# eos_id, src_mask): a function that takes one takes the exercise's inputs.
CARRIES_INPUTS = {"decoding"}


def reference(name):
    return importlib.import_module(f"solutions.{name}")


def randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def seeded(module, seed):
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, dtype=torch.float64) * 0.5)
    return module.double().eval()


def targets():
    """(component, exercise, inputs (ordered), context, the reference's result)."""
    out = []
    x34 = randn(2, 3, 4, seed=1)
    q, k, v = randn(2, 3, 4, seed=2), randn(2, 5, 4, seed=3), randn(2, 5, 4, seed=4)
    mask = torch.ones(2, 3, 5, dtype=torch.bool)
    mask[0, :, 3:] = False
    an = reference("attention_numpy")
    npx, npq, npk, npv = (t.numpy() for t in (x34, q, k, v))
    out.append(("attention_numpy", "softmax", {"x": npx}, {"axis": -1}, an.softmax(npx)))
    out.append(
        (
            "attention_numpy",
            "scaled_dot_product_attention",
            {"query": npq, "key": npk, "value": npv, "mask": mask.numpy()},
            {},
            an.scaled_dot_product_attention(npq, npk, npv, mask.numpy()),
        )
    )
    out.append(("attention_numpy", "layer_norm", {"x": npx}, {"eps": 1e-5}, an.layer_norm(npx)))
    at = reference("attention")
    out.append(("attention", "softmax", {"x": x34}, {"dim": -1}, at.softmax(x34)))
    out.append(
        (
            "attention",
            "scaled_dot_product_attention",
            {"query": q, "key": k, "value": v, "mask": mask},
            {},
            at.scaled_dot_product_attention(q, k, v, mask),
        )
    )
    d, h, d_ff, n = 4, 2, 8, 2
    mh = seeded(reference("multi_head").MultiHeadAttention(d, h), 5)
    m4 = mask[:, None]
    out.append(
        (
            "multi_head",
            "MultiHeadAttention.forward",
            {"query": q, "key": k, "value": v, "mask": m4},
            {"state": dict(mh.state_dict()), "model": mh, "mha": mh},
            mh(q, k, v, m4),
        )
    )
    an_ = reference("add_norm")
    ln = seeded(an_.LayerNorm(d), 6)
    out.append(
        ("add_norm", "LayerNorm.forward", {"x": x34}, {"state": dict(ln.state_dict())}, ln(x34))
    )
    weight, bias = ln.weight.detach(), ln.bias.detach()
    out[-1][3].update(weight=weight, bias=bias, eps=1e-5)
    s = randn(2, 3, 4, seed=7)
    addn = seeded(an_.AddAndNorm(d), 8)
    out.append(
        (
            "add_norm",
            "AddAndNorm.forward",
            {"x": x34, "sublayer_output": s},
            {"state": dict(addn.state_dict())},
            addn(x34, s),
        )
    )
    pad = torch.ones(2, 1, 1, 3, dtype=torch.bool)
    pad[1, ..., 2] = False
    en = reference("encoder")
    for cls, extra in (("EncoderLayer", ()), ("Encoder", (n,))):
        mod = seeded(getattr(en, cls)(*extra, d, h, d_ff), 9)
        out.append(
            (
                "encoder",
                f"{cls}.forward",
                {"x": x34, "mask": pad},
                {"state": dict(mod.state_dict()), "model": mod},
                mod(x34, pad),
            )
        )
    de = reference("decoder")
    memory = randn(2, 5, 4, seed=10)
    causal = torch.ones(3, 3, dtype=torch.bool).tril()
    mem_mask = torch.ones(2, 1, 1, 5, dtype=torch.bool)
    mem_mask[0, ..., 4] = False
    for cls, extra in (("DecoderLayer", ()), ("Decoder", (n,))):
        mod = seeded(getattr(de, cls)(*extra, d, h, d_ff), 11)
        out.append(
            (
                "decoder",
                f"{cls}.forward",
                {"x": x34, "memory": memory, "target_mask": causal, "memory_mask": mem_mask},
                {"state": dict(mod.state_dict()), "model": mod},
                mod(x34, memory, causal, mem_mask),
            )
        )
    tr = reference("transformer")
    model = seeded(tr.Transformer(6, 7, d, h, n, d_ff, max_len=32), 12)
    model.positional_encoding.pe.copy_(reference("positional_encoding").sinusoidal_encoding(32, d))
    src = torch.tensor([[1, 2, 3, 4], [2, 3, 1, 0]])
    src_mask = (src != 0)[:, None, None, :]
    tgt = torch.tensor([[1, 3, 4], [1, 2, 5]])
    sizes = dict(num_layers=n, d_model=d, num_heads=h, d_ff=d_ff)
    # The checker's cases carry their model's sizes twice: as fields and as `config` (TransformerConfig).
    config = SimpleNamespace(src_vocab=6, tgt_vocab=7, max_len=32, seed=12, **sizes)
    case = SimpleNamespace(
        src=src, tgt=tgt, src_mask=src_mask, dtype=torch.float64, config=config, **sizes
    )
    ctx = {"state": dict(model.state_dict()), "model": model, "case": case}
    out.append(
        (
            "transformer",
            "Transformer.forward",
            {"src": src, "tgt": tgt, "src_mask": src_mask, "target_mask": causal},
            ctx,
            model(src, tgt, src_mask, causal),
        )
    )
    dec = {"src": src, "max_len": 6, "bos_id": 1, "eos_id": 2, "src_mask": src_mask}
    settings = {k: dec[k] for k in ("max_len", "bos_id", "eos_id", "src_mask")}
    dctx = {**ctx, "decoding": SimpleNamespace(**settings)}
    out.append(("transformer", "greedy_decode", {"model": model, **dec}, dctx, None))
    out[-1] = (*out[-1][:4], tr.greedy_decode(model, **dec))
    kv = reference("kv_cache")
    out.append(
        (
            "kv_cache",
            "cached_greedy_decode",
            {"model": model, **dec},
            dctx,
            kv.cached_greedy_decode(model, **dec),
        )
    )
    keys, values = kv.split_heads(k, h), kv.split_heads(v, h)
    out.append(
        (
            "kv_cache",
            "attend",
            {"mha": mh, "query": q, "keys": keys, "values": values, "mask": m4},
            {"state": dict(mh.state_dict()), "heads": h},
            kv.attend(mh, q, keys, values, m4),
        )
    )
    bs = reference("beam_search")
    beam = {**dec, "beam_size": 2, "length_penalty": 0.6}
    out.append(
        ("beam_search", "beam_search", {"model": model, **beam}, ctx, bs.beam_search(model, **beam))
    )
    trn = reference("training")
    logits = randn(2, 3, 7, seed=13)
    target = torch.tensor([[1, 3, 0], [4, 0, 0]])
    loss = {"logits": logits, "target": target, "smoothing": 0.1, "pad_id": 0}
    out.append(
        (
            "training",
            "label_smoothed_cross_entropy",
            loss,
            {},
            trn.label_smoothed_cross_entropy(**loss),
        )
    )
    tf = {"model": model, "src": src, "tgt": tgt, "bos_id": 1, "pad_id": 0, "smoothing": 0.1}
    out.append(("training", "teacher_forcing_loss", tf, ctx, trn.teacher_forcing_loss(**tf)))
    shared = {"heads": h, "d_model": d, "d_ff": d_ff, "num_layers": n, "prefix": ""}
    return [(c, e, i, {**shared, **ctx_}, r) for c, e, i, ctx_, r in out]


def tensors(value):
    """The tensors (or arrays) in a result: itself, or a tuple's items."""
    items = value if isinstance(value, (tuple, list)) else (value,)
    return [
        torch.as_tensor(x).detach().double() if isinstance(x, np.ndarray) else x.detach().double()
        for x in items
        if isinstance(x, (torch.Tensor, np.ndarray)) and getattr(x, "dtype", None) is not None
    ]


def same(got, want) -> bool:
    for a in tensors(got):
        for b in tensors(want):
            if a.shape == b.shape and a.numel() and torch.allclose(a, b, rtol=1e-6, atol=1e-8):
                return True
    return False


def bindings(fn, inputs, context):
    """The ways to call fn on these inputs: by name (aliases allowed), and by position when the required
    parameters are exactly the inputs' count."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    params = [
        p
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    required = [p for p in params if p.default is p.empty]
    pool = {**context, **inputs}
    out = []
    named, missing = {}, False
    for p in params:
        key = p.name if p.name in pool else ALIASES.get(p.name)
        if key in pool:
            named[p.name] = pool[key]
        elif p.default is p.empty:
            missing = True
    # it takes at least one of the exercise's own inputs, not only the context
    takes_inputs = any(
        (p.name if p.name in inputs else ALIASES.get(p.name)) in inputs
        or (p.name in CARRIES_INPUTS and p.name in context)
        for p in params
    )
    if not missing and takes_inputs:
        out.append(((), named))
    if len(required) == len(inputs) and all(p.kind != p.KEYWORD_ONLY for p in required):
        out.append((tuple(inputs.values()), {}))
    return out


def candidates(package):
    """(qualified name, callable) of every function and class method defined in the package's modules."""
    root = importlib.import_module(package)
    names = [package]
    if hasattr(root, "__path__"):
        names += [
            m.name
            for m in pkgutil.walk_packages(root.__path__, package + ".")
            if not m.name.endswith("__main__")  # importing it runs the command line
        ]
    seen = set()
    for name in names:
        try:
            module = importlib.import_module(name)
        except Exception:  # noqa: BLE001 (a module that does not import here offers nothing)
            continue
        for attr, obj in vars(module).items():
            if getattr(obj, "__module__", None) != module.__name__ or id(obj) in seen:
                continue
            seen.add(id(obj))
            if inspect.isfunction(obj):
                yield f"{name}.{attr}", obj
            elif inspect.isclass(obj):
                yield f"{name}.{attr}", obj


# The library functions a component forbids, replaced while a candidate runs by what a student of that component
# already has by hand (softmax and attention from attention.py, LayerNorm from add_norm.py): a candidate that is
# by-hand multi-head attention around torch.softmax is an answer all the same. The owners keep the library's.
def _layer_norm(x, shape, weight=None, bias=None, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    y = (x - mean) / ((x - mean).pow(2).mean(-1, keepdim=True) + eps).sqrt()
    return y if weight is None else y * weight + bias


def ingredients(component):
    import torch.nn.functional as F

    at = reference("attention")
    soft = {
        (torch, "softmax"): lambda x, dim=-1, **_: at.softmax(x, dim),
        (F, "softmax"): lambda x, dim=-1, **_: at.softmax(x, dim),
        (torch.Tensor, "softmax"): lambda x, dim=-1, **_: at.softmax(x, dim),
        (torch, "log_softmax"): lambda x, dim=-1, **_: at.softmax(x, dim).log(),
        (F, "log_softmax"): lambda x, dim=-1, **_: at.softmax(x, dim).log(),
        (torch.Tensor, "log_softmax"): lambda x, dim=-1, **_: at.softmax(x, dim).log(),
        (F, "scaled_dot_product_attention"): lambda q, k, v, attn_mask=None, **_: (
            at.scaled_dot_product_attention(q, k, v, attn_mask)[0]
        ),
    }
    norm = {(F, "layer_norm"): _layer_norm}
    patches = {}
    if component not in ("attention", "attention_numpy"):
        patches.update(soft)
    if component not in ("add_norm", "attention_numpy"):
        patches.update(norm)
    return patches


def call(component, fn, args, kwargs, model_given):
    """fn(*args, **kwargs) under the component's rules, its forbidden ingredients by hand. model_given: the
    exercise runs a model it is given (decoding, the loss of a model), whose insides are not the exercise: a
    candidate's own model (torch's layers) stands for the student's, so no rule applies."""
    from autograder import rules

    if model_given:
        return fn(*args, **kwargs)
    patches = ingredients(component)
    saved = {key: getattr(*key) for key in patches}
    try:
        for (owner, name), value in patches.items():
            setattr(owner, name, value)
        with rules.guard(component):
            return fn(*args, **kwargs)
    finally:
        for (owner, name), value in saved.items():
            setattr(owner, name, value)


# What a model runs inside (its layers): where an exercise is given the model (decoding, the loss of a model), a
# candidate's own model (torch's layers) stands for the student's, so these names are no evidence either way.
MODEL_INSIDES = ("attention", "norm", "transformer", "softmax")


def refused_names(component, model_given):
    """The library names the static scan refuses: the component's; with a model given, less MODEL_INSIDES (what
    remains, e.g. training's library losses, is the exercise's own and refused in the student's file)."""
    from autograder.components import COMPONENTS
    from autograder.rules import families

    if not model_given:
        return None  # the component's, rules.STATIC
    spec = next(c for c in COMPONENTS if c.name == component)
    return frozenset().union(
        *(
            families.FORBIDDEN_NAMES[s] | families._DERIVED.get(s, frozenset())
            for s in spec.forbidden_names
            if s not in MODEL_INSIDES
        )
    )


def names_forbidden(component, fn, seen=None, model_given=False) -> bool:
    """Whether fn's source, or that of a function or class of the checker it refers to by name, names a library
    function the component forbids (the rules' static scan), other than the ingredients a student of the
    component has by hand (and, with a model given, what the model runs inside: MODEL_INSIDES): copied into the
    student's file, it is refused."""
    import ast
    import textwrap

    from autograder import rules

    seen = set() if seen is None else seen
    target = getattr(fn, "__func__", fn)
    if id(target) in seen:
        return False
    seen.add(id(target))
    try:
        source = textwrap.dedent(inspect.getsource(target))
    except (OSError, TypeError):
        return False
    excused = {name for _owner, name in ingredients(component)}  # a student has these by hand
    if any(
        not any(f".{name}," in finding.what for name in excused)
        for finding in rules.scan_source(
            component, source, names=refused_names(component, model_given)
        )
    ):
        return True
    scope = getattr(target, "__globals__", None) or vars(sys.modules.get(target.__module__, sys))
    for node in ast.walk(ast.parse(source)):
        name = node.id if isinstance(node, ast.Name) else None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner = scope.get(node.value.id)
            obj = getattr(owner, node.attr, None) if owner is not None else None
        else:
            obj = scope.get(name) if name else None
        if (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__.startswith(
            PACKAGE.split(".")[0]
        ):
            if names_forbidden(component, obj, seen, model_given):
                return True
    return False


def main():
    from autograder import rules

    rules.install()
    leaks, fitted = [], []
    found = list(candidates(PACKAGE))
    for component, exercise, inputs, context, want in targets():
        for qualname, obj in found:
            callables = [(qualname, obj)]
            if inspect.isclass(obj):  # an instance built from the context, then each of its methods
                built = []
                for args, kwargs in (
                    bindings(obj, {"state": context["state"]}, context)
                    if "state" in context
                    else []
                ):
                    try:
                        built.append(obj(*args, **kwargs))
                    except Exception:  # noqa: BLE001 (not built from this context)
                        pass
                callables = [
                    (f"{qualname}.{m}", getattr(b, m))
                    for b in built
                    for m in dir(b)
                    if not m.startswith("_") and inspect.ismethod(getattr(b, m, None))
                ]
            for name, fn in callables:
                for args, kwargs in bindings(fn, inputs, context):
                    try:
                        got = call(component, fn, args, kwargs, "model" in inputs)
                    except rules.ForbiddenCall:
                        fitted.append([f"{component}.{exercise}", name, "forbidden library call"])
                        continue
                    except BaseException as error:  # noqa: BLE001 (a Failure, a TypeError...)
                        fitted.append([f"{component}.{exercise}", name, type(error).__name__])
                        continue
                    verdict = "not the answer"
                    if same(got, want):
                        verdict = (
                            "names a forbidden library function"
                            if names_forbidden(component, fn, model_given="model" in inputs)
                            else "the answer"
                        )
                    fitted.append([f"{component}.{exercise}", name, verdict])
                    if verdict == "the answer":
                        leaks.append([f"{component}.{exercise}", name])
    text = json.dumps({"leaks": leaks, "fitted": fitted}, indent=1)
    if len(sys.argv) > 3:
        with open(sys.argv[3], "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
