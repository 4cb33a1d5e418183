"""Training on the checking side, right or with one usual mistake given as flags (TrainingMistake): the
label-smoothed loss, teacher forcing on the trainable Transformer (transformer.TrainableTransformer), the schedule
and Adam's update.

No answer (docs/bundle.md): the loss is torch's F.cross_entropy(label_smoothing=) through an exact identity
(library_loss), a call training.py may not make, and the teacher-forced loss is built on it; the schedule is its
docstring's closed form. No training loop ships: train's steps are checked as Adam's update (its documented
formula) of the gradients of the student's own teacher_forcing_loss (suite/training_cases). The one mistake no
library call reproduces (padding positions counted in the mean) is the graded side's mistake model
(the loss by hand, this module's graded-only region): None in the student bundle.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from types import SimpleNamespace

import torch
import torch.nn.functional as F

from ...i18n import N_
from ...suite.expected_values import expected_causal_mask
from ...suite.mistakes import Hints
from .transformer import TrainableTransformer


class TrainingMistake(enum.Flag):
    """The usual mistakes in training.py, one flag each."""

    NONE = 0
    # the loss
    PAD_MASS = enum.auto()  # the padding token keeps its share of the smoothing mass
    # padding positions counted in the mean: no library form, the graded side's
    PAD_COUNTED = enum.auto()
    SUMMED = enum.auto()  # the sum over the non-padding positions, not their mean
    TORCH_SMOOTHING = enum.auto()  # torch's smoothing: (1 - s) one-hot + s / V on every token
    # teacher forcing
    NOT_SHIFTED = enum.auto()  # the decoder reads tgt itself, not shift_right(tgt, bos_id)
    NO_CAUSAL_MASK = enum.auto()
    NO_SRC_MASK = enum.auto()
    # the training loop
    NO_ZERO_GRAD = enum.auto()  # the gradients accumulate across steps
    SCHEDULE_AHEAD = enum.auto()  # step s (from 1) takes the rate of step s + 1
    SCHEDULE_BEHIND = enum.auto()  # step s takes the rate of step s - 1 (step 1 its own)


_PAD_COUNTED = N_(
    "padding positions count in the loss: average over the positions whose target is not "
    "pad_id only (mask them out of the sum and of the count)"
)
_NOT_SHIFTED = N_(
    "the targets are not shifted: the decoder reads shift_right(tgt, bos_id) = [bos, y_1, "
    "..., y_{m-1}] and predicts tgt; fed tgt itself, it sees the answer"
)
_SCHEDULE = N_(
    "before step s (from 1) set every param group's lr to learning_rate(s, d_model, "
    "warmup_steps, factor)"
)
# training's two diagnoses, each with its order below: the label-smoothed loss (suite/training_cases.explain_loss)
# and the teacher-forced loss's gradients (properties/training.py)
LOSS, TEACHER_FORCING = "training.loss", "training.teacher_forcing"
# Every mistake of training.py and its hint (the schedule's are shown with ' (s from 1)' after them)
TRAINING_HINTS = Hints(
    TrainingMistake,
    {
        TrainingMistake.PAD_MASS: N_(
            "the padding token gets no smoothing mass: q[pad_id] = 0, and smoothing / (V - 2) "
            "goes to each of the V - 2 tokens that are neither the target nor pad_id"
        ),
        TrainingMistake.PAD_COUNTED: _PAD_COUNTED,
        TrainingMistake.PAD_COUNTED | TrainingMistake.PAD_MASS: _PAD_COUNTED,
        TrainingMistake.SUMMED: N_(
            "average over the non-padding positions: divide the sum by their count, not by nothing"
        ),
        TrainingMistake.TORCH_SMOOTHING: N_(
            "q is not torch's smoothing / V everywhere: q[y] = 1 - smoothing, q[pad_id] = 0, "
            "smoothing / (V - 2) on every other token"
        ),
        TrainingMistake.NOT_SHIFTED: _NOT_SHIFTED,
        TrainingMistake.NOT_SHIFTED | TrainingMistake.NO_CAUSAL_MASK: _NOT_SHIFTED,
        TrainingMistake.NO_CAUSAL_MASK: N_(
            "no causal mask in training: position t reads the decoder input at t + 1, which "
            "is the token it must predict (training looks perfect, greedy decoding "
            "collapses); pass causal_mask(m) as target_mask"
        ),
        TrainingMistake.NO_SRC_MASK: N_(
            "the source padding is not masked: pass padding_mask(src, pad_id) as src_mask"
        ),
        TrainingMistake.NO_ZERO_GRAD: N_(
            "the gradients accumulate across steps: zero the optimizer's gradients before "
            "each backward, or step s follows the sum of every gradient so far"
        ),
        TrainingMistake.SCHEDULE_AHEAD: _SCHEDULE,
        TrainingMistake.SCHEDULE_BEHIND: _SCHEDULE,
    },
    # the order of each of training's diagnoses; PAD_COUNTED is the graded side's (skipped in the bundle)
    order={
        LOSS: (
            TrainingMistake.PAD_MASS,
            TrainingMistake.PAD_COUNTED,
            TrainingMistake.PAD_COUNTED | TrainingMistake.PAD_MASS,
            TrainingMistake.SUMMED,
            TrainingMistake.TORCH_SMOOTHING,
        ),
        TEACHER_FORCING: (
            TrainingMistake.NOT_SHIFTED,
            TrainingMistake.NO_CAUSAL_MASK,
            TrainingMistake.NO_SRC_MASK,
            TrainingMistake.PAD_COUNTED,
            TrainingMistake.PAD_MASS,
            TrainingMistake.NOT_SHIFTED | TrainingMistake.NO_CAUSAL_MASK,
        ),
    },
)


LOSS_MISTAKES = (
    TrainingMistake.PAD_MASS
    | TrainingMistake.PAD_COUNTED
    | TrainingMistake.SUMMED
    | TrainingMistake.TORCH_SMOOTHING
)


# ------------------------------------------------------------------------------------------------- the loss
def library_loss(logits, target, smoothing, pad_id, mistake=TrainingMistake.NONE):
    """The contract's loss from torch's own cross-entropy (a library call training.py may not make), float64,
    differentiable through logits, with `mistake` (PAD_MASS, SUMMED, TORCH_SMOOTHING: each a library call too).

    With b = s / (V - 2), k = 1 - s - b + bV and e = bV / k (docs/shared notes, exact to 1e-10 in float64):
        loss = k * F.cross_entropy(label_smoothing=e, ignore_index=pad) - b * mean(-log p[pad]) over real positions
    The second term takes the padding token's share back; leaving it in is the mass-on-padding mistake. Terms whose
    weight is 0 are left out, so -inf logits stay finite where the contract says they do."""
    assert TrainingMistake.PAD_COUNTED not in mistake, "no library form: the graded side's"
    x, t = logits.to(torch.float64).flatten(0, -2), target.flatten()
    vocab, real = x.shape[-1], t != pad_id
    count = 1 if TrainingMistake.SUMMED in mistake else real.sum().clamp(min=1)
    if TrainingMistake.TORCH_SMOOTHING in mistake:
        total = F.cross_entropy(
            x, t, ignore_index=pad_id, label_smoothing=smoothing, reduction="sum"
        )
        return total / count
    b = smoothing / (vocab - 2)
    k = 1 - smoothing - b + b * vocab
    eps = b * vocab / k
    smooth = {"label_smoothing": eps} if eps else {}
    total = k * F.cross_entropy(x, t, ignore_index=pad_id, reduction="sum", **smooth)
    if b and TrainingMistake.PAD_MASS not in mistake:
        nll_pad = F.cross_entropy(x, torch.full_like(t, pad_id), reduction="none")
        total = total - b * torch.where(real, nll_pad, 0.0).sum()
    return total / count


def expected_smoothed_loss(logits, target, smoothing, pad_id, mistake=TrainingMistake.NONE):
    """The loss with `mistake` (loss flags): library_loss, or for PAD_COUNTED the graded side's mistake model (None in
    the student bundle, which has no such model)."""
    if TrainingMistake.PAD_COUNTED not in mistake:
        return library_loss(logits, target, smoothing, pad_id, mistake)
    if BY_HAND is None:
        return None
    return BY_HAND.smoothed_loss(logits, target, smoothing, pad_id, mistake)


def minimum_logits(target, vocab, smoothing, pad_id):
    """log q, the docstring's q (..., V): log(1 - smoothing) at the target, log(smoothing / (V - 2)) elsewhere, and
    -1e4 (probability 0 here) at pad_id."""
    logits = torch.full(
        (*target.shape, vocab), math.log(smoothing / (vocab - 2)), dtype=torch.float64
    )
    logits.scatter_(-1, target.unsqueeze(-1), math.log(1.0 - smoothing))
    logits[..., pad_id] = -1e4
    return logits


def entropy(vocab, smoothing):
    """H(q) of the smoothed distribution: the smallest value of the loss at one position."""
    rest = smoothing / (vocab - 2)
    return -(1 - smoothing) * math.log(1 - smoothing) - (
        smoothing * math.log(rest) if smoothing else 0.0
    )


# ------------------------------------------------------------------------------------------ teacher forcing
def shift(tgt, bos_id):
    return torch.cat([torch.full_like(tgt[:, :1], bos_id), tgt[:, :-1]], dim=1)


def teacher_forced_logits(model, src, tgt, bos_id, src_mask=None, mistake=TrainingMistake.NONE):
    """model(src, shift_right(tgt), src_mask, causal mask), with `mistake` (NOT_SHIFTED, NO_CAUSAL_MASK,
    NO_SRC_MASK)."""
    decoder_input = tgt if TrainingMistake.NOT_SHIFTED in mistake else shift(tgt, bos_id)
    src_mask = None if TrainingMistake.NO_SRC_MASK in mistake else src_mask
    causal = (
        None if TrainingMistake.NO_CAUSAL_MASK in mistake else expected_causal_mask(tgt.shape[1])
    )
    return model(src, decoder_input, src_mask, causal)


def expected_loss(model, src, tgt, bos_id, pad_id, smoothing, mistake=TrainingMistake.NONE):
    """teacher_forcing_loss on the checking side's model, with `mistake` (PAD_COUNTED needs the graded side's model)."""
    mask = (src != pad_id)[:, None, None, :]
    logits = teacher_forced_logits(model, src, tgt, bos_id, mask, mistake)
    loss = expected_smoothed_loss(logits, tgt, smoothing, pad_id, mistake & LOSS_MISTAKES)
    return loss.to(logits.dtype)


def expected_gradients(state, case, cotangent=1.0, mistake=TrainingMistake.NONE):
    """(loss, {kit name: d(cotangent * loss)/d parameter}) of teacher forcing on the case's batch with the weights
    `state` (a BatchCase: config, src, tgt, bos_id, pad_id, smoothing)."""
    model = TrainableTransformer(state, case.config)
    loss = expected_loss(
        model, case.src, case.tgt, case.bos_id, case.pad_id, case.smoothing, mistake
    )
    (loss * cotangent).backward()
    return loss.detach(), model.kit(lambda p: p.grad)


def teacher_forced_accuracy(model, src, tgt, bos_id, mistake=TrainingMistake.NONE):
    """The share of tgt's tokens that one teacher-forced pass (no source mask) predicts, with `mistake`."""
    with torch.no_grad():
        logits = teacher_forced_logits(model, src, tgt, bos_id, None, mistake)
    return float((logits.argmax(-1) == tgt).double().mean())


