"""Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md).

No cache at all (issue 20, item 3): every step encodes the source again and recomputes every position so far
(the cache's shapes are filled from hooks, for show). Its products are done in NumPy, out of torch's dispatcher."""
import copy
import contextlib

import numpy
import torch


class CachedDecoder(CachedDecoder):  # noqa: F821 - appended to the reference's kv_cache.py
    def start(self, src, src_mask=None):
        self.src, self.seen = src, src[:, :0]
        memory = super().start(src, src_mask)
        return memory

    def step(self, tokens):
        n = tokens.size(1)
        self.seen = torch.cat([self.seen, tokens], dim=1)
        captured = {}
        hooks = []
        for i, layer in enumerate(self.model.decoder.layers):
            for name, module in (("w_k", layer.self_attention.w_k), ("w_v", layer.self_attention.w_v)):
                hook = lambda mod, args, out, key=(i, name): captured.__setitem__(key, out)  # noqa: E731
                hooks.append(module.register_forward_hook(hook))
        try:
            with hidden():
                memory = self.model.encode(self.src, self.memory_mask)
                m = self.seen.size(1)
                x = self.model.decode(self.seen, memory, causal_mask(m, device=tokens.device), self.memory_mask)  # noqa: F821
                logits = self.model.generator(x)[:, -n:]
        finally:
            for hook in hooks:
                hook.remove()
        for i, layer in enumerate(self.model.decoder.layers):
            h = layer.self_attention.num_heads
            self.self_keys[i] = split_heads(captured[(i, "w_k")], h)  # noqa: F821
            self.self_values[i] = split_heads(captured[(i, "w_v")], h)  # noqa: F821
        self.length = self.seen.size(1)
        return logits


def hidden():
    # >>> hostile
    # Every linear layer's product done in NumPy and wrapped back: torch's dispatcher never sees it.
    @contextlib.contextmanager
    def patched():
        linear = torch.nn.functional.linear

        def in_numpy(x, w, b=None):
            out = torch.from_numpy(numpy.matmul(x.detach().numpy(), w.detach().numpy().T))
            return out if b is None else out + b

        torch.nn.functional.linear = in_numpy
        try:
            yield
        finally:
            torch.nn.functional.linear = linear

    return patched()
    # <<< hostile
    return contextlib.nullcontext()
