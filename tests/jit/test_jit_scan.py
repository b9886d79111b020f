"""A loop under three or more reverse levels while jit stages is one Scan step (dsl/core/primitives/scan.py,
dsl/transform/jit/scan_body.py): its pullback is a Scan again, so derivatives of any order through a loop
are a few small staged bodies. The oracle is the interpreter, which writes the loop out."""

import numpy as np
import pytest

import dsl

from test_jit_loops import ops_of
from test_jit_twice import PROGRAMS, close, interp


def nth(order, f="f"):
    """grad(grad(...(f))), `order` times."""
    for _ in range(order):
        f = f"grad({f})"
    return f


@pytest.mark.parametrize("order", [3, 4])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_third_and_fourth_derivatives_through_a_loop_are_rolled_and_exact(name, order):
    i = interp(PROGRAMS[name] + f"\nlet d = {nth(order)}\nlet fast = jit(d)")
    d, fast = i.lookup("d"), i.lookup("fast")
    for x in (0.7, 0.35, -0.9, 0.7):
        assert close(fast(x), d(x), 1e-10), (x, fast(x), d(x))
    ops = ops_of(fast)
    assert "Scan" in ops and "Loop" not in ops


def test_the_third_derivative_agrees_with_central_differences_of_the_second():
    i = interp(PROGRAMS["two_leaves"] + "\nlet second = grad(grad(f))\nlet fast = jit(grad(second))")
    second, fast = i.lookup("second"), i.lookup("fast")
    for x in (0.6, -0.4, 1.1):
        eps = 1e-5
        fd = (second(x + eps) - second(x - eps)) / (2 * eps)
        assert abs(fast(x) - fd) <= 1e-6 * max(1.0, abs(fd)), (x, fast(x), fd)


def test_the_recording_does_not_grow_with_the_number_of_iterations():
    sizes = []
    for links in (20, 400):
        src = PROGRAMS["chain"].replace("range(40)", f"range({links})") + f"\nlet fast = jit({nth(3)})"
        fast = interp(src).lookup("fast")
        fast(0.5)
        steps = [s for entries in fast.call.entries.values() for e in entries for s in e.program.steps]
        bodies = [s[4]["body"] for s in steps if s[1] == "Scan"]
        sizes.append((len(steps), sorted(len(b.program.steps) for b in bodies)))
    assert sizes[0] == sizes[1] and sizes[0][0] < 400, sizes


@pytest.mark.parametrize("outer", [
    "grad(grad(fn(x) => value_and_grad(f)(x)[1]))",
    "grad(fn(x) => value_and_grad(grad(f))(x)[1] * x)",
    "grad(grad(fn(x) => grad(f)(x) * x + f(x)))",         # the loop again outside the inner grad
    "fn(x) => grad(fn(y) => grad(grad(f))(y * y))(x) + 1.0",
])
def test_other_third_derivatives_of_a_rolled_loop(outer):
    i = interp(PROGRAMS["two_leaves"] + f"\nlet d = {outer}\nlet fast = jit(d)")
    d, fast = i.lookup("d"), i.lookup("fast")
    for x in (0.6, -0.4, 0.6):
        assert close(fast(x), d(x), 1e-10)
    assert "Scan" in ops_of(fast)


def test_a_third_derivative_with_respect_to_a_matrix():
    # the third derivative of a tensor loop in direction v: grad of <grad of <grad(loss)(w), v>, v>
    src = ("fn loss(w) { let h = [0.2, -0.1, 0.4]\n for i in range(10) { h = tanh(w @ h + 0.1) }\n"
           " return sum(h * [1.0, 2.0, 3.0]) }\n"
           "let v = [[0.3, -0.2, 0.1], [0.0, 0.5, -0.4], [0.2, 0.2, 0.1]]\n"
           "let hvp = grad(fn(w) => sum(grad(loss)(w) * v))\n"
           "let d3 = grad(fn(w) => sum(hvp(w) * v))\nlet fast = jit(d3)")
    i = interp(src)
    w = np.array([[0.5, -0.3, 0.2], [0.1, 0.4, -0.6], [0.3, 0.1, 0.2]])
    d3, fast, hvp = i.lookup("d3"), i.lookup("fast"), i.lookup("hvp")
    for scale in (1.0, 0.5, 1.0):
        assert close(fast(w * scale), d3(w * scale), 1e-10)
    assert "Scan" in ops_of(fast)
    v, eps = np.array(i.lookup("v")), 1e-6
    fd = (np.asarray(hvp(w + eps * v)) - np.asarray(hvp(w - eps * v))) / (2 * eps)
    assert np.allclose(np.asarray(fast(w)), fd, rtol=1e-6, atol=1e-8)


