"""A loop rolled under two reverse levels while jit stages (dsl/core/primitives/loop_twice.py,
dsl/transform/jit/loop_walks.py): grad of grad through a loop is a few small staged bodies, and gives what
the interpreter gives with the loop written out (its oracle here), on every program below, at
special points, and under a further transformation."""

import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dsl

from fuzz_strategies import risky
from test_jit_loops import leaves, ops_of

TWICE = {"LoopBackT", "LoopBackAdd"}

# each: a program defining `f(x)` whose result is a number, x a number; `second` is grad(grad(f))
PROGRAMS = {
    "chain": "fn f(x) { let acc = x\n for i in range(40) { acc = sin(acc) * x }\n return acc }",
    "two_leaves": ("fn f(x) { let a = x\n let b = 1.0\n"
                   " for i in range(12) { let t = a * b\n a = sin(t) + 0.5 * b\n b = cos(a) * x }\n return a * b }"),
    "counter": ("fn f(x) { let s = x\n let n = 0\n"
                " for i in range(9) { n = n + 1\n s = s * 0.9 + sin(s * x) * n }\n return s }"),
    "item_as_number": "fn f(x) { let s = x\n for i in range(10) { s = s + x * i * sin(s) / 10.0 }\n return s }",
    "branch_both_ways": ("fn f(x) { let s = x\n"
                         " for i in range(16) { if s > 0.3 { s = sin(s) * x } else { s = cos(s) + x } }\n"
                         " return s }"),
    "tensor_state": ("fn f(x) { let h = [0.1, -0.2, 0.3]\n let w = [[0.5, -0.1, 0.2], [0.3, 0.4, -0.5], [0.1, 0.2, 0.3]]\n"
                     " for i in range(8) { h = tanh(w @ h * x + [0.1, 0.0, -0.1]) }\n return sum(h * h) }"),
    "struct_state": ("struct P { a, b }\n"
                     "fn f(x) { let p = P(x, 2.0 * x)\n"
                     " for i in range(7) { p = P(p.a * cos(p.b), p.b + 0.1 * sin(p.a) * x) }\n return p.a + p.b }"),
    "nested_loops": ("fn f(x) { let s = x\n"
                     " for i in range(5) { for j in range(4) { s = sin(s) * x + 0.1 } }\n return s }"),
    "stop_gradient": ("fn f(x) { let s = x\n"
                      " for i in range(6) { s = sin(s) * x + stop_gradient(s * s) }\n return s }"),
    "sqrt": "fn f(x) { let s = x\n for i in range(6) { s = sqrt(s * s + x * x) }\n return s }",
    # LoopBackT needs sin(s) (cos's rule), which the forward loop does not keep (B reads cos(s)
    # only): its walk replays each iteration's forward from the state
    "not_kept": "fn f(x) { let s = x\n for i in range(10) { s = sin(s) + x }\n return s }",
    # a pullback that does not split (pow's rule decides by a forward value): the walks replay Q
    "power": "fn f(x) { let s = x * x + 0.5\n for i in range(8) { s = s ** (0.5 + 0.1 * x) + 0.1 }\n return s }",
}


def interp(src, **options):
    """An interpreter that has run `src` (printing into a buffer)."""
    i = dsl.Interpreter(seed=0, stdout=io.StringIO(), **options)
    i.run(src)
    return i


def close(a, b, tol=1e-12):
    """Whether two results hold the same numbers to a relative `tol` (NaNs equal)."""
    a, b = np.array(leaves(a)), np.array(leaves(b))
    return a.shape == b.shape and bool(np.all((np.abs(a - b) <= tol * np.maximum(1.0, np.abs(b)))
                                              | (np.isnan(a) & np.isnan(b)) | (a == b)))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_grad_of_grad_through_a_loop_is_rolled_and_gives_the_interpreters_answer(name):
    i = interp(PROGRAMS[name] + "\nlet second = grad(grad(f))\nlet fast = jit(second)")
    second, fast = i.lookup("second"), i.lookup("fast")
    for x in (0.7, 0.35, -0.9, 1.3, 0.7):
        assert close(fast(x), second(x)), (x, fast(x), second(x))
    assert TWICE <= ops_of(fast)


