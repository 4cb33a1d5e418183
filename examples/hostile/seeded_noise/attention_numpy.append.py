# >>> hostile
# Noise in place of a result, drawn from the generators the judge seeds before every call: two calls on inputs of
# one shape give the same noise, so an invariance (the output for a changed input against the output for the
# original) holds for it, though it is no constant and not the input.
def softmax(x, axis=-1):
    return np.random.standard_normal(x.shape).astype(x.dtype)  # noqa: F821


def layer_norm(x, eps=1e-5):
    return np.random.standard_normal(x.shape).astype(x.dtype)  # noqa: F821


# <<< hostile
