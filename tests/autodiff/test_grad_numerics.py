"""SPEC 6.6-6.8: the conventions at kinks and ties, stability at large logits, no NaN from a
zero upstream gradient, and the numerics check that names the forward operation."""

import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dsl
from dsl.errors import DgError
from fuzz_strategies import risky


def value(src, name="g", **kw):
    """Run dg source and return one of its names."""
    interp = dsl.Interpreter(seed=0, **kw)
    interp.run(src, "n.dg")
    return interp.lookup(name)


def test_where_sqrt_at_minus_one_has_zero_gradient_not_nan():
    g = value("let g = grad(fn(x) => where(x > 0.0, sqrt(x), 0.0))(-1.0)")
    assert g == 0.0
    g = value("let g = grad(fn(x) => sum(where(x > 0.0, sqrt(x), 0.0)))([-1.0, 4.0, 0.0])")
    assert np.array_equal(g, [0.0, 0.25, 0.0])


def test_where_ln_and_division_at_zero_are_zero():
    g = value("let g = grad(fn(x) => sum(where(x > 0.0, ln(x) + 1.0 / x + log2(x), 1.0)))([0.0, 1.0])")
    assert g[0] == 0.0 and np.isclose(g[1], 1.0 - 1.0 + 1.0 / np.log(2.0))


def test_abs_and_relu_derivative_at_zero_is_zero():
    assert value("let g = grad(fn(x) => abs(x))(0.0)") == 0.0
    assert value("let g = grad(fn(x) => relu(x))(0.0)") == 0.0
    assert np.array_equal(value("let g = grad(fn(x) => sum(abs(x) + relu(x)))([0.0, -1.0, 2.0])"),
                          [0.0, -1.0, 2.0])


def test_max_min_ties_share_the_gradient():
    assert np.array_equal(value("let g = grad(fn(x) => max(x))([1.0, 3.0, 3.0])"), [0.0, 0.5, 0.5])
    assert np.array_equal(value("let g = grad(fn(x) => min(x))([2.0, 2.0, 2.0, 5.0])"),
                          [1 / 3, 1 / 3, 1 / 3, 0.0])
    g = value("let g = grad(fn(x) => sum(max(x, axis=1)))([[1.0, 1.0], [0.0, 2.0]])")
    assert np.array_equal(g, [[0.5, 0.5], [0.0, 1.0]])
    ga, gb = value("let g = grad(fn(a, b) => maximum(a, b) + minimum(a, b) * 3.0, argnums=(0, 1))(2.0, 2.0)")
    assert ga == 2.0 and gb == 2.0


def test_clamp_passes_gradient_inside_the_closed_interval():
    g = value("let g = grad(fn(x) => sum(clamp(x, -1.0, 1.0)))([-2.0, -1.0, 0.0, 1.0, 2.0])")
    assert np.array_equal(g, [0.0, 1.0, 1.0, 1.0, 0.0])


def test_pow_derivative_in_the_exponent_at_zero_base_is_zero():
    assert value("let g = grad(fn(y) => 0.0 ** y)(2.0)") == 0.0
    g = value("let g = grad(fn(y) => sum([0.0, 2.0] ** y))(3.0)")
    assert np.isclose(g, 8.0 * np.log(2.0))


def test_logsumexp_of_large_equal_logits():
    lse = value("let g = logsumexp([1000.0, 1000.0])")
    assert np.isclose(lse, 1000.0 + np.log(2.0))
    g = value("let g = grad(fn(x) => logsumexp(x))([1000.0, 1000.0])")
    assert np.allclose(g, [0.5, 0.5], atol=1e-15)


@pytest.mark.parametrize("logit", [1000.0, -1000.0])
def test_softmax_family_is_stable_at_large_logits(logit):
    src = f"""
let x = [{logit}, 0.0, {-logit}]
let s = softmax(x)
let ls = log_softmax(x)
let ce = cross_entropy([x, x], [0.0, 2.0])
let gs = grad(fn(x) => sum(softmax(x) * [1.0, 2.0, 3.0]))(x)
let gl = grad(fn(x) => sum(log_softmax(x) * [1.0, 2.0, 3.0]))(x)
let gc = grad(fn(x) => cross_entropy(x, 1.0))(x)
let g = 0
"""
    interp = dsl.Interpreter()
    interp.run(src)
    for name in ("s", "ls", "ce", "gs", "gl", "gc"):
        v = np.asarray(interp.lookup(name), dtype=float)
        assert np.all(np.isfinite(v)), name
    assert np.isclose(interp.lookup("ce"), 0.5 * (0.0 + 2000.0)) if logit > 0 else True


def test_sigmoid_is_stable():
    s = value("let g = sigmoid([-1000.0, 0.0, 1000.0, -40.0])")
    assert np.array_equal(s[:3], [0.0, 0.5, 1.0]) and s[3] > 0.0


def test_numerics_check_names_the_operation_and_location():
    with pytest.raises(DgError) as info:
        value("fn f(x) {\n    return sqrt(x) * 2.0\n}\nlet g = grad(f)(0.0)")
    err = info.value
    assert err.kind == "numerics"
    assert "Sqrt" in err.message and "n.dg:2:12" in err.message
    assert (err.line, err.column) == (2, 12)


@pytest.mark.parametrize("call", [
    "grad(f, (0, 2))(1.0, 2.0, 0.0)",           # the second of two Parameters, z an Input
    "grad(fn(p) => f(p[0], p[1], p[2]))((1.0, 2.0, 0.0))",
    "grad(fn(x) => checkpoint(fn(a) => f(1.0, a, a))(x))(0.0)",
    "grad(fn(x) => grad(fn(y) => f(y, 1.0, x + y * y))(1.0))(-1.0)",
])
def test_a_gradient_not_finite_is_caught_for_every_differentiated_argument(call):
    # the check reads the Parameters, which open every tape: none may be left out
    with pytest.raises(DgError) as info:
        value(f"fn f(x, z, y) {{ return x * z + sqrt(y) }}\nlet g = {call}")
    assert info.value.kind == "numerics"


