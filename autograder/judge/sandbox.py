"""The sandbox: what confines a worker, from its fork to the first operation (the kernel's part of the trust model).

With namespaces, each worker is process 1 of a PID namespace of its own and sees only itself in its own /proc.
As root, the zygote forks it straight into a new PID namespace and then returns to its own. Without root, in
an unprivileged user namespace, the forked child is only a keeper: it enters a new user namespace mapping the
judge's own uid and gid and a new PID namespace, forks the worker proper, then waits for it and ends the
same way (exit status or signal), so the zygote learns how the worker died.

A worker, right after the fork and before any student code runs (setup_worker):
  - starts its own session (so its whole process group can be killed) and dies with the zygote;
  - with namespaces: enters new mount, network and IPC namespaces, hides the kit (solutions, hidden properties),
    the submissions, the output folder and the judge's temp folder behind empty read-only tmpfs mounts,
    re-exposing only the Python installation and its own package folder (read-only); /tmp is a small
    private tmpfs; /proc is its own; the user's runtime folder, terminals and cgroups are covered;
  - gets rlimits: address space, file size, open files, CPU seconds, no core dumps, and (as root, under its
    own uid) no processes or threads beyond itself;
  - redirects fds 1 and 2 to a file in its private working directory (bounded by RLIMIT_FSIZE);
  - as root: drops to an unprivileged uid/gid of its own (one per grading slot), with no_new_privs; in a user
    namespace: drops every capability (it keeps the judge's uid, which the namespace maps to itself);
  - loads a seccomp filter that refuses it any new user namespace (x86_64).
What the mounts hide and keep is decided in the grading process (sandbox_paths). The zygote that forks workers
is zygote.py; what a worker does once set up is worker.py.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys
from pathlib import Path

# --------------------------------------------------------------------------------------------- libc bits
libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_ulong,
    ctypes.c_char_p,
]
CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWIPC = 0x00020000, 0x40000000, 0x08000000
CLONE_NEWPID, CLONE_NEWUSER = 0x20000000, 0x10000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = (
    1,
    2,
    4,
    8,
    32,
    4096,
    16384,
    1 << 18,
)
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 4, 38, 36
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source, target, fstype, flags, data=None) -> None:
    enc = lambda s: None if s is None else str(s).encode()  # noqa: E731
    _check(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def prctl(option: int, arg: int) -> None:
    _check(libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), f"prctl {option}")


def _drop_capabilities() -> None:
    """Empty effective, permitted and inheritable sets (and ambient): in a user namespace the worker keeps its
    uid, so this is what stops it from unmounting what hides the host."""
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()
    _check(libc.capset(header, data), "capset")
    _check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "prctl PR_CAP_AMBIENT")


# A seccomp filter (classic BPF, loaded with prctl: no library needed) that refuses a worker any new user
# namespace: unshare or clone with CLONE_NEWUSER fail with EPERM, clone3 (whose flags sit in memory a filter
# cannot read) with ENOSYS, on which the C library falls back to clone. The x32 ABI's numbers are refused too.
# It removes the kernel's user-namespace code from what a worker can reach (no escape was found through it).
# x86_64 only: elsewhere no filter is loaded and docs/judge.md says so.
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
_AUDIT_ARCH_X86_64, _X32_BIT = 0xC000003E, 0x40000000
_NR_CLONE, _NR_UNSHARE, _NR_CLONE3 = 56, 272, 435
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_LD_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
# (code, jt, jf, k): a jump skips jt (true) or jf (false) instructions.
NO_USER_NAMESPACES = (
    (_LD_ABS, 0, 0, 4),  # 0: the architecture
    (_JEQ, 0, 7, _AUDIT_ARCH_X86_64),  # 1: another one: allow (9)
    (_LD_ABS, 0, 0, 0),  # 2: the syscall's number
    (_JGE, 6, 0, _X32_BIT),  # 3: the x32 ABI: EPERM (10)
    (_JEQ, 6, 0, _NR_CLONE3),  # 4: clone3: ENOSYS (11)
    (_JEQ, 1, 0, _NR_UNSHARE),  # 5: unshare: its flags (7)
    (_JEQ, 0, 2, _NR_CLONE),  # 6: clone: its flags (7); any other call: allow (9)
    (_LD_ABS, 0, 0, 16),  # 7: the first argument's low 32 bits: the flags
    (_JSET, 1, 0, CLONE_NEWUSER),  # 8: a new user namespace: EPERM (10); else allow (9)
    (_RET, 0, 0, _RET_ALLOW),  # 9
    (_RET, 0, 0, _RET_ERRNO | 1),  # 10: EPERM
    (_RET, 0, 0, _RET_ERRNO | 38),  # 11: ENOSYS
)


class _SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def forbid_user_namespaces() -> bool:
    """Load NO_USER_NAMESPACES for this process and its children (after no_new_privs). False where it is not
    loaded (not x86_64)."""
    if os.uname().machine != "x86_64":
        return False
    program = (_SockFilter * len(NO_USER_NAMESPACES))(
        *(_SockFilter(*i) for i in NO_USER_NAMESPACES)
    )
    prog = _SockFprog(len(NO_USER_NAMESPACES), program)
    _check(
        libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0),
        "prctl PR_SET_SECCOMP",
    )
    return True


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def enter_user_namespaces() -> None:
    """The keeper's part, without root: the next child is process 1 of a new PID namespace, inside a new user
    namespace that maps only the judge's own uid and gid (so the worker owns nothing more than the judge)."""
    uid, gid = os.geteuid(), os.getegid()
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWPID), "unshare")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def fork_into_new_pid_namespace(own_pidns: int) -> int:
    """As root: fork a child that is process 1 of a new PID namespace, then put this process's next children
    back in its own namespace (`own_pidns`, an fd of /proc/self/ns/pid). No keeper: a second fork of this
    large process cost ~7 ms of the kernel's time a worker."""
    _check(libc.unshare(CLONE_NEWPID), "unshare")
    pid = os.fork()
    if pid and libc.setns(own_pidns, CLONE_NEWPID) != 0:
        # The next worker would be born inside this one's namespace, where this one could see it: stop here.
        os.kill(pid, signal.SIGKILL)
        os._exit(70)
    return pid


