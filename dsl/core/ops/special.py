"""Special functions numpy lacks (scipy.special's): erfinv, erfcinv, lgamma, digamma, trigamma, polygamma
and xlogy, vectorised, to double precision."""

import math

import numpy as np

from ..tape import record
from .core import Box, as_operand, error
from .dtypes import result_like
from .elementwise import _binary_elementwise, _unary

_erf = np.frompyfunc(math.erf, 1, 1)
_erfc = np.frompyfunc(math.erfc, 1, 1)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erfinv_vector(x):
    """The inverse of erf: Giles' single-precision approximation (2010), then steps that reach
    double precision: Halley's on erf (|x| <= 0.5), Newton's on ln erfc beyond (1 - |x| is exact)."""
    x = np.asarray(x, dtype=float)
    a = np.abs(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = _giles(-np.log((1.0 - a) * (1.0 + a)), a)
        inner = a <= 0.5
        for _ in range(4):
            fin = np.isfinite(y)
            ys = np.where(fin, y, 1.0)
            d = _TWO_OVER_SQRT_PI * np.exp(-ys * ys)
            # central: Halley on erf(y) = a; tails: Newton on ln erfc(y) = ln(1 - a), nearly linear
            # there (the approximation is a float32 one, a step or two away in the far tails)
            r = np.asarray(_erf(ys), dtype=float) - a
            c = np.asarray(_erfc(ys), dtype=float)
            tail = ys + (np.log(c) - np.log1p(-a)) * c / d
            y = np.where(fin & (d > 0), np.where(inner, ys - r / (d + ys * r), tail), y)
        y = np.where(a == 1.0, np.inf, np.where(a > 1.0, np.nan, y))
    return np.copysign(y, x)


def _erfcinv_vector(q):
    """The inverse of erfc, for q in [0, 2]: erfinv(1 - q) where 1 - q would round away the small
    q of a far tail (erfc(8) is 1e-29). Giles' approximation from q itself, then Newton's steps
    on ln erfc(y) = ln q (for q > 1, the mirror image of 2 - q)."""
    q = np.asarray(q, dtype=float)
    s = np.where(q > 1.0, 2.0 - q, q)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        w = -np.log(s * (2.0 - s))
        # past float32's range, where Giles' polynomial does not reach, erfc(y) ~ exp(-y^2) / (y sqrt(pi))
        t = -np.log(np.where(w > 30.0, s, 1e-14))
        y = np.where(w > 30.0, np.sqrt(t - 0.5 * np.log(np.pi * t)), _giles(np.minimum(w, 30.0), 1.0 - s))
        for _ in range(4):
            c = np.asarray(_erfc(np.where(np.isfinite(y), y, 0.0)), dtype=float)
            d = _TWO_OVER_SQRT_PI * np.exp(-y * y)
            step = np.isfinite(y) & (c > 0) & (d > 0)
            y = np.where(step, y + (np.log(c) - np.log(s)) * c / np.where(step, d, 1.0), y)
        y = np.where(s == 0.0, np.inf, y)
        y = np.where(q > 1.0, -y, y)
    return np.where((q >= 0.0) & (q <= 2.0), y, np.nan)


def _giles(w, a):
    """Giles' single-precision erfinv(a) for a in [0, 1], from w = -ln((1 - a)(1 + a)): the start
    of the refinements above."""
    central = w < 5.0
    t = np.where(central, w - 2.5, np.sqrt(np.where(central, 5.0, w)) - 3.0)
    p = np.where(central, 2.81022636e-08, -0.000200214257)
    for c_in, c_out in ((3.43273939e-07, 0.000100950558), (-3.5233877e-06, 0.00134934322),
                        (-4.39150654e-06, -0.00367342844), (0.00021858087, 0.00573950773),
                        (-0.00125372503, -0.0076224613), (-0.00417768164, 0.00943887047),
                        (0.246640727, 1.00167406), (1.50140941, 2.83297682)):
        p = np.where(central, c_in, c_out) + p * t
    return p * a


def _lgamma_one(x):
    """ln |Gamma(x)| of one float: inf at the poles (0, -1, -2, ...)."""
    try:
        return math.lgamma(x)
    except (ValueError, OverflowError):     # a pole, or past the largest float
        return math.inf


_lgamma_vec = np.frompyfunc(_lgamma_one, 1, 1)


def _lgamma_vector(x):
    """ln |Gamma(x)| over an array."""
    return np.asarray(_lgamma_vec(np.asarray(x, dtype=float)), dtype=float)


def _poles(x):
    """Where digamma and its derivatives have poles: 0, -1, -2, ..."""
    return (x <= 0) & (x == np.floor(x))


def _shifted(z, power, until=10):
    """z moved up to at least `until` (z >= 0) by the recurrence, and the sum of 1 / z^power over the
    steps (what psi, or psi', loses on the way: psi(z) = psi(z + 1) - 1 / z, psi'(z) = psi'(z + 1)
    + 1 / z^2; psi^(n)'s sum is of 1 / z^(n+1))."""
    shift = np.zeros(z.shape)
    for _ in range(until):
        low = z < until
        shift = np.where(low, shift + 1.0 / z ** power, shift)
        z = np.where(low, z + 1.0, z)
    return z, shift


def _digamma_vector(x):
    """psi(x) = d ln Gamma(x) / dx: the reflection formula below 1/2, the recurrence up to 10,
    then the asymptotic series (its first omitted term below 1e-13 there)."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        reflect = x < 0.5
        z, shift = _shifted(np.where(reflect, 1.0 - x, x), 1)
        i2 = 1.0 / (z * z)
        series = i2 * (1.0 / 12 - i2 * (1.0 / 120 - i2 * (1.0 / 252 - i2 * (1.0 / 240 - i2 * (1.0 / 132
                                                                                   - i2 * 691.0 / 32760)))))
        psi = np.log(z) - 0.5 / z - series - shift
        psi = np.where(reflect, psi - np.pi / np.tan(np.pi * x), psi)
    return np.where(_poles(x), np.nan, psi)


def _trigamma_vector(x):
    """psi'(x): the reflection formula below 1/2, the recurrence up to 10, then the asymptotic
    series."""
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        reflect = x < 0.5
        z, shift = _shifted(np.where(reflect, 1.0 - x, x), 2)
        i1, i2 = 1.0 / z, 1.0 / (z * z)
        series = i1 + 0.5 * i2 + i1 * i2 * (1.0 / 6 - i2 * (1.0 / 30 - i2 * (1.0 / 42 - i2 * (1.0 / 30
                                                                                     - i2 * 5.0 / 66))))
        psi1 = series + shift
        psi1 = np.where(reflect, (np.pi / np.sin(np.pi * x)) ** 2 - psi1, psi1)
    return np.where(_poles(x), np.inf, psi1)


def _cot_derivative(n):
    """The coefficients (lowest power first) of the polynomial P with d^n/dx^n cot(x) = P(cot(x)):
    cot' = -(1 + cot^2), so P_{n+1}(y) = -(1 + y^2) P_n'(y)."""
    p = np.array([0.0, 1.0])
    for _ in range(n):
        p = -np.polynomial.polynomial.polymul([1.0, 0.0, 1.0], np.polynomial.polynomial.polyder(p))
    return p


def _polygamma_vector(n, x):
    """psi^(n)(x), n >= 1: (-1)^(n+1) n! sum_k 1 / (x + k)^(n+1). The reflection formula below 1/2
    (psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) P_n(cot(pi x))), the recurrence up to 15, then
    the asymptotic series (its first omitted term below 1e-16 of the sum there for n <= 12)."""
    n = int(n)
    x = np.asarray(x, dtype=float)
    sign, fact = (-1.0) ** (n + 1), math.factorial(n)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        reflect = x < 0.5
        z, shift = _shifted(np.where(reflect, 1.0 - x, x), n + 1, 15)
        # sum_k B_2k (2k + n - 1)! / ((2k)! z^(2k + n)), Bernoulli numbers B_2 .. B_20
        bern = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798, -174611 / 330)
        series = math.factorial(n - 1) / z ** n + fact / (2.0 * z ** (n + 1))
        for k, b in enumerate(bern, 1):
            series = series + b * math.factorial(2 * k + n - 1) / math.factorial(2 * k) / z ** (2 * k + n)
        psi = sign * (series + fact * shift)
        cot = 1.0 / np.tan(np.pi * (x - np.round(x)))     # cot has period 1: x - round(x) is exact
        psi = np.where(reflect, (-1.0) ** n * psi - np.pi ** (n + 1) * np.polynomial.polynomial.polyval(cot, _cot_derivative(n)),
                       psi)
    pole = np.inf if n % 2 else np.nan      # even orders change sign across a pole
    return np.where(_poles(x), pole, psi)


def polygamma(n, x):
    """psi^(n)(x) for an int n >= 1, elementwise (records Polygamma where x is a box)."""
    if type(n) is not int or not 1 <= n <= 100:
        raise error("value", f"polygamma's order must be an int from 1 to 100, got {n!r}")
    if type(x) is Box:
        return record("Polygamma", (n, x), None, None)
    if type(x) in (float, int, bool) or isinstance(x, np.generic):
        return float(_polygamma_vector(n, float(x)))
    return result_like(_polygamma_vector(n, as_operand(x, "polygamma")), x)


def _scalar(vector):
    """A vector implementation used on one float."""
    return lambda x: float(vector(np.asarray(float(x))))


def _xlogy(x, y):
    """x * ln(y), 0 where x is 0 (whatever y is), as scipy's and JAX's."""
    with np.errstate(divide="ignore", invalid="ignore"):
        # [()]: a number of numbers, as a ufunc gives
        return np.where(x == 0, 0.0, x * np.log(y))[()]


erfinv = _unary("Erfinv", "erfinv", _scalar(_erfinv_vector), _erfinv_vector)
erfcinv = _unary("Erfcinv", "erfcinv", _scalar(_erfcinv_vector), _erfcinv_vector)
lgamma = _unary("Lgamma", "lgamma", _lgamma_one, _lgamma_vector)
digamma = _unary("Digamma", "digamma", _scalar(_digamma_vector), _digamma_vector)
trigamma = _unary("Trigamma", "trigamma", _scalar(_trigamma_vector), _trigamma_vector)
xlogy = _binary_elementwise("Xlogy", "xlogy", _xlogy)
