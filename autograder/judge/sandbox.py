"""The zygote and the workers it forks.

The zygote is a fresh interpreter that imports torch, numpy and autograder.student_code once, pins torch to one
thread (no OpenMP pool to break fork, and the same float reductions in every worker), and then only forks:
a worker costs a fork (milliseconds), not an import of torch (a second and a half). It never imports a
property, an oracle or a hidden test, so nothing of the sort can be found in a worker's memory.

The zygote is exec'd with an empty environment plus a fixed allowlist (ENVIRONMENT in remote.py), so no
worker can find the instructor's variables in os.environ, posix.environ or /proc/self/environ.

With namespaces, each worker is process 1 of a PID namespace of its own and sees only itself in its own /proc.
As root, the zygote forks it straight into a new PID namespace and then returns to its own. Without root, in
an unprivileged user namespace, the forked child is only a keeper: it enters a new user namespace mapping the
judge's own uid and gid and a new PID namespace, forks the worker proper, then waits for it and ends the
same way (exit status or signal), so the zygote learns how the worker died.

A worker, right after the fork and before any student code runs:
  - starts its own session (so its whole process group can be killed) and dies with the zygote;
  - with namespaces: enters new mount, network and IPC namespaces, hides the kit (solutions, hidden properties),
    the submissions, the output folder and the judge's temp folder behind empty read-only tmpfs mounts,
    re-exposing only the Python installation and its own package folder (read-only); /tmp is a small
    private tmpfs; /proc is its own; the user's runtime folder, terminals and cgroups are covered;
  - gets rlimits: address space, file size, open files, CPU seconds, no core dumps, and (as root, under its
    own uid) no processes or threads beyond itself;
  - redirects fds 1 and 2 to a file in its private working directory (bounded by RLIMIT_FSIZE);
  - as root: drops to an unprivileged uid/gid of its own (one per grading slot), with no_new_privs; in a user
    namespace: drops every capability (it keeps the judge's uid, which the namespace maps to itself).
Then it serves operations from its socket with an Executor, and is SIGKILLed when its section is done. The
first operation preloads the section's reference dependencies from code objects without docstrings (no file,
no source text in the worker): see `preload`.
"""

from __future__ import annotations

import ast
import ctypes
import gc
import importlib.machinery
import marshal
import os
import resource
import signal
import socket
import sys
import time
import types
from dataclasses import dataclass

import numpy as np  # noqa: F401 - imported once here so that workers inherit it
import torch
import torch.nn
import torch.nn.functional

from .. import i18n, rules
from ..components import COMPONENTS
from ..student_code.executor import Executor
from ..student_code.interface import Reply, StudentError
from . import wire


@dataclass(frozen=True)
class Import:
    """Import a component's module (the first thing a worker does with it, so a crash there is named)."""

    component: str


@dataclass(frozen=True)
class Bye:
    """Return what the student's code printed (trimmed); the worker is killed right after."""


# --------------------------------------------------------------------------------------------- libc bits
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [
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
    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def _prctl(option: int, arg: int) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), f"prctl {option}")


def _drop_capabilities() -> None:
    """Empty effective, permitted and inheritable sets (and ambient): in a user namespace the worker keeps its
    uid, so this is what stops it from unmounting what hides the host."""
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()
    _check(_libc.capset(header, data), "capset")
    _check(_libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "prctl PR_CAP_AMBIENT")


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
        _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0),
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
    _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWPID), "unshare")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def fork_into_new_pid_namespace(own_pidns: int) -> int:
    """As root: fork a child that is process 1 of a new PID namespace, then put this process's next children
    back in its own namespace (`own_pidns`, an fd of /proc/self/ns/pid). No keeper: a second fork of this
    large process cost ~7 ms of the kernel's time a worker."""
    _check(_libc.unshare(CLONE_NEWPID), "unshare")
    pid = os.fork()
    if pid and _libc.setns(own_pidns, CLONE_NEWPID) != 0:
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
WRITABLE = (
    "/tmp",
    "/var/tmp",
    "/dev/shm",
    "/run/lock",
)  # world-writable places, made private per worker
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
    _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC), "unshare")
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
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # dies with its keeper (or the zygote) from the start
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
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    if uid is not None:  # last: everything above needed root
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        _prctl(PR_SET_DUMPABLE, 0)
    if cfg.get("pidns") == "user":  # last: the mounts above needed the namespace's capabilities
        _drop_capabilities()
        _prctl(PR_SET_DUMPABLE, 0)
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # after setuid, which clears it: die with the zygote
    if cfg["isolate"]:  # last: the keeper and the set-up above made the namespaces this one refuses
        forbid_user_namespaces()
    # No .pyc written (the kit's folder left sys.path in the zygote: see ZygoteServer.serve).
    sys.dont_write_bytecode = True
    return host_pid