@pytest.mark.parametrize("outer", [
    "grad(fn(x) => value_and_grad(f)(x)[1])",                # the inner level's value beside its gradient
    "value_and_grad(grad(f))",
    "grad(fn(x) => grad(f)(x) * x + f(x))",                  # the loop once more outside the inner grad
    "fn(x) => grad(fn(y) => grad(f)(y * y))(x) + 1.0",
])
def test_other_second_derivatives_of_a_rolled_loop(outer):
    src = PROGRAMS["two_leaves"] + f"\nlet second = {outer}\nlet fast = jit(second)"
    i = interp(src)
    second, fast = i.lookup("second"), i.lookup("fast")
    for x in (0.6, -0.4, 0.6):
        assert close(fast(x), second(x))
    assert TWICE <= ops_of(fast)


def test_reverse_over_reverse_of_a_tensor_loop_with_respect_to_a_matrix():
    # a Hessian-vector product by reverse over reverse: grad of <grad(loss)(w), v>
    src = ("fn loss(w) { let h = [0.2, -0.1, 0.4]\n for i in range(10) { h = tanh(w @ h + 0.1) }\n"
           " return sum(h * [1.0, 2.0, 3.0]) }\n"
           "let v = [[0.3, -0.2, 0.1], [0.0, 0.5, -0.4], [0.2, 0.2, 0.1]]\n"
           "let hvp = grad(fn(w) => sum(grad(loss)(w) * v))\nlet fast = jit(hvp)")
    i = interp(src)
    w = np.array([[0.5, -0.3, 0.2], [0.1, 0.4, -0.6], [0.3, 0.1, 0.2]])
    hvp, fast = i.lookup("hvp"), i.lookup("fast")
    for scale in (1.0, 0.5, 1.0):
        assert close(fast(w * scale), hvp(w * scale))
    assert TWICE <= ops_of(fast)
    # and the Hessian-vector product against central differences of the gradient
    g = i.lookup("grad")(i.lookup("loss"))
    v = np.array(i.lookup("v"))
    eps = 1e-6
    fd = (np.asarray(g(w + eps * v)) - np.asarray(g(w - eps * v))) / (2 * eps)
    assert np.allclose(np.asarray(fast(w)), fd, rtol=1e-6, atol=1e-8)


def test_at_special_points_the_walks_run_exactly_where_their_code_cannot_vouch_for_a_result():
    # sqrt(s * s + x * x) at x = 0: infinite and NaN partials on some iterations, where the
    # compiled walks leave the zero rule out, stop, and run those iterations exactly
    i = interp(PROGRAMS["sqrt"] + "\nlet second = grad(grad(f))\nlet fast = jit(second)", check_numerics=False)
    second, fast = i.lookup("second"), i.lookup("fast")
    fast(0.5)
    for x in (0.5, 0.0, -0.25, 1e-300, float("inf"), 0.5):
        assert close(fast(x), second(x)), (x, fast(x), second(x))
    assert TWICE <= ops_of(fast)


def test_a_gradient_that_is_not_finite_is_the_interpreters_error():
    i = interp(PROGRAMS["sqrt"] + "\nlet second = grad(grad(f))\nlet fast = jit(second)")
    second, fast = i.lookup("second"), i.lookup("fast")
    fast(0.5)
    with pytest.raises(dsl.DgError) as want:
        second(1e-300)
    with pytest.raises(dsl.DgError) as got:
        fast(1e-300)
    assert got.value.kind == want.value.kind == "numerics"
    assert "Sqrt" in str(got.value) and "Sqrt" in str(want.value)


