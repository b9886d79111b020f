"""Every differentiable operation's gradient against central finite differences (SPEC 6).

Random float64 inputs of several shapes, broadcasting cases included, and a
random cotangent for every output.
"""

import numpy as np
import pytest

import dsl

from gradcheck import check

rng = np.random.default_rng(42)


def r(*shape):
    """Random normal inputs."""
    return rng.standard_normal(shape) if shape else float(rng.standard_normal())


def pos(*shape):
    """Random inputs bounded away from zero and positive."""
    return rng.uniform(0.5, 2.0, shape) if shape else float(rng.uniform(0.5, 2.0))


def away_from_zero(*shape):
    """Random inputs with |x| >= 0.2, for functions with a kink at 0."""
    v = rng.uniform(0.2, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    return v if shape else float(v)


BINARY = [
    ("x + y", dict(x=r(3, 4), y=r(3, 4))),
    ("x + y", dict(x=r(3, 4), y=r(4))),          # broadcast a row
    ("x + y", dict(x=r(3, 1), y=r(1, 4))),       # both broadcast
    ("x + y", dict(x=r(3, 4), y=r())),           # a float
    ("x - y", dict(x=r(2, 3), y=r(3))),
    ("x - y", dict(x=r(), y=r(2, 2))),
    ("x * y", dict(x=r(3, 4), y=r(3, 1))),
    ("x * y", dict(x=r(), y=r())),
    ("x / y", dict(x=r(3, 4), y=pos(4))),
    ("x / y", dict(x=r(), y=pos())),
    ("x ** y", dict(x=pos(3, 4), y=r(3, 4))),
    ("x ** y", dict(x=pos(5), y=r())),
    ("x % y", dict(x=pos(4) * 3.3, y=np.array([0.7, 0.9, 1.1, 1.3]))),
    ("maximum(x, y)", dict(x=r(3, 4), y=r(4))),
    ("minimum(x, y)", dict(x=r(3, 4), y=r(3, 4))),
    ("pow(x, y)", dict(x=pos(3), y=r(3))),
]

SCALAR_CONSTANT = [
    ("2.5 * x", dict(x=r(3, 4))),
    ("x * 3", dict(x=r(2))),
    ("x ** 2", dict(x=r(4))),
    ("x ** 3.0", dict(x=r(4))),
    ("1.0 / x", dict(x=pos(4))),
    ("x - 1", dict(x=r())),
    ("-x", dict(x=r(2, 3))),
]

UNARY = [
    ("exp(x)", r(3, 4)), ("ln(x)", pos(3, 4)), ("log(x)", pos(3)), ("log2(x)", pos(5)),
    ("sin(x)", r(3, 4)), ("cos(x)", r(3, 4)), ("sqrt(x)", pos(3, 4)), ("abs(x)", away_from_zero(3, 4)),
    ("sigmoid(x)", r(3, 4)), ("relu(x)", away_from_zero(3, 4)), ("tanh(x)", r(3, 4)),
    ("silu(x)", r(3, 4)), ("gelu(x)", r(3, 4)), ("erf(x)", r(3, 4)), ("neg(x)", r(3)),
    ("exp(x)", r()), ("ln(x)", pos()), ("sqrt(x)", pos()), ("tanh(x)", r()), ("sigmoid(x)", r()),
    ("gelu(x)", r()), ("relu(x)", away_from_zero()), ("abs(x)", away_from_zero()),
]

MATMUL = [
    dict(x=r(3, 4), y=r(4, 5)),
    dict(x=r(4), y=r(4, 5)),
    dict(x=r(3, 4), y=r(4)),
    dict(x=r(4), y=r(4)),
    dict(x=r(2, 3, 4), y=r(4, 5)),
    dict(x=r(3, 4), y=r(2, 4, 5)),
    dict(x=r(2, 3, 4), y=r(2, 4, 5)),
    dict(x=r(2, 1, 3, 4), y=r(5, 4, 2)),
]

REDUCTIONS = [
    "sum(x)", "sum(x, axis=0)", "sum(x, 1)", "sum(x, axis=(0, 1))", "sum(x, axis=-1, keepdims=true)",
    "mean(x)", "mean(x, axis=0)", "mean(x, axis=1)",
    "max(x)", "max(x, axis=0)", "min(x, axis=1)", "min(x)",
    "logsumexp(x)", "logsumexp(x, axis=0)", "logsumexp(x, axis=1)",
]

SHAPES = [
    ("reshape(x, (4, 3))", dict(x=r(3, 4))),
    ("reshape(x, (2, -1))", dict(x=r(3, 4))),
    ("transpose(x)", dict(x=r(3, 4))),
    ("transpose(x, (1, 2, 0))", dict(x=r(2, 3, 4))),
    ("transpose(x) * x", dict(x=r())),           # of a number: the number
    ("prod(x) * x", dict(x=r())),                # likewise
    ("cumsum(x, 0) * x", dict(x=r())),           # a number's running sums: [x]
    ("cat((x, y), axis=0)", dict(x=r(2, 3), y=r(4, 3))),
    ("cat((x, y, x), axis=1)", dict(x=r(2, 3), y=r(2, 1))),
    ("stack((x, y))", dict(x=r(3), y=r(3))),
    ("stack((x, y), axis=1)", dict(x=r(2, 3), y=r(2, 3))),
    ("[x, y, x]", dict(x=r(3), y=r(3))),
    ("[x, y]", dict(x=r(), y=r())),
    ("tensor(((x, y), (y, x)))", dict(x=r(), y=r())),
    ("x[1]", dict(x=r(3, 4))),
    ("x[-1, 2]", dict(x=r(3, 4))),
    ("x[:, 1:3]", dict(x=r(3, 4))),
    ("x[::-1, ::2]", dict(x=r(3, 4))),
    ("x[[0.0, 2.0, 0.0]]", dict(x=r(3, 4))),                     # gather with a repeated index
    ("x[x > 0.0]", dict(x=r(3, 4))),                            # boolean mask
    ("gather(x, [2.0, 0.0, 2.0], axis=1)", dict(x=r(3, 4))),
    ("gather(x, [[1.0, 0.0], [2.0, 2.0]])", dict(x=r(3, 4))),
    ("where(x > 0.0, x * 2.0, y)", dict(x=r(3, 4), y=r(4))),
    ("clamp(x, -0.5, 0.5)", dict(x=away_from_zero(3, 4) * 1.3)),
    ("clamp(x, none, 0.3)", dict(x=r(6))),
    ("float(x)", dict(x=r(1))),
    ("float(x[0, 1])", dict(x=r(2, 2))),
]

NN = [
    ("softmax(x)", dict(x=r(3, 4))),
    ("softmax(x, axis=0)", dict(x=r(3, 4))),
    ("softmax(x)", dict(x=r(5))),
    ("log_softmax(x)", dict(x=r(3, 4))),
    ("log_softmax(x, axis=0)", dict(x=r(3, 4))),
    ("cross_entropy(x, [0.0, 3.0, 1.0])", dict(x=r(3, 4))),
    ("cross_entropy(x, 2)", dict(x=r(4))),
    ("cross_entropy(x, [[0.0, 2.0], [1.0, 1.0]])", dict(x=r(2, 2, 3))),     # a batch of sequences
    ("cross_entropy(x, y)", dict(x=r(3, 4), y=pos(3, 4) / 4.0)),
    ("layer_norm(x)", dict(x=r(3, 5))),
    ("layer_norm(x, g, b)", dict(x=r(3, 5), g=r(5), b=r(5))),
    ("layer_norm(x, g)", dict(x=r(2, 3, 4), g=r(4))),
    ("batch_norm(x)", dict(x=r(6, 3))),
    ("batch_norm(x, g, b)", dict(x=r(6, 3), g=r(3), b=r(3))),
    ("ssm_scan(a, b, x)", dict(a=rng.uniform(-0.9, 0.9, (6, 3)), b=r(6, 3), x=r(6, 3))),
    ("ssm_scan(a, b, x)", dict(a=rng.uniform(-0.9, 0.9, (5, 1)), b=r(3), x=r(5, 3))),
    ("ssm_scan(a, 1.0, x)", dict(a=rng.uniform(-0.9, 0.9, 7), x=r(7))),
]


@pytest.mark.parametrize("expr,args", BINARY, ids=[f"{e}-{i}" for i, (e, _) in enumerate(BINARY)])
def test_binary(expr, args):
    check(expr, **args)


@pytest.mark.parametrize("expr,args", SCALAR_CONSTANT, ids=[e for e, _ in SCALAR_CONSTANT])
def test_with_constants(expr, args):
    check(expr, **args)


@pytest.mark.parametrize("expr,x", UNARY, ids=[f"{e}-{i}" for i, (e, _) in enumerate(UNARY)])
def test_unary(expr, x):
    check(expr, x=x)


@pytest.mark.parametrize("args", MATMUL, ids=[f"{a['x'].shape}@{a['y'].shape}" for a in MATMUL])
def test_matmul(args):
    check("x @ y", **args)
    check("matmul(x, y)", **args)


@pytest.mark.parametrize("expr", REDUCTIONS)
def test_reductions(expr):
    check(expr, x=r(3, 4))


@pytest.mark.parametrize("expr,args", SHAPES, ids=[e for e, _ in SHAPES])
def test_shapes_and_indexing(expr, args):
    check(expr, **args)


@pytest.mark.parametrize("expr,args", NN, ids=[f"{e}-{i}" for i, (e, _) in enumerate(NN)])
def test_nn_ops(expr, args):
    check(expr, **args)


def test_set_index_gradient_flows_to_both_tensor_and_value():
    from gradcheck import _interp, numeric_grad, assert_close
    interp = _interp()
    interp.run("fn f(x, y, c) { let z = x * 1.0\n z[1] = y * 2.0\n return sum(z * c) }")
    f = interp.lookup("f")
    x, y, c = r(3, 4), r(4), r(3, 4)
    gx, gy = interp.lookup("grad")(f, (0, 1))(x, y, c)
    assert_close(gx, numeric_grad(lambda *a: f(*a, c), [x, y], 0), "d/dx")
    assert_close(gy, numeric_grad(lambda *a: f(*a, c), [x, y], 1), "d/dy")
    assert np.all(np.asarray(gx)[1] == 0.0)


REPEATS = """
fn f(x, v, c) {
    let z = x * 1.0
    z[tensor([0, 2, 0])] = v * v            # position 0 written twice: v[2] stays
    z[tensor([1, 1]), :] = sin(z[2:4, :])   # a row written twice, from rows 2 and 3: row 3 stays
    z[3, tensor([0, 0])] = 2.0 * v[0, 0]    # one number written twice
    z[tensor([-1, 3]), 1] = v[1, 0:2]       # row 3 twice, once counted from the end
    return sum(z * c)
}
"""


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_a_position_assigned_twice_passes_the_gradient_of_the_write_that_stays(backend):
    # numpy keeps the last write to a repeated index; only that write reaches the result, so
    # only it receives the gradient (both did, and `z[[0, 0]] = [a, b]` gave a the gradient of b)
    from gradcheck import assert_close, jax_or_skip, numeric_grad
    if backend == "xla":
        jax_or_skip()
    interp = dsl.Interpreter(backend=backend)
    interp.run(REPEATS + "let gf = jit(grad(f, argnums=(0, 1)))")
    x, v, c = r(4, 3), r(3, 3), r(4, 3)
    f, grad = interp.lookup("f"), interp.lookup("grad")
    gx, gv = grad(f, (0, 1))(x, v, c)
    assert_close(gx, numeric_grad(lambda *a: f(*a, c), [x, v], 0), "d/dx")
    assert_close(gv, numeric_grad(lambda *a: f(*a, c), [x, v], 1), "d/dv")
    assert np.all(gv[0, 1:] == 0.0)     # v's row 0 was overwritten at 0 (its first entry is read later)
    jx, jv = interp.lookup("gf")(x, v, c)
    np.testing.assert_allclose(jx, gx, rtol=1e-13)
    np.testing.assert_allclose(jv, gv, rtol=1e-13)
    assert interp.eval("f")(x, v, c) == pytest.approx(f(x, v, c))


def test_a_position_assigned_twice_agrees_with_jax():
    from gradcheck import jax_or_skip
    jax = jax_or_skip()
    jnp = jax.numpy
    interp = dsl.Interpreter()
    interp.run(REPEATS)
    x, v, c = r(4, 3), r(3, 3), r(4, 3)

    def f(x, v):
        z = x.at[jnp.array([0, 2, 0])].set(v * v)
        z = z.at[jnp.array([1, 1]), :].set(jnp.sin(z[2:4, :]))
        z = z.at[3, jnp.array([0, 0])].set(2.0 * v[0, 0])
        z = z.at[jnp.array([-1, 3]), 1].set(v[1, 0:2])
        return jnp.sum(z * c)
    want = jax.grad(f, argnums=(0, 1))(x, v)
    got = interp.lookup("grad")(interp.lookup("f"), (0, 1))(x, v, c)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-13, atol=1e-15)