def keep_until_it_ends(pid: int) -> None:
    """The keeper waits for the worker and ends the same way, so the zygote's wait status tells how it died."""
    # no core of this process when it mirrors a SIGSEGV
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


# ----------------------------------------------------------------------------------------- worker set-up
# World-writable places, made private per worker
WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
# System folders that hold what belongs to a logged-in user: the session's runtime folder (sockets of its
# D-Bus and systemd --user), its terminals, its delegated cgroups. In a user namespace the worker has the
# judge's uid and could use them; as root it could not, but there is nothing there it needs either.
MASKED = ("/run/user", "/dev/pts", "/sys/fs/cgroup", "/dev/mqueue")


def _kept_flags(path: str) -> int:
    """The flags a read-only remount of `path` must keep: in a user namespace, the kernel refuses to clear
    noexec or change the atime flags of a mount inherited from the host (a /tmp mounted noexec, say)."""
    f = os.statvfs(path).f_flag
    return (
        (MS_NOEXEC if f & os.ST_NOEXEC else 0)
        | (1024 if f & os.ST_NOATIME else 0)
        | (2048 if f & os.ST_NODIRATIME else 0)
        | (1 << 21 if f & os.ST_RELATIME else 0)
    )


def isolate(hide: list[str], keep: list[str], tmp_mb: int, own_proc: bool) -> None:
    """New mount/network/IPC namespaces; `hide` behind empty tmpfs mounts, except the `keep` paths inside,
    which are bound back read-only. own_proc: a /proc of the worker's PID namespace (it sees only itself)."""
    _check(libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC), "unshare")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing we mount leaks back to the host
    keep = [k for k in dict.fromkeys(keep) if os.path.isdir(k)]
    fds = {k: os.open(k, os.O_PATH | os.O_DIRECTORY) for k in keep}  # before anything shadows them
    targets = [(h, False) for h in [*hide, *MASKED]] + [(w, True) for w in WRITABLE]
    for path, writable in sorted(dict(targets).items(), key=lambda hw: (hw[0].count("/"), hw[0])):
        if not os.path.isdir(path) or os.path.islink(path):
            continue
        opts = f"size={tmp_mb}m,mode=1777" if writable else "size=1m,mode=755"
        _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, opts)
        for k in (
            keep
        ):  # bring back what must stay visible under it (again, if a shallower mount did already)
            if k.startswith(path.rstrip("/") + "/"):
                os.makedirs(k, exist_ok=True)
                _mount(f"/proc/self/fd/{fds[k]}", k, None, MS_BIND | MS_REC)
                _mount(
                    None,
                    k,
                    None,
                    MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | _kept_flags(k),
                )
        if (
            not writable
        ):  # a cover is read-only once what it must show is bound back (as root, its owner
            # is not the worker's uid anyway; in a user namespace it would be)
            _mount(None, path, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, opts)
    for fd in fds.values():
        os.close(fd)
    if own_proc:
        try:
            _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        except (
            OSError
        ):  # a kernel that refuses a new proc here (a container that masks parts of /proc)
            _mount(
                "tmpfs", "/proc", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, "size=1m"
            )


