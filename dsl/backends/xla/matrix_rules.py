"""How matrix products and linear algebra are computed on XLA: lowering rules in the form of
rules.py, which merges them. XLA's factorisations give NaN where numpy's refuse a matrix (not
positive definite, singular): those rules require a finite result, so that such a call runs on the
numpy backend, which says what went wrong."""

from ...core.primitives.expm import pade_13, scaled
from ...core.primitives.matrix import is_vector


def finite_or_refused(L, out):
    """A factorisation's result, which must be finite: numpy refuses the matrices that make XLA's
    NaN (not positive definite, singular), and the numpy backend then says so."""
    L.require(L.np.all(L.np.isfinite(out)))
    return out


def _solve(L, a, b, who=None):
    """x with a x = b, b a vector or a matrix as numpy's kernel reads it (matrix.is_vector; JAX's
    solve refuses a stack of vectors)."""
    vector = is_vector(L.np.shape(a), L.np.shape(b))
    x = L.np.linalg.solve(a, b[..., None] if vector else b)
    return finite_or_refused(L, x[..., 0] if vector else x)


def _triangular_solve(L, a, b, lower=False):
    """x with tri(a) x = b, b a vector or a matrix as numpy's kernel reads it (matrix.is_vector): XLA's
    triangular solve on batches broadcast alike. (jax.scipy's solve_triangular reads such a b its
    own way, and warns of it.)"""
    jnp = L.np
    vector = is_vector(jnp.shape(a), jnp.shape(b))
    bm = b[..., None] if vector else b
    batch = jnp.broadcast_shapes(jnp.shape(a)[:-2], jnp.shape(bm)[:-2])
    kind = jnp.result_type(a, bm)
    a = jnp.broadcast_to(a, batch + jnp.shape(a)[-2:]).astype(kind)
    bm = jnp.broadcast_to(bm, batch + jnp.shape(bm)[-2:]).astype(kind)
    x = L.lax.linalg.triangular_solve(a, bm, left_side=True, lower=lower)
    return finite_or_refused(L, x[..., 0] if vector else x)


def _expm(L, a):
    """e^a as the numpy kernel computes it (dsl/core/primitives/expm.py): the [13/13] Pade approximant,
    each matrix scaled by its own power of two and squared back in a while loop (jax.scipy's expm picks
    lower orders for small norms and stops at 16 squarings: other last bits, and NaN past them)."""
    jnp = L.np
    n = jnp.shape(a)[-1]
    if n == 0:
        return a
    x, s = scaled(a, jnp)

    def mm(p, q):
        return jnp.matmul(p, q, precision=L.highest)
    eye = jnp.eye(n, dtype=a.dtype)
    u, v = pade_13(x, eye, mm)
    steps = s.astype(jnp.int32)

    def square(carry):
        k, r = carry
        return k + 1, jnp.where((k < steps)[..., None, None], mm(r, r), r)
    r = eye + 2.0 * jnp.linalg.solve(v - u, u)        # (v - u)^-1 (v + u), as the kernel writes it
    return L.lax.while_loop(lambda c: c[0] < jnp.max(steps), square, (0, r))[1]


MATRIX = {
    "MatMul": lambda L, a, b: L.np.matmul(a, b, precision=L.highest),
    "Einsum": lambda L, *xs, spec=None: L.np.einsum(spec, *xs, precision=L.highest),
    "Cholesky": lambda L, a: finite_or_refused(L, L.np.linalg.cholesky(a)),
    "Solve": _solve,
    "Inv": lambda L, a, who=None: finite_or_refused(L, L.np.linalg.inv(a)),
    "TriangularSolve": _triangular_solve,
    "Det": lambda L, a: L.np.linalg.det(a),
    "DetSign": lambda L, a: L.np.linalg.slogdet(a)[0],
    "LogAbsDet": lambda L, a: L.np.linalg.slogdet(a)[1],
    # values only: unique, in the order numpy gives them (no signs to choose)
    "EighValues": lambda L, a: L.np.linalg.eigvalsh(a),
    "SvdValues": lambda L, a: L.np.linalg.svd(a, compute_uv=False),
    "Pinv": lambda L, a, rcond=1e-15: L.np.linalg.pinv(a, rtol=rcond),
    "Expm": _expm,
}
