"""The reply scan's own reader (wire._Scan, issue 24) against the one it replaced, pickletools.genops followed
opcode by opcode (kept here as the oracle, as it was): the same verdict, the same refusal, on honest replies,
on the hostile frames of the other tests, and on frames mutated and made up by Hypothesis (a fixed budget:
the file's tests take about 3 s on the loaded 2-core machine). A malformed frame is refused as WireError, never
another exception."""

from __future__ import annotations

import collections
import pickle
import pickletools
import struct

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.judge import wire
from autograder.judge.control import (
    Configure,
    Configured,
    Ended,
    Kill,
    Preload,
    SetupFailed,
    Status,
    Take,
    Taken,
    WorkerReady,
    ZygoteReady,
)
from autograder.judge.operations import Bye, Import
from autograder.judge.pickle_scan import (
    _MARK,
    _SURROGATE,
    MAX_DEPTH,
    MAX_NODES,
    MAX_OPS,
    MAX_PAYLOAD,
    MAX_TEXT,
    MAX_WORK,
    _Node,
)
from autograder.judge.wire import WireError
from autograder.student_code.interface import (
    Build,
    Call,
    Handle,
    Inspect,
    Opaque,
    Reply,
    StudentError,
)
from tests.test_judge_bounds import BOMBS, Forged, self_similar_list, self_similar_tuple
from tests.test_judge_wire import _Evil

# ------------------------------------------------------------------- the oracle: the scan before issue 24
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


class _OldScan:
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


# ------------------------------------------------------------------------------------------- the verdicts
# The malformed-frame refusals that follow the stack, worded by both scans alike; every other malformed frame
# (a truncated or undecodable argument, an unknown opcode, no STOP) was a ValueError of genops' that loads
# turned into WireError, and is now a WireError of the scan itself.
_STRUCTURAL = {
    f"malformed frame: {m}"
    for m in ("stack underflow", "no mark", "unknown memo entry", "nothing to memoize")
}


def verdict(scan_class, data: bytes):
    """("ok", surrogates, work) or ("refused", what): what the scan says of `data`."""
    scan = scan_class()
    try:
        scan.run(data)
    except WireError as e:
        what = str(e)
        if what.startswith("malformed frame") and what not in _STRUCTURAL:
            what = "malformed frame"
        return "refused", what
    except Exception:  # noqa: BLE001 - the oracle's genops: loads refused it as a malformed frame
        assert scan_class is _OldScan, "a malformed frame escaped the scan as another exception"
        return "refused", "malformed frame"
    return "ok", scan.surrogates, scan.work


def agree(data: bytes):
    assert verdict(wire._Scan, data) == verdict(_OldScan, data), data[:200]


# ----------------------------------------------------------------------------------- (a) honest replies
def honest_values():
    state = {f"layers.{i}.w_{n}.weight": torch.randn(4, 4) for i in range(6) for n in "qkvo"}
    x = torch.randn(3, 4)
    h = Handle(3, "multi_head", "MultiHeadAttention")
    return [
        Reply(),
        Reply(torch.randn(2, 3, 4)),
        Reply(
            (torch.randn(2, 5), torch.rand(2, 5) > 0.5), {"attention_weights": torch.zeros(1, 2)}
        ),
        Reply(
            {"module": True, "state": state, "params": list(state), "children": ["a"] * 5},
            grad_enabled_seen=(True, False),
            training_seen=(False,),
        ),
        Reply(None, param_grads={"w": torch.ones(2, dtype=torch.float64)}),
        Reply([[1, 2], [3, [4, 5]]], {"a": 1}, [None], {"p": torch.ones(1)}),
        Reply("p" * 24_000),
        Reply({"k\udcff": ["\ud800", StudentError("exception", "m\udfff")]}),
        Reply("한국어 ñ é \u2028"),  # ED-led UTF-8 that is no surrogate
        StudentError("timeout", "timed out", "attention.softmax"),
        h,
        Opaque("Foo", "<Foo>"),
        Build("multi_head", "MultiHeadAttention", {"d_model": 8, "n_heads": 2}, state, train=True),
        Call(h, "forward", (x, x, x), {"mask": torch.ones(3, 3, dtype=torch.bool)}),
        Inspect(h),
        Import("attention"),
        Bye(),
        (x, x, x),
        # the zygote's control channel and a worker's first words (judge/control.py)
        Preload([("attention", b"\xe3\x00"), ("mask", b"")]),
        ZygoteReady(1 << 30, 0, "", "user"),
        Configure({"root": "/tmp/x", "uids": [], "lang": "es"}),
        Configured(),
        Take(),
        Taken(12),
        Kill(12),
        Status(12, 0.5),
        Ended(-9, False),
        WorkerReady(12),
        SetupFailed("PermissionError: no"),
        np.arange(12.0).reshape(3, 4),
        np.float32(1.5),
        np.int64(-7),
        np.dtype("float32"),
        [
            1,
            -1,
            255,
            256,
            65535,
            65536,
            2**31,
            -(2**31) - 1,
            2**63,
            2**200,
            -(2**200),
            0.5,
            float("nan"),
        ],
        {1, 2, 3},
        frozenset({"a", "b"}),
        bytearray(b"abc"),
        b"\x00" * 300,
        b"x" * 100_000,
        range(5),
        slice(1, 9, 2),
        complex(1, 2),
        torch.Size([2, 3]),
        torch.device("cpu"),
        collections.OrderedDict(a=1, b=[2]),
        [[[]]] * 3,
        self_similar_tuple(5),
        torch.tensor(3.5),
        torch.randn(2, dtype=torch.complex64),
        torch.zeros(0, 5),
        ...,
    ]


