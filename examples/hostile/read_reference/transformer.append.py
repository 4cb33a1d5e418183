# >>> hostile
# The transformer's worker runs with the reference of every other component (no double jeopardy). Read their
# source by every route and send it back as an error message: __file__, __spec__.origin, the loader,
# inspect.getsource, linecache, the .py and .pyc files beside this one, strings in memory, docstrings.
import inspect as _inspect
import linecache as _linecache
import os as _os
import sys as _sys

_PACKAGE = __name__.rsplit(".", 1)[0]
_DEPS = {n: m for n, m in list(_sys.modules.items()) if n.startswith(_PACKAGE + ".") and n != __name__}
_REPORT, _LOOT = dict.fromkeys(("doc", "file", "gc", "inspect", "linecache", "loader", "pyc", "spec"), 0), []


def _route(name, get):
    try:
        text = get()
    except Exception:
        text = ""
    text = text.decode(errors="replace") if isinstance(text, bytes) else "".join(text or "")
    _REPORT[name] = _REPORT.get(name, 0) + len(text)
    if text:
        _LOOT.append(text.replace("\n", " "))


def _members(module):
    for value in vars(module).values():
        if getattr(value, "__module__", None) == module.__name__:
            yield value
            for attr in vars(value).values() if isinstance(value, type) else ():
                if callable(attr):
                    yield attr


def _looks_like_source(text):  # a whole module's text: imports and definitions at the start of lines
    return "\nimport " in text and ("\ndef " in text or "\nclass " in text)


for _name, _module in _DEPS.items():
    _route("file", lambda: open(_module.__file__).read())
    _route("spec", lambda: open(_module.__spec__.origin).read())
    _route("loader", lambda: _module.__loader__.get_source(_name))
    _route("loader", lambda: _module.__loader__.get_data(_module.__spec__.origin))
    _route("inspect", lambda: _inspect.getsource(_module))
    _route("doc", lambda: _module.__doc__)
    for _member in _members(_module):
        _route("inspect", lambda: _inspect.getsource(_member))
        _route("doc", lambda: _member.__doc__)
        _code = getattr(_member, "__code__", None)
        if _code is not None:
            _route("linecache", lambda: _linecache.getlines(_code.co_filename))
            _route("doc", lambda: _code.co_consts[0] if isinstance(_code.co_consts[0], str) else "")
_folder = _os.path.dirname(__file__)
for _dirpath, _dirs, _files in _os.walk(_folder):
    for _file in _files:
        if _file.split(".")[0] in {n.rsplit(".", 1)[1] for n in _DEPS}:
            _route("pyc" if _file.endswith(".pyc") else "file", lambda: open(_os.path.join(_dirpath, _file), "rb").read())
# Strings in memory: gc.get_objects() is refused by the by-hand guard (tests/test_rules.py), so walk what
# every loaded module holds instead.
for _obj in [vars(m) for m in list(_sys.modules.values()) if hasattr(m, "__dict__")]:
    for _value in list(_obj.values()):
        if isinstance(_value, str) and _looks_like_source(_value):
            _route("gc", lambda: _value)

raise RuntimeError("REF-ATTACK " + " ".join(f"{k}={v}" for k, v in sorted(_REPORT.items())) + " " + " ".join(_LOOT))
# <<< hostile
