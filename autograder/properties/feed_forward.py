"""Properties of feed_forward.FeedForward (visible to students).

Expected values: linear_2(relu(linear_1(x))) with the same weights, computed with torch in float64 here.
"""

from __future__ import annotations

import enum
import itertools

import torch
import torch.nn.functional as F
from hypothesis import example, given
from hypothesis import strategies as st

from ..i18n import N_, _
from ..student_code import Call, cotangent
from ..suite.checks import (
    close,
    close_input_grad,
    diagnose,
    expect,
    fail,
    is_close,
    not_constant,
    tensor,
)
from ..suite.clauses import FeedForward
from ..suite.core import Kind, default_hint, prop
from ..suite.strategies import dtypes, ffn_state, randn, seeds, tensors

ERROR_HINT = N_(
    "check the layers: linear_1 = nn.Linear(d_model, d_ff), linear_2 = nn.Linear(d_ff, d_model), "
    "named exactly linear_1 and linear_2"
)
C = "feed_forward"
default_hint(C, ERROR_HINT)

ACTIVATIONS = {
    "relu": F.relu,
    "none": lambda z: z,
    "gelu": F.gelu,
    "gelu_tanh": lambda z: F.gelu(z, approximate="tanh"),
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "silu": F.silu,
    "leaky_relu": F.leaky_relu,
    "softplus": F.softplus,
    "relu6": F.relu6,
    "elu": F.elu,
}
ACTIVATION_HINTS = {
    "none": N_(
        "the activation is missing: apply ReLU between linear_1 and linear_2 (two linear layers in a "
        "row are just one linear map)"
    ),
    "gelu": N_("GELU instead of ReLU: this feed-forward uses relu (torch.relu / F.relu / .relu())"),
    "gelu_tanh": N_("GELU (tanh approximation) instead of ReLU: use relu"),
    "tanh": N_("tanh instead of ReLU: use relu"),
    "sigmoid": N_("sigmoid instead of ReLU: use relu"),
    "silu": N_("SiLU/swish instead of ReLU: use relu"),
    "leaky_relu": N_("leaky ReLU instead of ReLU: negative inputs must give exactly 0"),
    "softplus": N_("softplus instead of ReLU: use relu"),
    "relu6": N_("ReLU6 (clipped at 6) instead of ReLU: no upper clip"),
    "elu": N_("ELU instead of ReLU: negative inputs must give exactly 0"),
}


# ------------------------------------------------------------------------------------------- local helpers
def build_ffn(student, d, d_ff, seed, dtype, dropout=None, train=False, state=None):
    state = ffn_state("", d, d_ff, seed, dtype) if state is None else state
    kwargs = (
        {"d_model": d, "d_ff": d_ff}
        if dropout is None
        else {"d_model": d, "d_ff": d_ff, "dropout": dropout}
    )
    return student.build(C, "FeedForward", state=state, train=train, dtype=dtype, **kwargs), state


def feed_forward(student, h, x, what="FeedForward(x)", strict=False):
    """strict: the one property that owns the output's dtype and device."""
    return tensor(student.method(h, "forward", x), what, like=x, check_dtype=strict)


class ActivationAt(enum.Enum):
    """Where the activation goes: between the linear layers (right), or one of the usual wrong places."""

    MIDDLE = "linear_2(act(linear_1(x)))"
    FIRST = "linear_2(linear_1(act(x)))"
    LAST = "act(linear_2(linear_1(x)))"
    BOTH = "act(linear_2(act(linear_1(x))))"


def expected_feed_forward(x, state, activation="relu", at=ActivationAt.MIDDLE):
    """linear_2(relu(linear_1(x))) in float64, or with another of ACTIVATIONS, or the activation elsewhere."""
    s = {k: v.double() for k, v in state.items()}
    f = ACTIVATIONS[activation]
    lin1 = lambda z: F.linear(z, s["linear_1.weight"], s["linear_1.bias"])  # noqa: E731
    lin2 = lambda z: F.linear(z, s["linear_2.weight"], s["linear_2.bias"])  # noqa: E731
    x = x.double()
    if at is ActivationAt.FIRST:
        return lin2(lin1(f(x)))
    if at is ActivationAt.LAST:
        return f(lin2(lin1(x)))
    if at is ActivationAt.BOTH:
        return f(lin2(f(lin1(x))))
    return lin2(f(lin1(x)))


