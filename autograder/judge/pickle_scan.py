"""The scan of a worker's frame before it is loaded (wire.loads): `_Scan` reads the pickle's opcodes with a reader
of its own (not pickletools') and follows what each would build, counting every value with its shared parts
expanded (what a walk of it would visit): nodes, depth, characters and bytes, and the total work of the
constructors and hashes loading would run. A frame over any cap below, or malformed, is refused unread; a
container may not change after it is referenced twice (a cycle, or a count gone stale). Why: wire.py's docstring.
"""

from __future__ import annotations

import io
import pickletools
import re

from .frames import WireError

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

# A lone surrogate cannot be encoded as UTF-8: a frame that holds one is loaded by wire._TextLoader.
_SURROGATE = re.compile("[\ud800-\udfff]")


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

    # long: the scan's hot loop, one branch per opcode kind, inlined for speed (docs/judge.md, Speed)
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
