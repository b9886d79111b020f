"""expm, the matrix exponential: values against identities that hold exactly and against a
50-digit reference, derivatives of every order against central differences and JAX, batched,
jitted, float32 kept, the XLA backend's numbers within 1e-12 of numpy's, and dg's errors."""

import math

import numpy as np
import pytest

import dsl
from dsl.errors import DgError
from gradcheck import check, check_second, jax_or_skip

RNG = np.random.default_rng(11)


def interp(backend="numpy"):
    return dsl.Interpreter(seed=0, backend=backend)


def expm(a, backend="numpy"):
    i = interp(backend)
    return i.function(i.eval("jit(expm)") if backend == "xla" else i.eval("expm"))(a)


def test_closed_forms():
    d = np.array([0.5, -2.0, 3.0])
    assert np.allclose(expm(np.diag(d)), np.diag(np.exp(d)), rtol=5e-15, atol=0)
    # nilpotent: the series stops (the Pade approximant is exact on it)
    assert np.array_equal(expm(np.array([[0.0, 1.0], [0.0, 0.0]])), [[1.0, 1.0], [0.0, 1.0]])
    # a rotation's generator, past one squaring and past twenty
    for t in (0.3, 7.0, 4.0e6):
        r = expm(np.array([[0.0, -t], [t, 0.0]]))
        assert np.allclose(r, [[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]], rtol=0, atol=5e-15 * max(1, t))
    a = RNG.normal(size=(5, 5)) * 2.0
    # to the rounding of a product of entries near 50
    assert np.allclose(expm(a) @ expm(-a), np.eye(5), rtol=0, atol=1e-11)
    assert np.array_equal(expm(np.zeros((0, 0))), np.zeros((0, 0)))


def test_values_against_fifty_digits():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 50
    for scale in (0.05, 1.0, 10.0, 100.0):
        a = RNG.normal(size=(4, 4)) * scale
        want = np.array(mp.expm(mp.matrix(a.tolist())).tolist(), dtype=float)
        got = expm(a)
        # relative to the result's size: scipy's own expm is within 1e-11 here
        assert np.max(np.abs(got - want)) <= 1e-13 * np.max(np.abs(want)), scale


