"""Helpers shared by the primitives: result normalisation, operand checks, messages."""

import contextvars

import numpy as np

from ...base.suggest import tuple_hint
from ...errors import error
from ..tape import Box, peek, raw
from ..values import a_type_name, type_name

np.seterr(all="ignore")   # IEEE results (inf, nan) are dg's semantics, not warnings

ndarray = np.ndarray
FLOAT = np.float64
FLOAT_DTYPE = np.dtype(FLOAT)
INT64_MAX = 2 ** 63 - 1
MAX_AXES = 32           # numpy allows 64; more than 32 axes is surely a mistake


def fmt_shape(shape):
    """Write a shape the way Python writes a tuple: (3, 4), (5,), ()."""
    return str(tuple(int(s) for s in shape))


def norm(r):
    """Turn numpy scalars into Python floats, ints and bools, so scalar fast paths stay fast."""
    t = type(r)
    if t is ndarray:
        return r
    if t is np.bool_:
        return bool(r)
    if isinstance(r, np.floating):
        return float(r)
    if isinstance(r, np.integer):       # an entry or a sum of an int tensor is an int, as in numpy
        return int(r)
    return r


def is_num(v):
    """A Python number (int, float or bool)."""
    t = type(v)
    return t is float or t is int or t is bool


def as_operand(v, what):
    """Prepare a number or tensor for numpy arithmetic; anything else is a type error."""
    t = type(v)
    if t is ndarray:
        return v.astype(FLOAT) if v.dtype.kind == "b" else v
    if t is float or t is bool:
        return v
    if t is int:
        return v if -INT64_MAX <= v <= INT64_MAX else _big_int_to_float(v)
    if t is np.float64 or t is np.bool_:
        return v
    raise error("type", f"cannot {what} {a_type_name(v)}")


def float_type(v):
    """The float type a value's cotangent, padding or zeros take: a float tensor's own, else float64
    (numbers, int and bool tensors)."""
    return v.dtype if type(v) is ndarray and v.dtype.kind == "f" else FLOAT_DTYPE


def as_operands(a, b, what):
    """as_operand of both operands of a binary operation, a bool tensor becoming the float type of
    a float tensor beside it (a mask times float32 stays float32), else float64."""
    x, y = as_operand(a, what), as_operand(b, what)
    if type(y) is ndarray and y.dtype.kind == "f" and y.dtype is not FLOAT_DTYPE and type(a) is ndarray \
            and a.dtype.kind == "b":
        x = a.astype(y.dtype)
    elif type(x) is ndarray and x.dtype.kind == "f" and x.dtype is not FLOAT_DTYPE and type(b) is ndarray \
            and b.dtype.kind == "b":
        y = b.astype(x.dtype)
    return x, y


def _big_int_to_float(v):
    """An int too big for numpy: as a float, or ±inf."""
    try:
        return float(v)
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


to_float = _big_int_to_float    # any Python number as a float; ints beyond float range are ±inf


def brief_int(n):
    """An int for an error message: its digits, or its size when it has too many to show."""
    return str(n) if n.bit_length() <= 256 else f"an int of {n.bit_length():,} bits"


def shape_of(v):
    """The shape of a number or tensor (numbers are ())."""
    v = peek(v)
    return v.shape if type(v) is ndarray else ()


def check_broadcast(a, b, verb):
    """Raise a shape error if two operands do not broadcast together."""
    sa, sb = shape_of(a), shape_of(b)
    if sa == sb or not sa or not sb:
        return
    # one shape ends the other ((16, 32) and (32,)): the result has the larger one, which exists
    if sa[len(sa) - len(sb):] == sb if len(sa) >= len(sb) else sb[len(sb) - len(sa):] == sa:
        return
    try:
        out = np.broadcast_shapes(sa, sb)
    except ValueError:
        raise error("shape", f"cannot {verb} tensors of shapes {fmt_shape(sa)} and {fmt_shape(sb)}",
                    hint=_first_axes_hint(sa, sb)) from None
    check_size(out, "result")      # broadcasting can make a result far larger than either operand


def _first_axes_hint(sa, sb):
    """Where the shorter shape begins the longer ((3,) and (3, 4)): numpy lines up the last axes,
    and the user meant the first (a per-row scale): say how. Else None."""
    short, long_ = (sa, sb) if len(sa) < len(sb) else (sb, sa)
    if len(short) == len(long_) or long_[:len(short)] != short:
        return None
    ones = short + (1,) * (len(long_) - len(short))
    return (f"broadcasting lines up the last axes, as numpy's does: to line up the first, reshape the "
            f"{fmt_shape(short)} tensor to {fmt_shape(ones)} (x[:, newaxis] for a vector)")


def to_tensor(v, what="a tensor"):
    """A number or tensor as a float64 ndarray (0-d for numbers)."""
    t = type(v)
    if t is ndarray:
        return v.astype(FLOAT) if v.dtype.kind == "b" else v
    if t in (float, int, bool) or isinstance(v, np.generic):
        return np.asarray(to_float(v))
    raise error("type", f"expected {what}, got {type_name(v)}", hint=container_hint(v))