def honest_frames() -> list[bytes]:
    frames = []
    for value in honest_values():
        frames.append(wire.dumps(value))
        plain = (
            Forged(list, ()) if isinstance(value, torch.Tensor | np.ndarray | np.generic) else value
        )
        for protocol in range(
            6
        ):  # the text protocol's opcodes too: GLOBAL, PUT, GET, INT, LONG, STRING...
            try:
                frames.append(pickle.dumps(plain, protocol=protocol))
            except (pickle.PicklingError, TypeError, AttributeError):
                pass
    return frames


HONEST = honest_frames()


def test_honest_replies_scan_alike_and_pass():
    for data in HONEST:
        agree(data)
    for value in honest_values():
        assert verdict(wire._Scan, wire.dumps(value))[0] == "ok", value


# ------------------------------------------------------------------------------------ (b) hostile frames
HOSTILE = {
    **{name: pickle.dumps(bomb, protocol=5) for name, bomb in BOMBS.items()},
    "os.system": pickle.dumps(_Evil()),
    "torch's own tensor pickle": pickle.dumps(torch.ones(2)),
    "an object array": pickle.dumps(np.array([1, 2], dtype=object)),
    "garbage": b"\x80\x05garbage",
    "empty": b"",
    "a self-similar list, protocol 0": pickle.dumps(self_similar_list(40), protocol=0),
    "a self-similar tuple, protocol 2": pickle.dumps(self_similar_tuple(40), protocol=2),
    "nested deeper than the cap": pickle.dumps(Reply(eval("[" * 40 + "]" * 40)), protocol=5),
    "a list that contains itself, protocol 0": pickle.dumps(
        BOMBS["a list that contains itself"], 0
    ),
    "an integer of 4300 bits, protocol 0": b"L" + b"9" * 1300 + b"L\n.",
    "an integer of 5000 digits, protocol 0": b"I" + b"9" * 5000 + b"\n.",
    "a string past the cap, protocol 0": pickle.dumps("x" * (MAX_TEXT + 1), protocol=0),
    "more operations than the cap": pickle.dumps(list(range(MAX_OPS)), protocol=5),
    "an integer of 4100 bits": pickle.dumps(Reply(-(2**4100)), protocol=5),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_frames_are_refused_alike(name):
    agree(
        HOSTILE[name]
    )  # some pass the scan and are refused by the loader's allowlist (tests/test_judge_wire.py)


# ------------------------------------------------------------------------- (c) mutated and made-up frames
SEEDS = [f for f in HONEST if len(f) < 4000] + [f for f in HOSTILE.values() if len(f) < 4000]
CODES = sorted({op.code.encode("latin-1")[0] for op in pickletools.opcodes})


def opcode_starts(data: bytes) -> list[int]:
    try:
        return [pos for _, _, pos in pickletools.genops(data)]
    except Exception:  # noqa: BLE001 - a hostile seed that is not a pickle
        return [0]


@st.composite
def mutated(draw):
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["truncate", "flip", "opcode", "insert", "delete"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if how == "truncate":
            del data[at:]
        elif how == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif how == "opcode":  # another opcode where one starts: the stack and the memo go wrong
            starts = opcode_starts(bytes(data))
            at = draw(st.sampled_from(starts))
            if at < len(data):
                data[at] = draw(st.sampled_from(CODES))
        elif how == "insert":
            data[at:at] = bytes([draw(st.sampled_from(CODES))])
        elif data:
            del data[at : at + draw(st.integers(1, 8))]
    return bytes(data)


def _arg(draw, op) -> bytes:
    """An argument for `op`, mostly well-formed, small numbers so that memo keys and lengths meet."""
    name = op.arg.name if op.arg is not None else None
    small = draw(st.integers(0, 6))
    text = draw(st.sampled_from(["", "a", "ab\udcff", "é", "한", "x" * 40]))
    raw = text.encode("utf-8", "surrogatepass")
    if name is None:
        return b""
    if name in ("uint1", "long1"):
        return bytes([small]) + (bytes(small) if name == "long1" else b"")
    if name in ("uint2",):
        return struct.pack("<H", small)
    if name in ("int4", "uint4", "long4"):
        return struct.pack("<i", small) + (b"\xff" * small if name == "long4" else b"")
    if name == "uint8":
        return struct.pack("<Q", small)
    if name == "float8":
        return struct.pack(">d", 1.5)
    if name in ("string1", "bytes1", "unicodestring1"):
        return bytes([len(raw)]) + raw
    if name in ("string4", "bytes4", "unicodestring4"):
        return struct.pack("<I", len(raw)) + raw
    if name in ("bytes8", "bytearray8", "unicodestring8"):
        return struct.pack("<Q", len(raw)) + raw
    if name == "decimalnl_short":
        return draw(st.sampled_from([b"%d\n" % small, b"00\n", b"01\n", b"x\n", b"1"]))
    if name == "decimalnl_long":
        return draw(st.sampled_from([b"%dL\n" % small, b"12\n", b"L\n"]))
    if name == "floatnl":
        return draw(st.sampled_from([b"1.5\n", b"nan\n", b"1.x\n"]))
    if name == "stringnl":
        return draw(st.sampled_from([b"'abc'\n", b'"a\\x00"\n', b"abc\n"]))
    if name == "unicodestringnl":
        return draw(st.sampled_from([b"abc\n", b"\\udcff\n", b"\\u1234x\n", b"ab"]))
    if name == "stringnl_noescape":
        return b"pid\n"
    return b"builtins\nset\n"  # stringnl_noescape_pair


@st.composite
def made_up(draw):
    """A stream of opcodes drawn from all of them, with arguments, mostly ending in STOP."""
    ops = draw(st.lists(st.sampled_from(pickletools.opcodes), max_size=40))
    body = b"".join(op.code.encode("latin-1") + _arg(draw, op) for op in ops)
    return b"\x80\x05" + body + draw(st.sampled_from([b".", b".", b""]))


# The opcodes that move values between the stack and the memo, with small arguments: where a leaf is
# duplicated, memoized, fetched again, used as a container, shared and then changed.
PUSHES = [b"N", b"K\x01", b"]", b")", b"}", b"\x8c\x01a", b"(", b"2", b"h\x00", b"h\x01"]
MOVES = [
    b"a",
    b"e",
    b"s",
    b"u",
    b"b",
    b"\x94",
    b"q\x00",
    b"q\x01",
    b"0",
    b"1",
    b"\x86",
    b"t",
    b"R",
    b"\x93",
]


@st.composite
def stack_games(draw) -> list[bytes]:
    return draw(st.lists(st.one_of(st.sampled_from(PUSHES), st.sampled_from(MOVES)), max_size=30))


@settings(
    max_examples=600,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(st.one_of(mutated(), made_up()))
def test_mutated_and_made_up_frames_are_judged_alike(data):
    agree(data)


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(stack_games())
def test_stack_games_are_counted_alike_at_every_step(ops):
    # every prefix, stopped: the counts so far (the loading work sums every child's nodes) agree too
    for i in range(len(ops) + 1):
        agree(b"".join(ops[:i]) + b".")


# A leaf is one shared node in the new scan: where the old scan's own node for it would have changed or
# been frozen, the verdict and the counts are the same.
LEAF_CASES = {
    "a leaf used as a list": b"NNa.",
    "a duplicated leaf used as a list": b"N2Na.",
    "a memoized leaf, fetched, then used as a list": b"N\x94h\x000Na.",
    "a memoized leaf used as a list, then fetched": b"N\x94Na0h\x00]\x94h\x00a.",
    "a leaf given a thousand items": b"N(" + b"N" * 1000 + b"e.",
    "a duplicated leaf inside a tuple, then grown": b"N2\x85Na.",
    "a leaf put twice": b"Nq\x00q\x01h\x00h\x01\x86.",
}


@pytest.mark.parametrize("name", list(LEAF_CASES))
def test_leaves_are_counted_as_their_own_nodes(name):
    agree(LEAF_CASES[name])
