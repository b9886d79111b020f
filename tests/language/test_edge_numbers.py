"""Numbers at the edges: NaN and ±inf, empty tensors, 0-d tensors, zero-size axes, big ints,
division by zero, and shape errors in every binary operator, each with a clear answer."""

import io
import math

import pytest

import dsl
from dsl.errors import DgError
from dsl.core.printing import show

NAN, INF = 'float("nan")', 'float("inf")'


def value(src, **options):
    """What `src` (ending in an expression) evaluates to, as print would show it inside a container."""
    return show(dsl.Interpreter(stdout=io.StringIO(), **options).run(src, "edge.dg"), True)


def error(src):
    """The DgError of `src`, checked to point into it."""
    with pytest.raises(DgError) as info:
        dsl.Interpreter(stdout=io.StringIO()).run(src, "edge.dg")
    err = info.value
    assert err.filename == "edge.dg" and err.line is not None
    return err


# ---------------------------------------------------------------- NaN and infinity
@pytest.mark.parametrize("src, shown", [
    (f"{NAN} + 1", "nan"), (f"{INF} - {INF}", "nan"), (f"{INF} * 0.0", "nan"), (f"-{INF}", "-inf"),
    (f"{NAN} == {NAN}", "false"), (f"{NAN} != {NAN}", "true"), (f"{NAN} < 1", "false"),
    (f"[1.0, {NAN}] == [1.0, {NAN}]", "[true, false]"), (f"sum([1.0, {NAN}])", "nan"),
    (f"max([1.0, {NAN}])", "nan"), (f"min([{INF}, 1.0])", "1.0"), ("exp(1000.0)", "inf"),
    ("exp(-1000.0)", "0.0"), ("ln(0.0)", "-inf"), ("sqrt(-1.0)", "nan"), (f"sigmoid({INF})", "1.0"),
    (f"sigmoid(-{INF})", "0.0"), (f"tanh({NAN})", "nan"), (f"relu({NAN})", "nan"), (f"relu([{NAN}, -1.0])", "[nan, 0.0]"),
    (f"abs(-{INF})", "inf"), (f"{INF} // 1", "nan"), (f"{NAN} % 2", "nan"),
    (f"softmax([-{INF}, 0.0])", "[0.0, 1.0]"), (f"log_softmax([-{INF}, 0.0])", "[-inf, 0.0]"),
    (f"logsumexp([-{INF}, -{INF}])", "-inf"), ("softmax([1000.0, -1000.0])", "[1.0, 0.0]"),
    (f'str({INF}) + str(-{INF}) + str({NAN})', '"inf-infnan"'), (f'f"{{{NAN}:.3f}} {{{INF}:e}}"', '"nan inf"'),
    (f"float({INF}) == {INF}", "true"), (f"clamp({NAN}, 0.0, 1.0)", "nan"), (f"maximum({NAN}, 1.0)", "nan"),
    # a NaN bound gives NaN, for a number as for a tensor (np.clip)
    (f"clamp(1.0, {NAN}, 2.0)", "nan"), (f"clamp(1.0, 0.0, {NAN})", "nan"), (f"clamp([1.0], {NAN}, 2.0)", "[nan]"),
])
def test_nan_and_infinity_follow_ieee(src, shown):
    assert value(src) == shown


@pytest.mark.parametrize("src", [f"int({NAN})", f"int({INF})", f"int(-{INF})", f"range(int({NAN}))"])
def test_nan_and_infinity_cannot_become_ints(src):
    err = error(src)
    assert err.kind == "value" and ("nan" in err.message or "inf" in err.message)


def test_a_nan_gradient_names_its_operation_unless_the_check_is_off():
    err = error("grad(fn(x) => sqrt(x))(-1.0)")
    assert err.kind == "numerics" and "Sqrt" in err.message
    assert value("grad(fn(x) => sqrt(x))(-1.0)", check_numerics=False) == "nan"
    assert error(f"grad(fn(x) => x * x)({INF})").kind == "numerics"


def test_a_nan_condition_is_false_like_every_comparison_with_nan(run):
    assert run(f"let x = {NAN}\nif x > 0 {{ print(1) }} else {{ print(2) }}") == "2\n"


