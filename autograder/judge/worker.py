"""A worker: the zygote's forked child that serves one section's operations on the student's code.

Once set up (sandbox.setup_worker: namespaces, mounts, limits, a uid of its own), it serves operations from its
socket with an Executor, and is SIGKILLed when its section is done. The first operation preloads the section's
reference dependencies from code objects without docstrings (no file, no source text in the worker): see
`preload`. Every student failure goes back as a StudentError; the judge checks what comes back (replies.py).
"""

from __future__ import annotations

import importlib.machinery
import marshal
import os
import signal
import socket
import sys
import types

from ..student_code.executor import Executor
from ..student_code.interface import Reply, StudentError
from . import wire
from .control import Preload, SetupFailed, WorkerReady
from .operations import Bye, Import
from .sandbox import (
    PR_SET_PDEATHSIG,
    enter_user_namespaces,
    keep_until_it_ends,
    prctl,
    setup_worker,
)


def worker(cfg: dict, sock: socket.socket) -> None:
    """The forked child: (with namespaces, become the keeper of the worker proper in a new PID namespace)
    set up, say so, then serve. Never returns."""
    try:
        # as root, the zygote forked this process into its namespace already
        if cfg.get("pidns") == "user":
            os.setsid()  # the zygote's killpg reaches the keeper
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            enter_user_namespaces()
            inner = os.fork()
            if inner:
                sock.close()
                os.closerange(3, 1 << 16)
                keep_until_it_ends(inner)
        host_pid = setup_worker(cfg, sock.fileno())
    except BaseException as e:  # noqa: BLE001 - refuse to run student code unprotected
        try:
            wire.send(sock, SetupFailed(f"{type(e).__name__}: {e}"[:300]))
        finally:
            os._exit(70)
    # What the worker needs of its configuration; the rest (the folders it hides and binds) leaves its memory's
    # reachable objects before any student code runs.
    root, output_limit = cfg["root"], cfg["output_limit"]
    cfg.clear()
    try:
        wire.send(sock, WorkerReady(host_pid))
        serve(sock, root, output_limit)
    finally:
        os._exit(0)


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
            if isinstance(op, Preload):
                preload(executor.package, op.modules)
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
