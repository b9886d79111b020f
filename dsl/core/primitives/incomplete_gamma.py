"""scipy's regularized incomplete gamma functions, P(a, x) = gammainc and Q = gammaincc = 1 - P.
Their partials in x are the gamma distribution's density x^(a-1) e^-x / Gamma(a) (negated for Q);
in a, the derivative the kernel computes beside the function (dual numbers through its series and
continued fraction, dsl/core/ops/incomplete_gamma.py), a primitive of its own, GammaincDa, whose
own partial in x is the density's derivative in a and whose partial in a is not computed: a second
derivative in a is a grad error, never a silent zero."""

from ...errors import error
from .. import ops as O
from .arith import ELEMENTWISE
from .registry import define


def _density(a, x):
    """x^(a-1) e^-x / Gamma(a), with 0^0 = 1 (xlogy): d gammainc(a, x) / dx."""
    return O.exp(O.sub(O.sub(O.xlogy(O.sub(a, 1.0), x), x), O.lgamma(a)))


def _density_da(a, x):
    """d/da of the density: the density times ln x - digamma(a), 0 where the density is."""
    d = _density(a, x)
    return O.sub(O.xlogy(d, x), O.mul(d, O.digamma(a)))


def _no_second_in_a(ns, ans, a, x):
    """GammaincDa's partial in a: not computed."""
    raise error("grad", "gammainc's and gammaincc's second derivative in a is not computed (the first is, "
                        "and every derivative in x)")


define("Gammainc", O.gammainc, batch=ELEMENTWISE, keeps_nan=True,
       partials=(lambda ns, ans, a, x: O.gammainc_da(a, x), lambda ns, ans, a, x: _density(a, x)))
define("Gammaincc", O.gammaincc, batch=ELEMENTWISE, keeps_nan=True,
       partials=(lambda ns, ans, a, x: O.neg(O.gammainc_da(a, x)), lambda ns, ans, a, x: O.neg(_density(a, x))))
define("GammaincDa", O.gammainc_da, batch=ELEMENTWISE, keeps_nan=True,
       partials=(_no_second_in_a, lambda ns, ans, a, x: _density_da(a, x)))