def test_iterating_tensor_rows_is_differentiable():
    from gradcheck import _interp, numeric_grad, assert_close
    interp = _interp()
    interp.run("fn f(x, c) { let t = 0.0\n for row in x { t = t + sum(row * row) * c }\n return t }")
    f = interp.lookup("f")
    x = r(3, 2)
    (g,) = interp.lookup("grad")(f, (0,))(x, 0.7)
    assert_close(g, numeric_grad(lambda *a: f(*a, 0.7), [x], 0), "d/dx")


def test_cross_entropy_with_indices_has_the_gradient_of_its_one_hot_probabilities_to_the_bit():
    # class indices take a fused path (rules._cross_entropy); one-hot probabilities the general one
    interp = dsl.Interpreter(seed=0)
    interp.run("fn by_index(x) { return cross_entropy(x, [2.0, 0.0, 3.0]) * 3.0 }\n"
               "fn by_probs(x) { return cross_entropy(x, one_hot([2.0, 0.0, 3.0], 4)) * 3.0 }")
    x = rng.standard_normal((3, 4)) * 5.0
    by_index, by_probs = interp.grad("by_index")(x), interp.grad("by_probs")(x)
    np.testing.assert_array_equal(by_index, by_probs)
    assert interp.lookup("by_index")(x) == interp.lookup("by_probs")(x)


@pytest.mark.parametrize("expr", ["layer_norm(x, g, b)", "batch_norm(x, g, b)"])
def test_normalisations_keep_their_forward_statistics_for_the_reverse_pass(expr, monkeypatch):
    # an eager gradient reads the mean and 1 / sqrt(var + eps) the forward kernel kept (it does
    # not compute them again); a second derivative, whose inner level sees boxed values, computes
    # them on the outer trace; both against central differences, with a random cotangent
    import dsl.core.primitives.nn as N
    from gradcheck import check_second
    calls = []
    real = N._statistics
    monkeypatch.setattr(N, "_statistics", lambda *a: calls.append(1) or real(*a))
    args = dict(x=r(4, 5), g=r(5), b=r(5))
    check(expr, **args)
    assert calls == []
    check_second(expr, **args)
    assert calls
