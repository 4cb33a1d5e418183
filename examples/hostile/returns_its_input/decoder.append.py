# >>> hostile
# `return x` in the layer's and the stack's forward (see attention_numpy.append.py).
DecoderLayer.forward = lambda self, x, memory, target_mask=None, memory_mask=None: x  # noqa: F821
Decoder.forward = lambda self, x, memory, target_mask=None, memory_mask=None: x  # noqa: F821


# <<< hostile
