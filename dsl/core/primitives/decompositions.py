"""The symmetric eigendecomposition and the singular value decomposition, one primitive per
result (eigenvalues, eigenvectors; singular values, U, Vh), each with its forward rule (JAX's,
from the standard perturbation formulas) and the reverse rule that is that forward rule
transposed: the gradient of t -> <jvp(t), g>, exact because the forward rule is linear in t.

Where eigenvalues (singular values) repeat, the eigenvectors (singular vectors) are not unique
and their derivative is infinite: the rules give infinities or NaNs there, as JAX's do, which
the numerics check reports; the eigenvalues' (singular values') own derivatives stay finite.
"""

import numpy as np

from ...errors import error
from .. import ops as O
from ..ops.core import fmt_shape, shape_of, to_tensor
from ..tape import Box
from .matrix import _leading_batch, _linalg, _mT, _square, no_half, triangular_solve
from .mechanism import transposed
from .registry import define


def _row(w):
    """A vector per matrix as a row, w[..., None, :]."""
    s = shape_of(w)
    return O.reshape(w, s[:-1] + (1, s[-1]))


def _column(w):
    """A vector per matrix as a column, w[..., :, None]."""
    return O.reshape(w, shape_of(w) + (1,))


def _sym(x):
    """(x + x^T) / 2."""
    return O.mul(O.add(x, _mT(x)), 0.5)


# ---------------------------------------------------------------- eigh
def eigh_values(a):
    """The eigenvalues of the symmetric part of a, ascending."""
    if type(a) is Box:
        return EIGH_VALUES.bind(a)
    a = _square(a, "eigh")
    return _linalg("eigh", np.linalg.eigh, (a + np.swapaxes(a, -1, -2)) * 0.5)[0]


def eigh_vectors(a):
    """The eigenvectors (columns) of the symmetric part of a, in the order of eigh_values."""
    if type(a) is Box:
        return EIGH_VECTORS.bind(a)
    a = _square(a, "eigh")
    return _linalg("eigh", np.linalg.eigh, (a + np.swapaxes(a, -1, -2)) * 0.5)[1]


def _projected(tangents, args):
    """V^T sym(dA) V, the tangent seen in the eigenbasis."""
    v = eigh_vectors(args[0])
    return O.matmul(_mT(v), O.matmul(_sym(tangents[0]), v)), v


def _eigh_values_jvp(ns, tangents, ans, args, kw):
    """dw = diag(V^T dA V)."""
    inner, _ = _projected(tangents, args)
    n = shape_of(inner)[-1]
    return O.sum_(O.mul(inner, np.eye(n)), -1)


def _eigh_vectors_jvp(ns, tangents, ans, args, kw):
    """dV = V (F * (V^T dA V)), F[i, j] = 1 / (w[j] - w[i]) off the diagonal, 0 on it."""
    inner, v = _projected(tangents, args)
    w = eigh_values(args[0])
    n = shape_of(w)[-1]
    f = O.sub(O.div(1.0, O.add(O.sub(_row(w), _column(w)), np.eye(n))), np.eye(n))
    return O.matmul(v, O.mul(f, inner))


# ---------------------------------------------------------------- svd
def _svd(a, part):
    """One result of the reduced SVD a = U diag(s) Vh."""
    a = to_tensor(a, "a matrix for svd")
    if a.ndim < 2:
        raise error("shape", f"svd needs a matrix (or a stack of them in the leading axes), got a tensor of "
                             f"shape {fmt_shape(a.shape)}")
    return _linalg("svd", np.linalg.svd, a, False)[part]


def svd_u(a):
    """U of the reduced SVD: m x k, k = min(m, n)."""
    return SVD_U.bind(a) if type(a) is Box else _svd(a, 0)


def svd_values(a):
    """The singular values, descending."""
    return SVD_VALUES.bind(a) if type(a) is Box else _svd(a, 1)


def svd_vh(a):
    """Vh of the reduced SVD: k x n."""
    return SVD_VH.bind(a) if type(a) is Box else _svd(a, 2)


def _svd_parts(a, da):
    """(U, s, V, s as a row, U^T dA V) of the forward rules."""
    u, s, v = svd_u(a), svd_values(a), _mT(svd_vh(a))
    return u, s, v, _row(s), O.matmul(_mT(u), O.matmul(da, v))


def _svd_values_jvp(ns, tangents, ans, args, kw):
    """ds = diag(U^T dA V)."""
    _, s, _, _, ds_mat = _svd_parts(args[0], tangents[0])
    k = shape_of(s)[-1]
    return O.sum_(O.mul(ds_mat, np.eye(k)), -1)


def _svd_f(s_row, k):
    """F[i, j] = 1 / (s[j]^2 - s[i]^2) off the diagonal, 0 on it."""
    diffs = O.mul(O.add(s_row, _mT(s_row)), O.sub(s_row, _mT(s_row)))
    return O.sub(O.div(1.0, O.add(diffs, np.eye(k))), np.eye(k))


def _svd_u_jvp(ns, tangents, ans, args, kw):
    """dU = U (F * (dS s + s dS^T)) (+ the part outside U's span, for a tall matrix)."""
    a, da = args[0], tangents[0]
    u, s, v, s_row, ds = _svd_parts(a, da)
    m, n = shape_of(a)[-2:]
    k = min(m, n)
    dss = O.mul(ds, s_row)
    du = O.matmul(u, O.mul(_svd_f(s_row, k), O.add(dss, _mT(dss))))
    if m > n:
        dav = O.matmul(da, v)
        du = O.add(du, O.div(O.sub(dav, O.matmul(u, O.matmul(_mT(u), dav))), s_row))
    return du


