"""Differentiation against reference section 6 where it is easy to get wrong: undifferentiated
arguments, gathers, checkpoint and custom_vjp over closures and keywords, zero cotangents, the
numerics check at second order.

Each test names the reference sentence (or the decision) it holds dg to.
"""

import numpy as np
from gradcheck import check


def test_gradient_of_a_function_returning_an_undifferentiated_argument_is_zero(run):
    # SPEC 6.1: float leaves the result never read get zeros. Returning another (Input) argument
    # as is ran backward from an Input node: "no gradient rule for the operation Input".
    src = ("print(grad(fn(x, y) => x, argnums=1)(2.0, [1.0, 3.0]))\n"
           "print(value_and_grad(fn(x, y) => y, argnums=0)(2.0, 5.0))\n"
           "print(jacobian(fn(x, y) => y, argnums=0)([1.0, 2.0], [3.0, 4.0]))")
    assert run(src) == "[0.0, 0.0]\n(5.0, 0.0)\n[[0.0, 0.0], [0.0, 0.0]]\n"


def test_indexing_with_an_index_tensor_records_gather_op(run):
    # SPEC 4 calls x[idx] with an int-valued tensor a gather; SPEC 6.3 names its node GatherOp.
    import io
    import dsl
    interp = dsl.Interpreter(stdout=io.StringIO(), keep_tape=True)
    interp.run("let g = grad(fn(x) => sum(x[[0, 2, 0]]))([1.0, 2.0, 3.0])\nprint(g)")
    assert interp.stdout.getvalue() == "[2.0, 0.0, 1.0]\n"
    assert [r.op for r in interp.tape()] == ["Parameter", "GatherOp", "Sum"]
    interp.run("let h = grad(fn(x) => x[1] + sum(x[x > 1.0]))([1.0, 2.0, 3.0])")
    assert [r.op for r in interp.tape()] == ["Parameter", "Index", "Index", "Sum", "Add"]


def test_checkpoint_of_a_closure_over_a_differentiated_value(run):
    # SPEC 6: checkpoint(f) is f, only recomputed. A checkpointed block that reads the parameters
    # through its closure (the usual way to write one) lost their gradient: 5.0 instead of 10.0.
    src = ("print(grad(fn(y) => checkpoint(fn(x) => x * y)(y))(5.0))\n"
           "struct L { w, b }\n"
           "fn loss(p, block) {\n"
           "  let f = block(fn(h) => tanh(h @ p.w + p.b))\n"
           "  return sum(f(f([[1.0, 2.0]])) ** 2.0)\n"
           "}\n"
           "let p = L([[1.0, -2.0], [0.5, 1.0]], [0.1, -0.1])\n"
           "print(grad(loss)(p, checkpoint) == grad(loss)(p, fn(f) => f))\n"
           "print(grad(fn(y) => grad(checkpoint(fn(x) => x * x * y))(2.0))(5.0))")
    assert run(src) == "10.0\ntrue\n4.0\n"


def test_checkpoint_recomputes_with_the_same_random_numbers(run):
    # SPEC 6: checkpoint's intermediates are recomputed; a dropout mask drawn again from the
    # generator was a different mask, so the gradient did not belong to the forward pass.
    src = ("fn drop(x) { return x * where(rand(shape(x)) > 0.5, 2.0, 0.0) }\n"
           "seed(1)\n"
           "let a = grad(fn(x) => sum(checkpoint(drop)(x * 1.0)))(ones((16,)))\n"
           "let after_a = rand(())\n"
           "seed(1)\n"
           "let b = grad(fn(x) => sum(drop(x * 1.0)))(ones((16,)))\n"
           "print(sum(abs(a - b)) == 0.0, sum(a) > 0.0, after_a == rand(()))")
    assert run(src) == "true true true\n"


def test_custom_vjp_refuses_a_differentiated_value_read_through_its_closure(run_error, run):
    # SPEC 6: bwd returns one gradient per argument, so a differentiated value the function reads
    # through its closure silently got no gradient (5.0 for d/dy y*y); JAX refuses this too.
    err = run_error("print(grad(fn(y) => custom_vjp(fn(x) => x * y, fn(x, out, g) => g * y)(y))(5.0))")
    assert err.kind == "grad" and "closure" in err.message and "argument" in err.hint
    # a closure over an outer differentiation's value, or over constants, is fine
    assert run("print(grad(fn(y) => grad(custom_vjp(fn(x) => x * y, fn(x, out, g) => g * y))(2.0))(5.0))\n"
               "let k = 3.0\n"
               "print(grad(custom_vjp(fn(x) => x * k, fn(x, out, g) => g * k * 2.0))(1.0))") == "1.0\n6.0\n"


