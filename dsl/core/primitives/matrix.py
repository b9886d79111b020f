"""Linear algebra on the last two axes (numpy.linalg's layout, leading axes a batch): Cholesky,
triangular and general solves, the inverse, the determinant and its log, each a primitive with
the standard matrix rules (never the derivative of a factorisation's loops).

Every rule is written with dg's own operations and these kernels, so that a rule's work is
recorded by an outer transformation: derivatives of every order come out exact. A batched
call (vmap) is the kernel on the batch itself, the unbatched arguments broadcast along it,
since numpy's linear algebra already maps over leading axes.
"""

from functools import cache

import numpy as np

from ...errors import error
from .. import ops as O
from ..ops.core import fmt_shape, shape_of, to_tensor
from ..tape import Box, nondiff
from .batching import broadcast_batch
from .mechanism import transposed
from .registry import define


# ---------------------------------------------------------------- checks and helpers
def no_half(a, who):
    """a, or dg's type error for a float16 tensor: numpy's linear algebra (LAPACK's) has none, and
    says so with a Python TypeError (JAX's and PyTorch's refuse it too)."""
    if getattr(a, "dtype", None) == np.float16:
        raise error("type", f"{who}: linear algebra takes float32 or float64 matrices, not float16 (LAPACK has none)",
                    hint='astype(a, "float32") computes it in float32')
    return a


def _square(a, who):
    """A float tensor of one or more square matrices (the last two axes), or dg's shape error."""
    a = no_half(to_tensor(a, f"a matrix for {who}"), who)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise error("shape", f"{who} needs a square matrix (or a stack of them in the leading axes), "
                             f"got a tensor of shape {fmt_shape(a.shape)}")
    return a


def is_vector(a_shape, b_shape):
    """Whether a right-hand side b of a x = b is a vector (one per matrix of a) rather than a matrix
    (or a stack of them): where it has one axis fewer than a and a's size last, or one axis alone
    (numpy 2's reading, which solves every matrix of a stack with it). Otherwise it is a matrix,
    and stacks broadcast as numpy.linalg's: a (3, 4, 4) against a (4, 2) or a (3, 4, 2)."""
    return len(b_shape) == 1 or (len(b_shape) == len(a_shape) - 1 and b_shape[-1:] == a_shape[-1:])


def _right_side(a, b, who):
    """b as a stack of matrices for a x = b, and whether it was a vector (is_vector)."""
    b = to_tensor(b, f"a right-hand side for {who}")
    vector = is_vector(a.shape, b.shape)
    bm = b[..., None] if vector else b
    if bm.ndim < 2 or bm.shape[-2] != a.shape[-1]:
        raise error("shape", f"{who}: a matrix of shape {fmt_shape(a.shape)} against a right-hand side of "
                             f"shape {fmt_shape(b.shape)} (it needs {a.shape[-1]} rows)")
    return bm, vector


def _scalar(r):
    """A 0-d result as a float, as dg's other reductions give it."""
    return float(r) if np.ndim(r) == 0 else r


