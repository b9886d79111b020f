"""The arithmetic primitives: Add Sub Mul ScalarMul Div Neg Mod Pow (MatMul: matmul.py)."""

from .. import ops as O
from ..tape import Box
from .batching import ELEMENTWISE     # batch: by the generic elementwise rule
from .mechanism import MINUS_ONE, ONE
from .registry import define


# ---------------------------------------------------------------- + - * / and unary minus
define("Add", O.add, partials=(ONE, ONE), linear=True, batch=ELEMENTWISE, emit="({0} + {1})", keeps_nan=True)
define("Sub", O.sub, partials=(ONE, MINUS_ONE), linear=True, batch=ELEMENTWISE, emit="({0} - {1})", keeps_nan=True)
define("Neg", O.neg, partials=(MINUS_ONE,), linear=True, batch=ELEMENTWISE, emit="(-{0})", keeps_nan=True)
define("Mul", O.mul, partials=(lambda ns, ans, x, y: y, lambda ns, ans, x, y: x), batch=ELEMENTWISE,
       emit="({0} * {1})", keeps_nan=True)
# a recorded value times a constant number c (c is never differentiated)
define("ScalarMul", O.mul, partials=(lambda ns, ans, x, c: c, None), batch=ELEMENTWISE, emit="({0} * {1})",
       keeps_nan=True)
define("Div", O.div, emit={"float": "K.div({0}, {1})", "array": "({0} / {1})"}, partials=(lambda ns, ans, x, y: ns.div(1.0, y),
                               lambda ns, ans, x, y: ns.neg(ns.div(ans, y))), batch=ELEMENTWISE, keeps_nan=True)
define("Mod", O.mod, partials=(ONE, lambda ns, ans, x, y: ns.neg(ns.floor(ns.div(x, y)))), batch=ELEMENTWISE,
       can_fail=True)


# ---------------------------------------------------------------- **
def _pow_base(ns, ans, x, y):
    """d/dx x**y = y * x**(y-1)."""
    if type(y) is not Box and type(y) in (int, float) and y == 2:
        # a constant 2 only: an exponent differentiated at an outer level needs y * x**(y-1) itself
        return ns.mul(x, 2.0)
    expo = ns.sub(y, 1.0)
    # x**0 is constant: its derivative at x = 0 is 0, not 0 * 0**-1 = nan. Only there is the
    # exponent replaced (x**1 times y = 0 is 0 too); elsewhere y * x**(y-1) keeps its dependence on y
    zero = ns.logical_and(ns.equal(x, 0.0), ns.equal(y, 0.0))
    if ns.any(zero):
        expo = ns.where(zero, 1.0, expo)
    return ns.mul(y, ns.pow(x, expo))


def _pow_exponent(ns, ans, x, y):
    """d/dy x**y = x**y * ln(x), taken as 0 where x == 0 (reference 6.6)."""
    at_zero = ns.equal(x, 0.0)
    safe_x = ns.where(at_zero, 1.0, x) if ns.any(at_zero) else x
    return ns.mul(ans, ns.ln(safe_x))


define("Pow", O.pow, partials=(_pow_base, _pow_exponent), batch=ELEMENTWISE,
       emit={"float": "K.pow({0}, {1})", "array": "np.power({0}, {1})"}, keeps_nan=True)
