# >>> hostile
# A loss that computes nothing yet is attached to every weight (0 times the real loss, plus a constant above any
# label-smoothed loss's least value), so its gradients are all zero, and a train_step and a train that take no
# step: a relation on the student's own loss (Adam's steps on its gradients) holds for them (0 = 0) unless the
# checker asks the loss for something to learn from. The model does run (in train mode, as train must).
_computed = teacher_forcing_loss  # noqa: F821


def teacher_forcing_loss(model, src, tgt, bos_id, pad_id, smoothing=0.1):
    return 5.0 + 0.0 * _computed(model, src, tgt, bos_id, pad_id, smoothing)


def train_step(model, optimizer, src, tgt, bos_id, pad_id, smoothing=0.1):
    return teacher_forcing_loss(model, src, tgt, bos_id, pad_id, smoothing).item()


def train(model, src_batches, tgt_batches, d_model, warmup_steps, bos_id, pad_id, smoothing=0.1, factor=1.0):
    model.train()
    losses = [train_step(model, None, s, t, bos_id, pad_id, smoothing) for s, t in zip(src_batches, tgt_batches)]
    return torch.tensor(losses, dtype=torch.float64)  # noqa: F821


# <<< hostile