def ffn_hint(x, y, state, default: str) -> str:
    """Name the feed-forward mistake that explains y, if one does."""
    dt = y.dtype
    candidates = [
        (lambda a=a: is_close(y, expected_feed_forward(x, state, a), dt), _(ACTIVATION_HINTS[a]))
        for a in ACTIVATION_HINTS
    ]
    return diagnose(
        default,
        *candidates,
        (
            lambda: is_close(y, expected_feed_forward(x, state, at=ActivationAt.FIRST), dt),
            _("ReLU applied to the input, before linear_1: it goes between linear_1 and linear_2"),
        ),
        (
            lambda: is_close(y, expected_feed_forward(x, state, at=ActivationAt.LAST), dt),
            _(
                "ReLU applied after linear_2: it goes between linear_1 and linear_2, the output is not "
                "clipped"
            ),
        ),
        (
            lambda: is_close(y, expected_feed_forward(x, state, at=ActivationAt.BOTH), dt),
            _("an extra ReLU after linear_2: only one, between linear_1 and linear_2"),
        ),
    )


def check_ffn(student, h, state, x, what="FeedForward(x)", default=None, strict=False):
    y = feed_forward(student, h, x, what, strict)
    expected = expected_feed_forward(x, state)
    close(
        y,
        expected,
        what,
        lambda: ffn_hint(x, y, state, default or _("out = linear_2(dropout(relu(linear_1(x))))")),
        dtype=x.dtype,
    )
    return y


def check_dropout_on_the_hidden_layer(student, shape, d_ff, seed, dtype, p=0.5):
    """In training mode every position of FeedForward(x) is linear_2(pattern * relu(linear_1(x))) for one of the
    2^d_ff dropout patterns of the hidden layer: dropout of the input, of the output or of nothing matches
    none. Eval mode is checked first (its own mistake, its own hint)."""
    d = shape[-1]
    x = randn(shape, seed + 20, dtype)
    h_eval, state = build_ffn(student, d, d_ff, seed, dtype, dropout=p, train=False)
    check_ffn(
        student,
        h_eval,
        state,
        x,
        _("FeedForward(x) in eval mode"),
        _("get eval mode right first"),
    )
    h, state = build_ffn(student, d, d_ff, seed, dtype, dropout=p, train=True)
    y = feed_forward(student, h, x, _("FeedForward(x) in training mode"))
    s = {k: v.double() for k, v in state.items()}
    hidden = F.relu(F.linear(x.double(), s["linear_1.weight"], s["linear_1.bias"]))  # (..., d_ff)
    # (2^d_ff, d_ff): every way dropout can treat the hidden units of one position
    patterns = torch.tensor(
        list(itertools.product([0.0, 1 / (1 - p)], repeat=d_ff)), dtype=torch.float64
    )
    lead = (None,) * (len(shape) - 1)
    candidates = F.linear(
        hidden * patterns[(slice(None), *lead)], s["linear_2.weight"], s["linear_2.bias"]
    )
    atol = 1e-4 if dtype == torch.float32 else 1e-8
    matched = (candidates - y.double()).abs().amax(-1).amin(0) <= atol
    if is_close(y, expected_feed_forward(x, state), dtype):
        fail(
            _("in training mode with dropout=0.5 nothing was dropped"),
            _(
                "apply self.dropout (an nn.Dropout) to the hidden activations: "
                "linear_2(dropout(relu(linear_1(x))))"
            ),
        )
    if not matched.all():
        fail(
            _(
                "in training mode an output position is not linear_2(dropout(relu(linear_1(x)))) for "
                "any dropout pattern"
            ),
            _(
                "dropout goes on the hidden activations, after the ReLU and before linear_2: not on the "
                "input or the output"
            ),
        )


