# Written to attack the judge: see attention_numpy.append.py: the same slow calls here.
# >>> hostile
import functools as _functools
import time as _time


def _slow(f):
    @_functools.wraps(f)
    def slow(*args, **kwargs):
        _time.sleep(2.5)
        return f(*args, **kwargs)
    return slow


softmax, scaled_dot_product_attention = map(_slow, (softmax, scaled_dot_product_attention))
# <<< hostile
