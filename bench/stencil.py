"""Gauss-Seidel sweeps written entry by entry (bench/programs/stencil.dg): two sweeps over a 48 x 48
grid, u[i, j] set from its neighbours in loops over i and j. jit of the sweeps and jit(grad) of a
loss of them, against jax.jit of the same loops (lax.fori_loop over i and j writing u.at[i, j]),
later calls and the first call."""

import numpy as np

from .engines import MISSING_JAX, dg_program, jax_or_none
from .loops import _first_call
from .report import make_row
from .timing import measure, median

FULL = {"n": 48, "reps": 7, "firsts": 3}
SMOKE = {"n": 6, "reps": 2, "firsts": 1}
A = 0.1


def _jax_fns(jax, n):
    """(relax, loss) in jax.numpy, the loops as lax.fori_loop writing each entry."""
    jnp, fori = jax.numpy, jax.lax.fori_loop

    def relax(a, u):
        """Two sweeps."""
        def entry(j, state):
            u, i = state
            v = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) + a
            return u.at[i, j].set(v), i

        def row(i, u):
            return fori(1, n - 1, entry, (u, i))[0]
        return fori(0, 2, lambda s, u: fori(1, n - 1, row, u), u)
    return relax, lambda a, u: jnp.sum(relax(a, u) ** 2)


def _check(got, want, what):
    """Raise where dg's result is not the reference's."""
    if not np.allclose(got, want, rtol=1e-10, atol=1e-12):
        raise AssertionError(f"{what}: dg gave {got}, the reference {want}")


def run(smoke):
    """The jit, jit(grad) and first-call rows."""
    cfg = SMOKE if smoke else FULL
    n = cfg["n"]
    u = np.sin(np.arange(n * n, dtype=float)).reshape(n, n)
    interp = dg_program("stencil")
    jit, grad = interp.lookup("jit"), interp.lookup("grad")
    relax, loss = interp.lookup("relax"), interp.lookup("loss")
    jrelax, make = jit(relax), (lambda: jit(grad(loss, (0, 1))))     # noqa: E731
    jgrad = make()
    _check(jrelax(A, u, 2), relax(A, u, 2), "jit(relax)")
    eager = grad(loss, (0, 1))(A, u)
    for got, want in zip(jgrad(A, u), eager):
        _check(got, want, "jit(grad(loss))")
    fns = {"dg": lambda: jrelax(A, u, 2), "dg grad": lambda: jgrad(A, u)}
    notes = []
    jax = jax_or_none()
    if jax is not None:
        jr, jl = _jax_fns(jax, n)
        jr, jg = jax.jit(jr), jax.jit(jax.grad(jl, (0, 1)))
        _check(np.asarray(jr(A, u)), jrelax(A, u, 2), "jax relax")
        _check(np.asarray(jg(A, u)[1]), eager[1], "jax grad")
        fns["jax"] = lambda: jax.block_until_ready(jr(A, u))
        fns["jax grad"] = lambda: jax.block_until_ready(jg(A, u))
    else:
        notes.append(MISSING_JAX)
    ms = {name: median(ts) * 1e3 for name, ts in measure(fns, cfg["reps"]).items()}
    first = _first_call(make, lambda f: f(A, u), cfg["firsts"]) * 1e3
    what = f"2 Gauss-Seidel sweeps over a {n} x {n} grid, u[i, j] written in loops over i and j"
    rows = []
    for label, dg, ref in (("stencil sweeps, jit", "dg", "jax"),
                           ("stencil sweeps under grad, later calls", "dg grad", "jax grad")):
        refs = {"jax.jit": ms[ref]} if ref in ms else {}
        rows.append(make_row(label, "ms/call", ms[dg], refs, ms[dg] / ms[ref] if ref in ms else None,
                             "jax.jit" if ref in ms else None, "-", None, "; ".join([what] + notes)))
    rows.append(make_row("stencil sweeps under grad, first call", "ms", first, {}, None, None, "-", None,
                         "staging, compiling and running jit(grad) once"))
    return rows
