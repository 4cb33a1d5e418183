"""Every derived file, from its source: `python -m autograder generate [--check]`.

    python -m autograder generate          # rewrite what is out of date, naming each file written
    python -m autograder generate --check  # write nothing; exit 1 naming each stale file (tests/test_readme.py)

Three parts, each a source and what follows from it:
- stubs: exercises/ from solutions/ (autograder/stubs.py);
- blocks: the generated blocks of the README, docs/contract.md, docs/judge.md, docs/nbgrader.md and docs/report.md
  (below);
- messages: the messages of each translation catalog (autograder/locale/<lang>/LC_MESSAGES/autograder.po) in step
  with the marked messages, property summaries and stub docstrings of the code (`i18n update`); their
  translations and the compiled .mo stay the translator's steps (`i18n compile`, docs/i18n.md).

A block is the text between `<!-- generated: NAME -->` and `<!-- end generated: NAME -->`. `counts` comes from
the property registry and the bug catalog; `components`, `contract` and `course-order` from
autograder/components.py; `glossary` from autograder/glossary.py (each with an `-es` twin for the Spanish student
README); every other NAME is the file benchmarks/figures/NAME.md, written by the benchmark
script that measures it (`--write`). Nothing in a block is typed by hand.

The student READMEs (autograder/student/README*.md) are templates whose blocks stay empty: `release` renders them
into the bundle (`render`). They name every component, so keeping them out of the committed files spares each new
component two edited files (docs/extending.md: ten files at most).
"""

from __future__ import annotations

import re
from pathlib import Path

from . import KIT

FIGURES = KIT / "benchmarks" / "figures"
README = KIT / "README.md"
FILES = (
    README,
    KIT / "docs" / "contract.md",
    KIT / "docs" / "judge.md",
    KIT / "docs" / "nbgrader.md",
    KIT / "docs" / "report.md",
)
BLOCK = re.compile(
    r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end generated: (?P=name) -->)",
    re.S,
)


def counts() -> str:
    """Properties, points and bugs per component, from the registries themselves."""
    from . import registry
    from .bugs import catalog
    from .components import NAMES

    props = registry.load(include_hidden=True)
    bugs = catalog()
    rows = [
        "| component | visible properties (points) | hidden properties (points) | cataloged bugs |",
        "|---|---:|---:|---:|",
    ]
    for name in NAMES:
        mine = [p for p in props if p.component == name]
        vis, hid = [p for p in mine if p.visible], [p for p in mine if not p.visible]
        rows.append(
            f"| {name} | {len(vis)} ({sum(p.points for p in vis):g}) | {len(hid)} "
            f"({sum(p.points for p in hid):g}) | {sum(b.component == name for b in bugs)} |"
        )
    vis, hid = [p for p in props if p.visible], [p for p in props if not p.visible]
    rows.append(
        f"| **all** | {len(vis)} ({sum(p.points for p in vis):g}) | {len(hid)} "
        f"({sum(p.points for p in hid):g}) | {len(bugs)} |"
    )
    return "\n".join(rows) + "\n"


def components() -> str:
    """The README's component table: each module and what the student writes in it."""
    from .components import COMPONENTS

    rows = ["| module | what the student writes |", "|---|---|"]
    return "\n".join(rows + [f"| `{c.filename}` | {c.summary} |" for c in COMPONENTS]) + "\n"


def contract() -> str:
    """docs/contract.md's signature table: every component's contract."""
    from .components import COMPONENTS

    return "```\n" + "\n".join(c.contract_block for c in COMPONENTS) + "\n```\n"


def course_order() -> str:
    """The student README's suggested order: the components in teaching order."""
    import textwrap

    from .components import COMPONENTS

    files = ", ".join(f"`{c.filename}`" for c in COMPONENTS)
    return (
        textwrap.fill(f"Suggested order (the notebooks' numbers follow it): {files}.", 115) + "\n"
    )


def course_order_es() -> str:
    import textwrap

    from .components import COMPONENTS

    files = ", ".join(f"`{c.filename}`" for c in COMPONENTS)
    return (
        textwrap.fill(f"Orden sugerido (los números de los notebooks lo siguen): {files}.", 115)
        + "\n"
    )


def glossary(header: str = "| in the Spanish course notebooks | in this kit |") -> str:
    """The student README's glossary: the course notebooks' names and the kit's (autograder/glossary.py)."""
    from .glossary import GLOSSARY

    rows = [header, "|---|---|"] + [
        f"| `{theirs}` | `{ours}` |" for theirs, ours in GLOSSARY.items()
    ]
    return "\n".join(rows) + "\n"


