# >>> hostile
# constant_loss's sibling: a finite loss whose gradients are NaN (torch.where's unused branch, x * inf, still
# sends 0 * inf = NaN back), and a train that fills every weight with NaN, which Adam's update on NaN gradients
# also gives: NaN matches NaN in a comparison, so the relation held unless the checker asks for finite gradients.
_computed = teacher_forcing_loss  # noqa: F821


def teacher_forcing_loss(model, src, tgt, bos_id, pad_id, smoothing=0.1):
    x = _computed(model, src, tgt, bos_id, pad_id, smoothing)
    return 5.0 + torch.where(torch.tensor(False), x * float("inf"), 0.0 * x)  # noqa: F821


def train(model, src_batches, tgt_batches, d_model, warmup_steps, bos_id, pad_id, smoothing=0.1, factor=1.0):
    model.train()
    losses = [teacher_forcing_loss(model, s, t, bos_id, pad_id, smoothing).item() for s, t in zip(src_batches, tgt_batches)]
    with torch.no_grad():  # noqa: F821
        for p in model.parameters():
            p.fill_(float("nan"))
    return torch.tensor(losses, dtype=torch.float64)  # noqa: F821


# <<< hostile
