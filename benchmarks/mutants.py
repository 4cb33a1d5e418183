"""Mutation testing of one component's suite, in the spirit of mutmut: does the suite catch small edits of the
reference?

    .venv/bin/python benchmarks/mutants.py beam_search              # every mutant: killed / survived, diffs
    .venv/bin/python benchmarks/mutants.py beam_search --list       # the mutants only, nothing run
    .venv/bin/python benchmarks/mutants.py beam_search --line 62    # the mutants of one line

Mutants are made only inside the `### BEGIN SOLUTION` / `### END SOLUTION` regions of solutions/<component>.py:
operator swaps (+ - * / // % **), comparison swaps (< <= > >= == != is in), constants (0 <-> 1, n -> n + 1,
True <-> False, a float x -> x + 1, "inf" <-> "-inf"), keyword arguments (an int value: dim=-1 -> dim=0, dim=0 ->
dim=-1; each keyword dropped), and <-> or, a negated or un-negated condition, a few method swaps (argmax <->
argmin, max <-> min, sum <-> mean), each simple statement replaced by `pass`. Each mutant is written into a copy
of the submission folder (the reference by default) and the component's whole suite, visible and hidden, runs
on it in a forked child of this process (torch and the suite are imported once: ~1 s a mutant on beam_search);
the first property that does not pass kills it. A child that runs past --timeout seconds is killed and the
mutant counted as killed (the judge's time limit would stop it too). Survivors are printed with their diff:
each is a missing property, or an equivalent mutant to list with its reason in docs/mutants.md.
"""

from __future__ import annotations

import argparse
import ast
import copy
import dataclasses
import difflib
import json
import os
import select
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
BINOPS = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
    ast.MatMult: ast.Mult,
    ast.BitOr: ast.BitAnd,
    ast.BitAnd: ast.BitOr,
}
COMPARES = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
METHODS = {"argmax": "argmin", "argmin": "argmax", "max": "min", "min": "max", "sum": "mean"}
METHODS.update({"mean": "sum", "amax": "amin", "amin": "amax"})
# --axes (issue 33): an axis argument of these methods, or a dim=/axis= keyword, read off another axis: the scale's
# operand (query.size(-1) -> query.size(1), the heads on 4-D inputs), the transposes and the reductions' axes
AXIS_METHODS = {
    "size",
    "transpose",
    "swapaxes",
    "unsqueeze",
    "squeeze",
    "flatten",
    "cumsum",
    "softmax",
}
AXIS_METHODS |= {
    "log_softmax",
    "argmax",
    "argmin",
    "sum",
    "mean",
    "amax",
    "amin",
    "max",
    "min",
    "var",
    "std",
}
AXES = (-3, -2, -1, 0, 1)
SIMPLE_STATEMENTS = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return, ast.Assert)
EXPRESSIONS = (ast.BinOp, ast.Compare, ast.BoolOp, ast.UnaryOp)  # parenthesised when replaced


@dataclasses.dataclass(frozen=True)
class Mutant:
    line: int
    what: str  # e.g. "`+` -> `-`"
    source: str  # the whole mutated module

    def diff(self, original: str, name: str) -> str:
        lines = difflib.unified_diff(
            original.splitlines(True), self.source.splitlines(True), name, name + " (mutant)", n=1
        )
        return "".join(lines)


def regions(source: str) -> list[tuple[int, int]]:
    """(first, last) line numbers (1-based) strictly between each BEGIN / END SOLUTION pair."""
    spans, start = [], None
    for number, text in enumerate(source.splitlines(), 1):
        if text.strip() == BEGIN:
            start = number
        elif text.strip() == END and start is not None:
            spans.append((start + 1, number - 1))
            start = None
    return spans


def _mutations(node: ast.AST, axes: bool = False):
    """(what, replacement node or the text "pass") for one node; `axes`: the axis mutations too."""
    if isinstance(node, ast.BinOp) and type(node.op) in BINOPS:
        new = copy.copy(node)
        new.op = BINOPS[type(node.op)]()
        yield f"`{_op(node.op)}` -> `{_op(new.op)}`", new
    elif isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in COMPARES:
                new = copy.copy(node)
                new.ops = [*node.ops[:i], COMPARES[type(op)](), *node.ops[i + 1 :]]
                yield f"`{_op(op)}` -> `{_op(new.ops[i])}`", new
    elif isinstance(node, ast.BoolOp):
        new = copy.copy(node)
        new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield f"`{_op(node.op)}` -> `{_op(new.op)}`", new
    elif isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.UAdd):
        yield f"`{_op(node.op)}` dropped", node.operand
    elif isinstance(node, ast.Constant):
        yield from _constants(node)
    elif isinstance(node, ast.Call):
        yield from _calls(node)
        if axes:
            yield from _axes(node)
    elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
        negated = ast.UnaryOp(ast.Not(), node.test)
        yield "condition negated", _with(node.test, negated)
    elif isinstance(node, SIMPLE_STATEMENTS):
        yield "statement dropped", "pass"


