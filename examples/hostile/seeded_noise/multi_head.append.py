# >>> hostile
# Seeded noise in place of a result (see attention_numpy.append.py).
MultiHeadAttention.forward = lambda self, query, key, value, mask=None: torch.randn_like(query)  # noqa: F821


# <<< hostile
