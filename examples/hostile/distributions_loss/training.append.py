# >>> hostile
# The label-smoothed loss as torch.distributions.kl_divergence(q, p) + entropy(q): the cross-entropy of q against
# the model's distribution, with no loss written by hand (issue 20, item 2).
from torch.distributions import Categorical, kl_divergence


def label_smoothed_cross_entropy(logits, target, smoothing=0.1, pad_id=0):
    true_dist = torch.full_like(logits, smoothing / (logits.size(-1) - 2))  # noqa: F821
    true_dist.scatter_(-1, target.unsqueeze(-1), 1.0 - smoothing)
    true_dist[..., pad_id] = 0.0
    q, p = Categorical(probs=true_dist), Categorical(logits=logits)
    per_position = kl_divergence(q, p) + q.entropy()
    real = target != pad_id
    return per_position.masked_fill(~real, 0.0).sum() / real.sum().clamp(min=1)


# <<< hostile
