"""Second derivatives at the special values where rules are tempted to take shortcuts.

A rule may not branch on the raw value of an argument that is itself differentiated at
an outer level (pow's exponent at 0 or 2), and no rule may hand a numpy scalar or a
0-d tensor where a float belongs. Each case compares dg's full Hessian of f(x, y)
(reverse over reverse) with central second differences of f's own values in float64.

At a kink (a tie of maximum, a bound of clamp, abs and relu at 0) no finite difference
applies; there dg's Hessian must be the mix of the smooth pieces that its first-order
convention picks (SPEC 6.6): half of each for ties, the x piece at clamp's bounds, the
zero piece for relu at 0, half of each for abs at 0. Every piece here is a polynomial
of degree at most 2, so second differences of a piece are exact up to rounding.
"""

import numpy as np
import pytest

import dsl

H = 1e-4


def _fn(expr):
    """A dg function f(x, y) of the expression, and dg's hessian of it over (x, y)."""
    interp = dsl.Interpreter()
    interp.run(f"fn f(x, y) {{ return {expr} }}\n"
               f"fn h(p) {{ return hessian(fn(v) => f(v[0], v[1]))(p) }}")
    return interp.lookup("f"), interp.lookup("h")


def fd_hessian(f, x, y):
    """Central second differences of f at (x, y)."""
    def d2(i, j):
        e = np.zeros(2)
        e[i] += H
        u = np.zeros(2)
        u[j] += H
        at = lambda p: f(float(x + p[0]), float(y + p[1]))
        return (at(e + u) - at(e - u) - at(u - e) + at(-e - u)) / (4 * H * H)
    return np.array([[d2(0, 0), d2(0, 1)], [d2(1, 0), d2(1, 1)]])


def dg_hessian(expr, x, y):
    """dg's exact Hessian, also checked to agree with nested grads of f."""
    f, h = _fn(expr)
    hess = np.asarray(h(np.array([x, y])))
    interp = dsl.Interpreter()
    interp.set("x0", x)
    interp.set("y0", y)
    interp.run(f"fn f(x, y) {{ return {expr} }}\n"
               "let dxx = grad(grad(fn(x) => f(x, y0)))(x0)\n"
               "let dxy = grad(fn(y) => grad(fn(x) => f(x, y))(x0))(y0)\n"
               "let dyx = grad(fn(x) => grad(fn(y) => f(x, y))(y0))(x0)\n"
               "let dyy = grad(grad(fn(y) => f(x0, y)))(y0)\n")
    nested = np.array([[interp.get("dxx"), interp.get("dyx")], [interp.get("dxy"), interp.get("dyy")]])
    for name in ("dxx", "dxy", "dyx", "dyy"):
        assert type(interp.get(name)) is float, f"{name} of {expr} is not a float"
    np.testing.assert_allclose(nested, hess, rtol=1e-12, atol=1e-12,
                               err_msg=f"nested grads and hessian disagree for {expr}")
    return hess, f


SMOOTH = [
    # pow at the exponents a fast path could special-case, with the exponent differentiated too
    ("x ** y", 1.5, 2.0), ("x ** y", 1.5, 0.0), ("x ** y", 1.5, 1.0), ("x ** y", 1.5, 0.5),
    ("x ** y", 1.5, 3.0), ("x ** y", 0.7, 2.0), ("x ** y", 0.7, 0.0),
    ("x ** y", 1.0, 2.0), ("x ** y", 1.0, 0.0), ("x ** y", 1.0, 0.5),      # base 1
    ("pow(x, y)", 1.5, 2.0), ("(x * y) ** y", 1.5, 2.0), ("x ** (y * y)", 1.3, 0.0),
    ("x ** x * y", 2.0, 1.5),
    ("where(x > 0.5, x * y, x * x)", 1.0, 2.0), ("where(true, -(-x * y), 0.0)", 0.6, 1.5),
    ("where(x > 0.5, 2.0 - (1.0 - x * y), 0.0)", 0.6, 1.5),
    ("sum(where([true, false], [x, y] * x, [y, x] * y))", 0.6, 1.5),
    ("where(x > 0.5, x, 0.0) * y * 2.0", 1.0, 3.0),
    # where the first-order cotangent of a node is exactly 0, its second derivative still flows
    ("(1.0 - x * y) ** 2", 1.0, 1.0), ("(x - y) ** 2 * x", 1.0, 1.0), ("exp(x) * (y - 1.0) ** 2", 0.5, 1.0),
    ("ln(x) * (y - 2.0) * (y - 2.0)", 1.5, 2.0), ("sqrt(x) * (y - x) ** 2", 1.0, 1.0),
    ("(x / y - 1.0) ** 2", 2.0, 2.0), ("sin(x - y) ** 2", 0.5, 0.5),
]