def test_joining_and_stacking_a_differentiated_tuple_keeps_its_gradient(run):
    # SPEC 6.1: the gradient w.r.t. a tuple is a tuple of the elements' gradients. `t + (...)`,
    # `t * 2`, stack(t) and cat(t) on a tuple argument gave zeros.
    src = ("print(grad(fn(t) => (t + (t[0],))[2] * 5.0)((1.0, 2.0)))\n"
           "print(grad(fn(t) => ((1.0,) + t)[1] * 5.0 + (t * 2)[3])((1.0, 2.0)))\n"
           "print(grad(fn(t) => sum(stack(t) * [[1.0], [2.0]]))(([1.0], [2.0])))\n"
           "print(grad(fn(t) => sum(cat(t, axis=0) * [1.0, 2.0, 3.0]))(([1.0], [2.0, 3.0])))")
    assert run(src) == "(5.0, 0.0)\n(5.0, 1.0)\n([1.0], [2.0])\n([1.0], [2.0, 3.0])\n"


def test_full_with_a_differentiated_fill_value(run):
    # SPEC 6.1 / JAX: jnp.full(shape, x) is differentiable in x; dg's full dropped the gradient (0.0).
    src = ("print(grad(fn(x) => sum(full((2, 3), x) * 2.0))(1.5))\n"
           "print(hessian(fn(x) => sum(full(2, x * x * x)))(1.0), full((2,), 1.5))")
    assert run(src) == "12.0\n12.0 [1.5, 1.5]\n"


def test_repeated_argnums_is_an_error(run_error):
    # SPEC 6: argnums picks arguments; (0, 0) or (0, -2) boxed one argument twice and the first
    # copy silently got a zero gradient: (0.0, 3.0) for d(x*y)/dx.
    err = run_error("print(grad(fn(x, y) => x * y, argnums=(0, -2))(2.0, 3.0))")
    assert err.kind == "type" and "argument 0 twice (counting from 0, as argnums does)" in err.message


def test_masked_and_negated_zero_gradients_print_as_zero(run):
    # SPEC 6.6: relu'(x < 0) = 0, clamp passes no gradient outside [lo, hi]. With a negative upstream
    # cotangent (any MSE whose prediction is too small) these printed as -0.0, which JAX's select
    # gives as 0.0; a negated zero cotangent (1.0 - y into relu) printed -0.0 too.
    src = ("import nn\n"
           "print(grad(fn(x) => nn.mse(relu(x), [1.0, 1.0]))([-1.0, 0.5]))\n"
           "print(grad(fn(x) => -relu(x))(-1.0), grad(fn(x) => -clamp(x, 0.0, 1.0))(2.0), "
           "grad(fn(x) => -abs(x))(0.0), grad(fn(x) => -max(x))([1.0, 2.0]))\n"
           "print(grad(fn(y) => relu(1.0 - y))(2.0), grad(fn(x) => cos(x))(0.0))")
    assert run(src) == "[0.0, -0.5]\n0.0 0.0 0.0 [0.0, -1.0]\n0.0 0.0\n"


def test_a_zero_cotangent_times_an_overflowed_exp_or_product_is_zero(run):
    # SPEC 6.7: a zero upstream gradient times an infinite local derivative gives 0. The "safe exp"
    # idiom where(x < 100, exp(x), 0) at x = 1000 was a numerics error (0 * inf in Exp and Mul).
    src = ("print(grad(fn(x) => where(x < 100.0, exp(x), 0.0))(1000.0))\n"
           "print(grad(fn(x) => sum(where(x < 100.0, exp(x) * x, 0.0)))([1.0, 1000.0]))\n"
           "print(hessian(fn(x) => sum(where(x < 100.0, exp(x), 0.0)))([0.0, 1000.0]))\n"
           "print(grad(fn(x) => where(x < 700.0, exp(x) ** 2.0, 0.0))(1000.0))")
    assert run(src) == "0.0\n[5.43656365691809, 0.0]\n[[1.0, 0.0], [0.0, 0.0]]\n0.0\n"


CV = "let c = custom_vjp(fn(x) => x * 2.0, fn(x, o, g) => g * 7.0)\n"
C2 = "let c2 = custom_vjp(fn(a, b) => a * b, fn(a, b, o, g) => (g * 7.0, g * 9.0))\n"


def test_custom_vjp_uses_bwd_for_arguments_passed_by_keyword(run):
    # SPEC 5 (calls take positional then keyword arguments, builtins and dg functions alike) and
    # SPEC 6 (custom_vjp(f, bwd) is f whose gradient is bwd): bwd was silently skipped.
    src = CV + C2 + ("print(grad(fn(x) => c(x=x))(1.0))\n"
                     "print(grad(fn(b) => c2(2.0, b=b))(1.0))\n"
                     "print(grad(fn(b) => c2(b=b, a=2.0))(1.0))\n"
                     "print(c2(b=3.0, a=2.0))")
    assert run(src) == "7.0\n9.0\n9.0\n6.0\n"