def setup_worker(cfg: dict, sock_fd: int) -> int:
    """Everything between fork and the first operation. Raises if a requested protection fails. Returns the
    worker's pid as the zygote's PID namespace sees it (the grader reads its CPU time there)."""
    host_pid = int(os.readlink("/proc/self"))  # before its own /proc (where it is 1) is mounted
    os.setsid()
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # dies with its keeper (or the zygote) from the start
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.closerange(3, sock_fd)  # nothing of the zygote's but the socket to the grader
    os.closerange(sock_fd + 1, 1 << 16)
    if cfg["isolate"]:
        isolate(cfg["hide"], cfg["keep"], cfg["tmp_mb"], own_proc=bool(cfg.get("pidns")))
        work = "/tmp/work"
        os.makedirs(work, exist_ok=True)
    else:
        work = cfg["workdir"]
    uid = cfg.get("uid")
    if uid is not None:
        os.chown(work, uid, uid)
    os.chdir(work)
    out = os.open(
        os.path.join(work, "output.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600
    )
    if uid is not None:
        os.fchown(out, uid, uid)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    # a write past RLIMIT_FSIZE fails (EFBIG) instead of killing
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    limits = {
        resource.RLIMIT_AS: cfg["as_bytes"],
        resource.RLIMIT_FSIZE: cfg["fsize"],
        resource.RLIMIT_NOFILE: 256,
        resource.RLIMIT_CORE: 0,
        resource.RLIMIT_CPU: cfg["cpu_s"],
    }
    if cfg.get("nproc") is not None:
        limits[resource.RLIMIT_NPROC] = cfg["nproc"]
    for which, value in limits.items():
        if value is not None:
            resource.setrlimit(which, (value, value))
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    if uid is not None:  # last: everything above needed root
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        prctl(PR_SET_DUMPABLE, 0)
    if cfg.get("pidns") == "user":  # last: the mounts above needed the namespace's capabilities
        _drop_capabilities()
        prctl(PR_SET_DUMPABLE, 0)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # after setuid, which clears it: die with the zygote
    if cfg["isolate"]:  # last: the keeper and the set-up above made the namespaces this one refuses
        forbid_user_namespaces()
    # No .pyc written (the kit's folder left sys.path in the zygote: see zygote.ZygoteServer.serve).
    sys.dont_write_bytecode = True
    return host_pid


def _probe(mode: str) -> str:
    """'' if a forked child can do what the zygote (as root) or a worker's keeper (without) and a worker do in
    `mode`, else why not."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            if mode == "user":
                enter_user_namespaces()
                inner = os.fork()
            else:
                inner = fork_into_new_pid_namespace(os.open("/proc/self/ns/pid", os.O_RDONLY))
            if inner:
                keep_until_it_ends(inner)
            _check(libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC), "unshare")
            _mount(None, "/", None, MS_REC | MS_PRIVATE)
            _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m")
            if mode == "user":
                _drop_capabilities()
            os._exit(0)
        except BaseException as e:  # noqa: BLE001
            os.write(w, str(e).encode()[:200])
            os._exit(1)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    why = os.read(r, 300).decode(errors="replace")
    os.close(r)
    return "" if status == 0 else (why or f"probe exited with status {status}")


def probe_isolation() -> tuple[str | None, str]:
    """(mode, problem): "root" (namespaces and a uid per slot), "user" (an unprivileged user namespace: the
    same namespaces, the judge's own uid, no capabilities), or None and why neither works."""
    if os.geteuid() == 0:
        why = _probe("root")
        return ("root", "") if not why else (None, why)
    why = _probe("user")
    return ("user", "") if not why else (None, f"not root, and no user namespaces ({why})")


# long: the list of paths a worker keeps or loses, one rule each with its reason
def sandbox_paths(kit: Path, extra_hide, tmp: Path) -> tuple[list[str], list[str]]:
    """(hide, keep): what a worker must not see, and what it must, for Python to keep working."""
    import autograder

    home = os.path.expanduser("~")
    hide = [
        str(kit),
        str(Path(autograder.__file__).resolve().parent),
        str(kit / "solutions"),
        home,
        str(tmp),
        *map(str, extra_hide),
    ]
    keep = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    for p in sys.path:
        real = os.path.realpath(p) if p else ""
        if (
            real
            and os.path.isdir(real)
            and real != str(kit)
            and not real.startswith(str(kit / "autograder"))
        ):
            keep.add(real)
    # the outermost suffice
    keep = {k for k in keep if not any(k.startswith(o + "/") for o in keep)}
    # A kept folder inside a folder that others may not traverse (Python under /root, say): hide that folder
    # too, so that it is replaced by a traversable empty one with the kept folder bound back inside.
    for k in list(keep):
        for parent in Path(k).parents:
            if str(parent) != "/" and not os.stat(parent).st_mode & 0o001:
                hide.append(str(parent))
    system = {
        "/",
        "/usr",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/bin",
        "/sbin",
        "/etc",
        "/proc",
        "/dev",
        "/sys",
        "/run",
        "/var",
        "/tmp",
    }
    # Deny by default: every other top-level folder is hidden too. Another checkout of the kit, a copy of the
    # solutions or last year's submissions could sit anywhere (/work, /home, /srv, /opt...): the judge cannot
    # list them, so it shows nothing but the system and binds back what Python needs (keep).
    for entry in os.listdir("/"):
        path = "/" + entry
        if path not in system and os.path.isdir(path) and not os.path.islink(path):
            hide.append(path)
    hide = {os.path.realpath(h) for h in hide} - system
    # The outermost suffice: a folder inside another cover (the kit, the solutions, the submissions and output
    # folders inside /work or /home) is hidden with it, and its path stays out of the worker's configuration;
    # unless it is inside a folder bound back (the kit installed in the Python installation's site-packages).
    covers = hide | set(MASKED) | set(WRITABLE)
    hide = {
        h
        for h in hide
        if not any(h.startswith(c + "/") for c in covers)
        or any(h.startswith(k + "/") for k in keep)
    }
    return sorted(hide), sorted(keep)
