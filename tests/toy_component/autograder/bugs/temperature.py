"""Cataloged mistakes of the toy component (docs/extending.md)."""

from . import Bug

BUGS = [
    Bug(
        "temperature",
        "multiplied_by_temperature",
        "multiplies x by the temperature instead of dividing",
        "    z = x / temperature\n",
        "    z = x * temperature\n",
        "divide x by the temperature",
    ),
]
