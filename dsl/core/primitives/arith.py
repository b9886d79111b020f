"""The arithmetic primitives: Add Sub Mul ScalarMul Div Neg Mod Pow MatMul."""

import numpy as np

from .. import ops as O
from ..ops.core import shape_of
from ..tape import Box, peek
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


# ---------------------------------------------------------------- @
def _matmul_parts(ns, g, a, b):
    """Promote 1-D operands to matrices as numpy.matmul does; return (g2, a2, b2)."""
    sa, sb = shape_of(a), shape_of(b)
    a2 = ns.reshape(a, (1, sa[0])) if len(sa) == 1 else a
    b2 = ns.reshape(b, (sb[0], 1)) if len(sb) == 1 else b
    s2a, s2b = shape_of(a2), shape_of(b2)
    gshape = np.broadcast_shapes(s2a[:-2], s2b[:-2]) + (s2a[-2], s2b[-1])
    g2 = ns.reshape(g, gshape) if shape_of(g) != gshape else g
    return g2, a2, b2


def _swap_last(ns, x):
    """Swap the last two axes."""
    nd = len(shape_of(x))
    return ns.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _matmul_a(ns, g, ans, a, b):
    """Cotangent of the left operand of a @ b."""
    if type(g) is np.ndarray and type(b) is np.ndarray and g.ndim == 2 and b.ndim == 2:
        return np.matmul(g, b.T)        # plain matrices (no outer trace): numpy itself
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) == 2 and len(sb) == 2:
        return ns.matmul(g, ns.transpose(b))
    if len(sa) == 1 and len(sb) == 1:
        return ns.mul(g, b)
    if len(sa) == 1 and len(sb) == 2:       # a vector times a matrix: b g, no columns
        return ns.matmul(b, g)
    g2, a2, b2 = _matmul_parts(ns, g, a, b)
    return ns.reshape(ns.unbroadcast(ns.matmul(g2, _swap_last(ns, b2)), shape_of(a2)), sa)


def _matmul_b(ns, g, ans, a, b):
    """Cotangent of the right operand of a @ b."""
    if type(g) is np.ndarray and type(a) is np.ndarray and g.ndim == 2 and a.ndim == 2:
        return np.matmul(a.T, g)
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) == 2 and len(sb) == 2:
        return ns.matmul(ns.transpose(a), g)
    if len(sa) == 1 and len(sb) == 1:
        return ns.mul(g, a)
    if len(sa) == 2 and len(sb) == 1:       # a matrix times a vector: g a, no columns
        return ns.matmul(g, a)
    if len(sb) == 2 and len(sa) > 2:
        # one matrix b for a stack of a's (a dense layer over a batch of sequences): one product
        # over every row of the stack, where a product per matrix and their sum cost XLA 1.3x
        rows = int(np.prod(sa[:-1]))
        return ns.matmul(ns.transpose(ns.reshape(a, (rows, sa[-1]))), ns.reshape(g, (rows, sb[-1])))
    g2, a2, b2 = _matmul_parts(ns, g, a, b)
    return ns.reshape(ns.unbroadcast(ns.matmul(_swap_last(ns, a2), g2), shape_of(b2)), sb)


def _matmul_jvp(ns, tangents, ans, args, kw):
    """d(a @ b) = da @ b + a @ db."""
    (ta, tb), (a, b) = tangents, args
    out = None
    if ta is not None:
        out = ns.matmul(ta, b)
    if tb is not None:
        term = ns.matmul(a, tb)
        out = term if out is None else ns.add(out, term)
    return out


def _is_identity(x, other):
    """Whether x is a constant identity matrix (a basis of tangents or cotangents, as jacfwd,
    jacrev and hessian make) whose product with the matrix `other` is `other`, dtype and all."""
    return (type(x) is np.ndarray and x.ndim == 2 and x.shape[0] == x.shape[1] and x.size <= 1 << 16
            and np.result_type(x, peek(other)) == np.result_type(peek(other))
            and np.array_equal(x, np.eye(len(x))))


def _matmul_batch(ns, args, batched, kw):
    """a @ b with the batch on axis 0 of either operand, as numpy.matmul of each example."""
    a, b = args
    ba, bb = int(batched[0]), int(batched[1])
    sa, sb = shape_of(a), shape_of(b)
    ea, eb = sa[ba:], sb[bb:]                   # one example's shapes
    ea2 = (1,) + ea if len(ea) == 1 else ea     # a vector on the left is a row, on the right a column
    eb2 = eb + (1,) if len(eb) == 1 else eb
    stack = max(len(ea2), len(eb2)) - 2         # the stacking axes of one example's product
    size = sa[0] if ba else sb[0]
    # a batch of vectors beside one matrix is one product of matrices (numpy.matmul of a stack of
    # one-column matrices runs a product per example: a hessian's basis of tangents, 30x slower)
    if ba and not bb and len(ea) == 1 and len(eb) == 2:
        return b if _is_identity(a, b) else ns.matmul(a, b)     # jacrev's basis of cotangents: b's rows
    if bb and not ba and len(eb) == 1 and len(ea) == 2:
        if _is_identity(b, a):      # jacfwd's basis of tangents: each column of a
            return ns.transpose(a, (1, 0))
        return ns.matmul(b, ns.transpose(a, (1, 0)))
    # and so is one matrix times a batch of one-column matrices (a vjp's vectors as columns)
    if bb and not ba and len(eb) == 2 and eb[1] == 1 and len(ea) == 2:
        out = ns.matmul(ns.reshape(b, (size, eb[0])), ns.transpose(a, (1, 0)))
        return ns.reshape(out, (size, ea[0], 1))
    if ba and not bb and len(ea) == 2 and ea[0] == 1 and len(eb) == 2:
        return ns.reshape(ns.matmul(ns.reshape(a, (size, ea[1])), b), (size, 1, eb[1]))

    def lined_up(x, e, e2, is_batched):
        """The operand with its example as a matrix and the batch ahead of every stacking axis."""
        if is_batched:
            return ns.reshape(x, (size,) + (1,) * (stack - (len(e2) - 2)) + e2)
        return ns.reshape(x, e2) if e2 != e else x

    out = ns.matmul(lined_up(a, ea, ea2, ba), lined_up(b, eb, eb2, bb))
    so = shape_of(out)
    if len(ea) == 1:
        so = so[:-2] + so[-1:]
    if len(eb) == 1:
        so = so[:-1]
    return ns.reshape(out, so) if so != shape_of(out) else out


def _matmul_emit(kinds):
    """Generated code's a @ b: numpy's operator, but for a batch of outer products large enough
    for the kernel's broadcast product (ops.arith.matmul_kernel: per-example gradients of a dense
    layer under vmap, 4x slower compiled as numpy.matmul)."""
    a, b = kinds
    if type(a) is tuple and type(b) is tuple and a[1] >= 2 and b[1] >= 2:
        sa, sb = a[3], b[3]
        if sa[-1] == 1 and sb[-2] == 1 and sa[-2] * sb[-1] >= O.arith._OUTER_MIN:
            return "K.matmul({0}, {1})"
    return "({0} @ {1})"


define("MatMul", O.matmul, vjp=(_matmul_a, _matmul_b), jvp=_matmul_jvp, batch=_matmul_batch,
       emit={"float": "({0} @ {1})", "array": _matmul_emit}, keeps_nan=True)
