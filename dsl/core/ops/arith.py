"""Arithmetic primitives: + - * / // % ** @ and unary minus.

Each has a fast path for two Python numbers, records a tape node when an
operand is boxed, and otherwise goes to numpy with type and shape checks.
"""

import math
import operator

import numpy as np

from ..tape import nondiff, record1, record2, record_const, record_floats
from .core import (Box, FLOAT, a_type_name, as_operand, as_operands, brief_int, check_broadcast, check_size,
                   container_hint, error, fmt_shape, is_num, max_elements, ndarray, norm, peek, raw, to_float,
                   type_name)
from .slots import unpack

# Ints have at most 4,300 digits, the most Python converts to text: every int can then be
# printed and named in a message, and no int operation can run for hours.
MAX_INT_DIGITS = 4300
MAX_INT_BITS = 14_284           # 2 ** 14284 < 10 ** 4300: an int this long has at most 4,300 digits
_TOO_LONG = 10 ** MAX_INT_DIGITS


def too_long(r):
    """Whether an int has more than MAX_INT_DIGITS digits (the bit length answers nearly always)."""
    return r.bit_length() > MAX_INT_BITS and abs(r) >= _TOO_LONG


def _int_too_big(what):
    """The `limit` error for an int result of more than MAX_INT_DIGITS digits."""
    return error("limit", f"{what} is an int of more than {MAX_INT_DIGITS:,} digits (Python's limit for "
                          "ints as text)", hint="use floats for larger numbers (they reach inf)")


def checked_int(r, what):
    """r, or the limit error when it is an int too long to show."""
    if type(r) is int and too_long(r):
        raise _int_too_big(what())
    return r
MAX_SEQUENCE = 10_000_000       # longest string or tuple built by repetition


def _numeric(v):
    """Whether `v` can take part in numpy arithmetic."""
    t = type(v)
    return t is ndarray or t is float or t is int or t is bool or isinstance(v, np.generic)


def _plain(x, y):
    """Whether float tensor x (not 0-d) and y need no conversion and no check to combine: y is a
    float, a small int, or a float tensor whose shape is x's or ends it ((16, 32) and (32,))."""
    if type(x) is not ndarray or x.dtype != FLOAT or not x.ndim:
        return False
    ty = type(y)
    if ty is float or (ty is int and -2 ** 53 <= y <= 2 ** 53):
        return True
    if ty is not ndarray or y.dtype != FLOAT or not y.ndim or y.ndim > x.ndim:
        return False
    return x.shape[x.ndim - y.ndim:] == y.shape


def _arith(ufunc, verb, a, b):
    """The general path of a binary operator on numbers and tensors."""
    if _plain(a, b) or _plain(b, a):
        return ufunc(a, b)      # nothing to convert, and a result the size of an operand
    if _numeric(a) and _numeric(b):
        if type(a) is bool:             # numpy's bool - bool is an error
            a = int(a)
        if type(b) is bool:
            b = int(b)
        x, y = as_operands(a, b, verb)
        check_broadcast(x, y, verb)
        return norm(ufunc(x, y))
    # Python's "%.3f" % x: dg formats with f-strings
    hint = 'an f-string formats values: f"{x:.3f}"' if verb == "take the remainder of" and type(a) is str else None
    if verb == "add" and (type(a) is str) != (type(b) is str):     # Python's "n=" + 3 is an error too
        hint = 'str(x) makes a string of a value ("n = " + str(3)), and an f-string formats one: f"n = {3}"'
    hint = container_hint(a, b) or hint     # Python's tuple or range where numpy's array was meant
    if a is None or b is None:      # most often a function whose last line computes a value it never returns
        hint = "a function that ends without `return` gives none: `fn f(x) { return x * 2.0 }`"
    raise error("type", f"cannot {verb} {type_name(a)} and {type_name(b)}", hint=hint)


def _ieee(ufunc, a, b):
    """A scalar result Python refuses (overflow, division by zero): numpy's IEEE answer."""
    return float(ufunc(FLOAT(to_float(a)), FLOAT(to_float(b))))


# ---------------------------------------------------------------- + - *
_MAY_HOLD_TUPLE = (tuple, Box)      # one cheap look before the full test below, on the hot path


