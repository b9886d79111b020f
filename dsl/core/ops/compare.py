"""Comparisons, structural equality and conditions. None of these is differentiable."""

from types import FunctionType

import numpy as np

from ..tape import Box, concrete, nondiff, peek
from ..values import values_equal
from .slots import unpack
from .core import FLOAT, as_operand, check_broadcast, error, fmt_shape, ndarray, norm, raw, type_name

ORDER_OPS = {"<": "Less", "<=": "LessEqual", ">": "Greater", ">=": "GreaterEqual"}

_ORDER = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}
_PY = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
       ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def order(op, a, b):
    """a < b (and <=, >, >=): numbers and strings give a bool, tensors compare elementwise."""
    ta, tb = type(a), type(b)
    if ta is Box or tb is Box:     # not differentiable: recorded only where every operation is staged
        return nondiff(ORDER_OPS[op], (a, b))
    if (ta is float or ta is int) and (tb is float or tb is int):
        return _PY[op](a, b)
    if ta is ndarray or tb is ndarray:
        if _orderable_num(a) and _orderable_num(b):
            x, y = as_operand(a, "compare"), as_operand(b, "compare")
            check_broadcast(x, y, "compare")
            return norm(_ORDER[op](x, y))
    elif _orderable_num(a) and _orderable_num(b):
        return _PY[op](a, b)
    elif ta is tb and ta in (str, tuple):
        if ta is tuple:     # staged items (jit's): their values decide, guarded
            a, b = concrete(a), concrete(b)
        try:
            return _PY[op](a, b)
        except (TypeError, ValueError):      # elements that do not order, or tensors inside tuples
            pass
    raise error("type", f"cannot compare {type_name(a)} and {type_name(b)} with '{op}'")


def _orderable_num(v):
    """Numbers and tensors can be ordered against each other."""
    return type(v) in (float, int, bool, ndarray) or isinstance(v, np.generic)


def eq(a, b):
    """a == b: elementwise for tensors (against tensors or numbers), structural otherwise."""
    if type(a) is Box or type(b) is Box:
        if _on_numbers(a, b):
            return nondiff("Equal", (a, b))
        if type(peek(a)) is str and type(peek(b)) is str:      # an f-string jit stages: read, and guarded
            return raw(a) == raw(b)
        # a traced number or tensor against none, a string or a structure: unequal whatever its
        # value, so its value is not read (jit would guard it: `if mask == none` with a tensor
        # argument would stage again on every call with new values)
        return False
    a, b = raw(a), raw(b)
    if type(a) is ndarray or type(b) is ndarray:
        if _orderable_num(a) and _orderable_num(b):
            x, y = as_operand(a, "compare"), as_operand(b, "compare")   # big ints become floats
            check_broadcast(x, y, "compare")
            return norm(np.equal(x, y))
        return False
    if type(a) is str or type(b) is str:
        _check_not_a_type_test(a, b)
    return values_equal(a, b)


# the builtins Python's `type(x) == float` names, and the names dg's type(x) gives for them
_TYPE_BUILTINS = {"int": "int", "float": "float", "bool": "bool", "str": "string", "tensor": "tensor"}


def _check_not_a_type_test(a, b):
    """Python's type(x) == float compares type(x) with the builtin: in dg, where type(x) is a name,
    it would be false whatever x is, so it is an error that says to compare with the name."""
    for name, f in ((a, b), (b, a)):
        builtin = f.__name__.rstrip("_") if type(name) is str and type(f) is FunctionType else None
        if builtin in _TYPE_BUILTINS:
            raise error("type", f"cannot compare a string with the function {builtin}",
                        hint=f'type(x) gives a name: type(x) == "{_TYPE_BUILTINS[builtin]}"')


def ne(a, b):
    """a != b, the negation of `eq`."""
    if (type(a) is Box or type(b) is Box) and _on_numbers(a, b):
        return nondiff("NotEqual", (a, b))
    r = eq(a, b)
    return np.logical_not(r) if type(r) is ndarray else not r


def _on_numbers(a, b):
    """Whether both operands of == are numbers or tensors (compared elementwise, not structurally)."""
    return _orderable_num(peek(a)) and _orderable_num(peek(b))


