# Written to attack the judge: burn this submission's whole time budget (every call spins on the CPU) on
# sections nobody else has, so that the section it shares with other students (transformer.py, byte-identical
# to theirs) would be "not run" for everyone sharing it if budgets were shared. The block is the attack; it is
# inlined in each module because a helper module would make the shared section differ.
# >>> hostile
import time as _time


def _slow(f, clock=_time.process_time):  # CPU time: the judge's limits count CPU, not the wall clock
    def slow(*args, **kwargs):
        end = clock() + 0.5
        while clock() < end:
            pass
        return f(*args, **kwargs)
    return slow


for _name, _obj in list(globals().items()):
    if not _name.startswith("_") and getattr(_obj, "__module__", None) == __name__:
        if isinstance(_obj, type) and "forward" in vars(_obj):
            _obj.forward = _slow(_obj.forward)
        elif callable(_obj) and not isinstance(_obj, type):
            globals()[_name] = _slow(_obj)
# <<< hostile
