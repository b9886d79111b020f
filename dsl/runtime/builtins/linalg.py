"""The linear algebra builtins: the primitives of dsl/core/primitives/matrix.py, and what is composed
of dg's operations (the triangles, diagonals, traces and outer products), each on the last two
axes as numpy.linalg, leading axes a batch."""

import numpy as np

from ...core import ops
from ...core.ops.core import check_size, fmt_shape, to_float
from ...core.primitives import decompositions as D, expm as E, matrix as M
from ...core.tape import Box, peek, raw
from ...core.trees import flatten
from ...core.values import type_name
from ...errors import error
from .arrays import _tensor_shape, flag


def _ndim(x, who, least):
    """The number of axes of a tensor argument, at least `least`."""
    v = peek(x)
    if type(v) is tuple:
        raise error("type", f"expected a tensor for {who}, got tuple",
                    hint="tensor(t) makes a tensor of a tuple of numbers")
    shape = np.shape(v)
    if type(v) not in (np.ndarray, float, int) or len(shape) < least:
        raise error("shape", f"{who} needs a tensor with at least {least} ax{'is' if least == 1 else 'es'}, got "
                             f"{'a tensor of shape ' + fmt_shape(shape) if shape else type_name(peek(x))}")
    return shape


def triangular_solve(a, b, lower=False):
    """triangular_solve(a, b, lower=false): x with tri(a) x = b (scipy's and JAX's solve_triangular)."""
    return M.triangular_solve(a, b, lower=flag(lower, "triangular_solve: lower"))


def cho_solve(l, b):    # noqa: E741 (the reference's name for the factor)
    """cho_solve(l, b): x with (l l^T) x = b, l the lower factor cholesky gives; JAX's (c, lower) pair too."""
    factor = l
    f = peek(factor)
    lower = True
    if type(f) is tuple:
        if len(f) != 2:
            raise error("type", "cho_solve needs the factor cholesky gives, or a pair (factor, lower)")
        pair = ops.unpack(factor)       # a pair being differentiated is one recorded value
        factor, lower = pair[0], flag(pair[1], "cho_solve: lower")
    if not lower:
        factor = ops.transpose(factor, tuple(range(len(np.shape(peek(factor))) - 2)) + (-1, -2))
    y = M.triangular_solve(factor, b, lower=True)
    nd = len(np.shape(peek(factor)))
    return M.triangular_solve(ops.transpose(factor, tuple(range(nd - 2)) + (nd - 1, nd - 2)), y, lower=False)


def slogdet(a):
    """slogdet(a): (the sign of det(a), ln |det(a)|), as numpy's."""
    return M.det_sign(a), M.logabsdet(a)


def eigh(a):
    """eigh(a): (eigenvalues ascending, eigenvectors as columns) of the symmetric part of a."""
    return D.eigh_values(a), D.eigh_vectors(a)


def svd(a, full_matrices=True, compute_uv=True):
    """svd(a, full_matrices=true, compute_uv=true): (u, s, vh) with a = u @ diag(s) @ vh, as numpy's."""
    full, uv = flag(full_matrices, "svd: full_matrices"), flag(compute_uv, "svd: compute_uv")
    if not uv:
        return D.svd_values(a)
    shape = _ndim(a, "svd", 2)
    if full and shape[-1] != shape[-2]:
        if any(type(x) is Box for x in flatten(a)[0]):
            raise error("grad", "svd(a, full_matrices=true) of a non-square matrix has no derivative: the "
                                "columns past min(m, n) are not unique",
                        hint="use svd(a, full_matrices=false), whose derivative is exact")
        a = raw(a)
        return tuple(np.linalg.svd(np.asarray(a, dtype=float), full_matrices=True))
    return D.svd_u(a), D.svd_values(a), D.svd_vh(a)


def qr(a, mode="reduced"):
    """qr(a, mode="reduced"): (q, r) with a = q @ r, q's columns orthonormal and r upper triangular."""
    mode = raw(mode)
    if type(mode) is not str:
        raise error("type", f"qr: mode must be a string, got {type_name(mode)}")
    if mode == "r":
        return D.qr_r(a)
    if mode != "reduced":
        raise error("value", f"qr: mode must be \"reduced\" or \"r\", got {mode!r}")
    return D.qr_q(a), D.qr_r(a)


