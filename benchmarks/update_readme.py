"""Write the generated blocks of the README, docs/contract.md, docs/judge.md and the student READMEs: counts from
the kit's registries, the component tables from the components' declarations, figures from benchmarks/figures/.

    python benchmarks/update_readme.py          # rewrite the files in place
    python benchmarks/update_readme.py --check  # exit 1 if one is out of date (tests/test_readme.py)

A block is the text between `<!-- generated: NAME -->` and `<!-- end generated: NAME -->`. `counts` comes from
the property registry and the bug catalog; `components`, `contract` and `course-order` from
autograder/components.py; `glossary` from autograder/glossary.py (each with an `-es` twin for the Spanish student
README); every other NAME is the file benchmarks/figures/NAME.md, written by the benchmark
script that measures it (`--write`). Nothing in a block is typed by hand.
"""

from __future__ import annotations

import argparse
import re
import sys

from autograder import KIT  # the installed kit (pip install -e .)

FIGURES = KIT / "benchmarks" / "figures"
README = KIT / "README.md"
FILES = (
    README,
    KIT / "docs" / "contract.md",
    KIT / "autograder" / "student" / "README.md",
    KIT / "autograder" / "student" / "README.es.md",
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
    from autograder.bugs import catalog
    from autograder.components import NAMES
    from autograder.properties import core

    props = core.load(include_hidden=True)
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
    from autograder.components import COMPONENTS

    rows = ["| module | what the student writes |", "|---|---|"]
    return "\n".join(rows + [f"| `{c.filename}` | {c.summary} |" for c in COMPONENTS]) + "\n"


def contract() -> str:
    """docs/contract.md's signature table: every component's contract."""
    from autograder.components import COMPONENTS

    return "```\n" + "\n".join(c.contract_block for c in COMPONENTS) + "\n```\n"


def course_order() -> str:
    """The student README's suggested order: the components in teaching order."""
    import textwrap

    from autograder.components import COMPONENTS

    files = ", ".join(f"`{c.filename}`" for c in COMPONENTS)
    return (
        textwrap.fill(f"Suggested order (the notebooks' numbers follow it): {files}.", 115) + "\n"
    )


def course_order_es() -> str:
    import textwrap

    from autograder.components import COMPONENTS

    files = ", ".join(f"`{c.filename}`" for c in COMPONENTS)
    return (
        textwrap.fill(f"Orden sugerido (los números de los notebooks lo siguen): {files}.", 115)
        + "\n"
    )


def glossary(header: str = "| in the Spanish course notebooks | in this kit |") -> str:
    """The student README's glossary: the course notebooks' names and the kit's (autograder/glossary.py)."""
    from autograder.glossary import GLOSSARY

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
    from autograder.bugs import Bug

    return Bug(
        component="multi_head",
        name="course_notebook_names",
        description="the course notebooks' names and argument order",
        find="def __init__(self, d_model, num_heads, dropout=0.0, bias=True):",
        replace="def __init__(self, heads, dim_embedding, dropout=0.0, bias=True):\n"
        "        d_model, num_heads = dim_embedding, heads",
        hint="dim_embedding",
    )


def excerpt_es() -> str:
    """Real Spanish failure blocks, as the self-check prints them (results.short_text), one per bug."""
    import tempfile
    from pathlib import Path

    from autograder import check, i18n, results
    from autograder.bugs import catalog, make_submission
    from autograder.properties import core
    from autograder.student_code.executor import InProcessStudentCode

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
                for p in core.load(include_hidden=False, components=[bug.component]):
                    outcome = core.run_property(p, student)
                    if not outcome.passed:
                        blocks.append(results.short_text(check.with_glossary(outcome)))
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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true", help="exit 1 if a file is out of date")
    args = parser.parse_args()
    stale = []
    for path in FILES:
        old = path.read_text()
        new = render(old)
        if new != old:
            stale.append(path.relative_to(KIT))
            if not args.check:
                path.write_text(new)
    if args.check and stale:
        print(
            f"{', '.join(map(str, stale))} out of date: run python benchmarks/update_readme.py",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