def _constants(node: ast.Constant):
    v = node.value
    if isinstance(v, bool):
        yield f"{v} -> {not v}", ast.Constant(not v)
    elif isinstance(v, int):
        for new in dict.fromkeys([1 - v if v in (0, 1) else v + 1]):
            yield f"{v} -> {new}", ast.Constant(new)
    elif isinstance(v, float):
        yield f"{v} -> {v + 1.0}", ast.Constant(v + 1.0)
    elif v in ("inf", "-inf", "+inf"):
        new = "inf" if v.startswith("-") else "-inf"
        yield f"{v!r} -> {new!r}", ast.Constant(new)


def _calls(node: ast.Call):
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in METHODS:
        new = copy.copy(node)
        new.func = copy.copy(func)
        new.func.attr = METHODS[func.attr]
        yield f"`.{func.attr}` -> `.{new.func.attr}`", new
    for i, kw in enumerate(node.keywords):
        if kw.arg is None:
            continue
        dropped = copy.copy(node)
        dropped.keywords = node.keywords[:i] + node.keywords[i + 1 :]
        yield f"keyword `{kw.arg}` dropped", dropped
        value = _int_of(kw.value)
        if value is not None:
            new = copy.copy(node)
            swap = 0 if value != 0 else -1
            new.keywords = [
                *node.keywords[:i],
                ast.keyword(kw.arg, ast.Constant(swap)),
                *node.keywords[i + 1 :],
            ]
            yield f"`{kw.arg}={value}` -> `{kw.arg}={swap}`", new


def _axes(node: ast.Call):
    """Each int axis of the call read off every other axis of AXES: a positional argument of an AXIS_METHODS
    method, or a dim=/axis= keyword of any call."""
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in AXIS_METHODS:
        for i, arg in enumerate(node.args):
            value = _int_of(arg)
            for other in () if value is None else (a for a in AXES if a != value):
                new = copy.copy(node)
                new.args = [*node.args[:i], ast.Constant(other), *node.args[i + 1 :]]
                yield f"`.{func.attr}` axis {value} -> {other}", new
    for i, kw in enumerate(node.keywords):
        value = _int_of(kw.value) if kw.arg in ("dim", "axis") else None
        for other in () if value is None else (a for a in AXES if a not in (value, 0, -1)):
            new = copy.copy(node)
            new.keywords = [*node.keywords[:i], ast.keyword(kw.arg, ast.Constant(other))]
            new.keywords += node.keywords[i + 1 :]
            yield f"`{kw.arg}={value}` -> `{kw.arg}={other}`", new


