"""What a notebook's read-only cells call in the student's kernel: `setup` (first cell) and `check` (test cells).

    import autograder.notebooks.kernel as _kit
    __package__ = _kit.setup("multi_head")       # `from .attention import ...` now works in this notebook
    ...
    _kit.check("multi_head", "multi_head_equals_torch")   # one property; raises with the hint when it fails

`check` grades the module this notebook stands for (its solution cells, see cells.py) exactly as the `grade`
command grades the same file: in a fresh package holding this module and, for the components it imports, the
kit's reference when the kit has one (instructor and grading environments), else the student's own earlier
notebooks in the same folder (a student's environment has no reference). In "judge" mode nbgrader never runs
these cells for a grade: the grade comes from the isolated judge (grading.py); here they are the self-check.
Every call into the notebook's code has the judge's default time limit (InProcessStudentCode: 10 s of CPU time,
scaled by the machine's speed, autograder/timing.py), so a loaded machine changes no verdict; nbgrader's cell
timeout (the course's `--timeout`) is only a wall-clock backstop and should stay well above it.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from .. import i18n
from ..components import get
from ..i18n import _
from . import cells

STUDENT_MODULES = "KIT_STUDENT_MODULES"  # env: a folder with the student's <component>.py files
PACKAGE = "_kit_notebook"  # the package this notebook's cells pretend to live in
_ran: dict[str, str] = {}  # cell id -> source, as last executed in this kernel
# content hash -> InProcessStudentCode (one import per version of the code)
_student_code_by_hash: dict[str, object] = {}
# id(student) -> {property id: its last outcome on that code, made}
_outcomes: dict[int, dict] = {}
_sessions: dict[str, object] = {}  # content hash -> check.SelfCheck (a student's environment only)
_tmp: Path | None = None


class PropertyFailed(AssertionError):
    """A failing property. IPython prints `_render_traceback_()` instead of a traceback into the kit."""

    def __init__(self, text: str):
        super().__init__(text.splitlines()[0])
        self.text = text

    def _render_traceback_(self):
        return self.text.splitlines()


def _workdir() -> Path:
    global _tmp
    if _tmp is None:
        _tmp = Path(tempfile.mkdtemp(prefix="kit-notebook-"))
        atexit.register(shutil.rmtree, _tmp, True)
    return _tmp


def reference_dir() -> Path | None:
    """solutions/ when the kit's reference is installed (never in a student's environment)."""
    try:
        import solutions
    except ImportError:
        return None
    return Path(solutions.__file__).parent


def _dep_source(name: str, own: bool) -> str | None:
    ref = reference_dir()
    if not own and ref is not None and (ref / f"{name}.py").is_file():
        return (ref / f"{name}.py").read_text()
    modules = os.environ.get(STUDENT_MODULES)  # set by nbgrader (kernel mode): the whole submission
    if modules and (Path(modules) / f"{name}.py").is_file():
        return (Path(modules) / f"{name}.py").read_text()
    path = cells.find_notebook(Path.cwd(), name)  # the student's earlier notebook, next to this one
    return cells.module_source(cells.read_notebook(path)) if path is not None else None


def _deps(component: str, own: bool = False) -> dict[str, str]:
    """The modules `component` imports: the reference's, or with own=True (or without a reference) the
    student's own, from their earlier notebooks."""
    found = {d: _dep_source(d, own) for d in get(component).deps}
    return {d: src for d, src in found.items() if src is not None}


def _record(info) -> None:
    cell_id = getattr(info, "cell_id", None)
    if cell_id:
        _ran[cell_id] = info.raw_cell


def course_language(component: str) -> str | None:
    """The language this notebook was generated in (`nbgrader-course --lang`), from its metadata; None: English
    or unknown."""
    path = cells.find_notebook(Path.cwd(), component)
    try:
        lang = cells.read_notebook(path)["metadata"]["kit"]["lang"] if path else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return lang if lang in i18n.LANGUAGES else None


def setup(component: str) -> str:
    """Build the package holding this notebook's dependencies; return its name for `__package__`."""
    get(component)  # an unknown name fails here, not later
    # the course's language, unless the student's environment chose one
    if lang := course_language(component):
        os.environ.setdefault(i18n.ENV, lang)
    try:
        ip = get_ipython()  # defined inside IPython only
        if _record not in ip.events.callbacks["pre_run_cell"]:
            ip.events.register("pre_run_cell", _record)
    except NameError:
        pass
    folder = _workdir() / "package"
    shutil.rmtree(folder, ignore_errors=True)
    deps = _deps(component)
    cells.write_package(deps, folder)
    for missing in sorted(set(get(component).deps) - set(deps)):
        print(
            _(
                "note: {notebook} is not next to this notebook, so `from .{module} import ...` will fail"
            ).format(notebook=f"{missing}.ipynb", module=missing)
        )
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        del sys.modules[name]  # a re-run picks up edits to the earlier notebooks
    from ..student_code.executor import load_package

    load_package(folder, PACKAGE)
    return PACKAGE