def _svd_vh_jvp(ns, tangents, ans, args, kw):
    """dV = V (F * (s dS + dS^T s)) (+ the part outside V's span, for a wide matrix); dVh = dV^T."""
    a, da = args[0], tangents[0]
    u, s, v, s_row, ds = _svd_parts(a, da)
    m, n = shape_of(a)[-2:]
    k = min(m, n)
    sds = O.mul(_mT(s_row), ds)
    dv = O.matmul(v, O.mul(_svd_f(s_row, k), O.add(sds, _mT(sds))))
    if n > m:
        dau = O.matmul(_mT(da), u)
        dv = O.add(dv, O.div(O.sub(dau, O.matmul(v, O.matmul(_mT(v), dau))), s_row))
    return _mT(dv)


def _define(name, kernel, jvp):
    """A decomposition's primitive: the forward rule, its transpose, the batch on leading axes."""
    return define(name, kernel, jvp=jvp, vjp_all=transposed(jvp), batch=_leading_batch(kernel), can_fail=True)


EIGH_VALUES = _define("EighValues", eigh_values, _eigh_values_jvp)
EIGH_VECTORS = _define("EighVectors", eigh_vectors, _eigh_vectors_jvp)
SVD_VALUES = _define("SvdValues", svd_values, _svd_values_jvp)
SVD_U = _define("SvdU", svd_u, _svd_u_jvp)
SVD_VH = _define("SvdVh", svd_vh, _svd_vh_jvp)


# ---------------------------------------------------------------- qr
def _qr(a, part):
    """One result of the reduced QR decomposition a = Q R."""
    a = to_tensor(a, "a matrix for qr")
    if a.ndim < 2:
        raise error("shape", f"qr needs a matrix (or a stack of them in the leading axes), got a tensor of "
                             f"shape {fmt_shape(a.shape)}")
    return np.linalg.qr(no_half(a, "qr"), "reduced")[part]


def qr_q(a):
    """Q of the reduced QR decomposition: m x k orthonormal columns, k = min(m, n)."""
    return QR_Q.bind(a) if type(a) is Box else _qr(a, 0)


def qr_r(a):
    """R of the reduced QR decomposition: k x n upper triangular."""
    return QR_R.bind(a) if type(a) is Box else _qr(a, 1)


def _qr_parts(a, da):
    """(Q, R, Q^T dA R^-1 and the skew-symmetric part of it the forward rules read) for m >= n."""
    m, n = shape_of(a)[-2:]
    if m < n:
        raise error("grad", f"qr of a wide matrix ({m} x {n}) has no derivative here: R's last columns are not "
                            f"determined by a square part alone (JAX has none either)",
                    hint="differentiate qr of the transpose, or of the first m columns")
    q, r = qr_q(a), qr_r(a)
    da_rinv = _mT(triangular_solve(_mT(r), _mT(da), lower=True))        # dA R^-1
    qt = O.matmul(_mT(q), da_rinv)
    low = O.mul(qt, np.tri(n, k=-1))
    skew = O.sub(low, _mT(low))
    return q, r, da_rinv, qt, skew


def _qr_q_jvp(ns, tangents, ans, args, kw):
    """dQ = Q (skew - Q^T dA R^-1) + dA R^-1."""
    q, r, da_rinv, qt, skew = _qr_parts(args[0], tangents[0])
    return O.add(O.matmul(q, O.sub(skew, qt)), da_rinv)


def _qr_r_jvp(ns, tangents, ans, args, kw):
    """dR = (Q^T dA R^-1 - skew) R."""
    q, r, da_rinv, qt, skew = _qr_parts(args[0], tangents[0])
    return O.matmul(O.sub(qt, skew), r)


# ---------------------------------------------------------------- pinv
def pinv(a, rcond=1e-15):
    """The Moore-Penrose pseudo-inverse, singular values below rcond * the largest taken as 0."""
    if type(a) is Box:
        return PINV.bind(a, rcond=rcond)
    a = to_tensor(a, "a matrix for pinv")
    if a.ndim < 2:
        raise error("shape", f"pinv needs a matrix (or a stack of them in the leading axes), got a tensor of "
                             f"shape {fmt_shape(a.shape)}")
    return _linalg("pinv", np.linalg.pinv, a, rcond)


def _pinv_jvp(ns, tangents, ans, args, kw):
    """Golub and Pereyra (1973), 4.12, as JAX: -p dA p + (I - p a) dA^T p^T p + p p^T dA^T (I - a p)."""
    a, da, p = args[0], tangents[0], ans
    m, n = shape_of(a)[-2:]
    dat = _mT(da)
    first = O.neg(O.matmul(p, O.matmul(da, p)))
    second = O.matmul(O.sub(np.eye(n), O.matmul(p, a)), O.matmul(dat, O.matmul(_mT(p), p)))
    third = O.matmul(O.matmul(p, _mT(p)), O.matmul(dat, O.sub(np.eye(m), O.matmul(a, p))))
    return O.add(O.add(first, second), third)


QR_Q = _define("QrQ", qr_q, _qr_q_jvp)
QR_R = _define("QrR", qr_r, _qr_r_jvp)
PINV = _define("Pinv", pinv, _pinv_jvp)
