"""Frames between judge and worker (frames.py): an 8-byte length, then a pickle that can only rebuild plain data.

Unpickling is code execution, so what a worker sends is loaded by `_Loader`, which resolves no global except a
short allowlist: builtins that build values, the kit's operation/reply dataclasses, torch dtypes, and the
constructors below. Tensors and arrays travel as (dtype, shape, raw bytes) and come back as plain tensors,
so a student's tensor subclass with a doctored __eq__ arrives as an ordinary tensor.

Nothing a worker sends is trusted in shape or size either. Pickle's memo lets a frame reference one object many
times, so 130 bytes can describe a tuple of 2**64 nodes: harmless to load, endless to hash, print or compare.
So before anything is built, `_Scan` (pickle_scan.py) reads the frame's opcodes (with a reader of its own, not
pickletools') and follows what each would build, counting every value with its shared parts expanded (what a
walk of it would visit): nodes, depth, characters and bytes, and the total work of the constructors and hashes
loading would run. A frame over any cap, or malformed, is refused unread; a container may not change after it is
referenced twice (a cycle, or a count gone stale).
"""

from __future__ import annotations

import importlib
import io
import math
import pickle
import socket
import time

import numpy as np
import torch

from .frames import HEADER, WireError, read_frame
from .pickle_scan import (
    MAX_FRAME,
    MAX_NODES,
    _Scan,
)

# ------------------------------------------------------------------------------------------- constructors
_TORCH_DTYPES = {
    str(d).removeprefix("torch."): d
    for d in (
        torch.float16,
        torch.bfloat16,
        torch.float32,
        torch.float64,
        torch.complex64,
        torch.complex128,
        torch.uint8,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.bool,
    )
}


def _shape(shape) -> tuple[int, ...]:
    """A shape: a tuple of at most 32 plain ints (checked before it is walked: no range of 10**18)."""
    if (
        type(shape) not in (tuple, list, torch.Size)
        or len(shape) > 32
        or any(type(s) is not int for s in shape)
    ):
        raise ValueError("bad shape")
    if any(s < 0 for s in shape):
        raise ValueError("bad shape")
    return tuple(shape)


def _data(data) -> bytes:
    if type(data) not in (bytes, bytearray):
        raise ValueError("tensor data is not bytes")
    return data


def _tensor(dtype: str, shape: tuple, data: bytes) -> torch.Tensor:
    dt = _TORCH_DTYPES[dtype]
    shape, data = _shape(shape), _data(data)
    n = math.prod(shape)
    if n * dt.itemsize != len(data):
        raise ValueError("tensor size does not match its data")
    if n == 0:
        return torch.empty(shape, dtype=dt)
    return torch.frombuffer(bytearray(data), dtype=dt).reshape(shape)


def _array(dtype: str, shape: tuple, data: bytes, scalar: bool = False):
    dt = _npdtype(dtype)
    shape, data = _shape(shape), _data(data)
    if math.prod(shape) * dt.itemsize != len(data):
        raise ValueError("array size does not match its data")
    a = np.frombuffer(data, dtype=dt).reshape(shape).copy()
    return a[()] if scalar else a


def _npdtype(dtype: str) -> np.dtype:
    if type(dtype) is not str or len(dtype) > 8:
        raise ValueError("not a plain dtype")
    dt = np.dtype(dtype)
    if dt.kind not in "biufc" or dt.fields is not None or dt.subdtype is not None:
        raise ValueError("not a plain dtype")
    return dt


def _range(*args) -> range:
    r = range(*args)
    if len(r) > MAX_NODES:  # range(10**18) is 48 bytes on the wire; list() of it is not
        raise ValueError("range too long")
    return r


def _size(shape=()) -> torch.Size:
    return torch.Size(_shape(shape))


def _bytearray(data=b"") -> bytearray:
    return bytearray(_data(data))  # never bytearray(2**40): a size is not data


def _device(name="cpu", index=None) -> torch.device:
    if type(name) is not str or len(name) > 16 or not (index is None or type(index) is int):
        raise ValueError("not a device")
    return torch.device(name) if index is None else torch.device(name, index)


def _complex(real=0.0, imag=0.0) -> complex:
    if type(real) not in (int, float) or type(imag) not in (int, float):
        raise ValueError("not a complex number")
    return complex(real, imag)


# Builtins are replaced by checked constructors: a frame may call them with any arguments.
_CHECKED = {
    ("builtins", "range"): _range,
    ("torch", "Size"): _size,
    ("builtins", "bytearray"): _bytearray,
    ("torch", "device"): _device,
    ("builtins", "complex"): _complex,
}

_ALLOWED = {
    ("builtins", "slice"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "Ellipsis"),
    ("collections", "OrderedDict"),
    ("autograder.judge.wire", "_tensor"),
    ("autograder.judge.wire", "_array"),
    ("autograder.judge.wire", "_npdtype"),
    *(
        ("autograder.student_code.interface", n)
        for n in ("Reply", "Handle", "Opaque", "StudentError", "Build", "Call", "Inspect", "Source")
    ),
    # the checking side's probe of the by-hand guard
    ("autograder.student_code.interface", "Probe"),
    *(("autograder.judge.operations", n) for n in ("Import", "Bye")),
    # the zygote's control channel and a worker's first words (judge/control.py)
    *(
        ("autograder.judge.control", n)
        for n in (
            "ZygoteReady",
            "Configure",
            "Configured",
            "Take",
            "Taken",
            "Kill",
            "Status",
            "Ended",
            "WorkerReady",
            "SetupFailed",
            "Preload",
        )
    ),
}