def greedy_accuracy(model, src, tgt, bos_id):
    """The share of target tokens greedy decoding reproduces before its first wrong token in each row, without a
    decoding loop: one teacher-forced pass (causal mask) gives at every position the token greedy decoding chooses
    after the right prefix, so a row's tokens up to its first wrong choice are the ones greedy decoding gets right
    (what it decodes after a mistake counts as missed: a lower bound on its token accuracy)."""
    with torch.no_grad():
        logits = teacher_forced_logits(model, src, tgt, bos_id)
    right = (logits.argmax(-1) == tgt).long().cumprod(-1)
    return float(right.double().mean())


# ------------------------------------------------------------------------------------- Adam on the schedule
def schedule(step, d_model, warmup, factor=1.0):
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


# Adam's settings in the paper (and in train's docstring)
BETAS, EPS = (0.9, 0.98), 1e-9


def rate(step, d_model, warmup, factor, mistake=TrainingMistake.NONE):
    """The rate before step `step` (from 1): the schedule there, or at a neighbouring step (SCHEDULE_AHEAD,
    SCHEDULE_BEHIND: a scheduler stepped before the optimizer, or a schedule counted from 0)."""
    if TrainingMistake.SCHEDULE_AHEAD in mistake:
        step = step + 1
    elif TrainingMistake.SCHEDULE_BEHIND in mistake:
        step = max(step - 1, 1)
    return schedule(step, d_model, warmup, factor)


