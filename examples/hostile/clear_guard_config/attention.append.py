# >>> hostile
# softmax by a computed name, after the helper module cleared the guard's configuration.
from .quiet import library_softmax


def softmax(x, dim=-1):
    return library_softmax(x, dim)
# <<< hostile
