"""A helper module of the submission, written to attack the judge: the block between the "hostile" markers
is the attack (docs/judge.md). Library functions that do the exercise under another name: LayerNorm as a
group norm with one group, softmax as the gradient of logsumexp."""
import torch
import torch.nn.functional as F

# >>> hostile
def layer_norm_as_group_norm(x, weight, bias, eps):
    d = x.shape[-1]
    return F.group_norm(x.reshape(-1, d), 1, weight, bias, eps).reshape(x.shape)


def softmax_as_logsumexp_grad(x, dim):
    with torch.enable_grad():
        z = x if x.requires_grad else x.detach().requires_grad_(True)
        (weights,) = torch.autograd.grad(torch.logsumexp(z, dim).sum(), z, create_graph=x.requires_grad)
    return weights
# <<< hostile
