"""Fingerprints of Python code for the similarity check (similarity.py): normalise, hash k-grams, winnow.

The normalisation is copydetect's (names become V, a function's name F, a class's O, string pieces S; comments
and spaces go; keywords, builtins, numbers and operators stay), written as one regular expression over the text
instead of Pygments' lexer: Pygments cost ~11 us a character (2.4 s for a 199-KB file, 11 s for the judge's
1 MiB), this ~1 us. tests/test_similarity.py checks that both give the same text on every file of the synthetic
class; what differs is in corners no generated file has (e.g. the pieces of an f-string's format spec).

A k-gram's hash is a polynomial over the characters' code points, mod 2**64, computed with numpy over the whole
text at once (copydetect hashed each k-gram in Python). Winnowing keeps the rightmost smallest hash of each
window of WINDOW k-grams: a common run of K + WINDOW - 1 characters always shares a fingerprint.
"""

from __future__ import annotations

import builtins
import html
import keyword
import re
import zlib
from dataclasses import dataclass

import numpy as np

K = 25  # copydetect's noise threshold: a match shorter than 25 normalised characters is never counted
WINDOW = 4

_BUILTINS = frozenset(n for n in dir(builtins) if not n.startswith("_")) | {
    "self",
    "cls",
    "__import__",
}
_MAGIC_VARS = frozenset(
    "__annotations__ __bases__ __class__ __closure__ __code__ __defaults__ __dict__ __doc__ __file__ "
    "__func__ __globals__ __kwdefaults__ __module__ __mro__ __name__ __objclass__ __qualname__ __self__ "
    "__slots__ __weakref__".split()
)  # Pygments' magic variables, kept; its magic functions (__init__, __call__...) become F
# Pygments' magic functions: the data model's methods (the dunders of the builtin types, and these)
_MAGIC_FUNCS = frozenset(
    n
    for t in (
        object,
        int,
        float,
        complex,
        list,
        dict,
        set,
        type,
        str,
        bytes,
        slice,
        property,
        range,
    )
    for n in dir(t)
    if n.startswith("__") and n.endswith("__")
) | frozenset(
    "__call__ __del__ __enter__ __exit__ __get__ __set__ __delete__ __getattr__ __missing__ __iter__ "
    "__next__ __prepare__ __instancecheck__ __subclasscheck__ __length_hint__ __index__ __matmul__ "
    "__rmatmul__ __imatmul__ __delitem__ __setitem__ __reversed__ __round__ __bool__".split()
)
_KEYWORDS = frozenset(keyword.kwlist)
# One token a match, with the spaces, line continuations and comments before it skipped (possessively: a
# run of spaces before nothing is not retried split by split); a run of operators is one token (their text is
# kept as it is, whatever the cut).
_TOKEN = re.compile(
    r"(?:[ \t\f\r]|\\\r?\n|\#[^\n]*)*+"
    r"""(?:(?P<string>(?<!\w)[rRbBuUfF]{0,2}(?:'''[\s\S]*?'''|\"\"\"[\s\S]*?\"\"\"|'(?:[^'\\\n]|\\[\s\S])*'"""
    r"""|"(?:[^"\\\n]|\\[\s\S])*"))"""
    r"|(?P<name>[^\W\d]\w*)|(?P<number>\.?\d[\w.]*)|(?P<newline>\n)"
    r"|(?P<other>[^\w\s'\"\#\\]+|[\s\S]))",
)
_DEPTH = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}
# the pieces Pygments makes of a string's content, one S each
_PIECE = re.compile(
    r"\\(?:N\{[^}]*\}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}|[0-7]{1,3}|[\s\S])"
    r"|%(?:\(\w+\))?[-#0 +]*(?:[0-9]+|[*])?(?:\.(?:[0-9]+|[*]))?[hlL]?[E-GXc-giorsaux%]"
    r"|[^\\'\"%{\n]+|['\"]|\\|%|\{|\n"
)
_RAW_PIECE = re.compile(r"[^\\'\"%{\n]+|['\"]|\\|%|\{|\n")
_FPIECE = re.compile(r"\{\{|\}\}|\{[^{}]*\}|[^{}\\'\"\n]+|['\"]|\\[\s\S]|[{}]|\n")


