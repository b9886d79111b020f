"""The small functions generated code calls where no Python operator or numpy function
computes what dg computes: floats in give floats out, IEEE results (inf, nan) where
Python's math module raises, reference 6.7's zero rule (`nz`)."""

import math
import operator

import numpy as np

from ..core.ops.arith import matmul_kernel as matmul  # noqa: F401  (MatMul's, for a batch of outer products)
from ..core.ops.elementwise import nz_kept
from ..core.ops.finite import all_finite
from ..core.ops.reduce import float_mean as mean  # noqa: F401  (the Mean template's)

INF = math.inf
NAN = math.nan


def exp(x):
    """exp of a float (inf on overflow)."""
    try:
        return math.exp(x)
    except OverflowError:
        return INF


def ln(x):
    """ln of a float (-inf at 0, nan below)."""
    if x > 0.0:
        return math.log(x)
    return -INF if x == 0.0 else NAN


def softplus(x):
    """ln(1 + exp(x)) of a float, without overflow."""
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


def log2(x):
    """log2 of a float."""
    if x > 0.0:
        return math.log2(x)
    return -INF if x == 0.0 else NAN


def log10(x):
    """log10 of a float."""
    if x > 0.0:
        return math.log10(x)
    return -INF if x == 0.0 else NAN


def log1p(x):
    """log(1 + x) of a float (-inf at -1, nan below)."""
    if x > -1.0:
        return math.log1p(x)
    return -INF if x == -1.0 else NAN


def sqrt(x):
    """sqrt of a float (nan below 0)."""
    return math.sqrt(x) if x >= 0.0 else NAN


def sin(x):
    """sin of a float (nan at infinity)."""
    return math.sin(x) if x - x == 0.0 else NAN


def cos(x):
    """cos of a float (nan at infinity)."""
    return math.cos(x) if x - x == 0.0 else NAN


tanh = math.tanh     # never raises


def sigmoid(x):
    """A sigmoid of a float that neither overflows nor loses precision."""
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = exp(x)
    return e / (1.0 + e)


def div(a, b):
    """a / b of numbers, IEEE for a zero divisor."""
    if b:
        return a / b
    return float(np.true_divide(np.float64(a), np.float64(b)))


def pow(a, b):
    """a ** b of numbers, nan where Python would give a complex number, inf on overflow."""
    try:
        r = a ** b
    except OverflowError:
        return float(np.power(np.float64(a), np.float64(b)))
    except ZeroDivisionError:
        return float(np.power(np.float64(a), np.float64(b)))
    return r if type(r) is not complex else NAN


def nz(a, b, r):
    """r = a * b of floats, but 0 where a or b is 0 and r is not finite (reference 6.7)."""
    if r - r != 0.0 and (a == 0.0 or b == 0.0):
        return 0.0
    return r


def nz_array(a, b, r):
    """nz where an argument is a tensor (r too, unless a or b is a 0-d one: their product is a number)."""
    if type(r) is not np.ndarray:
        return nz(a, b, r)
    if r.size == 0 or all_finite(r):
        return r
    zero = np.logical_or(np.equal(a, 0), np.equal(b, 0))
    return np.where(zero & ~np.isfinite(r), 0.0, r) if np.any(zero) else r


def nz_kept_array(a, b, r):
    """nz_kept where an argument is a tensor: all true (the common case) when r is finite."""
    if type(r) is not np.ndarray:       # a number times a 0-d tensor is a number
        return nz_kept(a, b, r)
    if r.size == 0 or all_finite(r):
        shape = r.shape     # r = a * b: a and b broadcast to it (np.broadcast_shapes takes 2 us)
        if np.shape(a) != shape and np.ndim(a) or np.shape(b) != shape and np.ndim(b):
            shape = np.broadcast_shapes(np.shape(a), np.shape(b), shape)
        return np.ones(shape, bool)
    return nz_kept(a, b, r)


def sum_all(x):
    """The sum of every entry of a tensor, as a float."""
    return float(np.add.reduce(x.reshape(-1)))


def where(c, a, b):
    """where with array operands."""
    return np.where(c, a, b)


# Python's own functions, equal to the kernels above wherever they return: where a kernel returns
# inf or nan for a float, they raise one of RAISED instead (as numpy's x[i] does where dg reports
# an index out of range). A program without effects calls these and, when one raises, is run again
# exactly (codegen.run_code): a call through a Python function costs as much as the sine itself.
RAISING = {"sin": math.sin, "cos": math.cos, "sqrt": math.sqrt, "exp": math.exp,
           "ln": math.log, "log2": math.log2, "log10": math.log10, "log1p": math.log1p, "div": operator.truediv}
RAISED = (ValueError, OverflowError, ZeroDivisionError, IndexError)    # IndexError: a Row out of range