def _mT(x):
    """The last two axes swapped (each matrix transposed)."""
    nd = len(shape_of(x))
    return O.transpose(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _unbroadcast_pair(ga, gb, a, b):
    """A solve's cotangents in its operands' shapes: where a stack of matrices met one right-hand side
    (or one matrix a stack of them), the batch axes broadcasting added are summed away."""
    return [None if ga is None else O.unbroadcast(ga, shape_of(a)),
            None if gb is None else O.unbroadcast(gb, shape_of(b))]


def _col(x, vector):
    """A vector as a one-column matrix (for outer products of the rules)."""
    return O.reshape(x, shape_of(x) + (1,)) if vector else x


def _uncol(x, vector):
    """The one column back to a vector."""
    return O.reshape(x, shape_of(x)[:-1]) if vector else x


def _triangle(n, lower):
    """The mask of a triangle (the diagonal included)."""
    low = np.tri(n, dtype=bool)         # a third of tril(ones)'s time: a GP's gradient makes ten
    return low if lower else low.T


def _leading_batch(kernel, **fixed):
    """The batching rule of a kernel that maps over leading axes: unbatched arguments repeated."""
    def rule(ns, args, batched, kw):
        return kernel(*broadcast_batch(ns, args, batched), **{**fixed, **(kw or {})})
    return rule


def _linalg(who, fn, *args):
    """numpy's linear algebra, its LinAlgError said in dg's words."""
    for a in args:
        no_half(a, who)
    try:
        return fn(*args)
    except np.linalg.LinAlgError:
        raise _refused(who) from None


# who an inverse or a solve inside a derivative rule fails for: the error names what the program
# called (a jitted derivative runs them as steps of its own, where no rule is there to say it)
SLOGDET_DERIVATIVE = "slogdet's derivative"
DET_SECOND_DERIVATIVE = "det's second derivative"


def _refused(who):
    """dg's error for a matrix a factorisation refuses (numpy's LinAlgError, LAPACK's info)."""
    if who == SLOGDET_DERIVATIVE:
        return error("value", "slogdet: the matrix is singular: ln |det| is -inf there and has no derivative")
    if who == DET_SECOND_DERIVATIVE:
        return error("value", "det: the matrix is singular, where det's second derivatives are not computed")
    if who == "cholesky":
        return error("value", "cholesky: the matrix is not positive definite",
                     hint="a covariance plus a small jitter on the diagonal (a + 1e-9 * eye(n)) often is")
    return error("value", f"{who}: the matrix is singular")


@cache
def _lapack():
    """scipy's LAPACK wrappers, or None without scipy: numpy has no triangular solve of its own,
    and its general solve factorises the triangle again (seven times slower on a vector at n = 60)."""
    try:
        from scipy.linalg import lapack     # optional (JAX brings it), and 0.1 s to import: on first use
    except ImportError:
        return None
    return lapack


def _lapack_for(a, b=None):
    """The LAPACK module for one float32 or float64 matrix (and one matrix of right sides), or None:
    stacks of either, empty matrices and other dtypes go through numpy, which maps over leading axes
    (LAPACK's trtrs given a stack of right sides solves something else, without a word)."""
    dtype = a.dtype if b is None else np.result_type(a, b)
    if a.ndim != 2 or a.shape[0] == 0 or (b is not None and (b.ndim != 2 or b.shape[-1] == 0)) \
            or dtype not in _LAPACK_TYPES:
        return None, dtype
    return _lapack(), dtype


_LAPACK_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


# ---------------------------------------------------------------- cholesky
def cholesky(a):
    """The lower Cholesky factor of (a + a^T) / 2 (JAX's symmetrised input)."""
    if type(a) is Box:
        return CHOLESKY.bind(a)
    a = _square(a, "cholesky")
    sym = (a + np.swapaxes(a, -1, -2)) * 0.5
    lapack, dtype = _lapack_for(sym)
    if lapack is None:
        return _linalg("cholesky", np.linalg.cholesky, sym)
    factor, info = (lapack.spotrf if dtype == np.float32 else lapack.dpotrf)(sym, lower=1, clean=1)
    if info != 0:       # a pivot not positive, where numpy's cholesky fails (NaN and inf pass both)
        raise _refused("cholesky")
    return factor


def _phi(x):
    """The lower triangle with the diagonal halved (the Cholesky rules' projection)."""
    n = shape_of(x)[-1]
    return O.mul(x, np.tri(n) - 0.5 * np.eye(n))


def _cholesky_vjp(ns, g, ans, a):
    """A's cotangent: L^-T phi(L^T G) L^-1, symmetrised (Murray 2016, as JAX)."""
    p = _phi(O.matmul(_mT(ans), g))
    s = triangular_solve(_mT(ans), _mT(triangular_solve(_mT(ans), _mT(p), lower=False)), lower=False)
    return O.mul(O.add(s, _mT(s)), 0.5)


def _cholesky_jvp(ns, tangents, ans, args, kw):
    """L phi(L^-1 sym(dA) L^-T)."""
    t = O.mul(O.add(tangents[0], _mT(tangents[0])), 0.5)
    inner = triangular_solve(ans, _mT(triangular_solve(ans, t, lower=True)), lower=True)
    return O.matmul(ans, _phi(inner))


# ---------------------------------------------------------------- triangular solve
def triangular_solve(a, b, lower=False):
    """x with tri(a) x = b, tri(a) the lower or upper triangle of a (the rest of a is not read)."""
    if type(a) is Box or type(b) is Box:
        return TRIANGULAR_SOLVE.bind(a, b, lower=lower)
    a = _square(a, "triangular_solve")
    bm, vector = _right_side(a, b, "triangular_solve")
    lapack, dtype = _lapack_for(a, bm)
    if lapack is not None:
        x, info = (lapack.strtrs if dtype == np.float32 else lapack.dtrtrs)(
            a.astype(dtype, copy=False), bm.astype(dtype, copy=False), lower=int(lower))
        if info > 0:
            raise _refused("triangular_solve")
    else:
        # where, not a product with the mask: an inf or NaN in the other triangle is not read (0 * nan is nan)
        x = _linalg("triangular_solve", np.linalg.solve, np.where(_triangle(a.shape[-1], lower), a, 0.0), bm)
    return x[..., 0] if vector else x


def _tri_solve_vjp(ns, g, ans, args, kw, wanted):
    """b's cotangent solves the transposed triangle; a's is -(b's cotangent) x^T on the triangle."""
    a, b = args
    lower = kw["lower"]
    vector = is_vector(shape_of(a), shape_of(b))
    gb = triangular_solve(_mT(a), g, lower=not lower)
    ga = None
    if wanted[0]:
        ga = O.mul(O.neg(O.matmul(_col(gb, vector), _mT(_col(ans, vector)))), _triangle(shape_of(a)[-1], lower))
    return _unbroadcast_pair(ga, gb if wanted[1] else None, a, b)


def _tri_solve_jvp(ns, tangents, ans, args, kw):
    """tri(a)^-1 (db - tri(da) x)."""
    a, b = args
    lower = kw["lower"]
    vector = is_vector(shape_of(a), shape_of(b))
    rhs = tangents[1]
    if tangents[0] is not None:
        da = O.where(_triangle(shape_of(a)[-1], lower), tangents[0], 0.0)
        step = _uncol(O.matmul(da, _col(ans, vector)), vector)
        rhs = O.neg(step) if rhs is None else O.sub(rhs, step)
    return triangular_solve(a, rhs, lower=lower)


# ---------------------------------------------------------------- solve and inv
def solve(a, b):
    """x with a x = b (b a vector when it has one axis fewer than a)."""
    return solve_for(a, b)


def solve_for(a, b, who="solve"):
    """solve(a, b), naming `who` where a is singular (a derivative rule's solve)."""
    if type(a) is Box or type(b) is Box:
        return SOLVE.bind(a, b) if who == "solve" else SOLVE.bind(a, b, who=who)
    if (type(a) is np.ndarray and type(b) is np.ndarray and a.ndim == 2 and b.ndim == 1
            and a.shape[0] == a.shape[1] == b.shape[0] and a.dtype == b.dtype == np.float64):
        # one matrix and one vector (a Newton step's): LAPACK's gesv called directly where scipy
        # is there (numpy's solve spends most of a small system's time around the same call),
        # else numpy's vector solve, without the checks that make a stack of one-column matrices
        lapack = _lapack() if a.shape[0] else None
        if lapack is None:
            return _linalg(who, np.linalg.solve, a, b)
        _, _, x, info = lapack.dgesv(a, b)      # (a and b copied: not written)
        if info > 0:        # an exactly zero pivot, where numpy's solve fails (NaN and inf pass both)
            raise _refused(who)
        return x
    a = _square(a, "solve")
    bm, vector = _right_side(a, b, "solve")
    x = _linalg(who, np.linalg.solve, a, bm)
    return x[..., 0] if vector else x


def _solve_vjp(ns, g, ans, args, kw, wanted):
    """b's cotangent is a^-T g; a's is -(b's cotangent) x^T."""
    a, b = args
    vector = is_vector(shape_of(a), shape_of(b))
    gb = solve_for(_mT(a), g, (kw or {}).get("who", "solve"))
    ga = O.neg(O.matmul(_col(gb, vector), _mT(_col(ans, vector)))) if wanted[0] else None
    return _unbroadcast_pair(ga, gb if wanted[1] else None, a, b)


def _solve_jvp(ns, tangents, ans, args, kw):
    """a^-1 (db - da x)."""
    a, b = args
    vector = is_vector(shape_of(a), shape_of(b))
    rhs = tangents[1]
    if tangents[0] is not None:
        step = _uncol(O.matmul(tangents[0], _col(ans, vector)), vector)
        rhs = O.neg(step) if rhs is None else O.sub(rhs, step)
    return solve_for(a, rhs, (kw or {}).get("who", "solve"))


def inv(a):
    """The inverse of a (of each matrix of a stack)."""
    return inverse(a)


def inverse(a, who="inv"):
    """inv(a), naming `who` where a is singular (a derivative rule's inverse)."""
    if type(a) is Box:
        return INV.bind(a) if who == "inv" else INV.bind(a, who=who)
    return _linalg(who, np.linalg.inv, _square(a, "inv"))


# ---------------------------------------------------------------- determinants
def logabsdet(a):
    """ln |det a|."""
    if type(a) is Box:
        return LOGABSDET.bind(a)
    return _scalar(np.linalg.slogdet(_square(a, "slogdet"))[1])


def det(a):
    """The determinant."""
    if type(a) is Box:
        return DET.bind(a)
    return _scalar(np.linalg.det(_square(a, "det")))


def det_sign(a):
    """The sign of the determinant (-1, 0 or 1): no derivative."""
    if type(a) is Box:
        return nondiff("DetSign", (a,))
    return _scalar(np.linalg.slogdet(_square(a, "slogdet"))[0])


def _per_matrix(g, like):
    """A cotangent per determinant, as a factor of each matrix (two axes of length 1 behind)."""
    return O.reshape(g, shape_of(g) + (1, 1)) if shape_of(like)[:-2] else g


def cofactors(a):
    """The cofactor matrix of each matrix of a, the gradient of det: det(a) inv(a)^T where a is
    invertible, and from the SVD where it is not (the adjugate is a polynomial in a's entries,
    defined everywhere; JAX's gradient of det at a singular matrix is the same)."""
    if type(a) is Box:
        return COFACTORS.bind(a)
    a = _square(a, "det")
    try:
        return np.linalg.det(a)[..., None, None] * np.swapaxes(np.linalg.inv(a), -1, -2)
    except np.linalg.LinAlgError:
        pass
    u, sv, vh = np.linalg.svd(a)
    n = sv.shape[-1]
    others = np.prod(np.where(np.eye(n, dtype=bool), 1.0, sv[..., None, :]), axis=-1)    # prod of s[j], j != i
    sign = np.linalg.det(u) * np.linalg.det(vh)
    return (sign[..., None, None] * (u * others[..., None, :])) @ vh


def _cofactors_jvp(ns, tangents, ans, args, kw):
    """dC = tr(a^-1 da) C - C da^T a^-T (where a is invertible)."""
    a, da = args[0], tangents[0]
    a_inv = inverse(a, DET_SECOND_DERIVATIVE)
    first = O.mul(_per_matrix(_trace_of(O.matmul(a_inv, da)), a), ans)
    return O.sub(first, O.matmul(ans, O.matmul(_mT(da), _mT(a_inv))))


def _trace_of(x):
    """The trace of each matrix."""
    n = shape_of(x)[-1]
    return O.sum_(O.mul(x, np.eye(n)), (-2, -1))


# keeps_nan (jit may leave out the zero rules on the way in, registry.py): LAPACK's LU and Cholesky
# carry a NaN into every entry computed after it, and where one stops them instead (a NaN pivot,
# Cholesky's test of each diagonal), the error sends the call to the exact program (codegen.run_code)
CHOLESKY = define("Cholesky", cholesky, vjp=(_cholesky_vjp,), jvp=_cholesky_jvp, batch=_leading_batch(cholesky),
                  can_fail=True, keeps_nan=True)
TRIANGULAR_SOLVE = define("TriangularSolve", triangular_solve, vjp_all=_tri_solve_vjp, jvp=_tri_solve_jvp,
                          batch=_leading_batch(triangular_solve), can_fail=True, keeps_nan=True)
SOLVE = define("Solve", solve_for, vjp_all=_solve_vjp, jvp=_solve_jvp, batch=_leading_batch(solve_for), can_fail=True,
               keeps_nan=True)
INV = define("Inv", inverse, vjp=(lambda ns, g, ans, a, **kw: O.neg(O.matmul(_mT(ans), O.matmul(g, _mT(ans)))),),
             jvp=lambda ns, tangents, ans, args, kw: O.neg(O.matmul(ans, O.matmul(tangents[0], ans))),
             batch=_leading_batch(inverse), can_fail=True, keeps_nan=True)
LOGABSDET = define("LogAbsDet", logabsdet,
                   vjp=(lambda ns, g, ans, a: O.mul(_per_matrix(g, a), _mT(inverse(a, SLOGDET_DERIVATIVE))),),
                   jvp=lambda ns, tangents, ans, args, kw: _trace_of(solve_for(args[0], tangents[0], SLOGDET_DERIVATIVE)),
                   batch=_leading_batch(logabsdet), can_fail=True)
DET = define("Det", det,
             vjp=(lambda ns, g, ans, a: O.mul(_per_matrix(g, a), cofactors(a)),),
             jvp=lambda ns, tangents, ans, args, kw: O.sum_(O.mul(cofactors(args[0]), tangents[0]), (-2, -1)),
             batch=_leading_batch(det), can_fail=True)
COFACTORS = define("Cofactors", cofactors, jvp=_cofactors_jvp, vjp_all=transposed(_cofactors_jvp),
                   batch=_leading_batch(cofactors), can_fail=True)
define("DetSign", det_sign, differentiable=False, batch=_leading_batch(det_sign))
