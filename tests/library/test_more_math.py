"""The numpy functions dg added (SPEC section 5, "More math"): numpy's values, dg's types.
Their derivatives are checked with every other primitive's in tests/autodiff/test_primitive_rules.py."""

import importlib.util
import math

import numpy as np
import pytest

import dsl
from dsl.errors import DgError

X = np.array([[3.0, -1.5, 2.0, 2.0], [0.5, 4.0, -2.0, 0.5]])


def ev(expr, **values):
    """The value of a dg expression with `values` bound (x is X unless given)."""
    i = dsl.Interpreter()
    i.set("x", values.pop("x", X))
    for k, v in values.items():
        i.set(k, v)
    return i.eval(expr)


@pytest.mark.parametrize("expr,want", [
    ("argmax(x)", int(np.argmax(X))), ("argmin(x)", int(np.argmin(X))),
    ("argmax(x, axis=1)", np.argmax(X, axis=1)), ("argmin(x, axis=0)", np.argmin(X, axis=0)),
    ("sort(x)", np.sort(X)), ("sort(x, axis=0)", np.sort(X, axis=0)),
    ("argsort(x)", np.argsort(X, kind="stable")), ("argsort(x, axis=0)", np.argsort(X, axis=0, kind="stable")),
    ("floor(x)", np.floor(X)), ("ceil(x)", np.ceil(X)), ("round(x)", np.round(X)), ("sign(x)", np.sign(X)),
    ("log1p(abs(x))", np.log1p(np.abs(X))), ("expm1(x)", np.expm1(X)),
    ("var(x)", np.var(X)), ("var(x, axis=1)", np.var(X, axis=1)), ("std(x, axis=0)", np.std(X, axis=0)),
    ("prod(x)", np.prod(X)), ("prod(x, axis=0)", np.prod(X, axis=0)), ("cumsum(x)", np.cumsum(X)),
    ("cumsum(x, axis=1)", np.cumsum(X, axis=1)), ("norm(x)", np.linalg.norm(X)),
    ("norm(x, axis=1)", np.linalg.norm(X, axis=1)), ("einsum(\"ij,kj->ik\", x, x)", X @ X.T),
    ("einsum(\"ij\", x)", X), ("einsum(\"ji\", x)", X.T), ("einsum(\"ij->\", x)", X.sum()),
])
def test_numpy_values(expr, want):
    got = ev(expr)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert type(got) is (int if type(want) is int else float if np.ndim(want) == 0 else np.ndarray)


def test_rounding_is_half_to_even_and_positions_index():
    assert list(ev("round([0.5, 1.5, 2.5, -0.5])")) == [0.0, 2.0, 2.0, -0.0]
    assert list(ev("x[0][argsort(x[0])]")) == sorted(X[0])
    assert ev("x[1][argmax(x[1])]") == 4.0


@pytest.mark.parametrize("decimals", [1, 2, 3, -1, -2])
def test_round_to_decimals_gives_numpys_floats(decimals):
    x = np.array([2.675, 1234.5, -0.125, 0.3333333, 15.5, 1e-4, 98765.4321])
    got = ev(f"round(x, {decimals})", x=x)
    assert np.array_equal(got, np.round(x, decimals))      # bit for bit: numpy's own algorithm
    assert ev(f"round(2.675, {decimals})") == float(np.round(2.675, decimals))
    i = dsl.Interpreter()
    i.run(f"let g = grad(fn(x) => sum(round(x, {decimals}) * x))([1.26, 2.34])\n"
          f"let j = jit(fn(x) => round(x, {decimals}))([1.26, 2.34])")
    assert list(i.lookup("g")) == list(np.round([1.26, 2.34], decimals))   # round passes no gradient
    assert np.array_equal(i.lookup("j"), np.round([1.26, 2.34], decimals))


def test_round_takes_an_int_decimals():
    with pytest.raises(DgError) as e:
        ev("round(x, 1.0)")
    assert e.value.kind == "type" and "decimals" in e.value.message


