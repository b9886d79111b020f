"""The differentiation builtins of SPEC section 6: argnums, value_and_grad, jacobian,
stop_gradient, custom_vjp, checkpoint, and the errors they give."""

import numpy as np
import pytest

import dsl
from dsl.errors import DgError


def run(src):
    """Run dg source; return the interpreter (keeping its tapes, which some tests read)."""
    interp = dsl.Interpreter(seed=0, keep_tape=True)
    interp.run(src, "t.dg")
    return interp


def fails(src):
    """Run dg source expecting a DgError; return it."""
    with pytest.raises(DgError) as info:
        run(src)
    return info.value


def test_argnums_int_and_tuple():
    i = run("fn f(a, b, c) { return a * b * b + c }\n"
            "let g1 = grad(f, argnums=1)(2.0, 3.0, 4.0)\n"
            "let g02 = grad(f, argnums=(0, 2))(2.0, 3.0, 4.0)\n"
            "let g_neg = grad(f, -1)(2.0, 3.0, 4.0)")
    assert i.lookup("g1") == 12.0
    assert i.lookup("g02") == (9.0, 1.0)
    assert i.lookup("g_neg") == 1.0


def test_value_and_grad_returns_value_and_gradient():
    i = run("let v, g = value_and_grad(fn(x) => sum(x * x))([1.0, 2.0])\n"
            "let v2, gs = value_and_grad(fn(a, b) => a / b, argnums=(0, 1))(1.0, 4.0)")
    assert i.lookup("v") == 5.0 and np.array_equal(i.lookup("g"), [2.0, 4.0])
    assert i.lookup("v2") == 0.25 and i.lookup("gs") == (0.25, -1.0 / 16)


def test_non_scalar_result_is_an_error_naming_the_shape():
    err = fails("let g = grad(fn(x) => x * 2.0)([1.0, 2.0, 3.0])")
    assert err.kind == "grad"
    assert "(3,)" in err.message and "single number" in err.message
    assert "sum" in (err.hint or "") and "jacobian" in (err.hint or "")
    assert err.line == 1


def test_differentiating_an_int_suggests_a_float_literal():
    err = fails("let g = grad(fn(x) => x * 2.0)(3)")
    assert err.kind == "grad" and "int" in err.message
    assert "3.0" in (err.hint or "")


def test_unused_argument_gets_zeros_of_its_shape():
    i = run("let g = grad(fn(x, y) => sum(x), argnums=(0, 1))([1.0, 2.0], [[1.0, 2.0, 3.0]])\n"
            "let g0 = grad(fn(x) => 3.0)(2.0)")
    gx, gy = i.lookup("g")
    assert np.array_equal(gx, [1.0, 1.0]) and np.array_equal(gy, np.zeros((1, 3)))
    assert i.lookup("g0") == 0.0


def test_size_one_tensor_result_is_accepted():
    i = run("let g = grad(fn(x) => x * 3.0)([2.0])")
    assert np.array_equal(i.lookup("g"), [3.0])


def test_stop_gradient_blocks_flow():
    i = run("let g = grad(fn(x) => x * stop_gradient(x * x))(3.0)\n"
            "struct P { a }\n"
            "let h = grad(fn(p) => stop_gradient(p).a * p.a)(P(2.0))")
    assert i.lookup("g") == 9.0
    assert i.lookup("h").a == 2.0


def test_custom_vjp_uses_the_backward_function():
    i = run("""
let clip = custom_vjp(fn(x) => x * 1.0, fn(x, out, g) => clamp(g, -1.0, 1.0))
let g = grad(fn(x) => clip(x * 10.0) * 5.0)(1.0)
let scaled = custom_vjp(fn(a, b) => a * b, fn(a, b, out, g) => (g * 100.0, g * 1000.0))
let ga, gb = grad(fn(a, b) => scaled(a, b), argnums=(0, 1))(2.0, 3.0)
""")
    # upstream g = 5, clipped to 1, times d(10x)/dx = 10
    assert i.lookup("g") == 10.0
    assert (i.lookup("ga"), i.lookup("gb")) == (100.0, 1000.0)


