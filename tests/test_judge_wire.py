"""What crosses between judge and worker: plain data only; anything else is refused, never unpickled."""

from __future__ import annotations

import io
import os
import pickle

import numpy as np
import pytest
import torch

from autograder.judge import wire
from autograder.student_code.interface import Handle, Opaque, Reply, StudentError


@pytest.mark.parametrize(
    "value",
    [
        torch.randn(2, 3, dtype=torch.float64),
        torch.randn(3, 4).t(),
        torch.zeros(0, 5),
        torch.tensor(3.5),
        torch.tensor([True, False]),
        torch.arange(6, dtype=torch.int64).view(2, 3),
        torch.randn(2, dtype=torch.bfloat16),
        torch.randn(2, dtype=torch.complex64),
        np.arange(5.0),
        np.float32(1.5),
        np.int64(7),
        np.dtype("float32"),
    ],
)
def test_data_round_trips(value):
    back = wire.loads(wire.dumps(value))
    assert type(back) is type(value) or (
        isinstance(value, torch.Tensor) and type(back) is torch.Tensor
    )
    if isinstance(value, torch.Tensor):
        assert back.dtype == value.dtype and back.shape == value.shape and torch.equal(back, value)
    elif isinstance(value, np.ndarray):
        assert np.array_equal(back, value)
    else:
        assert back == value


def test_a_plain_tensor_is_sent_as_any_tensor_is():
    # dumps' quick way for plain contiguous CPU tensors gives what the general way gives
    x = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    dumper = wire._Dumper(io.BytesIO(), protocol=5)
    for t in (
        x,
        x.detach()[1],  # a view at an offset
        x.detach()[:, 0],  # not contiguous: the general way
        torch.randn(2, 3, 4),
        torch.tensor(2.5),
        torch.zeros(0, 3, dtype=torch.int64),
        torch.tensor([True, False]),
        torch.randn(3, dtype=torch.complex64).conj(),
        torch.arange(-5, 5, dtype=torch.int8),
        torch.randn(3, dtype=torch.bfloat16),
        torch.nn.Parameter(torch.ones(2)),
    ):
        assert dumper.reducer_override(t) == wire._reduce_tensor(t)


def test_replies_and_errors_round_trip():
    reply = Reply(
        {"w": torch.ones(2)},
        {"attention_weights": torch.zeros(1, 2)},
        [None],
        {"p": torch.ones(1)},
        grad_enabled_seen=(True,),
        training_seen=(False,),
    )
    back = wire.loads(wire.dumps(reply))
    assert torch.equal(back.value["w"], torch.ones(2)) and back.grad_enabled_seen == (True,)
    # A reply travels as its fields in order, trailing defaults left out: each field set alone comes back.
    for name, value in (
        ("value", 0),
        ("attrs", {"a": 1}),
        ("attrs_require_grad", {"a": True}),
        ("training_seen", (True,)),
        ("param_grads", {"p": torch.ones(1)}),
    ):
        back = wire.loads(wire.dumps(Reply(**{name: value})))
        assert back == Reply(**{name: value}), name
    assert wire.loads(wire.dumps(Reply())) == Reply()

    class Forged:  # a reply with more fields than a Reply has: a malformed frame, never a reply
        def __reduce__(self):
            return (Reply, tuple(range(20)))

    with pytest.raises(wire.WireError):
        wire.loads(pickle.dumps(Forged(), protocol=5))
    err = wire.loads(wire.dumps(StudentError("timeout", "timed out", "attention.softmax")))
    assert err.kind == "timeout" and err.where == "attention.softmax"
    assert wire.loads(wire.dumps(Handle(3, "multi_head", "MultiHeadAttention"))).id == 3
    assert wire.loads(wire.dumps(Opaque("Foo", "<Foo>"))).text == "<Foo>"


def test_a_tensor_subclass_arrives_as_a_plain_tensor():
    class Liar(torch.Tensor):
        def __eq__(self, other):
            return True

    back = wire.loads(wire.dumps(torch.zeros(2).as_subclass(Liar)))
    assert type(back) is torch.Tensor


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


@pytest.mark.parametrize(
    "payload",
    [
        pickle.dumps(_Evil()),
        # torch's own tensor pickle runs torch.load inside: refused too
        pickle.dumps(torch.ones(2)),
        pickle.dumps(np.array([1, 2], dtype=object)),
        b"\x80\x05garbage",
    ],
)
@pytest.mark.parametrize("trusted", [False, True])
def test_anything_else_is_refused(payload, trusted):
    # trusted (a worker reading the judge's frames) skips the size scan, never the allowlist
    with pytest.raises(wire.WireError):
        wire.loads(payload, trusted=trusted)


def test_small_and_large_frames_read_back():
    import socket
    import threading

    a, b = socket.socketpair()
    # over 1 MiB: header and frame go out in two writes
    big = torch.arange(300_000, dtype=torch.float64)
    for value in (torch.ones(3), big):
        for trusted in (False, True):
            # the buffer holds less
            sender = threading.Thread(target=wire.send, args=(a, Reply(value)))
            sender.start()
            assert torch.equal(wire.recv(b, deadline=None, trusted=trusted).value, value)
            sender.join()
    a.close()
    b.close()


def test_frames_are_bounded():
    import socket

    a, b = socket.socketpair()
    a.sendall((wire.MAX_FRAME + 1).to_bytes(8, "little"))
    with pytest.raises(wire.WireError):
        wire.recv(b, deadline=None)
    a.close()
    with pytest.raises(EOFError):
        wire.recv(b, deadline=None)


def test_the_control_channel_sends_records_and_the_wire_allows_each():
    """The zygote's control channel and a worker's first words are judge/control.py's records (issue 36): the
    wire's allowlist holds exactly those, and no judge module sends a dict literal over a channel."""
    import ast

    from autograder import KIT
    from autograder.judge import control

    allowed = {name for module, name in wire._ALLOWED if module == "autograder.judge.control"}
    assert allowed == {message.__name__ for message in control.MESSAGES}
    sent_dicts = []
    for path in sorted((KIT / "autograder" / "judge").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("dumps", "send")
                and any(isinstance(a, ast.Dict) for a in node.args)
            ):
                sent_dicts.append(f"{path.name}:{node.lineno}")
    assert not sent_dicts, sent_dicts
