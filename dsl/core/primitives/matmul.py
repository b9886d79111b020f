"""a @ b (MatMul) and its rules, whose products are NzMatMul: a @ b with reference 6.7's zero
(dsl/core/ops/contract.py), so that a zero cotangent beside an infinite entry of a matrix adds 0
to the sum, as a zero cotangent times an infinite local derivative is 0 everywhere else. NzMatMul
has a @ b's rules again, so the zero holds at every order."""

import numpy as np

from .. import ops as O
from ..ops.core import shape_of
from ..tape import peek
from .registry import define


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


def _product(ns, a, b):
    """a @ b inside a rule: with reference 6.7's zero (NzMatMul, only where a @ b is not finite)."""
    return ns.nz_matmul(a, b, ns.matmul(a, b))


def _matmul_a(ns, g, ans, a, b):
    """Cotangent of the left operand of a @ b."""
    if type(g) is np.ndarray and type(b) is np.ndarray and g.ndim == 2 and b.ndim == 2:
        return O.nz_matmul(g, b.T, np.matmul(g, b.T))       # plain matrices (no outer trace): numpy itself
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) == 2 and len(sb) == 2:
        return _product(ns, g, ns.transpose(b))
    if len(sa) == 1 and len(sb) == 1:
        return ns.nz(g, b, ns.mul(g, b))
    if len(sa) == 1 and len(sb) == 2:       # a vector times a matrix: b g, no columns
        return _product(ns, b, g)
    g2, a2, b2 = _matmul_parts(ns, g, a, b)
    return ns.reshape(ns.unbroadcast(_product(ns, g2, _swap_last(ns, b2)), shape_of(a2)), sa)


def _matmul_b(ns, g, ans, a, b):
    """Cotangent of the right operand of a @ b."""
    if type(g) is np.ndarray and type(a) is np.ndarray and g.ndim == 2 and a.ndim == 2:
        return O.nz_matmul(a.T, g, np.matmul(a.T, g))
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) == 2 and len(sb) == 2:
        return _product(ns, ns.transpose(a), g)
    if len(sa) == 1 and len(sb) == 1:
        return ns.nz(g, a, ns.mul(g, a))
    if len(sa) == 2 and len(sb) == 1:       # a matrix times a vector: g a, no columns
        return _product(ns, g, a)
    if len(sb) == 2 and len(sa) > 2:
        # one matrix b for a stack of a's (a dense layer over a batch of sequences): one product
        # over every row of the stack, where a product per matrix and their sum cost XLA 1.3x
        rows = int(np.prod(sa[:-1]))
        return _product(ns, ns.transpose(ns.reshape(a, (rows, sa[-1]))), ns.reshape(g, (rows, sb[-1])))
    g2, a2, b2 = _matmul_parts(ns, g, a, b)
    return ns.reshape(ns.unbroadcast(_product(ns, _swap_last(ns, a2), g2), shape_of(b2)), sb)


def _matmul_jvp(ns, tangents, ans, args, kw):
    """d(a @ b) = da @ b + a @ db."""
    (ta, tb), (a, b) = tangents, args
    out = None
    if ta is not None:
        out = _product(ns, ta, b)
    if tb is not None:
        term = _product(ns, a, tb)
        out = term if out is None else ns.add(out, term)
    return out


def _is_identity(x, other):
    """Whether x is a constant identity matrix (a basis of tangents or cotangents, as jacfwd,
    jacrev and hessian make) whose product with the matrix `other` is `other`, dtype and all."""
    return (type(x) is np.ndarray and x.ndim == 2 and x.shape[0] == x.shape[1] and x.size <= 1 << 16
            and np.result_type(x, peek(other)) == np.result_type(peek(other))
            and np.array_equal(x, np.eye(len(x))))


def _matmul_batch(ns, args, batched, kw, product=None):
    """a @ b with the batch on axis 0 of either operand, as numpy.matmul of each example
    (`product`: how two tensors are multiplied, ns.matmul where None)."""
    product = product or ns.matmul
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
        return b if _is_identity(a, b) else product(a, b)     # jacrev's basis of cotangents: b's rows
    if bb and not ba and len(eb) == 1 and len(ea) == 2:
        if _is_identity(b, a):      # jacfwd's basis of tangents: each column of a
            return ns.transpose(a, (1, 0))
        return product(b, ns.transpose(a, (1, 0)))
    # and so is one matrix times a batch of one-column matrices (a vjp's vectors as columns)
    if bb and not ba and len(eb) == 2 and eb[1] == 1 and len(ea) == 2:
        out = product(ns.reshape(b, (size, eb[0])), ns.transpose(a, (1, 0)))
        return ns.reshape(out, (size, ea[0], 1))
    if ba and not bb and len(ea) == 2 and ea[0] == 1 and len(eb) == 2:
        return ns.reshape(product(ns.reshape(a, (size, ea[1])), b), (size, 1, eb[1]))

    def lined_up(x, e, e2, is_batched):
        """The operand with its example as a matrix and the batch ahead of every stacking axis."""
        if is_batched:
            return ns.reshape(x, (size,) + (1,) * (stack - (len(e2) - 2)) + e2)
        return ns.reshape(x, e2) if e2 != e else x

    out = product(lined_up(a, ea, ea2, ba), lined_up(b, eb, eb2, bb))
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


# the product inside rules: a @ b's rules on (a, b), r only the product already computed
def _nz_matmul_vjp(ns, g, ans, args, kw, wanted):
    """a's and b's cotangents as a @ b's; none for r, which only saves computing a @ b again."""
    a, b, _ = args
    return [_matmul_a(ns, g, ans, a, b) if wanted[0] else None, _matmul_b(ns, g, ans, a, b) if wanted[1] else None,
            None]


define("NzMatMul", O.nz_matmul, vjp_all=_nz_matmul_vjp,
       jvp=lambda ns, tangents, ans, args, kw: _matmul_jvp(ns, tangents[:2], ans, args[:2], kw),
       batch=lambda ns, args, batched, kw: _matmul_batch(ns, args[:2], batched[:2], kw,
                                                         lambda x, y: _product(ns, x, y)),
       keeps_nan=True)
