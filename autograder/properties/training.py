"""Properties of training.py (visible to students): the smoothed loss, the schedule, teacher forcing, learning.

Nothing here is an answer (docs/bundle.md): the expected values come from the checking side's model of training
(models/trainer.py: torch's F.cross_entropy through an exact identity, the schedule's closed form driven through
torch's LambdaLR, the trainable Transformer made of torch's own layers), so a gradient or an Adam step is computed
on the checking side and compared with the student's. A mismatch is diagnosed by re-running that model with one
mistake at a time (TrainingMistake: targets not shifted, no causal mask, smoothing mass on the padding token, no
zero_grad...). The hints, the diagnoses, the cases and the calls into training.py are suite/training_cases.py's
(shared with the hidden properties). The end-to-end property trains the model (built from the checking side's
initial weights) on a copy task and reads back its weights: one teacher-forced pass of them over held-out
sequences gives what greedy decoding reproduces.
"""

from __future__ import annotations

import math
import secrets

import torch
import torch.nn.functional as F
from hypothesis import example, given
from hypothesis import strategies as st

from ..i18n import _
from ..student_code import Call, cotangent
from ..suite.checks import close, diagnose, expect, fail, is_close, tensor, written_by_hand
from ..suite.clauses import Training
from ..suite.copy_task import CopyTask
from ..suite.core import Evidence, Kind, named, prop
from ..suite.strategies import seeds
from ..suite.training_cases import (
    ADAM,
    BUILD_ERROR,
    LOSS_TYPE,
    PAD_COUNTED,
    RATE_TYPE,
    SCHEDULE,
    SCHEDULE_USED,
    SHIFT_TYPE,
    TRAIN_TYPE,
    UNDERFLOW,
    ZERO_LOG_ZERO,
    C,
    batch_cases,
    build_model,
    expect_trained_in_train_mode,
    explain_loss,
    far_apart_hint,
    far_apart_inputs,
    fixed_batch_case,
    fixed_far_apart,
    fixed_loss_inputs,
    fixed_minus_inf,
    label_smoothed_cross_entropy,
    learning_rate,
    loss_inputs,
    minus_inf_inputs,
    shift_right_is_wrong,
    tensors_like,
    train,
    trained_on_the_student_loss,
)
from .models import trainer as trainer_models
from .models.trainer import (
    TEACHER_FORCING,
    TRAINING_HINTS,
    TrainingMistake,
    entropy,
    expected_gradients,
    greedy_accuracy,
    library_loss,
    minimum_logits,
    schedule,
    shift,
    teacher_forced_accuracy,
)
from .models.transformer import TrainableTransformer

M = TrainingMistake


# ------------------------------------------------------------------------------------------------- properties
# The two that use the model come first: the judge re-runs a component's first two visible properties with the
# student's own dependencies (the integration share), and these are the ones that exercise them.
@prop(C, points=3, examples=4, error_hint=BUILD_ERROR, clauses=(Training.TEACHER_FORCING,))
@given(case=batch_cases())
@example(case=fixed_batch_case(3))
def teacher_forcing_gradient_equals_expected(student, case):
    """teacher_forcing_loss's value and every parameter's gradient equal the expected model's.

    The same weights and batch for both."""
    handle, state = build_model(student, case)
    reply = student.run(
        Call(
            C,
            "teacher_forcing_loss",
            (handle, case.src, case.tgt),
            dict(bos_id=case.bos_id, pad_id=case.pad_id, smoothing=case.smoothing),
            backward=True,
        )
    )
    what = (
        f"teacher_forcing_loss(model, src, tgt, bos_id={case.bos_id}, pad_id={case.pad_id}, "
        f"smoothing={case.smoothing})"
    )
    got = tensor(reply.value, what, shape=(), dtype=torch.float64)
    # the scalar Call(backward=True) multiplies the loss by (seed 0 + 1)
    c = cotangent((), torch.float64, 1).item()

    def explain():
        wrong_shift = shift_right_is_wrong(student)
        if (
            wrong_shift
        ):  # the student's own shift_right, tested directly, before any model of the loss
            return wrong_shift
        for mistake in TRAINING_HINTS.tried(TEACHER_FORCING):  # its declared order
            if M.PAD_COUNTED in mistake and trainer_models.BY_HAND is None:
                continue
            try:
                if is_close(got, expected_gradients(state, case, mistake=mistake)[0]):
                    return TRAINING_HINTS(mistake)
            except Exception:  # noqa: BLE001 - a diagnosis is best effort
                continue
        return _(
            "logits = model(src, shift_right(tgt, bos_id), padding_mask(src, pad_id), causal_mask(m)); "
            "loss = label_smoothed_cross_entropy(logits, tgt, smoothing, pad_id)"
        )

    loss, grads = expected_gradients(state, case, c)
    if not is_close(got, loss):
        close(got, loss, what, explain)
    for name, expected in grads.items():
        g = (reply.param_grads or {}).get(name)
        expect(
            g is not None,
            _("{name} got no gradient from teacher_forcing_loss").format(name=name),
            _("return the loss tensor itself, attached to the model (no .item() or .detach())"),
        )
        if not is_close(g, expected):
            close(g, expected, _("d loss / d {name}").format(name=name), explain)