# ------------------------------------------------------------------------------------------------ properties
@prop(C, points=1, examples=2, kind=Kind.SHAPE, clauses=(FeedForward.PARAMETERS,))
@given(d=st.integers(1, 5), extra=st.integers(1, 4))
def feed_forward_parameters(student, d, extra):
    """FeedForward(d_model, d_ff) has linear_1 (d_model -> d_ff) and linear_2 (d_ff -> d_model), both nn.Linear."""
    d_ff = d + extra
    info = student.inspect(student.build(C, "FeedForward", d_model=d, d_ff=d_ff))
    state, types = info["state"], info["module_types"]
    expected = {
        "linear_1.weight": (d_ff, d),
        "linear_1.bias": (d_ff,),
        "linear_2.weight": (d, d_ff),
        "linear_2.bias": (d,),
    }
    for name in ("linear_1", "linear_2"):
        expect(
            types.get(name) == "Linear",
            _("FeedForward.{name} is {type}, expected nn.Linear").format(
                name=name, type=types.get(name, _("missing"))
            ),
            _("name the two layers exactly linear_1 and linear_2, each an nn.Linear with a bias"),
        )
    for name, shape in expected.items():
        expect(
            name in state,
            _("FeedForward has no {name} (it has {names})").format(
                name=name, names=", ".join(state)
            ),
            _("nn.Linear(in, out) with bias=True (the default)"),
        )
        got = tuple(state[name].shape)
        if got != shape:
            fail(
                _(
                    "{name} has shape {shape}, expected {expected} (d_model={d_model}, d_ff={d_ff})"
                ).format(name=name, shape=got, expected=shape, d_model=d, d_ff=d_ff),
                _(
                    "linear_1 maps d_model -> d_ff: nn.Linear(d_model, d_ff); linear_2 maps back: "
                    "nn.Linear(d_ff, d_model)"
                ),
            )


@prop(C, points=3, examples=5, clauses=(FeedForward.VALUE,))
@given(
    b=st.integers(1, 2),
    m=st.integers(1, 3),
    d=st.integers(2, 5),
    d_ff=st.integers(2, 8),
    seed=seeds(),
    dtype=dtypes(),
)
@example(b=1, m=2, d=3, d_ff=6, seed=0, dtype=torch.float64)
def feed_forward_equals_expected(student, b, m, d, d_ff, seed, dtype):
    """FeedForward(x) = linear_2(relu(linear_1(x))) with the same weights (float32 and float64)."""
    h, state = build_ffn(student, d, d_ff, seed, dtype)
    check_ffn(student, h, state, randn((b, m, d), seed + 20, dtype, 1.5))


@prop(C, points=2, examples=3, clauses=(FeedForward.VALUE,))
@given(x=st.integers(1, 6).flatmap(lambda n: tensors((1, n, 2), lo=-8.0, hi=8.0)), dtype=dtypes())
@example(x=torch.tensor([[[-2.0, 3.0], [-0.5, 0.5], [0.0, 7.5], [-8.0, 1.0]]]), dtype=torch.float64)
def feed_forward_uses_relu(student, x, dtype):
    """With identity weights and zero biases, FeedForward(x) = relu(x): the activation is exactly ReLU."""
    x = x.to(dtype)
    eye, zero = torch.eye(2, dtype=dtype), torch.zeros(2, dtype=dtype)
    state = {
        "linear_1.weight": eye,
        "linear_1.bias": zero,
        "linear_2.weight": eye,
        "linear_2.bias": zero,
    }
    h = build_ffn(student, 2, 2, 0, dtype, state=state)[0]
    y = feed_forward(student, h, x, _("FeedForward(x) with identity weights"))
    close(
        y,
        torch.relu(x),
        _("FeedForward(x) with identity weights (should be relu(x))"),
        lambda: ffn_hint(
            x, y, state, _("the activation between linear_1 and linear_2 is ReLU: max(0, z)")
        ),
        dtype=dtype,
    )


@prop(C, points=1, examples=2, clauses=(FeedForward.VALUE,))
@given(shape=st.sampled_from([(3,), (2, 3), (2, 2, 3), (2, 1, 2, 3)]), seed=seeds(), dtype=dtypes())
def feed_forward_any_leading_dims(student, shape, seed, dtype):
    """FeedForward works on (..., d_model): the output has the input's shape and dtype."""
    h, state = build_ffn(student, 3, 5, seed, dtype)
    check_ffn(
        student,
        h,
        state,
        randn(shape, seed + 20, dtype),
        _("FeedForward(x) for x of shape {shape}").format(shape=shape),
        _("apply the layers to the last dim only: nn.Linear already handles any leading dims"),
        strict=True,
    )


