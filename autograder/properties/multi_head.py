"""Properties of multi_head.MultiHeadAttention (visible to students).

The expected output is torch's nn.MultiheadAttention with the same weights copied in (expected_values.multi_head). Each
comparison is paired with a diagnosis: the module is recomputed on the checking side with one mistake at a time
(heads split or merged without a transpose, a strided head split, projections swapped, w_o missing, the mask
ignored...) and the hint names the mistake whose output matches the submission's.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from hypothesis import example, given
from hypothesis import strategies as st

from ..i18n import N_, _
from ..student_code import Call, StudentError
from ..suite import expected_values
from ..suite.checks import (
    close,
    diagnose,
    equal,
    expect,
    fail,
    is_close,
    not_constant,
    written_by_hand,
)
from ..suite.clauses import MultiHead
from ..suite.core import NO_HINT, Evidence, Kind, default_hint, prop
from ..suite.heads import (
    CLASS,
    C,
    build,
    cases,
    check_output,
    explain,
    fixed_case,
    forward,
    live_rows,
    mistake_models,
    stored_weights,
)
from ..suite.strategies import (
    MultiHeadInputs,
    dtypes,
    model_sizes,
    seeds,
)
from .models.multi_head import MHA_HINTS, MhaMistake

ERROR = N_(
    "a shape error? query is (batch, m_q, d_model), key and value (batch, m_k, d_model): each is projected "
    "and split into heads with its own length, (batch, h, m, d_k); the mask broadcasts against the "
    "(batch, h, m_q, m_k) scores unchanged"
)
default_hint(C, ERROR)


# ------------------------------------------------------------------------------------------------- properties
@prop(
    C,
    points=1,
    examples=1,
    error_hint=N_(
        "MultiHeadAttention(d_model, num_heads, dropout=0.0, bias=True) "
        "must build with these keyword arguments"
    ),
    kind=Kind.SHAPE,
    clauses=(MultiHead.PARAMETERS,),
)
def multi_head_parameters_are_named(student):
    """Parameters are w_q, w_k, w_v, w_o (nn.Linear(d_model, d_model)); bias=False leaves out their biases."""
    names = [f"{p}.{s}" for p in ("w_q", "w_k", "w_v", "w_o") for s in ("weight", "bias")]
    info = student.inspect(student.build(C, CLASS, d_model=8, num_heads=2))
    missing = [n for n in names if n not in info["params"]]
    expect(
        not missing,
        _("parameters {missing} not found; the module has {params}").format(
            missing=missing, params=info["params"]
        ),
        _(
            "name the four projections w_q, w_k, w_v, w_o: nn.Linear(d_model, d_model, bias=bias) each"
        ),
    )
    for n in names:
        shape = tuple(info["state"][n].shape)
        expected_shape = (8, 8) if n.endswith("weight") else (8,)
        expect(
            shape == expected_shape,
            _("{name} has shape {shape}, expected {expected} for d_model=8").format(
                name=n, shape=shape, expected=expected_shape
            ),
            _(
                "each projection maps d_model -> d_model (all heads at once): nn.Linear(d_model, d_model)"
            ),
        )
    info = student.inspect(student.build(C, CLASS, d_model=8, num_heads=2, bias=False))
    biases = [n for n in info["params"] if n.endswith("bias")]
    expect(
        not biases,
        _("built with bias=False, the module still has {biases}").format(biases=biases),
        _("pass bias=bias to every nn.Linear"),
    )


@prop(
    C,
    points=1,
    examples=3,
    error_hint=N_(
        "a shape error with m_q != m_k: reshape the keys and values with their own length "
        "(key.size(1)), the queries with m_q; the mask broadcasts against (batch, h, m_q, m_k)"
    ),
    kind=Kind.SHAPE,
    clauses=(MultiHead.WEIGHTS,),
)
@given(case=cases(min_heads=1, max_heads=3, mask="any"))
def multi_head_cross_attention_shape(student, case):
    """Cross-attention (m_q != m_k): output (batch, m_q, d_model), attention_weights (batch, h, m_q, m_k) stored
    detached, both in the query's dtype."""
    q, k, v, m = case.query, case.key, case.value, case.mask
    d, h, seed = case.d_model, case.num_heads, case.seed
    handle = build(student, d, h, seed, q.dtype)[0]
    w = forward(student, handle, q, k, v, m, read=True, strict=True)[1]
    stored_weights(w, (q.shape[0], h, q.shape[1], k.shape[1]), q.dtype, strict=True)