# long: a registered property: split, its source (Hypothesis's key for its examples) would change
@prop(C, points=2, examples=2, error_hint=BUILD_ERROR, clauses=(Training.TRAIN,))
@given(case=batch_cases(), steps=st.integers(2, 3), warmup=st.integers(1, 3))
@example(case=fixed_batch_case(5), steps=3, warmup=2)
def train_takes_adam_steps_on_the_schedule(student, case, steps, warmup):
    """After train(...) on a few batches the weights and the losses are those of Adam's steps on your own
    teacher_forcing_loss.

    Adam(betas=(0.9, 0.98), eps=1e-9), lr = learning_rate(s, ...) before step s, gradients cleared at every step:
    step s's loss and gradients are teacher_forcing_loss's on the weights of the steps before, and its update is
    Adam's formula (torch's documentation), so a wrong loss costs teacher forcing's points, not these."""
    src_b, tgt_b = case.batches(steps)
    handle, state = build_model(student, case)
    losses, what = train(student, handle, src_b, tgt_b, case, warmup, 1.0)
    info = student.inspect(handle)
    expect(
        info.get("training"),
        _("after train(...) the model is in eval mode"),
        _("call model.train() first"),
    )
    expected_losses, expected_state = trained_on_the_student_loss(
        student, case, state, src_b, tgt_b, warmup, 1.0
    )
    got_state = info["state"]

    def explain():
        def same(mistake):
            return lambda: is_close(
                got_state["generator.weight"],
                trained_on_the_student_loss(
                    student, case, state, src_b, tgt_b, warmup, 1.0, mistake
                )[1]["generator.weight"],
                rtol=1e-5,
                atol=1e-7,
            )

        # two whole sentences, each translated, joined as in English
        schedule_from_1 = _("{schedule_used} (s from 1)").format(
            schedule_used=TRAINING_HINTS(M.SCHEDULE_AHEAD)
        )
        return diagnose(
            _(ADAM) + "; " + _(SCHEDULE_USED),
            (same(M.NO_ZERO_GRAD), TRAINING_HINTS(M.NO_ZERO_GRAD)),
            *[(same(m), schedule_from_1) for m in (M.SCHEDULE_AHEAD, M.SCHEDULE_BEHIND)],
        )

    if not is_close(losses[0], expected_losses[0], rtol=1e-5, atol=1e-7):
        close(
            losses[:1],
            expected_losses[:1],
            _("{what}: the first step's loss").format(what=what),
            lambda: (
                shift_right_is_wrong(student)
                or _("step 1's loss is teacher_forcing_loss of batch 0 before any update")
            ),
        )
    for name, expected in expected_state.items():
        if not is_close(got_state[name], expected, rtol=1e-5, atol=1e-7):
            close(
                got_state[name],
                expected,
                _("{name} after {steps} steps of train").format(name=name, steps=steps),
                explain,
                rtol=1e-5,
                atol=1e-7,
            )
    close(
        losses,
        expected_losses,
        _("{what}: the losses of each step").format(what=what),
        _("return the loss of each step, before it"),
        rtol=1e-5,
        atol=1e-7,
    )