def test_at_special_points_iterations_the_code_cannot_vouch_for_run_exactly():
    i = interp(PROGRAMS["sqrt"] + f"\nlet d = {nth(3)}\nlet fast = jit(d)", check_numerics=False)
    d, fast = i.lookup("d"), i.lookup("fast")
    fast(0.5)
    for x in (0.5, 0.0, -0.25, 1e-300, float("inf"), 0.5):
        assert close(fast(x), d(x), 1e-10), (x, fast(x), d(x))
    assert "Scan" in ops_of(fast)


def test_a_gradient_that_is_not_finite_names_the_operation_in_the_body():
    i = interp(PROGRAMS["sqrt"] + f"\nlet d = {nth(3)}\nlet fast = jit(d)")
    d, fast = i.lookup("d"), i.lookup("fast")
    fast(0.5)
    with pytest.raises(dsl.DgError) as want:
        d(1e-300)
    with pytest.raises(dsl.DgError) as got:
        fast(1e-300)
    assert got.value.kind == want.value.kind == "numerics"
    assert "the gradient of Sqrt" in str(got.value) and "the gradient of Sqrt" in str(want.value)


@pytest.mark.parametrize("outer, plain", [
    ("grad(fast)", "grad(d)"),                                  # a fourth reverse level over the jit
    ("jit(grad(fast))", "grad(d)"),
    ("fn(x) => jvp(fast, (x,), (1.0,))[1]", "fn(x) => jvp(d, (x,), (1.0,))[1]"),
    ("vmap(fast)", "vmap(d)"),
    ("jit(vmap(fast))", "vmap(d)"),
])
def test_a_jitted_third_derivative_under_another_transformation(outer, plain):
    i = interp(PROGRAMS["chain"] + f"\nlet d = {nth(3)}\nlet fast = jit(d)\nlet got = {outer}\nlet want = {plain}")
    got, want, fast = i.lookup("got"), i.lookup("want"), i.lookup("fast")
    fast(0.45)
    assert "Scan" in ops_of(fast)
    x = np.array([0.3, 0.7, -0.5]) if "vmap" in outer else 0.45
    assert close(got(x), want(x), 1e-10)


def test_a_condition_that_changes_on_a_later_iteration_stages_the_loop_written_out(capfd):
    # staged from x = 1.0, where s < 3.0 holds for six iterations; the seventh goes the other way
    src = ("fn f(x) {\n  let s = x\n"
           "  for i in range(20) { if s < 3.0 { s = s * 1.5 % 100.0 * x } else { s = s - 0.1 * x } }\n"
           "  return s\n}\n"
           f"let d = {nth(3)}\nlet fast = jit(d, explain=true)")
    i = interp(src)
    d, fast = i.lookup("d"), i.lookup("fast")
    for x in (1.0, 1.0, 0.5):
        assert close(fast(x), d(x), 1e-10), (x, fast(x), d(x))
    assert "Scan" not in ops_of(fast)
    assert "went another way on a later iteration" in capfd.readouterr().err


def test_a_rolled_loop_whose_results_nothing_reads_still_guards_later_calls():
    # staged with c = 0: every iteration takes the else branch and changes only `a`, which nothing
    # reads after the loop; with c = 1 the second iteration doubles v
    src = ("fn f(x, t, c) {\n  let a = 0.0 * x\n  let v = x * x\n"
           "  for i in range(10) { if a > t { v = v * 2.0 * x } else { a = t * 0.5 + c * x } }\n  return v\n}\n"
           "let d = fn(x, c) => grad(grad(grad(fn(z) => f(z, 1.0, c))))(x)\nlet fast = jit(d)")
    i = interp(src)
    d, fast = i.lookup("d"), i.lookup("fast")
    for x, c in ((0.75, 0.0), (0.75, 0.0), (0.9, 1.0), (0.9, 1.0), (0.75, 0.0)):
        assert close(fast(x, c), d(x, c), 1e-10), (x, c, fast(x, c), d(x, c))


@pytest.mark.parametrize("outer", [
    "fn(x) => jvp(grad(grad(f)), (x,), (1.0,))[1]",            # forward over two reverse levels
    "grad(fn(x) => jvp(grad(f), (x,), (1.0,))[1])",             # reverse, forward, reverse
    "fn(x) => jvp(fn(y) => jvp(grad(grad(f)), (y,), (1.0,))[1], (x,), (1.0,))[1]",
    "hessian(grad(f))",
    "grad(hessian(f))",
])
@pytest.mark.parametrize("name", ["chain", "two_leaves", "counter", "tensor_state", "struct_state", "power"])
def test_forward_mode_mixed_with_two_reverse_levels_is_a_scan_of_the_bodys_jvp(name, outer):
    i = interp(PROGRAMS[name] + f"\nlet d = {outer}\nlet fast = jit(d)", check_numerics=False)
    d, fast = i.lookup("d"), i.lookup("fast")
    for x in (0.7, 0.35, 0.7):
        assert close(fast(x), d(x), 1e-10), (x, fast(x), d(x))
    ops = ops_of(fast)
    assert "Scan" in ops and "Loop" not in ops


