"""numpy's statistics over observations (cov, corrcoef), its sums and means that pass over NaN
(nansum, nanmean), its polynomials (polyval), and scipy's standard normal distribution (ndtr,
log_ndtr, ndtri), composed of dg's primitives: each differentiates, vmaps and jits as the
primitives it records do, on every backend."""

import math

import numpy as np

from ...core import ops
from ...core.ops.core import fmt_shape
from ...core.tape import peek, raw
from ...core.values import type_name
from ...errors import error
from .arrays import _axis, _numbers, _tensor_shape, flag
from .linalg import diagonal
from .tensors import degrees_of_freedom


# ---------------------------------------------------------------- covariance and correlation
def _variables(x, rowvar, who, name):
    """x as a matrix with one variable per row (numpy's cov reads a vector as one variable)."""
    shape = _tensor_shape(x, who)
    if len(shape) > 2:
        raise error("shape", f"{who}: {name} must be a vector or a matrix, got a tensor of shape {fmt_shape(shape)}")
    rowvar = flag(rowvar, f"{who}: rowvar")
    if len(shape) < 2:
        return ops.reshape(x, (1, shape[0] if shape else 1))
    return x if rowvar or shape[0] == 1 else ops.transpose(x)


def cov(x, y=None, rowvar=True, bias=False, ddof=None):
    """cov(x, y=none, rowvar=true, bias=false, ddof=none): the covariance matrix of the variables
    (numpy's cov; see docs.py)."""
    return _cov(x, y, rowvar, bias, ddof, "cov")


def _cov(x, y, rowvar, bias, ddof, who):
    """cov for the builtin `who` (corrcoef's errors name corrcoef)."""
    bias = flag(bias, f"{who}: bias")
    m = _variables(x, rowvar, who, "x")
    if raw(y) is not None:
        m2 = _variables(y, rowvar, who, "y")
        if np.shape(peek(m2))[1] != np.shape(peek(m))[1]:
            raise error("shape", f"{who}: x and y need as many observations, got {np.shape(peek(m))[1]} and "
                                 f"{np.shape(peek(m2))[1]}")
        m = ops.cat((m, m2), axis=0)
    if raw(ddof) is None:
        ddof = 0 if bias else 1
    elif type(raw(ddof)) is not int:
        raise error("type", f"{who}: ddof must be an int, got {type_name(raw(ddof))}")
    nvars, n = np.shape(peek(m))
    centred = ops.sub(m, ops.mean(m, 1, True))
    # numpy's: fewer observations than ddof + 1 divide by 0 (inf and nan, with a warning there)
    c = ops.div(ops.matmul(centred, ops.transpose(centred)), degrees_of_freedom(n, raw(ddof)))
    return ops.reshape(c, ()) if nvars == 1 else c


def corrcoef(x, y=None, rowvar=True):
    """corrcoef(x, y=none, rowvar=true): the correlation coefficients of the variables (numpy's)."""
    c = _cov(x, y, rowvar, False, None, "corrcoef")
    if np.ndim(peek(c)) == 0:
        return ops.div(c, c)
    sd = ops.sqrt(diagonal(c))
    n = np.shape(peek(sd))[0]
    r = ops.div(ops.div(c, ops.reshape(sd, (n, 1))), ops.reshape(sd, (1, n)))
    return ops.clamp(r, -1.0, 1.0)      # rounding's excursions past 1, as numpy and JAX clip them


# ---------------------------------------------------------------- sums and means past NaN
def _present(x, who):
    """x's entries with NaN taken as 0, and the mask of those that are not NaN."""
    x = _numbers(x, who)
    kept = ops.eq(x, x)
    return ops.keep_where(kept, x), kept


def nansum(x, axis=None, keepdims=False):
    """nansum(x, axis=none, keepdims=false): the sum of the entries that are not NaN (numpy's)."""
    kept, _ = _present(x, "nansum")
    return ops.sum_(kept, _axis(axis, np.ndim(peek(x)), "nansum", True), keepdims)


def nanmean(x, axis=None, keepdims=False):
    """nanmean(x, axis=none, keepdims=false): the mean of the entries that are not NaN (numpy's)."""
    kept, mask = _present(x, "nanmean")
    axes = _axis(axis, np.ndim(peek(x)), "nanmean", True)
    return ops.div(ops.sum_(kept, axes, keepdims), ops.sum_(ops.keep_where(mask, 1.0), axes, keepdims))


# ---------------------------------------------------------------- polynomials
def polyval(p, x):
    """polyval(p, x): the polynomial with coefficients p (highest power first) at x (numpy's)."""
    shape = _tensor_shape(p, "polyval")
    if len(shape) != 1:
        raise error("shape", f"polyval: p must be a vector of coefficients, got a tensor of shape {fmt_shape(shape)}")
    _numbers(x, "polyval")
    # numpy's Horner scheme from zeros_like(x), step for step (so an infinite x gives its NaN)
    y = np.zeros(np.shape(peek(x)))
    for i in range(shape[0]):
        y = ops.add(ops.mul(y, x), ops.index(p, (i,)))
    return y


# ---------------------------------------------------------------- the standard normal distribution
HALF_SQRT_2 = math.sqrt(0.5)
LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
# below it, ndtr(x) nears the smallest normal float and log_ndtr is its asymptotic series
SERIES_BELOW = -37.0


def ndtr(x):
    """ndtr(x): the standard normal CDF (scipy's ndtr), each tail through erfc (JAX's form)."""
    z = ops.mul(_numbers(x, "ndtr"), HALF_SQRT_2)
    w = ops.abs_(z)
    tails = ops.where(ops.order(">", z, 0.0), ops.sub(2.0, ops.erfc(z)), ops.erfc(w))
    return ops.mul(0.5, ops.where(ops.order("<", w, HALF_SQRT_2), ops.add(1.0, ops.erf(z)), tails))


def log_ndtr(x):
    """log_ndtr(x): ln of the standard normal CDF, without underflow in the lower tail (scipy's)."""
    x = _numbers(x, "log_ndtr")
    upper = ops.log1p(ops.neg(ndtr(ops.neg(x))))
    middle = ops.ln(ndtr(x))
    # -x^2 / 2 - ln(-x) - ln sqrt(2 pi) + ln(1 - 1/x^2 + 3/x^4 - 15/x^6 + ...), its terms to 1e-17
    low = ops.order("<", x, SERIES_BELOW)
    t = ops.where(low, x, SERIES_BELOW - 1.0)
    inv2 = ops.div(1.0, ops.mul(t, t))
    series, term = 1.0, 1.0
    for k in range(1, 8):
        term = ops.mul(term, ops.mul(inv2, float(1 - 2 * k)))
        series = ops.add(series, term)
    tail = ops.sub(ops.sub(ops.mul(-0.5, ops.mul(t, t)), ops.ln(ops.neg(t))), LOG_SQRT_2PI)
    # above 0 the CDF is 1 less the upper tail's small mass, which log1p keeps to the last digit
    return ops.where(ops.order(">", x, 0.0), upper, ops.where(low, ops.add(tail, ops.ln(series)), middle))


def ndtri(p):
    """ndtri(p): the standard normal quantile, the inverse of ndtr (scipy's), through erfcinv."""
    return ops.mul(-math.sqrt(2.0), ops.erfcinv(ops.mul(2.0, _numbers(p, "ndtri"))))


BUILTINS = {"ndtr": ndtr, "log_ndtr": log_ndtr, "ndtri": ndtri, "cov": cov, "corrcoef": corrcoef, "nansum": nansum, "nanmean": nanmean, "polyval": polyval}