def test_custom_vjp_records_one_node_and_passes_structured_arguments():
    i = run("""
struct P { w }
let f = custom_vjp(fn(p, x) => p.w * x, fn(p, x, out, g) => (P(g * 7.0), g))
let g = grad(fn(p) => f(p, 2.0))(P(3.0))
""")
    assert i.lookup("g").w == 7.0
    ops = [n.op for n in i.last_tape]
    # the function's own operations (the read of p.w, the product) stay off the tape: one node
    assert ops == ["Parameter", "CustomVjp"]


def test_custom_vjp_with_wrong_arity_from_backward_is_a_grad_error():
    err = fails("let f = custom_vjp(fn(a, b) => a * b, fn(a, b, out, g) => g)\n"
                "let g = grad(fn(a) => f(a, 2.0))(1.0)")
    assert err.kind == "grad" and "tuple of 2" in err.message


def test_checkpoint_gives_the_same_gradient_and_records_one_node():
    i = run("""
seed(3)
let w = randn((4, 4)) * 0.5
fn block(h) { return tanh(h @ w) }
let ck = checkpoint(block)
fn deep(x, f) { let h = x
  for k in range(5) { h = f(h) }
  return sum(h * h) }
let x = randn((2, 4))
let g_plain = grad(fn(x) => deep(x, block))(x)
let n_plain = 0
let g_ck = grad(fn(x) => deep(x, ck))(x)
""")
    assert np.allclose(i.lookup("g_plain"), i.lookup("g_ck"), rtol=1e-12, atol=1e-14)
    ops = [n.op for n in i.last_tape]
    assert ops.count("Checkpoint") == 5 and "TanhAct" not in ops and "MatMul" not in ops
    # and both agree with central differences, so that a checkpoint and a plain tape cannot be
    # wrong together
    w, x = i.lookup("w"), i.lookup("x")

    def deep(x):
        h = x
        for _ in range(5):
            h = np.tanh(h @ w)
        return np.sum(h * h)
    fd = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[k] = 1e-6
        fd[k] = (deep(x + e) - deep(x - e)) / 2e-6
    assert np.allclose(i.lookup("g_ck"), fd, rtol=1e-6, atol=1e-8)


def test_checkpoint_second_order_matches_plain():
    i = run("""
let f = fn(x) => sin(x) * x
let ck = checkpoint(f)
let a = grad(grad(f))(0.7)
let b = grad(grad(ck))(0.7)
""")
    assert abs(i.lookup("a") - i.lookup("b")) < 1e-12
    # d2/dx2 x sin x = 2 cos x - x sin x
    assert abs(i.lookup("b") - (2 * np.cos(0.7) - 0.7 * np.sin(0.7))) < 1e-12


def test_jacobian_of_vector_function_and_argnums():
    i = run("let j = jacobian(fn(x) => [x[0] * x[1], sin(x[0])])([2.0, 3.0])\n"
            "let j1 = jacobian(fn(a, b) => a * b, argnums=1)([1.0, 2.0], [3.0, 4.0])")
    assert np.allclose(i.lookup("j"), [[3.0, 2.0], [np.cos(2.0), 0.0]])
    assert np.allclose(i.lookup("j1"), np.diag([1.0, 2.0]))


def test_jacobian_of_scalar_input():
    i = run("let j = jacobian(fn(t) => [t, t * t, 3.0])(2.0)")
    assert np.allclose(i.lookup("j"), [1.0, 4.0, 0.0])


def test_grad_needs_a_function():
    err = fails("let g = grad(3.0)")
    assert err.kind == "type"


def test_argnums_out_of_range():
    err = fails("let g = grad(fn(x) => x, argnums=3)(1.0)")
    assert err.kind == "type" and "argnums" in err.message


def test_argument_numbers_in_errors_count_from_zero_as_argnums_does(run_error):
    err = run_error("print(grad(fn(x, n) => x * n, argnums=1)(1.0, 2))")
    assert "with respect to argnums=1, which is an int (2)" in err.message
    err = run_error("print(vmap(fn(x, s) => x, in_axes=(0, 0))(ones((2,)), 1.0))")
    assert "in_axes maps argument 1 (counting from 0) over axis 0" in err.message
