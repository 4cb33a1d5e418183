# >>> hostile
# softmax as exp(x - logsumexp) with the logsumexp folded from torch.logaddexp, a two-way log-sum-exp.
import functools


def softmax(x, dim=-1):
    lse = functools.reduce(torch.logaddexp, x.unbind(dim))  # noqa: F821
    return torch.exp(x - lse.unsqueeze(dim))  # noqa: F821


# <<< hostile