def _may_be_tuples(a, ta, b, tb):
    """One cheap look, on the hot path, before the full test of _recorded_tuple."""
    va = a.v if ta is Box else a
    vb = b.v if tb is Box else b
    if type(va) is float and type(vb) is float:
        return False
    return type(va) in _MAY_HOLD_TUPLE or type(vb) in _MAY_HOLD_TUPLE


def _recorded_tuple(a, b):
    """Whether a or b is a tuple on a tape (a differentiated argument), which + and * must open."""
    return (type(a) is Box and type(peek(a)) is tuple) or (type(b) is Box and type(peek(b)) is tuple)


def add(a, b, span=None):
    """a + b (numbers, tensors; strings and tuples concatenate)."""
    ta, tb = type(a), type(b)
    if ta is Box and tb is Box and (r := record_floats("Add", a, b, span, operator.add)) is not None:
        return r        # first: the hot path of differentiated scalar code
    if (ta is float or ta is int or ta is bool) and (tb is float or tb is int or tb is bool):
        try:
            r = a + b
        except OverflowError:
            return _ieee(np.add, a, b)
        if type(r) is int and r.bit_length() > MAX_INT_BITS and too_long(r):
            raise _int_too_big(f"{brief_int(a)} + {brief_int(b)}")
        return r
    if ta is Box or tb is Box:
        if _may_be_tuples(a, ta, b, tb) and _recorded_tuple(a, b):     # joining a recorded tuple reads its elements
            return add(unpack(a), unpack(b), span)
        return record2("Add", a, b, span)
    if ta is tb and (ta is str or ta is tuple):
        if len(a) + len(b) > MAX_SEQUENCE:    # doubling a string in a loop would eat the memory
            raise error("limit", f"joining two {type_name(a)}s of lengths {len(a):,} and {len(b):,} makes "
                                 f"one longer than {MAX_SEQUENCE:,}")
        return a + b
    return _arith(np.add, "add", a, b)


def sub(a, b, span=None):
    """a - b."""
    ta, tb = type(a), type(b)
    if ta is Box and tb is Box and (r := record_floats("Sub", a, b, span, operator.sub)) is not None:
        return r
    if (ta is float or ta is int or ta is bool) and (tb is float or tb is int or tb is bool):
        try:
            r = a - b
        except OverflowError:
            return _ieee(np.subtract, a, b)
        if type(r) is int and r.bit_length() > MAX_INT_BITS and too_long(r):
            raise _int_too_big(f"{brief_int(a)} - {brief_int(b)}")
        return r
    if ta is Box or tb is Box:
        return record2("Sub", a, b, span)
    return _arith(np.subtract, "subtract", a, b)


def mul(a, b, span=None):
    """a * b; a constant number times a recorded value records ScalarMul."""
    ta, tb = type(a), type(b)
    if ta is Box:
        if tb is Box:
            if (r := record_floats("Mul", a, b, span, operator.mul)) is not None:
                return r
        elif tb is float and type(a.v) is float:
            return record_const("ScalarMul", a, b, span)
    elif tb is Box and ta is float and type(b.v) is float:
        return record_const("ScalarMul", b, a, span)
    if (ta is float or ta is int or ta is bool) and (tb is float or tb is int or tb is bool):
        if ta is int and tb is int and a.bit_length() + b.bit_length() > MAX_INT_BITS + 1:
            raise _int_too_big(f"{brief_int(a)} * {brief_int(b)}")
        try:
            r = a * b
        except OverflowError:
            return _ieee(np.multiply, a, b)
        if type(r) is int and r.bit_length() > MAX_INT_BITS and too_long(r):
            raise _int_too_big(f"{brief_int(a)} * {brief_int(b)}")
        return r
    if ta is Box or tb is Box:
        if _may_be_tuples(a, ta, b, tb) and _recorded_tuple(a, b):     # repeating a recorded tuple reads its elements
            return mul(unpack(a), unpack(b), span)
        if (ta is str or ta is tuple) and type(peek(b)) in (int, bool):     # a count jit stages: guarded
            return _repeat(a, raw(b))
        if (tb is str or tb is tuple) and type(peek(a)) in (int, bool):
            return _repeat(b, raw(a))
        if type(peek(a)) is str or type(peek(b)) is str:     # an f-string jit stages, times a float:
            return mul(raw(a), raw(b), span)                # the error names the operands in order
        if ta is float or ta is int:
            return record_const("ScalarMul", b, a, span)
        if tb is float or tb is int:
            return record_const("ScalarMul", a, b, span)
        return record2("Mul", a, b, span)
    if (ta is str or ta is tuple) and (tb is int or tb is bool):
        return _repeat(a, b)
    if (tb is str or tb is tuple) and (ta is int or ta is bool):
        return _repeat(b, a)
    return _arith(np.multiply, "multiply", a, b)