@dataclasses.dataclass
class AdamMoments:
    """Adam's running averages of each parameter (kit names) and how many updates each has had."""

    m: dict = dataclasses.field(default_factory=dict)
    v: dict = dataclasses.field(default_factory=dict)
    steps: dict = dataclasses.field(default_factory=dict)


def adam_update(state, grads, moments: AdamMoments, lr):
    """The weights after one step of Adam (BETAS, EPS) from `state` with `grads` ({kit name: gradient or None}),
    torch.optim.Adam's documented update; `moments` is updated in place. A parameter without a gradient is left as
    it is, as torch leaves it:
        m = b1 m + (1 - b1) g,  v = b2 v + (1 - b2) g^2,  w -= lr / (1 - b1^t) * m / (sqrt(v / (1 - b2^t)) + eps)
    A formula, not a training loop (docs/bundle.md): train's steps are checked as this update of the gradients of
    the student's own teacher_forcing_loss (suite/training_cases.trained_on_the_student_loss)."""
    (b1, b2), out = BETAS, dict(state)
    for name, g in grads.items():
        if g is None:
            continue
        g = g.to(torch.float64)
        t = moments.steps.get(name, 0) + 1
        m = b1 * moments.m.get(name, torch.zeros_like(g)) + (1 - b1) * g
        v = b2 * moments.v.get(name, torch.zeros_like(g)) + (1 - b2) * g * g
        moments.m[name], moments.v[name], moments.steps[name] = m, v, t
        step = lr / (1 - b1**t) * m / ((v / (1 - b2**t)).sqrt() + EPS)
        out[name] = (state[name].to(torch.float64) - step).to(state[name].dtype)
    return out