@prop(
    C,
    points=3,
    examples=4,
    clauses=(
        MultiHead.HEADS,
        MultiHead.PARAMETERS,
    ),
)
@given(case=cases())
@example(case=fixed_case(batch=2, m_q=3, m_k=4, d_model=6, num_heads=2, seed=11))
@example(
    case=fixed_case(batch=1, m_q=2, m_k=3, d_model=6, num_heads=3, seed=5, dtype=torch.float32)
)
def multi_head_equals_torch(student, case):
    """With the same weights, the output equals torch's nn.MultiheadAttention (no mask, >= 2 heads, m_q != m_k)."""
    q, k, v = case.query, case.key, case.value
    d, h, seed = case.d_model, case.num_heads, case.seed
    handle, state = build(student, d, h, seed, q.dtype)
    out = forward(student, handle, q, k, v)
    expected = expected_values.multi_head(state, d, h, q, k, v)[0]
    close(
        out,
        expected,
        _("output vs nn.MultiheadAttention"),
        lambda: or_positions_mixed(
            explain(
                out,
                state,
                h,
                q,
                k,
                v,
                None,
                _(
                    "check each step against the docstring: project, split into heads (batch, h, m, d_k), "
                    "attend, merge the heads back into (batch, m, d_model), w_o"
                ),
            ),
            student,
            handle,
            q,
        ),
    )


def or_positions_mixed(hint: str, student, handle, x) -> str:
    """`hint` where a mistake model named the cause; else, where the student's layer mixes positions (the
    bundle has no model of a split or merge without a transpose), that, tested directly."""
    if getattr(hint, "evidence", Evidence.NONE) > Evidence.NONE:
        return hint
    return diagnose(
        hint, (lambda: positions_mixed(student, handle, x), _(POSITIONS_MIXED), Evidence.DIRECT)
    )


POSITIONS_MIXED = N_(
    "with a mask that lets each position attend to itself only, your output at one position still changes "
    "when another position's input changes: the heads' split or merge mixes positions. A head is d_k "
    "features of every position: a reshape straight between (batch, m, d_model) and (batch, h, m, d_k) "
    "regroups numbers across positions; look at how your split and merge order the axes"
)


def positions_mixed(student, handle, x) -> bool:
    """Answer-free evidence: self-attention on x with an identity mask (each position sees itself only) is a
    function of each position alone; the student's output at the first positions changes with the last one's
    input."""
    m = x.shape[1]
    if m < 2:
        return False
    eye = torch.eye(m, dtype=torch.bool)
    changed = x.clone()
    changed[:, -1] = changed[:, -1] + 1.0
    before = forward(student, handle, x, x, x, eye)
    after = forward(student, handle, changed, changed, changed, eye)
    return not is_close(before[:, :-1], after[:, :-1])


@prop(
    C,
    points=2,
    examples=4,
    error_hint=N_(
        "a shape error with a mask: masks arrive as (m_q, m_k) or "
        "(batch, 1 or h, 1 or m_q, m_k) and broadcast against the "
        "(batch, h, m_q, m_k) scores as they are: no unsqueeze or view"
    ),
    clauses=(MultiHead.MASK,),
)
@given(case=cases(mask="any"))
@example(case=fixed_case(batch=2, m_q=3, m_k=4, d_model=4, num_heads=2, seed=3, mask="pad"))
@example(case=fixed_case(batch=2, m_q=3, m_k=2, d_model=6, num_heads=2, seed=8, mask="full"))
@example(case=fixed_case(batch=1, m_q=3, m_k=4, d_model=6, num_heads=3, seed=21, mask="2d"))
def multi_head_masks_equal_torch(student, case):
    """With a 2-D or 4-D mask the output equals nn.MultiheadAttention's (fully masked rows left out)."""
    q, k, v, m = case.query, case.key, case.value, case.mask
    d, h, seed = case.d_model, case.num_heads, case.seed
    handle, state = build(student, d, h, seed, q.dtype)
    out = forward(student, handle, q, k, v, m)
    expected = expected_values.multi_head(state, d, h, q, k, v, m)[0]
    keep = live_rows(expected)
    close(
        out[keep],
        expected[keep],
        _(
            "output with a {shape} mask vs nn.MultiheadAttention (rows that are not fully masked)"
        ).format(shape=tuple(m.shape)),
        lambda: explain(
            out,
            state,
            h,
            q,
            k,
            v,
            m,
            _(
                "the mask goes to every head unchanged: pass it to "
                "scaled_dot_product_attention, which broadcasts it against (batch, h, m_q, m_k)"
            ),
        ),
    )


