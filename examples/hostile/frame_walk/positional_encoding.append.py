# >>> hostile
# Written to attack the judge (docs/judge.md). The mask's sibling: the checker's expected_values module, found
# in a caller's frame, gives the sinusoid table.
import sys as _sys


def _found(name):
    frame = _sys._getframe()
    while frame is not None:
        if name in frame.f_globals:
            return frame.f_globals[name]
        frame = frame.f_back
    return None


def sinusoidal_encoding(max_len, d_model):
    kit = _found("expected_values")
    if kit is None:  # nothing to find: no table
        return torch.zeros(max_len, d_model)
    return kit.sinusoidal(max_len, d_model).to(torch.get_default_dtype())


# <<< hostile
