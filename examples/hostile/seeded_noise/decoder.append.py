# >>> hostile
# Seeded noise in place of a result (see attention_numpy.append.py).
DecoderLayer.forward = lambda self, x, memory, target_mask=None, memory_mask=None: torch.randn_like(x)
Decoder.forward = lambda self, x, memory, target_mask=None, memory_mask=None: torch.randn_like(x)  # noqa: F821


# <<< hostile