@prop(
    C,
    points=3,
    examples=12,
    clauses=(
        Training.LOSS,
        Training.PADDING,
    ),
)
@given(inputs=loss_inputs())
@example(inputs=fixed_loss_inputs(0))
@example(inputs=fixed_loss_inputs(1, smoothing=0.2, pad_id=2, dtype=torch.float32))
def smoothed_loss_equals_closed_form(student, inputs):
    """label_smoothed_cross_entropy = mean over non-padding positions of -sum_v q[v] log softmax(logits)[v].

    Compared with torch's F.cross_entropy(label_smoothing=) through an exact identity (library_loss)."""
    got, _reply, what = label_smoothed_cross_entropy(student, inputs)
    expected = library_loss(inputs.logits, inputs.target, inputs.smoothing, inputs.pad_id)
    if not is_close(got, expected, inputs.logits.dtype):
        close(
            got,
            expected,
            what,
            explain_loss(
                got,
                inputs,
                _(
                    "q[y] = 1 - smoothing, q[pad_id] = 0, smoothing / (V - 2) "
                    "elsewhere; loss = mean over non-padding positions of "
                    "-sum(q * log_softmax(logits))"
                ),
            ),
            inputs.logits.dtype,
        )


@prop(
    C,
    points=1,
    examples=8,
    clauses=(
        Training.LOSS,
        Training.PADDING,
    ),
)
@given(inputs=loss_inputs(smoothing=0.0))
def smoothing_zero_is_cross_entropy(student, inputs):
    """With smoothing = 0 the loss is the ordinary cross-entropy with padding ignored."""
    got, _reply, what = label_smoothed_cross_entropy(student, inputs)
    logits = inputs.logits.to(torch.float64)
    expected = F.cross_entropy(
        logits.flatten(0, 1), inputs.target.flatten(), ignore_index=inputs.pad_id
    )
    if not is_close(got, expected, inputs.logits.dtype):
        close(
            got,
            expected,
            _("{what} vs F.cross_entropy(ignore_index=pad_id)").format(what=what),
            explain_loss(
                got,
                inputs,
                _(
                    "with smoothing 0, q is one-hot: loss = mean over non-padding positions of "
                    "-log softmax(logits)[target]"
                ),
            ),
            inputs.logits.dtype,
        )


@prop(C, points=1, examples=6, clauses=(Training.LOSS,))
@given(inputs=far_apart_inputs())
@example(inputs=fixed_far_apart(torch.float32, 200.0, 0.1))
@example(inputs=fixed_far_apart(torch.float64, 1000.0, 0.0))
def smoothed_loss_is_finite_for_logits_far_apart(student, inputs):
    """Logits hundreds apart (a probability that underflows to 0): the loss stays finite and exact.

    Compared with torch's own cross-entropy, class by class."""
    got, _reply, what = label_smoothed_cross_entropy(student, inputs, nan_hint=_(UNDERFLOW))
    expected = library_loss(inputs.logits, inputs.target, inputs.smoothing, inputs.pad_id)
    close(
        got,
        expected,
        _("{what} with logits hundreds apart").format(what=what),
        lambda: far_apart_hint(student, inputs, got),
        inputs.logits.dtype,
    )


@prop(C, points=1, examples=6, clauses=(Training.LOSS,))
@given(inputs=minus_inf_inputs())
@example(inputs=fixed_minus_inf(torch.float64))
@example(inputs=fixed_minus_inf(torch.float32))
def smoothing_zero_allows_minus_inf_logits(student, inputs):
    """With smoothing = 0, logits of -inf at tokens other than the target: the loss stays finite.

    It equals F.cross_entropy(ignore_index=pad_id). (The gradient is not checked here: log(softmax) makes it NaN,
    a mistake charged once, by the property on logits far apart.)"""
    got, _reply, what = label_smoothed_cross_entropy(student, inputs, nan_hint=_(ZERO_LOG_ZERO))
    expected = F.cross_entropy(
        inputs.logits.to(torch.float64).flatten(0, 1),
        inputs.target.flatten(),
        ignore_index=inputs.pad_id,
    )
    close(
        got,
        expected,
        _("{what} with -inf logits away from the target").format(what=what),
        _(ZERO_LOG_ZERO),
        inputs.logits.dtype,
    )


