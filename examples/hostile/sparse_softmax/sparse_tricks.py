"""A helper module of the submission, written to attack the judge: the block between the "hostile" markers
is the attack (docs/judge.md). torch.sparse.softmax (ATen _sparse_softmax) was on no list; it is looked up
by a computed name."""
import torch

# >>> hostile
sparse_softmax = torch.sparse.__dict__["soft" + "max"]


def softmax_sparse(x, dim):
    return sparse_softmax(x.to_sparse(), dim).to_dense()
# <<< hostile
