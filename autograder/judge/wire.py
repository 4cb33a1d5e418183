"""Frames between judge and worker: an 8-byte length, then a pickle that can only rebuild plain data.

Unpickling is code execution, so what a worker sends is loaded by `_Loader`, which resolves no global except a
short allowlist: builtins that build values, the kit's operation/reply dataclasses, torch dtypes, and the
constructors below. Tensors and arrays travel as (dtype, shape, raw bytes) and come back as plain tensors,
so a student's tensor subclass with a doctored __eq__ arrives as an ordinary tensor.
"""
from __future__ import annotations

import io
import math
import pickle
import socket
import struct
import time

import numpy as np
import torch

MAX_FRAME = 64 << 20  # a reply bigger than this is not a result of this kit's small inputs
_HEADER = struct.Struct("<Q")


class WireError(Exception):
    """The peer sent something that is not a valid frame (too big, truncated, or not plain data)."""


# ------------------------------------------------------------------------------------------- constructors
_TORCH_DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128,
    torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.bool)}


def _tensor(dtype: str, shape: tuple, data: bytes) -> torch.Tensor:
    dt = _TORCH_DTYPES[dtype]
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape) or len(shape) > 32:
        raise ValueError("bad shape")
    n = math.prod(shape)
    if n * dt.itemsize != len(data):
        raise ValueError("tensor size does not match its data")
    if n == 0:
        return torch.empty(shape, dtype=dt)
    return torch.frombuffer(bytearray(data), dtype=dt).reshape(shape)


def _array(dtype: str, shape: tuple, data: bytes, scalar: bool = False):
    dt = np.dtype(dtype)
    if dt.kind not in "biufc" or dt.fields is not None or dt.subdtype is not None:
        raise ValueError(f"array dtype {dtype!r} is not plain numbers")
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape) or len(shape) > 32 or math.prod(shape) * dt.itemsize != len(data):
        raise ValueError("array size does not match its data")
    a = np.frombuffer(data, dtype=dt).reshape(shape).copy()
    return a[()] if scalar else a


def _npdtype(dtype: str) -> np.dtype:
    dt = np.dtype(dtype)
    if dt.kind not in "biufc" or dt.fields is not None:
        raise ValueError("not a plain dtype")
    return dt


_ALLOWED = {
    ("builtins", "complex"), ("builtins", "slice"), ("builtins", "range"), ("builtins", "set"),
    ("builtins", "frozenset"), ("builtins", "bytearray"), ("builtins", "Ellipsis"),
    ("collections", "OrderedDict"), ("torch", "Size"), ("torch", "device"),
    ("autograder.judge.wire", "_tensor"), ("autograder.judge.wire", "_array"), ("autograder.judge.wire", "_npdtype"),
    *(("autograder.target", n) for n in ("Reply", "Handle", "Opaque", "StudentError", "Build", "Call", "Inspect",
                                         "Source")),
    *(("autograder.judge.sandbox", n) for n in ("Import", "Bye")),
}


class _Loader(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        if module == "torch" and name in _TORCH_DTYPES:
            return _TORCH_DTYPES[name]
        if module == "numpy" and name in ("bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                          "uint64", "float16", "float32", "float64", "complex64", "complex128"):
            return getattr(np, name)
        raise WireError(f"refused to load {module}.{name}")


class _Dumper(pickle.Pickler):
    def reducer_override(self, obj):
        if isinstance(obj, torch.Tensor):
            t = obj.detach().cpu().resolve_conj().resolve_neg().contiguous()
            name = str(t.dtype).removeprefix("torch.")
            if name not in _TORCH_DTYPES or t.layout != torch.strided:
                raise WireError(f"cannot send a {t.dtype} {t.layout} tensor")
            data = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
            return _tensor, (name, tuple(t.shape), data)
        if isinstance(obj, (np.ndarray, np.generic)) and not isinstance(obj, (np.str_, np.bytes_, np.void)):
            a = np.asarray(obj)
            if a.dtype.kind not in "biufc":
                raise WireError(f"cannot send an array of dtype {a.dtype}")
            return _array, (a.dtype.str, a.shape, np.ascontiguousarray(a).tobytes(), isinstance(obj, np.generic))
        if isinstance(obj, np.dtype):
            return _npdtype, (obj.str,)
        return NotImplemented


def dumps(obj) -> bytes:
    buf = io.BytesIO()
    _Dumper(buf, protocol=5).dump(obj)
    return buf.getvalue()


def loads(data: bytes):
    try:
        return _Loader(io.BytesIO(data)).load()
    except WireError:
        raise
    except Exception as e:  # noqa: BLE001 - any malformed pickle
        raise WireError(f"malformed frame: {type(e).__name__}: {e}"[:300]) from None


# ------------------------------------------------------------------------------------------------ framing
def send(sock: socket.socket, obj) -> None:
    send_bytes(sock, dumps(obj))


def send_bytes(sock: socket.socket, data: bytes) -> None:
    sock.sendall(_HEADER.pack(len(data)))
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
        except socket.timeout:
            raise TimeoutError from None
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv(sock: socket.socket, deadline: float | None = None, max_frame: int = MAX_FRAME):
    """One object; TimeoutError past `deadline` (time.monotonic()), EOFError if the peer is gone."""
    (n,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size, deadline))
    if n > max_frame:
        raise WireError(f"a reply of {n} bytes (the limit is {max_frame})")
    return loads(_recv_exact(sock, n, deadline))