# ---------------------------------------------------------------- empty tensors and zero-size axes
@pytest.mark.parametrize("src, shown", [
    ("zeros((0,))", "[]"), ("[]", "[]"), ("tensor(())", "[]"), ("sum(zeros((0,)))", "0.0"),
    ("shape(zeros((0, 3)))", "(0, 3)"), ("len(zeros((0, 3)))", "0"), ("size(zeros((3, 0)))", "0"),
    ("zeros((0,)) + 1", "[]"), ("shape(zeros((0, 3)) @ zeros((3, 2)))", "(0, 2)"),
    ("zeros((2, 0)) @ zeros((0, 3))", "[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]"),
    ("cat((zeros((0,)), ones((2,))))", "[1.0, 1.0]"), ("sum(zeros((0, 3)), axis=0)", "[0.0, 0.0, 0.0]"),
    ("shape(sum(zeros((0, 3)), axis=1))", "(0,)"), ("shape(reshape(zeros((0,)), (-1, 5)))", "(0, 5)"),
    ("shape(transpose(zeros((0, 3))))", "(3, 0)"), ("zeros((0,))[0:5]", "[]"), ("softmax(zeros((0,)))", "[]"),
    ("shape(log_softmax(zeros((3, 0))))", "(3, 0)"), ("grad(fn(x) => sum(x * 2.0))(zeros((0,)))", "[]"),
    ("grad(fn(x) => sum(softmax(x)))(zeros((0,)))", "[]"), ("shape(one_hot(zeros((0,)), 3))", "(0, 3)"),
    ("zeros((0,)) == zeros((0,))", "[]"), ("tree_leaves(())", "()"), ("global_norm(())", "0.0"),
])
def test_empty_tensors_and_zero_size_axes(src, shown):
    assert value(src) == shown


@pytest.mark.parametrize("src, kind, words", [
    ("mean(zeros((0,)))", "value", "empty"), ("max(zeros((0,)))", "value", "empty"),
    ("min(zeros((3, 0)), axis=1)", "value", "empty"), ("logsumexp(zeros((0,)))", "value", "empty"),
    ("zeros((0,))[0]", "index", "out of range"), ("cat(zeros((0,)))", "value", "at least one tensor"),
    ("cross_entropy(zeros((0, 3)), zeros((0,)))", "value", "at least one example"),
    ("stack(())", "value", "at least one"), ("reshape(zeros((0,)), (0, -1))", "shape", "(0, -1)"),
])
def test_empty_tensors_where_no_answer_exists_are_errors(src, kind, words):
    err = error(src)
    assert err.kind == kind and words in err.message, err.message


def test_iterating_over_an_empty_tensor_runs_no_iteration(run):
    assert run("for r in zeros((0, 3)) { print(r) }\nprint(\"done\")") == "done\n"


# ---------------------------------------------------------------- 0-d tensors
@pytest.mark.parametrize("src, shown", [
    ("tensor(2.0)", "2.0"), ("shape(tensor(2.0))", "()"), ("ndim(tensor(2.0))", "0"), ("size(tensor(2.0))", "1"),
    ("tensor(2.0) + 1", "3.0"), ("tensor(2.0) * ones((2,))", "[2.0, 2.0]"), ("float(tensor(2.0))", "2.0"),
    ("sum(tensor(2.0))", "2.0"), ("grad(fn(x) => x * 3.0)(tensor(2.0))", "3.0"),
    ("reshape(tensor(2.0), (1, 1))", "[[2.0]]"), ("tensor(2.0) == 2", "true"), ("int(tensor(2.7))", "2"),
])
def test_zero_d_tensors_act_as_numbers(src, shown):
    assert value(src) == shown


@pytest.mark.parametrize("src, kind", [
    ("tensor(2.0)[0]", "index"), ("len(tensor(2.0))", "type"), ("for r in tensor(2.0) {}", "type"),
    ("tensor(2.0) @ ones((2,))", "shape"), ("softmax(tensor(2.0))", "shape"), ("cat((tensor(1.0),))", "shape"),
    ("sum(tensor(2.0), axis=0)", "index"), ("transpose(tensor(1.0), (0,))", "value"),
])
def test_zero_d_tensors_refuse_what_needs_an_axis(src, kind):
    assert error(src).kind == kind


def test_a_zero_d_tensor_is_a_condition(run):
    assert run("if tensor(2.0) > 1 { print(1) }") == "1\n"


