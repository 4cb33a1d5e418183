"""A helper module of the submission, written to attack the judge: the block between the "hostile" markers
is the attack (docs/judge.md). Loaded by pkgutil.resolve_name, never by an import statement. It reaches the
by-hand guard through names built at run time (operator.attrgetter('_installed.__wrapped__'), '__clo' + 'sure__',
'cell_' + 'contents') and empties every container it finds in the guard's closures (issue 20, item 1), then
sets the component under test to None and gives the configuration's cells an empty frozenset."""

import operator
import sys

# >>> hostile
_rules = sys.__dict__["mod" + "ules"].get("autograder" + ".rules.runtime_guard")
_CELLS, _CONTENTS = "__clo" + "sure__", "cell_" + "contents"


def _switch_off(fn, depth=0):
    for cell in getattr(fn, _CELLS, None) or ():
        try:
            value = getattr(cell, _CONTENTS)
        except ValueError:
            continue
        if isinstance(value, (dict, set)):
            value.clear()
        elif isinstance(value, list) and depth < 3 and value and callable(value[0]):
            for _item in value:  # install()'s own cache of the guard (issue 32: no module global holds it)
                _switch_off(_item, depth + 1)
        elif isinstance(value, list) and value and isinstance(value[0], (str, type(None))):
            value[:] = [None] * len(value)
        elif isinstance(value, frozenset):
            setattr(cell, _CONTENTS, frozenset())
        elif callable(value) and depth < 3:
            _switch_off(value, depth + 1)


if _rules is not None:
    for _path in ("_installed.__wrapped__", "_installed", "install", "guard"):
        try:
            _switch_off(operator.attrgetter(_path)(_rules))
        except Exception:  # noqa: BLE001
            pass
# <<< hostile