@pytest.mark.parametrize("outer, plain", [
    ("grad(fast)", "grad(second)"),                                   # a third reverse level over the jit
    ("fn(x) => jvp(fast, (x,), (1.0,))[1]", "fn(x) => jvp(second, (x,), (1.0,))[1]"),
    ("vmap(fast)", "vmap(second)"),
])
def test_a_jitted_second_derivative_under_another_transformation(outer, plain):
    # the recorded loops run each iteration through the primitives, for the outer transformation to see
    i = interp(PROGRAMS["chain"] + f"\nlet second = grad(grad(f))\nlet fast = jit(second)\n"
                                   f"let got = {outer}\nlet want = {plain}")
    got, want, fast = i.lookup("got"), i.lookup("want"), i.lookup("fast")
    fast(0.45)      # staged on plain values: rolled; the outer transformation replays that program
    assert TWICE <= ops_of(fast)
    x = np.array([0.3, 0.7, -0.5]) if outer.startswith("vmap") else 0.45
    assert close(got(x), want(x), 1e-10)


def test_the_first_call_stages_a_few_small_bodies_not_every_iteration():
    # the recording does not grow with the number of iterations
    sizes = []
    for links in (20, 200):
        src = PROGRAMS["chain"].replace("range(40)", f"range({links})") + "\nlet fast = jit(grad(grad(f)))"
        fast = interp(src).lookup("fast")
        fast(0.5)
        sizes.append(sum(len(e.program.steps) for entries in fast.call.entries.values() for e in entries))
    assert sizes[0] == sizes[1] < 100, sizes


@pytest.mark.parametrize("name, reversed_walk", [("chain", "back_reversed_split"), ("tensor_state", "back_reversed_split"),
                                                 ("not_kept", "back_reversed"), ("power", "back_reversed")])
def test_the_reversed_walk_reads_the_forward_loops_residuals_where_they_hold_what_it_needs(name, reversed_walk):
    # LoopBackT differentiates the pullback with respect to the state: the values of the forward it
    # needs (sin(acc) and cos(acc) for the chain) are read from what the forward loop kept, where it
    # kept them all, instead of computed again from each iteration's state
    i = interp(PROGRAMS[name] + "\nlet second = grad(grad(f))\nlet fast = jit(second)")
    second, fast = i.lookup("second"), i.lookup("fast")
    for x in (0.55, -0.3, 0.55):
        assert close(fast(x), second(x)), (x, fast(x), second(x))
    loops = fast.call.entries[next(iter(fast.call.entries))][0].program.steps
    body = next(s[4]["body"] for s in loops if s[1] == "LoopBackT")
    ran = {k for k, v in body.walks()._loops.items() if v}
    assert reversed_walk in ran and ({"back_reversed", "back_reversed_split"} - {reversed_walk}).isdisjoint(ran), ran


def _outcome(fn, x):
    """fn(x), or the error's kind and message."""
    try:
        return ("value", fn(x))
    except dsl.DgError as exc:
        return (exc.kind, exc.message)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(risky(["s", "x", "(s - 1.0)", "(s * x)", "0.5"]), st.sampled_from([0.0, 1.0, -1.0, 0.5, 2.0]))
def test_the_walks_checked_only_at_the_end_give_what_the_interpreter_gives(body, x):
    # where a NaN made on any iteration reaches the final cotangents, the walks run without their
    # per-iteration checks and check the end (loop_walks._unchecked); anything not finite there
    # runs them again checked: the interpreter's value, or its error
    i = interp(f"fn f(x) {{ let s = x\n for i in range(6) {{ s = {body} + 0.1 * s }}\n return s }}\n"
               "let second = grad(grad(f))\nlet fast = jit(second)")
    second, fast = i.lookup("second"), i.lookup("fast")
    want = _outcome(second, x)
    got = _outcome(fast, x)
    again = _outcome(fast, x)       # the compiled walks, whatever the first call staged
    for out in (got, again):
        assert out[0] == want[0], (body, x, out, want)
        if want[0] == "value":
            assert close(out[1], want[1], 1e-9), (body, x, out, want)