def test_derivatives_in_a_direction_far_larger_than_the_matrix_against_their_closed_form():
    # the cotangent of sum(expm(a) ** 2), 2 e^a, is about 1e18 for a of norm 25: the block
    # [[a, e], [0, a]] took its norm, and 60 squarings, from e (gradients within 1e-8; JAX's 1e-14)
    m = RNG.uniform(-1.0, 1.0, (3, 3)) + 3.0 * np.eye(3)
    a = m @ m.T
    e = 2.0 * expm(a)
    # a symmetric a = q diag(l) q^T: L(a, e) = q (f * (q^T e q)) q^T with f the divided differences
    # of exp at l (Daleckii and Krein), exact to the rounding of the eigendecomposition
    lam, q = np.linalg.eigh(a)
    diff = lam[:, None] - lam[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(diff == 0.0, np.exp(lam)[:, None], np.expm1(diff) / diff * np.exp(lam)[None, :])
    want = q @ (f * (q.T @ e @ q)) @ q.T
    i = interp()
    i.run("let tangent = fn(a, e) => jvp(expm, (a,), (e,))[1]\n"
          "let cotangent = fn(a, e) => vjp(expm, transpose(a))[1](e)[0]")
    for name in ("tangent", "cotangent"):
        got = i.function(name)(a, e)       # a is symmetric: the reverse rule's L(a^T, e) is L(a, e)
        assert np.max(np.abs(got - want)) <= 1e-13 * np.max(np.abs(want)), name


def test_a_stack_is_each_matrix_scaled_by_its_own_power_of_two():
    stack = RNG.normal(size=(4, 3, 3)) * np.array([0.01, 1.0, 8.0, 60.0])[:, None, None]
    got = expm(stack)
    for k in range(4):
        assert np.array_equal(got[k], expm(stack[k]))


@pytest.mark.parametrize("scale", [0.2, 4.0])
def test_derivatives_against_central_differences(scale):
    a = RNG.normal(size=(3, 3)) * scale
    check("expm(a)", rtol=1e-6, atol=1e-7, a=a)
    check("expm(a)[0] * expm(0.5 * a)", rtol=1e-6, atol=1e-7, a=a)
    check_second("expm(a)", a=a)


def test_value_gradient_and_tangent_against_jax_and_higher_orders_against_closed_forms():
    jax = jax_or_skip()
    import jax.numpy as jnp
    from jax.scipy.linalg import expm as jexpm
    a = RNG.normal(size=(3, 3)) * 1.5
    w = RNG.normal(size=(3, 3))
    i = interp()
    i.set("w", w)
    i.run("fn f(a) { return sum(expm(a) * w) }\nfn g(t) { return sum(expm(t * w)) }")

    def f(m):
        return jnp.sum(jexpm(m) * w)
    assert i.function("f")(a) == pytest.approx(float(f(a)), rel=1e-13)
    assert np.allclose(i.grad("f")(a), jax.grad(f)(a), rtol=1e-12, atol=1e-13)
    # (JAX's own Hessian and third derivative of expm take 20 s to trace: the Hessian against
    # central differences of dg's gradient, the third derivative against its closed form,
    # d^3/dt^3 expm(t w) = w^3 expm(t w))
    hess = i.function(i.eval("jit(hessian(f))"))(a)
    grad_f = i.grad("f")
    for k in range(9):
        e = np.zeros(9)
        e[k] = 1e-6
        e = e.reshape(3, 3)
        column = (grad_f(a + e) - grad_f(a - e)) / 2e-6
        assert np.allclose(hess[:, :, k // 3, k % 3], column, rtol=1e-6, atol=1e-7)
    third = i.function(i.eval("grad(grad(grad(g)))"))(0.7)
    assert third == pytest.approx(float(np.sum(np.linalg.matrix_power(w, 3) @ i.eval("expm(0.7 * w)"))), rel=1e-12)
    tangent = i.function(i.eval("fn(a, t) => jvp(f, (a,), (t,))[1]"))(a, w)
    assert tangent == pytest.approx(float(jax.jvp(f, (a,), (w,))[1]), rel=1e-12)


def test_vmap_of_grad_batches_without_a_loop_and_jit_agrees(capfd):
    stack = RNG.normal(size=(5, 3, 3)) * np.array([0.1, 1.0, 3.0, 10.0, 30.0])[:, None, None]
    i = interp()
    i.run("fn h(a) { return sum(expm(a) * a) }\nlet batched = vmap(grad(h), explain=true)")
    want = np.stack([i.grad("h")(m) for m in stack])
    assert np.allclose(i.function("batched")(stack), want, rtol=1e-13, atol=0)
    assert "once per" not in capfd.readouterr().err
    assert np.allclose(i.function(i.eval("jit(batched)"))(stack), want, rtol=1e-13, atol=0)


def test_float32_stays_float32():
    i = interp()
    i.run('let a = astype([[0.1, 0.2], [-0.3, 0.4]], "float32")\n'
          'let e = expm(a)\nlet g = grad(fn(m) => sum(expm(m)))(a)\nlet h = jit(grad(fn(m) => sum(expm(m))))(a)')
    for name in ("e", "g", "h"):
        assert i.eval(f"dtype({name})") == "float32"
    assert np.allclose(i.get("e"), expm(i.get("a").astype(np.float64)), rtol=1e-6)


def test_the_xla_backend_gives_numpys_numbers():
    pytest.importorskip("jax")
    stack = RNG.normal(size=(4, 4, 4)) * np.array([0.01, 1.0, 20.0, 50.0])[:, None, None]
    q = np.linalg.qr(RNG.normal(size=(4, 4)))[0]
    stiff = -(q * np.array([1.0, 10.0, 1e3, 1e4])) @ q.T       # twelve squarings
    assert np.allclose(expm(stiff), (q * np.exp([-1.0, -10.0, -1e3, -1e4])) @ q.T, rtol=0, atol=1e-13)
    for m in list(stack) + [stack, stiff]:
        want, got = expm(m), expm(m, "xla")
        assert np.max(np.abs(got - want)) <= 1e-12 * np.max(np.abs(want))
    i = interp("xla")
    i.run("let g = jit(grad(fn(a) => sum(expm(a) * a)))")
    j = interp()
    j.run("let g = grad(fn(a) => sum(expm(a) * a))")
    want = j.function("g")(stack[1])
    assert np.allclose(i.function("g")(stack[1]), want, rtol=1e-12, atol=1e-13)
    assert all(e.xla.why is None for es in i.lookup("g").call.entries.values() for e in es)


@pytest.mark.parametrize("src, kind, words", [
    ("expm(ones((2, 3)))", "shape", "expm needs a square matrix"),
    ("expm([1.0, 2.0])", "shape", "expm needs a square matrix"),
    ('expm("a")', "type", "a matrix for expm"),
])
def test_bad_input_is_a_dg_error(src, kind, words):
    with pytest.raises(DgError) as err:
        interp().run(src)
    assert err.value.kind == kind and words in err.value.message


def test_a_nan_or_an_infinity_gives_nan():
    for bad in (np.nan, np.inf):
        out = expm(np.array([[bad, 0.0], [0.0, 1.0]]))
        assert np.isnan(out).all()
