# >>> hostile
# softmax as torch.sparse.softmax on a sparse copy.
from .sparse_tricks import softmax_sparse


def softmax(x, dim=-1):
    return softmax_sparse(x, dim)
# <<< hostile