def pinv(a, rcond=1e-15):
    """pinv(a, rcond=1e-15): the pseudo-inverse (numpy's), singular values below rcond * the largest as 0."""
    rcond = raw(rcond)
    if type(rcond) not in (float, int) or isinstance(rcond, bool):
        raise error("type", f"pinv: rcond must be a number, got {type_name(rcond)}")
    return D.pinv(a, to_float(rcond))        # an int past float's range is inf (every singular value cut)


def lstsq(a, b):
    """lstsq(a, b): (x, residuals, rank, s) as JAX's: x minimises |a x - b|, the least norm one."""
    shape = _ndim(a, "lstsq", 2)
    if len(shape) != 2:
        raise error("shape", f"lstsq needs a matrix, got a tensor of shape {fmt_shape(shape)}")
    m, n = shape
    bshape = np.shape(peek(b))
    if len(bshape) not in (1, 2) or bshape[0] != m:
        raise error("shape", f"lstsq: a matrix of shape {fmt_shape(shape)} against a right-hand side of shape "
                             f"{fmt_shape(bshape)} (it needs {m} rows)")
    cutoff = np.finfo(float).eps * max(m, n)
    x = ops.matmul(D.pinv(a, cutoff), b)
    s = D.svd_values(a)
    # computed, not decided: the same program for every matrix (vmap runs it batched, jit once)
    rank = ops.sum_(ops.where(ops.order(">", s, ops.mul(ops.max_(s), cutoff)), 1.0, 0.0)) if min(m, n) else 0.0
    r = ops.sub(ops.matmul(a, x), b)
    residuals = ops.sum_(ops.mul(r, r), 0)
    return x, (ops.reshape(residuals, (1,)) if len(bshape) == 1 else residuals), rank, s


def norm(x, axis=None, keepdims=False, ord=None):
    """norm(x, axis=none, keepdims=false, ord=none): the L2 norm, or numpy's norm of order ord."""
    order = raw(ord)
    if not (order is None or type(order) in (int, float, str)) or type(order) is bool:
        raise error("type", f"norm: ord must be a number, inf, \"fro\" or \"nuc\", got {type_name(order)}")
    x = ops.sequence_operand(x)     # numpy's norm((3.0, 4.0))
    if type(peek(x)) not in (np.ndarray, float, int, bool):
        raise error("type", f"norm needs a number or a tensor, got {type_name(peek(x))}")
    if order is None:
        _check_not_an_order(raw(axis), np.ndim(peek(x)))
        return ops.sqrt(ops.sum_(ops.mul(x, x), axis, keepdims))
    shape = np.shape(peek(x))
    axes = raw(axis)
    if type(axes) is tuple and len(axes) == 2 or axes is None and len(shape) == 2:
        axes = (-2, -1) if axes is None else axes
        if any(type(a) is not int or not -len(shape) <= a < len(shape) for a in axes):
            raise error("shape", f"norm: the axes {axes!r} of a matrix norm are not two axes of a tensor of "
                                 f"shape {fmt_shape(shape)}")
        return _matrix_norm(x, order, axes, keepdims, len(shape))
    if type(axes) is int or axes is None and len(shape) == 1:
        return _vector_norm(x, order, axes, keepdims)
    raise error("shape", f"norm with ord needs a vector, a matrix, an axis or a pair of axes; got a tensor of shape "
                         f"{fmt_shape(shape)} and axis {axes!r}")


def _check_not_an_order(axis, ndim):
    """numpy's norm(x, 2) or norm(x, "fro") is an order, where dg's second argument is the axis: an
    axis no tensor of ndim axes has (a string, inf, 2 of a matrix) is an error that says so."""
    if type(axis) is str or type(axis) is float and not axis.is_integer() or (
            type(axis) is int and (ndim == 0 or not -ndim <= axis < ndim)):
        shown = f'"{axis}"' if type(axis) is str else axis
        axes = "1 axis" if ndim == 1 else f"{ndim} axes"
        raise error("index" if type(axis) is int else "type", f"norm: {shown} is not an axis of a tensor with {axes}",
                    hint=f"the order goes by name, as norm(x, ord={shown}): dg's second argument is the axis")


