""""Did you mean ...": the hint a misspelled name or field gets.

Only error paths call these, so a correct program pays nothing for them.
"""

import difflib

from .autodiff.tape import peek
from .values import Module, Struct


def closest(word, candidates):
    """The candidate most like `word`, if one is close enough to be a likely typo."""
    found = difflib.get_close_matches(word, [c for c in candidates if c != word], n=1, cutoff=0.75)
    return found[0] if found else None


# Python's constants, which dg spells in lower case
PYTHON_CONSTANTS = {"True": "true", "False": "false", "None": "none"}


def name_hint(name, candidates):
    """"did you mean 'softmax'?" for a misspelled name, or None."""
    if name in PYTHON_CONSTANTS:
        return f"did you mean {PYTHON_CONSTANTS[name]}? (dg writes true, false and none in lower case)"
    best = closest(name, candidates)
    return f"did you mean '{best}'?" if best else None


def field_hint(obj, name, obj_text, builtins):
    """The hint for `obj.name` that failed: a close field or module name, or, for a builtin
    read as a field of a value that has no fields (`t.shape`), the call that was meant."""
    v = peek(obj)
    if type(v) is Struct:
        best = closest(name, v.sdef.fields)
        return f"did you mean '.{best}'?" if best else None
    if type(v) is Module:
        return name_hint(name, [n for n, cell in v.cells.items() if not n.startswith("_")])
    if name in builtins:
        return f"did you mean {name}({obj_text or '...'})?"
    return None