@prop(C, points=2, examples=8, clauses=(Training.LOSS,))
@given(inputs=loss_inputs(dtype=torch.float64, smoothings=(0.1, 0.2, 0.4)))
@example(inputs=fixed_loss_inputs(2, smoothing=0.1))
def smoothed_distribution_minimises_the_loss(student, inputs):
    """At logits = log q (the smoothed distribution) the loss is its entropy H(q) and its gradient is zero."""
    vocab = inputs.logits.shape[-1]
    logits = minimum_logits(inputs.target, vocab, inputs.smoothing, inputs.pad_id)
    inputs = inputs.replace(logits=logits)
    got, reply, what = label_smoothed_cross_entropy(student, inputs, backward=True)
    h = entropy(vocab, inputs.smoothing)
    hint = explain_loss(
        got,
        inputs,
        _(
            "at logits = log q the loss is the entropy of q: check q (q[y] = 1 - smoothing, "
            "smoothing / (V - 2) elsewhere but q[pad_id] = 0) and the mean over non-padding positions"
        ),
    )
    close(
        got,
        torch.tensor(h, dtype=torch.float64),
        _("{what} at logits = log q, vs the entropy of q").format(what=what),
        hint,
    )
    grad = (reply.input_grads or [None])[0]
    expect(
        grad is not None,
        _("no gradient reached the logits"),
        _("keep the loss differentiable: no .item(), .detach() or numpy inside"),
    )
    close(
        grad,
        torch.zeros_like(grad),
        _("d loss / d logits at logits = log q (the minimum)"),
        hint,
    )


@prop(C, points=1, examples=8, clauses=(Training.PADDING,))
@given(inputs=loss_inputs(min_pad=1), noise=seeds())
def padding_positions_contribute_nothing(student, inputs, noise):
    """Changing the logits at padding positions changes neither the loss nor the other positions' gradients."""
    got, reply, what = label_smoothed_cross_entropy(student, inputs, backward=True)
    pad = inputs.target == inputs.pad_id
    grad = (reply.input_grads or [None])[0]
    expect(
        grad is not None,
        _("no gradient reached the logits"),
        _("keep the loss differentiable: no .item(), .detach() or numpy inside"),
    )
    expect(
        float(grad[~pad].abs().sum()) > 0,
        _("d loss / d logits is zero at every non-padding position"),
        _("the loss must depend on the logits of the non-padding positions"),
    )
    changed = inputs.logits + pad[..., None] * tensors_like(inputs.logits, noise)
    again = label_smoothed_cross_entropy(student, inputs.replace(logits=changed))[0]
    close(
        again,
        got,
        _("{what} after changing the logits at padding positions").format(what=what),
        named(
            _(PAD_COUNTED), Evidence.DIRECT
        ),  # the cause tested directly: a padding logit changed
        inputs.logits.dtype,
    )
    close(
        grad[pad],
        torch.zeros_like(grad[pad]),
        _("d loss / d logits at padding positions"),
        named(_(PAD_COUNTED), Evidence.DIRECT),
    )


@prop(C, points=1, examples=12, clauses=(Training.SCHEDULE,))
@given(
    step=st.integers(1, 20_000),
    d_model=st.sampled_from([16, 64, 512]),
    warmup=st.integers(1, 8000),
    factor=st.sampled_from([1.0, 2.0, 0.5]),
)
@example(step=1, d_model=512, warmup=4000, factor=1.0)
@example(step=4000, d_model=512, warmup=4000, factor=1.0)
def learning_rate_equals_closed_form(student, step, d_model, warmup, factor):
    """learning_rate = factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)."""
    got, what = learning_rate(student, step, d_model, warmup, factor)
    expected = schedule(step, d_model, warmup, factor)
    if not math.isclose(got, expected, rel_tol=1e-9):
        fail(
            _("{what} = {got:.6g}, expected {expected:.6g}").format(
                what=what, got=got, expected=expected
            ),
            diagnose(
                _(SCHEDULE),
                (
                    math.isclose(got, schedule(step, d_model, warmup), rel_tol=1e-9),
                    _("multiply by factor"),
                ),
                (
                    math.isclose(got, expected * math.sqrt(d_model), rel_tol=1e-9)
                    or math.isclose(got, expected / math.sqrt(d_model), rel_tol=1e-9),
                    _("scale by d_model^-0.5"),
                ),
            ),
        )


