# >>> hostile
# `return x` in the layer's and the stack's forward (see attention_numpy.append.py).
EncoderLayer.forward = lambda self, x, mask=None: x  # noqa: F821
Encoder.forward = lambda self, x, mask=None: x  # noqa: F821


# <<< hostile