def range_values(r):
    """A range's values as a float tensor (numpy's array(range(3))), held to the size limit."""
    check_size((len(r),))
    return np.arange(r.start, r.stop, r.step, dtype=FLOAT)


def container_hint(*values):
    """The hint for a tuple or a range where a number or tensor was expected (numpy computes on
    Python's sequences; dg's tuples and ranges hold values without computing on them), or None."""
    for v in values:
        if type(v) is tuple:
            return "a tuple holds values but does not compute on them: [1.0, 2.0] is a tensor, and tensor(t) makes one of t"
        if type(v) is range:
            return "a range is not a tensor: arange(a, b) is the tensor of its values"
    return None


def int_axis(axis):
    """An axis argument with its int-valued floats as ints (accepted as the ints they equal, as
    normalize_axis accepts them), so that what a primitive records, and its rules read, is an int.
    A float that jit or vmap stages is read (a guard: the program holds for that axis only)."""
    if type(axis) is Box:
        axis = raw(axis)
    t = type(axis)
    if t is float:
        return int(axis) if axis.is_integer() else axis
    if t is tuple:
        return tuple(int_axis(a) if type(a) is float or type(a) is Box else a for a in axis)
    return axis


def normalize_axis(axis, ndim, allow_tuple=True):
    """Check an axis argument (int, tuple of ints or none) against `ndim`; return it normalised."""
    if axis is None:
        return None
    if type(axis) is tuple and allow_tuple:
        out = tuple(normalize_axis(a, ndim, False) for a in axis)
        if len(set(out)) != len(out):
            raise error("value", f"the axis {axis} repeats an axis")
        return out
    if type(axis) is float and axis.is_integer():
        axis = int(axis)
    if type(axis) is not int:
        raise error("type", f"an axis must be an int{' or a tuple of ints' if allow_tuple else ''}, "
                            f"got {type_name(axis)}")
    if not -ndim <= axis < max(ndim, 1) or ndim == 0:
        raise error("index", f"axis {brief_int(axis)} is out of range for a tensor with {ndim} "
                             f"ax{'is' if ndim == 1 else 'es'}")
    return axis % ndim


def check_shape_arg(shape, what="shape"):
    """A shape argument (int or tuple of ints) as a tuple of ints."""
    shape = raw(shape)
    if type(shape) is int or (type(shape) is float and shape.is_integer()):
        shape = (int(shape),)
    if type(shape) is not tuple:
        raise error("type", f"a {what} must be an int or a tuple of ints, got {type_name(shape)}",
                    hint=tuple_hint(shape))
    out = []
    for s in shape:
        s = raw(s)
        if type(s) is float and s.is_integer():
            s = int(s)
        if type(s) is not int:
            raise error("type", f"a {what} must hold ints, got {type_name(s)}")
        if abs(s) > INT64_MAX:      # numpy cannot even describe such an axis, empty or not
            raise error("limit", f"a {what} entry of {brief_int(s)} is too large")
        out.append(s)
    if len(out) > MAX_AXES:
        raise error("limit", f"a {what} may have at most {MAX_AXES} axes, got {len(out)}")
    return tuple(out)


__all__ = ["Box", "raw", "peek", "error", "type_name", "ndarray", "FLOAT", "fmt_shape", "norm", "to_float", "brief_int",
           "is_num", "as_operand", "as_operands", "float_type", "shape_of", "check_broadcast", "to_tensor",
           "normalize_axis", "check_shape_arg"]


# The largest tensor a program may allocate: the running interpreter's limit, set by
# Interpreter.call_in_run. A context variable, so that interpreters in two threads keep their own.
_max_elements = contextvars.ContextVar("dg_max_elements", default=None)
max_elements, set_max_elements = _max_elements.get, _max_elements.set


def check_size(shape, what="tensor", limit=None):
    """Refuse to allocate a tensor larger than the interpreter's limit (or `limit`), or with more
    than MAX_AXES axes."""
    if len(shape) > MAX_AXES:
        raise error("limit", f"a {what} may have at most {MAX_AXES} axes, got {len(shape)}")
    n = 1
    for s in shape:
        if s < 0:
            raise error("value", f"a {what} cannot have a negative size, got shape {fmt_shape(shape)}")
        n *= s
    # an axis longer than the limit is refused even when another axis is empty: numpy cannot make it
    longest = max(shape, default=0)
    if limit is None:
        limit = max_elements()
    if limit is not None and max(n, longest) > limit:
        size = f"{n:,} elements" if n > limit else f"an axis of length {longest:,}"
        raise error("limit", f"a {what} of shape {fmt_shape(shape)} has {size}, more than "
                             f"the limit of {limit:,} elements",
                    hint="raise it with --max-tensor or Interpreter(max_tensor_elements=...)")
    return shape
