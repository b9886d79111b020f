"""GradBench's JSON values as dg values, and dg results as JSON.

JSON -> dg: a list of numbers, or a rectangular nesting of such lists, is a
float64 tensor (ints such as indices included: dg indexes with int-valued
floats); any other list is a tuple; objects are maps; numbers, strings, bools
and null stay what they are. dg -> JSON: tensors are (nested) lists, tuples are
lists, maps and structs are objects, numbers, strings, bools and none stay.
"""

import numpy as np

from dsl.core.tape import raw
from dsl.core.values import Struct


def to_dg(value):
    """A JSON value as a dg value."""
    if isinstance(value, list):
        tensor = _tensor(value)
        return tensor if tensor is not None else tuple(to_dg(v) for v in value)
    if isinstance(value, dict):
        return {str(k): to_dg(v) for k, v in value.items()}
    return value


def _tensor(items):
    """A list of numbers (at any depth, rectangular) as a float64 array, else None."""
    if not _numeric_leaves(items):
        return None
    try:
        return np.array(items, dtype=np.float64)
    except (ValueError, TypeError):     # ragged
        return None


def _numeric_leaves(items):
    """Whether the first leaf of a nested list is a number (not a bool): a cheap test before numpy's."""
    while isinstance(items, list):
        if not items:
            return True
        items = items[0]
    return type(items) in (int, float)


def to_json(value):
    """A dg value as a JSON-ready Python value."""
    v = raw(value)
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if type(v) is tuple:
        return [to_json(x) for x in v]
    if type(v) is dict:
        return {str(k): to_json(x) for k, x in v.items()}
    if type(v) is Struct:
        return {name: to_json(x) for name, x in zip(v.sdef.fields, v.vals)}
    return v
