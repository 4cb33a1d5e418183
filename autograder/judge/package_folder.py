"""A grading slot's package folder: the section's files, written where its spare worker finds them.

The student's files go into the folder, each with bytecode compiled here once per grading process (compiling is
not running); the component's reference dependencies never do: they go to the worker as bytecode without
docstrings (`reference_code`, run by worker.preload), so no worker can read reference source.
"""

from __future__ import annotations

import ast
import collections
import hashlib
import marshal
import shutil
from pathlib import Path

# What one submission's files may cost this process to load. A file of at most COMPILE_SOURCE_BYTES is compiled
# here (one at a time) and its bytecode written beside it for the section's workers; a larger one, or one
# whose code exceeds MAX_CODE_BYTES, is compiled by the worker itself if it imports it, within the worker's
# limits and the section's time, and released with the worker. Constant folding multiplies: 1 MiB of
# `a = "x" * 4096` lines made a 231 MB code object, held for this process's life; 128 KiB of it now cost a
# transient ~30 MB here at most, and honest files are under 20 KiB (the largest reference file: 11 KiB).
COMPILE_SOURCE_BYTES = 128 << 10
MAX_CODE_BYTES = 8 << 20
# Bytecode kept between sections (a helper shared by a student's sections is compiled once): at most this much,
# the oldest dropped first; never a student's file bigger than CACHED_CODE_BYTES.
CODE_CACHE_BYTES, CACHED_CODE_BYTES = 32 << 20, 256 << 10
# What an entry costs beside its code: the key is the file's name and a digest of its source, never the source
# (issue 32: keyed by the source itself, files too large to compile here or that do not compile were kept whole,
# counted as nothing: 4 MiB a student, 160 MiB of sources held after 40 such students).
ENTRY_BYTES = 512

UNCHECKED = ()  # self.syntax's value for a file this process did not compile


class PackageFolder:
    """The slot's package folder and what the grading process keeps of the files it wrote there."""

    def __init__(self, path: Path):
        self.path = path
        # (file name, digest of its source) -> (marshalled code or None, what self.syntax says of it), oldest
        # first (compiled); within CODE_CACHE_BYTES, every entry counted
        self.code: collections.OrderedDict[tuple[str, bytes], tuple] = collections.OrderedDict()
        # the reference's bytecode, kept for the process's life (a few files, the same for everyone)
        self.reference_bytecode: dict[tuple[str, bytes], bytes] = {}
        # file name -> (line, message): the section's files that do not compile, as this process says it; or
        # UNCHECKED: too large to compile here (the worker's word is taken, its text bounded)
        self.syntax: dict[str, tuple] = {}
        # the section's reference dependencies, as bytecode
        self.preload: list[tuple[str, bytes]] = []

    def write(self, files: dict[str, bytes], reference: tuple[str, ...] = ()) -> None:
        """The section's student files, in the slot's package folder (bound into the spare worker already),
        each with its bytecode: compiling is not running, and a file is compiled once per grading process, not
        per worker. The `reference` files (the component's dependencies) never reach the folder: they go to the
        worker as bytecode without docstrings (self.preload, in dependency order), so no worker can read
        reference source."""
        import importlib._bootstrap_external as bx
        import importlib.util

        from ..components import NAMES

        shutil.rmtree(self.path / "__pycache__", ignore_errors=True)
        for old in self.path.iterdir():
            old.unlink()
        cache = self.path / "__pycache__"
        cache.mkdir(mode=0o755)
        self.preload = []
        for name in sorted(reference, key=lambda n: NAMES.index(n[:-3])):
            key = (name, files[name])
            if key not in self.reference_bytecode:
                self.reference_bytecode[key] = reference_code(files[name], name)
            self.preload.append((name[:-3], self.reference_bytecode[key]))
        self.syntax = {}
        for name, data in files.items():
            if name in reference:
                continue
            path = self.path / name
            path.write_bytes(data)
            path.chmod(0o644)
            code = self.compiled(name, data, str(path))
            if code is None:
                continue
            st = path.stat()
            pyc = (
                bytearray(importlib.util.MAGIC_NUMBER)
                + bx._pack_uint32(0)
                + bx._pack_uint32(int(st.st_mtime))
                + bx._pack_uint32(st.st_size)
                + code
            )
            target = Path(importlib.util.cache_from_source(str(path)))
            try:  # without it, the worker compiles the file itself (within its own limits)
                target.write_bytes(pyc)
                target.chmod(0o644)
            except OSError:
                target.unlink(missing_ok=True)

    def compiled(self, name: str, data: bytes, path: str) -> bytes | None:
        """The file's marshalled code, or None: it does not compile (the worker's import reports it, and
        self.syntax keeps the judge's own message), or it is too large to compile here (COMPILE_SOURCE_BYTES,
        MAX_CODE_BYTES: the worker's import compiles it within the worker's limits, charged to the section).
        Kept between sections within CODE_CACHE_BYTES, so a submission's files cost this process at most that
        much after its section."""
        key = cache_key(name, data)
        if key not in self.code:
            code, syntax = None, None
            if len(data) > COMPILE_SOURCE_BYTES:
                syntax = UNCHECKED
            else:
                try:
                    code = marshal.dumps(compile(data, path, "exec", dont_inherit=True))
                except SyntaxError as e:
                    syntax = (e.lineno, str(e.msg))
                except (ValueError, RecursionError, MemoryError, OverflowError):
                    pass
                if code is not None and len(code) > MAX_CODE_BYTES:
                    code, syntax = None, UNCHECKED
            if code is not None and len(code) > CACHED_CODE_BYTES:
                return code  # used for this section, never kept (a file too big to compile has no syntax)
            self.code[key] = (code, syntax)
        self.code.move_to_end(key)
        code, syntax = self.code[key]
        while self.code and self.cached_bytes() > CODE_CACHE_BYTES:
            self.code.popitem(last=False)
        if syntax is not None:
            self.syntax[name] = syntax
        return code

    def cached_bytes(self) -> int:
        """What the code cache holds: every entry's code and a fixed cost for its key and record."""
        return sum(len(c or b"") + ENTRY_BYTES for c, _ in self.code.values())


def cache_key(name: str, data: bytes) -> tuple[str, bytes]:
    """A file's key in the code cache: its name and a digest of its source (never the source itself)."""
    return name, hashlib.blake2b(data, digest_size=20).digest()


def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return tree


def reference_code(source: bytes, name: str) -> bytes:
    """A reference module as the worker gets it: marshalled bytecode without docstrings, compiled under a name
    that is no file (so linecache, inspect and tracebacks find no text). Asserts are kept (optimize=0)."""
    tree = _without_docstrings(ast.parse(source))
    return marshal.dumps(compile(tree, f"<reference {name}>", "exec", dont_inherit=True))
