"""The hint of an exception raised by the code under test, chosen by its evidence.

A property's own `error_hint` diagnoses what usually goes wrong in its component (a shape error with m_q != m_k,
the docstring's names). It is true only of some errors: an UnboundLocalError, a tuple where a tensor was expected,
a missing attribute or a wrong argument list is a Python mistake, and a shape hint on it sends the student the
wrong way (issue 22: each got "a shape error with m_q != m_k" on every property). So a Python error gets a hint
about that error; a call in the student's traceback that builds or calls a layer in the wrong argument order
gets a hint naming that order; a property's shape hint speaks only where the error is about shapes; its other
hints (names, signatures) where the error is not a plain Python mistake.
"""

from __future__ import annotations

import re

from ..i18n import N_, _

# Python's own words (3.11+, and older ones) for each mistake, read from the exception's text.
_UNBOUND = re.compile(
    r"cannot access local variable '(\w+)'|local variable '(\w+)' referenced before assignment"
)
_NO_ATTRIBUTE = re.compile(r"'(\w+)' object has no attribute '(\w+)'")
_MODULE_ATTRIBUTE = re.compile(r"module '([\w.]+)' has no attribute '(\w+)'")
_NAME = re.compile(r"name '(\w+)' is not defined")
_ARGUMENTS = re.compile(
    r"(?:([\w.]+)\(\) )?(?:got an unexpected keyword argument|missing \d+ required (?:positional|keyword)"
    r"|takes \d+ positional arguments? but|takes from \d+ to \d+ positional|got multiple values for)"
)
_NOT_CALLABLE = re.compile(r"'(\w+)' object is not callable")
# A shape hint's evidence: the error is about sizes.
_SHAPE_WORDS = re.compile(
    r"shape|size|dimension|\bdim\b|broadcast|mat1|mat2|must match|expand|invalid for input|"
    r"out of range|out of bounds|divisible|view",
    re.IGNORECASE,
)
# A property's error_hint that diagnoses a shape error (its msgid, the English source, starts so).
SHAPE_HINT_START = "a shape error"

# The course notebooks' argument orders that the kit's contract reverses, read from the student's traceback
# (a frame's code line): MultiHeadAttention(heads, dim_embedding), and a cross-attention called key first.
_HEADS_FIRST = re.compile(
    r"MultiHeadAttention\(\s*(?:self\.)?(\w*head\w*|h|n_h)\s*,\s*(?:self\.)?(\w*(?:model|emb|dim)\w*)\s*[,)]"
)
_MEMORY_FIRST = re.compile(r"\w*attention\w*\(\s*(?:self\.)?(memory|memoria|\w*enc\w*)\s*,")

# The NumPy habits of the course's first notebook, read from the code line of the frame that raised.
_DOT_T = re.compile(r"[\w)\]]\.T\b")
_ELEMENTWISE = re.compile(r"[\w)\]]\s*\*(?!\*)\s*[\w(]")
_BROADCAST = re.compile(
    r"could not be broadcast|must match the size|mismatch in its core dimension"
)
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")

DOT_T_HINT = N_(
    "`.T` reverses every axis of a batched array, (batch, m, d) -> (d, m, batch): swap only the last two, "
    "np.swapaxes(k, -1, -2) (torch: k.transpose(-2, -1))"
)
ELEMENTWISE_HINT = N_(
    "`*` multiplies element by element; mixing the value rows by the weights is a matrix product: "
    "weights @ v"
)
NO_MODULE_HINT = N_(
    "`{module}` is not available where your code is checked (only the standard library, NumPy and torch "
    "are): write it yourself, e.g. softmax with np.exp, max and sum"
)
UNBOUND_HINT = N_(
    "`{name}` is assigned somewhere in this function, so Python treats it as a local variable in the whole "
    "function, and it was read before that assignment. If `{name}` is also a function you call (the course "
    "notebooks name a variable after the function that computes it), give the variable another name."
)
TUPLE_HINT = N_(
    "a `{type}` arrived where a tensor was expected (it has no `{attribute}`): a function that returns two "
    "values must be unpacked, as in output, weights = scaled_dot_product_attention(q, k, v, mask)"
)
ATTRIBUTE_HINT = N_(
    "your code reads `{attribute}` of a `{type}`, which has none: set it in __init__ (self.{attribute} = "
    "...) with exactly that name, or read the name the docstring gives"
)
MODULE_ATTRIBUTE_HINT = N_(
    "`{module}` has no `{attribute}`: check the name's spelling, or import what defines it"
)
NAME_HINT = N_(
    "`{name}` is not defined where it is used: import it (import math, from torch import nn...) or define "
    "it before this line; a name from another file or notebook cell must be imported here"
)
ARGUMENTS_HINT = N_(
    "the call's arguments do not match the parameters of {function}: the kit builds and calls every class "
    "and function with the docstring's signature and parameter names (d_model=..., num_heads=...); compare "
    "your def line with the docstring"
)
ARGUMENTS_HINT_ANY = N_(
    "the call's arguments do not match the function's parameters: the kit builds and calls every class "
    "and function with the docstring's signature and parameter names (d_model=..., num_heads=...); compare "
    "your def line with the docstring"
)
NOT_CALLABLE_HINT = N_(
    "a `{type}` is called as if it were a function: is a name that holds a function or a layer reused "
    "for a value (a tensor or a number) somewhere before this line?"
)
HEADS_FIRST_HINT = N_(
    "argument order: your {file} builds MultiHeadAttention({first}, {second}, ...), the number of heads "
    "first as in the course notebooks; the kit's signature is MultiHeadAttention(d_model, num_heads, "
    "dropout): d_model first"
)
MEMORY_FIRST_HINT = N_(
    "argument order: your {file} calls the cross-attention with the encoder's output first ({call}); the "
    "query comes first, from the decoder: cross_attention(x, memory, memory, memory_mask)"
)


