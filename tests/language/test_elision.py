"""Temporary elision (dsl/core/ops/elision.py): `x @ w + b` may write into the product's memory,
but only when nothing else can see that memory, on the tape or in the program."""

import sys

import numpy as np
import pytest

import dsl
from dsl.core.tape import Box, Trace
from dsl.core.ops import elision

from gradcheck import check

RNG = np.random.default_rng(11)
X = RNG.standard_normal((5, 4))
W = RNG.standard_normal((4, 3))
B = RNG.standard_normal(3)

pytestmark = pytest.mark.skipif(not elision.ENABLED, reason="elision is off on this Python")


@pytest.fixture
def reuses(monkeypatch):
    """A list that records each reuse, ("plain" | "tape", operator), as it happens."""
    hits = []
    monkeypatch.setattr(elision, "MIN_SIZE", 0)     # these tests' tensors are small
    for table, kind in ((elision.UFUNCS, "plain"), (elision.INTO, "tape")):
        for op, fn in list(table.items()):
            def spy(*a, _fn=fn, _op=op, _kind=kind, **kw):
                hits.append((_kind, _op))
                return _fn(*a, **kw)
            monkeypatch.setitem(table, op, spy)
    return hits


def run(src, **values):
    """Run `src` with `values` bound; the interpreter."""
    interp = dsl.Interpreter(seed=0)
    for name, v in values.items():
        interp.set(name, v)
    interp.run(src)
    return interp


def test_a_fresh_product_takes_the_sum_in_place(reuses):
    interp = run("let r = (x @ w + b) * 2.0 - 1.0", x=X, w=W, b=B)
    np.testing.assert_array_equal(interp.lookup("r"), (X @ W + B) * 2.0 - 1.0)
    assert reuses == [("plain", "+"), ("plain", "*"), ("plain", "-")]


def test_only_tensors_of_numpys_own_elision_size_are_reused(monkeypatch):
    # below it a fresh result costs less than proving the operand may be overwritten
    hits = []
    spy = elision.UFUNCS["+"]
    monkeypatch.setitem(elision.UFUNCS, "+", lambda *a, **kw: hits.append(a[0].size) or spy(*a, **kw))
    n = int(np.sqrt(elision.MIN_SIZE)) + 1
    big, small = np.ones((n, n)), np.ones((8, 8))
    for x in (small, big):
        run("let r = x @ x + 1.0", x=x)
    assert hits == [n * n]


def test_a_recorded_product_takes_the_sum_in_place_and_the_gradient_is_exact(reuses):
    interp = run("fn f(w, b) { return sum(relu(x @ w + b) - 0.5) }", x=X)
    gw, gb = interp.grad("f", argnums=(0, 1))(W, B)
    mask = (X @ W + B) > 0
    np.testing.assert_allclose(gw, X.T @ mask)
    np.testing.assert_allclose(gb, mask.sum(axis=0))
    assert ("tape", "+") in reuses and ("tape", "-") in reuses


@pytest.mark.parametrize("src", [
    "let z = x @ w\nlet y = z + b",                              # a variable holds it
    "fn same(a) { return a }\nlet z = x @ w\nlet y = same(z) + b",   # a call returns a variable
    "struct L { v }\nlet s = L(x @ w)\nlet z = s.v\nlet y = s.v + b",   # a struct holds it
    "let m = {\"k\": x @ w}\nlet z = m[\"k\"]\nlet y = m[\"k\"] + b",   # a map holds it
    "let t = (x @ w, 1)\nlet z = t[0]\nlet y = t[0] + b",           # a tuple holds it
    "let z = x @ w\nfn get() { return z }\nlet y = get() + b",        # a closure's cell holds it
])
def test_a_value_someone_else_can_see_is_never_overwritten(src, reuses):
    interp = run(src, x=X, w=W, b=B)
    np.testing.assert_array_equal(interp.lookup("z"), X @ W)
    np.testing.assert_array_equal(interp.lookup("y"), X @ W + B)
    assert ("plain", "+") not in reuses


def test_views_and_broadcasting_results_are_not_reused(reuses):
    interp = run("let a = (x @ w)[0:2] + 1.0\n"          # a view of a temporary
                 "let d = sum(x, axis=0) + x\n"          # the result is larger than the left operand
                 "let e = (x @ w > 0.0) + 1.0\n",        # a bool tensor: the sum is not bool
                 x=X, w=W, b=B)
    np.testing.assert_array_equal(interp.lookup("a"), (X @ W)[0:2] + 1.0)
    np.testing.assert_array_equal(interp.lookup("d"), X.sum(axis=0) + X)
    np.testing.assert_array_equal(interp.lookup("e"), (X @ W > 0) + 1.0)
    assert reuses == []