@prop(
    C,
    points=2,
    examples=3,
    clauses=(
        MultiHead.WEIGHTS,
        MultiHead.HEADS,
    ),
)
@given(case=cases(mask="any"))
@example(case=fixed_case(batch=2, m_q=2, m_k=3, d_model=4, num_heads=2, seed=7, mask="full"))
def multi_head_attention_weights_equal_torch(student, case):
    """attention_weights after a forward equals torch's per-head weights (batch, h, m_q, m_k)."""
    q, k, v, m = case.query, case.key, case.value, case.mask
    d, h, seed = case.d_model, case.num_heads, case.seed
    handle, state = build(student, d, h, seed, q.dtype)
    out, w = forward(student, handle, q, k, v, m, read=True)
    w = stored_weights(w, (q.shape[0], h, q.shape[1], k.shape[1]), q.dtype)
    if w is None:  # no attribute: the shape property says so; the output still has to be right
        return check_output(
            out,
            state,
            h,
            q,
            k,
            v,
            m,
            _("output vs nn.MultiheadAttention"),
            _("project, split, attend, merge, w_o"),
        )
    expected = expected_values.multi_head(state, d, h, q, k, v, m)[1]
    keep = ~torch.isnan(expected).any(-1)
    close(
        w[keep],
        expected[keep],
        _("attention_weights vs nn.MultiheadAttention's per-head weights"),
        lambda: explain(
            w,
            state,
            h,
            q,
            k,
            v,
            m,
            _("store the softmax weights of every head, (batch, h, m_q, m_k), before dropout"),
            what="weights",
        ),
    )


@prop(C, points=1, examples=3, clauses=(MultiHead.HEADS,))
@given(case=cases(distinct_lengths=False), perm_seed=st.integers(0, 100))
@example(case=fixed_case(batch=2, m_q=3, m_k=3, d_model=4, num_heads=2, seed=13), perm_seed=1)
def multi_head_self_attention_is_permutation_equivariant(student, case, perm_seed):
    """Self-attention without a mask: permuting the positions permutes the output rows the same way."""
    x = case.query
    d, h, seed = case.d_model, case.num_heads, case.seed
    m = x.shape[1]
    perm = torch.randperm(m, generator=torch.Generator().manual_seed(perm_seed))
    if m > 1 and (perm == torch.arange(m)).all():
        perm = torch.roll(perm, 1)
    handle, state = build(student, d, h, seed, x.dtype)
    out = forward(student, handle, x, x, x)
    xp = x[:, perm]
    out_p = forward(student, handle, xp, xp, xp)

    # The graded side's mistake model (none in the student bundle: these mistakes mix positions).
    def with_mistake(mistake):
        return mistake_models is not None and is_close(
            out, mistake_models.expected_multi_head(state, h, x, x, x, mistake=mistake)[0]
        )

    not_constant(out, expected_values.multi_head(state, d, h, x, x, x)[0], _("output"), given=x)
    close(
        out_p,
        out[:, perm],
        _("output for the positions permuted by {perm} vs the output permuted").format(
            perm=perm.tolist()
        ),
        lambda: diagnose(
            _(
                "each position's output may depend on the set of positions, never on where it sits: "
                "is a reshape mixing positions and heads? Look at the order of the axes in your split "
                "and merge"
            ),
            *MHA_HINTS.candidates(
                with_mistake, MhaMistake.SPLIT_WITHOUT_TRANSPOSE, MhaMistake.MERGE_WITHOUT_TRANSPOSE
            ),
        ),
    )