def test_sort_is_stable_and_its_gradient_follows_the_entries_back():
    i = dsl.Interpreter()
    i.run("let g = grad(fn(v) => sum(sort(v) * [1.0, 2.0, 3.0, 4.0]))([3.0, 1.0, 3.0, 0.0])")
    # sorted: 0.0 (from 3), 1.0 (from 1), 3.0 (from 0), 3.0 (from 2): each gets its rank's weight
    assert list(i.get("g")) == [3.0, 2.0, 4.0, 1.0]


@pytest.mark.parametrize("expr,kind,words", [
    ("argmax(zeros((0,)))", "value", "empty"), ("sort(3.0)", "shape", "at least one axis"),
    ("einsum(\"ij,jk\", x)", "type", "names 2 operands but 1 was given"),
    ("einsum(\"ii->i\", x)", "shape", "has sizes 2 and 4"), ("einsum(\"i...i...\", x)", "value", "once"),
    ("einsum(\"ijk...\", x)", "shape", "names 3 axes and '...'"),
    ("einsum(\"...ij,...jk\", ones((2, 3, 4)), ones((3, 4, 5)))", "shape", "do not broadcast"),
    ("einsum(\"ijk\", x)", "shape", "names 3 axes"), ("einsum(3, x)", "type", "spec"),
    ("einsum(\"ij,ij->i\", x, transpose(x))", "shape", "has sizes"),
])
def test_errors(expr, kind, words):
    with pytest.raises(DgError) as info:
        ev(expr)
    assert info.value.kind == kind and words in str(info.value)


# ---------------------------------------------------------------- numpy's trigonometric and logistic functions
MATH = [("tan(x)", "tan", 0.6), ("asin(x)", "arcsin", 0.6), ("acos(x)", "arccos", 0.6), ("atan(x)", "arctan", 2.0),
        ("sinh(x)", "sinh", 2.0), ("cosh(x)", "cosh", 2.0), ("asinh(x)", "arcsinh", 2.0),
        ("acosh(x + 2.5)", "arccosh", 1.0), ("atanh(x)", "arctanh", 0.6),
        ("log_sigmoid(x * 30.0)", "log_sigmoid", 2.0), ("logit(x * 0.4 + 0.5)", "logit", 1.0),
        ("atan2(x, x * x - 0.3)", "arctan2", 2.0), ("logaddexp(x * 100.0, x)", "logaddexp", 2.0),
        ("xlogy(x * x, x + 1.5)", "xlogy", 1.0), ("erfinv(x)", "erfinv", 0.95), ("lgamma(x * 3.0)", "gammaln", 1.0),
        ("erfc(x)", "erfc", 6.0), ("hypot(x, x * x - 0.3)", "hypot", 2.0), ("cbrt(x + 1.5)", "cbrt", 1.0),
        ("erfcinv(x + 1.0)", "erfcinv", 0.99)]


