"""The code under test, as the checking side reaches it: one narrow interface and the executor behind it.

- interface.py: the operations a property sends (Build, Call, Inspect, Source, Modules, Probe), what comes back
  (Reply, Opaque, StudentError), StudentCode (what every property is given) and how a student reads where
  something failed. Properties and the judge's grading side import this half only.
- executor.py: carries the operations out on a loaded submission (Executor), in this process for the self-check
  (InProcessStudentCode) or in a judge's sandboxed worker.

The names below are each module's public ones, so that `from autograder.student_code import Call` reads as
before; each lives in, and is documented by, its own module.
"""

from .executor import (
    Executor,
    InProcessStudentCode,
    export,
    load_package,
    seed_everything,
    student_traceback,
)
from .interface import (
    ERROR_KINDS,
    ERROR_LIMITS,
    IMPORT_OF,
    Build,
    Call,
    Handle,
    Inspect,
    Modules,
    Opaque,
    Probe,
    Reply,
    Source,
    StopsAtLoops,
    StudentCode,
    StudentError,
    cotangent,
    during_import,
    from_files,
    in_call,
    missing_file,
    where_text,
)

__all__ = [
    "ERROR_KINDS",
    "ERROR_LIMITS",
    "IMPORT_OF",
    "Build",
    "Call",
    "Executor",
    "Handle",
    "InProcessStudentCode",
    "Inspect",
    "Modules",
    "Opaque",
    "Probe",
    "Reply",
    "Source",
    "StopsAtLoops",
    "StudentCode",
    "StudentError",
    "cotangent",
    "during_import",
    "export",
    "from_files",
    "in_call",
    "load_package",
    "missing_file",
    "seed_everything",
    "student_traceback",
    "where_text",
]
