"""Elementwise primitives: exp, ln, sin, ..., activations, maximum/minimum, where, clamp."""

import math

import numpy as np

from .. import tape
from ..tape import nondiff, record, record1
from .core import (Box, FLOAT, as_operand, as_operands, check_broadcast, check_size, container_hint, error,
                   fmt_shape, ndarray, norm, to_float, type_name)
from .dtypes import result_like
from .finite import all_finite, finite

SQRT_TWO = math.sqrt(2.0)
SQRT_HALF = math.sqrt(0.5)


def _unary(op, name, scalar, vector):
    """Make a unary primitive from a scalar (math) and a vector (numpy) implementation."""

    def prim(x, span=None):
        t = type(x)
        if t is float or t is int:
            try:
                return scalar(x)
            except (OverflowError, ValueError, TypeError):     # (TypeError: numpy's ufunc of an int past int64)
                return float(vector(np.asarray(to_float(x))))
        if t is Box:
            return record1(op, x, span)
        if t is ndarray:
            return result_like(vector(as_operand(x, name)), x)
        if t is bool or isinstance(x, np.generic):
            return prim(float(x))
        raise error("type", f"{name} needs a number or tensor, got {type_name(x)}", hint=container_hint(x))

    prim.__name__ = name
    prim.__doc__ = f"{name}(x), elementwise (records {op})."
    return prim


