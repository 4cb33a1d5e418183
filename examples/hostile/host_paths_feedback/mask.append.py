# >>> hostile
# Written to attack the judge (docs/judge.md). Puts the host's paths the worker can name into the feedback: the
# kit's checkout (the editable install's finder in sys.modules maps the package to its folder), the Python
# installation and the home folder (sys.path, sys.prefix), raised as an error's message, which the student's
# results.json and feedback.html show.
import sys as _sys


def _host_paths():
    found = [*_sys.path, _sys.prefix, _sys.base_prefix, _sys.exec_prefix]
    for _name, _module in list(_sys.modules.items()):
        if _name.startswith("__editable__"):
            found += [str(v) for v in getattr(_module, "MAPPING", {}).values()]
        _file = getattr(_module, "__file__", None)
        if _name.startswith("autograder") and _file:
            found.append(_file)
    return sorted(set(found), key=len)


def causal_mask(size, device=None):
    raise ValueError("HOSTPATHS " + " | ".join(_host_paths())[:1000])


# <<< hostile
