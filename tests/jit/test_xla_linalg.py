"""Linear algebra on XLA: the factorisations whose vectors' signs are LAPACK's choice run numpy's
kernel on the host (dsl/backends/xla/rules.py, ON_HOST), so that the programs using them, and the
derivatives of eigvalsh, the singular values and spectral norms, stay on XLA with numpy's numbers;
triangular_solve reads a right-hand side of one axis fewer than its matrix as numpy's kernel does."""

import warnings

import numpy as np
import pytest

import dsl

pytest.importorskip("jax")
RNG = np.random.default_rng(17)


def _both(src, names, **values):
    """{backend: the values of `names`} after src ran with jit compiling for numpy, then for XLA, and
    the XLA interpreter."""
    out = {}
    for backend in ("numpy", "xla"):
        interp = dsl.Interpreter(backend=backend)
        for k, v in values.items():
            interp.set(k, v)
        interp.run(src)
        out[backend] = [interp.lookup(n) for n in names]
    return out, interp


def _on_xla(jitted):
    """Every recording of a jitted function ran on XLA."""
    for entries in jitted.call.entries.values():
        assert all(e.xla.why is None for e in entries)


def test_spectral_derivatives_and_vectors_run_on_xla_with_numpys_numbers():
    m = RNG.normal(size=(5, 4))
    s = m @ m.T + np.eye(5)
    stack = np.stack([s, 2.0 * s + np.eye(5)])
    src = ("let g = jit(grad(fn(a) => sum(eigvalsh(a) ** 2) + norm(a, ord=2) + norm(a, ord=\"nuc\") + "
           "sum(svd(a, compute_uv=false) ** 3)))\n"
           "let f = jit(fn(a) => (eigh(a)[1], svd(a)[0], svd(a)[2], qr(a)[0], qr(a)[1]))\n"
           "let v = jit(vmap(grad(fn(a) => sum(eigh(a)[1][:, 0] ** 4) + sum(qr(a)[1] ** 2))))\n"
           # the first call of each stages on numpy; the second runs the backend's code
           "let r = (g(s), g(s), f(s), f(s), v(st), v(st))")
    got, interp = _both(src, ["r"], s=s, st=stack)
    want, have = got["numpy"][0], got["xla"][0]
    np.testing.assert_allclose(have[1], want[1], rtol=1e-12, atol=1e-13)
    for a, b in zip(want[3], have[3]):      # numpy's kernel on the host: its signs, its bits
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(have[5], want[5], rtol=1e-12, atol=1e-13)
    for name in ("g", "f", "v"):
        _on_xla(interp.lookup(name))


def test_triangular_solve_of_a_batch_of_vectors_on_xla_is_numpys_without_jaxs_warning():
    a = np.tril(RNG.normal(size=(3, 4, 4))) + 4.0 * np.eye(4)
    b = RNG.normal(size=(3, 4))
    src = ("let f = jit(vmap(fn(a, b) => triangular_solve(a, b, lower=true)))\n"
           "let h = jit(fn(a, b) => triangular_solve(a, b, lower=true))\n"
           "let r = (f(a, b), f(a, b), h(a, b), h(a, b), h(a, b[0]), h(a, b[0]), h(a[0], transpose(b)), "
           "h(a[0], transpose(b)))")
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # jax.scipy's solve_triangular warned of a batch of vectors
        got, interp = _both(src, ["r"], a=a, b=b)
    for w, x in zip(got["numpy"][0], got["xla"][0]):
        np.testing.assert_allclose(x, w, rtol=1e-12, atol=1e-13)
    want = np.stack([np.linalg.solve(a[i], b[i]) for i in range(3)])
    np.testing.assert_allclose(got["xla"][0][1], want, rtol=1e-12)
    _on_xla(interp.lookup("f"))
    _on_xla(interp.lookup("h"))


def test_solve_of_a_stack_of_vectors_runs_on_xla():
    # JAX's solve refuses b of shape (3, 4) against (3, 4, 4) (numpy 2's reading): the whole
    # program ran on numpy
    a = RNG.normal(size=(3, 4, 4)) + 4.0 * np.eye(4)
    b = RNG.normal(size=(3, 4))
    src = ("let f = jit(fn(a, b) => (solve(a, b), solve(a, b[0]), grad(fn(b) => sum(solve(a, b) ** 3))(b[0])))\n"
           "let r = (f(a, b), f(a, b))")
    got, interp = _both(src, ["r"], a=a, b=b)
    for w, x in zip(got["numpy"][0][1], got["xla"][0][1]):
        np.testing.assert_allclose(x, w, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(got["xla"][0][1][0], np.linalg.solve(a, b[..., None])[..., 0], rtol=1e-12)
    _on_xla(interp.lookup("f"))
