"""Frames between judge and worker (frames.py): an 8-byte length, then a pickle that can only rebuild plain data.

Unpickling is code execution, so what a worker sends is loaded by `_Loader`, which resolves no global except a
short allowlist: builtins that build values, the kit's operation/reply dataclasses, torch dtypes, and the
constructors below. Tensors and arrays travel as (dtype, shape, raw bytes) and come back as plain tensors,
so a student's tensor subclass with a doctored __eq__ arrives as an ordinary tensor.

Nothing a worker sends is trusted in shape or size either. Pickle's memo lets a frame reference one object many
times, so 130 bytes can describe a tuple of 2**64 nodes: harmless to load, endless to hash, print or compare.
So before anything is built, `_scan` reads the frame's opcodes and follows what each would build, counting
every value with its shared parts expanded (what a walk of it would visit): nodes, depth, characters and
bytes, and the total work of the constructors and hashes loading would run. A frame over any cap is refused
unread; a container may not change after it is referenced twice (a cycle, or a count gone stale).
"""

from __future__ import annotations

import importlib
import io
import math
import pickle
import pickletools
import re
import socket
import time

import numpy as np
import torch

from .frames import HEADER, WireError, read_frame

MAX_FRAME = 64 << 20  # a reply bigger than this is not a result of this kit's small inputs
# What one frame may describe, shared parts expanded. The largest honest frame, a transformer's state dict from
# an Inspect, is about 3 000 opcodes, 1 500 nodes, depth 6, and its strings are the captured prints (24 000
# characters at most): every cap is far above what the kit sends and far below what hurts the judge.
MAX_OPS = 200_000  # opcodes in one frame (scanning costs about 1 us each)
MAX_NODES = 100_000  # objects a full walk of any one value visits
MAX_DEPTH = 32  # containers inside containers
MAX_TEXT = 1 << 16  # characters in one string
MAX_PAYLOAD = (
    MAX_FRAME  # bytes and characters a walk of any value visits; bytes copied by constructors
)
MAX_WORK = 2_000_000  # nodes handed to constructors, containers and hashes while loading, all told


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
# every later write of it would raise. Text from a worker is made valid where it enters the judge.
_SURROGATE = re.compile("[\ud800-\udfff]")


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


class _Dumper(pickle.Pickler):
    def reducer_override(self, obj):
        if isinstance(obj, torch.Tensor):
            t = obj.detach().cpu().resolve_conj().resolve_neg().contiguous()
            name = str(t.dtype).removeprefix("torch.")
            if name not in _TORCH_DTYPES or t.layout != torch.strided:
                raise WireError(f"cannot send a {t.dtype} {t.layout} tensor")
            data = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
            return _tensor, (name, tuple(t.shape), data)
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


class _Node:
    """What a value of the frame would be once loaded, in size: nodes, depth and payload, shared parts expanded."""

    __slots__ = ("nodes", "depth", "payload", "frozen")

    def __init__(self, payload: int = 0, depth: int = 0):
        self.nodes, self.depth, self.payload, self.frozen = 1, depth, payload, False


_MARK = object()
_LEAVES = {
    "INT",
    "BININT",
    "BININT1",
    "BININT2",
    "LONG",
    "LONG1",
    "LONG4",
    "NONE",
    "NEWTRUE",
    "NEWFALSE",
    "FLOAT",
    "BINFLOAT",
    "GLOBAL",
}
_TEXT = {
    "STRING",
    "BINSTRING",
    "SHORT_BINSTRING",
    "UNICODE",
    "BINUNICODE",
    "SHORT_BINUNICODE",
    "BINUNICODE8",
}
_BYTES = {"BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8"}
_EMPTY = {"EMPTY_LIST", "EMPTY_DICT", "EMPTY_SET", "EMPTY_TUPLE"}
# build a new container from the items above the mark
_FROM_MARK = {
    "TUPLE",
    "LIST",
    "DICT",
    "FROZENSET",
}
# add the items above the mark to the container below it
_ADD_FROM_MARK = {
    "APPENDS",
    "SETITEMS",
    "ADDITEMS",
}