# ---------------------------------------------------------------- big ints
@pytest.mark.parametrize("src, shown", [
    ("2 ** 64", "18446744073709551616"), ("2 ** 63 * 2 ** 63", str(2 ** 126)), ("10 ** 30 + 1", str(10 ** 30 + 1)),
    ("-(2 ** 100) // 3", str(-(2 ** 100) // 3)), ("(2 ** 100) % 7", "2"), ("(2 ** 64) - (2 ** 64 - 1)", "1"),
    ("int(1e20)", "100000000000000000000"), ("int(\"123456789012345678901234567890\")", "123456789012345678901234567890"),
    ("10 ** 400 / 10 ** 399", "10.0"), ("type(2 ** 200)", '"int"'),
])
def test_ints_grow_into_big_ints_exactly(src, shown):
    assert value(src) == shown


@pytest.mark.parametrize("src, shown", [
    ("float(10 ** 400)", "inf"), ("float(-(10 ** 400))", "-inf"), ("10 ** 400 * 1.0", "inf"), ("10 ** 400 / 3", "inf"),
    ("1.0 + 10 ** 400", "inf"), ("1.0 - 10 ** 400", "-inf"), ("ones((2,)) * 10 ** 400", "[inf, inf]"),
    ("[10 ** 400]", "[inf]"), ("tensor(10 ** 400)", "inf"), ("full((1,), 10 ** 400)", "[inf]"), ("exp(10 ** 400)", "inf"),
    ("zeros((1,)) + 2 ** 63", "[9.223372036854776e+18]"), ("clamp(10 ** 400, 0, 1)", "1.0"), ("2.0 ** 10 ** 400", "inf"),
    ("float(2 ** 1023)", str(float(2 ** 1023))),
])
def test_ints_too_big_for_a_float_become_infinity_when_converted(src, shown):
    assert value(src) == shown


def test_absurdly_big_ints_are_limit_errors():
    err = error("2 ** 2 ** 30")
    assert err.kind == "limit" and "more than 4,300 digits" in err.message and "floats" in err.hint
    assert error("(10 ** 400) ** (10 ** 400)").kind == "limit"
    err = error("9" * 5000)
    assert err.kind == "limit" and "4300 digits" in err.message
    # ints stop where Python stops turning them into text, so every int can be shown
    for src in ("2 ** 20000", "10 ** 4300", "let a = 10 ** 4299\na * 10", "let a = 10 ** 4299\na * 100 + a",
                "let a = -(10 ** 4299) * 9\na - 10 ** 4299", "let a = 5 * 10 ** 4299\na + a"):
        err = error(src)
        assert err.kind == "limit" and "more than 4,300 digits" in err.message, src
    assert value("10 ** 4299 * 9") == "9" + "0" * 4299
    assert error("len(range(10 ** 30))").kind == "value"


# ---------------------------------------------------------------- division by zero
@pytest.mark.parametrize("src", ["1 / 0", "1 // 0", "1 % 0", "0 ** -1", "true / false", "-5 // 0", "(2 ** 70) % 0"])
def test_int_division_by_zero_is_a_value_error(src):
    err = error(src)
    assert err.kind == "value" and ("division by zero" in err.message or "negative power" in err.message)
    assert err.column <= 2


@pytest.mark.parametrize("src, shown", [
    ("1.0 / 0", "inf"), ("-1.0 / 0", "-inf"), ("0.0 / 0", "nan"), ("1 / 0.0", "inf"), ("0 / 0.0", "nan"),
    ("1.0 // 0", "inf"), ("1.0 % 0.0", "nan"), ("0.0 ** -1", "inf"), ("ones((2,)) / 0", "[inf, inf]"),
    ("-ones((2,)) / 0", "[-inf, -inf]"), ("zeros((2,)) / zeros((2,))", "[nan, nan]"), ("ones((2,)) // 0", "[inf, inf]"),
    ("ones((2,)) % 0", "[nan, nan]"), ("1 / -0.0", "-inf"),
])
def test_float_division_by_zero_is_ieee(src, shown):
    assert value(src) == shown


# ---------------------------------------------------------------- shape errors
OPERATORS = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide", "//": "floor-divide",
             "%": "take the remainder of", "**": "raise to a power", "==": "compare", "!=": "compare",
             "<": "compare", "<=": "compare", ">": "compare", ">=": "compare"}
SHAPES = [("(3,)", "(4,)"), ("(2, 3)", "(4, 2)"), ("(2, 3, 4)", "(5, 4, 2)")]


@pytest.mark.parametrize("op", sorted(OPERATORS))
@pytest.mark.parametrize("a, b", SHAPES)
def test_every_binary_operator_names_both_shapes(op, a, b):
    src = f"let a = ones({a})\nlet b = ones({b})\nlet c = a {op} b"
    err = error(src)
    assert err.kind == "shape"
    assert err.message == f"cannot {OPERATORS[op]} tensors of shapes {a} and {b}"
    assert (err.line, err.column) == (3, 9)
    # the same under grad, where the operation is recorded on the tape
    err = error(f"let b = ones({b})\nlet c = grad(fn(a) => sum(tensor(a {op} b)))(ones({a}))")
    assert err.kind == "shape" and f"{a} and {b}" in err.message


@pytest.mark.parametrize("src, words", [
    ("ones((2, 3)) @ ones((4,))", "shapes (2, 3) and (4,) (inner sizes 3 and 4 differ)"),
    ("ones((3,)) @ ones((4,))", "shapes (3,) and (4,) (inner sizes 3 and 4 differ)"),
    ("ones((3,)) @ ones((4, 2))", "shapes (3,) and (4, 2) (inner sizes 3 and 4 differ)"),
    ("ones((2, 2, 3)) @ ones((3, 3, 2))", "(batch axes do not broadcast)"),
    ("matmul(ones((2, 3)), ones((2, 3)))", "inner sizes 3 and 2 differ"),
    ("tensor(1.0) @ ones((2,))", "at least one axis, got shapes () and (2,)"),
    ("grad(fn(w) => sum(w @ ones((4,))))(ones((2, 3)))", "inner sizes 3 and 4 differ"),
])
def test_matmul_shape_errors_say_which_sizes_differ(src, words):
    err = error(src)
    assert err.kind == "shape" and words in err.message, err.message


@pytest.mark.parametrize("src", ["maximum(ones((2,)), ones((3,)))", "minimum(ones((2,)), ones((3,)))",
                                 "where(ones((2,)) > 0, ones((3,)), 0.0)", "clamp(ones((2,)), ones((3,)), 2.0)",
                                 "ssm_scan(ones((2,)), ones((3,)), ones((2,)))", "cat((ones((2, 3)), ones((3, 4))), axis=1)",
                                 "stack((ones((2,)), ones((3,))))", "[ones((2,)), ones((3,))]"])
def test_broadcasting_builtins_name_the_shapes(src):
    err = error(src)
    assert err.kind == "shape" and "(2" in err.message and "(3" in err.message, err.message


def test_math_module_agrees_on_what_is_finite():
    # the values dg prints for the edge cases are the ones Python's float gives
    assert value("1e308 * 10") == repr(math.inf) and value("-1e308 * 10") == repr(-math.inf)


def test_clamp_bounds_that_broadcast_x_up_give_a_gradient_of_x_shape():
    assert value("grad(fn(x) => sum(clamp(x, lo=arange(3.0))))(1.5)") == "2.0"
    assert value("shape(jacobian(fn(x) => clamp(x, lo=reshape(arange(24.0), (2, 3, 4))))(1.5))") == "(2, 3, 4)"


BIG = ["10 ** 400", "-(10 ** 400)", "2 ** 63", "2 ** 64 + 1"]
BINARY = ["x + B", "B + x", "x - B", "B - x", "x * B", "B * x", "x / B", "B / x", "x // B", "B // x",
          "x % B", "B % x", "x ** B", "B ** x", "maximum(x, B)", "minimum(B, x)", "where(x > 0, x, B)",
          "clamp(x, B, B)", "clamp(B, x, x)", "x @ (ones((2,)) * B)"]


@pytest.mark.parametrize("form", BINARY)
@pytest.mark.parametrize("big", BIG)
@pytest.mark.parametrize("point", ["0.5", "0.0", "ones((2,))"])
def test_big_int_operands_under_grad_give_a_gradient_or_a_dg_error(form, big, point):
    # big ints become ±inf in float arithmetic; the gradient rules must cope with them too
    src = f"grad(fn(x) => sum(tensor({form.replace('B', f'({big})')})))({point})"
    try:
        dsl.Interpreter(stdout=io.StringIO()).run(src, "edge.dg")
    except DgError as err:
        assert err.kind in ("numerics", "shape", "type", "value", "limit", "grad"), str(err)
        assert err.line == 1
