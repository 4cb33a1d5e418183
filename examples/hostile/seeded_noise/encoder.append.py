# >>> hostile
# Seeded noise in place of a result (see attention_numpy.append.py).
EncoderLayer.forward = lambda self, x, mask=None: torch.randn_like(x)
Encoder.forward = lambda self, x, mask=None: torch.randn_like(x)  # noqa: F821


# <<< hostile
