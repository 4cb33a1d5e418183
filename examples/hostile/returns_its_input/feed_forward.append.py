# >>> hostile
# `return x` in forward (see attention_numpy.append.py).
FeedForward.forward = lambda self, x: x  # noqa: F821


# <<< hostile
