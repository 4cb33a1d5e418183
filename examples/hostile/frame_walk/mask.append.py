# >>> hostile
# Written to attack the judge (docs/judge.md). The crib of stop 46: walk up the callers' frames to the checker's
# own expected_causal_mask, which the self-check (in-process) runs beside the student's code; the judge's worker
# has no checker to find. check gave the mask's 13 visible points, grade 6; the component forbids nothing, so no
# by-hand property charged the walk the scan named.
import inspect as _inspect


def _found(name):
    frame = _inspect.currentframe()
    while frame is not None:
        if name in frame.f_globals:
            return frame.f_globals[name]
        frame = frame.f_back
    return None


def causal_mask(size, device=None):
    kit = _found("expected_causal_mask")
    if kit is None:  # nothing to find: a wrong mask
        return torch.ones(size, size, dtype=torch.bool, device=device)
    return kit(size).to(device)


# <<< hostile
