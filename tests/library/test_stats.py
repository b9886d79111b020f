"""The stats module's log densities and log probabilities: values against closed forms written
with Python's math module, -inf (and a zero gradient) outside the support, gradients in the value
and the parameters against central differences, jit and vmap, and, where JAX is installed,
jax.scipy.stats' values and gradients."""

import math

import numpy as np
import pytest

import dsl
from gradcheck import check

PRELUDE = "import stats"
X = np.array([0.15, 0.4, 0.7, 0.95])          # inside every support below


def stats_eval(expr, **values):
    """The value of a dg expression after `import stats`, with `values` bound."""
    interp = dsl.Interpreter(seed=0)
    interp.run(PRELUDE)
    for name, v in values.items():
        interp.set(name, v)
    return interp.eval(expr)


def _normal(x, m, s):
    return -0.5 * ((x - m) / s) ** 2 - math.log(s) - 0.5 * math.log(2 * math.pi)


def _ndtr(x):
    return 0.5 * math.erfc(-x / math.sqrt(2))


# each case: the dg call on X, the same density by hand on one float
CASES = [
    ("stats.normal_logpdf(x, 0.5, 1.5)", lambda x: _normal(x, 0.5, 1.5)),
    ("stats.lognormal_logpdf(x, 0.2, 0.7)", lambda x: _normal(math.log(x), 0.2, 0.7) - math.log(x)),
    ("stats.uniform_logpdf(x, -0.2, 1.0)", lambda x: -math.log(1.2)),
    ("stats.exponential_logpdf(x, 2.0)", lambda x: -x / 2.0 - math.log(2.0)),
    ("stats.gamma_logpdf(x, 2.5, 1.5)",
     lambda x: 1.5 * math.log(x) - x / 1.5 - math.lgamma(2.5) - 2.5 * math.log(1.5)),
    ("stats.beta_logpdf(x, 2.0, 3.5)",
     lambda x: math.log(x) + 2.5 * math.log(1 - x) - (math.lgamma(2.0) + math.lgamma(3.5) - math.lgamma(5.5))),
    ("stats.student_t_logpdf(x, 3.5, 0.2, 1.3)",
     lambda x: math.lgamma(2.25) - math.lgamma(1.75) - 0.5 * math.log(3.5 * math.pi) - math.log(1.3)
     - 2.25 * math.log1p(((x - 0.2) / 1.3) ** 2 / 3.5)),
    ("stats.laplace_logpdf(x, 0.5, 0.8)", lambda x: -abs(x - 0.5) / 0.8 - math.log(1.6)),
    ("stats.cauchy_logpdf(x, 0.1, 0.8)", lambda x: -math.log(math.pi * 0.8 * (1 + ((x - 0.1) / 0.8) ** 2))),
    ("stats.truncated_normal_logpdf(x, -0.3, 1.2)", lambda x: _normal(x, 0, 1) - math.log(_ndtr(1.2) - _ndtr(-0.3))),
    ("stats.truncated_normal_logpdf(x, 0.1, 3.0)", lambda x: _normal(x, 0, 1) - math.log(_ndtr(3.0) - _ndtr(0.1))),
]


