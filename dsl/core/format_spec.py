"""An f-string's text: each `{expr:spec}` field by Python's format-spec mini-language applied to dg values."""

import re

import numpy as np

from ..errors import DgError, error, located
from .ops.arith import MAX_SEQUENCE
from .printing import MAX_FORMAT_WIDTH, show, show_tensor
from .tape import raw
from .values import a_type_name

NUMERIC_CODES = set("bcdoxXneEfFgG%")


def format_value(v, spec):
    """An f-string field: Python's format-spec mini-language applied to numbers
    (and to each element of a tensor); other values print as `str` does."""
    v = raw(v)
    if spec is None:        # f"{x=}": as Python's repr, a string quoted
        return show(v, nested=True)
    if not spec:
        return show(v)
    if any(len(n) > 5 or int(n) > MAX_FORMAT_WIDTH for n in re.findall(r"\d+", spec)):
        raise error("limit", f"the format spec '{spec[:40]}' asks for a width or precision over "
                             f"{MAX_FORMAT_WIDTH:,}")
    t = type(v)
    try:
        if t is bool or t is np.bool_:
            # a numeric presentation type formats the bool as the int it is, as Python does ({true:d} -> 1)
            return format(int(v) if spec[-1:] in NUMERIC_CODES else show(v), spec)
        if t is int or t is float or t is np.float64:
            return format(v, spec)
        if t is np.ndarray:
            return show_tensor(v, spec)
        return format(show(v), spec)
    except (ValueError, OverflowError) as exc:      # {-1:c}, {2**40:c}, {10**400:e}
        raise error("value", f"bad format spec '{spec}' for {a_type_name(v)}: {exc}") from None


def fstring_text(parts, values, span):
    """An f-string's text from its parts and the values of its fields."""
    out = []
    it = iter(values)
    for part_ev, text, field_span in parts:
        if part_ev is None:
            out.append(text)
        else:
            try:
                out.append(format_value(next(it), text))
            except DgError as exc:
                raise located(exc, field_span)
    if sum(map(len, out)) > MAX_SEQUENCE:    # f"{s}{s}" in a loop would eat the memory
        raise error("limit", f"an f-string longer than {MAX_SEQUENCE:,} characters", span)
    return "".join(out)