# ---------------------------------------------------------------------------- reference dependencies
def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return tree


def reference_code(source: bytes, name: str) -> bytes:
    """A reference module as the worker gets it: marshalled bytecode without docstrings, compiled under a name
    that is no file (so linecache, inspect and tracebacks find no text). Asserts are kept (optimize=0)."""
    tree = _without_docstrings(ast.parse(source))
    return marshal.dumps(compile(tree, f"<reference {name}>", "exec", dont_inherit=True))


def preload(package: str, modules: list) -> None:
    """Run the reference dependencies (in dependency order) as modules of the worker's package, before any
    student code: no file on disk, no __file__, no loader to ask for source, a spec with no origin. The
    student's `from .attention import ...` then finds them in sys.modules."""
    parent = sys.modules[package]
    for name, code in modules:
        full = f"{package}.{name}"
        module = types.ModuleType(full)
        module.__package__ = package
        module.__spec__ = importlib.machinery.ModuleSpec(full, None)
        module.__loader__ = None
        sys.modules[full] = module
        exec(marshal.loads(code), module.__dict__)  # noqa: S102 - the kit's own reference, compiled by the grader
        setattr(parent, name, module)


def serve(sock: socket.socket, root: str, output_limit: int) -> None:
    """Carry out operations until killed. Every student failure goes back as a StudentError."""
    executor = Executor(root, output_limit=output_limit)
    while True:
        try:
            op = wire.recv(sock, trusted=True)  # from the grading process: the judge's own frames
        except (EOFError, OSError, wire.WireError):
            os._exit(0)
        try:
            if (
                isinstance(op, dict) and "preload" in op
            ):  # a plain dict: the wire's allowlist needs no entry
                preload(executor.package, op["preload"])
                reply = Reply()
            elif isinstance(op, Import):
                executor.module(op.component)
                reply = Reply()
            elif isinstance(op, Bye):
                reply = Reply(executor.output.getvalue() + _head("output.txt", 4000))
            else:
                reply = executor.run(op)
        except StudentError as e:
            reply = e
        except BaseException as e:  # noqa: BLE001 - student objects can raise anywhere, even in repr
            reply = StudentError(
                "exception", f"{type(e).__name__}: {e}"[:300], "", type(e).__name__
            )
        try:
            data = wire.dumps(reply)
        except Exception as e:  # noqa: BLE001 - whatever the student returned, it cannot travel
            data = wire.dumps(
                StudentError("exception", f"the result could not be sent back: {e}"[:300])
            )
        wire.send_bytes(sock, data)


def _head(path: str, n: int) -> str:
    """The first n bytes the student's code wrote to file descriptors 1 and 2."""
    try:
        with open(path, "rb") as f:
            data = f.read(n)
    except OSError:
        return ""
    return ("\n[written to fd 1/2]\n" + data.decode(errors="replace")) if data else ""