def _frames(detail: str) -> list[tuple[str, str]]:
    """(file stem, code line) of each frame of a student traceback (student_code.student_traceback: a frame
    line in any language, then its code line, indented)."""
    lines = detail.splitlines()
    frames = []
    for i, line in enumerate(lines):
        m = re.match(r"^\s{2}(\w+)\.py, \w+ \d+", line)
        if m:
            code = lines[i + 1].strip() if i + 1 < len(lines) else ""
            frames.append((m.group(1), code))
    return frames


def argument_order(detail: str) -> str:
    """The hint naming an argument order the course notebooks invite, if a frame's code shows one, else ""."""
    for file, code in reversed(_frames(detail)):
        m = _HEADS_FIRST.search(code)
        if m:
            return _(HEADS_FIRST_HINT).format(file=f"{file}.py", first=m[1], second=m[2])
        m = _MEMORY_FIRST.search(code)
        # the query from the encoder's output: a self-attention's call (x, x, x) or a correct cross-attention
        # (x, memory, memory) never matches
        if m and file == "decoder":
            return _(MEMORY_FIRST_HINT).format(file=f"{file}.py", call=f"{m[0]} ...)")
    return ""


def numpy_habit(exc_type: str, text: str, detail: str) -> str:
    """The hint of a NumPy habit (`.T` on a batched array, `*` for a matrix product, scipy), else ""."""
    m = _NO_MODULE.search(text)
    if exc_type == "ModuleNotFoundError" and m:
        return _(NO_MODULE_HINT).format(module=m[1].split(".")[0])
    frames = _frames(detail)
    code = frames[-1][1] if frames else ""
    if _DOT_T.search(code) and _SHAPE_WORDS.search(text):
        return _(DOT_T_HINT)
    if _ELEMENTWISE.search(code) and _BROADCAST.search(text) and "@" not in code:
        return _(ELEMENTWISE_HINT)
    return ""


# NumPy's and torch's words for the errors a usual mistake causes; the text is kept, the hint names the mistake.
_VIEW = re.compile(r"view size is not compatible with input tensor's size and stride")
_NP_BROADCAST = re.compile(
    r"operands could not be broadcast together with shapes \(([\d, ]*)\) \(([\d, ]*)\)"
)
_TORCH_SIZES = re.compile(
    r"The size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)"
)
_REDUCTION = re.compile(r"\b(mean|sum|max|min|var|std|amax|amin|logsumexp)\b")
_AXIS = re.compile(r"axis (-?\d+) is out of bounds for array of dimension (\d+)")
_DIM = re.compile(
    r"Dimension out of range \(expected to be in range of \[(-?\d+), (-?\d+)\], but got (-?\d+)\)"
)