def _repeat(seq, n):
    """Repeat a string or tuple n times, refusing absurd sizes."""
    if len(seq) * max(n, 0) > MAX_SEQUENCE:
        raise error("limit", f"repeating {a_type_name(seq)} of length {len(seq):,} {brief_int(n)} times makes "
                             f"one longer than {MAX_SEQUENCE:,}")
    return seq * int(n) if seq and n > 0 else seq[:0]     # "" * 2 ** 70 is "", not an overflow


# ---------------------------------------------------------------- / // %
def div(a, b, span=None):
    """a / b: always true division; int / 0 is a value error, float / 0 is IEEE."""
    ta, tb = type(a), type(b)
    if (ta is float or ta is int) and (tb is float or tb is int):
        if b:
            try:
                return a / b
            except OverflowError:
                return _ieee(np.true_divide, a, b)
        return _div_by_zero(a, b, np.true_divide)
    if ta is Box or tb is Box:
        return record2("Div", a, b, span)
    if (ta is int or ta is bool) and (tb is int or tb is bool):
        return div(int(a), int(b))
    return _arith(np.true_divide, "divide", a, b)


def _div_by_zero(a, b, ufunc):
    """Division of two numbers by zero: an error for ints, IEEE for floats."""
    if type(a) is not float and type(b) is not float:
        raise error("value", "division by zero (of ints; divide floats to get inf or nan)")
    return _ieee(ufunc, a, b)


def floordiv(a, b, span=None):
    """a // b: floor division (not differentiable: its derivative is zero almost everywhere)."""
    if type(a) is Box or type(b) is Box:
        return nondiff("FloorDiv", (a, b), span=span)     # its line, should 7 // 0 fail in compiled code
    ta, tb = type(a), type(b)
    if (ta is float or ta is int or ta is bool) and (tb is float or tb is int or tb is bool):
        if not b:
            return _div_by_zero(a, b, np.floor_divide)
        if ta is float or tb is float:
            return _ieee(np.floor_divide, a, b)
        return a // b
    return _arith(np.floor_divide, "floor-divide", a, b)


def _mod_plain(a, b, span=None):
    """a % b without recording."""
    ta, tb = type(a), type(b)
    if (ta is float or ta is int or ta is bool) and (tb is float or tb is int or tb is bool):
        if not b:
            return _div_by_zero(a, b, np.mod)
        if ta is float or tb is float:
            return _ieee(np.mod, a, b)
        return a % b
    return _arith(np.mod, "take the remainder of", a, b)


def mod(a, b, span=None):
    """a % b, with Python's sign convention (the result has the sign of b)."""
    if type(a) is Box or type(b) is Box:
        return record2("Mod", a, b, span)
    return _mod_plain(a, b)


# ---------------------------------------------------------------- **
def pow(a, b, span=None):
    """a ** b; ints stay ints for non-negative int exponents."""
    ta, tb = type(a), type(b)
    if (ta is float or ta is int) and (tb is float or tb is int):
        return _pow_num(a, b)
    if ta is Box or tb is Box:
        return record2("Pow", a, b, span)
    if is_num(a) and is_num(b):
        return _pow_num(a, b)
    try:
        return _arith(np.power, "raise to a power", a, b)
    except ValueError as exc:      # numpy's, for an int tensor: no int result holds 2 ** -1
        if "negative integer powers" not in str(exc):
            raise
        raise error("value", "an int tensor cannot be raised to a negative int power (numpy's rule)",
                    hint='a float base gives fractions: astype(x, "float64") ** -1') from None


