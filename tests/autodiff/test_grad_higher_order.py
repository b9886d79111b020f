"""Second derivatives by reverse over reverse, checked against finite differences of the gradient,
and the absence of perturbation confusion (SPEC 6.9)."""

import numpy as np
import pytest

import dsl
from gradcheck import check_second

rng = np.random.default_rng(7)


def r(*shape):
    """Random normal inputs."""
    return rng.standard_normal(shape) if shape else float(rng.standard_normal())


SECOND = [
    ("exp(x)", dict(x=r(3, 2))),
    ("sin(x)", dict(x=r(4))),
    ("x * y", dict(x=r(3), y=r(3))),
    ("x * x * x", dict(x=r(2, 2))),
    ("x @ y", dict(x=r(3, 4), y=r(4, 2))),
    ("y @ tanh(x)", dict(x=r(4, 2), y=r(3, 4))),
    ("tanh(x)", dict(x=r(5))),
    ("softmax(x)", dict(x=r(2, 4))),
    ("softmax(x, axis=0)", dict(x=r(3, 2))),
    ("layer_norm(x)", dict(x=r(2, 5))),
    ("layer_norm(x, g, b)", dict(x=r(2, 4), g=r(4), b=r(4))),
    ("batch_norm(x)", dict(x=r(5, 2))),
    ("sigmoid(x)", dict(x=r(4))),
    ("log_softmax(x)", dict(x=r(2, 3))),
    ("logsumexp(x, axis=1)", dict(x=r(2, 3))),
    ("cross_entropy(x, [1.0, 0.0])", dict(x=r(2, 3))),
    ("sqrt(x * x + 1.0)", dict(x=r(4))),
    ("ln(x * x + 1.0) / (x * x + 2.0)", dict(x=r(3))),
    ("x ** 3.0", dict(x=r(3))),
    ("gelu(x)", dict(x=r(4))),
    ("silu(x)", dict(x=r(4))),
    ("ssm_scan(x, x, x)", dict(x=rng.uniform(-0.8, 0.8, (5, 2)))),
    ("x[[0.0, 2.0, 2.0]] * x[1:4]", dict(x=r(5))),
    ("cat((x, x * x), axis=0)", dict(x=r(2, 2))),
    ("transpose(reshape(x, (3, 2))) @ x[0:3]", dict(x=r(6))),
]


@pytest.mark.parametrize("expr,args", SECOND, ids=[e for e, _ in SECOND])
def test_second_derivatives(expr, args):
    check_second(expr, **args)


def run(src):
    """Run dg source; return the interpreter."""
    interp = dsl.Interpreter()
    interp.run(src)
    return interp


def test_grad_of_grad_is_exact():
    i = run("let d2 = grad(grad(fn(x) => x * x * x))(2.0)\nlet d3 = grad(grad(grad(fn(x) => x ** 4.0)))(1.5)")
    assert i.lookup("d2") == 12.0
    assert abs(i.lookup("d3") - 24 * 1.5) < 1e-12


def test_no_perturbation_confusion():
    # d/dx [x * d/dy (x + y)] = 1 (a confused implementation says 2)
    i = run("fn inner(x) { return grad(fn(y) => x + y)(1.0) }\n"
            "let d = grad(fn(x) => x * inner(x))(2.0)")
    assert i.lookup("d") == 1.0


def test_nested_grad_closing_over_outer_variable():
    # d/dx [ d/dy (x * y * y) at y=3 ] = d/dx (6x) = 6
    i = run("let d = grad(fn(x) => grad(fn(y) => x * y * y)(3.0))(5.0)")
    assert i.lookup("d") == 6.0


def test_a_read_of_an_input_holding_an_outer_value_is_recorded_outside():
    # y is an Input of the inner grad (not differentiated there) holding x * 2.0, recorded by
    # the outer grad: reading y[1] records nothing inside and a node outside. d/dx 2 x[1] = e_1 * 2
    i = run("fn inner(w, y) { return w * y[1] }\nfn f(x) { return grad(inner)(1.0, x * 2.0) }\n"
            "let g = grad(f)(tensor([1.0, 2.0, 3.0]))\nlet h = jacfwd(f)(tensor([1.0, 2.0, 3.0]))")
    assert i.lookup("g").tolist() == [0.0, 2.0, 0.0] and i.lookup("h").tolist() == [0.0, 2.0, 0.0]


def test_hessian_matches_analytic():
    i = run("fn f(v) { return sum(v * v * v) + v[0] * v[1] }\nlet h = hessian(f)([1.0, 2.0])")
    assert np.allclose(i.lookup("h"), [[6.0, 1.0], [1.0, 12.0]])


def test_hessian_of_softmax_cross_entropy_is_symmetric_and_matches_finite_differences():
    i = run("fn f(x) { return cross_entropy(x, 1) }")
    x = np.array([0.3, -0.2, 0.9])
    h = i.lookup("hessian")(i.lookup("f"))(x)
    p = np.exp(x) / np.exp(x).sum()
    assert np.allclose(h, np.diag(p) - np.outer(p, p), atol=1e-12)


def test_hessian_is_not_finite_differences():
    # exact for a polynomial: finite differences would leave ~1e-6 errors
    i = run("let h = hessian(fn(x) => sum(x ** 4.0))([1000.0])")
    assert i.lookup("h")[0, 0] == 12.0 * 1000.0 ** 2


def test_jacobian_shape_is_out_shape_plus_in_shape():
    i = run("let j = jacobian(fn(x) => x @ [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])([[1.0, 1.0], [2.0, 2.0]])")
    j = i.lookup("j")
    assert j.shape == (2, 3, 2, 2)
    assert j[1, 2, 1, 1] == 6.0 and j[1, 2, 0, 1] == 0.0


def test_gradient_inside_a_differentiated_loss():
    # a loss that contains an inner gradient step (meta-learning style), checked by finite differences
    i = run("""
fn inner_loss(w, x) { return sum((x * w - 1.0) ** 2) }
fn outer(w) {
    let x = [1.0, 2.0]
    let w2 = w - 0.1 * grad(inner_loss)(w, x)
    return inner_loss(w2, x)
}
""")
    w = np.array([0.3, -0.4])
    g = i.lookup("grad")(i.lookup("outer"))(w)
    f = i.lookup("outer")
    eps = 1e-6
    num = np.array([(f(w + eps * e) - f(w - eps * e)) / (2 * eps) for e in np.eye(2)])
    assert np.allclose(g, num, rtol=1e-6)


def test_jacobian_and_hessian_take_one_backward_pass_for_every_row_at_once(monkeypatch):
    # issue 12 item 5: the unit seeds of all the rows go through one (batched) backward pass, not
    # one pass per row of the result
    import dsl.transform.transforms as T
    passes = []
    real = T.backward
    monkeypatch.setattr(T, "backward", lambda *a, **k: passes.append(1) or real(*a, **k))
    i = run("fn f(x) { return sin(x) * x[0] }\nfn g(x) { return sum(sin(x) * x ** 2) }")
    x = np.linspace(-1.0, 1.0, 6)
    jac = i.lookup("jacobian")(i.lookup("f"))(x)
    assert len(passes) == 1
    want = np.diag(np.cos(x) * x[0])
    want[:, 0] += np.sin(x)
    np.testing.assert_allclose(jac, want, rtol=1e-12)
    passes.clear()
    hess = i.lookup("hessian")(i.lookup("g"))(x)
    assert len(passes) == 1
    np.testing.assert_allclose(hess, np.diag((2.0 - x * x) * np.sin(x) + 4.0 * x * np.cos(x)), rtol=1e-12)
