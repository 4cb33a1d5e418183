"""Frames between judge and worker (frames.py): an 8-byte length, then a pickle that can only rebuild plain data.

Unpickling is code execution, so what a worker sends is loaded by `_Loader`, which resolves no global except a
short allowlist: builtins that build values, the kit's operation/reply dataclasses, torch dtypes, and the
constructors below. Tensors and arrays travel as (dtype, shape, raw bytes) and come back as plain tensors,
so a student's tensor subclass with a doctored __eq__ arrives as an ordinary tensor.

Nothing a worker sends is trusted in shape or size either. Pickle's memo lets a frame reference one object many
times, so 130 bytes can describe a tuple of 2**64 nodes: harmless to load, endless to hash, print or compare.
So before anything is built, `_Scan` reads the frame's opcodes (with a reader of its own, not pickletools') and
follows what each would build, counting every value with its shared parts expanded (what a walk of it would
visit): nodes, depth, characters and bytes, and the total work of the constructors and hashes loading would
run. A frame over any cap, or malformed, is refused unread; a container may not change after it is referenced
twice (a cycle, or a count gone stale).
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


class _Node:
    """What a value of the frame would be once loaded, in size: nodes, depth and payload, shared parts expanded."""

    __slots__ = ("nodes", "depth", "payload", "frozen")

    def __init__(self, payload: int = 0, depth: int = 0):
        self.nodes, self.depth, self.payload, self.frozen = 1, depth, payload, False


_MARK = object()
# A plain leaf (an int, a float, None, a bool, a global) is the same node everywhere: two shared objects stand
# for all of them, as honest replies are mostly leaves (60 % of a grading run's nodes). _LEAF is an occurrence
# nobody else references yet; once it is duplicated (DUP) it is _FROZEN_LEAF, as a fresh node would be frozen.
# Neither is ever changed: where a leaf is memoized or becomes a parent (a malformed frame, APPEND onto an int),
# it is first replaced by a node of its own, so every count is what one node per leaf gives.
_LEAF, _FROZEN_LEAF = _Node(), _Node()
# As a child a leaf is frozen; as a parent _LEAF is replaced first.
_LEAF.frozen = _FROZEN_LEAF.frozen = True

# What the scan does with each opcode byte (pickletools.opcodes names them): one kind per way of reading its
# argument and changing the stack. Kinds are small ints tested in order of frequency (a grading run's frames:
# MEMOIZE 30 % of the opcodes, the plain leaves 30 %, short strings 14 %, REDUCE and the short tuples 10 %).
(
    _K_MEMOIZE,
    _K_LEAF,  # fixed-size argument (_ARG_SIZE), a plain leaf
    _K_SHORT_TEXT,  # SHORT_BINUNICODE
    _K_NEW,  # REDUCE, TUPLE1-3, NEWOBJ, NEWOBJ_EX: a new value of the top n items (_ARG_SIZE)
    _K_BINGET,
    _K_SHORT_BYTES,  # SHORT_BINBYTES
    _K_STACK_GLOBAL,
    _K_MARK,
    _K_FROM_MARK,  # TUPLE, LIST, DICT, FROZENSET: a new container of the items above the mark
    _K_ADD_FROM_MARK,  # APPENDS, SETITEMS, ADDITEMS: the items above the mark join the container below it
    _K_LONG_BINGET,
    _K_EMPTY,
    _K_ADD_ONE,  # APPEND, BUILD
    _K_SETITEM,
    _K_SIZED,  # BINBYTES, BINBYTES8, BYTEARRAY8, BINUNICODE, BINUNICODE8, BINSTRING: a length, then the data
    _K_BINPUT,
    _K_LONG_BINPUT,
    _K_POP,
    _K_POP_MARK,
    _K_DUP,
    _K_LONG1,
    _K_LONG4,
    _K_SKIP,  # PROTO, FRAME: a fixed-size argument, nothing built
    _K_STOP,
    _K_OTHER,  # the text protocol's opcodes and the refused ones: argument read by pickletools' own reader
) = range(25)
_KIND = [_K_OTHER] * 256  # an unknown byte is found by _OPCODE, below
_ARG_SIZE = [0] * 256
_OPCODE = {op.code.encode("latin-1")[0]: op for op in pickletools.opcodes}
_CODE = {op.name: code for code, op in _OPCODE.items()}
for _name, _kind, _size in (
    ("MEMOIZE", _K_MEMOIZE, 0),
    ("NONE", _K_LEAF, 0),
    ("NEWTRUE", _K_LEAF, 0),
    ("NEWFALSE", _K_LEAF, 0),
    ("BININT1", _K_LEAF, 1),
    ("BININT2", _K_LEAF, 2),
    ("BININT", _K_LEAF, 4),
    ("BINFLOAT", _K_LEAF, 8),
    ("SHORT_BINUNICODE", _K_SHORT_TEXT, 0),
    ("REDUCE", _K_NEW, 2),  # the number of items it takes, a callable and its arguments
    ("TUPLE1", _K_NEW, 1),
    ("TUPLE2", _K_NEW, 2),
    ("TUPLE3", _K_NEW, 3),
    ("BINGET", _K_BINGET, 1),
    ("SHORT_BINBYTES", _K_SHORT_BYTES, 0),
    ("STACK_GLOBAL", _K_STACK_GLOBAL, 0),
    ("MARK", _K_MARK, 0),
    ("TUPLE", _K_FROM_MARK, 0),
    ("LIST", _K_FROM_MARK, 0),
    ("DICT", _K_FROM_MARK, 0),
    ("FROZENSET", _K_FROM_MARK, 0),
    ("APPENDS", _K_ADD_FROM_MARK, 0),
    ("SETITEMS", _K_ADD_FROM_MARK, 0),
    ("ADDITEMS", _K_ADD_FROM_MARK, 0),
    ("LONG_BINGET", _K_LONG_BINGET, 4),
    ("EMPTY_LIST", _K_EMPTY, 0),
    ("EMPTY_DICT", _K_EMPTY, 0),
    ("EMPTY_SET", _K_EMPTY, 0),
    ("EMPTY_TUPLE", _K_EMPTY, 0),
    ("APPEND", _K_ADD_ONE, 0),
    ("BUILD", _K_ADD_ONE, 0),
    ("SETITEM", _K_SETITEM, 0),
    ("NEWOBJ", _K_NEW, 2),
    ("NEWOBJ_EX", _K_NEW, 3),
    ("BINBYTES", _K_SIZED, 4),  # the length's size
    ("BINBYTES8", _K_SIZED, 8),
    ("BYTEARRAY8", _K_SIZED, 8),
    ("BINUNICODE", _K_SIZED, 4),
    ("BINUNICODE8", _K_SIZED, 8),
    ("BINSTRING", _K_SIZED, 4),
    ("BINPUT", _K_BINPUT, 1),
    ("LONG_BINPUT", _K_LONG_BINPUT, 4),
    ("POP", _K_POP, 0),
    ("POP_MARK", _K_POP_MARK, 0),
    ("DUP", _K_DUP, 0),
    ("LONG1", _K_LONG1, 0),
    ("LONG4", _K_LONG4, 0),
    ("PROTO", _K_SKIP, 1),
    ("FRAME", _K_SKIP, 8),
    ("STOP", _K_STOP, 0),
):
    _KIND[_CODE[_name]], _ARG_SIZE[_CODE[_name]] = _kind, _size
_TEXT_CODES = frozenset(_CODE[n] for n in ("BINUNICODE", "BINUNICODE8", "BINSTRING"))
_UTF8_CODES = frozenset(_CODE[n] for n in ("BINUNICODE", "BINUNICODE8"))
# the text protocol's strings, and protocol 1's short one
_STRING_NAMES = {"STRING", "UNICODE", "SHORT_BINSTRING"}
_LEAF_NAMES = {"INT", "FLOAT", "GLOBAL"}


def _malformed(what: str = "truncated") -> WireError:
    return WireError(f"malformed frame: {what}")


def _underflow() -> WireError:
    return _malformed("stack underflow")


def _check(node: _Node) -> _Node:
    if node.nodes > MAX_NODES:
        raise WireError(f"a value of more than {MAX_NODES} parts")
    if node.depth > MAX_DEPTH:
        raise WireError(f"a value nested more than {MAX_DEPTH} deep")
    if node.payload > MAX_PAYLOAD:
        raise WireError(f"a value of more than {MAX_PAYLOAD >> 20} MiB")
    return node


def _add(parent: _Node, children: list[_Node], work: int) -> int:
    """`parent` gains `children` (walked, hashed or handed to a constructor once each while loading); the
    loading work so far, `work`, grows by their nodes and is returned."""
    if parent.frozen:
        raise WireError("a container changed after it was shared")
    nodes, payload, depth = parent.nodes, parent.payload, parent.depth
    for c in children:
        # once inside another value, changing it would make that value's count stale
        c.frozen = True
        n = c.nodes
        nodes += n
        work += n
        payload += c.payload
        if c.depth >= depth:
            depth = c.depth + 1
    parent.nodes, parent.payload, parent.depth = nodes, payload, depth
    if work > MAX_WORK:
        raise WireError("a frame that takes too much work to load")
    _check(parent)
    return work


def _other(data: bytes, pos: int):
    """The opcode at `pos` and its argument, read by pickletools' own reader (the text protocol's opcodes, which
    this kit never sends, and the refused ones, whose argument is read before they are refused), and where the
    next opcode starts."""
    op = _OPCODE.get(data[pos])
    if op is None:
        raise _malformed(f"unknown opcode {data[pos]:#04x}")
    f = io.BytesIO(data)
    f.seek(pos + 1)
    try:
        arg = op.arg.reader(f) if op.arg is not None else None
    except Exception as e:  # noqa: BLE001 - what the reader refuses: a truncated or malformed argument
        raise _malformed(f"{type(e).__name__}: {e}"[:200]) from None
    return op.name, arg, f.tell()


class _Scan:
    """Follows a frame's opcodes without building anything; raises WireError past a cap or on a malformed frame.

    A reader of its own over the frame's bytes: pickletools.genops, which it replaced, cost 3.4 times as much
    (a generator, a file object and a reader call per opcode; 0.75 us an opcode against 0.22, ~80 opcodes a
    reply: benchmarks/bench_wire.py)."""

    def __init__(self):
        # a string holds a lone surrogate: the frame is loaded by _TextLoader
        self.surrogates = False
        self.work = 0

    def run(self, data: bytes) -> None:
        data = bytes(data)
        end, pos, ops, work = len(data), 0, 0, 0
        # an opcode takes a byte at least: a frame no longer than the cap cannot pass it
        counting = end > MAX_OPS
        stack: list = []
        # where each MARK still on the stack is (only the opcodes that pop to a mark remove one)
        marks: list[int] = []
        memo: dict = {}
        surrogates = False
        kind_of, arg_size = _KIND, _ARG_SIZE
        mark, leaf = _MARK, _LEAF
        while True:
            if pos >= end:
                raise _malformed("no STOP")
            code = data[pos]
            if counting:
                ops += 1
                if ops > MAX_OPS:
                    _other(data, pos)  # a malformed last opcode is reported as such, as before
                    raise WireError(f"a frame of more than {MAX_OPS} operations")
            kind = kind_of[code]
            pos += 1
            if kind == _K_MEMOIZE:
                if not stack or stack[-1] is mark:
                    raise _malformed("nothing to memoize")
                top = stack[-1]
                if top is leaf:
                    top = stack[-1] = _Node()
                memo[len(memo)] = top
            elif kind == _K_LEAF:
                pos += arg_size[code]
                if pos > end:
                    raise _malformed()
                stack.append(leaf)
            elif kind == _K_SHORT_TEXT:
                if pos >= end:
                    raise _malformed()
                n = data[pos]
                pos += 1 + n
                if pos > end:
                    raise _malformed()
                raw = data[pos - n : pos]
                # ASCII is UTF-8 of as many characters, no surrogate among them: decoded only if not
                if not raw.isascii():
                    try:
                        n = len(text := str(raw, "utf-8", "surrogatepass"))
                    except UnicodeDecodeError:
                        raise _malformed("not UTF-8") from None
                    if not surrogates and b"\xed" in raw:  # a surrogate is encoded as ED A0-BF xx
                        surrogates = _SURROGATE.search(text) is not None
                stack.append(_Node(n))
            elif kind == _K_NEW:
                n = arg_size[code]
                items = stack[-n:]
                if len(items) < n or mark in items:
                    raise _underflow()
                del stack[-n:]
                nodes, payload, depth = 1, 0, 1
                for c in items:
                    c.frozen = True
                    nodes += c.nodes
                    payload += c.payload
                    if c.depth >= depth:
                        depth = c.depth + 1
                work += nodes - 1
                node = _Node(payload, depth)
                node.nodes = nodes
                if work > MAX_WORK:
                    raise WireError("a frame that takes too much work to load")
                if nodes > MAX_NODES or depth > MAX_DEPTH or payload > MAX_PAYLOAD:
                    _check(node)
                stack.append(node)
            elif kind == _K_BINGET or kind == _K_LONG_BINGET:
                size = arg_size[code]
                pos += size
                if pos > end:
                    raise _malformed()
                node = memo.get(
                    data[pos - 1] if size == 1 else int.from_bytes(data[pos - 4 : pos], "little")
                )
                if node is None:
                    raise _malformed("unknown memo entry")
                node.frozen = True  # referenced twice: it may no longer change
                stack.append(node)
            elif kind == _K_SHORT_BYTES:
                if pos >= end:
                    raise _malformed()
                n = data[pos]
                pos += 1 + n
                if pos > end:
                    raise _malformed()
                stack.append(_Node(n))
            elif kind == _K_STACK_GLOBAL:
                if len(stack) < 2 or stack[-1] is mark or stack[-2] is mark:
                    raise _underflow()
                stack[-2:] = [leaf]
            elif kind == _K_MARK:
                marks.append(len(stack))
                stack.append(mark)
            elif kind == _K_FROM_MARK or kind == _K_ADD_FROM_MARK or kind == _K_POP_MARK:
                if not marks:
                    raise _malformed("no mark")
                at = marks.pop()
                items = stack[at + 1 :]
                del stack[at:]
                if kind == _K_FROM_MARK:
                    node = _Node(0, 1)
                    work = _add(node, items, work)
                    stack.append(node)
                elif kind == _K_ADD_FROM_MARK:
                    work = self._into_top(stack, items, work)
            elif kind == _K_EMPTY:
                stack.append(_Node(0, 1))
            elif kind == _K_ADD_ONE or kind == _K_SETITEM:
                n = 2 if kind == _K_SETITEM else 1
                if len(stack) < n or mark in stack[-n:]:
                    raise _underflow()
                items = stack[-n:]
                del stack[-n:]
                work = self._into_top(stack, items, work)
            elif kind == _K_SIZED:
                size = arg_size[code]
                pos += size
                if pos > end:
                    raise _malformed()
                n = int.from_bytes(
                    data[pos - size : pos], "little", signed=code == _CODE["BINSTRING"]
                )
                if n < 0:
                    raise _malformed("negative length")
                pos += n
                if pos > end:
                    raise _malformed()
                if code in _TEXT_CODES:
                    raw = data[pos - n : pos]
                    try:
                        text = (
                            raw.decode("latin-1")
                            if code not in _UTF8_CODES
                            else str(raw, "utf-8", "surrogatepass")
                        )
                    except UnicodeDecodeError:
                        raise _malformed("not UTF-8") from None
                    if len(text) > MAX_TEXT:
                        raise WireError(f"a string of more than {MAX_TEXT} characters")
                    if not surrogates and b"\xed" in raw:
                        surrogates = _SURROGATE.search(text) is not None
                    n = len(text)
                stack.append(_check(_Node(n)))
            elif kind == _K_BINPUT or kind == _K_LONG_BINPUT:
                size = arg_size[code]
                pos += size
                if pos > end:
                    raise _malformed()
                if not stack or stack[-1] is mark:
                    raise _malformed("nothing to memoize")
                top = stack[-1]
                if top is leaf:
                    top = stack[-1] = _Node()
                memo[
                    data[pos - 1] if size == 1 else int.from_bytes(data[pos - 4 : pos], "little")
                ] = top
            elif kind == _K_POP:
                if not stack or stack[-1] is mark:
                    raise _underflow()
                stack.pop()
            elif kind == _K_DUP:
                if not stack or stack[-1] is mark:
                    raise _underflow()
                node = stack[-1]
                if node is leaf:
                    node = stack[-1] = _FROZEN_LEAF
                node.frozen = True  # referenced twice: it may no longer change
                stack.append(node)
            elif kind == _K_LONG1 or kind == _K_LONG4:
                size = 1 if kind == _K_LONG1 else 4
                pos += size
                if pos > end:
                    raise _malformed()
                n = int.from_bytes(data[pos - size : pos], "little", signed=size == 4)
                if n < 0:
                    raise _malformed("negative length")
                pos += n
                if pos > end:
                    raise _malformed()
                if int.from_bytes(data[pos - n : pos], "little", signed=True).bit_length() > 4096:
                    raise WireError("an integer of more than 4096 bits")
                stack.append(leaf)
            elif kind == _K_SKIP:
                pos += arg_size[code]
                if pos > end:
                    raise _malformed()
            elif kind == _K_STOP:
                break
            else:
                name, arg, pos = _other(data, pos - 1)
                if name in _LEAF_NAMES or name == "LONG":
                    if name == "LONG" and arg.bit_length() > 4096:
                        raise WireError("an integer of more than 4096 bits")
                    stack.append(leaf)
                elif name in _STRING_NAMES:
                    if len(arg) > MAX_TEXT:
                        raise WireError(f"a string of more than {MAX_TEXT} characters")
                    if not surrogates:
                        surrogates = _SURROGATE.search(arg) is not None
                    stack.append(_check(_Node(len(arg))))
                elif name == "GET":
                    node = memo.get(arg)
                    if node is None:
                        raise _malformed("unknown memo entry")
                    node.frozen = True
                    stack.append(node)
                elif name == "PUT":
                    if not stack or stack[-1] is mark:
                        raise _malformed("nothing to memoize")
                    top = stack[-1]
                    if top is leaf:
                        top = stack[-1] = _Node()
                    memo[arg] = top
                else:  # persistent ids, out-of-band buffers, extension codes, INST/OBJ: never sent by this kit
                    raise WireError(f"refused opcode {name}")
        self.surrogates, self.work = surrogates, work

    @staticmethod
    def _into_top(stack: list, items: list, work: int) -> int:
        """APPEND, SETITEM, BUILD and their MARK forms: `items` join the value below them, which stays."""
        if not stack or stack[-1] is _MARK:
            raise _underflow()
        parent = stack[-1]
        if (
            parent is _LEAF
        ):  # a leaf used as a container (loading refuses it): a node of its own, as before
            parent = stack[-1] = _Node()
        return _add(parent, items, work)


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
