"""Write the generated blocks of README.md and docs/judge.md: counts from the kit's registries, figures from
benchmarks/figures/.

    python benchmarks/update_readme.py          # rewrite them in place
    python benchmarks/update_readme.py --check  # exit 1 if one is out of date (tests/test_readme.py)

A block is the text between `<!-- generated: NAME -->` and `<!-- end generated: NAME -->`. `counts` comes from
the property registry and the bug catalog; every other NAME is the file benchmarks/figures/NAME.md, written by
the benchmark script that measures it (`--write`). Nothing in a block is typed by hand.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "benchmarks" / "figures"
DOCUMENTS = [ROOT / "README.md", ROOT / "docs" / "judge.md"]
BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end generated: (?P=name) -->)", re.S)


def counts() -> str:
    """Properties, points and bugs per component, from the registries themselves."""
    from autograder.bugs import catalog
    from autograder.components import NAMES
    from autograder.properties import core

    props = core.load(include_hidden=True)
    bugs = catalog()
    rows = ["| component | visible properties (points) | hidden properties (points) | cataloged bugs |",
            "|---|---:|---:|---:|"]
    for name in NAMES:
        mine = [p for p in props if p.component == name]
        vis, hid = [p for p in mine if p.visible], [p for p in mine if not p.visible]
        rows.append(f"| {name} | {len(vis)} ({sum(p.points for p in vis):g}) | {len(hid)} "
                    f"({sum(p.points for p in hid):g}) | {sum(b.component == name for b in bugs)} |")
    vis, hid = [p for p in props if p.visible], [p for p in props if not p.visible]
    rows.append(f"| **all** | {len(vis)} ({sum(p.points for p in vis):g}) | {len(hid)} "
                f"({sum(p.points for p in hid):g}) | {len(bugs)} |")
    return "\n".join(rows) + "\n"


def block(name: str) -> str:
    if name == "counts":
        return counts()
    path = FIGURES / f"{name}.md"
    if not path.is_file():
        raise SystemExit(f"block {name!r} has no benchmarks/figures/{name}.md: run its benchmark with --write")
    return path.read_text()


def render(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + block(m.group("name")) + m.group(4), text)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true", help="exit 1 if a document is out of date")
    args = parser.parse_args()
    stale = []
    for document in DOCUMENTS:
        old = document.read_text()
        new = render(old)
        if new != old:
            stale.append(document.relative_to(ROOT))
            if not args.check:
                document.write_text(new)
    if args.check and stale:
        print(f"{', '.join(map(str, stale))} out of date: run python benchmarks/update_readme.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
