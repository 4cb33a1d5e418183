"""The Transformer exercise kit's checker, judge and tools."""

from pathlib import Path

# The kit's folder: it holds autograder/, solutions/, exercises/, examples/ and docs/ (a student bundle's folder
# holds autograder/, exercises/ and notebooks/). Every other module finds the kit's files from here.
KIT = Path(__file__).resolve().parent.parent
