"""The rewrites dsl/backends/optimize.py makes before code is generated: each one leaves the
results as the interpreter gives them (values and dtypes), and the code it leaves is shorter."""

import re

import numpy as np

import dsl

LOGISTIC = """
fn loss(w, a, t) {
    let z = a @ w
    return sum(softplus(z) - t * z) + 0.5 * sum(w * w)
}
fn both(w, a, t) { return (grad(loss)(w, a, t), hessian(loss)(w, a, t)) }
let jboth = jit(both)
"""


def _source(jitted):
    """The generated code of a jitted function's one signature."""
    return next(iter(jitted.call.entries.values()))[0].code.source


def test_a_hessian_by_forward_over_reverse_is_staged_without_repeated_or_idle_steps():
    # the reverse pass inside the hessian computes the gradient again (equal constants, made anew
    # by each reduction's rule: common by value); its tangents carry products with ones, a mask
    # beside a constant, reshapes of reshapes and a transpose of a transpose (all left out); the
    # data matrix times the basis of tangents is the matrix itself (not a product per direction)
    interp = dsl.Interpreter(seed=0)
    interp.run(LOGISTIC)
    rng = np.random.default_rng(0)
    w, a, t = rng.normal(size=6), rng.normal(size=(10, 6)), (rng.uniform(size=10) < 0.5) * 1.0
    jboth, both = interp.lookup("jboth"), interp.lookup("both")
    for _ in range(3):
        got, want = jboth(w, a, t), both(w, a, t)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-13)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-13)
    p = 1.0 / (1.0 + np.exp(-(a @ w)))
    np.testing.assert_allclose(got[1], a.T @ (a * (p * (1 - p))[:, None]) + np.eye(6), rtol=1e-12)
    source = _source(jboth)
    lines = [line for line in source.splitlines() if re.match(r"    v\d+ = ", line)]
    assert "K_nz" not in source and "reshape" not in source, source
    assert source.count("@") == 3 and source.count("raise _GF") == 1 and source.count("transpose") == 2, source
    assert len(lines) <= 16, source       # 34 without the rewrites
    for line in lines:      # every value computed is read
        name = line.split(" = ")[0].strip()
        assert re.search(rf"\b{name}\b", source.split(line, 1)[1]), (name, source)


def test_a_product_with_ones_is_left_out_only_where_it_keeps_the_dtype():
    # float32 times float64 ones is float64, as numpy and the interpreter give it
    interp = dsl.Interpreter(seed=0)
    interp.run("fn f(x) { return x * ones(3) }\nlet jf = jit(f)\nfn g(x) { return x * ones(3, dtype=\"float32\") }"
               "\nlet jg = jit(g)")
    x32, x64 = np.ones(3, np.float32), np.ones(3)
    for name in ("f", "g"):
        for x in (x32, x64):
            j, f = interp.lookup("j" + name), interp.lookup(name)
            assert j(x).dtype == f(x).dtype == np.result_type(x, np.float64 if name == "f" else np.float32)
            assert j(x).dtype == f(x).dtype
    assert "*" in _source(interp.lookup("jf"))


def test_equal_constant_tensors_are_one_value_and_a_repeated_guard_one_check():
    interp = dsl.Interpreter(seed=0)
    interp.run("fn f(x) {\n  let a = x * ones(4) * 2.0\n  let b = x * ones(4) * 2.0\n  return a + b\n}\n"
               "let jf = jit(f)")
    x = np.arange(4.0)
    jf = interp.lookup("jf")
    for _ in range(2):
        np.testing.assert_array_equal(jf(x), interp.lookup("f")(x))
    assert _source(jf).count("* 2.0") <= 1, _source(jf)



def test_a_zero_rule_left_out_before_a_solve_still_gives_the_exact_result():
    # grad(f) at 0 is 0 * inf inside (reference 6.7 makes it 0): jit leaves that rule out where a
    # NaN would show in a checked result, and solves carry a NaN through (or fail, and the call is
    # run exactly); either way the result is the interpreter's
    interp = dsl.Interpreter(seed=0)
    interp.run("fn f(w) { return sum(where(w > 0.0, sqrt(w), 0.0)) }\n"
               "let m = [[2.0, 0.0, 0.0], [1.0, 2.0, 0.0], [0.0, 1.0, 2.0]]\n"
               "fn steps(w) {\n  let g = grad(f)(w)\n"
               "  return (solve(m, g), triangular_solve(m, g, lower=true), inv(m + outer(g, g)) @ g,"
               " cholesky(m @ transpose(m) + outer(g, g)))\n}\nlet jsteps = jit(steps)")
    w = np.array([0.0, 1.0, 4.0])
    want = interp.lookup("steps")(w)
    assert all(np.all(np.isfinite(x)) for x in want)
    jsteps = interp.lookup("jsteps")
    for _ in range(3):
        for got, expected in zip(jsteps(w), want):
            np.testing.assert_array_equal(got, expected)
    assert "K_nz" not in _source(jsteps), _source(jsteps)


def test_a_uniform_constant_is_a_number_and_a_zero_rule_beside_a_finite_nonzero_constant_goes():
    # mean's cotangent is one number broadcast to the input's shape: the product reads the number,
    # not a tensor; a zero rule (reference 6.7) with a constant factor finite and never 0 zeroes
    # nothing (r is 0 only where the other factor is, and finite there), so it goes even where
    # its product reaches a comparison (where a left-out rule would be unsafe)
    interp = dsl.Interpreter(seed=0)
    interp.run("fn f(x) {\n  let g = grad(fn(x) => mean(x * x * 3.0))(x)\n  return where(g > 0.0, g, -g)\n}\n"
               "let jf = jit(f)\n"
               "fn h(x) { return grad(fn(x) => mean(x * x))(x) }\nlet jh = jit(h)")
    x = np.array([[0.5, -1.5, 2.0], [1.0, 0.0, -3.0]])
    for name in ("f", "h"):
        for v in (x, x.astype(np.float32)):
            got, want = interp.lookup("j" + name)(v), interp.lookup(name)(v)
            assert got.dtype == want.dtype == v.dtype
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    source = _source(interp.lookup("jf"))
    assert "K_nz" not in source and "(0.5 * v0)" in source, source
    try:
        import jax  # noqa: F401  (the XLA backend: the number stays weakly typed, float32 stays float32)
    except ImportError:
        return
    interp.run("let xf = jit(f, backend=\"xla\")")
    for v in (x, x.astype(np.float32)):
        got, want = interp.lookup("xf")(v), interp.lookup("f")(v)
        assert got.dtype == want.dtype == v.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6 if v.dtype == np.float32 else 1e-12)


def test_a_zero_rule_before_an_einsum_is_left_out_and_the_result_stays_exact():
    # c's 0 beside sqrt'(0) = inf is 0 (reference 6.7); an einsum carries a NaN into every term it
    # reads, so jit leaves the rule out, the checked gradient shows the NaN, and the call runs exactly
    interp = dsl.Interpreter(seed=0)
    interp.run("fn f(x, m, c) { return sum(c * sqrt(einsum(\"ij,j->i\", m, x))) }\n"
               "let g = grad(f)\nlet jg = jit(g)")
    m, c, x = np.array([[1.0, 2.0], [0.0, 0.0], [3.0, 1.0]]), np.array([1.0, 0.0, 2.0]), np.array([0.5, 1.5])
    want = interp.lookup("g")(x, m, c)
    assert np.isfinite(want).all()
    for _ in range(3):
        np.testing.assert_array_equal(interp.lookup("jg")(x, m, c), want)
    assert "K_nz" not in _source(interp.lookup("jg"))
