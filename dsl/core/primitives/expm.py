"""The matrix exponential (scipy's and JAX's expm), a primitive whose rules are matrix exponentials
too: its derivative in a direction e is the upper right block of expm([[a, e], [0, a]]) (Higham,
Functions of Matrices, 3.2), and the reverse rule is that derivative at a's transpose, since the
exponential's Frechet derivative L(a, .) has L(a^T, .) for its adjoint. Each rule calls the
primitive itself on a matrix twice the size, so every order of derivative is exact.
"""

import numpy as np

from .. import ops as O
from ..ops.core import shape_of
from ..tape import Box, peek
from .matrix import _leading_batch, _linalg, _mT, _square
from .registry import define

# the [13/13] Pade approximant's coefficients over the first (so that the constant term is 1 and
# LAPACK's division by it exact) and the largest 1-norm for which it meets double precision without
# scaling (Higham, "The scaling and squaring method for the matrix exponential revisited", 2005)
PADE_13 = tuple(b / 64764752532480000.0 for b in (
    64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
    10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0))
THETA_13 = 5.371920351148152


def scaled(a, xp):
    """(a / 2^s, s): each matrix scaled by the power of two that brings its 1-norm within THETA_13
    (`xp`: numpy or jax.numpy). A matrix with a NaN or an infinity is not scaled: its exponential
    is NaN."""
    norm = xp.max(xp.sum(xp.abs(a), axis=-2), axis=-1)
    s = xp.where(xp.isfinite(norm) & (norm > THETA_13), xp.ceil(xp.log2(norm / THETA_13)), 0.0)
    return a * xp.exp2(-s).astype(a.dtype)[..., None, None], s


def pade_13(x, eye, mm):
    """(u, v), the odd and even parts of the [13/13] Pade approximant at x: e^x ~ (v - u)^-1 (v + u)
    (`mm`: the matrix product, numpy's or XLA's)."""
    b = PADE_13
    x2 = mm(x, x)
    x4 = mm(x2, x2)
    x6 = mm(x4, x2)
    u = mm(x, mm(x6, b[13] * x6 + b[11] * x4 + b[9] * x2) + b[7] * x6 + b[5] * x4 + b[3] * x2 + b[1] * eye)
    v = mm(x6, b[12] * x6 + b[10] * x4 + b[8] * x2) + b[6] * x6 + b[4] * x4 + b[2] * x2 + b[0] * eye
    return u, v


def expm(a):
    """e^a of a square matrix (of each matrix of a stack): scaling and squaring with the [13/13]
    Pade approximant, each matrix scaled by its own power of two."""
    if type(a) is Box:
        return EXPM.bind(a)
    a = _square(a, "expm")
    n = a.shape[-1]
    if n == 0:
        return a.copy()
    with np.errstate(divide="ignore", invalid="ignore"):
        x, s = scaled(a, np)
    eye = np.eye(n, dtype=a.dtype)
    u, v = pade_13(x, eye, np.matmul)
    # (v - u)^-1 (v + u) as I + 2 (v - u)^-1 u: the identity exact (a nilpotent a gives I + a to the bit)
    r = eye + 2.0 * _linalg("expm", np.linalg.solve, v - u, u)
    steps = s.astype(int)
    for k in range(int(steps.max())):
        squared = r @ r
        r = squared if steps.ndim == 0 else np.where((k < steps)[..., None, None], squared, r)
    return r


def frechet(a, e):
    """The derivative of expm at a in the direction e (both of a's shape): the upper right block of
    the exponential of [[a, e], [0, a]]. An e larger than a (the cotangent of a large exponential,
    2 e^a for a loss sum(expm(a) ** 2)) would make the block's norm, and so the squarings, its own,
    each losing digits (to 1e-8 where JAX's is within 1e-14): the derivative is linear in e, so it
    is taken of e / 2^k, k bringing e's 1-norm within a's (or 1), and multiplied back, exactly."""
    shape = shape_of(a)
    n = shape[-1]
    one_norm = lambda m: O.max_(O.sum_(O.abs_(m), -2, True), -1, True)     # (each matrix's, kept (.., 1, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = O.pow(2.0, O.maximum(O.ceil(O.log2(O.div(one_norm(e), O.maximum(one_norm(a), 1.0)))), 0.0))
    e = O.div(e, scale)
    zero = np.zeros(shape, dtype=np.result_type(peek(a), peek(e)))
    block = O.cat((O.cat((a, e), axis=-1), O.cat((zero, a), axis=-1)), axis=-2)
    lead = (slice(None),) * (len(shape) - 2)
    return O.mul(O.index(expm(block), lead + (slice(0, n), slice(n, 2 * n))), scale)


EXPM = define("Expm", expm, vjp=(lambda ns, g, ans, a: frechet(_mT(a), g),),
              jvp=lambda ns, tangents, ans, args, kw: frechet(args[0], tangents[0]),
              batch=_leading_batch(expm), can_fail=True)
