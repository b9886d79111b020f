"""Gamma draws differentiated in their shape parameter a: the implicit reparameterisation (JAX's).

A draw x of Gamma(a, 1) stands for F^-1(u; a) at its quantile u = P(a, x). The reference here is
independent of dg's series and fractions: P by its series of positive terms (no cancellation, so
accurate wherever it is summed far enough), x(a') = F^-1(u; a') by Newton's method, and central
differences of x(a') for the first and second derivatives."""

import math

import numpy as np
import pytest

import dsl
from dsl.errors import DgError


def lower_gamma(a, x):
    """P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n)), in float64."""
    term, total, n = 1.0, 1.0, 0
    while term > 1e-18 * total:
        n += 1
        term *= x / (a + n)
        total += term
    return math.exp(a * math.log(x) - x - math.lgamma(a + 1.0)) * total


def quantile(a, u, x):
    """F^-1(u; a), by Newton's method from x."""
    for _ in range(100):
        step = (lower_gamma(a, x) - u) / math.exp((a - 1.0) * math.log(x) - x - math.lgamma(a))
        x = max(x - step, x / 4.0)
        if abs(step) <= 1e-15 * x:
            break
    return x


def reference(a, x, h):
    """(dx/da, d^2x/da^2) of the draw x at a, its quantile held, by central differences."""
    u = lower_gamma(a, x)
    xs = [quantile(a + k * h, u, x) for k in (-2, -1, 1, 2)]
    first = (xs[0] - 8.0 * xs[1] + 8.0 * xs[2] - xs[3]) / (12.0 * h)
    second = (xs[1] - 2.0 * x + xs[2]) / (h * h)
    return first, second


def run(src):
    """An interpreter that has run src."""
    interp = dsl.Interpreter(seed=0)
    interp.run(src, "t.dg")
    return interp


@pytest.mark.parametrize("a", [0.4, 1.0, 2.5, 9.0, 60.0])
def test_a_gamma_draws_derivatives_in_a_are_its_quantiles(a):
    # six draws from each a: below and above x = a and x = 1, where the series and the fraction take over
    interp = run(f"let k = rng(11)\nlet a = {a}\nlet x = gamma(a, shape=(6,), key=k)\n"
                 "let d1 = jacobian(fn(b) => gamma(b, shape=(6,), key=k))(a)\n"
                 "let d2 = jacobian(jacobian(fn(b) => gamma(b, shape=(6,), key=k)))(a)")
    for x, d1, d2 in zip(interp.get("x"), interp.get("d1"), interp.get("d2")):
        first, second = reference(a, float(x), 1e-3 * a)
        assert d1 == pytest.approx(first, rel=1e-8)
        assert d2 == pytest.approx(second, rel=1e-4, abs=1e-6)


def test_gamma_draws_give_the_derivative_of_their_mean():
    # E[gamma(a, s)] = a s: the derivative of many draws' mean, 1 in a and a in s; beta's mean is
    # a / (a + b), dirichlet's alpha / sum(alpha)
    interp = run("let k = rng(5)\n"
                 "let g = grad(fn(a, s) => mean(gamma(a, s, (40000,), key=k)), argnums=(0, 1))(0.3, 2.0)\n"
                 "let gb = grad(fn(a) => mean(beta(a, 2.0, (40000,), key=k)))(1.5)\n"
                 "let gd = grad(fn(al) => mean(dirichlet(al, (40000,), key=k)[:, 0]))(tensor([1.0, 2.0, 3.0]))")
    assert interp.get("g")[0] == pytest.approx(2.0, rel=0.03)
    assert interp.get("g")[1] == pytest.approx(0.3, rel=0.03)
    assert interp.get("gb") == pytest.approx(2.0 / 3.5 ** 2, rel=0.03)
    assert np.allclose(interp.get("gd"), [5.0 / 36.0, -1.0 / 36.0, -1.0 / 36.0], atol=0.01)


def test_gamma_draws_derivatives_under_jit_vmap_and_forward_mode():
    interp = run("let k = rng(2)\nfn f(a) { return sum(gamma(a, shape=(3,), key=k) * tensor([1.0, -2.0, 0.5])) }\n"
                 "let g = grad(f)(2.5)\nlet h = hessian(f)(2.5)\nlet t = jvp(f, (2.5,), (1.0,))[1]\n"
                 "let jg = jit(grad(f))(2.5)\nlet gj = grad(jit(f))(2.5)\nlet jh = jit(hessian(f))(2.5)\n"
                 "let v = vmap(grad(f))(tensor([2.5, 0.7]))\nlet one = grad(f)(0.7)")
    g, h = interp.get("g"), interp.get("h")
    for name in ("t", "jg", "gj"):
        assert interp.get(name) == pytest.approx(g, rel=1e-13)
    assert interp.get("jh") == pytest.approx(h, rel=1e-12)
    assert np.allclose(interp.get("v"), [g, interp.get("one")], rtol=1e-13, atol=0)


def test_a_third_derivative_in_a_is_a_dg_error():
    with pytest.raises(DgError) as info:
        run("let k = rng(1)\nlet g = grad(grad(grad(fn(a) => sum(gamma(a, shape=(3,), key=k)))))(2.0)")
    assert info.value.kind == "grad" and "second order" in info.value.message


def test_gamma_draws_derivatives_agree_with_jax():
    jax = pytest.importorskip("jax")
    from dsl.core.ops.gamma_draws import gamma_draw_grad
    rng = np.random.default_rng(3)
    with jax.enable_x64(True):
        for a in (0.05, 0.7, 3.0, 40.0, 900.0):
            x = rng.gamma(a, size=400)
            x = x[x > 0]
            want = np.asarray(jax.lax.random_gamma_grad(jax.numpy.full(x.shape, a), x))
            # XLA's stops at 2,000 terms of its fraction: 1e-11 relative apart at the most
            assert np.allclose(gamma_draw_grad(np.full(x.shape, a), x), want, rtol=1e-11, atol=0)


def test_gamma_draws_derivatives_on_xla_are_numpys():
    pytest.importorskip("jax")
    src = ("let k = rng(4)\nfn f(a) { return sum(gamma(a, shape=(4,), key=k) * tensor([1.0, -2.0, 0.5, 3.0])) }\n"
           "let g = jit(grad(f), backend=\"xla\")(1.7)\nlet h = jit(hessian(f), backend=\"xla\")(1.7)\n"
           "let g0 = grad(f)(1.7)\nlet h0 = hessian(f)(1.7)")
    interp = run(src)
    assert interp.get("g") == pytest.approx(interp.get("g0"), rel=1e-12)
    assert interp.get("h") == pytest.approx(interp.get("h0"), rel=1e-12)
