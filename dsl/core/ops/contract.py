"""A matrix product with reference 6.7's zero, for derivative rules: the cotangent of a @ b is a
sum of products g_ij * b_kj, and where g_ij is 0 and b_kj infinite (a row of data the program
masked out with `where`), that product is 0, not the NaN numpy's sum makes of it. The rule
computes r = a @ b first; `nz_matmul(a, b, r)` is r wherever r is finite (nearly always, and then
nothing more is done) and otherwise the product again, each term with a zero factor left out.
"""

import numpy as np

from .. import tape
from ..tape import Box
from .finite import all_finite


def nz_matmul(a, b, r, span=None):
    """r = a @ b, but with every term of each sum that has a zero factor taken as 0 where r is
    not finite (NzMatMul: its derivatives are a @ b's, taken with this zero too)."""
    if type(r) is np.ndarray and type(a) is np.ndarray and type(b) is np.ndarray:    # a rule's plain values
        # r stands where it is finite, or where its factors are (an overflow is the product's own):
        # the smaller of the two looks first (a weight's gradient x^T g is larger than x and g)
        if r.size <= a.size + b.size:
            stands = all_finite(r) or _factors_finite(a, b)
        else:
            stands = _factors_finite(a, b) or all_finite(r)
        return r if stands else nz_product(a, b)
    if type(a) is Box or type(b) is Box or type(r) is Box:
        if _finite(tape.peek(r)) and not (tape.staged(a) or tape.staged(b) or tape.staged(r)):
            return r        # as nz (elementwise.py): r itself, exact at this point, to every order
        return tape.record("NzMatMul", (a, b, r), None, span)
    if _finite(r):
        return r
    return nz_product(np.asarray(a), np.asarray(b))


def _factors_finite(a, b):
    """Whether both factors are finite everywhere (then no term of their product is 0 * inf)."""
    return all_finite(a) and all_finite(b)


def _finite(r):
    """Whether a product's value (a tensor, or a number from two vectors) is finite everywhere."""
    return all_finite(r) if type(r) is np.ndarray else bool(np.isfinite(r))


def nz_product(a, b):
    """a @ b (numpy's shapes: vectors promoted, leading axes broadcast), each term of a sum that
    has a zero factor taken as 0: the finite terms by one product, then each term with an
    infinite or NaN factor added where the other factor is not 0."""
    vector_a, vector_b = a.ndim == 1, b.ndim == 1
    a2 = a[None, :] if vector_a else a
    b2 = b[:, None] if vector_b else b
    lead = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    a2 = np.broadcast_to(a2, lead + a2.shape[-2:])
    b2 = np.broadcast_to(b2, lead + b2.shape[-2:])
    fa, fb = np.isfinite(a2), np.isfinite(b2)
    out = np.matmul(np.where(fa, a2, 0.0), np.where(fb, b2, 0.0))
    with np.errstate(invalid="ignore", over="ignore"):
        for *batch, i, k in np.argwhere(~fa):       # a non-finite a_ik: its row of terms
            row = b2[(*batch, k)]
            out[(*batch, i)] += np.where(row != 0, a2[(*batch, i, k)] * row, 0.0)
        for *batch, k, j in np.argwhere(~fb):       # a non-finite b_kj beside a finite a_ik
            column = a2[(*batch, slice(None), k)]
            keep = (column != 0) & fa[(*batch, slice(None), k)]
            out[(*batch, slice(None), j)] += np.where(keep, column * b2[(*batch, k, j)], 0.0)
    if vector_a:
        out = out[..., 0, :]
    if vector_b:
        out = out[..., 0]
    return out if out.ndim else float(out)
