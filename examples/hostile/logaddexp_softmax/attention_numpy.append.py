# >>> hostile
# NumPy's sibling: np.logaddexp.reduce is a logsumexp.


def softmax(x, axis=-1):
    return np.exp(x - np.logaddexp.reduce(x, axis=axis, keepdims=True))  # noqa: F821


# <<< hostile