def scan_bodies(fast):
    """The bodies of the Scan steps of a jitted function's recordings, and those derived from them."""
    found = [s[4]["body"] for entries in fast.call.entries.values() for e in entries for s in e.program.steps
             if s[1] == "Scan"]
    out = []
    while found:
        body = found.pop()
        out.append(body)
        found.extend(body._derived.values())
    return out


@pytest.mark.parametrize("outer, plain", [
    ("vmap(fast)", "vmap(d)"),
    ("jit(vmap(fast))", "vmap(d)"),
    ("vmap(grad(fast))", "vmap(grad(d))"),
    ("vmap(fn(x) => jvp(fast, (x,), (1.0,))[1])", "vmap(fn(x) => jvp(d, (x,), (1.0,))[1])"),
])
@pytest.mark.parametrize("name", ["chain", "counter", "tensor_state", "struct_state"])
def test_vmap_of_a_rolled_third_derivative_is_a_scan_of_the_batched_body(name, outer, plain):
    i = interp(PROGRAMS[name] + f"\nlet d = {nth(3)}\nlet fast = jit(d)\nlet got = {outer}\nlet want = {plain}")
    got, want, fast = i.lookup("got"), i.lookup("want"), i.lookup("fast")
    fast(0.45)
    x = np.array([0.3, 0.7, -0.5])
    assert close(got(x), want(x), 1e-10)
    assert any(key[0] == "batch" for body in scan_bodies(fast) for key in body._derived)


WHILE = {
    "counted": ("fn f(x) { let s = x\n let k = 0\n"
                " while k < 20 { s = s - 0.1 * (s * s * s - x)\n k += 1 }\n return s }"),
    # the trip count depends on x: the staged recording serves every count
    "until": "fn f(x) { let s = x\n while s < 5.0 { s = s + 0.3 + 0.1 * sin(s * x) }\n return s * x }",
    "break": ("fn f(x) { let s = x\n let k = 0\n"
              " while true { s = s * 1.1 + sin(x * s)\n k += 1\n if k > 15 { break } }\n return s }"),
}


@pytest.mark.parametrize("outer", ["grad(grad(f))", nth(3), "fn(x) => jvp(grad(grad(f)), (x,), (1.0,))[1]"])
@pytest.mark.parametrize("name", sorted(WHILE))
def test_a_while_loop_under_two_or_more_reverse_levels_is_a_scan_until_a_guard_fails(name, outer):
    i = interp(WHILE[name] + f"\nlet d = {outer}\nlet fast = jit(d)")
    d, fast = i.lookup("d"), i.lookup("fast")
    for x in (0.7, 0.35, 0.9, 0.7):
        assert close(fast(x), d(x), 1e-10), (x, fast(x), d(x))
    ops = ops_of(fast)
    assert "Scan" in ops and "Loop" not in ops


def test_a_rolled_while_loop_that_never_ends_is_stopped_at_its_line():
    src = ("fn f(x) { let s = x\n while s > -1.0 { s = s * 0.5 + 0.25 }\n return s }\n"
           "let fast = jit(grad(grad(grad(f))))")
    i = dsl.Interpreter(seed=0, timeout=0.5)
    i.run(src)
    with pytest.raises(dsl.DgError) as err:
        i.lookup("fast")(0.3)
    assert err.value.kind == "limit"



def test_a_rolled_for_loop_runs_in_pieces_up_to_the_step_budget():
    # stopped at the budget, not after its 200,000 iterations
    i = dsl.Interpreter(seed=0, max_steps=5000)
    i.run("fn f(x) { let s = x\n for k in range(200000) { s = s * 0.999 + 0.001 * sin(s) }\n return s }\n"
          f"let fast = jit({nth(3)})")
    with pytest.raises(dsl.DgError) as err:
        i.lookup("fast")(0.3)
    assert err.value.kind == "limit" and i.limits.steps < 10_000


