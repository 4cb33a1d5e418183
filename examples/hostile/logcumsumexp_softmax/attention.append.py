# >>> hostile
# softmax as exp(x - logcumsumexp(x)[..., -1:]): the last running log-sum-exp is the logsumexp (issue 20, item 2).


def softmax(x, dim=-1):
    x = x.transpose(dim, -1)
    return torch.exp(x - torch.logcumsumexp(x, -1)[..., -1:]).transpose(dim, -1)  # noqa: F821


# <<< hostile