@prop(C, points=1, examples=3, clauses=(Training.SCHEDULE,))
@given(d_model=st.sampled_from([16, 64, 512]), warmup=st.integers(2, 30))
@example(d_model=512, warmup=25)
def learning_rate_peaks_at_warmup(student, d_model, warmup):
    """Over steps 1..3·warmup the rate rises to its peak (d_model·warmup)^-0.5 at step warmup, then falls."""
    rates = [learning_rate(student, s, d_model, warmup)[0] for s in range(1, 3 * warmup + 1)]
    peak = max(range(len(rates)), key=rates.__getitem__) + 1
    expect(
        peak == warmup,
        _(
            "learning_rate(step, d_model={d_model}, warmup_steps={warmup}) peaks at step {peak}, "
            "expected at step {warmup}"
        ).format(d_model=d_model, warmup=warmup, peak=peak),
        _(SCHEDULE),
    )
    expected = (d_model * warmup) ** -0.5
    expect(
        math.isclose(rates[warmup - 1], expected, rel_tol=1e-9),
        _(
            "the peak rate is {peak:.6g}, expected (d_model * warmup_steps)^-0.5 = {expected:.6g}"
        ).format(peak=rates[warmup - 1], expected=expected),
        _(SCHEDULE),
    )


@prop(C, points=1, examples=6, clauses=(Training.SHIFT,))
@given(
    tgt=st.integers(1, 5).flatmap(
        lambda m: st.lists(
            st.lists(st.integers(0, 9), min_size=m, max_size=m), min_size=1, max_size=3
        )
    ),
    bos_id=st.integers(0, 9),
)
def shift_right_prepends_bos(student, tgt, bos_id):
    """shift_right(tgt, bos_id) = [bos_id, tgt[:, 0], ..., tgt[:, m-2]] per row."""
    tgt = torch.tensor(tgt)
    got = tensor(
        student.call(C, "shift_right", tgt, bos_id),
        f"shift_right(tgt, bos_id={bos_id})",
        shape=tgt.shape,
        dtype=torch.long,
    )
    expected = shift(tgt, bos_id)
    expect(
        torch.equal(got, expected),
        _("shift_right({tgt}, {bos_id}) = {got}, expected {expected}").format(
            tgt=tgt.tolist(), bos_id=bos_id, got=got.tolist(), expected=expected.tolist()
        ),
        _("prepend bos_id and drop the last token: the input at t is tgt[t - 1]"),
    )