# ---------------------------------------------------------------- masks
def logical_and(a, b):
    """Elementwise `and` of two masks (bools or bool tensors)."""
    if type(a) is Box or type(b) is Box:
        return nondiff("LogicalAnd", (a, b))
    return norm(np.logical_and(a, b))


def logical_or(a, b):
    """Elementwise `or` of two masks."""
    if type(a) is Box or type(b) is Box:
        return nondiff("LogicalOr", (a, b))
    return norm(np.logical_or(a, b))


def logical_not(a):
    """Elementwise `not` of a mask."""
    if type(a) is Box:
        return nondiff("LogicalNot", (a,))
    return norm(np.logical_not(a))


def isfinite(a):
    """Which entries are finite (a mask; a bool for a number)."""
    if type(a) is Box:
        return nondiff("IsFinite", (a,))
    return norm(np.isfinite(a))


def any_(a, rows=False):
    """Whether any entry of a mask is true (a bool; with `rows`, for each entry of axis 0)."""
    if type(a) is Box:
        out = nondiff("Any", (a,), {"rows": rows} if rows else None)
        return out if rows else truth(out, "any(...)")
    if rows:
        return np.reshape(a, (np.shape(a)[0], -1)).any(axis=1)
    return bool(np.any(a))


def truth(c, what="a condition"):
    """The bool value of a condition: a bool, or a tensor with exactly one element (reference 3)."""
    t = type(c)
    if t is bool:
        return c
    c = raw(c)
    t = type(c)
    if t is bool:
        return c
    if t is np.bool_:
        return bool(c)
    if t is ndarray:
        if c.size == 1:
            return bool(c.reshape(()))
        masks = "'" in what      # `and`, `or`, `not`: numpy's &, | and ~ were meant
        raise error("shape", f"{what} must be a single bool, got a tensor of shape "
                             f"{fmt_shape(c.shape)}",
                    hint="logical_and, logical_or and logical_not combine masks entry by entry" if masks else
                    "reduce it to one element first, e.g. sum(x > 0) > 0, or index one element")
    raise error("type", f"{what} must be a bool, got {type_name(c)}",
                hint="compare explicitly, e.g. x != 0" if t in (int, float) else None)


def not_(c):
    """`not c`."""
    return not truth(c, "the operand of 'not'")


# ---------------------------------------------------------------- membership
def contains(item, container):
    """`item in container`, as in Python: a key of a map, an element of a tuple (by ==), a value
    of a range, a substring of a string, or, as numpy's `in`, an entry of a tensor."""
    c = peek(container)
    t = type(c)
    if t is dict:
        k = raw(item)
        return type(k) in (str, int, bool) and k in c
    if t is tuple:
        return any(_equal(item, e) for e in unpack(container))
    if t is range:
        k = raw(item)
        return type(k) in (int, bool) and k in c or type(k) is float and k.is_integer() and int(k) in c
    if t is str:
        s = raw(item)
        if type(s) is not str:
            raise error("type", f"'in' a string needs a string on its left, got {type_name(s)}")
        return s in raw(container)
    if t is ndarray:
        if not _orderable_num(peek(item)):
            raise error("type", f"'in' a tensor needs a number or tensor on its left, got {type_name(item)}")
        return any_(eq(container, item))
    raise error("type", f"'in' needs a map, tuple, range, string or tensor on its right, got {type_name(c)}")


def _equal(a, b):
    """Whether an element of a tuple is `a`, as == decides; a tensor is one when shape and
    entries are the same (as inside containers, reference section 3)."""
    pa, pb = peek(a), peek(b)
    if type(pa) is ndarray and type(pb) is ndarray and pa.shape != pb.shape:
        return False
    r = eq(a, b)
    if type(r) is bool:
        return r
    return truth(r) if np.size(peek(r)) == 1 else bool(np.all(raw(r)))


COMPARE = {"==": eq, "!=": ne, "<": lambda a, b: order("<", a, b), "<=": lambda a, b: order("<=", a, b),
           ">": lambda a, b: order(">", a, b), ">=": lambda a, b: order(">=", a, b),
           "in": contains, "not in": lambda a, b: not contains(a, b)}

__all__ = ["order", "eq", "ne", "values_equal", "truth", "not_", "contains", "COMPARE", "FLOAT"]
