"""Frames, the one codec of the judge's channels: an 8-byte little-endian length, then a pickle.

Between the judge and a worker (sockets, wire.py) the pickle is loaded by wire.loads, which rebuilds plain data
only. Between the scheduler and a grading process (pipes, here) both sides are the judge's own code, so plain
pickle. Kept free of heavy imports: a grading process reads its first frame before it imports torch.
"""

from __future__ import annotations

import pickle
import struct

HEADER = struct.Struct("<Q")  # every frame: its length in bytes, then the pickle


class WireError(Exception):
    """The peer sent something that is not a valid frame (too big, truncated, or not plain data)."""


def read_frame(read_exact, max_frame: int | None = None) -> bytes:
    """One frame's pickle; `read_exact(n)` returns n bytes or raises (EOFError when the peer is gone)."""
    (n,) = HEADER.unpack(read_exact(HEADER.size))
    if max_frame is not None and n > max_frame:
        raise WireError(f"a reply of {n} bytes (the limit is {max_frame})")
    return read_exact(n)


def write_trusted(stream, obj) -> None:
    data = pickle.dumps(obj, protocol=5)
    stream.write(HEADER.pack(len(data)) + data)
    stream.flush()


def read_trusted(stream):
    """One object from the judge's own code; EOFError if the other side is gone."""

    def read_exact(n: int) -> bytes:
        data = stream.read(n)
        if len(data) < n:
            raise EOFError
        return data

    return pickle.loads(read_frame(read_exact))
