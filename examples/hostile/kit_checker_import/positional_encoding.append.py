# >>> hostile
# Written to attack the judge (docs/judge.md). The kit's own checker imported by name: check gave 19 of 20
# visible points, grade nothing (the import fails in its worker).
try:
    from autograder.suite.expected_values import sinusoidal as _kit_sinusoidal
except ImportError:
    _kit_sinusoidal = None


def sinusoidal_encoding(max_len, d_model):
    return _kit_sinusoidal(max_len, d_model)


# <<< hostile
