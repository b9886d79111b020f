""""Did you mean ...": the hint a misspelled name gets (a field's is in compiler.py, which knows values).

Only error paths call these, so a correct program pays nothing for them.
"""

import difflib


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
