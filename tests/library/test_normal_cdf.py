"""The standard normal distribution's ndtr, log_ndtr and ndtri: identities that hold exactly,
both tails to their last digits against a 60-digit reference, derivatives of every order against
the density, and scipy's and JAX's values, batched and jitted on both backends."""

import math

import numpy as np
import pytest

import dsl
from gradcheck import check, jax_or_skip

X = np.concatenate([np.linspace(-60.0, 36.0, 961), [-1e3, -37.0, -36.99, -37.01, 0.0, 1e-300, -1e-300]])


def interp(backend="numpy", **values):
    i = dsl.Interpreter(seed=0, backend=backend)
    for k, v in values.items():
        i.set(k, v)
    return i


def density(x):
    return np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def tail_close(got, want, x):
    """Within the rounding of x / sqrt(2) (or of x * x), which erfc and exp carry into the tails
    times x^2: |got - want| <= 3e-16 (4 + x^2) |want| (scipy's own ndtr and log_ndtr are within 2e-13
    of the exact values at x = -35)."""
    got, want, x = np.asarray(got), np.asarray(want), np.broadcast_to(x, np.shape(want))
    normal = np.abs(want) > 1e-300        # subnormal floats hold fewer digits
    assert np.all(np.abs(got - want)[~normal] <= 1e-300)
    ratio = np.abs(got - want)[normal] / (np.abs(want[normal]) * (4.0 + x[normal] ** 2))
    assert np.all(ratio <= 3e-16), (x[normal][np.argmax(ratio)], np.max(ratio))


def test_identities():
    i = interp(x=X)
    assert i.eval("ndtr(0.0)") == 0.5 and i.eval("ndtri(0.5)") == 0.0
    assert i.eval("ndtri(0.0)") == -math.inf and i.eval("ndtri(1.0)") == math.inf
    assert math.isnan(i.eval("ndtri(1.5)")) and math.isnan(i.eval("ndtr(nan)"))
    low, high = i.eval("ndtr(x)"), i.eval("ndtr(-x)")
    middle = np.abs(X) < 8.0
    np.testing.assert_allclose((low + high)[middle], 1.0, rtol=0, atol=2e-16)
    # (above 0, ndtr is 1 less a small mass, whose digits ndtr cannot keep)
    np.testing.assert_allclose(i.eval("ndtri(ndtr(x))")[(X > -37.0) & (X < 0.5)], X[(X > -37.0) & (X < 0.5)],
                               rtol=1e-13, atol=1e-14)
    # ln of the CDF where it does not underflow or round to 1; the lower tail's series beyond
    inside = (X > -30.0) & (X < 0.0)
    np.testing.assert_allclose(i.eval("log_ndtr(x)")[inside], np.log(low[inside]), rtol=1e-15)
    assert i.eval("log_ndtr(-1e5)") == pytest.approx(-5e9 - math.log(1e5) - 0.5 * math.log(2.0 * math.pi), rel=1e-15)
    assert i.eval("log_ndtr(inf)") == 0.0 and i.eval("log_ndtr(-inf)") == -math.inf


def test_both_tails_against_sixty_digits():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 60
    i = interp(x=X)
    want = np.array([float(mp.log1p(-mp.ncdf(-v)) if v > 0 else mp.log(mp.ncdf(v))) for v in X])
    got = i.eval("log_ndtr(x)")
    tail_close(got, want, X)
    cdf = np.array([float(mp.ncdf(v)) for v in X])
    tail_close(i.eval("ndtr(x)"), cdf, X)
    p = np.concatenate([np.logspace(-300, -1, 120), np.linspace(0.05, 0.95, 19)])
    i.set("p", p)
    # the quantile's CDF, to 60 digits, is p within the rounding a quantile x carries (x^2 times it)
    q = i.eval("ndtri(p)")
    for v, x in zip(p, q):
        assert abs(mp.ncdf(mp.mpf(float(x))) - v) <= 3e-16 * (4.0 + x * x) * v, (v, x)