def notebook_module(component: str) -> str:
    """This notebook's module: the solution cells of <component>.ipynb in the working directory, each one
    replaced by the text last run in this kernel (so an edited cell counts once it is run, saved or not)."""
    # <component>.ipynb, or the bundle's NN_<component>.ipynb
    path = cells.find_notebook(Path.cwd(), component)
    if path is None:
        raise FileNotFoundError(
            _("{notebook} is not in {folder}: keep the notebook's name and folder").format(
                notebook=f"{component}.ipynb", folder=Path.cwd()
            )
        )
    solution = cells.solution_cells(cells.read_notebook(path))
    return cells.module_from_cells(
        [_ran.get(c.get("id", ""), cells.source_text(c)) for c in solution]
    )


def _places(component: str, own: bool) -> dict:
    """Where each module line came from, for the modules built from notebooks here (cells.name_cells): this
    notebook's, and its dependencies' when they come from the student's earlier notebooks."""
    from_notebooks = [component]
    if (own or reference_dir() is None) and not os.environ.get(STUDENT_MODULES):
        from_notebooks += list(get(component).deps)
    places = {}
    for name in from_notebooks:
        path = cells.find_notebook(Path.cwd(), name)
        if path is None:
            continue
        solution = cells.solution_cells(cells.read_notebook(path))
        ran = _ran if name == component else {}
        sources = [ran.get(c.get("id", ""), cells.source_text(c)) for c in solution]
        places[name] = (path.name, cells.cell_places(sources))
    return places


def _code_folder(component: str, own: bool) -> tuple[str, Path]:
    """(a key for this version of the code, the package folder holding this notebook's module and its deps)."""
    modules = {**_deps(component, own), component: notebook_module(component)}
    key = hashlib.sha256(repr(sorted(modules.items())).encode()).hexdigest()[:16]
    folder = _workdir() / key
    if not folder.is_dir():
        cells.write_package(modules, folder)
    return key, folder


def _student_code(component: str, own: bool):
    from ..student_code.executor import InProcessStudentCode
    from ..student_code.interface import StopsAtLoops

    key, folder = _code_folder(component, own)
    if key not in _student_code_by_hash:
        # a looping function times out once per version of the code, as in check and grade
        _student_code_by_hash[key] = StopsAtLoops(
            InProcessStudentCode(folder, label=f"{component}.ipynb")
        )
    return _student_code_by_hash[key]


def _self_check(component: str):
    """Where the dependencies are the student's own earlier notebooks for a self-check cell (a student's
    environment has no reference): a check.SelfCheck on this version of the code, which runs the dependencies'
    visible properties once, quietly, to know which of them fail, and blames a failure on them as `check`
    does (docs/selfcheck.md). None where the reference stands in (as in `grade`: nothing to blame)."""
    if reference_dir() is not None:
        return None
    from ..check import SelfCheck

    key, folder = _code_folder(component, own=True)
    if key not in _sessions:
        _sessions[key] = SelfCheck(folder)
        # the dependency sentence names the student's notebooks ("uses your attention.ipynb")
        _sessions[key].files = {n: nb for n, (nb, _) in _places(component, True).items()}
    return _sessions[key]


def check(component: str, name: str, integration: bool = False) -> None:
    """Run one property on this notebook's code; print the verdict, or raise PropertyFailed with the same text
    (message, smallest failing input, hint) that pytest and `grade` show. nbgrader counts a raise as 0 points.
    integration=True: with the student's own earlier modules in place of the reference (the judge's
    integration share)."""
    from .. import passes, registry
    from ..results import outcome_text
    from ..suite import core

    props = {p.id: p for p in registry.load(include_hidden=True)}
    prop = props.get(f"{component}::{name}")
    if prop is None:
        raise LookupError(
            _("no property {id} in this installation of the kit").format(id=f"{component}::{name}")
        )
    session = None if integration else _self_check(component)
    # the student's own earlier notebooks: blamed where they fail, as in `check`
    if session is not None:  # made there (passes.made), once per version of the code
        outcome, seen = session.run(prop), _outcomes.setdefault(id(session), {})
    else:
        student = _student_code(component, integration)
        outcome = passes.made(core.run_property(prop, student))
        seen = _outcomes.setdefault(id(student), {})
    seen[prop.id] = outcome
    # the pipeline every route shares (passes.finish), on copies of the outcomes this code's cells have made
    # so far (a notebook's cells run one at a time, in any order, again: none of its outcomes is ever final):
    # the static point needs a passed behavioural cell on this code, and is blocked with the rest; the cells
    # are named in the text below
    finished = passes.finish(
        [replace(o) for o in seen.values()], blame=session.blame if session else None
    )
    outcome = next(o for o in finished if o.property.id == prop.id)
    # pending, not a failure of this notebook: said, not raised
    if outcome.status == core.Status.BLOCKED:
        print(cells.name_cells(outcome_text(outcome), _places(component, True)))
        return
    # a line of the student's code is named by its cell, not by the generated file
    if not outcome.passed:
        raise PropertyFailed(
            cells.name_cells(outcome_text(outcome), _places(component, integration))
        )
    print(outcome_text(outcome))
