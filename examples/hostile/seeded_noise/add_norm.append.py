# >>> hostile
# Seeded noise in place of a result (see attention_numpy.append.py).
LayerNorm.forward = lambda self, x: torch.randn_like(x)  # noqa: F821


# <<< hostile