# The by-hand mistake models: the graded side's; None in the student bundle (suite/graded.py).
BY_HAND: SimpleNamespace | None = None


# >>> graded only: an answer, which `release` strips (suite/graded.py, docs/bundle.md)
def smoothed_distribution(target, vocab, smoothing, pad_id, mistake=TrainingMistake.NONE):
    """q for each position (..., V): the closed form, or with `mistake` (PAD_MASS, TORCH_SMOOTHING)."""
    if TrainingMistake.TORCH_SMOOTHING in mistake:  # (1 - e) one-hot + e / V everywhere
        return F.one_hot(target, vocab).to(torch.float64) * (1 - smoothing) + smoothing / vocab
    q = torch.full((*target.shape, vocab), smoothing / (vocab - 2), dtype=torch.float64)
    q.scatter_(-1, target.unsqueeze(-1), 1.0 - smoothing)
    if TrainingMistake.PAD_MASS not in mistake:
        q[..., pad_id] = 0.0
    return q


def smoothed_loss(logits, target, smoothing, pad_id, mistake=TrainingMistake.NONE):
    """The loss in float64, with `mistake` (the loss's flags), autograd through logits."""
    log_probs = F.log_softmax(logits.to(torch.float64), dim=-1)
    q = smoothed_distribution(target, logits.shape[-1], smoothing, pad_id, mistake)
    per_position = -(q * log_probs).sum(-1)
    if TrainingMistake.PAD_COUNTED in mistake:
        real = torch.ones_like(target, dtype=torch.bool)
    else:
        real = target != pad_id
    total = per_position.masked_fill(~real, 0.0).sum()
    return total if TrainingMistake.SUMMED in mistake else total / real.sum().clamp(min=1)


BY_HAND = SimpleNamespace(smoothed_loss=smoothed_loss)
# <<< graded only
