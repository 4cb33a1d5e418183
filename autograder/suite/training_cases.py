"""What training's visible and hidden properties share: their hints and diagnoses, the cases they draw (a loss's
inputs, a tiny Transformer with a batch, the copy task), the calls into training.py, and the model under training.

A case's Transformer is models.transformer.TransformerConfig (its sizes and the seed of its weights); the model
under training is built from transformer.py (the student's own in the self-check, the reference in the judge),
and its expected values come from models.trainer on the checking side.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from ..i18n import N_, _
from ..properties.models.trainer import (
    LOSS,
    TRAINING_HINTS,
    AdamMoments,
    TrainingMistake,
    adam_update,
    entropy,
    expected_smoothed_loss,
    library_loss,
    rate,
    shift,
)
from ..properties.models.transformer import TransformerConfig
from ..student_code import Call, cotangent
from . import decoding
from .checks import close, diagnose, expect, is_close, tensor
from .core import Evidence, named
from .graded import matches
from .strategies import LabelledCase, composite, dtypes, seeds, tensors

C = "training"
MAX_LEN = 16
BOS, EOS = 1, 2
M = TrainingMistake


# ------------------------------------------------------------------------------- the words and the diagnoses
# What the visible and the hidden properties say: a hint per usual mistake, and the diagnoses that pick one by
# re-running the checking side's model of training (models/trainer.py) with that mistake.
BUILD_ERROR = N_(
    "training.py's functions take the model and plain tensors (see the docstrings); "
    "is the transformer built and called as in transformer.py's contract?"
)

PAD_MASS = TRAINING_HINTS.msgid(M.PAD_MASS)
PAD_COUNTED = TRAINING_HINTS.msgid(M.PAD_COUNTED)
NOT_MEAN = TRAINING_HINTS.msgid(M.SUMMED)
TORCH_SMOOTHING = TRAINING_HINTS.msgid(M.TORCH_SMOOTHING)
NOT_SHIFTED = TRAINING_HINTS.msgid(M.NOT_SHIFTED)
NO_CAUSAL = TRAINING_HINTS.msgid(M.NO_CAUSAL_MASK)
NO_SRC_MASK = TRAINING_HINTS.msgid(M.NO_SRC_MASK)
NO_ZERO_GRAD = TRAINING_HINTS.msgid(M.NO_ZERO_GRAD)
SCHEDULE = N_(
    "lrate = factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5): it peaks at "
    "step = warmup_steps"
)
SCHEDULE_USED = TRAINING_HINTS.msgid(M.SCHEDULE_AHEAD)
ADAM = N_(
    "the paper's optimizer: torch.optim.Adam(model.parameters(), betas=(0.9, 0.98), eps=1e-9)"
)
UNDERFLOW = N_(
    "log(softmax(x)) underflows: a probability of exp(-200) is 0 in float32 and its log -inf; compute the "
    "log-probabilities with torch.log_softmax(logits, dim=-1), which stays finite"
)
ZERO_LOG_ZERO = N_(
    "0 * log 0 counts as 0: where q[v] = 0 (smoothing 0, or the padding token) a logit of -inf gives "
    "0 * -inf = NaN; leave the terms where q[v] = 0 out of the sum"
)


SPREAD_OVER_V_MINUS_1 = N_(
    "q spreads smoothing / (V - 1) over every token but the target, the padding token included: q[pad_id] = 0, "
    "and smoothing / (V - 2) goes to each of the V - 2 tokens that are neither the target nor pad_id"
)


def spread_over_v_minus_1(inputs) -> torch.Tensor:
    """The loss with q = 1 - s at the target and s / (V - 1) on every other token, padding included: torch's own
    smoothing with s * V / (V - 1) (its q is s' / V everywhere plus 1 - s' at the target), padding positions
    ignored; a library call, so no answer."""
    logits, target, s = inputs.logits.to(torch.float64), inputs.target, inputs.smoothing
    vocab = logits.shape[-1]
    return torch.nn.functional.cross_entropy(
        logits.flatten(0, -2),
        target.flatten(),
        ignore_index=inputs.pad_id,
        label_smoothing=min(1.0, s * vocab / (vocab - 1)),
    )


def explain_loss(got, inputs, default):
    """The hint of a wrong loss on `inputs`: the one mistake whose model gives `got` (PAD_COUNTED only where the
    graded side's diagnoses are), or `default`."""

    def same(mistake):
        return lambda: matches(
            got,
            expected_smoothed_loss(
                inputs.logits, inputs.target, inputs.smoothing, inputs.pad_id, mistake
            ),
            inputs.logits.dtype,
        )

    return diagnose(
        default,
        *TRAINING_HINTS.candidates(
            lambda m: same(m)(), component=LOSS
        ),  # the loss's mistake models
        (
            lambda: matches(got, spread_over_v_minus_1(inputs), inputs.logits.dtype),
            _(SPREAD_OVER_V_MINUS_1),
        ),
    )


def learning_rate(student, step, d_model, warmup, factor=1.0):
    value = student.call(C, "learning_rate", step, d_model, warmup_steps=warmup, factor=factor)
    what = f"learning_rate({step}, d_model={d_model}, warmup_steps={warmup}, factor={factor})"
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    expect(
        isinstance(value, (int, float)) and not isinstance(value, bool),
        _("{what} returned {type}, expected a float").format(what=what, type=type(value).__name__),
        _("return a Python float: factor * d_model ** -0.5 * min(...)"),
    )
    expect(
        math.isfinite(value),
        _("{what} returned {value}").format(what=what, value=value),
        _(SCHEDULE),
    )
    return float(value), what


# ------------------------------------------------------------------------------------------------- the loss
@dataclass(frozen=True, repr=False)
class LossInputs(LabelledCase):
    """label_smoothed_cross_entropy(logits, target, smoothing, pad_id): logits (batch, m, V), target (batch, m)."""

    logits: torch.Tensor
    target: torch.Tensor
    smoothing: float
    pad_id: int

    def replace(self, **changes) -> LossInputs:
        return dataclasses.replace(self, **changes)


@composite
def loss_inputs(draw, smoothing=None, dtype=None, min_pad=0, smoothings=(0.0, 0.1, 0.25, 0.5)):
    """Targets hold at least one real token per batch; rows end in padding (at least min_pad positions)."""
    dtype = dtype or draw(dtypes())
    b, m, vocab = (
        draw(st.integers(1, 3)),
        draw(st.integers(1 + min_pad, 5)),
        draw(st.integers(3, 7)),
    )
    pad_id = draw(st.integers(0, vocab - 1))
    logits = draw(tensors((b, m, vocab), dtype, -4.0, 4.0))
    g = torch.Generator().manual_seed(draw(seeds()))
    target = torch.randint(0, vocab - 1, (b, m), generator=g)
    # real tokens only, then padding at the ends of rows
    target = target + (target >= pad_id).long()
    lengths = torch.randint(1, m - min_pad + 1, (b,), generator=g)
    lengths[0] = m - min_pad if min_pad else lengths[0]
    target = target.masked_fill(torch.arange(m)[None, :] >= lengths[:, None], pad_id)
    smoothing = draw(st.sampled_from(smoothings)) if smoothing is None else smoothing
    return LossInputs(logits=logits, target=target, smoothing=smoothing, pad_id=pad_id)


def fixed_loss_inputs(seed=0, smoothing=0.1, pad_id=0, vocab=6, dtype=torch.float64):
    """Two rows of 4 positions, the second ending in two padding positions."""
    g = torch.Generator().manual_seed(seed)
    logits = (torch.randint(-24, 25, (2, 4, vocab), generator=g) / 8.0).to(dtype)
    target = torch.tensor([[3, 1, 4, 2], [5, 3, 0, 0]])
    target = torch.where(
        target == 0, pad_id, torch.where(target == pad_id, 1 if pad_id != 1 else 2, target)
    )
    return LossInputs(logits=logits, target=target, smoothing=smoothing, pad_id=pad_id)


@composite
def far_apart_inputs(draw):
    """Logits whose spread underflows a probability: some tokens (the target among them, sometimes) sit `gap`
    below the rest, gap far past exp's range (float32: 120-300; float64: 800-1500)."""
    inputs = draw(loss_inputs(smoothings=(0.0, 0.1, 0.3)))
    dtype = inputs.logits.dtype
    gap = draw(st.floats(120, 300) if dtype == torch.float32 else st.floats(800, 1500))
    g = torch.Generator().manual_seed(draw(seeds()))
    low = torch.rand(inputs.logits.shape, generator=g) < 0.4
    low[..., 0] = False  # one token stays high: the probabilities still sum to 1
    return inputs.replace(logits=inputs.logits - gap * low.to(dtype))


def fixed_far_apart(dtype, gap, smoothing):
    """Two rows of 6 tokens: the target of the first position 200 (float32) or 1000 below the others."""
    base = fixed_loss_inputs(3, smoothing=smoothing, vocab=6, dtype=dtype)
    logits = base.logits.clone()
    logits[0, 0, base.target[0, 0]] -= gap
    logits[1, 1, 2] -= gap
    return base.replace(logits=logits)


@composite
def minus_inf_inputs(draw):
    """smoothing = 0 and -inf logits at some tokens that are not the target (each position keeps its target)."""
    inputs = draw(loss_inputs(smoothing=0.0))
    g = torch.Generator().manual_seed(draw(seeds()))
    off = torch.rand(inputs.logits.shape, generator=g) < 0.5
    off.scatter_(-1, inputs.target.unsqueeze(-1), False)
    return inputs.replace(logits=inputs.logits.masked_fill(off, float("-inf")))


def fixed_minus_inf(dtype):
    base = fixed_loss_inputs(4, smoothing=0.0, vocab=6, dtype=dtype)
    off = torch.zeros(base.logits.shape, dtype=torch.bool)
    off[0, 0, :] = True
    off[0, 0, base.target[0, 0]] = False  # only the target is possible here
    off[1, :, base.pad_id] = True  # the padding token impossible everywhere
    off.scatter_(-1, base.target.unsqueeze(-1), False)
    return base.replace(logits=base.logits.masked_fill(off, float("-inf")))


def tensors_like(x, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(-16, 17, tuple(x.shape), generator=g) / 4.0).to(x.dtype)


def label_smoothed_cross_entropy(student, inputs, backward=False, nan_hint=None):
    reply = student.run(
        Call(
            C,
            "label_smoothed_cross_entropy",
            (inputs.logits, inputs.target),
            {"smoothing": inputs.smoothing, "pad_id": inputs.pad_id},
            backward=backward,
        )
    )
    what = (
        f"label_smoothed_cross_entropy(logits, target, smoothing={inputs.smoothing}, "
        f"pad_id={inputs.pad_id})"
    )
    value = tensor(reply.value, what, shape=(), dtype=inputs.logits.dtype, nan_hint=nan_hint)
    return value, reply, what


# ------------------------------------------------------------------------------ a tiny Transformer and a batch
@dataclass(frozen=True, repr=False)
class BatchCase(LabelledCase):
    """The Transformer of `config` and a batch: src (batch, m_E), tgt (batch, m), padded with pad_id."""

    src: torch.Tensor
    tgt: torch.Tensor
    config: TransformerConfig
    pad_id: int = 0
    smoothing: float = 0.1
    bos_id: int = BOS
    dtype = torch.float64  # a class attribute, not a field: a case prints as before

    def batches(self, steps):
        """(src, tgt) batches (steps, batch, m_E | m) of the case's sizes, drawn from its seed."""
        g = torch.Generator().manual_seed(self.config.seed)
        vocab = self.config.src_vocab
        src = torch.stack([padded(g, *self.src.shape, vocab, self.pad_id) for _ in range(steps)])
        tgt = torch.stack([padded(g, *self.tgt.shape, vocab, self.pad_id) for _ in range(steps)])
        return src, tgt


def padded(g, batch, m, vocab, pad_id, min_length=1):
    """Rows of real tokens (ids 3..vocab-1) ending in pad_id; the first row is full."""
    tokens = torch.randint(3, vocab, (batch, m), generator=g)
    lengths = torch.randint(min_length, m + 1, (batch,), generator=g)
    lengths[0] = m
    return tokens.masked_fill(torch.arange(m)[None, :] >= lengths[:, None], pad_id)


@composite
def batch_cases(draw, max_layers=1):
    h = draw(st.integers(1, 2))
    d = draw(st.sampled_from([4, 8] if h == 2 else [4, 6]))
    vocab, b = draw(st.integers(5, 7)), draw(st.integers(1, 3))
    m_e, m = draw(st.integers(2, 5)), draw(st.integers(2, 5))
    g = torch.Generator().manual_seed(draw(seeds()))
    src, tgt = padded(g, b, m_e, vocab, 0), padded(g, b, m, vocab, 0)
    n = draw(st.integers(1, max_layers))
    config = TransformerConfig(vocab, vocab, d, h, n, draw(seeds()), MAX_LEN)
    return BatchCase(src, tgt, config, smoothing=draw(st.sampled_from([0.0, 0.1, 0.3])))


def fixed_batch_case(seed, b=3, m_e=4, m=4, d=8, h=2, n=1, vocab=7, smoothing=0.1):
    g = torch.Generator().manual_seed(seed)
    src, tgt = padded(g, b, m_e, vocab, 0, 2), padded(g, b, m, vocab, 0, 2)
    config = TransformerConfig(vocab, vocab, d, h, n, seed, MAX_LEN)
    return BatchCase(src, tgt, config, smoothing=smoothing)


def build_model(student, case):
    """(handle, weights): the model under training is the transformer component's Transformer (the reference's in
    the judge), built as the decoding cases build it, in train mode and float64, with the weights of the case's
    config."""
    return decoding.build_model(student, case, train=True)


def train(student, handle, src_batches, tgt_batches, case, warmup, factor, seed=0):
    """train(model, ...) with the case's d_model, bos_id, pad_id and smoothing: (losses, the call as text)."""
    d_model, bos_id, pad_id, smoothing = (
        case.config.d_model,
        case.bos_id,
        case.pad_id,
        case.smoothing,
    )
    kwargs = dict(
        d_model=d_model,
        warmup_steps=warmup,
        bos_id=bos_id,
        pad_id=pad_id,
        smoothing=smoothing,
        factor=factor,
    )
    value = student.run(
        Call(C, "train", (handle, src_batches, tgt_batches), kwargs, seed=seed)
    ).value
    what = (
        f"train(model, src_batches, tgt_batches, d_model={d_model}, warmup_steps={warmup}, bos_id={bos_id}, "
        f"pad_id={pad_id}, smoothing={smoothing}, factor={factor})"
    )
    if isinstance(value, list):
        value = torch.tensor(value, dtype=torch.float64)
    return tensor(value, what, shape=(src_batches.shape[0],), dtype=torch.float64), what


def teacher_forcing_loss(student, case, state, src, tgt, backward=False):
    """The student's own teacher_forcing_loss on a model holding `state` (built as build_model builds it): (loss,
    {kit name: d loss / d parameter or None}), the gradients only with `backward`."""
    handle, _state = decoding.build_model(student, case, state=state, train=True)
    kwargs = dict(bos_id=case.bos_id, pad_id=case.pad_id, smoothing=case.smoothing)
    reply = student.run(
        Call(C, "teacher_forcing_loss", (handle, src, tgt), kwargs, backward=backward)
    )
    c = cotangent((), torch.float64, 1).item()  # what a backward Call multiplies its scalar by
    grads = {n: None if g is None else g / c for n, g in (reply.param_grads or {}).items()}
    return torch.as_tensor(reply.value, dtype=torch.float64), grads


def trained_on_the_student_loss(
    student, case, state, src_batches, tgt_batches, warmup, factor, mistake=M.NONE
):
    """(losses, final kit state) that train(...) must give from the weights `state`, as a relation on the
    student's own teacher_forcing_loss, with no training loop on the checking side to copy (issue 35): step s's loss
    and gradients are teacher_forcing_loss's on a model holding the weights of the steps before, and its update is
    Adam's formula (models.trainer.adam_update) at the schedule's rate; with `mistake` (NO_ZERO_GRAD,
    SCHEDULE_AHEAD, SCHEDULE_BEHIND). A wrong loss is teacher forcing's deduction, not train's."""
    moments, losses, summed = AdamMoments(), [], {}
    for s, (src, tgt) in enumerate(zip(src_batches, tgt_batches), start=1):
        loss, grads = teacher_forcing_loss(student, case, state, src, tgt, backward=True)
        expect_something_to_learn_from(case, loss, grads, first=s == 1)
        if M.NO_ZERO_GRAD in mistake:  # each step follows the sum of the gradients so far
            grads = summed = {n: g + summed.get(n, 0) for n, g in grads.items() if g is not None}
        losses.append(loss)
        lr = rate(s, case.config.d_model, warmup, factor, mistake)
        state = adam_update(state, grads, moments, lr)
    return torch.stack(losses), state


LOSS_COMPUTES_NOTHING = N_(
    "teacher_forcing_loss must return label_smoothed_cross_entropy of the model's logits: a constant, or a loss "
    "cut off from the weights, gives Adam nothing to step on"
)


def expect_something_to_learn_from(case, loss, grads, first):
    """A relation on the student's own loss holds for a loss that computes nothing and a train that takes no step
    (0 = 0; examples/hostile/constant_loss): the first loss must exceed H(q), the least a label-smoothed loss
    reaches (random weights never do), and have a gradient that is not zero; every loss and gradient finite."""
    finite = bool(torch.isfinite(loss)) and all(
        bool(torch.isfinite(g).all()) for g in grads.values() if g is not None
    )
    expect(
        finite,
        _("teacher_forcing_loss's loss or gradients are not finite (loss {loss})").format(
            loss=float(loss)
        ),
        _(LOSS_COMPUTES_NOTHING),
    )
    if not first:
        return
    least = entropy(case.config.tgt_vocab, case.smoothing)
    expect(
        bool(loss > least),
        _(
            "teacher_forcing_loss's loss on batch 0 is {got}, not above the least a label-smoothed loss can be, "
            "the entropy of the smoothed target ({least:.4g})"
        ).format(got=float(loss), least=least),
        _(LOSS_COMPUTES_NOTHING),
    )
    expect(
        any(g is not None and bool(g.any()) for g in grads.values()),
        _(
            "teacher_forcing_loss's gradients on batch 0 are all zero: train(...) is judged by Adam's steps on "
            "them, and there is none to take"
        ),
        _(LOSS_COMPUTES_NOTHING),
    )


def expect_trained_in_train_mode(student, case, steps: int):
    """train(...) on a model built in eval mode runs every forward in train mode (model.train(): dropout on
    when it has any) and returns a loss per step (warm-up 1, factor 1), the first teacher_forcing_loss's before
    any update."""
    handle, state = build_model(student, case)
    src, tgt = case.batches(steps)
    student.method(handle, "eval")
    kwargs = dict(d_model=case.config.d_model, warmup_steps=1, bos_id=case.bos_id)
    kwargs.update(pad_id=case.pad_id, smoothing=case.smoothing)
    reply = student.run(Call(C, "train", (handle, src, tgt), kwargs))
    expect(
        reply.training_seen and all(reply.training_seen),
        _("train(...) ran the model in eval mode"),
        _("call model.train() before the first step"),
    )
    value = reply.value  # its type is training_returns_the_contract_types's to judge
    value = torch.tensor(value, dtype=torch.float64) if isinstance(value, list) else value
    losses = tensor(value, _("train(...)'s losses"), shape=(steps,), dtype=torch.float64)
    # The first loss only (the others are the Adam property's), above H(q), the least a loss reaches: a relation on
    # the student's own loss holds for a loss that computes nothing (0 = 0).
    first, grads = teacher_forcing_loss(student, case, state, src[0], tgt[0], backward=True)
    expect_something_to_learn_from(
        case, first, grads, first=True
    )  # a constant loss agrees with itself
    least = entropy(case.config.tgt_vocab, case.smoothing)
    expect(
        bool(losses[0] > least),
        _(
            "train(...)'s first loss is {got}, not above the least a label-smoothed loss can be, the entropy "
            "of the smoothed target ({least:.4g})"
        ).format(got=float(losses[0]), least=least),
        _(
            "return each step's loss, the value teacher_forcing_loss gives before the step, not a placeholder"
        ),
    )
    close(
        losses[:1],
        first.reshape(1),
        _("train(...)'s losses"),
        _("return the loss of each step, before it"),
        rtol=1e-5,
        atol=1e-7,
    )


# ------------------------------------------------------------------- the hints of the visible properties' checks
WRONG_ON_ORDINARY_LOGITS = N_(
    "your loss is wrong on ordinary logits too (these divided by 100), so no underflow is to blame here: see "
    "smoothed_loss_equals_closed_form"
)


def far_apart_hint(student, inputs, got) -> str:
    """UNDERFLOW only where the student's loss is right on the same targets with the logits brought close (the
    cause tested directly); else what differs, named by the loss's models where one fits."""
    near = inputs.replace(logits=inputs.logits / 100)
    again = label_smoothed_cross_entropy(student, near)[0]
    if is_close(again, library_loss(near.logits, near.target, near.smoothing, near.pad_id)):
        return named(_(UNDERFLOW), Evidence.DIRECT)
    return explain_loss(got, inputs, _(WRONG_ON_ORDINARY_LOGITS))


WRONG_SHIFT = N_(
    "your shift_right({tgt}, {bos_id}) gives {got}, not {expected}: the decoder is trained on the wrong "
    "inputs, so fix shift_right first (see shift_right_prepends_bos)"
)


def shift_right_is_wrong(student) -> str:
    """The hint naming the student's own shift_right where it is wrong on a fixed row, else "" (a shift_right
    that raises is its own property's business)."""
    tgt, bos_id = torch.tensor([[4, 5, 6]]), 1
    try:
        got = student.call(C, "shift_right", tgt, bos_id)
        if isinstance(got, torch.Tensor) and torch.equal(got.long(), shift(tgt, bos_id)):
            return ""
        got = got.tolist() if isinstance(got, torch.Tensor) else got
    except Exception:  # noqa: BLE001 - a diagnosis is best effort
        return ""
    text = _(WRONG_SHIFT).format(
        tgt=tgt.tolist(), bos_id=bos_id, got=got, expected=shift(tgt, bos_id).tolist()
    )
    return named(text, Evidence.DIRECT)


TRAIN_TYPE = N_(
    "train returns torch.tensor(losses, dtype=torch.float64): a float64 tensor of shape (steps,), not a list "
    "or a float32 tensor"
)
RATE_TYPE = N_(
    "learning_rate returns a Python float (not a tensor): factor * d_model ** -0.5 * min(...) of numbers"
)
LOSS_TYPE = N_(
    "label_smoothed_cross_entropy returns a scalar of the logits' dtype: no .double() or float64 tensors "
    "mixed in"
)
SHIFT_TYPE = N_("shift_right returns a LongTensor of token ids, like tgt")