VIEW_HINT = N_(
    "in {file}: `.view` needs a contiguous tensor, and a transpose leaves it non-contiguous: make it "
    "contiguous first, or use .reshape; and a view never moves an axis: a reshape cannot put the heads' "
    "axis in place"
)
KEEPDIMS_HINT = N_(
    "in {file}: shapes {first} and {second} differ by the last axis alone: a reduction over the last axis "
    "without keepdims=True (np.mean(x, axis=-1)) drops that axis, so it no longer broadcasts against x; "
    "keep it: np.mean(x, axis=-1, keepdims=True)"
)
KEEPDIM_HINT = N_(
    "in {file}: this line uses a reduction's result: a mean, sum or max over the last dim without "
    "keepdim=True (x.mean(dim=-1)) drops that dim, so it no longer broadcasts against x; keep it: "
    "x.mean(dim=-1, keepdim=True)"
)
AXIS_HINT = N_(
    "in {file}: axis {axis} counts from the front, and these inputs have {ndim} dimensions: the properties "
    "draw inputs with other leading dimensions too; count from the end (axis=-1 is the last, axis=-2 the one "
    "before)"
)


def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in text.replace(" ", "").split(",") if n)


def library_error(exc_type: str, text: str, detail: str) -> str:
    """The hint of the usual mistake behind a NumPy or torch error (a view that should be a reshape, a reduction
    without keepdims, an axis counted from the front), naming the student's file; else ""."""
    frames = _frames(detail)
    file, code = (f"{frames[-1][0]}.py", frames[-1][1]) if frames else ("", "")
    if not file:
        return ""
    if _VIEW.search(text):
        return _(VIEW_HINT).format(file=file)
    m = _NP_BROADCAST.search(text)
    if m:
        first, second = _shape(m[1]), _shape(m[2])
        if first[:-1] == second or second[:-1] == first:  # the evidence: the last axis dropped
            return _(KEEPDIMS_HINT).format(file=file, first=first, second=second)
    # torch names no shapes: the evidence is a reduction's result on the line that raised
    if _TORCH_SIZES.search(text) and _REDUCTION.search(code):
        return _(KEEPDIM_HINT).format(file=file)
    m = _AXIS.search(text)
    if m and int(m[1]) >= 0:
        return _(AXIS_HINT).format(file=file, axis=m[1], ndim=m[2])
    m = _DIM.search(text)
    if m and int(m[3]) >= 0:
        return _(AXIS_HINT).format(file=file, axis=m[3], ndim=int(m[2]) + 1)
    return ""


def python_error(exc_type: str, text: str) -> str:
    """The hint of a plain Python mistake, from the exception's type and text, else ""."""
    if exc_type in ("UnboundLocalError", "NameError") or _UNBOUND.search(text):
        m = _UNBOUND.search(text)
        if m:
            return _(UNBOUND_HINT).format(name=m[1] or m[2])
        m = _NAME.search(text)
        if m:
            return _(NAME_HINT).format(name=m[1])
    if exc_type == "AttributeError":
        m = _NO_ATTRIBUTE.search(text)
        if m and m[1] in ("tuple", "list"):
            return _(TUPLE_HINT).format(type=m[1], attribute=m[2])
        if m:
            return _(ATTRIBUTE_HINT).format(type=m[1], attribute=m[2])
        m = _MODULE_ATTRIBUTE.search(text)
        if m:
            return _(MODULE_ATTRIBUTE_HINT).format(module=m[1], attribute=m[2])
    if exc_type == "TypeError":
        m = _ARGUMENTS.search(text)
        if m:
            return _(ARGUMENTS_HINT).format(function=f"{m[1]}()") if m[1] else _(ARGUMENTS_HINT_ANY)
        m = _NOT_CALLABLE.search(text)
        if m:
            return _(NOT_CALLABLE_HINT).format(type=m[1])
    return ""


def hint_for(exc_type: str, message: str, detail: str, error_hint: str) -> str:
    """The hint of a student's exception (kind "exception"): its argument order, else its Python mistake, else
    the property's error_hint (a msgid, untranslated) where its evidence holds; translated."""
    shape_hint = bool(error_hint) and error_hint.startswith(SHAPE_HINT_START)
    # a call's arguments: the property's own hint (its function's signature) knows better, unless about shapes
    if exc_type == "TypeError" and _ARGUMENTS.search(message) and error_hint and not shape_hint:
        return argument_order(detail) or _(error_hint)
    found = (
        argument_order(detail)
        or numpy_habit(exc_type, message, detail)
        or library_error(exc_type, message, detail)
        or python_error(exc_type, message)
    )
    if found:  # read from the error's own text and the student's line
        from .evidence import Evidence, named

        return named(found, Evidence.DIRECT)
    if not error_hint or (shape_hint and not _SHAPE_WORDS.search(message)):
        return ""
    return _(error_hint)