@pytest.mark.parametrize("expr, by_hand", CASES)
def test_a_log_density_is_its_formula(expr, by_hand):
    got = stats_eval(expr, x=X)
    np.testing.assert_allclose(got, [by_hand(v) for v in X], rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("expr, by_hand", CASES)
def test_a_log_density_has_the_gradient_of_its_values(expr, by_hand):
    check(expr, prelude=PRELUDE, x=X)


@pytest.mark.parametrize("expr, params", [
    ("stats.normal_logpdf(x, m, s)", {"m": 0.3, "s": 1.4}),
    ("stats.gamma_logpdf(x, a, s)", {"a": 2.5, "s": 1.5}),
    ("stats.beta_logpdf(x, a, b)", {"a": 2.2, "b": 0.8}),
    ("stats.student_t_logpdf(x, d, m, s)", {"d": 3.5, "m": 0.2, "s": 1.3}),
    ("stats.truncated_normal_logpdf(x, lo, hi)", {"lo": 0.1, "hi": 1.6}),
    ("stats.poisson_logpmf([0.0, 2.0, 5.0], lam)", {"lam": 2.2}),
    ("stats.bernoulli_logpmf([0.0, 1.0, 1.0], p)", {"p": 0.3}),
    ("stats.dirichlet_logpdf([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]], alpha)", {"alpha": np.array([1.5, 2.0, 3.0])}),
    ("stats.categorical_logpmf([0.0, 2.0], logits)", {"logits": np.array([[1.0, 2.0, 3.0], [0.5, 0.1, -1.0]])}),
    ("stats.multivariate_normal_logpdf([[0.2, 0.3], [1.0, -1.0]], m, cov)",
     {"m": np.array([0.1, 0.0]), "cov": np.array([[2.0, 0.3], [0.3, 1.0]])}),
])
def test_the_gradient_in_the_parameters_is_the_finite_differences(expr, params):
    check(expr, prelude=PRELUDE, wrt=list(params), x=X, **params)


def test_discrete_and_multivariate_values_are_their_formulas():
    poisson = stats_eval("stats.poisson_logpmf([0.0, 1.0, 3.0], 2.2)")
    np.testing.assert_allclose(poisson, [k * math.log(2.2) - 2.2 - math.lgamma(k + 1) for k in (0, 1, 3)], rtol=1e-14)
    bern = stats_eval("stats.bernoulli_logpmf([0.0, 1.0], 0.3)")
    np.testing.assert_allclose(bern, [math.log(0.7), math.log(0.3)], rtol=1e-14)
    logits = np.array([[1.0, 2.0, 3.0], [0.5, 0.1, -1.0]])
    cat = stats_eval("stats.categorical_logpmf([0.0, 2.0], logits)", logits=logits)
    lsm = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(cat, [lsm[0, 0], lsm[1, 2]], rtol=1e-14)
    alpha, pts = np.array([1.5, 2.0, 3.0]), np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    dirichlet = stats_eval("stats.dirichlet_logpdf(pts, alpha)", pts=pts, alpha=alpha)
    norm = math.lgamma(alpha.sum()) - sum(math.lgamma(a) for a in alpha)
    np.testing.assert_allclose(dirichlet, [norm + np.sum((alpha - 1) * np.log(p)) for p in pts], rtol=1e-13)
    mean, cov = np.array([0.1, 0.0]), np.array([[2.0, 0.3], [0.3, 1.0]])
    pts = np.array([[0.2, 0.3], [1.0, -1.0]])
    mvn = stats_eval("stats.multivariate_normal_logpdf(pts, mean, cov)", pts=pts, mean=mean, cov=cov)
    inv, (_, logdet) = np.linalg.inv(cov), np.linalg.slogdet(cov)
    want = [-0.5 * (p - mean) @ inv @ (p - mean) - 0.5 * logdet - math.log(2 * math.pi) for p in pts]
    np.testing.assert_allclose(mvn, want, rtol=1e-13)
    one = stats_eval("stats.multivariate_normal_logpdf(pts[0], mean, cov)", pts=pts, mean=mean, cov=cov)
    assert type(one) is float and one == pytest.approx(want[0], rel=1e-13)


@pytest.mark.parametrize("expr, outside", [
    ("stats.lognormal_logpdf(x, 0.0, 1.0)", [-1.0, 0.0]),
    ("stats.uniform_logpdf(x, 0.0, 1.0)", [-0.5, 1.5]),
    ("stats.exponential_logpdf(x, 1.0)", [-0.5, -3.0]),
    ("stats.gamma_logpdf(x, 2.0, 1.0)", [-0.5, -3.0]),
    ("stats.beta_logpdf(x, 2.0, 2.0)", [-0.5, 1.5]),
    ("stats.truncated_normal_logpdf(x, -1.0, 1.0)", [-1.5, 2.0]),
    ("stats.poisson_logpmf(x, 2.0)", [-1.0, 2.5]),
    ("stats.bernoulli_logpmf(x, 0.4)", [0.5, 2.0]),
])
def test_outside_the_support_the_log_density_is_minus_inf_with_a_zero_gradient(expr, outside):
    x = np.array(outside)
    assert np.all(stats_eval(expr, x=x) == -np.inf)
    interp = dsl.Interpreter(seed=0)
    interp.run(f"{PRELUDE}\nfn inside_only(x) {{ let v = {expr}\n return sum(where(isfinite(v), v, 0.0)) }}")
    np.testing.assert_array_equal(interp.grad("inside_only")(x), np.zeros(2))


def test_a_dirichlet_density_off_the_simplex_is_minus_inf():
    got = stats_eval("stats.dirichlet_logpdf([[0.2, 0.3, 0.6], [-0.1, 0.3, 0.8]], [1.5, 2.0, 3.0])")
    assert np.all(got == -np.inf)


def test_a_likelihood_fits_under_jit_and_maps_under_vmap():
    # a gamma fit's likelihood: jitted gradient as the interpreter's, vmapped values as a loop's
    interp = dsl.Interpreter(seed=0)
    interp.run(PRELUDE + """
fn nll(p, x) { return -sum(stats.gamma_logpdf(x, exp(p[0]), exp(p[1]))) }
let x = gamma(3.0, 2.0, (200,), key=rng(1))
let eager = grad(nll)([0.5, 0.2], x)
let fast = jit(grad(nll))([0.5, 0.2], x)
let mapped = vmap(fn(m) => stats.multivariate_normal_logpdf([0.5, -0.5], m, [[1.0, 0.2], [0.2, 2.0]]))([[0.0, 0.0], [1.0, 1.0]])
let looped = [stats.multivariate_normal_logpdf([0.5, -0.5], [0.0, 0.0], [[1.0, 0.2], [0.2, 2.0]]),
              stats.multivariate_normal_logpdf([0.5, -0.5], [1.0, 1.0], [[1.0, 0.2], [0.2, 2.0]])]
""")
    np.testing.assert_allclose(interp.get("fast"), interp.get("eager"), rtol=1e-13)
    np.testing.assert_allclose(interp.get("mapped"), interp.get("looped"), rtol=1e-13)


@pytest.mark.parametrize("dg_expr, jax_name, args", [
    ("stats.normal_logpdf(x, 0.5, 1.5)", "norm.logpdf", (0.5, 1.5)),
    ("stats.gamma_logpdf(x, 2.5, 1.5)", "gamma.logpdf", (2.5, 0.0, 1.5)),
    ("stats.beta_logpdf(x, 2.0, 3.5)", "beta.logpdf", (2.0, 3.5)),
    ("stats.student_t_logpdf(x, 3.5, 0.2, 1.3)", "t.logpdf", (3.5, 0.2, 1.3)),
    ("stats.cauchy_logpdf(x, 0.1, 0.8)", "cauchy.logpdf", (0.1, 0.8)),
    ("stats.laplace_logpdf(x, 0.5, 0.8)", "laplace.logpdf", (0.5, 0.8)),
    ("stats.truncated_normal_logpdf(x, 0.1, 3.0)", "truncnorm.logpdf", (0.1, 3.0)),
])
def test_values_and_gradients_are_jaxs(dg_expr, jax_name, args):
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    import jax.scipy.stats as js
    dist, method = jax_name.split(".")
    with jax.enable_x64(True):
        f = getattr(getattr(js, dist), method)
        want = np.asarray(f(jnp.asarray(X), *args))
        want_grad = np.asarray(jax.grad(lambda x: jnp.sum(f(x, *args)))(jnp.asarray(X)))
    np.testing.assert_allclose(stats_eval(dg_expr, x=X), want, rtol=1e-12)
    interp = dsl.Interpreter(seed=0)
    interp.run(f"{PRELUDE}\nfn total(x) {{ return sum({dg_expr}) }}")
    np.testing.assert_allclose(interp.grad("total")(X), want_grad, rtol=1e-11)
