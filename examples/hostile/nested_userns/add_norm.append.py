# Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md).
# Create a nested user namespace (as its own root, a process reaches kernel code that is otherwise closed to
# it: no escape was found, but every such call is surface): unshare(CLONE_NEWUSER), clone with it, clone3.
# What the kernel answered goes to the instructor's log.
# >>> hostile
import ctypes as _ctypes
import os as _os

_libc = _ctypes.CDLL(None, use_errno=True)


def _errno(ret):
    return "ok" if ret >= 0 else _os.strerror(_ctypes.get_errno())


_unshare = _errno(_libc.unshare(0x10000000))
_ret = _libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)  # clone(CLONE_NEWUSER | SIGCHLD), like a fork
if _ret == 0:  # the child: end it at once
    _os._exit(0)
if _ret > 0:
    _os.waitpid(_ret, 0)
_clone = _errno(_ret)
print(f"USERNS-ATTACK unshare={_unshare} clone={_clone} clone3={_errno(_libc.syscall(435, 0, 0))}END")
# <<< hostile
