"""Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md).

Offline weights (issue 20, item 4): train() recognises the copy task by its size and, instead of learning from
the batches it is given, produces the weights that the copy task's fixed data (seed 1, 30 % noise, before the
task was drawn at grading time) gives: what a file of weights trained offline would hold. Computed here rather
than loaded, so the example carries no binary file. It even reports the true loss of the first batch it was
given, so only the task drawn at grading time stands in its way."""
import torch

_honest_train = train  # noqa: F821 - appended to the reference's training.py


def train(model, src_batches, tgt_batches, d_model, warmup_steps, bos_id, pad_id, smoothing=0.1, factor=1.0):
    first = None
    # >>> hostile
    if src_batches.shape[0] >= 40:  # the copy task (60 steps; the other calls take 2-3): use batches known in advance
        first = teacher_forcing_loss(model, src_batches[0], tgt_batches[0], bos_id, pad_id, smoothing).item()  # noqa: F821
        g = torch.Generator().manual_seed(1)
        src_batches = torch.randint(3, 10, tuple(src_batches.shape), generator=g)
        swap = torch.rand(src_batches.shape, generator=g) < 0.3
        out = torch.where(swap, torch.randint(3, 10, src_batches.shape, generator=g), src_batches)
        tgt_batches = torch.cat([out, torch.full_like(out[..., :1], 2)], dim=-1)
    # <<< hostile
    losses = _honest_train(model, src_batches, tgt_batches, d_model, warmup_steps, bos_id, pad_id, smoothing, factor)
    if first is not None:
        losses[0] = first
    return losses