# ------------------------------------------------------------------------------------- the run's reaper
def _parents() -> dict[int, int]:
    """pid -> parent pid, for every process this one can see."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    parents[int(entry)] = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    return parents


class Reaper:
    """The orchestrator becomes the subreaper of everything its run starts: a process that leaves its
    process group and its parent (a daemon: double fork, setsid) is re-parented here, not to init, and
    `end_all` kills every such descendant before the final results are written. Without namespaces this is
    what stops a submission from outliving the judge (and rewriting its outputs afterwards); with them, a
    worker's PID namespace already dies with it, and this finds nothing."""

    def __init__(self):
        flag = ctypes.c_int(0)
        _libc.prctl(37, ctypes.byref(flag), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
        self.was = flag.value
        _prctl(PR_SET_CHILD_SUBREAPER, 1)
        self.pid = os.getpid()
        parents = _parents()
        # children that are not the run's
        self.others = {p for p, pp in parents.items() if pp == self.pid}

    def descendants(self) -> list[int]:
        parents = _parents()
        children: dict[int, list[int]] = {}
        for p, pp in parents.items():
            children.setdefault(pp, []).append(p)
        found, todo = [], [p for p in children.get(self.pid, []) if p not in self.others]
        while todo:
            p = todo.pop()
            found.append(p)
            todo.extend(children.get(p, []))
        return found

    def end_all(self) -> int:
        """Kill every process of the run still alive (those that fork meanwhile are caught by the next
        round: their parent's death re-parents them here); returns how many there were."""
        ended = set()
        for _ in range(200):
            alive = self.descendants()
            if not alive:
                break
            for p in alive:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
                ended.add(p)
            time.sleep(0.01)
            for p in alive:  # those re-parented here are our children now: reap them
                try:
                    os.waitpid(p, os.WNOHANG)
                except ChildProcessError:
                    pass
        return len(ended)

    def close(self) -> None:
        _prctl(PR_SET_CHILD_SUBREAPER, self.was)


# ------------------------------------------------------------------------------------------------ zygote
def warm_up() -> None:
    """Pay every lazy initialisation once, here, instead of in each worker."""
    torch.set_num_threads(1)
    x = torch.randn(2, 3, 4, dtype=torch.float64)
    with rules.guard("attention"):
        (x @ x.transpose(-2, -1)).exp().sum(-1)
        torch.nn.Linear(4, 4)(x.float()).relu()
    torch.manual_seed(0)
    # the components' library preloads (torch.optim imports torch._dynamo on
    # first use, which the guard refuses during a call): 0.9 s once here instead of in every training worker.
    for component in COMPONENTS:
        for name in component.preload:
            importlib.import_module(name)


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
            _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC), "unshare")
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


class ZygoteServer:
    """Serves one grader. It keeps one worker forked and set up ahead of time (the spare), so that taking a
    worker costs the grader a message, not a fork; consecutive workers alternate between two uids, so a
    running worker cannot signal the spare that will grade the next section."""

    def __init__(self, ctrl: socket.socket):
        self.ctrl, self.cfg, self.spare, self.count = ctrl, None, None, 0
        self.exited: dict[int, int] = {}  # pid -> wait status, the most recent few hundred
        self.dying: set[int] = set()  # killed by us, not yet reaped
        # this process's own PID namespace, to come back to after forking a worker into a new one (as root)
        self.own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)

    def _record(self, pid: int, st: int) -> None:
        self.exited[pid] = st
        self.dying.discard(pid)
        while len(self.exited) > 256:
            del self.exited[next(iter(self.exited))]

    def reap_all(self) -> None:
        """Collect exit statuses without waiting (orphans of workers come here too: we are their subreaper)."""
        while True:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self._record(pid, st)

    def wait_for(self, pid: int, block: bool) -> bool:
        """True once `pid` has ended (its status is in self.exited, unless it was never ours)."""
        if pid in self.exited:
            return True
        try:
            got, st = os.waitpid(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            self.dying.discard(pid)
            return True
        if got == 0:
            return False
        self._record(got, st)
        return True

    def fork_spare(self) -> None:
        for pid in list(self.dying):  # the last worker under the uid we are about to reuse is gone
            self.wait_for(pid, block=True)
        self.reap_all()
        cfg = dict(self.cfg)
        if cfg["uids"]:
            cfg["uid"] = cfg["uids"][self.count % len(cfg["uids"])]
        self.count += 1
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        if cfg.get("pidns") == "root":
            pid = fork_into_new_pid_namespace(self.own_pidns)
        else:
            pid = os.fork()
        if pid == 0:
            self.ctrl.close()
            ours.close()
            self.cfg = None  # the worker's own copy (cfg) is cleared once it is set up
            worker(cfg, theirs)
        theirs.close()
        self.spare = (pid, ours)

    def kill(self, pid: int) -> None:
        for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
            try:
                kill()
            except (ProcessLookupError, PermissionError):
                pass
        if pid not in self.exited:
            self.dying.add(pid)

    def status(self, pid: int, grace: float) -> tuple[int | None, bool]:
        """How a worker ended: wait up to `grace` seconds for it, then kill it."""
        deadline, killed = time.monotonic() + grace, False
        while not self.wait_for(pid, block=False):
            if time.monotonic() >= deadline:
                self.kill(pid)
                killed = True
                self.wait_for(pid, block=True)
                break
            time.sleep(0.0005)
        self.kill(pid)  # whatever is left of its process group
        self.dying.discard(pid)
        return self.exited.pop(pid, None), killed

    def serve(self) -> None:
        while True:
            try:
                msg = self.ctrl.recv(1 << 16)
            except OSError:
                return
            if not msg:  # the grader hung up: take our workers down before we go
                if self.spare:
                    self.kill(self.spare[0])
                for pid in list(self.dying):
                    self.wait_for(pid, block=True)
                return
            req = wire.loads(msg)
            msg = None  # a worker forked below must find no frame of the host's configuration
            if req["op"] == "configure":
                self.cfg = req["cfg"]
                # The run's language, with its catalog read now: a worker's mounts hide the kit's folder,
                # and its environment is an allowlist. The choice is a name from i18n.LANGUAGES, not a path.
                lang = self.cfg.get("lang")
                i18n.set_language(lang if lang in i18n.LANGUAGES else None)
                i18n.translation(i18n.current_language())
                # Nothing of the kit's own folder on the path, here once rather than in each worker (where
                # it is hidden anyway): the worker's configuration need not name it.
                unpath = set(self.cfg.pop("unpath", ()))
                sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) not in unpath]
                req = unpath = None
                self.ctrl.send(wire.dumps({"ok": True}))
                self.fork_spare()
            elif req["op"] == "take":
                req = None
                pid, sock = self.spare
                socket.send_fds(self.ctrl, [wire.dumps({"pid": pid})], [sock.fileno()])
                sock.close()
                self.fork_spare()  # after answering: the grader does not wait for this
            elif req["op"] == "kill":  # no answer: the grader goes on at once
                self.kill(req["pid"])
            elif req["op"] == "status":
                st, killed = self.status(req["pid"], req["grace"])
                self.ctrl.send(wire.dumps({"status": st, "killed": killed}))


