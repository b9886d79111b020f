"""Functions that are smooth in the mathematics have exact derivatives of every order everywhere,
also at the points where their formulas switch (0 of an abs or a max, ties of a max or a sort).

Each case is checked at such a point against its closed form: the gradient, the Hessian by
forward over reverse (`hessian`), by reverse over reverse (`jacrev` of `grad`)
and under jit, and a third derivative where one is cheap to write. The standard library's
functions that are not smooth in the mathematics are not here: relu, abs, max, clamp, sort (a
derivative at their kinks is a convention, reference section 6), std and norm at 0 (a square
root's), adam at a zero second moment (the same), argmax_rows and accuracy (piecewise constant).
"""

import numpy as np
import pytest

import dsl


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def _lse_hessian(x):
    p = _softmax(x)
    return np.diag(p) - np.outer(p, p)


Z = np.array([0.0, 0.0, 2.0, -1.5])          # two logits at the kink of |z|
Y = np.array([1.0, 0.0, 0.3, 1.0])
TIE = np.array([0.5, 0.5, 0.5])              # every entry tied for the max
C = np.array([1.0, -2.0, 0.5])

# (name, dg function of x, x, gradient, Hessian)
CASES = [
    ("nn.bce_with_logits at z = 0", "fn(x) => nn.bce_with_logits(x, Y)", Z,
     (sigmoid(Z) - Y) / 4, np.diag(sigmoid(Z) * (1 - sigmoid(Z))) / 4),
    ("nn.bce_with_logits of a column", "fn(x) => nn.bce_with_logits(reshape(x, (4, 1)), Y)", Z,
     (sigmoid(Z) - Y) / 4, np.diag(sigmoid(Z) * (1 - sigmoid(Z))) / 4),
    ("nn.mse where prediction equals target", "fn(x) => nn.mse(x, Z)", Z.copy(),
     np.zeros(4), 2 * np.eye(4) / 4),
    ("nn.dense", "fn(x) => sum(nn.dense(nn.Linear(reshape(x[0:2], (1, 2)), x[2:4]), [[1.0], [2.0]]) * [1.0, 2.0])",
     np.zeros(4), np.array([3.0, 6.0, 2.0, 4.0]), np.zeros((4, 4))),
    ("optim.sgd", "fn(x) => sum(optim.sgd(x, x * x, 0.5))", Z, 1.0 - Z, -np.eye(4)),
    ("softplus at 0", "fn(x) => sum(softplus(x))", Z, sigmoid(Z), np.diag(sigmoid(Z) * (1 - sigmoid(Z)))),
    ("sigmoid at 0", "fn(x) => sum(sigmoid(x))", Z, sigmoid(Z) * (1 - sigmoid(Z)),
     np.diag(sigmoid(Z) * (1 - sigmoid(Z)) * (1 - 2 * sigmoid(Z)))),
    ("logsumexp at a tie", "logsumexp", TIE, _softmax(TIE), _lse_hessian(TIE)),
    ("log_softmax at a tie", "fn(x) => sum(log_softmax(x) * C)", TIE,
     C - C.sum() * _softmax(TIE), -C.sum() * _lse_hessian(TIE)),
    ("softmax at a tie", "fn(x) => sum(softmax(x) * C)", TIE,
     _lse_hessian(TIE) @ C, None),
    ("cross_entropy at a tie", "fn(x) => cross_entropy(reshape(x, (1, 3)), [2])", TIE,
     _softmax(TIE) - np.eye(3)[2], _lse_hessian(TIE)),
]


def _softmax_hessian(x, c):
    """The Hessian of sum(softmax(x) * c): d2 p_k / dx_i dx_j, contracted with c."""
    p = _softmax(x)
    n = len(x)
    h = np.zeros((n, n))
    for k in range(n):
        dk = np.eye(n)[k] - p           # d ln p_k / dx
        h += c[k] * p[k] * (np.outer(dk, dk) - _lse_hessian(x))
    return h


CASES = [(n, f, x, g, _softmax_hessian(TIE, C) if h is None else h) for n, f, x, g, h in CASES]

SRC = """import nn
import optim
let F = {f}
let g = grad(F)(X)
let h = hessian(F)(X)
let h_rev = jacrev(grad(F))(X)
let hj = jit(hessian(F))
let h_jit = hj(X)
let h_jit2 = hj(X)
"""


@pytest.mark.parametrize("name, f, x, g, h", CASES, ids=[c[0] for c in CASES])
def test_derivatives_at_the_kinks_of_a_smooth_function_are_its_closed_form(name, f, x, g, h):
    interp = dsl.Interpreter()
    interp.set("X", x)
    interp.set("Y", Y)
    interp.set("Z", Z)
    interp.set("C", C)
    interp.run(SRC.format(f=f))
    got = {k: np.asarray(interp.lookup(k), dtype=float) for k in ("g", "h", "h_rev", "h_jit", "h_jit2")}
    np.testing.assert_allclose(got["g"], g, rtol=1e-12, atol=1e-14, err_msg=f"{name}: gradient")
    for k in ("h", "h_rev", "h_jit", "h_jit2"):
        np.testing.assert_allclose(got[k], h, rtol=1e-12, atol=1e-14, err_msg=f"{name}: {k}")


@pytest.mark.parametrize("z", [0.0, 0.7])
def test_bce_with_logits_third_derivative_is_the_closed_form(run, z):
    # s (1 - s) (1 - 2 s): 0 at z = 0; grad three times, through the formula's every level
    s = sigmoid(z)
    out = run(f"import nn\nlet f = fn(z) => nn.bce_with_logits(z, 1.0)\nprint(grad(grad(grad(f)))({z}))")
    assert abs(float(out) - s * (1 - s) * (1 - 2 * s)) < 1e-14


def test_newtons_method_on_logistic_regression_takes_its_exact_steps(run):
    # from w = 0 every logit is 0, where the Hessian of the loss is X^T X / 4n: with it exact,
    # Newton's method converges quadratically, as in JAX
    src = """import nn
seed(3)
let X = randn((64, 3))
let y = where(X @ [1.5, -2.0, 0.5] + randn((64,)) > 0.0, 1.0, 0.0)
fn loss(w) { return nn.bce_with_logits(X @ w, y) }
let w = zeros((3,))
print(hessian(loss)(w) - transpose(X) @ X / 256.0)
"""
    out = run(src)
    assert all(abs(float(v)) < 1e-15 for v in out.replace("[", " ").replace("]", " ").replace(",", " ").split())
