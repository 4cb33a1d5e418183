# Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md).
# A helper whose file name is 248 characters long: its bytecode's cache name (".cpython-311.pyc" added)
# overflowed the 255-byte file-name limit in every section (an uncaught OSError, exit 2, no results.json under
# Gradescope). The judge now loads only module names of at most 100 bytes; this one is ignored, with a note.
# >>> hostile
VALUE = 1
# <<< hostile