@prop(C, points=1, examples=3, clauses=(MultiHead.HEADS,))
@given(case=cases(min_heads=1, max_heads=1))
@example(case=fixed_case(batch=1, m_q=2, m_k=3, d_model=3, num_heads=1, seed=4))
def multi_head_one_head_is_projected_attention(student, case):
    """With one head: output = w_o(attention(w_q(query), w_k(key), w_v(value)))."""
    q, k, v = case.query, case.key, case.value
    d, seed = case.d_model, case.seed
    handle, state = build(student, d, 1, seed, q.dtype)
    out = forward(student, handle, q, k, v)

    def lin(x, n):
        return F.linear(x, state[f"{n}.weight"], state[f"{n}.bias"])

    expected = lin(expected_values.attention(lin(q, "w_q"), lin(k, "w_k"), lin(v, "w_v"))[0], "w_o")
    close(
        out,
        expected,
        _("one-head output vs w_o(attention(w_q(query), w_k(key), w_v(value)))"),
        lambda: explain(
            out,
            state,
            1,
            q,
            k,
            v,
            None,
            _(
                "with one head there is nothing to split: check the "
                "projections, the attention call and w_o"
            ),
        ),
    )


@prop(
    C, points=1, examples=2, kind=Kind.SHAPE, error_hint=NO_HINT, clauses=(MultiHead.VALUE_ERROR,)
)
@given(sizes=st.sampled_from([(6, 4), (5, 2), (8, 3), (4, 8)]))
@example(sizes=(6, 4))
def multi_head_bad_head_count_raises_value_error(student, sizes):
    """MultiHeadAttention(d_model, num_heads) raises ValueError when num_heads does not divide d_model."""
    d, h = sizes
    try:
        student.build(C, CLASS, d_model=d, num_heads=h)
    except StudentError as e:
        if e.exc_type == "ValueError":
            return
        if e.kind != "exception":
            raise
        fail(
            _(
                "MultiHeadAttention(d_model={d_model}, num_heads={num_heads}) raised {error}, "
                "expected ValueError"
            ).format(d_model=d, num_heads=h, error=e.exc_type),
            _(
                "raise ValueError (not {error}) in __init__ when num_heads does not divide d_model"
            ).format(error=e.exc_type),
        )
    fail(
        _(
            "MultiHeadAttention(d_model={d_model}, num_heads={num_heads}) built without an error"
        ).format(d_model=d, num_heads=h),
        _(
            "check in __init__: raise ValueError when d_model % num_heads != 0 (d_k would not be a "
            "whole number)"
        ),
    )


DROPOUT_IN_EVAL = N_(
    "built with dropout=0 your layer gives the right output, with dropout=0.5 in eval mode it does not: "
    "in eval mode dropout must change nothing (no scaling by 1 - p either); apply self.dropout, an "
    "nn.Dropout, which follows train()/eval()"
)


def right_without_dropout(student, case, state) -> bool:
    """The student's layer built with dropout=0 gives the right output on the case (the evidence that a wrong
    output in eval mode with dropout > 0 is the dropout's doing)."""
    q, k, v, m = case.query, case.key, case.value, case.mask
    out = forward(
        student, build(student, case.d_model, case.num_heads, case.seed, q.dtype)[0], q, k, v, m
    )
    expected = expected_values.multi_head(state, case.d_model, case.num_heads, q, k, v, m)[0]
    keep = live_rows(expected)
    return is_close(out[keep], expected[keep])


@prop(C, points=1, examples=2, clauses=(MultiHead.DROPOUT,))
@given(case=cases(mask="pad"))
def multi_head_dropout_is_off_in_eval(student, case):
    """Built with dropout=0.5 in eval mode, the output is exactly the dropout-free one (and repeatable)."""
    q, k, v, m = case.query, case.key, case.value, case.mask
    d, h, seed = case.d_model, case.num_heads, case.seed
    handle, state = build(student, d, h, seed, q.dtype, dropout=0.5)
    out = forward(student, handle, q, k, v, m, seed=1)
    again = forward(student, handle, q, k, v, m, seed=2)
    hint = _(
        "dropout is active in eval mode: use an nn.Dropout module (self.dropout), which follows "
        "train()/eval(), not F.dropout(..., training=True)"
    )
    equal(again, out, _("two forwards in eval mode"), hint)
    check_output(
        out,
        state,
        h,
        q,
        k,
        v,
        m,
        _("output in eval mode with dropout=0.5"),
        lambda: diagnose(
            _("in eval mode dropout does nothing: the output is the dropout-free one"),
            # the cause tested directly: the same layer built with dropout=0 is right
            (
                lambda: right_without_dropout(student, case, state),
                _(DROPOUT_IN_EVAL),
                Evidence.DIRECT,
            ),
        ),
    )


