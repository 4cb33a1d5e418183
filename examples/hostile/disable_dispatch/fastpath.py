"""A helper module of the submission (not a component), written to attack the judge: the block between the
"hostile" markers is the attack (docs/judge.md). Each library call runs with torch's Python dispatch turned
off, three ways, so that a TorchDispatchMode cannot see it."""
import torch
import torch.nn.functional as F

# >>> hostile
from torch.utils._python_dispatch import _disable_current_modes


def softmax_unseen(x, dim):
    with torch._C._DisableTorchDispatch():
        return torch.softmax(x, dim)


def attention_unseen(query, key, value, mask=None):
    with _disable_current_modes():
        output = F.scaled_dot_product_attention(query, key, value, attn_mask=mask)
    scores = query @ key.transpose(-2, -1) / query.size(-1) ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return output, softmax_unseen(scores, -1)


def layer_norm_unseen(x, weight, bias, eps):
    python = torch._C.DispatchKeySet(torch._C.DispatchKey.Python)
    with torch._C._ExcludeDispatchKeyGuard(python):
        return F.layer_norm(x, x.shape[-1:], weight, bias, eps)
# <<< hostile
