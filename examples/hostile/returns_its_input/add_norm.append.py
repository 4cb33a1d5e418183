# >>> hostile
# `return x` in LayerNorm's forward (see attention_numpy.append.py).
LayerNorm.forward = lambda self, x: x  # noqa: F821


# <<< hostile