@prop(
    C,
    points=1,
    examples=2,
    clauses=(
        MultiHead.WEIGHTS,
        MultiHead.DROPOUT,
    ),
)
@given(case=cases(mask="pad"))
@example(case=fixed_case(batch=2, m_q=2, m_k=3, d_model=4, num_heads=2, seed=1, mask="pad"))
def multi_head_stores_weights_before_dropout(student, case):
    """In train mode with dropout=0.5, attention_weights holds the weights before dropout (rows sum to 1)."""
    q, k, v, m = case.query, case.key, case.value, case.mask
    d, h, seed = case.d_model, case.num_heads, case.seed
    handle, state = build(student, d, h, seed, q.dtype, dropout=0.5, train=True)
    w = forward(student, handle, q, k, v, m, read=True)[1]
    w = stored_weights(w, (q.shape[0], h, q.shape[1], k.shape[1]), q.dtype)
    if w is None:  # no attribute: the shape property says so; check the output in eval mode instead
        h_eval = build(student, d, h, seed, q.dtype, dropout=0.5)[0]
        return check_output(
            forward(student, h_eval, q, k, v, m),
            state,
            h,
            q,
            k,
            v,
            m,
            _("output in eval mode with dropout=0.5"),
            _("in eval mode dropout does nothing"),
        )
    # torch's weights; a fully masked row is NaN there and zeros in the kit
    expected = torch.nan_to_num(expected_values.multi_head(state, d, h, q, k, v, m)[1], nan=0.0)
    close(
        w,
        expected,
        _("attention_weights in train mode (dropout=0.5)"),
        lambda: diagnose(
            explain(
                w,
                state,
                h,
                q,
                k,
                v,
                m,
                _("attention_weights are the softmax weights of the last forward, before dropout"),
                what="weights",
            ),
            (
                lambda: bool(
                    ((w == 0) | torch.isclose(w, 2 * expected, rtol=1e-4, atol=1e-6)).all()
                ),
                _(
                    "attention_weights stored after dropout: store them before dropout "
                    "(the weights as softmax gave them, detached; dropout acts only on what multiplies v)"
                ),
            ),
        ),
    )


@prop(C, points=1, examples=2, clauses=(MultiHead.DROPOUT,))
@given(seed=seeds(), dtype=dtypes())
def multi_head_dropout_acts_in_training(student, seed, dtype):
    """In training mode with dropout=0.5 the output differs from the same module's with dropout=0 (same weights,
    same seed): dropout acts on the attention weights, so entries change and none is zeroed outright."""
    d, h = 8, 2
    case = fixed_case(batch=2, m_q=4, m_k=5, d_model=d, num_heads=h, seed=seed, dtype=dtype)
    q, k, v = case.query, case.key, case.value
    plain_handle, state = build(student, d, h, seed, dtype, dropout=0.0, train=True)
    plain = forward(student, plain_handle, q, k, v, seed=seed)
    handle = build(student, d, h, seed, dtype, dropout=0.5, train=True)[0]
    out = forward(student, handle, q, k, v, seed=seed)
    changed = (
        1.0
        - torch.isclose(out.double(), plain.double(), rtol=1e-4, atol=1e-6).double().mean().item()
    )
    # Dropping half of the weights (and doubling the rest) moves nearly every output entry.
    if changed < 0.5:
        fail(
            _(
                "in training mode with dropout=0.5, {changed:.0%} of the output entries differ from the "
                "same module built with dropout=0: dropout is never applied"
            ).format(changed=changed),
            _(
                "dropout is never applied to the attention weights: self.dropout (an nn.Dropout, which "
                "follows train()/eval()) acts on the weights before they multiply v"
            ),
        )
    zeros = (out == 0).double().mean().item()
    if zeros > 0.2:
        fail(
            _(
                "in training mode with dropout=0.5, {zeros:.0%} of the output entries are exactly 0"
            ).format(zeros=zeros),
            _(
                "dropout goes on the attention weights (dropout(weights) @ v), not on the output of w_o"
            ),
        )