def glossary_es() -> str:
    return glossary("| en los notebooks del curso | en este kit |")


# The README's Spanish excerpt: what `check --lang es` prints for two realistic slips, each planted in the
# reference and run in-process: softmax over the wrong axis (a cataloged bug), and the course notebooks'
# `MultiHeadAttention(heads, dim_embedding)` (their names and order, which the glossary names).
EXCERPT_BUGS = ("attention:softmax_wrong_axis", "multi_head:course_notebook_names")


def _course_notebook_names():
    from .bugs import Bug

    return Bug(
        component="multi_head",
        name="course_notebook_names",
        description="the course notebooks' names and argument order",
        find="def __init__(self, d_model, num_heads, dropout=0.0, bias=True):",
        replace="def __init__(self, heads, dim_embedding, dropout=0.0, bias=True):\n"
        "        d_model, num_heads = dim_embedding, heads",
        fragment="dim_embedding",
    )


def excerpt_es() -> str:
    """Real Spanish failure blocks, as the self-check prints them (results.short_text), one per bug."""
    import tempfile
    from pathlib import Path

    from . import i18n, passes, registry, results
    from .bugs import catalog, make_submission
    from .student_code import InProcessStudentCode
    from .suite import core

    bugs = {b.id: b for b in [*catalog(), _course_notebook_names()]}
    blocks = []
    i18n.set_language("es")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for bug_id in EXCERPT_BUGS:
                bug = bugs[bug_id]
                student = InProcessStudentCode(
                    make_submission(bug, KIT / "solutions", Path(tmp) / bug.name), bug.name
                )
                for p in registry.load(include_hidden=False, components=[bug.component]):
                    outcome = core.run_property(p, student)
                    if not outcome.passed:
                        blocks.append(results.short_text(passes.made(outcome)))
                        break
    finally:
        i18n.set_language(None)
    return "```text\n" + "\n".join(blocks) + "\n```\n"


GENERATED = {
    "counts": counts,
    "components": components,
    "contract": contract,
    "course-order": course_order,
    "course-order-es": course_order_es,
    "glossary": glossary,
    "glossary-es": glossary_es,
    "excerpt-es": excerpt_es,
}


def block(name: str) -> str:
    if name in GENERATED:
        return GENERATED[name]()
    path = FIGURES / f"{name}.md"
    if not path.is_file():
        raise SystemExit(
            f"block {name!r} has no benchmarks/figures/{name}.md: run its benchmark with --write"
        )
    return path.read_text()


def render(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + block(m.group("name")) + m.group(4), text)


def stale_blocks() -> dict[Path, str]:
    """Each file with a stale generated block -> its text brought up to date."""
    out = {}
    for path in FILES:
        old = path.read_text()
        new = render(old)
        if new != old:
            out[path] = new
    return out


def stale_messages() -> list[Path]:
    """The catalogs whose messages are not those of the code."""
    from . import catalogs

    wanted = catalogs.message_ids(catalogs.extract())
    return [
        catalogs.po_path(lang)
        for lang in catalogs.TRANSLATED
        if catalogs.message_ids(catalogs.read(lang)) != wanted
    ]


def stale_stubs() -> list[Path]:
    """The files of exercises/ that differ from what solutions/ makes (or that it does not make)."""
    from . import stubs

    return [KIT / "exercises" / name for name in stubs.drift()]


def stale() -> list[Path]:
    """Every derived file out of date, written nothing."""
    return [*stale_stubs(), *stale_blocks(), *stale_messages()]


def write() -> list[Path]:
    """Bring every derived file up to date; the files written (the stubs first: the blocks and the catalogs
    read them)."""
    from . import catalogs, stubs

    written = stubs.write()
    for path, text in stale_blocks().items():
        path.write_text(text)
        written.append(path)
    changed = stale_messages()
    if changed:
        catalogs.update(catalogs.extract())
    return written + changed


def main(check: bool) -> int:
    paths = stale() if check else write()
    shown = ", ".join(str(p.relative_to(KIT)) for p in paths)
    if check:
        print(
            f"out of date: {shown} (run python -m autograder generate)" if paths else "up to date"
        )
        return 1 if paths else 0
    print(f"wrote {shown}" if paths else "everything was up to date")
    return 0