def test_custom_vjp_keyword_errors_are_the_function_s(run_error):
    err = run_error(C2 + "print(grad(fn(b) => c2(2.0, z=b))(1.0))")
    assert err.kind == "type" and "no parameter named 'z'" in err.message


def test_custom_vjp_gives_the_derivative_at_every_level_of_nested_differentiation(run):
    # SPEC 6: grad(grad(f)) and hessian are exact, and c's derivative is bwd's 7 at every level
    # (the outer pass used x * 2.0's own derivative 2: 9 and 28), as JAX gives.
    src = CV + ("print(grad(grad(fn(x) => c(x) * x))(1.0))\n"
                "print(hessian(fn(x) => c(x) * c(x))(1.0))")
    assert run(src) == "14.0\n98.0\n"


def test_an_int_from_bwd_is_the_float_gradient_of_a_float(run):
    # SPEC 6.1: the gradient of a float argument is a float
    src = "let c = custom_vjp(fn(x) => x * 2.0, fn(x, o, g) => 0)\nlet g = grad(c)(2.0)\nprint(g, type(g))"
    assert run(src) == "0.0 float\n"


def test_the_numerics_check_names_the_line_of_a_pow_at_second_order(run_error):
    # SPEC 6.8: the error names the forward operation and its source line and column
    err = run_error("fn f(x) {\n    let y = x ** 1.5\n    return y\n}\nprint(grad(grad(f))(0.0))", "p.dg")
    assert err.kind == "numerics"
    assert "Pow at p.dg:2:13" in err.message and (err.line, err.column) == (2, 13)


def test_transformed_builtins_are_named_as_dg_names_them(run, run_error):
    assert run("print(grad(len))\nprint(value_and_grad(str))") == "<fn grad(len)>\n<fn value_and_grad(str)>\n"
    err = run_error("fn f(x) { return [x, x] }\nprint(hessian(f)(1.0))")
    assert err.message.startswith("hessian(f) needs a function that returns a single number")
    assert "grad(f)" not in str(err).replace("hessian(f)", "")


def test_linspace_is_differentiable_in_its_bounds(run):
    # SPEC 5 lists linspace among the tensor builtins; its points move with the bounds (as in JAX)
    src = ("print(grad(fn(x) => sum(linspace(0.0, x, 3)))(3.0))\n"
           "print(jacobian(fn(x) => linspace(0.0, x, 3))(2.0))\n"
           "print(grad(fn(a) => sum(linspace(a, 1.0, 0)))(1.0))")
    assert run(src) == "1.5\n[0.0, 0.5, 1.0]\n0.0\n"
    rng = np.random.default_rng(3)
    check("linspace(a, b, 5) * w", a=0.3, b=-1.7, w=rng.standard_normal(5))


def test_clamp_is_differentiable_in_its_bounds(run):
    # SPEC 6.6: clamp passes gradient where lo <= x <= hi; elsewhere it goes to the bound taken
    rng = np.random.default_rng(4)
    x = rng.standard_normal(8) * 2.0
    check("clamp(x, lo, hi)", x=x, lo=rng.standard_normal(8) * 0.2 - 1.0, hi=rng.standard_normal(8) * 0.2 + 1.0)
    check("clamp(x, lo, none)", x=x, lo=-0.5)
    check("clamp(x, none, hi)", x=x, hi=0.5)
    src = "print(grad(fn(lo, hi) => sum(clamp([-1.0, 0.0, 1.0, 2.0], lo, hi)), argnums=(0, 1))([0.0, 0.0, 0.0, 0.0], 1.0))"
    assert run(src) == "([1.0, 0.0, 0.0, 0.0], 1.0)\n"     # ties (0.0 and 1.0) go to x
    assert run("print(grad(fn(lo, hi) => clamp(0.0, lo, hi), argnums=(0, 1))(2.0, 1.0))") == "(0.0, 1.0)\n"


def test_checkpoint_differentiates_a_keyword_argument_of_any_function(run):
    # SPEC 6: checkpoint(f) is f, only recomputed; a recorded keyword argument of a builtin is read
    # as usual (custom_vjp's keyword rule, which refuses it there, is not checkpoint's)
    src = ("print(grad(fn(w) => checkpoint(maximum)(1.0, b=w))(3.0))\n"
           "print(grad(fn(w) => checkpoint(fn(a, b) => a * b)(2.0, b=w))(3.0))")
    assert run(src) == "1.0\n2.0\n"