class _Scan:
    """Follows a frame's opcodes without building anything; raises WireError past a cap."""

    def __init__(self):
        self.stack: list = []
        self.memo: dict[int, _Node] = {}
        self.surrogates = (
            False  # a string holds a lone surrogate: the frame is loaded by _TextLoader
        )
        self.work = 0

    def check(self, node: _Node) -> _Node:
        if node.nodes > MAX_NODES:
            raise WireError(f"a value of more than {MAX_NODES} parts")
        if node.depth > MAX_DEPTH:
            raise WireError(f"a value nested more than {MAX_DEPTH} deep")
        if node.payload > MAX_PAYLOAD:
            raise WireError(f"a value of more than {MAX_PAYLOAD >> 20} MiB")
        return node

    def pop(self) -> _Node:
        if not self.stack or self.stack[-1] is _MARK:
            raise WireError("malformed frame: stack underflow")
        return self.stack.pop()

    def pop_mark(self) -> list[_Node]:
        items = []
        while self.stack and self.stack[-1] is not _MARK:
            items.append(self.stack.pop())
        if not self.stack:
            raise WireError("malformed frame: no mark")
        self.stack.pop()
        return items

    def add(self, parent: _Node, children: list[_Node]) -> _Node:
        """`parent` gains `children` (walked, hashed or handed to a constructor once each while loading)."""
        if parent.frozen:
            raise WireError("a container changed after it was shared")
        for c in children:
            c.frozen = (
                True  # once inside another value, changing it would make that value's count stale
            )
            parent.nodes += c.nodes
            parent.payload += c.payload
            parent.depth = max(parent.depth, c.depth + 1)
            self.work += c.nodes
        if self.work > MAX_WORK:
            raise WireError("a frame that takes too much work to load")
        return self.check(parent)

    def run(self, data: bytes) -> None:
        ops = 0
        for op, arg, _ in pickletools.genops(data):
            ops += 1
            if ops > MAX_OPS:
                raise WireError(f"a frame of more than {MAX_OPS} operations")
            name, stack = op.name, self.stack
            if name in _LEAVES:
                if name.startswith("LONG") and arg.bit_length() > 4096:
                    raise WireError("an integer of more than 4096 bits")
                stack.append(_Node())
            elif name in _TEXT or name in _BYTES:
                if name in _TEXT and len(arg) > MAX_TEXT:
                    raise WireError(f"a string of more than {MAX_TEXT} characters")
                if name in _TEXT and not self.surrogates and isinstance(arg, str):
                    self.surrogates = _SURROGATE.search(arg) is not None
                stack.append(self.check(_Node(len(arg))))
            elif name in _EMPTY:
                stack.append(_Node(depth=1))
            elif name in _FROM_MARK:
                stack.append(self.add(_Node(depth=1), self.pop_mark()))
            elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
                stack.append(self.add(_Node(depth=1), [self.pop() for _ in range(int(name[-1]))]))
            elif name in ("APPEND", "SETITEM", "BUILD"):
                items = [self.pop() for _ in range(2 if name == "SETITEM" else 1)]
                self.add(self.stack[-1] if stack and stack[-1] is not _MARK else self.pop(), items)
            elif name in _ADD_FROM_MARK:
                items = self.pop_mark()
                self.add(self.stack[-1] if stack and stack[-1] is not _MARK else self.pop(), items)
            elif name == "STACK_GLOBAL":
                self.pop(), self.pop()
                stack.append(_Node())
            elif name in ("REDUCE", "NEWOBJ", "NEWOBJ_EX"):
                args = [self.pop() for _ in range(3 if name == "NEWOBJ_EX" else 2)]  # callable last
                stack.append(self.add(_Node(depth=1), args))
            elif name == "MARK":
                stack.append(_MARK)
            elif name == "POP":
                self.pop()
            elif name == "POP_MARK":
                self.pop_mark()
            elif name in ("DUP", "GET", "BINGET", "LONG_BINGET"):
                node = self.pop() if name == "DUP" else self.memo.get(arg)
                if node is None:
                    raise WireError("malformed frame: unknown memo entry")
                node.frozen = True  # referenced twice: it may no longer change
                stack.extend([node, node] if name == "DUP" else [node])
            elif name in ("PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE"):
                if not stack or stack[-1] is _MARK:
                    raise WireError("malformed frame: nothing to memoize")
                self.memo[len(self.memo) if name == "MEMOIZE" else arg] = stack[-1]
            elif name in ("PROTO", "FRAME", "STOP"):
                pass
            else:  # persistent ids, out-of-band buffers, extension codes, INST/OBJ: never sent by this kit
                raise WireError(f"refused opcode {name}")


def loads(data: bytes, trusted: bool = False):
    """A frame's value. `trusted`: the frame comes from the judge's own grading process (a worker reading its
    operations), so the scan that protects the judge from a worker is skipped: it cost a worker about 45 us per
    operation, 1 ms for a transformer's weights. The allowlist still applies."""
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
