"""What a worker sends back, judged: a reply's types, a worker's error rebuilt and its claims checked, a death
worded.

Nothing from a worker is trusted: the wire (wire.py) rebuilds only plain data; here a Reply must have the field
types the properties expect, a StudentError is rebuilt from bounded text, the kit's own error kinds (a missing
file, a syntax error, a stub) are claims checked against what the judge knows and worded by the judge, and a
timeout or a crash is the judge's to say, never a worker's.
"""

from __future__ import annotations

import os
import re
import signal

from ..i18n import N_, _
from ..student_code.interface import (
    ERROR_KINDS,
    IMPORT_OF,
    Reply,
    StudentError,
    during_import,
    missing_file,
    where_text,
)
from .operations import component_of, executor_wheres

# How a worker died, by signal: "{where}" ends the sentence ("in attention.softmax").
SIGNALS = {
    signal.SIGSEGV: N_("segmentation fault {where}"),
    signal.SIGBUS: N_("bus error {where}"),
    signal.SIGFPE: N_("floating-point exception {where}"),
    signal.SIGILL: N_("illegal instruction {where}"),
    signal.SIGABRT: N_("the process aborted {where}"),
    signal.SIGKILL: N_("the process was killed {where}"),
    signal.SIGXCPU: N_("CPU time limit exceeded {where}"),
    signal.SIGTERM: N_("the process was terminated {where}"),
}


def death_message(status: int | None, where: str) -> str:
    if status is None:
        return _("the process ended {where}").format(where=where)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig in SIGNALS:
            return _(SIGNALS[sig]).format(where=where)
        return _("the process was killed by signal {signal} {where}").format(
            signal=signal.Signals(sig).name, where=where
        )
    return _("the process exited (status {status}) {where}").format(
        status=os.WEXITSTATUS(status), where=where
    )


def malformed(reply) -> str:
    """'' for a Reply whose fields have the types the properties expect; else what is wrong (a forged frame)."""
    if type(reply) is not Reply:
        return _("a {type}, not a reply").format(type=type(reply).__name__[:40])
    fields = {
        "attrs": dict,
        "attrs_require_grad": dict,
        "grad_enabled_seen": tuple,
        "training_seen": tuple,
        "input_grads": (list, type(None)),
        "param_grads": (dict, type(None)),
    }
    for name, kinds in fields.items():
        if not isinstance(getattr(reply, name, None), kinds):
            kind = kinds.__name__ if isinstance(kinds, type) else kinds[0].__name__
            return _("a reply whose {field} is not a {type}").format(field=name, type=kind)
    return ""


# Kinds a worker may claim; a timeout or a crash is the judge's to say.
WORKER_KINDS = ERROR_KINDS - {"timeout", "crashed"}


def judged_error(
    e: StudentError,
    where: str,
    op=None,
    sources: dict | None = None,
    syntax: dict | None = None,
) -> StudentError:
    """A worker's error, rebuilt from plain bounded text (StudentError checks each field's type and cuts it: a
    forged frame may carry anything there); name sys.exit as the exit it is. The kit's own kinds (a missing
    file, a syntax error, a stub) are claims, checked against what the judge knows (the section's files, its
    own compile of them, the operation) and their messages written here; a claim that does not hold (a
    student raising the kit's StudentError of kind "missing") is the student's exception it is."""
    fields = e.__dict__
    e = StudentError(*(fields.get(n) for n in ("kind", "message", "where", "exc_type", "detail")))
    if e.exc_type == "SystemExit":
        if e.where.startswith(
            IMPORT_OF
        ):  # the worker's own text: data in a placeholder, never a message
            where = during_import(e.where.removeprefix(IMPORT_OF))
        return StudentError(
            "crashed",
            _("the process exited (sys.exit) {where}").format(where=where),
            e.where,
            "SystemExit",
            e.detail,
        )
    if e.kind in KIT_KINDS and op is not None:
        return _kit_error(e, op, sources or {}, syntax or {}) or _demoted(e, op)
    kind = e.kind if e.kind in WORKER_KINDS else "exception"
    return StudentError(kind, e.message, e.where, e.exc_type, e.detail)


# The kinds whose messages the judge writes: they end a property at once (missing, syntax) or name the kit's
# own verdict (a stub). "forbidden" keeps the guard's words (an operator's name), bounded like any text.
KIT_KINDS = frozenset({"missing", "syntax", "not_implemented"})


def _slots(template: str, message: str) -> dict | None:
    """The values of a template's {placeholders} in a message made from it, or None if it was not."""
    parts = re.split(r"\{(\w+)\}", template)
    pattern = "".join(re.escape(x) if i % 2 == 0 else f"(?P<{x}>.*?)" for i, x in enumerate(parts))
    m = re.fullmatch(pattern, message, re.S)
    return m.groupdict() if m else None


def _kit_error(e: StudentError, op, sources: dict, syntax: dict) -> StudentError | None:
    """The kit's error the worker claims, as the judge writes it; None if the claim does not hold."""
    wheres = executor_wheres(op)
    where = e.where if e.where in wheres else wheres[0]
    if e.kind == "missing":
        slots = _slots(_("{file} is missing from the submission (needed by {where})"), e.message)
        file = (slots or {}).get("file", "")
        module = file.removesuffix(".py")
        if file.endswith(".py") and module.isidentifier() and len(module) <= 64:
            if module not in sources:
                return missing_file(file, where)
        return None
    if e.kind == "syntax":
        if not syntax:
            return None
        slots = _slots(_("SyntaxError in {file}, line {line}: {error}"), e.message) or {}
        named = slots.get("file", "")
        own = f"{component_of(op)}.py"
        file = named if named in syntax else own if own in syntax else sorted(syntax)[0]
        if not syntax[
            file
        ]:  # a file too large for the judge to compile: the worker's words, bounded
            return StudentError("syntax", e.message[:300], where, "SyntaxError")
        line, msg = syntax[file]
        message = _("SyntaxError in {file}, line {line}: {error}").format(
            file=file, line=line, error=msg
        )
        return StudentError("syntax", message, where, "SyntaxError")
    if e.kind == "not_implemented":
        message = _("{where} is not implemented yet (raises NotImplementedError)").format(
            where=where_text(where)
        )
        # No traceback: it ends at `raise NotImplementedError` and would carry the student's text unbudgeted.
        return StudentError("not_implemented", message, where, "NotImplementedError")
    return None


def _demoted(e: StudentError, op) -> StudentError:
    """A kit kind the judge did not confirm: the student's own exception, worded as any other."""
    where = executor_wheres(op)[0]
    lines = e.message.strip().splitlines()
    text = lines[0][:300] if lines else ""
    error = e.exc_type or "StudentError"
    msg = (_("{error} in {where}: {text}") if text else _("{error} in {where}")).format(
        error=error, where=where_text(where), text=text
    )
    return StudentError("exception", msg, where, error, e.detail)
