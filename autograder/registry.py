"""The property registry's loader: imports every property module, visible (properties/) and hidden (hidden/),
and returns the properties they registered (suite/core.py's `prop` fills the registry, `load` reads it).

It sits above the properties it imports (benchmarks/import_graph.py's LAYERS): the suite's machinery never
imports a property module, the routes that run them (the self-check, the judge, the notebooks, the generators)
call `load`.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from . import properties
from .components import NAMES
from .suite.core import REGISTRY, Property


def load(include_hidden: bool = True, components=None) -> list[Property]:
    """Import the property modules (of `components`, or all); return their properties in component order.

    Each component's modules are found by its name (properties/<name>.py, hidden/<name>.py): a missing one is
    an import error, never a component that silently has no properties."""
    wanted = set(components or NAMES)
    packages = [properties]
    # Only the hidden package beside this one: the student bundle ships none, and an instructor's kit installed
    # in the same environment must not lend it its own.
    if include_hidden and (Path(properties.__file__).resolve().parent.parent / "hidden").is_dir():
        packages.append(importlib.import_module("autograder.hidden"))
    for package in packages:
        for name in (n for n in NAMES if n in wanted):
            importlib.import_module(f"{package.__name__}.{name}")
    order = {name: i for i, name in enumerate(NAMES)}
    chosen = [
        p for p in REGISTRY.values() if (include_hidden or p.visible) and p.component in wanted
    ]
    return sorted(chosen, key=lambda p: (order[p.component], not p.visible))