class _Loader(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _CHECKED:
            return _CHECKED[module, name]
        if (module, name) in _ALLOWED:
            return getattr(importlib.import_module(module), name)
        if module == "torch" and name in _TORCH_DTYPES:
            return _TORCH_DTYPES[name]
        if module == "numpy" and name in (
            "bool_",
            "int8",
            "int16",
            "int32",
            "int64",
            "uint8",
            "uint16",
            "uint32",
            "uint64",
            "float16",
            "float32",
            "float64",
            "complex64",
            "complex128",
        ):
            return getattr(np, name)
        raise WireError(f"refused to load {module}.{name}")


# A lone surrogate ("\\udcff" printed, a file name decoded with surrogateescape) cannot be encoded as UTF-8:
# every later write of it would raise. Text from a worker is made valid where it enters the judge (the scan
# notes a frame that holds one: pickle_scan._SURROGATE).
def valid_text(text: str) -> str:
    """`text` with each lone surrogate as its backslash escape: text every encoder takes."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class _TextLoader(pickle._Unpickler):
    """_Loader's allowlist, for the rare frame with lone surrogates in its strings: the pure-Python unpickler,
    whose string opcodes can be replaced (the C one's cannot), so that every string it builds is valid."""

    find_class = _Loader.find_class
    dispatch = dict(pickle._Unpickler.dispatch)


def _valid_strings(load):
    def valid(self):
        load(self)
        if isinstance(self.stack[-1], str):
            self.stack[-1] = valid_text(self.stack[-1])

    return valid


for _op in (pickle.BINUNICODE, pickle.SHORT_BINUNICODE, pickle.BINUNICODE8, pickle.UNICODE):
    _TextLoader.dispatch[_op[0]] = _valid_strings(pickle._Unpickler.dispatch[_op[0]])


def _reduce_tensor(obj: torch.Tensor):
    """Any tensor as (dtype, shape, raw bytes): a subclass, a view, on another device, conjugated, bfloat16."""
    t = obj.detach().cpu().resolve_conj().resolve_neg().contiguous()
    name = str(t.dtype).removeprefix("torch.")
    if name not in _TORCH_DTYPES or t.layout != torch.strided:
        raise WireError(f"cannot send a {t.dtype} {t.layout} tensor")
    data = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
    return _tensor, (name, tuple(t.shape), data)


# A plain CPU tensor's name, for the dtypes NumPy shares (its bytes are then `numpy().tobytes()`).
_NUMPY_SHARED = {d: n for n, d in _TORCH_DTYPES.items() if d is not torch.bfloat16}


class _Dumper(pickle.Pickler):
    def reducer_override(self, obj):
        # Most tensors sent are plain, contiguous and on the CPU: their bytes are read at once, the same bytes
        # as the general way below (1.3 us instead of 3.2 for a (2, 5, 8) float tensor; a reply holds 1-30).
        if (
            type(obj) is torch.Tensor
            and obj.layout is torch.strided
            and obj.is_cpu
            and obj.is_contiguous()
            and not obj.is_conj()
            and not obj.is_neg()
            and obj.dtype in _NUMPY_SHARED
        ):
            t = obj.detach() if obj.requires_grad else obj
            return _tensor, (_NUMPY_SHARED[t.dtype], tuple(t.shape), t.numpy().tobytes())
        if isinstance(obj, torch.Tensor):
            return _reduce_tensor(obj)
        if isinstance(obj, (np.ndarray, np.generic)) and not isinstance(
            obj, (np.str_, np.bytes_, np.void)
        ):
            a = np.asarray(obj)
            if a.dtype.kind not in "biufc":
                raise WireError(f"cannot send an array of dtype {a.dtype}")
            return _array, (
                a.dtype.str,
                a.shape,
                np.ascontiguousarray(a).tobytes(),
                isinstance(obj, np.generic),
            )
        if isinstance(obj, np.dtype):
            return _npdtype, (obj.str,)
        return NotImplemented


def dumps(obj) -> bytes:
    buf = io.BytesIO()
    _Dumper(buf, protocol=5).dump(obj)
    return buf.getvalue()


def loads(data: bytes, trusted: bool = False):
    """A frame's value. `trusted`: the frame comes from the judge's own grading process (a worker reading its
    operations), so the scan that protects the judge from a worker is skipped: it cost a worker about 45 us per
    operation, 1 ms for a transformer's weights (before issue 24's reader; about a third of that now). The
    allowlist still applies."""
    try:
        if not trusted:
            scan = _Scan()
            scan.run(data)
            if scan.surrogates:
                return _TextLoader(io.BytesIO(data)).load()
        return _Loader(io.BytesIO(data)).load()
    except WireError:
        raise
    except Exception as e:  # noqa: BLE001 - any malformed pickle
        raise WireError(f"malformed frame: {type(e).__name__}: {e}"[:300]) from None


# ------------------------------------------------------------------------------------------------ sockets
def send(sock: socket.socket, obj) -> None:
    send_bytes(sock, dumps(obj))


def send_bytes(sock: socket.socket, data: bytes) -> None:
    # Header and frame in one write: two writes cost the reader a second wake-up for most frames.
    if len(data) <= 1 << 20:
        sock.sendall(HEADER.pack(len(data)) + data)
    else:
        sock.sendall(HEADER.pack(len(data)))
        sock.sendall(data)


def _recv_exact(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            sock.settimeout(left)
        else:
            sock.settimeout(None)
        try:
            chunk = sock.recv(min(n - got, 1 << 20))
        except TimeoutError:
            raise TimeoutError from None
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv(
    sock: socket.socket,
    deadline: float | None = None,
    max_frame: int = MAX_FRAME,
    trusted: bool = False,
):
    """One object; TimeoutError past `deadline` (time.monotonic()), EOFError if the peer is gone. `trusted`:
    see loads."""
    return loads(read_frame(lambda n: _recv_exact(sock, n, deadline), max_frame), trusted)