def test_read_only_tensors_are_not_reused():
    frozen = np.ones(3)
    frozen.flags.writeable = False
    assert elision.reuse_left("+", frozen, 1.0, None) is None
    fresh = np.ones(3)
    assert elision.reuse_left("+", fresh, 1.0, None) is fresh


@pytest.mark.parametrize("src, want", [
    # p is saved by Mul's rule: p + b must not overwrite it
    ("fn f(w) { let p = x @ w\n return sum((p + b) * p) }", lambda w: X.T @ (2 * (X @ w) + B)),
    # exp's rule reads its own output: exp(...) + 1 must not overwrite it
    ("fn f(w) { return sum(exp(x @ w) + 1.0) }", lambda w: X.T @ np.exp(X @ w)),
    # the product feeds two nodes
    ("fn f(w) { let p = x @ w\n return sum(relu(p) + p * 0.0 + 1.0) }", lambda w: X.T @ ((X @ w) > 0)),
])
def test_values_a_rule_still_needs_are_kept(src, want):
    interp = run(src, x=X, b=B)
    np.testing.assert_allclose(interp.grad("f")(W), want(W), rtol=1e-12)


def test_gradients_through_reused_temporaries_match_finite_differences():
    check("relu(x @ w + b) @ v - 1.0", x=X, w=W, b=B, v=RNG.standard_normal((3, 2)))
    check("(x @ w - b) / 2.0 + (x * x) @ w", x=X, w=W, b=B)


def test_second_derivatives_through_reused_temporaries_are_exact():
    interp = run("fn f(w) { return sum((x @ w + 1.0) * (x @ w + 1.0)) }\nlet h = hessian(f)(w0)",
                 x=X, w0=W[:, 0].copy())
    np.testing.assert_allclose(interp.lookup("h"), 2 * X.T @ X, rtol=1e-12)


def test_a_box_is_reused_only_when_its_trace_list_is_its_one_other_holder():
    trace = Trace()
    on_tape = Box(np.ones(3), trace, "MatMul", (None, None), (None, None), None, None)
    trace.nodes.append(on_tape)
    out = elision.reuse_left("+", on_tape, 1.0, None)     # held by: this local, the list
    assert type(out) is Box and out.v is on_tape.v
    np.testing.assert_array_equal(out.v, [2.0, 2.0, 2.0])

    trace = Trace()     # a box whose trace has finished (its list emptied), held by a variable
    leaked = Box(np.ones(3), trace, "MatMul", (None, None), (None, None), None, None)
    user_variable = leaked
    assert elision.reuse_left("+", leaked, 1.0, None) is None
    np.testing.assert_array_equal(user_variable.v, [1.0, 1.0, 1.0])

    trace = Trace()     # a box on the tape whose array something else holds too
    shared = np.ones(3)
    on_tape = Box(shared, trace, "MatMul", (None, None), (None, None), None, None)
    trace.nodes.append(on_tape)
    assert elision.reuse_left("+", on_tape, 1.0, None) is None
    np.testing.assert_array_equal(shared, [1.0, 1.0, 1.0])


def test_the_counts_hold_on_this_python():
    # the reference counts in elision.py assume CPython's strong references on the value stack
    assert sys.implementation.name == "cpython"


# The registry derives "this rule reads its own output" from the rules' code (elision relies on it)
NOT_READING = ["Add", "Sub", "Mul", "ScalarMul", "Neg", "MatMul", "Ln", "Log2", "Sin", "Cos", "Abs", "Relu",
               "Erf", "Silu", "Gelu", "Maximum", "Minimum", "Where", "Clamp", "Sum", "Mean", "GatherOp",
               "IndexAdd", "SetIndex", "CatOp", "Stack", "LayerNorm", "BatchNorm"]
READING = ["Exp", "Sqrt", "Div", "Softmax", "LogSoftmax", "Sigmoid", "Pow", "TanhAct", "Max", "LogSumExp",
           "SsmScan", "CustomVjp"]


@pytest.mark.parametrize("op", NOT_READING)
def test_rules_that_do_not_read_their_output_are_found(op):
    from dsl.core.primitives.registry import reads_output
    assert not reads_output(op)


@pytest.mark.parametrize("op", READING)
def test_rules_that_read_their_output_are_found(op):
    from dsl.core.primitives.registry import reads_output
    assert reads_output(op)


def test_the_output_of_a_rule_that_reads_it_is_not_overwritten(reuses):
    # exp's rule reads exp(x): x @ w feeding exp, then + 1.0, must not write into exp's output
    interp = run("fn f(w) { return sum(exp(x @ w) + 1.0) }", x=X)
    g = interp.grad("f")(W)
    np.testing.assert_allclose(g, X.T @ np.exp(X @ W))
    assert ("tape", "+") not in reuses