@prop(C, points=1, examples=2, clauses=(FeedForward.VALUE,))
@given(
    d=st.integers(2, 4),
    seed=seeds(),
    pos=st.tuples(st.integers(0, 1), st.integers(0, 2)),
    dtype=dtypes(),
)
def feed_forward_is_position_wise(student, d, seed, pos, dtype):
    """Changing the input at one position changes only that position's output."""
    h, state = build_ffn(student, d, 2 * d, seed, dtype)
    x = randn((2, 3, d), seed + 20, dtype)
    x2 = x.clone()
    x2[pos] = randn((d,), seed + 21, dtype, 3.0)
    y, y2 = feed_forward(student, h, x), feed_forward(student, h, x2)
    not_constant(y, expected_feed_forward(x, state), "FeedForward(x)", given=x)
    keep = torch.ones(2, 3, dtype=torch.bool)
    keep[pos] = False
    if not is_close(y2[keep], y[keep], dtype):
        fail(
            _("changing position {position} changed the output at other positions").format(
                position=pos
            ),
            _(
                "position-wise: the same MLP on each position separately; no reshape, transpose or "
                "reduction that mixes positions"
            ),
        )


@prop(C, points=1, examples=2, clauses=(FeedForward.DROPOUT,))
@given(d=st.integers(2, 4), seed=seeds(), dtype=dtypes())
def feed_forward_dropout_is_off_in_eval(student, d, seed, dtype):
    """In eval mode, FeedForward(d, d_ff, dropout=0.5) is deterministic: exactly linear_2(relu(linear_1(x)))."""
    h, state = build_ffn(student, d, 3 * d, seed, dtype, dropout=0.5, train=False)
    check_ffn(
        student,
        h,
        state,
        randn((2, 3, d), seed + 20, dtype),
        _("FeedForward(x) in eval mode with dropout=0.5"),
        _(
            "in eval mode dropout is the identity: use self.dropout = nn.Dropout(dropout), which follows "
            ".eval(), not F.dropout(..., training=True)"
        ),
    )


@prop(C, points=1, examples=2, clauses=(FeedForward.DROPOUT,))
@given(seed=seeds(), dtype=dtypes())
def feed_forward_dropout_on_the_hidden_layer_only(student, seed, dtype):
    """In training mode each position of FeedForward(x) is linear_2(dropout(relu(linear_1(x)))) for some dropout
    pattern of the hidden layer: not dropout of the input, nor after linear_2."""
    check_dropout_on_the_hidden_layer(student, (3, 2, 3), 4, seed, dtype)


@prop(C, points=1, examples=2, clauses=(FeedForward.GRADIENTS,))
@given(d=st.integers(2, 4), d_ff=st.integers(2, 6), seed=seeds(), dtype=dtypes())
def feed_forward_gradients_match_torch(student, d, d_ff, seed, dtype):
    """Gradients with respect to x and every weight equal torch's."""
    h, state = build_ffn(student, d, d_ff, seed, dtype)
    x = randn((2, 3, d), seed + 20, dtype)
    check_ffn(student, h, state, x)
    reply = student.run(Call(h, "forward", (x,), seed=seed, backward=True))
    xr = x.double().requires_grad_(True)
    params = {k: v.double().requires_grad_(True) for k, v in state.items()}
    out = F.linear(
        F.relu(F.linear(xr, params["linear_1.weight"], params["linear_1.bias"])),
        params["linear_2.weight"],
        params["linear_2.bias"],
    )
    (out * cotangent(out.shape, dtype, seed + 1).double()).sum().backward()
    hint = _("keep the computation in the autograd graph: no .detach(), .data or numpy round trips")
    rtol, atol = (1e-3, 1e-4) if dtype == torch.float32 else (1e-6, 1e-8)
    close_input_grad(reply, xr.grad, hint, rtol, atol)
    grads = reply.param_grads or {}
    for name, p in params.items():
        expect(
            grads.get(name) is not None,
            _("no gradient reached {name}").format(name=name),
            _("use both linear layers in forward"),
        )
        close(
            grads[name],
            p.grad,
            _("d loss / d {name}").format(name=name),
            hint,
            rtol=rtol,
            atol=atol,
        )