def _int_of(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_of(node.operand)
        return None if inner is None else -inner
    return None


def _with(old: ast.AST, new: ast.AST) -> ast.AST:
    """`new` standing at `old`'s place in the source (the replaced span is the old node's)."""
    new = copy.copy(new)
    ast.copy_location(new, old)
    new._span_of = old  # type: ignore[attr-defined]
    return new


def _op(op: ast.AST) -> str:
    """An operator's text: `+`, `<=`, `and`, `not`..."""
    left, right = ast.Name("_l"), ast.Name("_r")
    if isinstance(op, ast.operator):
        text = ast.unparse(ast.BinOp(left, op, right))
    elif isinstance(op, ast.cmpop):
        text = ast.unparse(ast.Compare(left, [op], [right]))
    elif isinstance(op, ast.boolop):
        text = ast.unparse(ast.BoolOp(op, [left, right]))
    else:
        text = ast.unparse(ast.UnaryOp(op, left))
    return text.replace("_l", "").replace("_r", "").strip()


def mutants(source: str, axes: bool = False) -> list[Mutant]:
    """Every mutant of the solution regions, in source order, without duplicates or syntax errors; `axes`: the
    axis mutations too (--axes)."""
    data = source.encode()
    starts = [0]
    for line in data.splitlines(True):
        starts.append(starts[-1] + len(line))
    spans = regions(source)
    tree = ast.parse(source)
    skip = {id(n) for j in ast.walk(tree) if isinstance(j, ast.JoinedStr) for n in ast.walk(j)}
    seen, out = {source}, []
    for node in ast.walk(tree):
        if id(node) in skip or not hasattr(node, "end_lineno"):
            continue
        if not any(a <= node.lineno and node.end_lineno <= b for a, b in spans):
            continue
        for what, new in _mutations(node, axes):
            old = getattr(new, "_span_of", node) if not isinstance(new, str) else node
            text = new if isinstance(new, str) else ast.unparse(new)
            if isinstance(new, EXPRESSIONS):
                text = f"({text})"
            begin = starts[old.lineno - 1] + old.col_offset
            end = starts[old.end_lineno - 1] + old.end_col_offset
            mutated = (data[:begin] + text.encode() + data[end:]).decode()
            if mutated in seen:
                continue
            try:
                compile(mutated, "mutant", "exec")
            except SyntaxError:
                continue
            seen.add(mutated)
            out.append(Mutant(old.lineno, what, mutated))
    return sorted(out, key=lambda m: m.line)


# ------------------------------------------------------------------------------------------------- running
@dataclasses.dataclass(frozen=True)
class Verdict:
    killed: bool
    by: str  # the property that killed it, "timeout", or "" for a survivor
    seconds: float


def _suite(component: str, folder: Path, visible_only: bool = False) -> str:
    """The id of the first property of the component's suite (its visible part only, if asked) that does not
    pass, or ""."""
    from autograder import registry
    from autograder.student_code import InProcessStudentCode
    from autograder.suite import core

    student = InProcessStudentCode(folder, f"mutant of {component}")
    for p in registry.load(include_hidden=True):
        if p.component == component and (p.visible or not visible_only):
            outcome = core.run_property(p, student)
            if not outcome.passed:
                return f"{p.name} ({outcome.status})"
    return ""


def run(
    component: str,
    mutant: Mutant,
    submission: Path,
    timeout: float = 60.0,
    visible_only: bool = False,
) -> Verdict:
    """The suite on `submission` with `mutant` as its <component>.py, in a forked child."""
    start = time.perf_counter()
    from autograder import registry, timing

    # imported and measured once, here: each forked child inherits them
    registry.load(include_hidden=True)
    timing.speed()
    with tempfile.TemporaryDirectory(prefix="mutant_") as tmp:
        folder = Path(tmp) / "sub"
        shutil.copytree(submission, folder, ignore=shutil.ignore_patterns("__pycache__"))
        (folder / f"{component}.py").write_text(mutant.source)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: run the suite, say which property failed, exit without cleanup
            os.close(read)
            code = 0
            try:
                import torch

                torch.set_num_threads(1)
                os.write(write, json.dumps(_suite(component, folder, visible_only)).encode())
            except BaseException as e:  # noqa: BLE001 - anything the mutant does is a verdict
                os.write(write, json.dumps(f"checking side raised {type(e).__name__}").encode())
                code = 1
            os._exit(code)
        os.close(write)
        ready = select.select([read], [], [], timeout)[0]
        if not ready:
            os.kill(pid, signal.SIGKILL)
        chunks = []
        while ready and (chunk := os.read(read, 65536)):
            chunks.append(chunk)
        os.close(read)
        os.waitpid(pid, 0)
    seconds = time.perf_counter() - start
    if not ready:
        return Verdict(True, "timeout", seconds)
    by = json.loads(b"".join(chunks) or b'"the child died"')
    return Verdict(bool(by), by, seconds)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("component")
    parser.add_argument(
        "--submission", type=Path, help="the folder to mutate a copy of (default: solutions/)"
    )
    parser.add_argument(
        "--line", type=int, action="append", help="only the mutants of this line (repeatable)"
    )
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument(
        "--axes", action="store_true", help="the axis mutations too (axis arguments, dim=/axis=)"
    )
    parser.add_argument(
        "--visible",
        action="store_true",
        help="the visible properties only (the bundle's self-check)",
    )
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="wall seconds per mutant (default 60)"
    )
    args = parser.parse_args(argv)
    from autograder import KIT

    submission = args.submission or KIT / "solutions"
    name = f"{args.component}.py"
    original = (submission / name).read_text()
    todo = [m for m in mutants(original, args.axes) if not args.line or m.line in args.line]
    survivors = 0
    for m in todo:
        if args.list:
            print(f"line {m.line}: {m.what}")
            continue
        v = run(args.component, m, submission, args.timeout, args.visible)
        survivors += not v.killed
        verdict = f"killed by {v.by}" if v.killed else "SURVIVED"
        print(f"line {m.line}: {m.what}: {verdict} ({v.seconds:.1f} s)", flush=True)
        if not v.killed:
            print(m.diff(original, name))
    if not args.list:
        print(f"{len(todo) - survivors} killed, {survivors} survived of {len(todo)} mutants")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