@prop(C, points=1, examples=1, error_hint=BUILD_ERROR, kind=Kind.SHAPE, clauses=(Training.TYPES,))
def training_returns_the_contract_types(student):
    """train's losses are a float64 tensor (steps,), learning_rate a Python float, the loss a scalar of the
    logits' dtype, shift_right a LongTensor. The one property that owns these types (the others accept any).
    """
    case = fixed_batch_case(9, b=2, m_e=3, m=3, d=4, h=1)
    handle, _state = build_model(student, case)
    src_b, tgt_b = case.batches(2)
    kwargs = dict(
        d_model=case.config.d_model, warmup_steps=2, bos_id=case.bos_id, pad_id=case.pad_id
    )
    losses = student.run(Call(C, "train", (handle, src_b, tgt_b), kwargs)).value
    got = (
        f"{type(losses).__name__} {getattr(losses, 'dtype', '')} "
        f"{tuple(getattr(losses, 'shape', ()))}"
    )
    expect(
        isinstance(losses, torch.Tensor)
        and losses.dtype == torch.float64
        and tuple(losses.shape) == (2,),
        _("train(...) on 2 batches returned {got}, expected a float64 tensor of shape (2,)").format(
            got=got.strip()
        ),
        _(TRAIN_TYPE),
    )
    rate = student.call(C, "learning_rate", 3, 16, warmup_steps=4)
    expect(
        isinstance(rate, float),
        _("learning_rate(3, 16, warmup_steps=4) returned {type}, expected a Python float").format(
            type=type(rate).__name__
        ),
        _(RATE_TYPE),
    )
    inputs = fixed_loss_inputs(5, dtype=torch.float32)
    loss = label_smoothed_cross_entropy(student, inputs)[1].value
    expect(
        isinstance(loss, torch.Tensor) and loss.dtype == torch.float32 and loss.dim() == 0,
        _(
            "label_smoothed_cross_entropy of float32 logits returned {got}, expected a float32 scalar"
        ).format(got=f"{type(loss).__name__} {getattr(loss, 'dtype', '')}".strip()),
        _(LOSS_TYPE),
    )
    shifted = student.call(C, "shift_right", torch.tensor([[4, 5, 6]]), 1)
    expect(
        isinstance(shifted, torch.Tensor) and shifted.dtype == torch.long,
        _("shift_right(tgt, 1) returned {got}, expected a LongTensor").format(
            got=f"{type(shifted).__name__} {getattr(shifted, 'dtype', '')}".strip()
        ),
        _(SHIFT_TYPE),
    )


COPY = CopyTask()
# Drawn once per grading process, at import on the checking side (never in the worker): the copy task's
# permutation and data. Once per process, so a submission's English and Spanish runs see the same task.
TASK_DRAW = secrets.randbits(31)
SECOND_DRAW = 1_000_003  # the second task's offset: its seeds (draw, draw + 1, draw + 999) overlap no first one


def copy_task_learned(student, task, draw):
    """Train the student's model on the task drawn from `draw` (checking the losses on the way): None when greedy
    decoding reaches task.accuracy, else (losses, trained expected model, held-out src, tgt, accuracy)."""
    mapping = task.mapping(draw)
    initial = task.initial_state()
    kwargs = task.config.kwargs()
    handle = student.build("transformer", "Transformer", state=initial, train=True, **kwargs)
    src_b, tgt_b = task.data(draw + 1, task.steps, task.batch, noise=True, mapping=mapping)
    losses, what = train(student, handle, src_b, tgt_b, task, task.warmup, task.factor)
    expect(
        float(losses[-1]) < float(losses[0]),
        _("{what}: the loss went from {first:.4g} at step 1 to {last:.4g} at step {steps}").format(
            what=what, first=float(losses[0]), last=float(losses[-1]), steps=task.steps
        ),
        _("return each step's loss; it must fall as the model learns: {cause}").format(
            cause=TRAINING_HINTS(M.NO_ZERO_GRAD)
        ),
    )
    # The losses belong to these batches: the first is the loss of batch 0 at the initial weights, as the
    # student's own teacher_forcing_loss computes it on a fresh model (a wrong loss is charged elsewhere, once).
    fresh = student.build("transformer", "Transformer", state=initial, train=True, **kwargs)
    first = tensor(
        student.call(
            C,
            "teacher_forcing_loss",
            fresh,
            src_b[0],
            tgt_b[0],
            bos_id=task.bos_id,
            pad_id=task.pad_id,
            smoothing=task.smoothing,
        ),
        "teacher_forcing_loss(model, src_batches[0], tgt_batches[0], ...)",
        shape=(),
    ).item()
    expect(
        math.isclose(float(losses[0]), first, rel_tol=1e-4, abs_tol=1e-5),
        _(
            "{what}: the first step's loss is {got:.6g}, but the first batch's loss at the initial weights is "
            "{expected:.6g} (task drawn with {draw})"
        ).format(what=what, got=float(losses[0]), expected=first, draw=draw),
        _(
            "train takes one step per batch it is given, in order, and returns each step's loss before that "
            "step: losses[0] is teacher_forcing_loss of batch 0 at the weights the model had"
        ),
    )
    state = student.inspect(handle)["state"]
    src, tgt = (x[0] for x in task.data(draw + 999, 1, task.held_out, mapping=mapping))
    # the trained weights, as greedy decoding uses them
    trained = TrainableTransformer(state, task.config)
    accuracy = greedy_accuracy(trained, src, tgt, task.bos_id)
    return None if accuracy >= task.accuracy else (losses, trained, src, tgt, accuracy)