def normalise(code: str, spans: list | None = None) -> str:
    """The normalised text; with `spans`, appends for each of its characters the span (start, end) of raw text
    it stands for (only the highlighted pairs need them)."""
    out: list[str] = []
    # importing: "import" in `import a.b as c` (names kept), "from" between `from` and `import` (kept),
    # "" elsewhere: Pygments' Namespace rules
    previous, line_start, depth, importing, end = "", True, 0, "", -1
    for m in _TOKEN.finditer(code):
        kind = m.lastgroup
        text = m.group(kind)
        if kind == "name":
            glued = previous[-1:] == "@" and m.start(kind) == end
            pieces = _name(text, previous, importing, glued)
            if text in ("import", "from") and previous[-1:] != ".":
                importing = "" if (text, importing) == ("import", "from") else text
        elif kind == "other":
            pieces = text
            if len(text) == 1:
                depth = max(0, depth + _DEPTH.get(text, 0))
            else:
                depth = max(0, depth + sum(_DEPTH.get(c, 0) for c in text))
            importing = "" if ";" in text else importing
        elif kind == "newline":
            line_start = True
            importing = importing if depth else ""
            continue
        elif kind == "string":
            pieces = _string(text, line_start)
        else:
            pieces = text
        out.append(pieces)
        if spans is not None:
            start = m.start(kind)
            verbatim = len(pieces) == len(text)
            spans.extend(
                (start + i, start + i + 1) if verbatim else (start, m.end())
                for i in range(len(pieces))
            )
        previous, line_start, end = text, False, m.end()
    return "".join(out)


def _name(text: str, previous: str, importing: str, glued: bool) -> str:
    if glued:  # `@name`, no space: Pygments' decorator (even in a@b), kept
        return text
    if text in _MAGIC_FUNCS and text not in _MAGIC_VARS and not importing:
        return "F"  # after a dot too
    if previous[-1:] == ".":
        # after a dot, Pygments' builtins and keywords rules do not apply (torch.float is a name)
        return text if text in _KEYWORDS or text in _MAGIC_VARS or importing else "V"
    if text in _KEYWORDS or text in _BUILTINS or text in _MAGIC_VARS or importing:
        return text
    if previous == "def":
        return "F"
    if previous == "class":
        return "O"
    return "V"


def _string(text: str, line_start: bool) -> str:
    prefix = len(text) - len(text.lstrip("rRbBuUfF"))
    affix, body = text[:prefix], text[prefix:]
    quote = body[:3] if body[:3] in ("'''", '"""') else body[0]
    if len(quote) == 3 and line_start and "f" not in affix.lower():
        return "S" * bool(affix) + "S"  # a docstring: one piece
    content = body[len(quote) : -len(quote)]
    if "f" in affix.lower():
        inner = "".join(_fpiece(p) for p in _FPIECE.findall(content))
    else:
        pieces = (_RAW_PIECE if "r" in affix.lower() else _PIECE).findall(content)
        inner = "".join('"' if p in ("'", '"') else "S" for p in pieces)
    mark = '"' if len(quote) == 1 else "S"
    return "S" * bool(affix) + mark + inner + mark


def _fpiece(piece: str) -> str:
    if piece in ("'", '"'):
        return '"'
    if piece.startswith("{") and piece.endswith("}") and len(piece) > 2 and piece != "{{":
        expr, _, spec = piece[1:-1].partition(":")
        expr, bang, conv = expr.partition("!")
        return "S" + normalise(expr) + "S" * bool(bang) + "S" * bool(spec) + "S"
    return "S"


def _crc_tables(k: int) -> tuple[int, np.ndarray]:
    """CRC-32 is affine over GF(2): the CRC of k bytes is the CRC of k zero bytes XOR, for each position j,
    the contribution of its byte alone (table[j][byte]). So every k-gram's CRC is k table look-ups over the
    whole text at once, the same value as zlib.crc32 of the k-gram."""
    zero = zlib.crc32(bytes(k))
    table = np.zeros((k, 256), dtype=np.uint32)
    for j in range(k):
        for b in range(256):
            table[j, b] = zlib.crc32(bytes(j) + bytes([b]) + bytes(k - j - 1)) ^ zero
    return zero, table


_CRC = {}


def kgram_hashes(text: str, k: int = K) -> np.ndarray:
    """Each k-gram's CRC-32 of its UTF-8 (copydetect's k-grams, hashed as the report hashed them before: the
    same for the same text in any process, where Python's hash() is salted per process)."""
    n = len(text) - k + 1
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    if not text.isascii():  # a k-gram's bytes are not k bytes: one k-gram at a time (~1 us each)
        grams = (text[i : i + k].encode("utf-8", "surrogatepass") for i in range(n))
        return np.fromiter((zlib.crc32(g) for g in grams), dtype=np.int64, count=n)
    if k not in _CRC:
        _CRC[k] = _crc_tables(k)
    zero, table = _CRC[k]
    codes = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    h = np.full(n, zero, dtype=np.uint32)
    for j in range(k):
        h ^= table[j][codes[j : j + n]]
    return h.astype(np.int64)


