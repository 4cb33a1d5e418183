# >>> hostile
# softmax as the gradient of torch.logsumexp.
from .equivalents import softmax_as_logsumexp_grad


def softmax(x, dim=-1):
    return softmax_as_logsumexp_grad(x, dim)
# <<< hostile