# long: the copy task run once, then its diagnoses in the order a cause shows (shift, mask, zero_grad)
@prop(C, points=3, examples=1, error_hint=BUILD_ERROR, slow=True, clauses=(Training.TRAIN,))
def copy_task_is_learned(student):
    """train() learns the copy task: 50 % token accuracy on 64 held-out sequences under greedy decoding.

    Tokens counted up to each row's first mistake, from one teacher-forced pass of the trained weights
    (greedy_accuracy).
    Each token copied through a permutation of the vocabulary drawn at grading time; 60 steps of 128 sequences of
    3 tokens, 15 % of the training target tokens noise, d_model 32, 1 layer. The first step's loss must be
    teacher_forcing_loss of the first batch at the initial weights. A model that falls short is given a second
    task, drawn from TASK_DRAW + SECOND_DRAW: the reference falls short of 50 % in about 1 draw in 300
    (docs/speed.md, "training"), so twice in a row about once in 100,000 gradings."""
    task = COPY
    for draw in (TASK_DRAW, TASK_DRAW + SECOND_DRAW):
        learned = copy_task_learned(student, task, draw)
        if learned is None:
            return
    losses, trained, src, tgt, accuracy = learned

    def accuracy_of(mistake):  # the trained weights' teacher-forced accuracy, read with `mistake`
        return teacher_forced_accuracy(trained, src, tgt, task.bos_id, mistake)

    hint = diagnose(
        _(
            "the model did not learn to copy: check train (Adam, the schedule, zero_grad) and "
            "teacher_forcing_loss"
        ),
        # a shift_right that shifts left also reads better without the causal mask: its own check first
        (lambda: shift_right_is_wrong(student), lambda: shift_right_is_wrong(student)),
        (
            lambda: accuracy_of(M.NO_CAUSAL_MASK) >= accuracy_of(M.NONE) + 0.05,
            TRAINING_HINTS(M.NO_CAUSAL_MASK),
        ),
        (
            lambda: (
                accuracy_of(M.NOT_SHIFTED) >= task.accuracy
                or accuracy_of(M.NOT_SHIFTED | M.NO_CAUSAL_MASK) >= task.accuracy
            ),
            TRAINING_HINTS(M.NOT_SHIFTED),
        ),
        (
            lambda: float(losses[-1]) > float(losses[0]),
            _("the loss grew during training: {cause}").format(
                cause=TRAINING_HINTS(M.NO_ZERO_GRAD)
            ),
        ),
    )
    fail(
        _(
            "after {steps} steps greedy decoding reproduces {accuracy:.0%} of the held-out tokens (up to its "
            "first mistake in each row), expected at least {expected:.0%} (training loss {first:.3f} at step 1, "
            "{last:.3f} at step {steps}; task "
            "drawn with {draw})"
        ).format(
            draw=draw,
            steps=task.steps,
            accuracy=accuracy,
            expected=task.accuracy,
            first=float(losses[0]),
            last=float(losses[-1]),
        ),
        hint,
    )


@prop(C, points=1, examples=1, error_hint=BUILD_ERROR, clauses=(Training.TRAIN_MODE,))
@given(case=batch_cases())
def train_puts_the_model_in_train_mode(student, case):
    """train(...) on a model built in eval mode trains it in train mode (model.train(): dropout on when it has
    any), and returns each step's loss (the first: teacher_forcing_loss's before any update)."""
    expect_trained_in_train_mode(student, case, steps=3)


@prop(C, points=1, examples=1, kind=Kind.STATIC)
def training_is_written_by_hand(student):
    """training.py calls no library cross-entropy, NLL or KL loss (static check)."""
    written_by_hand(
        student,
        C,
        _(
            "write the smoothed cross-entropy from log_softmax, a smoothed target distribution and "
            "a masked mean: no F.cross_entropy, nn.CrossEntropyLoss, F.nll_loss or F.kl_div"
        ),
    )
