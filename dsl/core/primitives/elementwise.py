"""Elementwise primitives: exp, ln, sin, ..., the activations, maximum/minimum,
where, clamp and Nz (reference 6.7's zero rule as an operation of its own)."""

import math

from .. import ops as O
from ..ops.core import shape_of
from .arith import ELEMENTWISE
from .registry import define

LN2 = math.log(2.0)
LN10 = math.log(10.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
SQRT_HALF = math.sqrt(0.5)
HALF_SQRT_PI = 0.5 * math.sqrt(math.pi)


def unary(name, impl, partial, emit=None, piecewise=False):
    """An elementwise primitive of one argument, from its derivative d(ns, ans, x)."""
    return define(name, impl, partials=(partial,), batch=ELEMENTWISE, emit=emit, piecewise=piecewise, keeps_nan=True)


unary("Exp", O.exp, lambda ns, ans, x: ans, {"float": "K.exp({0})", "array": "np.exp({0})"})                   # exp(1000) = inf where g may be 0: nz
unary("Ln", O.ln, lambda ns, ans, x: ns.div(1.0, x), {"float": "K.ln({0})", "array": "np.log({0})"})
unary("Log2", O.log2, lambda ns, ans, x: ns.div(1.0, ns.mul(x, LN2)), {"float": "K.log2({0})", "array": "np.log2({0})"})
unary("Log10", O.log10, lambda ns, ans, x: ns.div(1.0, ns.mul(x, LN10)), {"float": "K.log10({0})", "array": "np.log10({0})"})
unary("Sin", O.sin, lambda ns, ans, x: ns.cos(x), {"float": "K.sin({0})", "array": "np.sin({0})"})
unary("Cos", O.cos, lambda ns, ans, x: ns.negate(ns.sin(x)), {"float": "K.cos({0})", "array": "np.cos({0})"})     # 0.0, not -0.0, at x = 0
unary("Sqrt", O.sqrt, lambda ns, ans, x: ns.div(0.5, ans), {"float": "K.sqrt({0})", "array": "np.sqrt({0})"})
unary("Abs", O.abs_, lambda ns, ans, x: ns.sign(x), {"float": "abs({0})", "array": "np.abs({0})"}, piecewise=True)          # abs'(0) = 0 (reference 6.6)
unary("Relu", O.relu, lambda ns, ans, x: ns.greater(x, 0.0), {"float": "(0.0 if {0} <= 0.0 else {0} + 0.0)", "array": "np.maximum({0}, 0.0)"}, piecewise=True)  # relu'(0) = 0; + 0.0: relu(true) is 1.0
unary("Sigmoid", O.sigmoid, lambda ns, ans, x: ns.mul(ans, ns.sub(1.0, ans)), {"float": "K.sigmoid({0})"})
unary("TanhAct", O.tanh, lambda ns, ans, x: ns.sub(1.0, ns.mul(ans, ans)), {"float": "K.tanh({0})", "array": "np.tanh({0})"})
unary("Log1p", O.log1p, lambda ns, ans, x: ns.div(1.0, ns.add(1.0, x)), {"float": "K.log1p({0})", "array": "np.log1p({0})"})
unary("Expm1", O.expm1, lambda ns, ans, x: ns.add(ans, 1.0), {"array": "np.expm1({0})"})
unary("Softplus", O.softplus, lambda ns, ans, x: ns.sigmoid(x), {"float": "K.softplus({0})", "array": "np.logaddexp(0.0, {0})"})
unary("Erf", O.erf, lambda ns, ans, x: ns.mul(TWO_OVER_SQRT_PI, ns.exp(ns.neg(ns.mul(x, x)))))
unary("Erfc", O.erfc, lambda ns, ans, x: ns.mul(-TWO_OVER_SQRT_PI, ns.exp(ns.neg(ns.mul(x, x)))))


def _silu(ns, ans, x):
    """d/dx x*s(x) = s * (1 + x * (1 - s))."""
    s = ns.sigmoid(x)
    return ns.mul(s, ns.add(1.0, ns.mul(x, ns.sub(1.0, s))))


def _gelu(ns, ans, x):
    """d/dx x*Phi(x) = Phi(x) + x * phi(x)."""
    cdf = ns.mul(0.5, ns.erfc(ns.mul(ns.neg(x), SQRT_HALF)))      # no cancellation for negative x
    pdf = ns.mul(INV_SQRT_2PI, ns.exp(ns.mul(-0.5, ns.mul(x, x))))
    return ns.add(cdf, ns.mul(x, pdf))


unary("Silu", O.silu, _silu)
unary("Gelu", O.gelu, _gelu)


def _inverse_sqrt(ns, s):
    """1 / sqrt(s)."""
    return ns.div(1.0, ns.sqrt(s))


def _one_minus_square(ns, x):
    """1 - x^2 as (1 - x)(1 + x): exact to rounding near x = +-1, where 1 - x * x keeps few digits
    (atanh'(0.999999999) was off in the 10th)."""
    return ns.mul(ns.sub(1.0, x), ns.add(1.0, x))


unary("Tan", O.tan, lambda ns, ans, x: ns.add(1.0, ns.mul(ans, ans)))
unary("Asin", O.asin, lambda ns, ans, x: _inverse_sqrt(ns, _one_minus_square(ns, x)))
unary("Acos", O.acos, lambda ns, ans, x: ns.neg(_inverse_sqrt(ns, _one_minus_square(ns, x))))
unary("Atan", O.atan, lambda ns, ans, x: ns.div(1.0, ns.add(1.0, ns.mul(x, x))))
unary("Sinh", O.sinh, lambda ns, ans, x: ns.cosh(x))
unary("Cosh", O.cosh, lambda ns, ans, x: ns.sinh(x))
unary("Asinh", O.asinh, lambda ns, ans, x: _inverse_sqrt(ns, ns.add(ns.mul(x, x), 1.0)))
unary("Acosh", O.acosh, lambda ns, ans, x: _inverse_sqrt(ns, ns.mul(ns.sub(x, 1.0), ns.add(x, 1.0))))
unary("Atanh", O.atanh, lambda ns, ans, x: ns.div(1.0, _one_minus_square(ns, x)))
unary("LogSigmoid", O.log_sigmoid, lambda ns, ans, x: ns.sigmoid(ns.neg(x)))        # 1 - sigmoid(x), stably
unary("Logit", O.logit, lambda ns, ans, x: ns.div(1.0, ns.mul(x, ns.sub(1.0, x))))



def _atan2_y(ns, ans, y, x):
    """d/dy atan2(y, x) = x / (x^2 + y^2)."""
    return ns.div(x, ns.add(ns.mul(x, x), ns.mul(y, y)))


def _atan2_x(ns, ans, y, x):
    """d/dx atan2(y, x) = -y / (x^2 + y^2)."""
    return ns.neg(ns.div(y, ns.add(ns.mul(x, x), ns.mul(y, y))))


define("Atan2", O.atan2, batch=ELEMENTWISE, partials=(_atan2_y, _atan2_x), keeps_nan=True)


def _over_hypot(ns, side, ans):
    """d hypot / d side = side / hypot; 0 at the origin, the cone's tip (as abs'(0) = 0)."""
    return ns.where(ns.equal(ans, 0.0), 0.0, ns.div(side, ans))


define("Hypot", O.hypot, batch=ELEMENTWISE, keeps_nan=True,
       partials=(lambda ns, ans, x, y: _over_hypot(ns, x, ans), lambda ns, ans, x, y: _over_hypot(ns, y, ans)))
# cbrt's derivative 1 / (3 cbrt(x)^2), infinite at 0 as JAX's
unary("Cbrt", O.cbrt, lambda ns, ans, x: ns.div(1.0, ns.mul(3.0, ns.mul(ans, ans))))
# scipy.special's: erfinv's derivative from its result; lgamma's is digamma, digamma's trigamma,
# trigamma's the polygamma function of order 2, whose derivative is the next order's: every order
unary("Erfinv", O.erfinv, lambda ns, ans, x: ns.mul(HALF_SQRT_PI, ns.exp(ns.mul(ans, ans))))
unary("Erfcinv", O.erfcinv, lambda ns, ans, x: ns.neg(ns.mul(HALF_SQRT_PI, ns.exp(ns.mul(ans, ans)))))
unary("Lgamma", O.lgamma, lambda ns, ans, x: O.digamma(x))
unary("Digamma", O.digamma, lambda ns, ans, x: O.trigamma(x))
unary("Trigamma", O.trigamma, lambda ns, ans, x: O.polygamma(2, x))
define("Polygamma", O.polygamma, batch=ELEMENTWISE, keeps_nan=True,
       partials=(None, lambda ns, ans, n, x: O.polygamma(n + 1, x)))      # n: the order, an int
# x ln(y), 0 where x is 0; its partials as JAX's (x / y is nan at x = y = 0 there too)
define("Xlogy", O.xlogy, batch=ELEMENTWISE, keeps_nan=True,
       partials=(lambda ns, ans, x, y: ns.ln(y), lambda ns, ans, x, y: ns.div(x, y)))
# d/da ln(e^a + e^b) = e^(a - ans): the softmax of the two, without overflow
define("LogAddExp", O.logaddexp, batch=ELEMENTWISE, keeps_nan=True,
       partials=(lambda ns, ans, a, b: ns.exp(ns.sub(a, ans)), lambda ns, ans, a, b: ns.exp(ns.sub(b, ans))))


# ---------------------------------------------------------------- maximum / minimum
def _tie_weights(ns, a, b, wins):
    """Share of the derivative a side of maximum/minimum gets: 1, 0, or 1/2 on ties (reference 6.6)."""
    return ns.add(ns.where(wins(a, b), 1.0, 0.0), ns.where(ns.equal(a, b), 0.5, 0.0))


define("Maximum", O.maximum, batch=ELEMENTWISE, piecewise=True, emit={"array": "np.maximum({0}, {1})"},
       partials=(lambda ns, ans, a, b: _tie_weights(ns, a, b, ns.greater),
                 lambda ns, ans, a, b: _tie_weights(ns, b, a, ns.greater)), keeps_nan=True)
define("Minimum", O.minimum, batch=ELEMENTWISE, piecewise=True, emit={"array": "np.minimum({0}, {1})"},
       partials=(lambda ns, ans, a, b: _tie_weights(ns, a, b, ns.less),
                 lambda ns, ans, a, b: _tie_weights(ns, b, a, ns.less)), keeps_nan=True)


# ---------------------------------------------------------------- where
def _where_jvp(ns, tangents, ans, args, kw):
    """The tangent of the branch taken, entry by entry."""
    c = args[0]
    ta, tb = tangents[1], tangents[2]
    if ta is None and tb is None:
        return None
    out = ns.where(c, 0.0 if ta is None else ta, 0.0 if tb is None else tb)
    return out if shape_of(out) == shape_of(ans) else ns.broadcast_to(out, shape_of(ans))


def _where_float(kinds):
    """where on numbers: the one chosen, a float unless both are bools (as O.where gives)."""
    if kinds[1] == kinds[2] and kinds[1] in ("bool", "float"):
        return "({1} if {0} else {2})"
    return "(float({1}) if {0} else float({2}))"


define("Where", O.where, batch=ELEMENTWISE,
       emit={"float": _where_float, "array": "np.where({0}, {1}, {2})", "bools": True},
       vjp=(None,
            lambda ns, g, ans, c, a, b: ns.unbroadcast(ns.where(c, g, 0.0), shape_of(a)),
            lambda ns, g, ans, c, a, b: ns.unbroadcast(ns.where(c, 0.0, g), shape_of(b))),
       jvp=_where_jvp)


# ---------------------------------------------------------------- clamp
def _clamp_taken(ns, x, lo, hi):
    """Which entries clamp(x, lo, hi) takes from x, lo and hi (x where lo <= x <= hi: ties go to x)."""
    # clamp is min(max(x, lo), hi), as numpy's clip: with lo > hi every entry is hi
    above = None if hi is None else ns.greater(x if lo is None else ns.where(ns.greater(lo, x), lo, x), hi)
    below = None if lo is None else ns.less(x, lo)
    if below is not None and above is not None:
        below = ns.logical_and(below, ns.logical_not(above))
    inside = ns.logical_not(below if above is None else above if below is None else ns.logical_or(below, above))
    return inside, below, above


def _clamp_vjp(ns, g, ans, args, kw, wanted):
    """g goes to x, lo or hi, wherever the result came from (the masks worked out once)."""
    taken = _clamp_taken(ns, *args)
    return [ns.unbroadcast(ns.cmul(g, m), shape_of(a)) if w else None      # the bounds may broadcast x up
            for m, a, w in zip(taken, args, wanted)]


def _clamp_jvp(ns, tangents, ans, args, kw):
    """The tangent of whichever of x, lo and hi each entry came from."""
    out = None
    for m, t in zip(_clamp_taken(ns, *args), tangents):
        if t is not None:
            term = ns.cmul(t, m)
            out = term if out is None else ns.add(out, term)
    if out is None:
        return None
    return out if shape_of(out) == shape_of(ans) else ns.broadcast_to(out, shape_of(ans))


define("Clamp", O.clamp, vjp_all=_clamp_vjp, jvp=_clamp_jvp, batch=ELEMENTWISE, keeps_nan=True)


# ---------------------------------------------------------------- reference 6.7 as an operation
# nz(a, b, r): the product r = a * b, but 0 where a or b is 0 and r is not finite. Recorded only when a
# rule runs on recorded values; its derivative passes through wherever r was kept.
def _kept(ns, ans, a, b, r):
    """Where nz kept r (everywhere but the non-finite products of a zero): one primitive, so that
    generated code tests it in one line."""
    return O.nz_kept(a, b, r)


define("NzKept", O.nz_kept, differentiable=False, batch=ELEMENTWISE,
       emit={"float": "(not (({0} == 0 or {1} == 0) and {2} - {2} != 0.0))",
             "array": "K.nz_kept_array({0}, {1}, {2})", "bools": True})
define("Nz", O.nz, batch=ELEMENTWISE, piecewise=True, partials=(None, None, _kept),
       emit={"float": "K.nz({0}, {1}, {2})", "array": "K.nz_array({0}, {1}, {2})", "bools": True}, keeps_nan=True)
