# >>> hostile
# torch.softmax with the by-hand guard flipped off for the length of the call, and put back before it returns:
# up the stack to the kit's Executor, its guard, the guard's closure, the per-call state (issue 20, item 1: a
# route no probe sees afterwards). The names are built at run time.
import sys


def _state():
    frame = sys._getframe(2)  # softmax's caller: the kit's Executor
    while frame is not None:
        owner = getattr(frame, "f_" + "locals").get("self")
        guard = getattr(owner, "_gu" + "ard", None)
        if guard is not None:
            inner = getattr(guard, "__wrap" + "ped__", guard)
            code = getattr(inner, "__co" + "de__")
            for name, cell in zip(code.co_freevars, getattr(inner, "__clo" + "sure__")):
                if name == "state":
                    return getattr(cell, "cell_" + "contents")
        frame = getattr(frame, "f_" + "back")
    return None


def softmax(x, dim=-1):
    state = _state()
    saved = list(state) if state is not None else None
    if state is not None:
        state[:] = [None] * len(state)
    try:
        return torch.softmax(x, dim)  # noqa: F821 - the reference's import, above this snippet
    finally:
        if saved is not None:
            state[:] = saved
# <<< hostile
