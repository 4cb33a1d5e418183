"""The by-hand rules: which library functions a component may not use, enforced two ways.

- families.py: what is forbidden: the operator families (softmax, norm, attention, loss), the named sets of
  library names, each component's (STATIC), and the survey of torch, NumPy and SciPy they answer to.
- runtime_guard.py: at run time, the library's own kernels refuse while a component that forbids their family is
  under test (shadow kernels at torch's dispatcher, however the operator is reached).
- static_scan.py: statically, an AST scan of every file of the submission names forbidden calls, the tricks that
  hide them and tampering with the rules.

Which families and names a component forbids is its declaration's (autograder/components.py); how the sets
are derived (survey()) and what is deliberately allowed: docs/byhand.md. The names below are each module's
public ones, so that `from autograder import rules` reads `rules.guard(...)`, `rules.scan_submission(...)`;
each lives in, and is documented by, its own module.
"""

from .families import (
    FAMILIES,
    FAMILY_TEXT,
    FORBIDDEN_NAMES,
    NAME_PATTERNS,
    STATIC,
    SURVEY,
    SURVEYED_NAMESPACES,
    family_ops,
    survey,
    unknown_rules,
)
from .runtime_guard import (
    PYTHON_EQUIVALENTS,
    RUNTIME,
    ForbiddenCall,
    forbidden_ops,
    guard,
    install,
    probe,
)
from .static_scan import Finding, imported_helpers, named_helpers, scan_source, scan_submission

__all__ = [
    "FAMILIES",
    "FAMILY_TEXT",
    "FORBIDDEN_NAMES",
    "NAME_PATTERNS",
    "PYTHON_EQUIVALENTS",
    "RUNTIME",
    "STATIC",
    "SURVEY",
    "SURVEYED_NAMESPACES",
    "Finding",
    "ForbiddenCall",
    "family_ops",
    "forbidden_ops",
    "guard",
    "imported_helpers",
    "install",
    "named_helpers",
    "probe",
    "scan_source",
    "scan_submission",
    "survey",
    "unknown_rules",
]