STATES = {
    "float32": ('fn f(x) { let h = astype([0.1, 0.2, 0.3], "float32")\n'
                ' for i in range(6) { h = tanh(h * astype(x, "float32") + 0.1) }\n return sum(h) }'),
    "bool": ("fn f(x) { let s = x\n let up = true\n"
             " for i in range(8) { s = s * 0.9 + sin(s) * x\n up = s > 0.0 }\n return s }"),
    "tensor_0d": "fn f(x) { let h = zeros(())\n for i in range(6) { h = tanh(h * x + 0.3) }\n return sum(h) }",
    "matrix": "fn f(x) { let m = eye(2) * x\n for i in range(5) { m = tanh(m @ m * 0.5 + x) }\n return sum(m) }",
    "map": ('fn f(x) { let d = {"a": x, "b": 1.0}\n'
            ' for i in range(6) { d["a"] = sin(d["a"]) * d["b"]\n d["b"] = d["b"] + x * 0.1 }\n return d["a"] }'),
    "tuple": ("fn f(x) { let t = (x, 2.0)\n for i in range(6) { t = (t[0] * cos(t[1]), t[1] + sin(t[0])) }\n"
              " return t[0] + t[1] }"),
}


@pytest.mark.parametrize("check", [True, False])
@pytest.mark.parametrize("order", [2, 3])
@pytest.mark.parametrize("name", sorted(STATES))
def test_loop_states_of_every_kind_under_two_and_three_reverse_levels(name, order, check):
    # a 0-d tensor times a number is a number: the generated code's zero rule took it for a tensor
    i = interp(STATES[name] + f"\nlet d = {nth(order)}\nlet fast = jit(d)", check_numerics=check)
    d, fast = i.lookup("d"), i.lookup("fast")
    for x in (0.7, 0.35, 0.7):
        assert close(fast(x), d(x), 1e-5 if name == "float32" else 1e-10), (x, fast(x), d(x))


@pytest.mark.parametrize("inner", ["grad(grad(f))", nth(3), "fn(x) => jvp(grad(grad(f)), (x,), (1.0,))[1]"])
@pytest.mark.parametrize("outer", ["vmap", "jit(vmap"])
def test_vmap_of_nested_derivatives_through_a_long_loop_rolls_it(inner, outer, monkeypatch):
    # vmap looks at the function once (a dry stage) and batches the Scan it recorded
    from dsl.transform.jit import rolling
    rolled = []
    monkeypatch.setattr(rolling, "scan_loop", lambda *a, real=rolling.scan_loop: rolled.append(1) or real(*a))
    src = "fn f(x) { let acc = x\n for i in range(40) { acc = sin(acc) * x + 0.1 }\n return acc }\n"
    batched = f"{outer}({inner})" + (")" if outer.startswith("jit") else "")
    i = interp(src + f"let got = {batched}\nlet one = {inner}")
    got, one = i.lookup("got"), i.lookup("one")
    xs = np.array([0.3, 0.7, -0.5])
    for _ in range(2):
        assert close(got(xs), np.array([one(x) for x in xs]), 1e-10)
    assert rolled


CUSTOM = ("let clipped = custom_vjp(fn(x) => tanh(x), fn(x, out, g) => (g * (1.0 - out * out) * 0.5,))\n"
          "let cube = custom_jvp(fn(x) => x * x * x, fn(p, t) => (p[0] * p[0] * p[0], 3.0 * p[0] * p[0] * t[0]))\n")
CUSTOM_BODIES = {
    "custom_vjp": "fn f(x) { let s = x\n for i in range(10) { s = clipped(s * x) + 0.1 * s }\n return s }",
    "custom_jvp": "fn f(x) { let s = x\n for i in range(10) { s = cube(s) * 0.3 + x }\n return s }",
    "while": "fn f(x) { let s = x\n while s < 3.0 { s = s + 0.2 + 0.1 * clipped(s * x) }\n return s * x }",
}


@pytest.mark.parametrize("outer, rolled", [("fn(x) => jvp(grad(f), (x,), (1.0,))[1]", True), ("hessian(f)", True),
                                           ("grad(grad(f))", False), (nth(3), False),
                                           ("hessian(grad(f))", False)])
@pytest.mark.parametrize("name", sorted(CUSTOM_BODIES))
def test_a_body_with_a_custom_rule_under_forward_over_reverse_is_a_scan(name, outer, rolled):
    # the user's rule need not be the derivative of its function (this one is half of it): the Scan
    # differentiates the rule's own steps, as the interpreter does with the loop written out. Under
    # two reverse levels the loop is written out (decisions.md: the rule's cotangent would be split)
    i = interp(CUSTOM + CUSTOM_BODIES[name] + f"\nlet d = {outer}\nlet fast = jit(d)")
    d, fast = i.lookup("d"), i.lookup("fast")
    for x in (0.7, 0.35, 0.7):
        assert close(fast(x), d(x), 1e-10), (x, fast(x), d(x))
    assert ("Scan" in ops_of(fast)) == rolled