@pytest.mark.parametrize("expr,x,y", SMOOTH, ids=[f"{e}@{x},{y}" for e, x, y in SMOOTH])
def test_second_derivatives_at_special_values(expr, x, y):
    hess, f = dg_hessian(expr, x, y)
    want = fd_hessian(f, x, y)
    np.testing.assert_allclose(hess, want, rtol=1e-5, atol=1e-5, err_msg=expr)
    np.testing.assert_allclose(hess, hess.T, rtol=1e-12, atol=1e-12, err_msg=f"{expr}: not symmetric")


def test_the_issue_examples():
    # the exponent's dependence at exactly 2 and exactly 0 (the true values are JAX's)
    f, _ = _fn("x")
    interp = dsl.Interpreter()
    interp.run("let a = grad(fn(y) => grad(fn(x) => x ** y)(1.5))(2.0)\n"
               "let b = grad(grad(fn(x) => x ** x))(2.0)\n"
               "let c = grad(fn(y) => grad(fn(x) => x ** y)(1.5))(0.0)\n")
    assert interp.get("a") == pytest.approx(2.716395324324493, rel=1e-14)
    assert interp.get("b") == pytest.approx(13.46698950015237, rel=1e-14)
    assert interp.get("c") == pytest.approx(2 / 3, rel=1e-14)


# Pure second derivatives where only one direction is defined: base 0 (x**y for y <= 0 or
# x < 0 is not differentiable there, so only d2/dx2 and d2/dy2 where they exist).
AT_ZERO = [("x ** y", 0.0, 2.0, 0), ("x ** y", 0.0, 3.0, 0), ("x ** y", 0.0, 1.0, 0), ("x ** y", 0.0, 0.0, 0),
           ("x ** y", 0.0, 2.0, 1), ("x ** y", 0.0, 0.5, 1), ("x ** y", 0.0, 3.0, 1)]


@pytest.mark.parametrize("expr,x,y,axis", AT_ZERO, ids=[f"{e}@{x},{y}/d{'xy'[a]}2" for e, x, y, a in AT_ZERO])
def test_pow_at_base_zero(expr, x, y, axis):
    # the mixed derivative is singular at x = 0, so only the pure one is asked for
    interp = dsl.Interpreter()
    interp.run(f"fn f(x, y) {{ return {expr} }}\n"
               f"let d2 = grad(grad(fn(t) => f({'t, ' + repr(y) if axis == 0 else repr(x) + ', t'})))"
               f"({[x, y][axis]!r})")
    got = interp.get("d2")
    step = np.eye(2)[axis] * H
    f = interp.lookup("f")
    at = lambda p: f(float(x + p[0]), float(y + p[1]))
    want = (at(step) - 2 * at(np.zeros(2)) + at(-step)) / (H * H)
    assert type(got) is float and np.isfinite(got)
    assert got == pytest.approx(want, rel=1e-6, abs=1e-6)


# (expression at a kink, point, pieces with their weights): dg's Hessian must be the
# weighted sum of the pieces' Hessians.
KINKS = [
    ("maximum(x * y, x + y)", 2.0, 2.0, [("x * y", 0.5), ("x + y", 0.5)]),
    ("minimum(x * x, y * 3.0)", 3.0, 3.0, [("x * x", 0.5), ("y * 3.0", 0.5)]),
    ("maximum(x, y) * x", 1.5, 1.5, [("x * x", 0.5), ("y * x", 0.5)]),
    ("sum(maximum([x, y * y], [x * y, 1.0]))", 2.0, 1.0, [("x * 0.5 + x * y * 0.5 + y * y * 0.5 + 0.5", 1.0)]),
    ("clamp(x * y, y, 6.0)", 3.0, 2.0, [("x * y", 1.0)]),        # at the upper bound: x's piece
    ("clamp(x * y, x + y, 9.0)", 2.0, 2.0, [("x * y", 1.0)]),    # at the lower bound, itself differentiated
    ("clamp(x, y, y) * x", 1.0, 1.0, [("x * x", 1.0)]),
    ("abs(x * y - 2.0)", 1.0, 2.0, [("x * y", 0.5), ("-x * y", 0.5)]),
    ("relu(x * y - 2.0) * x", 1.0, 2.0, [("0.0", 1.0)]),
    ("relu(x * x - y) + x * y", 2.0, 4.0, [("x * y", 1.0)]),
]


