# >>> hostile
# Written to attack the judge (docs/judge.md). The third component that forbids nothing: the checker's
# expected_feed_forward, found in a caller's frame, computes the forward.
import inspect as _inspect

_forward = FeedForward.forward


def _walked_forward(self, x):
    frame = _inspect.currentframe()
    while frame is not None:
        kit = frame.f_globals.get("expected_feed_forward")
        if kit is not None:
            return kit(x, self.state_dict()).to(x.dtype)
        frame = frame.f_back
    return x  # nothing to find: no layer at all


FeedForward.forward = _walked_forward


# <<< hostile