def winnow(hashes: np.ndarray, window: int = WINDOW) -> np.ndarray:
    """Robust winnowing, copydetect's: the positions it keeps, in order. Where every window's smallest hash is
    unique, that is each window's argmin (and the running minima of the first, partial windows), computed at
    once; a tie (periodic text: a k-gram repeated within a window) makes the choice depend on the previous
    one, and the file is winnowed one hash at a time (~1 us a hash)."""
    if len(hashes) < window:
        return _winnow_loop(hashes.tolist(), window)
    views = np.lib.stride_tricks.sliding_window_view(hashes, window)
    smallest = views.min(axis=1)
    if ((views == smallest[:, None]).sum(axis=1) > 1).any():
        return _winnow_loop(hashes.tolist(), window)
    head = hashes[: window - 1]
    firsts = np.flatnonzero(head < np.minimum.accumulate(np.concatenate(([np.inf], head)))[:-1])
    chosen = np.arange(len(views)) + np.argmin(views, axis=1)
    return np.unique(np.concatenate((firsts, chosen)))


def _winnow_loop(hashes: list[int], window: int) -> np.ndarray:
    """Robust winnowing (Schleimer et al.) as copydetect writes it, over a ring buffer: keep the current
    minimum while it is in the window and nothing strictly smaller arrives; when it leaves, the rightmost
    minimum of the window."""
    chosen: list[int] = []
    ring, r, low = [float("inf")] * window, 0, 0
    for t, h in enumerate(hashes):
        r = (r + 1) % window
        ring[r] = h
        if low == r:  # the minimum just left: the rightmost minimum of the window
            i = (r - 1) % window
            while i != r:
                if ring[i] < ring[low]:
                    low = i
                i = (i - 1) % window
            chosen.append(t - (r - low) % window)
        elif ring[r] < ring[low]:
            low = r
            chosen.append(t)
    return np.unique(np.array(chosen, dtype=np.int64))


def union(positions: np.ndarray, k: int = K) -> int:
    """Characters covered by the k-grams starting at `positions` (sorted)."""
    if len(positions) == 0:
        return 0
    return int(np.minimum(np.diff(positions), k).sum()) + k


@dataclass
class Print:
    """A file's fingerprints: `hashes[i]` is the k-gram at normalised position `positions[i]` (sorted)."""

    raw: str
    length: int  # normalised characters
    positions: np.ndarray
    hashes: np.ndarray
    coverage: int  # normalised characters its fingerprints cover

    def without(self, dropped: np.ndarray) -> Print:
        keep = ~np.isin(self.hashes, dropped)
        positions = self.positions[keep]
        return Print(self.raw, self.length, positions, self.hashes[keep], union(positions))

    def shared_with(self, other: Print) -> np.ndarray:
        """Positions of this file's fingerprints that the other file has too."""
        return self.positions[np.isin(self.hashes, other.hashes)]


def fingerprint(raw: str, boilerplate: np.ndarray) -> Print:
    text = normalise(raw)
    hashes = kgram_hashes(text)
    positions = winnow(hashes)
    kept = Print(raw, len(text), positions, hashes[positions], union(positions))
    return kept.without(boilerplate) if len(boilerplate) else kept


def boilerplate(raw: str) -> np.ndarray:
    """Every k-gram hash of the stub (not only the winnowed ones): none of them is a student's own."""
    return np.unique(kgram_hashes(normalise(raw)))


def mark(p: Print, shared: np.ndarray) -> str:
    """The raw code, HTML-escaped, each run of shared normalised code in <mark>: from the raw start of its first
    character to the raw end of its last (the spaces and comments between them too, as copydetect marks)."""
    spans: list = []
    text = normalise(p.raw, spans)
    covered = np.zeros(len(text) + K + 1, dtype=np.int8)
    for start in shared.tolist():
        covered[start : start + K] = 1
    covered[len(text) :] = 0
    edges = np.flatnonzero(np.diff(covered, prepend=0))  # a run starts, ends, starts, ends...
    raw = np.array(spans, dtype=np.int64).reshape(-1, 2)
    out, at = [], 0
    for first, end in zip(edges[0::2].tolist(), edges[1::2].tolist()):
        start, stop = int(raw[first, 0]), int(raw[end - 1, 1])
        out.append(html.escape(p.raw[at:start], quote=False))
        out.append(f"<mark>{html.escape(p.raw[start:stop], quote=False)}</mark>")
        at = stop
    out.append(html.escape(p.raw[at:], quote=False))
    return "".join(out)
