# >>> hostile
# The label-smoothed loss from F.poisson_nll_loss(log_softmax(x), q, log_input=True): per position it sums
# exp(log p) - q log p = 1 + the smoothed cross-entropy.


def label_smoothed_cross_entropy(logits, target, smoothing=0.1, pad_id=0):
    true_dist = torch.full_like(logits, smoothing / (logits.size(-1) - 2))  # noqa: F821
    true_dist.scatter_(-1, target.unsqueeze(-1), 1.0 - smoothing)
    true_dist[..., pad_id] = 0.0
    log_probs = torch.log_softmax(logits, -1)  # noqa: F821
    terms = torch.nn.functional.poisson_nll_loss(
        log_probs, true_dist, log_input=True, reduction="none"
    )  # noqa: F821
    per_position = terms.sum(-1) - 1.0
    real = target != pad_id
    return per_position.masked_fill(~real, 0.0).sum() / real.sum().clamp(min=1)


# <<< hostile
