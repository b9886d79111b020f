"""An axis given as an int-valued float (`axis=1.0`, accepted as the int it equals, as
reference section 5 accepts int-valued floats for class indices) gives under every
transformation what the int gives: grad & co record the int (dsl/runtime/builtins/__init__.py)."""

import numpy as np
import pytest

import dsl

CALLS = ["sum(x, axis=A)", "mean(x, axis=A)", "max(x, axis=A)", "min(x, axis=A, keepdims=true)", "prod(x, axis=A)",
         "var(x, axis=A)", "std(x, axis=A)", "logsumexp(x, axis=A)", "softmax(x, axis=A)", "log_softmax(x, axis=A)",
         "cumsum(x, A)", "cat((x, x * 2.0), axis=A)", "stack((x, x), axis=A)", "sort(x * -1.0, axis=A)",
         "norm(x, axis=A)", "mean(x, axis=(A,))", "gather(x, [1.0, 0.0], axis=A)"]
FORMS = {"value": "f(X)", "grad": "grad(fn(x) => sum(f(x) * f(x)))(X)", "jvp": "jvp(f, (X,), (X * 0.5,))",
         "hessian": "hessian(fn(x) => sum(f(x) * f(x)))(X)", "vmap": "vmap(f)(stack((X, X * 0.5)))",
         "jit of grad": "jit(grad(fn(x) => sum(f(x) * f(x))))(X)"}
X = "reshape(arange(1.0, 7.0), (2, 3)) * 0.3"


def results(call, axis):
    """Each form's result for f(x) = call with A = axis."""
    interp = dsl.Interpreter()
    interp.run(f"fn f(x) {{ return {call.replace('A', axis)} }}")
    return {form: interp.eval(expr.replace("X", X)) for form, expr in FORMS.items()}


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("axis", ["1", "-1"])
def test_an_int_valued_float_axis_is_the_int_under_every_transformation(call, axis):
    as_int, as_float = results(call, axis), results(call, axis + ".0")
    for form in FORMS:
        for a, b in zip(np.atleast_1d(as_int[form]) if form != "jvp" else as_int[form],
                        np.atleast_1d(as_float[form]) if form != "jvp" else as_float[form]):
            np.testing.assert_array_equal(a, b, err_msg=form)


def test_an_axis_passed_to_a_jitted_function_as_a_float_argument():
    # jit stages float arguments: read as an axis, the value is guarded (one recording per axis),
    # and the call gives what the interpreter gives, errors included
    interp = dsl.Interpreter()
    interp.run("fn f(x, a) { return sum(x, axis=a) }\nfn g(x, a) { return min(x, (a, ones((2,)))) }\n"
               "let x = reshape(arange(6.0), (2, 3))")
    for a in ("0.0", "1.0", "-1.0"):
        np.testing.assert_array_equal(interp.eval(f"jit(f)(x, {a})"), interp.eval(f"f(x, {a})"))
    np.testing.assert_array_equal(interp.eval("jit(grad(fn(x, a) => sum(f(x, a) ** 2)))(x, 1.0)"),
                                  interp.eval("grad(fn(x, a) => sum(f(x, a) ** 2))(x, 1.0)"))
    errors = []
    for call in ("g(x, 0.0)", "jit(g)(x, 0.0)", "f(x, 0.5)", "jit(f)(x, 0.5)"):
        try:
            interp.eval(call)
        except dsl.DgError as err:
            errors.append((err.kind, err.message))
    assert len(errors) == 4 and errors[0] == errors[1] and errors[2] == errors[3]