def test_numerics_check_can_be_switched_off():
    g = value("let g = grad(fn(x) => sqrt(x))(0.0)", check_numerics=False)
    assert np.isinf(g)


def test_zero_upstream_never_makes_nan_in_division_and_pow():
    g = value("let g = grad(fn(x) => 0.0 * (1.0 / x) + 0.0 * x ** 0.5)(0.0)", check_numerics=True)
    assert g == 0.0


def test_huge_but_finite_gradients_pass_the_numerics_check():
    # the fast test squares the entries (1e200 ** 2 overflows): only the exact test may decide
    g = value("let g = grad(fn(x) => sum(x * 1e200))(ones((3, 4)))")
    np.testing.assert_array_equal(g, np.full((3, 4), 1e200))


@pytest.mark.parametrize("bad", ["inf", "nan"])
def test_one_bad_entry_among_many_fails_the_numerics_check(bad):
    src = (f"let c = where(linspace(0.0, 1.0, 1000) == 1.0, float(\"{bad}\"), 1.0)\n"
           "let g = grad(fn(x) => sum(x * c))(ones(1000))")
    with pytest.raises(DgError) as info:
        value(src)
    assert info.value.kind == "numerics"


def test_the_numerics_check_runs_no_rule_twice():
    # the error names the operation without a second backward pass: a custom_vjp backward with a
    # side effect runs once, and the operation named is the one whose rule gave the infinity
    out = io.StringIO()
    interp = dsl.Interpreter(stdout=out)
    with pytest.raises(DgError) as info:
        interp.run("let f = custom_vjp(fn(x) => x * 2.0, fn(x, out, g) { print(\"bwd\")\n return (g * 2.0,) })\n"
                   "fn loss(x) { return f(sqrt(x)) }\n"
                   "grad(loss)(0.0)")
    assert out.getvalue() == "bwd\n"
    assert info.value.kind == "numerics" and "Sqrt" in info.value.message and info.value.line == 3


def test_an_infinity_that_a_later_rule_multiplies_by_zero_is_no_error():
    # relu' is 0 at -1: the infinite cotangent reaching relu(x) * inf's left factor goes no further
    interp = dsl.Interpreter(stdout=io.StringIO())
    interp.run("fn f(x) { return relu(x) * exp(1000.0) }\nlet g = grad(f)(-1.0)")
    assert interp.lookup("g") == 0.0


def _checked_and_deferred(expr, x):
    """grad of `expr` at x with a plain tape (whose pass checks nothing as it goes: a second pass
    finds the operation to name) and with one holding a custom_vjp identity (checked as it goes):
    for each, the gradient or the error's kind, message and place."""
    outcomes = {}
    for wrap in ("ident", "cvjp_"):     # the same length: the same columns
        interp = dsl.Interpreter(stdout=io.StringIO())
        interp.run("fn ident(y) { return y }\nlet cvjp_ = custom_vjp(fn(y) => y, fn(y, out, g) => (g,))\n"
                   f"let v = [1.0, 2.0]\nfn f(x) {{ return {wrap}({expr}) }}\n")
        try:
            outcomes[wrap] = ("value", repr(interp.lookup("grad")(interp.lookup("f"))(x)))
        except DgError as exc:
            outcomes[wrap] = (exc.kind, exc.message, exc.line, exc.column)
    return outcomes


@pytest.mark.parametrize("expr", ["log(x) * sqrt(x)", "sqrt(x) / x", "x ** 0.5 + ln(x)", "sum(sqrt(v * x))"])
def test_the_operation_named_after_an_unchecked_pass_is_the_one_a_checking_pass_names(expr):
    outcomes = _checked_and_deferred(expr, 0.0)
    assert outcomes["ident"][0] == "numerics"
    assert outcomes["ident"] == outcomes["cvjp_"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(risky(["x", "(x - 1.0)", "2.0", "sum(v * x)"]), st.sampled_from([0.0, 1.0, -1.0, 0.5, 4.0]))
def test_a_deferred_numerics_check_says_what_a_checking_pass_says(expr, x):
    outcomes = _checked_and_deferred(expr, x)
    assert outcomes["ident"] == outcomes["cvjp_"]


def test_the_finiteness_test_of_a_tensor():
    # the numerics check's fast test: a sum, which is finite exactly when every entry is unless it
    # overflows; an overflowing sum of finite entries is then tested entry by entry
    from dsl.core.ops.finite import BLAS_FROM, all_finite
    big = np.full(4, 1e308)
    assert all_finite(np.ones(7)) and all_finite(big) and all_finite(big[::2]) and all_finite(-big)
    for bad in (np.nan, np.inf, -np.inf):
        v = np.ones((3, 5))
        v[2, 1] = bad
        assert not all_finite(v) and not all_finite(v.T) and not all_finite(v[:, 1])
    assert not all_finite(np.array([np.inf, -np.inf]))
    assert all_finite(np.broadcast_to(2.0, (1000,)))
    # past BLAS_FROM entries the test is a dot of the tensor with itself: the same answers
    large = np.ones(BLAS_FROM + 3)
    assert all_finite(large)
    large[-1] = 1e200        # the sum of squares overflows: tested entry by entry
    assert all_finite(large)
    large[7] = np.nan
    assert not all_finite(large)