def _pow_num(a, b):
    """Power of two numbers with IEEE results where Python would raise or go complex."""
    if type(a) is not float and type(b) is not float:
        a, b = int(a), int(b)
        if b < 0:
            if a == 0:
                raise error("value", "0 cannot be raised to a negative power (of ints)")
            return _pow_num(to_float(a), b)
        if abs(a) > 1 and (b > MAX_INT_BITS or (b - 1) * math.log2(abs(a)) > MAX_INT_BITS + 1):
            raise _int_too_big(f"{brief_int(a)} ** {brief_int(b)}")
        return checked_int(a ** b, lambda: f"{brief_int(a)} ** {brief_int(b)}")
    try:
        r = a ** b
    except (OverflowError, ZeroDivisionError):
        return _ieee(np.power, a, b)
    if type(r) is complex:
        return float("nan")
    return r


# ---------------------------------------------------------------- unary
def neg(a, span=None):
    """-a."""
    t = type(a)
    if t is float or t is int:
        return -a
    if t is Box:
        return record1("Neg", a, span)
    if t is bool:
        return -int(a)
    if isinstance(a, np.floating):
        return -float(a)
    if t is ndarray:
        return norm(np.negative(as_operand(a, "negate")))
    raise error("type", f"cannot negate {a_type_name(a)}")


def pos(a, span=None):
    """+a: numbers and tensors only."""
    if not (_numeric(peek(a))):
        raise error("type", f"unary '+' needs a number or tensor, got {type_name(a)}")
    return a


# ---------------------------------------------------------------- @
def matmul(a, b, span=None):
    """a @ b for 1-D, 2-D and batched tensors, like numpy.matmul."""
    if type(a) is Box or type(b) is Box:
        return record2("MatMul", a, b, span)
    if type(a) is not ndarray or type(b) is not ndarray:
        raise error("type", f"@ needs two tensors, got {type_name(a)} and {type_name(b)}"
                            " (use * to multiply by a number)")
    if a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[0] and a.dtype == FLOAT and b.dtype == FLOAT:
        # the common case, without the general checks below (the product's size still is one)
        m, n = a.shape[0], b.shape[1]
        limit = max_elements()
        if limit is not None and max(m * n, m, n) > limit:
            check_size((m, n), "matmul result")
        return np.matmul(a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise error("shape", f"@ needs tensors with at least one axis, got shapes "
                             f"{fmt_shape(a.shape)} and {fmt_shape(b.shape)}")
    inner_a = a.shape[-1]
    inner_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if inner_a != inner_b:
        raise error("shape", f"cannot matmul tensors of shapes {fmt_shape(a.shape)} and "
                             f"{fmt_shape(b.shape)} (inner sizes {inner_a} and {inner_b} differ)")
    if a.ndim > 2 and b.ndim > 2:
        try:
            np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            raise error("shape", f"cannot matmul tensors of shapes {fmt_shape(a.shape)} and "
                                 f"{fmt_shape(b.shape)} (batch axes do not broadcast)") from None
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    check_size(batch + a.shape[-2:-1] + (b.shape[-1:] if b.ndim > 1 else ()), "matmul result")
    if a.dtype.kind == "b":
        a = a.astype(FLOAT)
    if b.dtype.kind == "b":
        b = b.astype(FLOAT)
    return matmul_kernel(a, b)


_OUTER_MIN = 1 << 16    # entries of an outer product from which a product beats numpy.matmul


def matmul_kernel(a, b):
    """numpy.matmul(a, b), with the same bits; a batch of outer products ((..., m, 1) @ (..., 1, n),
    as per-example gradients make) by a broadcast product, which numpy.matmul computes about 2x
    slower. One product per entry is matmul's own value, but for the sign of a zero: matmul adds
    it to 0.0, so + 0.0 does too."""
    if a.ndim >= 2 and b.ndim >= 2 and a.shape[-1] == 1 and b.shape[-2] == 1 and \
            a.shape[-2] * b.shape[-1] >= _OUTER_MIN and a.dtype == FLOAT and b.dtype == FLOAT:
        out = np.multiply(a, b)
        return np.add(out, 0.0, out=out)
    return norm(np.matmul(a, b))


BINARY = {"+": add, "-": sub, "*": mul, "/": div, "//": floordiv, "%": mod, "**": pow, "@": matmul}