def worker(cfg: dict, sock: socket.socket) -> None:
    """The forked child: (with namespaces, become the keeper of the worker proper in a new PID namespace)
    set up, say so, then serve. Never returns."""
    try:
        # as root, the zygote forked this process into its namespace already
        if cfg.get("pidns") == "user":
            os.setsid()  # the zygote's killpg reaches the keeper
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            enter_user_namespaces()
            inner = os.fork()
            if inner:
                sock.close()
                os.closerange(3, 1 << 16)
                keep_until_it_ends(inner)
        host_pid = setup_worker(cfg, sock.fileno())
    except BaseException as e:  # noqa: BLE001 - refuse to run student code unprotected
        try:
            wire.send(sock, {"setup_failed": f"{type(e).__name__}: {e}"[:300]})
        finally:
            os._exit(70)
    # What the worker needs of its configuration; the rest (the folders it hides and binds) leaves its memory's
    # reachable objects before any student code runs.
    root, output_limit = cfg["root"], cfg["output_limit"]
    cfg.clear()
    try:
        wire.send(sock, {"ready": True, "pid": host_pid})
        serve(sock, root, output_limit)
    finally:
        os._exit(0)


def _vm_kb() -> int:
    with open("/proc/self/status") as f:
        return int(f.read().split("VmSize:")[1].split()[0])


def zygote(ctrl: socket.socket) -> None:
    warm_up()
    _prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphans of a worker come back here to be reaped
    vm_kb = (
        _vm_kb()
    )  # (no local of this frame, which every worker's stack holds, keeps the host's pids)
    mode, problem = probe_isolation()
    # Everything imported so far leaves the collector's generations: a worker's first full collection would
    # otherwise walk torch's ~250 000 objects and copy every page they sit on (a tenth of a worker's CPU time).
    gc.collect()
    gc.freeze()
    ctrl.send(
        wire.dumps(
            {
                "ready": True,
                "vm_bytes": vm_kb * 1024,
                "isolation": problem,
                "mode": mode,
                "euid": os.geteuid(),
            }
        )
    )
    ZygoteServer(ctrl).serve()


def main() -> None:
    ctrl = socket.socket(fileno=int(sys.argv[1]))
    try:
        zygote(ctrl)
    finally:
        os._exit(0)