@pytest.mark.parametrize("expr,x,y,pieces", KINKS, ids=[f"{e}@{x},{y}" for e, x, y, _ in KINKS])
def test_second_derivatives_at_kinks(expr, x, y, pieces):
    hess, _ = dg_hessian(expr, x, y)
    want = sum(w * fd_hessian(_fn(piece)[0], x, y) for piece, w in pieces)
    np.testing.assert_allclose(hess, want, rtol=1e-5, atol=1e-5, err_msg=expr)


def test_where_keeps_numbers_numbers(run):
    out = run('print(type(where(true, 1.0, 0.0)), type(where(false, 1, 0)), type(where(true, true, false)))\n'
              'print(type(grad(fn(x) => where(x > 0.5, x, 0.0) * 2.0)(1.0)))\n'
              'print(type(where([true], 1.0, 0.0)), type(where(true, [1.0], 0.0)))\n'
              'print(grad(fn(x) => where(true, -(-x), 0.0))(0.6))\n'
              'print(grad(fn(x) => where(x > 0.0, 2.0 - (1.0 - x), 0.0))(0.6))\n')
    assert out == "float float bool\nfloat\ntensor tensor\n1.0\n1.0\n"


def test_gradients_of_floats_are_floats(run):
    # every rule's cotangent of a float argument is a float, never a numpy scalar or a 0-d tensor
    exprs = ["where(x > 0.0, x, 0.0)", "clamp(x, 0.0, 1.0)", "maximum(x, 0.2)", "sum([x, x] * [1.0, 2.0])",
             "x ** 2.0", "x ** 2", "abs(x)", "relu(x)", "mean([x, 1.0])", "max([x, 0.1])", "sum(x + [1.0, 2.0])",
             "logsumexp([x, 1.0])", "sum(softmax([x, 1.0]) * [1.0, 2.0])", "-(-(where(true, x, 0.0)))",
             "sum(reshape(x, (1,)))", "sum(tensor(x) * 2.0)"]
    src = "".join(f"print(type(grad(fn(x) => {e})(0.6)), type(grad(grad(fn(x) => {e} * x))(0.6)))\n"
                  for e in exprs)
    assert run(src) == "float float\n" * len(exprs)


@pytest.mark.parametrize("how", ["grad", "jit", "xla", "vmap", "jacrev", "hessian"])
def test_a_zero_cotangent_beside_an_infinite_entry_of_a_matrix_product_adds_zero(how):
    # rule 7 inside a matrix product's sums: a row of data masked out by where holds an inf and a
    # nan; its cotangent is 0, so its terms are 0 (JAX and PyTorch give NaN for every entry)
    if how == "xla":
        pytest.importorskip("jax")
    interp = dsl.Interpreter(seed=0)
    a = np.array([[1.0, np.inf, 2.0], [3.0, 4.0, np.nan], [1.0, -2.0, 3.0], [0.5, 1.0, 0.0]])
    keep = np.array([False, False, True, True])
    interp.set("a", a)
    interp.set("keep", keep)
    interp.run("fn loss(w) { return sum(where(keep, a @ w, 0.0) ** 2.0) }\n"
               "fn rows(w) { return sum(where(keep, w @ transpose(a), 0.0) ** 2.0) }")
    w = np.array([0.5, -1.0, 2.0])
    kept = a[keep]
    want = 2.0 * kept.T @ (kept @ w)
    forms = {"grad": "grad({f})", "jit": "jit(grad({f}))", "xla": "jit(grad({f}), backend=\"xla\")",
             "vmap": "fn(w) => vmap(grad({f}))(stack((w, w)))[1]", "jacrev": "fn(w) => jacrev({f})(w)",
             "hessian": "fn(w) => hessian({f})(w) @ w"}
    for f in ("loss", "rows"):
        g = interp.run(forms[how].format(f=f))
        for _ in range(2):
            got = g(w)
            np.testing.assert_allclose(got, 2.0 * kept.T @ kept @ w if how == "hessian" else want, rtol=1e-13)
