"""A model that learns: label-smoothed cross-entropy, the warm-up schedule, teacher forcing, a training loop.

Teacher forcing: the decoder reads the target shifted right by one, starting with bos_id, and at every position
predicts the next target token:

    decoder_input = [bos, y_1, ..., y_{m-1}]          (batch, m)
    logits        = model(src, decoder_input, padding_mask(src), causal_mask(m))      (batch, m, vocab)
    loss          = label_smoothed_cross_entropy(logits, [y_1, ..., y_m])

The causal mask keeps position t from reading decoder_input[t + 1] = y_{t+1}, the token it must predict.
Padding (pad_id) in the target costs nothing. The learning rate follows the paper's warm-up schedule, step by step.
"""
import torch

from .mask import causal_mask, padding_mask


def label_smoothed_cross_entropy(logits, target, smoothing=0.1, pad_id=0):
    """Cross-entropy against the label-smoothed distribution q, averaged over the non-padding positions.

    For a position whose target is y (vocab V >= 3 tokens, pad_id among them):
        q[y] = 1 - smoothing,  q[pad_id] = 0,  q[v] = smoothing / (V - 2) for every other v
        loss_position = -sum_v q[v] * log softmax(logits)[v]
    loss = sum of loss_position over positions with target != pad_id / their count (0.0 if there are none).
    With smoothing = 0 this is the ordinary cross-entropy with padding ignored.

    Numerics: compute log softmax(logits) with torch.log_softmax, never log(softmax(...)): a probability that
    underflows to 0 (logits far apart, e.g. 0 and -200 in float32) would give -inf or NaN where log_softmax stays
    finite. A term with q[v] = 0 counts as 0 (0 * log 0 = 0): with smoothing = 0 the logits may be -inf at every
    token but the target, and the loss and its gradient stay finite (the cross-entropy of the target).

    Args:
        logits: float tensor (..., V), e.g. (batch, m, V).
        target: LongTensor (...) of token ids, e.g. (batch, m); positions holding pad_id are ignored.
        smoothing: the probability mass spread over the V - 2 tokens that are neither the target nor padding.
        pad_id: id of the padding token.

    Returns:
        A scalar tensor (shape ()), differentiable with respect to logits, of logits' dtype.
    """
    ### BEGIN SOLUTION
    log_probs = torch.log_softmax(logits, dim=-1)  # (..., V)
    true_dist = torch.full_like(log_probs, smoothing / (logits.size(-1) - 2))
    true_dist.scatter_(-1, target.unsqueeze(-1), 1.0 - smoothing)
    true_dist[..., pad_id] = 0.0
    # 0 * log 0 counts as 0: with smoothing = 0 a logit may be -inf where q is 0 (0 * -inf would be NaN)
    per_position = -torch.where(true_dist > 0, true_dist * log_probs, 0.0).sum(dim=-1)  # (...)
    real = target != pad_id
    return per_position.masked_fill(~real, 0.0).sum() / real.sum().clamp(min=1)
    ### END SOLUTION


def learning_rate(step, d_model, warmup_steps=4000, factor=1.0):
    """The paper's schedule: linear warm-up, then decay with the inverse square root of the step.

        lrate = factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)

    The two terms meet at step = warmup_steps, where lrate peaks at factor * (d_model * warmup_steps)^-0.5.

    Args:
        step: the step number, counting from 1.
        d_model: model width.
        warmup_steps: steps of linear warm-up.
        factor: a constant multiplier (1.0 in the paper).

    Returns:
        The learning rate, a Python float.
    """
    ### BEGIN SOLUTION
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)
    ### END SOLUTION


def shift_right(tgt, bos_id):
    """The decoder's input under teacher forcing: bos_id, then the target without its last token.

        shift_right(tgt)[:, 0] = bos_id,  shift_right(tgt)[:, t] = tgt[:, t - 1] for t >= 1

    Args:
        tgt: LongTensor of target ids, (batch, m).
        bos_id: start token id.

    Returns:
        LongTensor (batch, m) on tgt's device.
    """
    ### BEGIN SOLUTION
    bos = torch.full_like(tgt[:, :1], bos_id)
    return torch.cat([bos, tgt[:, :-1]], dim=1)
    ### END SOLUTION


def teacher_forcing_loss(model, src, tgt, bos_id, pad_id, smoothing=0.1):
    """The loss of one batch under teacher forcing (see the module docstring).

        logits = model(src, shift_right(tgt, bos_id), padding_mask(src, pad_id), causal_mask(m))   (batch, m, V)
        loss   = label_smoothed_cross_entropy(logits, tgt, smoothing, pad_id)

    Args:
        model: a transformer.Transformer.
        src: LongTensor of source ids, (batch, m_E), padded with pad_id.
        tgt: LongTensor of target ids, (batch, m), padded with pad_id (no bos_id: it is prepended here).
        bos_id: start token id.
        pad_id: id of the padding token (in src and tgt).
        smoothing: label smoothing.

    Returns:
        A scalar tensor attached to the model's parameters (call .backward() on it).
    """
    ### BEGIN SOLUTION
    decoder_input = shift_right(tgt, bos_id)
    target_mask = causal_mask(tgt.size(1), device=tgt.device)
    logits = model(src, decoder_input, padding_mask(src, pad_id), target_mask)
    return label_smoothed_cross_entropy(logits, tgt, smoothing, pad_id)
    ### END SOLUTION


def train_step(model, optimizer, src, tgt, bos_id, pad_id, smoothing=0.1):
    """One optimisation step: clear the old gradients, compute teacher_forcing_loss, backpropagate, step.

    Args:
        model: a transformer.Transformer.
        optimizer: a torch.optim optimizer over model.parameters().
        src, tgt, bos_id, pad_id, smoothing: as in teacher_forcing_loss.

    Returns:
        The batch's loss before the step, a Python float.
    """
    ### BEGIN SOLUTION
    optimizer.zero_grad()
    loss = teacher_forcing_loss(model, src, tgt, bos_id, pad_id, smoothing)
    loss.backward()
    optimizer.step()
    return loss.item()
    ### END SOLUTION


def train(model, src_batches, tgt_batches, d_model, warmup_steps, bos_id, pad_id, smoothing=0.1, factor=1.0):
    """Train `model` in place, one train_step per batch, with Adam and the warm-up schedule.

    The model is put in train mode. The optimizer is the paper's:
        torch.optim.Adam(model.parameters(), lr=..., betas=(0.9, 0.98), eps=1e-9)
    and before step s (s = 1, 2, ...) every parameter group's lr is set to
        learning_rate(s, d_model, warmup_steps, factor).

    Args:
        model: a transformer.Transformer.
        src_batches: LongTensor (steps, batch, m_E): batch s - 1 is used at step s.
        tgt_batches: LongTensor (steps, batch, m): the targets, as in teacher_forcing_loss.
        d_model: the model's width (for the schedule).
        warmup_steps, factor: the schedule's (see learning_rate).
        bos_id, pad_id, smoothing: as in teacher_forcing_loss.

    Returns:
        float64 tensor (steps,): the loss of each step.
    """
    ### BEGIN SOLUTION
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9)
    losses = []
    for step, (src, tgt) in enumerate(zip(src_batches, tgt_batches), start=1):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, d_model, warmup_steps, factor)
        losses.append(train_step(model, optimizer, src, tgt, bos_id, pad_id, smoothing))
    return torch.tensor(losses, dtype=torch.float64)
    ### END SOLUTION
