"""gammainc and gammaincc, the regularized incomplete gamma functions: closed forms, scipy's edge
values, derivatives in x (every order) and in a (once; the second is a grad error) against
closed forms, central differences and JAX, and the same numbers batched and jitted on both
backends."""

import math

import numpy as np
import pytest

import dsl
from dsl.errors import DgError
from gradcheck import check, jax_or_skip

RNG = np.random.default_rng(5)
A = np.exp(RNG.uniform(np.log(0.05), np.log(300.0), 40))
X = A * np.exp(RNG.normal(0.0, 0.6, 40))


def interp(backend="numpy", **values):
    i = dsl.Interpreter(seed=0, backend=backend)
    for k, v in values.items():
        i.set(k, v)
    return i


def test_closed_forms():
    x = np.array([1e-8, 0.3, 1.0, 2.0, 7.5, 40.0, 700.0])
    i = interp(x=x)
    np.testing.assert_allclose(i.eval("gammainc(1.0, x)"), -np.expm1(-x), rtol=5e-15)
    np.testing.assert_allclose(i.eval("gammaincc(1.0, x)"), np.exp(-x), rtol=1e-13, atol=0)
    np.testing.assert_allclose(i.eval("gammainc(0.5, x)"), [math.erf(math.sqrt(v)) for v in x], rtol=1e-14)
    np.testing.assert_allclose(i.eval("gammaincc(0.5, x)"), [math.erfc(math.sqrt(v)) for v in x], rtol=1e-13)
    # a whole a: a Poisson count of mean x is below a with probability Q(a, x)
    for n in (1, 3, 8):
        want = [math.exp(-v) * sum(v ** k / math.factorial(k) for k in range(n)) for v in x[:6]]
        np.testing.assert_allclose(i.eval(f"gammaincc({n}.0, x)")[:6], want, rtol=1e-13)
    # a chi-square with 2 degrees of freedom: P(1, x / 2)
    assert i.eval("gammainc(2.0 / 2.0, 3.0 / 2.0)") == pytest.approx(1.0 - math.exp(-1.5), rel=1e-15)


def test_scipys_edge_values():
    i = interp()
    for src, want in (("gammainc(2.0, 0.0)", 0.0), ("gammaincc(2.0, 0.0)", 1.0), ("gammainc(2.0, inf)", 1.0),
                      ("gammaincc(2.0, inf)", 0.0), ("gammainc(0.0, 1.0)", 1.0), ("gammaincc(0.0, 1.0)", 0.0),
                      ("gammainc(inf, 1.0)", 0.0)):
        assert i.eval(src) == want, src
    for src in ("gammainc(-1.0, 2.0)", "gammainc(2.0, -1.0)", "gammainc(0.0, 0.0)", "gammaincc(nan, 1.0)"):
        assert math.isnan(i.eval(src)), src
    # a huge a: the series cannot converge near x = a (nan, not a wrong number), but does away from it
    assert math.isnan(i.eval("gammainc(1e9, 1e9)")) and i.eval("gammainc(1e9, 0.9e9)") == 0.0
    assert i.eval("gammainc(1e6, 1e6 + 3000.0)") == pytest.approx(0.9986382593537825, rel=1e-12)


def test_values_against_scipy():
    special = pytest.importorskip("scipy.special")
    i = interp(a=A, x=X)
    # relative to the smaller of P and Q, each where it is the one computed directly
    got_p, got_q = i.eval("gammainc(a, x)"), i.eval("gammaincc(a, x)")
    np.testing.assert_allclose(got_p, special.gammainc(A, X), rtol=1e-12, atol=0)
    np.testing.assert_allclose(got_q, special.gammaincc(A, X), rtol=1e-12, atol=0)
    np.testing.assert_allclose(got_p + got_q, 1.0, rtol=0, atol=4e-16)


def test_derivatives():
    i = interp(a=A, x=X)
    density = np.exp((A - 1.0) * np.log(X) - X - np.array([math.lgamma(v) for v in A]))
    np.testing.assert_allclose(i.eval("grad(fn(x) => sum(gammainc(a, x)))(x)"), density, rtol=1e-11)
    np.testing.assert_allclose(i.eval("grad(fn(x) => sum(gammaincc(a, x)))(x)"), -density, rtol=1e-11)
    for a, x in ((0.3, 0.2), (2.5, 1.0), (4.0, 9.0), (40.0, 35.0), (40.0, 55.0)):
        check("gammainc(a, x) + 2.0 * gammaincc(a, 1.3 * x)", rtol=1e-6, atol=1e-9, a=a, x=x)
        # the mixed second derivative both ways, and the second in x
        ax = i.eval(f"grad(grad(gammainc), argnums=1)({a}, {x})")
        assert ax == pytest.approx(i.eval(f"grad(grad(gammainc, argnums=1))({a}, {x})"), rel=1e-12)
        h = 1e-5 * x
        second = (i.eval(f"grad(gammainc, argnums=1)({a}, {x + h})") - i.eval(f"grad(gammainc, argnums=1)({a}, {x - h})")) / (2 * h)
        assert i.eval(f"grad(grad(gammainc, argnums=1), argnums=1)({a}, {x})") == pytest.approx(second, rel=1e-6, abs=1e-12)
    with pytest.raises(DgError) as err:
        i.eval("grad(grad(gammainc))(2.0, 3.0)")
    assert err.value.kind == "grad" and "second derivative in a is not computed" in err.value.message


def test_derivatives_against_jax():
    jax = jax_or_skip()
    import jax.scipy.special as jsp
    a, x = A[A < 100.0], X[A < 100.0]
    i = interp(a=a, x=x)
    da, dx = jax.vmap(jax.grad(jsp.gammainc, argnums=(0, 1)))(a, x)
    np.testing.assert_allclose(i.eval("grad(fn(a) => sum(gammainc(a, x)))(a)"), da, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(i.eval("grad(fn(x) => sum(gammainc(a, x)))(x)"), dx, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(i.eval("grad(fn(a) => sum(gammaincc(a, x)))(a)"),
                               jax.vmap(jax.grad(jsp.gammaincc))(a, x), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_batched_and_jitted_give_the_same_numbers(backend, capfd):
    if backend == "xla":
        jax_or_skip()
    i = interp(backend, a=A.reshape(4, 10), x=X.reshape(4, 10))
    i.run("fn f(a, x) { return (gammainc(a, x), gammaincc(a, x), grad(fn(s) => sum(gammainc(s, x)))(a)) }\n"
          "let eager = f(a, x)\nlet mapped = vmap(f, explain=true)(a, x)\nlet jitted = jit(f)(a, x)\n"
          "let again = jit(f)(a * 1.1, x)")
    assert "once per example" not in capfd.readouterr().err
    eager = i.get("eager")
    for got in (i.get("mapped"), i.get("jitted")):
        for u, v in zip(got, eager):
            np.testing.assert_array_equal(u, v)
    np.testing.assert_array_equal(i.get("again")[0], i.eval("gammainc(a * 1.1, x)"))


def test_float32_stays_float32():
    i = interp()
    i.run('let h = astype([0.5, 2.0, 9.0], "float32")')
    for src in ("gammainc(h, h)", "gammaincc(2.0, h)", "grad(fn(a) => sum(gammainc(a, 2.0)))(h)",
                "grad(fn(x) => sum(gammaincc(3.0, x)))(h)"):
        assert i.eval(f"dtype({src})") == "float32", src
    np.testing.assert_allclose(i.eval("gammainc(h, h)"), i.eval('gammainc(astype(h, "float64"), astype(h, "float64"))'),
                               rtol=1e-7)