@pytest.mark.parametrize("expr, name, scale", MATH, ids=[m[0] for m in MATH])
def test_math_functions_agree_with_jax_in_value_gradient_and_second_derivative(expr, name, scale):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    fns = {"log_sigmoid": lambda x: jax.nn.log_sigmoid(x * 30.0), "logit": lambda x: jax.scipy.special.logit(x * 0.4 + 0.5),
           "arctan2": lambda x: jnp.arctan2(x, x * x - 0.3), "logaddexp": lambda x: jnp.logaddexp(x * 100.0, x),
           "arccosh": lambda x: jnp.arccosh(x + 2.5), "erfinv": jax.scipy.special.erfinv,
           "erfc": jax.scipy.special.erfc, "hypot": lambda x: jnp.hypot(x, x * x - 0.3),
           "cbrt": lambda x: jnp.cbrt(x + 1.5),
           # JAX has no erfcinv: the normal quantile of half its argument, scaled
           "erfcinv": lambda x: -jax.scipy.special.ndtri((x + 1.0) / 2.0) / np.sqrt(2.0),
           "xlogy": lambda x: jax.scipy.special.xlogy(x * x, x + 1.5),
           "gammaln": lambda x: jax.scipy.special.gammaln(x * 3.0)}
    f = fns[name] if name in fns else getattr(jnp, name)
    x = np.random.default_rng(5).uniform(-1.0, 1.0, 6) * scale
    interp = dsl.Interpreter(seed=0)
    interp.set("x0", x)
    interp.run(f"fn f(x) {{ return {expr} }}\nlet r = (f(x0), grad(fn(x) => sum(f(x)))(x0),\n"
               f"         vmap(grad(grad(fn(x) => f(x))))(x0), jit(f)(x0))")
    value, g, g2, jitted = interp.get("r")
    np.testing.assert_allclose(value, np.asarray(f(x)), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(g, np.asarray(jax.grad(lambda v: jnp.sum(f(v)))(x)), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(g2, np.asarray(jax.vmap(jax.grad(jax.grad(f)))(x)), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(jitted, value, rtol=1e-15, atol=0)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_gelu_in_its_negative_tail_is_jaxs_to_the_last_digits(backend):
    # x * (1 + erf(x / sqrt 2)) / 2 cancels there: gelu(-5) was off in the 11th digit and gelu(-10)
    # was 0 for -7.6e-23; JAX writes x * erfc(-x / sqrt 2) / 2
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    x = np.array([-30.0, -12.0, -10.0, -5.0, -2.5, -0.1, 0.0, 0.7, 3.0, 9.0])
    gelu = lambda v: jax.nn.gelu(v, approximate=False)      # noqa: E731
    interp = dsl.Interpreter(backend=backend)
    interp.set("x0", x)
    interp.run("let r = (gelu(x0), gelu(-10.0), grad(fn(x) => sum(gelu(x)))(x0), vmap(grad(grad(gelu)))(x0), "
               "jit(gelu)(x0), jit(grad(fn(x) => sum(gelu(x))))(x0))")
    value, at_ten, g, g2, jitted, jitted_g = interp.get("r")
    slope = jax.grad(lambda v: jax.numpy.sum(gelu(v)))(x)
    for got, want in [(value, gelu(x)), (jitted, gelu(x)), (at_ten, gelu(-10.0)), (g, slope), (jitted_g, slope),
                      (g2, jax.vmap(jax.grad(jax.grad(gelu)))(x))]:
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-13, atol=0)
    assert at_ten < 0.0


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_inverse_functions_derivatives_keep_their_digits_near_their_singular_points(backend):
    # 1 - x * x keeps few digits near x = +-1: atanh'(0.999999999) was off in the 10th digit,
    # asin'(0.99999999) in the 11th; the exact 1 - x^2 (fractions) is the reference
    from fractions import Fraction
    if backend == "xla":
        pytest.importorskip("jax")
    interp = dsl.Interpreter(backend=backend)
    for name, x, want in [
            ("atanh", 0.999999999, lambda s: 1.0 / float(s)), ("atanh", -0.999999, lambda s: 1.0 / float(s)),
            ("asin", 0.99999999, lambda s: 1.0 / math.sqrt(float(s))),
            ("acos", -0.9999999, lambda s: -1.0 / math.sqrt(float(s))),
            ("acosh", 1.0000000001, lambda s: 1.0 / math.sqrt(-float(s)))]:
        exact = want(1 - Fraction(x) ** 2)
        for how in (f"grad({name})({x!r})", f"jit(grad(fn(v) => sum({name}(v))))([{x!r}])[0]"):
            assert interp.eval(how) == pytest.approx(exact, rel=1e-14), how


def test_erfinv_and_its_derivative_on_xla_are_numpys_near_plus_and_minus_one():
    # XLA's erfinv alone is off by 4e-13 at 0.999999, which the derivative exp(erfinv(x)^2) made 1e-11
    pytest.importorskip("jax")
    x = np.array([-0.9999999, -0.999999, -0.6, -0.5, -1e-300, 0.0, 0.3, 0.5, 0.97, 0.999999, 0.9999999])
    got = {}
    for backend in ("numpy", "xla"):
        interp = dsl.Interpreter(backend=backend)
        interp.set("x0", x)
        interp.run("let f = jit(fn(x) => (erfinv(x), grad(fn(x) => sum(erfinv(x)))(x)))\nlet first = f(x0)\n"
                   "let r = f(x0)")     # the first call stages on numpy; the second runs the backend's code
        got[backend] = interp.get("r")
    for a, b in zip(got["numpy"], got["xla"]):
        np.testing.assert_allclose(b, a, rtol=1e-14, atol=0)


def test_erfcinv_keeps_the_digits_of_far_tails_on_both_backends():
    # erfinv(1 - q) loses a small q to rounding (erfinv(1 - 1e-20) is inf): erfc(erfcinv(q)) is q
    # again to the last digits, down to the smallest floats, and its mirror image above 1
    q = np.array([1e-300, 1e-100, 1e-20, 3e-9, 1e-3, 0.4, 1.0, 1.6, 2.0 - 1e-12, 0.0, 2.0, -0.5, 2.5])
    got = {}
    for backend in ("numpy", "xla"):
        if backend == "xla" and importlib.util.find_spec("jax") is None:
            continue
        interp = dsl.Interpreter(backend=backend)
        interp.set("q0", q)
        interp.run("let f = jit(fn(q) => (erfcinv(q), erfc(erfcinv(q))))\nlet first = f(q0)\nlet r = f(q0)")
        got[backend] = interp.get("r")
        y, back = got[backend]
        np.testing.assert_allclose(back[:7], q[:7], rtol=1e-12)     # erfc is steep there: 2 y^2 ulps
        np.testing.assert_allclose(2.0 - back[7:9], 2.0 - q[7:9], rtol=1e-10)
        assert list(y[9:11]) == [np.inf, -np.inf] and np.isnan(y[11:]).all()
        assert y[2] == pytest.approx(6.601580622355143, rel=1e-15)
    if "xla" in got:
        np.testing.assert_allclose(got["xla"][0], got["numpy"][0], rtol=1e-14, atol=0)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_sinc_and_its_derivatives_are_exact_at_zero_and_jaxs_on_both_sides_of_its_series(backend):
    # the quotient is 0 / 0 at 0, and its derivatives cancel near 0: a series gives them there (the
    # second at 0, -pi^2 / 3, is 0 by where(x == 0.0, 1.0, ...) of the quotient); the points around
    # x = 0.16 (pi x = 0.5) are on both sides of where the series hands over to the quotient
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    x = np.array([0.0, 0.159, 0.16, -0.16, 0.3, 1.0, -2.5, 7.2])
    d1, d2 = jax.grad(jax.numpy.sinc), jax.grad(jax.grad(jax.numpy.sinc))
    want = [jax.numpy.sinc(x), jax.vmap(d1)(x), jax.vmap(d2)(x), jax.vmap(jax.grad(d2))(x)]
    interp = dsl.Interpreter(backend=backend)
    interp.set("x0", x)
    interp.run("let d1 = grad(sinc)\nlet d2 = grad(d1)\nlet d3 = grad(d2)\n"
               "let r = (sinc(x0), vmap(d1)(x0), vmap(d2)(x0), vmap(d3)(x0), vmap(grad(d3))(x0))\n"
               "let f = jit(fn(x) => (sinc(x), vmap(d1)(x), vmap(d2)(x), vmap(d3)(x), vmap(grad(d3))(x)))\n"
               "let first = f(x0)\nlet j = f(x0)")
    r = interp.get("r")
    for g, w in zip(r, want):
        np.testing.assert_allclose(g[1:], np.asarray(w)[1:], rtol=1e-11, atol=1e-14)
    at_zero = [r[k][0] for k in range(5)]
    np.testing.assert_allclose(at_zero, [1.0, 0.0, -np.pi ** 2 / 3, 0.0, np.pi ** 4 / 5], rtol=1e-15, atol=0)
    for g, w in zip(interp.get("j"), r):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-15)


def test_digamma_agrees_with_jax_in_value_and_gradient():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    x = np.array([0.3, 1.0, 2.5, 7.0, 40.0, -0.5, -2.3])
    r = ev("(digamma(v), grad(fn(t) => sum(digamma(t)))(v))", v=x)
    np.testing.assert_allclose(r[0], np.asarray(jax.scipy.special.digamma(x)), rtol=1e-13)
    want = jax.grad(lambda t: jax.numpy.sum(jax.scipy.special.digamma(t)))(x)
    np.testing.assert_allclose(r[1], np.asarray(want), rtol=1e-12)


def test_special_functions_at_known_values_and_digammas_derivative():
    euler = 0.5772156649015329
    r = ev("(erf(erfinv(x * 0.2)), erfinv([1.0, -1.0, 0.0, 2.0]), lgamma([1.0, 0.5, 10.0, 0.0, -2.0]), "
           "digamma([1.0, 0.5, -0.5]), grad(digamma)(1.0), vmap(grad(lgamma))([2.0, 3.0]), xlogy([0.0, 2.0], [0.0, e]))")
    np.testing.assert_allclose(r[0], X * 0.2, rtol=1e-15, atol=1e-16)
    assert list(r[1][:3]) == [np.inf, -np.inf, 0.0] and np.isnan(r[1][3])
    np.testing.assert_allclose(r[2], [0.0, 0.5 * np.log(np.pi), np.log(362880.0), np.inf, np.inf], rtol=1e-14)
    np.testing.assert_allclose(r[3], [-euler, -euler - 2 * np.log(2), -euler - 2 * np.log(2) + 2], rtol=1e-14, atol=1e-15)
    assert abs(r[4] - np.pi ** 2 / 6) < 1e-13                    # trigamma(1)
    np.testing.assert_allclose(r[5], [1 - euler, 1.5 - euler], rtol=1e-14)
    assert list(r[6]) == [0.0, 2.0]


POLYGAMMA_AT = np.array([0.3, 1.0, 2.5, 7.0, 40.0, -0.5, -2.3, -7.3])


@pytest.mark.parametrize("order", [2, 3, 4])
def test_digamma_has_derivatives_of_every_order(order):
    # the order-th derivative of digamma against central differences of the one before it
    nested = "digamma"
    for _ in range(order - 1):
        nested = f"grad({nested})"
    r = ev(f"(vmap({nested})(v), vmap(grad({nested}))(v), jit(vmap(grad({nested})))(v))", v=POLYGAMMA_AT)
    h = 1e-5 * np.maximum(1.0, np.abs(POLYGAMMA_AT))
    lo, hi = ev(f"(vmap({nested})(v - h), vmap({nested})(v + h))", v=POLYGAMMA_AT, h=h)
    np.testing.assert_allclose(r[1], (hi - lo) / (2 * h), rtol=1e-6)
    np.testing.assert_allclose(r[2], r[1], rtol=1e-14)


def test_polygamma_against_scipy_and_jax_and_at_the_poles():
    polygamma = pytest.importorskip("scipy.special").polygamma      # JAX's is off by 1e-7 at -7.3
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    from jax.scipy.special import digamma
    r = ev("(vmap(grad(grad(digamma)))(v), vmap(grad(grad(grad(grad(lgamma)))))(v))", v=POLYGAMMA_AT)
    np.testing.assert_allclose(r[0], polygamma(2, POLYGAMMA_AT), rtol=1e-13)
    np.testing.assert_allclose(r[1], polygamma(3, POLYGAMMA_AT), rtol=1e-13)
    right = POLYGAMMA_AT[POLYGAMMA_AT > 0]
    want = jax.vmap(jax.grad(jax.grad(jax.grad(digamma))))(right)
    np.testing.assert_allclose(ev("vmap(grad(grad(grad(digamma))))(v)", v=right), np.asarray(want), rtol=1e-12)
    with pytest.raises(DgError) as info:        # a pole: the numerics check names the operation
        ev("grad(grad(digamma))(0.0)")
    assert info.value.kind == "numerics" and "Digamma" in info.value.message
    from dsl.core.ops.special import polygamma as kernel
    # an even order changes sign across a pole (nan, as JAX), an odd one does not
    assert np.isnan(kernel(2, 0.0)) and kernel(3, -2.0) == np.inf


# ---------------------------------------------------------------- numpy's array functions, composed
ARRAYS = [("flip(x)", lambda np_, x: np_.flip(x)), ("flip(x, 1)", lambda np_, x: np_.flip(x, 1)),
          ("roll(x, 1, 1)", lambda np_, x: np_.roll(x, 1, 1)), ("roll(x, -4)", lambda np_, x: np_.roll(x, -4)),
          # tuples of shifts and axes pair up as numpy broadcasts them; the shifts of one axis add
          ("roll(x, (1, -1), (0, 1))", lambda np_, x: np_.roll(x, (1, -1), (0, 1))),
          ("roll(x, 2, (0, 1))", lambda np_, x: np_.roll(x, 2, (0, 1))),
          ("roll(x, (1, 2), 1)", lambda np_, x: np_.roll(x, (1, 2), 1)),
          ("roll(x, (1, 3))", lambda np_, x: np_.roll(x, (1, 3))),
          ("flip(x, (0, 1))", lambda np_, x: np_.flip(x, (0, 1))),
          ("diff(x)", lambda np_, x: np_.diff(x)), ("diff(x, 2, 0)", lambda np_, x: np_.diff(x, 2, 0)),
          ("cumprod(x)", lambda np_, x: np_.cumprod(x)), ("cumprod(x, 1)", lambda np_, x: np_.cumprod(x, 1)),
          ("meshgrid(x[0], x[1, :2])[0]", lambda np_, x: np_.meshgrid(x[0], x[1, :2])[0]),
          ("meshgrid(x[0], x[1, :2], indexing=\"ij\")[1]", lambda np_, x: np_.meshgrid(x[0], x[1, :2], indexing="ij")[1]),
          ("tile(x, (2, 1, 2))", lambda np_, x: np_.tile(x, (2, 1, 2))),
          ("repeat(x, 2, axis=1)", lambda np_, x: np_.repeat(x, 2, axis=1)), ("repeat(x, 3)", lambda np_, x: np_.repeat(x, 3)),
          ("repeat(x, (1, 0, 2), axis=0)", lambda np_, x: np_.repeat(x, np.array([1, 0, 2]), axis=0, total_repeat_length=3)
           if np_ is not np else np.repeat(x, [1, 0, 2], axis=0)),
          ("take_along_axis(x, [[1.0], [0.0], [3.0]], 1)",
           lambda np_, x: np_.take_along_axis(x, np.array([[1], [0], [3]]), 1)),
          ("scatter_add(x, [0.0, 2.0, 0.0], x * x)", lambda np_, x: _scatter_add(np_, x, [0, 2, 0], x * x)),
          # values broadcast to the rows indexed, as numpy's add.at and JAX's .at[].add take them
          ("scatter_add(x, [0.0, 2.0], x[1])", lambda np_, x: _scatter_add(np_, x, [0, 2], x[1])),
          ("scatter_add(x, [1.0, 1.0], x[0:2, 0:1] * 2.0)", lambda np_, x: _scatter_add(np_, x, [1, 1], x[0:2, 0:1] * 2.0)),
          ("segment_sum(x, [1.0, 0.0, 1.0], 3)", lambda np_, x: _scatter_add(np_, np_.zeros((3, 4)), [1, 0, 1], x)),
          ("top_k(x, 2)[0]", lambda np_, x: -np_.sort(-x, axis=-1)[:, :2]),
          ("einsum(\"ii->i\", x[:, 0:3])", lambda np_, x: np_.einsum("ii->i", x[:, 0:3])),
          ("einsum(\"ij,jj\", x[:, 0:3], x[:, 1:4])", lambda np_, x: np_.einsum("ij,jj", x[:, 0:3], x[:, 1:4])),
          # an ellipsis stands for the axes the letters leave, broadcast (numpy's and JAX's einsum)
          ("einsum(\"...j,jk->...k\", x, transpose(x))", lambda np_, x: np_.einsum("...j,jk->...k", x, x.T)),
          ("einsum(\"...i,...i\", x, x[0])", lambda np_, x: np_.einsum("...i,...i", x, x[0])),
          ("einsum(\"...ij,...jk\", reshape(x, (3, 2, 2)), reshape(x, (3, 2, 2))[0:1])",
           lambda np_, x: np_.einsum("...ij,...jk", x.reshape(3, 2, 2), x.reshape(3, 2, 2)[0:1])),
          ("einsum(\"i...->...\", x)", lambda np_, x: np_.einsum("i...->...", x)),
          ("einsum(\"...ii->...i\", reshape(x[:, 0:4], (3, 2, 2)))",
           lambda np_, x: np_.einsum("...ii->...i", x[:, 0:4].reshape(3, 2, 2)))]


def _scatter_add(np_, x, idx, v):
    """x with the rows of v added at rows idx: numpy's add.at, JAX's .at[].add."""
    if np_ is np:
        out = np.array(x, dtype=float)
        np.add.at(out, idx, v)
        return out
    return x.at[np.array(idx)].add(v)


@pytest.mark.parametrize("expr, ref", ARRAYS, ids=[a[0] for a in ARRAYS])
def test_array_functions_give_numpys_values_and_jaxs_gradients(expr, ref):
    x = np.random.default_rng(9).normal(size=(3, 4))
    interp = dsl.Interpreter(seed=0)
    interp.set("x0", x)
    interp.set("c", np.random.default_rng(10).normal(size=np.shape(ref(np, x))))
    interp.run(f"fn f(x) {{ return {expr} }}\nlet r = (f(x0), grad(fn(x) => sum(f(x) * c))(x0), jit(f)(x0),\n"
               f"         vmap(f)(stack((x0, x0 * 2.0))))")
    value, g, jitted, mapped = interp.get("r")
    np.testing.assert_allclose(value, ref(np, x), rtol=1e-14)
    np.testing.assert_allclose(jitted, value, rtol=1e-15)
    np.testing.assert_allclose(mapped[1], ref(np, x * 2.0), rtol=1e-14)
    from gradcheck import numeric_grad
    c = interp.get("c")
    np.testing.assert_allclose(g, numeric_grad(lambda v: float(np.sum(ref(np, v) * c)), [x], 0), rtol=1e-6, atol=1e-7)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    want = jax.grad(lambda v: jax.numpy.sum(ref(jax.numpy, v) * c))(x)
    np.testing.assert_allclose(g, np.asarray(want), rtol=1e-12, atol=1e-13)


def test_indices_and_ties_of_the_index_functions():
    r = ev("(top_k([3.0, 1.0, 3.0, 2.0], 2), take_along_axis(x, [[-1.0], [0.0]], 1), "
           "segment_sum(ones((4, 2)), [0.0, 0.0, 0.0, 2.0], 4), repeat([1.0, 2.0], (0, 3)))")
    assert [list(v) for v in r[0]] == [[3.0, 3.0], [0.0, 2.0]]       # ties: the lower index first
    assert list(r[1][:, 0]) == [2.0, 0.5]
    assert r[2].tolist() == [[3.0, 3.0], [0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]
    assert list(r[3]) == [2.0, 2.0, 2.0]
    for src, kind, words in [("segment_sum(ones(3), [0.0, 1.0, 5.0], 2)", "index", "out of range"),
                             ("scatter_add(ones((2, 2)), [0.0], ones((2, 2)))", "shape", "they need shape (1, 2)"),
                             ("take_along_axis(x, [1.0, 0.0], 1)", "shape", "as many axes"),
                             ("top_k(x, 9)", "value", "k must be an int in [0, 4]"),
                             ("repeat(x, (1, 2))", "value", "one per entry"), ("tile(x, -1)", "value", "reps")]:
        with pytest.raises(DgError) as info:
            ev(src)
        assert info.value.kind == kind and words in info.value.message, src


def test_the_array_tests():
    r = ev("(isnan([1.0, nan, inf]), isfinite([1.0, nan, -inf]), allclose(x, x + 1e-9), allclose(x, x + 1.0), "
           "isnan(nan))")
    assert list(r[0]) == [False, True, False] and list(r[1]) == [True, False, False]
    assert r[2:] == (True, False, True)


def test_array_functions_refuse_what_is_not_a_tensor_in_dgs_words():
    for src, words in [("flip((1, 2))", "flip needs a tensor, got tuple"), ("diff((1.0, 2.0))", "diff needs a tensor"),
                       ("roll(x, (1, 2, 3), (0, 1))", "roll: 3 shifts for 2 axes"),
                       ("roll(x, 1.5)", "roll: shift must be an int or a tuple of ints"),
                       ("isfinite({})", "isfinite needs a number or a tensor"),
                       ("qr((1, 2), eye(2))", "qr: mode must be a string")]:
        with pytest.raises(DgError) as info:
            ev(src)
        assert words in info.value.message
    assert ev("isfinite(10 ** 30)") is True      # an int, however long, is finite
