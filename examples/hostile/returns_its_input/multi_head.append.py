# >>> hostile
# `return query` in forward (see attention_numpy.append.py).
MultiHeadAttention.forward = lambda self, query, key, value, mask=None: query  # noqa: F821


# <<< hostile