def _vector_norm(x, order, axis, keepdims):
    """numpy's vector norms along one axis."""
    if type(order) not in (int, float) or isinstance(order, bool):
        raise error("value", f"norm: the order of a vector norm is a number (or inf), got {order!r}")
    order = to_float(order)     # an int past float's range is inf: the largest entry, the limit of the norms
    a = ops.abs_(x)
    if order == float("inf"):
        return ops.max_(a, axis, keepdims)
    if order == -float("inf"):
        return ops.min_(a, axis, keepdims)
    if order == 0:
        return ops.sum_(ops.where(ops.ne(x, 0.0), 1.0, 0.0), axis, keepdims)
    if order == 1:
        return ops.sum_(a, axis, keepdims)
    if order == 2:
        return ops.sqrt(ops.sum_(ops.mul(x, x), axis, keepdims))
    return ops.pow(ops.sum_(ops.pow(a, float(order)), axis, keepdims), 1.0 / order)


def _matrix_norm(x, order, axes, keepdims, nd):
    """numpy's matrix norms over two axes (moved last for the singular values)."""
    rows, cols = (a % nd for a in axes)
    if rows == cols:
        raise error("value", f"norm: the two axes of a matrix norm must differ, got {axes!r}")
    last = ops.transpose(x, tuple(i for i in range(nd) if i not in (rows, cols)) + (rows, cols))
    if order == "fro":
        out = ops.sqrt(ops.sum_(ops.mul(last, last), (-2, -1)))
    elif order == "nuc":
        out = ops.sum_(D.svd_values(last), -1)
    elif order in (2, -2):
        out = (ops.max_ if order == 2 else ops.min_)(D.svd_values(last), -1)
    elif order in (1, -1):
        out = (ops.max_ if order == 1 else ops.min_)(ops.sum_(ops.abs_(last), -2), -1)
    elif order in (float("inf"), -float("inf")):
        out = (ops.max_ if order > 0 else ops.min_)(ops.sum_(ops.abs_(last), -1), -1)
    else:
        raise error("value", f"norm: a matrix norm's order is \"fro\", \"nuc\", 1, -1, 2, -2, inf or -inf, "
                             f"got {order!r}")
    if keepdims:
        shape = list(np.shape(peek(x)))
        shape[rows] = shape[cols] = 1
        out = ops.reshape(out, tuple(shape))
    return out


def _diagonal_number(k, who, name="the offset"):
    """Which diagonal: an int (0 the main diagonal, 1 the one above it, -1 the one below); `name`
    is the argument's, for the error."""
    k = raw(k)
    if type(k) is not int:
        raise error("type", f"{who}: {name} must be an int, got {type_name(k)}")
    return k


def diagonal(a, offset=0):
    """diagonal(a, offset=0): the diagonal of each matrix (the last two axes), or the one `offset`
    above it (below, for a negative offset), as numpy.linalg.diagonal."""
    return _diagonal(a, offset, "diagonal")


def _diagonal(a, offset, who):
    """diagonal(a, offset) for the builtin `who`."""
    shape = _ndim(a, who, 2)
    k = _diagonal_number(offset, who)
    m, n = shape[-2:]
    if k == 0 and m > n:
        return ops.sum_(ops.keep_where(np.eye(m, n, dtype=bool), a), -2)
    # each row's entry on the diagonal (0 where the row has none), then the rows that have one
    out = ops.sum_(ops.keep_where(np.eye(m, n, k, dtype=bool), a), -1)
    lo = max(0, -k)
    hi = max(lo, min(m, n - k))
    return out if (lo, hi) == (0, m) else ops.index(out, (Ellipsis, slice(lo, hi)))


def trace(a, offset=0):
    """trace(a, offset=0): the sum of the diagonal of each matrix (the last two axes), or of the
    one `offset` above it, as numpy.linalg.trace."""
    return ops.sum_(_diagonal(a, offset, "trace"), -1)