def _sigmoid_scalar(x):
    """A sigmoid that neither overflows nor loses precision for large |x|."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _sigmoid_vector(x):
    """Vectorised stable sigmoid."""
    e = np.exp(-np.abs(x))
    d = 1.0 + e
    return np.where(x >= 0, 1.0 / d, e / d)


def _cbrt_vector(x):
    """np.cbrt polished by one Newton step: the C library's cube root differs from machine to
    machine (math.cbrt and np.cbrt give 3.0000000000000004 for 27.0 on some, up to 2 ulps off);
    the step makes exact cubes exact and every result within 1 ulp (zeros, infinities and NaN
    as they are)."""
    r = np.cbrt(x)
    r2 = r * r
    polished = r - (r2 * r - x) / (3.0 * r2)
    return np.where(np.isfinite(polished) & (r != 0.0), polished, r)


_erf_vec = np.frompyfunc(math.erf, 1, 1)
_erfc_vec = np.frompyfunc(math.erfc, 1, 1)


def _erf_vector(x):
    """erf over a tensor (numpy has none; math.erf is exact to the last bit)."""
    return _erf_vec(x).astype(FLOAT) if x.ndim else FLOAT(math.erf(float(x)))


def _erfc_vector(x):
    """erfc over a tensor: 1 - erf(x) without the cancellation (erfc(10) is 2e-45, not 0)."""
    return _erfc_vec(x).astype(FLOAT) if x.ndim else FLOAT(math.erfc(float(x)))


def _gelu_scalar(x):
    """Exact GELU: x * Phi(x), Phi(x) = (1 + erf(x / sqrt(2))) / 2 as SPEC and a math.erf check write
    it, below -1 erfc(-x / sqrt(2)) / 2 as JAX writes it: there 1 + erf cancels (gelu(-5) was off in
    the 11th digit, gelu(-10) 0 for -7.6e-23)."""
    return 0.5 * x * (math.erfc(-x * SQRT_HALF) if x < -1.0 else 1.0 + math.erf(x / SQRT_TWO))


def _gelu_vector(x):
    """Exact GELU over a tensor (the two forms as _gelu_scalar picks them)."""
    twice_cdf = np.asarray(1.0 + _erf_vector(x / SQRT_TWO))
    tail = x < -1.0
    if np.any(tail):        # erfc of the tail's entries only (math.erfc entry by entry is the cost)
        twice_cdf[tail] = _erfc_vector(-x[tail] * SQRT_HALF)
    return 0.5 * x * twice_cdf


def _softplus_scalar(x):
    """ln(1 + exp(x)) without overflow for large x or loss of precision for very negative x."""
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


def _softplus_vector(x):
    """Vectorised stable softplus."""
    return np.logaddexp(0.0, x)


def _silu_scalar(x):
    """x * sigmoid(x)."""
    return x * _sigmoid_scalar(x)


exp = _unary("Exp", "exp", math.exp, np.exp)
ln = _unary("Ln", "ln", math.log, np.log)
log2 = _unary("Log2", "log2", math.log2, np.log2)
log10 = _unary("Log10", "log10", math.log10, np.log10)
sin = _unary("Sin", "sin", math.sin, np.sin)
cos = _unary("Cos", "cos", math.cos, np.cos)
sqrt = _unary("Sqrt", "sqrt", math.sqrt, np.sqrt)
abs_ = _unary("Abs", "abs", lambda x: float(abs(x)) if type(x) is float else abs(x), np.abs)
tanh = _unary("TanhAct", "tanh", math.tanh, np.tanh)
sigmoid = _unary("Sigmoid", "sigmoid", _sigmoid_scalar, _sigmoid_vector)
relu = _unary("Relu", "relu", lambda x: 0.0 if x <= 0 else float(x), lambda x: np.maximum(x, 0.0))   # nan stays nan
silu = _unary("Silu", "silu", _silu_scalar, lambda x: x * _sigmoid_vector(x))
gelu = _unary("Gelu", "gelu", _gelu_scalar, _gelu_vector)
erf = _unary("Erf", "erf", math.erf, _erf_vector)
erfc = _unary("Erfc", "erfc", math.erfc, _erfc_vector)
cbrt = _unary("Cbrt", "cbrt", lambda x: float(_cbrt_vector(x)), _cbrt_vector)
log1p = _unary("Log1p", "log1p", math.log1p, np.log1p)
expm1 = _unary("Expm1", "expm1", math.expm1, np.expm1)
softplus = _unary("Softplus", "softplus", _softplus_scalar, _softplus_vector)
# numpy's: a value outside a function's domain is nan (math raises there, and _unary asks numpy)
tan = _unary("Tan", "tan", math.tan, np.tan)
asin = _unary("Asin", "asin", math.asin, np.arcsin)
acos = _unary("Acos", "acos", math.acos, np.arccos)
atan = _unary("Atan", "atan", math.atan, np.arctan)
sinh = _unary("Sinh", "sinh", math.sinh, np.sinh)
cosh = _unary("Cosh", "cosh", math.cosh, np.cosh)
asinh = _unary("Asinh", "asinh", math.asinh, np.arcsinh)
acosh = _unary("Acosh", "acosh", math.acosh, np.arccosh)
atanh = _unary("Atanh", "atanh", math.atanh, np.arctanh)
log_sigmoid = _unary("LogSigmoid", "log_sigmoid", lambda x: -_softplus_scalar(-x), lambda x: -np.logaddexp(0.0, -x))
logit = _unary("Logit", "logit", lambda x: math.log(x) - math.log1p(-x), lambda x: np.log(x) - np.log1p(-x))


def _constant(op, name, vector, scalar):
    """A function whose derivative is zero wherever it has one (floor, sign): not recorded on
    gradient tapes, so its value is a constant there, as in JAX."""

    def prim(x, span=None):
        t = type(x)
        if t is Box:
            return nondiff(op, (x,))
        if t is float or t is int or t is bool or isinstance(x, np.generic):
            return scalar(to_float(x))
        if t is ndarray:
            return vector(as_operand(x, name))
        raise error("type", f"{name} needs a number or tensor, got {type_name(x)}", hint=container_hint(x))

    prim.__name__ = name
    return prim


sign = _constant("Sign", "sign", np.sign, lambda v: float(np.sign(v)))
floor = _constant("Floor", "floor", np.floor, lambda v: float(np.floor(v)))
ceil = _constant("Ceil", "ceil", np.ceil, lambda v: float(np.ceil(v)))
round_ = _constant("Round", "round", np.round, lambda v: float(np.round(v)))    # half to even, as numpy


def nz(a, b, r, span=None):
    """r = a * b, but 0 wherever a or b is 0 and r is not finite: a derivative times a zero is zero
    (reference 6.7: a zero cotangent times an infinite local derivative, and in forward mode an
    infinite tangent times a zero derivative)."""
    if type(a) is Box or type(b) is Box or type(r) is Box:
        if finite(tape.peek(r)) and not (tape.staged(a) or tape.staged(b) or tape.staged(r)):
            # nz is r wherever r is finite, with derivative 1 in r: returning r is exact at this point
            # (to every order), and saves a node per rule at second order. A staged program is run
            # again on other values, so there the node is recorded
            return r
        return record("Nz", (a, b, r), None, span)
    if type(r) is ndarray:
        if all_finite(r):
            return r
        zero = np.logical_or(np.equal(a, 0), np.equal(b, 0))
        return np.where(zero & ~np.isfinite(r), 0.0, r) if np.any(zero) else r
    if type(r) is float and not math.isfinite(r) and (np.all(np.equal(a, 0)) or np.all(np.equal(b, 0))):
        return 0.0
    return r


def nz_kept(a, b, r):
    """Where nz(a, b, r) keeps r: everywhere but where r is not finite and a or b is 0 (a mask;
    a bool for numbers). It is the partial derivative of nz in r, so it is recorded only where
    nz is (a staged program), as comparisons are."""
    if type(a) is Box or type(b) is Box or type(r) is Box:
        return nondiff("NzKept", (a, b, r))
    if type(a) is not ndarray and type(b) is not ndarray and type(r) is not ndarray:
        return not ((a == 0 or b == 0) and not math.isfinite(r))
    return norm(np.logical_not(np.logical_and(np.logical_or(np.equal(a, 0), np.equal(b, 0)), ~np.isfinite(r))))


# ---------------------------------------------------------------- binary
def _binary_elementwise(op, name, ufunc, computes=True):
    """Make a broadcasting binary primitive such as maximum(a, b); `computes`: its result is a float
    whatever its operands (numpy's arctan2 of two bools is a float16: dg's bools count as 0.0 and
    1.0, as a bool tensor's entries do)."""

    def prim(a, b, span=None):
        if type(a) is Box or type(b) is Box:
            return record(op, (a, b), None, span)
        x, y = as_operands(a, b, f"take the {name} of")
        check_broadcast(x, y, f"take the {name} of")
        if computes and type(x) is bool and type(y) is bool:
            x = float(x)
        return norm(ufunc(x, y))

    prim.__name__ = name
    prim.__doc__ = f"{name}(a, b), elementwise with broadcasting (records {op})."
    return prim


maximum = _binary_elementwise("Maximum", "maximum", np.maximum, computes=False)
minimum = _binary_elementwise("Minimum", "minimum", np.minimum, computes=False)
atan2 = _binary_elementwise("Atan2", "atan2", np.arctan2)
hypot = _binary_elementwise("Hypot", "hypot", np.hypot)
logaddexp = _binary_elementwise("LogAddExp", "logaddexp", np.logaddexp)


def _bools(v):
    """Whether a where operand is a bool or a bool tensor."""
    return type(v) is bool or (type(v) is ndarray and v.dtype.kind == "b")


def where(c, a, b, span=None):
    """where(c, a, b): a where c is true, else b (c is not differentiated)."""
    if type(a) is Box or type(b) is Box or type(c) is Box:
        c = tape.strip_unstaged(c)      # the condition is not differentiated, but jit and vmap stage it
        return record("Where", (c, a, b), None, span)
    if type(c) is not ndarray and type(c) not in (bool, int, float) and not isinstance(c, np.generic):
        raise error("type", f"where needs a condition tensor or bool, got {type_name(c)}")
    if _bools(a) and _bools(b):     # choosing between masks gives a mask, as in numpy
        x, y = a, b
    else:
        x, y = as_operands(a, b, "select")
    cond = c if type(c) is not ndarray or c.dtype.kind == "b" else c != 0
    shapes = [np.shape(cond), np.shape(x), np.shape(y)]
    try:
        out = np.broadcast_shapes(*shapes)
    except ValueError:
        raise error("shape", "where needs shapes that broadcast together, got "
                             + ", ".join(fmt_shape(s) for s in shapes)) from None
    check_size(out, "result of where")
    r = np.where(cond, x, y)
    if r.dtype.kind in "iu" and not any(type(v) is ndarray and v.dtype.kind in "iu" for v in (x, y)):
        r = r.astype(FLOAT)     # where(c, 1, 0): floats, not numpy ints (an int tensor keeps its ints)
    if r.ndim == 0 and type(cond) is not ndarray and type(x) is not ndarray and type(y) is not ndarray:
        return r.item()         # numbers in, a number out, as every elementwise operation on numbers
    return r


def keep_where(mask, x):
    """x where the constant mask is true, else 0 in x's type (false for a mask): an entry left out
    is not read, where a product with the mask would read an inf or NaN there (0 * inf is nan)."""
    return where(mask, x, False if np.result_type(tape.peek(x)) == bool else 0)


def clamp(x, lo=None, hi=None, span=None):
    """clamp(x, lo, hi): x limited to [lo, hi]; either bound may be none."""
    if type(x) is Box or type(lo) is Box or type(hi) is Box:    # the bounds are differentiable too
        return record("Clamp", (x, lo, hi), None, span)
    lo, hi = (None if b is None else as_operand(b, "clamp to") for b in (lo, hi))
    v = as_operand(x, "clamp")
    shapes = [np.shape(b) for b in (v, lo, hi) if b is not None]
    try:
        check_size(np.broadcast_shapes(*shapes), "result of clamp")
    except ValueError:
        raise error("shape", "clamp needs x, lo and hi of shapes that broadcast together, got "
                             + ", ".join(fmt_shape(sh) for sh in shapes)) from None
    if type(v) is not ndarray and type(lo) is not ndarray and type(hi) is not ndarray:
        r = float(v)
        # as np.clip: a NaN bound gives NaN (a comparison with it is false, which kept x)
        if lo is not None and (r < lo or lo != lo):
            r = float(lo)
        if hi is not None and (r > hi or hi != hi):
            r = float(hi)
        return r
    return norm(np.clip(v, lo, hi))