@prop(C, points=2, examples=2, clauses=(MultiHead.GRADIENTS,))
@given(
    sizes=model_sizes(max_heads=2, min_heads=2),
    m_q=st.integers(1, 3),
    m_k=st.integers(2, 4),
    seed=seeds(),
    dtype=dtypes(),
)
def multi_head_gradients_reach_every_projection(student, sizes, m_q, m_k, seed, dtype):
    """Backpropagating through forward gives finite, non-zero gradients to w_q, w_k, w_v, w_o and the inputs."""
    (d, h), b = sizes, 2
    case = fixed_case(batch=b, m_q=m_q, m_k=m_k, d_model=d, num_heads=h, seed=seed, dtype=dtype)
    q, k, v = case.query, case.key, case.value
    handle = build(student, d, h, seed, q.dtype)[0]
    reply = student.run(Call(handle, "forward", (q, k, v), {}, seed=seed, backward=True))
    grads = reply.param_grads or {}
    for name in [f"{p}.{s}" for p in ("w_q", "w_k", "w_v", "w_o") for s in ("weight", "bias")]:
        g = grads.get(name)
        if g is None:
            fail(
                _("{name} got no gradient").format(name=name),
                _(
                    "it is unused or cut from the graph: w_o must project the merged heads, and the "
                    "output must come from dropout(weights) @ v, not from the detached "
                    "attention_weights (or .data / no_grad)"
                ),
            )
        expect(
            torch.isfinite(g).all(),
            _("{name} has a non-finite gradient").format(name=name),
            _("NaN in the backward pass"),
        )
        # a key bias shifts every score of a query equally: its gradient is exactly 0
        if name != "w_k.bias":
            expect(
                g.abs().sum() > 0,
                _("{name} got an all-zero gradient").format(name=name),
                _(
                    "the output does not depend on it: is each projection applied to its own input "
                    "(q = w_q(query), k = w_k(key), v = w_v(value)) and the output computed with "
                    "autograd on?"
                ),
            )
    names = ("query", "key", "value")
    for i, g in enumerate(reply.input_grads or []):
        expect(
            g is not None and g.abs().sum() > 0,
            _("the gradient with respect to {name} is zero or missing").format(name=names[i]),
            _("the output must depend on query, key and value through autograd"),
        )


@prop(C, points=1, examples=3, clauses=(MultiHead.FULLY_MASKED,))
@given(case=cases(mask="full"))
@example(
    case=MultiHeadInputs(
        query=torch.ones(2, 2, 4, dtype=torch.float64),
        key=torch.ones(2, 2, 4, dtype=torch.float64),
        value=torch.arange(16, dtype=torch.float64).reshape(2, 2, 4),
        mask=torch.tensor([[[[True, False], [False] * 2], [[False] * 2] * 2]] * 2),
        d_model=4,
        num_heads=2,
        seed=3,
    )
)
def multi_head_fully_masked_rows_get_zero_weights(student, case):
    """A query row masked for every key in a head gets zero weights in that head and a finite output; a row
    masked in every head outputs w_o's bias (each head contributes zeros); the other rows equal torch's."""
    q, k, v, m = case.query, case.key, case.value, case.mask
    d, h, seed = case.d_model, case.num_heads, case.seed
    handle, state = build(student, d, h, seed, q.dtype)
    # NaN in the output is reported here, first
    out, w = forward(student, handle, q, k, v, m, read=True)
    w = stored_weights(w, (q.shape[0], h, q.shape[1], k.shape[1]), q.dtype)
    dead = ~m.expand(q.shape[0], h, q.shape[1], k.shape[1]).any(-1)  # (batch, h, m_q)
    if w is not None:
        expect(
            bool((w[dead] == 0).all()),
            _("attention_weights of a fully masked row are not all zero"),
            _("fully masked rows hold zero weights; the others sum to 1"),
        )
    all_dead = dead.all(1)  # (batch, m_q): masked in every head
    if bool(all_dead.any()):
        bias = state.get("w_o.bias", torch.zeros(d, dtype=q.dtype))
        close(
            out[all_dead],
            bias.expand(int(all_dead.sum()), d),
            _("output of a row masked in every head"),
            _("a fully masked head contributes zeros before w_o"),
        )
    check_output(
        out,
        state,
        h,
        q,
        k,
        v,
        m,
        _("output with fully masked rows"),
        _("a fully masked head contributes zeros before w_o"),
    )


@prop(C, points=1, examples=1, kind=Kind.STATIC)
def multi_head_is_written_by_hand(student):
    """multi_head.py calls no library attention (static check; the run-time check is in every test)."""
    written_by_hand(
        student,
        C,
        _(
            "build it from nn.Linear, view/transpose and scaled_dot_product_attention from "
            "attention.py: no nn.MultiheadAttention, F.scaled_dot_product_attention or softmax"
        ),
    )
