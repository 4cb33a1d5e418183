"""Softmax with a temperature: softmax(x / T). A small T sharpens the distribution, a large one flattens it.

(A toy component: the worked example of docs/extending.md, added to a copy of the kit by
tests/test_components.py. It is not part of the course.)
"""

import torch


def softmax_with_temperature(x, temperature=1.0, dim=-1):
    """softmax(x / temperature) along dim, by hand and numerically stable.

    Args:
        x: float tensor of any shape.
        temperature: a positive number.
        dim: the dim that sums to 1.

    Returns:
        Tensor of x's shape and dtype: non-negative, summing to 1 along dim.
    """
    ### BEGIN SOLUTION
    z = x / temperature
    z = z - z.amax(dim=dim, keepdim=True)
    e = torch.exp(z)
    return e / e.sum(dim=dim, keepdim=True)
    ### END SOLUTION