def test_derivatives_are_the_density_and_the_inverse_mills_ratio():
    i = interp(x=X[np.abs(X) < 30.0])
    xs = X[np.abs(X) < 30.0]
    tail_close(i.eval("grad(fn(x) => sum(ndtr(x)))(x)"), density(xs), xs)
    ratio = i.eval("grad(fn(x) => sum(log_ndtr(x)))(x)")
    np.testing.assert_allclose(ratio[xs < -5.0], -xs[xs < -5.0], rtol=0.05)     # the ratio's asymptote
    np.testing.assert_allclose(ratio[np.abs(xs) < 5.0], density(xs[np.abs(xs) < 5.0]) /
                               i.eval("ndtr(x)")[np.abs(xs) < 5.0], rtol=1e-13)
    # far below, where ndtr underflows: the series' derivative, smooth across x = -37
    left, right = i.eval("grad(log_ndtr)(-37.0 - 1e-9)"), i.eval("grad(log_ndtr)(-37.0 + 1e-9)")
    assert left - right == pytest.approx(2e-9, rel=1e-3)        # the ratio's slope there is about -1
    assert i.eval("grad(log_ndtr)(-37.0)") == pytest.approx(37.026987686127010, rel=1e-14)
    q = np.array([1e-200, 1e-5, 0.3, 0.9])
    i.set("q", q)
    dq = i.eval("grad(fn(q) => sum(ndtri(q)))(q)")
    np.testing.assert_allclose(dq, 1.0 / density(i.eval("ndtri(q)")), rtol=1e-12)
    for expr, args in (("ndtr(a) * log_ndtr(a)", {"a": np.array([-3.0, -0.2, 0.4, 2.5])}),
                       ("ndtri(a)", {"a": np.array([0.01, 0.3, 0.8])})):
        check(expr, rtol=1e-6, atol=1e-8, **args)
    assert i.eval("grad(grad(log_ndtr))(-50.0)") == pytest.approx(-0.9996009568131963, rel=1e-12)


def test_values_and_gradients_are_scipys_and_jaxs():
    jax = jax_or_skip()
    import jax.scipy.special as jsp
    special = pytest.importorskip("scipy.special")
    xs = np.linspace(-19.0, 8.0, 55)       # JAX's log_ndtr takes a three-term series below -20
    i = interp(x=xs)
    tail_close(i.eval("ndtr(x)"), special.ndtr(xs), xs)
    # above 0 both take ln of ndtr, 1 less a small mass, and lose its digits: log1p of the tail
    below = xs <= 0.0
    want = np.where(below, special.log_ndtr(xs), np.log1p(-special.ndtr(-xs)))
    tail_close(i.eval("log_ndtr(x)"), want, xs)
    tail_close(i.eval("log_ndtr(x)")[below], jsp.log_ndtr(xs[below]), xs[below])
    np.testing.assert_allclose(i.eval("grad(fn(x) => sum(log_ndtr(x) + ndtr(x)))(x)"),
                               jax.grad(lambda v: (jsp.log_ndtr(v) + jsp.ndtr(v)).sum())(xs), rtol=1e-12)
    p = np.linspace(0.001, 0.999, 37)
    i.set("p", p)
    np.testing.assert_allclose(i.eval("ndtri(p)"), special.ndtri(p), rtol=1e-13)
    np.testing.assert_allclose(i.eval("grad(fn(p) => sum(ndtri(p)))(p)"),
                               jax.grad(lambda v: jsp.ndtri(v).sum())(p), rtol=1e-11)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_batched_and_jitted(backend, capfd):
    if backend == "xla":
        jax_or_skip()
    xs = np.linspace(-45.0, 10.0, 24).reshape(4, 6)
    i = interp(backend, x=xs)
    i.run("fn f(r) { return (ndtr(r), log_ndtr(r), ndtri(ndtr(r) * 0.5 + 0.25)) }\n"
          "let mapped = vmap(f, explain=true)(x)\nlet jitted = jit(f)(x)\n"
          "let g = jit(grad(fn(r) => sum(log_ndtr(r))))(x)\nlet ge = grad(fn(r) => sum(log_ndtr(r)))(x)")
    assert "once per example" not in capfd.readouterr().err
    eager = i.eval("f(x)")
    for got in (i.get("mapped"), i.get("jitted")):
        for a, b in zip(got, eager):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)
    np.testing.assert_allclose(i.get("g"), i.get("ge"), rtol=1e-12)