def diag(v, k=0):
    """diag(v, k=0): a square matrix with the vector v on its diagonal, or on the one k above it
    (below, for a negative k); of a matrix, that diagonal (numpy's)."""
    shape = _ndim(v, "diag", 1)
    k = _diagonal_number(k, "diag")
    if len(shape) == 2:
        return _diagonal(v, k, "diag")
    if len(shape) != 1:
        raise error("shape", f"diag needs a vector or a matrix, got a tensor of shape {fmt_shape(shape)}")
    size = shape[0] + abs(k)
    check_size((size, size), "diag's matrix")
    if k:
        v = ops.cat((v, np.zeros(abs(k), np.result_type(peek(v)))), 0)
    # v[i] in row i for a diagonal above the main one (entry (i, i + k)), in column i below it
    along = (size, 1) if k >= 0 else (1, size)
    return ops.keep_where(np.eye(size, k=k, dtype=bool), ops.reshape(v, along))


def outer(a, b):
    """outer(a, b): the outer product of a and b, each flattened (numpy's)."""
    na, nb = int(np.size(peek(a))), int(np.size(peek(b)))
    return ops.mul(ops.reshape(a, (na, 1)), ops.reshape(b, (1, nb)))


def _triangle(a, k, lower, who):
    """a with the entries off the lower (upper) triangle, past diagonal k, set to 0."""
    shape = _ndim(a, who, 2)
    k = _diagonal_number(k, who, "k")
    m, n = shape[-2:]
    k = max(-m, min(k, n))      # past the matrix, every entry or none (numpy's C long cannot take any int)
    mask = np.tril(np.ones((m, n), bool), k) if lower else np.triu(np.ones((m, n), bool), k)
    return ops.keep_where(mask, a)     # an int or bool matrix keeps its dtype, as numpy's


def tril(a, k=0):
    """tril(a, k=0): the lower triangle of each matrix (below diagonal k), zeros above."""
    return _triangle(a, k, True, "tril")


def triu(a, k=0):
    """triu(a, k=0): the upper triangle of each matrix (above diagonal k), zeros below."""
    return _triangle(a, k, False, "triu")


def kron(a, b):
    """kron(a, b): the Kronecker product (numpy's): blocks a[i, j] * b, over any number of axes."""
    sa, sb = _tensor_shape(a, "kron"), _tensor_shape(b, "kron")
    nd = max(len(sa), len(sb))
    sa, sb = (1,) * (nd - len(sa)) + tuple(sa), (1,) * (nd - len(sb)) + tuple(sb)
    # a's axes interleaved with b's: a[i, 1, j, 1] * b[1, k, 1, l] is (i, k, j, l), each pair one axis
    spread = ops.mul(ops.reshape(a, tuple(n for m in sa for n in (m, 1))), ops.reshape(b, tuple(n for m in sb for n in (1, m))))
    return ops.reshape(spread, tuple(m * n for m, n in zip(sa, sb)))


def matrix_power(a, n):
    """matrix_power(a, n): a @ a @ ... (n factors) of a square matrix (of each of a stack); inv(a) to
    the power -n for a negative n, the identity for 0 (numpy's, product for product)."""
    shape = _ndim(a, "matrix_power", 2)
    if shape[-1] != shape[-2]:
        raise error("shape", f"matrix_power needs a square matrix (or a stack of them in the leading axes), "
                             f"got a tensor of shape {fmt_shape(shape)}")
    n = raw(n)
    if type(n) is not int:
        raise error("type", f"matrix_power: the power must be an int, got {type_name(n)}")
    if n == 0:
        return np.broadcast_to(np.eye(shape[-1], dtype=np.result_type(peek(a))), shape).copy()
    if n < 0:
        a, n = M.inv(a), -n
    if n == 3:
        return ops.matmul(ops.matmul(a, a), a)
    # numpy's order of products: the binary powers of a, each multiplied in as its bit is met
    result, z = None, None
    while n > 0:
        z = a if z is None else ops.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else ops.matmul(result, z)
    return result


BUILTINS = {"solve": M.solve, "cholesky": M.cholesky, "triangular_solve": triangular_solve, "cho_solve": cho_solve,
            "inv": M.inv, "det": M.det, "slogdet": slogdet, "trace": trace, "diagonal": diagonal, "diag": diag,
            "outer": outer, "tril": tril, "triu": triu,
            "eigh": eigh, "eigvalsh": D.eigh_values, "svd": svd, "qr": qr, "pinv": pinv, "lstsq": lstsq,
            "norm": norm, "expm": E.expm, "kron": kron, "matrix_power": matrix_power}
