"""Loops inside the body of a loop jit rolls (dsl/transform/jit/rolling.py, Roller.wanted): a
long `for` (on XLA, in a `for` loop's body, one of three iterations or more), and a `while`
whose count differs from one outer iteration to the next (loop_modes.retry), are steps of that
body, rolled as they would be outside it. Written out in the body, a 150-step inner loop staged
150 copies (and XLA, past the steps it compiles in reasonable time, left the program to numpy),
and such a `while` made jit write the outer loop out too."""

import io

import numpy as np
import pytest

import dsl
from dsl.transform.jit.rolling import NESTED_MIN_ITEMS

NEST = """
fn settle(k) {
    let y = 1.0
    let total = 0.0
    for i in range(12) {
        for j in range(INNER) { y = y + 0.001 * sin(y * k) }
        total = total + y * (i + 1)
    }
    return total
}
fn roots(k) {
    let y = 1.0
    let total = 0.0
    for i in range(30) {
        let x = y + 1.0
        while abs(x * x - (2.0 + y)) > 1e-12 { x = x - (x * x - 2.0 - y) / (2.0 * x) }
        y = 0.5 * x * k + 0.01 * i
        total = total + y
    }
    return total
}
fn field(w) {
    let m = zeros((12, INNER))
    for i in range(12) {
        for j in range(INNER) { m[i, j] = tanh(w[i] * (j + 1) * 0.01 + m[i, j - 1]) }
    }
    return sum(m * m)
}
"""


def interp(inner, backend="numpy"):
    """An interpreter with the nests above, their inner `for` loops `inner` long."""
    i = dsl.Interpreter(stdout=io.StringIO(), backend=backend)
    i.run(NEST.replace("INNER", str(inner)))
    return i


def programs(jitted):
    """The recordings a jitted function holds."""
    return [e.program for entries in jitted.call.entries.values() for e in entries]


def body_of(step):
    """The program a Loop or Scan step runs per iteration."""
    body = step[4]["body"]
    return body.program if hasattr(body, "program") else body.forward


def loop_steps(program):
    """The Loop and Scan steps of a program, and of the bodies of those steps, at any depth."""
    found = []
    for s in program.steps:
        if s[1] in ("Loop", "Scan"):
            found.append(s)
            found += loop_steps(body_of(s))
    return found


def bodies_holding_loops(program):
    """How many of a program's loop steps have a loop step in their body."""
    return sum(any(t[1] in ("Loop", "Scan") for t in body_of(s).steps) for s in loop_steps(program))


def assert_as_written_out(src, expr, backend, rel):
    """jit(expr) at 0.7, three calls (staged, then compiled), against an interpreter that writes
    every loop out (it keeps tapes), both drawing from seed 5."""
    rolled = dsl.Interpreter(seed=5, stdout=io.StringIO(), backend=backend)
    rolled.run(src + f"\nlet h = jit({expr})")
    written = dsl.Interpreter(seed=5, keep_tape=True)
    written.run(src)
    for _ in range(3):
        assert rolled.lookup("h")(0.7) == pytest.approx(written.eval(f"({expr})(0.7)"), rel=rel), expr


def size(program):
    """The steps of a program and of its loop steps' bodies, at any depth."""
    return len(program.steps) + sum(len(body_of(s).steps) for s in loop_steps(program))


def test_a_long_inner_loop_is_a_step_of_the_outer_loops_body(backend):
    sizes = []
    for inner in (150, 300):
        i = interp(inner, backend)
        i.run("let g = jit(grad(settle))\nlet g3 = jit(grad(grad(grad(settle))))\n"
              "let want = grad(settle)\nlet want3 = grad(grad(grad(settle)))")
        for k in (1.3, 0.7, 1.3):
            assert i.lookup("g")(k) == pytest.approx(i.lookup("want")(k), rel=1e-12)
            assert i.lookup("g3")(k) == pytest.approx(i.lookup("want3")(k), rel=1e-9)
        (g,), (g3,) = programs(i.lookup("g")), programs(i.lookup("g3"))
        assert bodies_holding_loops(g) >= 1 and bodies_holding_loops(g3) >= 1
        sizes.append((size(g), size(g3)))
        if backend == "xla":
            # copies of the inner body under three derivatives were past what XLA compiles in
            # reasonable time: the program ran on numpy
            assert all(e.xla.why is None for es in i.lookup("g3").call.entries.values() for e in es)
    # written out, the inner loop put a copy of its body per iteration in the outer one's
    assert sizes[0] == sizes[1]


def test_a_short_inner_for_loop_stays_written_out_in_the_body_on_numpy():
    # measured: the body with a few copies of a short loop runs about 2x faster than a loop step
    # in it (NESTED_MIN_ITEMS)
    short, long_ = interp(5), interp(150)
    for i in (short, long_):
        i.run("let g = jit(grad(settle))")
        assert i.lookup("g")(1.3) == pytest.approx(i.eval("grad(settle)(1.3)"), rel=1e-12)
    (program,) = programs(short.lookup("g"))
    assert loop_steps(program) and bodies_holding_loops(program) == 0
    (program,) = programs(long_.lookup("g"))
    assert bodies_holding_loops(program) >= 1


def test_an_inner_while_loop_whose_count_changes_is_rolled_in_the_body(capfd):
    # Newton's iterations per outer step differ (2 to 5 here): written out in the body, the count
    # of the iteration looked ahead fails a guard on a later one, and jit stages again with that
    # while loop rolled in the body, where it wrote the outer loop out (200 outer steps: 1.7 s);
    # a while loop whose count stays the same stays written out (measured: 3-4x faster there)
    i = interp(5)
    i.run("let g = jit(grad(roots), explain=true)\nlet v = jit(roots)")
    for k in (0.7, 0.9, 0.7):
        assert i.lookup("g")(k) == pytest.approx(i.eval(f"grad(roots)({k})"), rel=1e-12)
        assert i.lookup("v")(k) == pytest.approx(i.eval(f"roots({k})"), rel=1e-14)
    err = capfd.readouterr().err
    assert err.count("staging it again") == 1 and "written out" not in err
    assert ("staging it again with the while loop at <input>:16:15 rolled in the body of the loop around it: it "
            "ran another number of times on a later iteration") in err
    for name in ("g", "v"):
        (program,) = programs(i.lookup(name))
        assert bodies_holding_loops(program) >= 1 and len(program.steps) < 100, name


def test_rows_written_by_nested_loops_and_their_gradient(backend):
    i = interp(120, backend)
    i.run("let g = jit(value_and_grad(field))\nlet want = value_and_grad(field)\n"
          "let vg = jit(vmap(grad(field)))")
    w = np.linspace(0.5, 1.5, 12)
    batch = np.stack([w, w[::-1], w * 0.5])
    for _ in range(2):
        (v, d), (v0, d0) = i.lookup("g")(w), i.lookup("want")(w)
        assert v == pytest.approx(v0, rel=1e-13)
        np.testing.assert_allclose(d, d0, rtol=1e-12)
        got = i.lookup("vg")(batch)
        for row, x in zip(got, batch):
            np.testing.assert_allclose(row, i.lookup("want")(x)[1], rtol=1e-12)
    assert bodies_holding_loops(programs(i.lookup("g"))[0]) >= 1


def test_a_branch_of_the_inner_loop_that_goes_another_way_later_stages_again():
    # the inner body's `%` cannot run both ways: a guard; on the fourth outer iteration y passes
    # 1.5 and the guard fails, and jit stages the function again with that loop written out
    src = ("fn f(w) {\n  let y = 1.0\n  for i in range(8) {\n    for j in range(120) {\n"
           "      if y > 1.5 { y = y * 0.999 % 7.0 } else { y = y + 0.0005 * w }\n    }\n  }\n  return y\n}\n"
           "let g = jit(value_and_grad(f))\nlet want = value_and_grad(f)")
    i = dsl.Interpreter(stdout=io.StringIO())
    i.run(src)
    for _ in range(2):
        got, want = i.lookup("g")(1.1), i.lookup("want")(1.1)
        assert got[0] == pytest.approx(want[0], rel=1e-13) and got[1] == pytest.approx(want[1], rel=1e-12)


def test_an_ode_fit_with_substeps_is_compiled_by_xla():
    # odeint's rk4 takes `substeps` steps per output time, a loop in the loop over the times:
    # written out in that body, 200 times x 25 substeps under grad were past the steps XLA
    # compiles in reasonable time, and the fit ran on numpy
    pytest.importorskip("jax")
    i = dsl.Interpreter(stdout=io.StringIO(), backend="xla")
    i.run("import ode\nfn rhs(y, t, k) { return tensor([y[1], -k * sin(y[0])]) }\n"
          "fn loss(k) { return sum(ode.odeint(rhs, tensor([1.0, 0.0]), linspace(0.0, 10.0, 200), k, "
          "method=\"rk4\", substeps=25)[:, 0] ** 2) }\nlet g = jit(grad(loss))")
    want = i.eval("grad(loss)(1.3)")
    for _ in range(2):
        assert i.lookup("g")(1.3) == pytest.approx(want, rel=1e-12)
    assert all(e.xla.why is None for es in i.lookup("g").call.entries.values() for e in es)


def test_nested_loops_under_grad_outside_jit_give_the_written_out_numbers():
    # outside jit a loop under a derivative rolls too (eager_loops.py), and the loops in its body
    # as inside jit; an interpreter that keeps tapes writes every loop out
    rolled, written = interp(150), dsl.Interpreter(keep_tape=True)
    written.run(NEST.replace("INNER", "150"))
    for expr in ("grad(settle)(1.3)", "grad(roots)(0.7)", "grad(settle)(0.9)", "grad(roots)(0.8)"):
        assert rolled.eval(expr) == pytest.approx(written.eval(expr), rel=1e-12), expr


def test_an_inner_while_loop_without_a_derivative_is_an_xla_while_loop():
    # its count differs from one outer iteration to the next: rolled in the body (after one
    # staging that wrote it out), a lax.while_loop inside the outer loop's scan; under grad it is
    # the numpy backend's loop, which XLA does not lower (the values are checked all the same)
    pytest.importorskip("jax")
    i = interp(5, "xla")
    i.run("let v = jit(roots)\nlet g = jit(grad(roots))")
    for k in (0.7, 0.9):
        assert i.lookup("v")(k) == pytest.approx(i.eval(f"roots({k})"), rel=1e-13)
        assert i.lookup("g")(k) == pytest.approx(i.eval(f"grad(roots)({k})"), rel=1e-12)
    (program,) = programs(i.lookup("v"))
    assert bodies_holding_loops(program) >= 1
    assert all(e.xla.why is None for es in i.lookup("v").call.entries.values() for e in es)


def test_a_custom_rule_in_the_inner_loop_is_the_derivative_used(backend):
    # found by the fuzzer: the inner loop's body, staged in the outer one's look ahead, held the
    # function of a custom_vjp and not the rule (that look ahead saw no derivative's boxes), so
    # the outer loop's rules gave tanh's own derivative where the rule says twice the cotangent
    src = ("let doubled = custom_vjp(fn(x) => tanh(x), fn(x, out, g) => (2.0 * g,))\n"
           "let slope = custom_jvp(fn(x) => tanh(x), fn(p, t) => (tanh(p[0]), 3.0 * t[0]))\n"
           "fn f(p) {\n  let a = 0.3\n  for i in range(4) {\n"
           "    for j in range(120) { a = tanh(a + 0.01 * doubled(a * p) + 0.01 * slope(a - p)) }\n"
           "    a = a * 0.9 + 0.1 * i\n  }\n  return a\n}")
    for expr in ("grad(f)", "fn(p) => jvp(f, (p,), (1.0,))[1]", "grad(grad(f))"):
        assert_as_written_out(src, expr, backend, rel=1e-11)


def test_an_inner_loop_that_draws_without_a_key_stays_written_out(backend):
    # its draws would be a step of the outer body that the outer loop's rules and look ahead do
    # not replay in order: the numbers differed from the interpreter's
    src = ("fn f(p) {\n  let a = 0.3\n  for i in range(4) {\n"
           "    for j in range(120) { a = tanh(a + 0.01 * p * randn(()) + 0.001 * p) }\n"
           "    a = a * 0.9 + 0.01 * rand(())\n  }\n  return a\n}\n"
           "fn g(p) {\n  let a = 0.3\n  for i in range(4) {\n"
           "    let c = 0\n    while c < 5 { a = tanh(a + 0.01 * p * randn(())); c += 1 }\n  }\n  return a\n}")
    for expr in ("f", "grad(f)", "fn(p) => jvp(f, (p,), (1.0,))[1]", "g", "grad(g)"):
        assert_as_written_out(src, expr, backend, rel=1e-12)


def test_variables_the_outer_body_sets_after_the_inner_loop_are_not_its_state(backend):
    # in the outer loop's look ahead they still hold the iteration before's values (boxes of the
    # trace jit stages): taken for the inner loop's state, they made the outer loop look like it
    # read a value from outside, and jit wrote it out (an HMC sampler: 37,002 steps, left to numpy)
    src = ("fn energy(q) { return 0.5 * sum(q * q) + 0.1 * sum(q ** 4) }\n"
           "fn sample(q, key) {\n  let total = zeros((2,))\n  for s in range(40) {\n"
           "    let keys = split(key, 3)\n    key = keys[0]\n    let p = normal(shape=(2,), key=keys[1])\n"
           "    let q1 = q\n    let p1 = p - 0.05 * grad(energy)(q1)\n"
           "    for l in range(STEPS) { q1 = q1 + 0.1 * p1\n p1 = p1 - 0.1 * grad(energy)(q1) }\n"
           "    let ratio = energy(q) - energy(q1) + 0.5 * sum(p * p) - 0.5 * sum(p1 * p1)\n"
           "    let take = ln(uniform(key=keys[2])) < ratio\n    q = where(take, q1, q)\n    total = total + q\n"
           "  }\n  return total\n}")
    src = src.replace("STEPS", "8" if backend == "xla" else str(NESTED_MIN_ITEMS))
    rolled = dsl.Interpreter(stdout=io.StringIO(), backend=backend)
    rolled.run(src + "\nlet h = jit(sample)")
    plain = dsl.Interpreter()
    plain.run(src)
    want = plain.eval("sample(tensor([0.5, -0.5]), rng(1))")
    for _ in range(2):
        np.testing.assert_allclose(rolled.eval("h(tensor([0.5, -0.5]), rng(1))"), want, rtol=1e-12)
    (program,) = programs(rolled.lookup("h"))
    assert bodies_holding_loops(program) >= 1 and size(program) < 400


def test_a_for_loop_in_a_while_loops_body_on_xla_is_no_scan():
    # the while loop is the numpy backend's loop step (XLA lowers it where no derivative runs
    # through it): a Scan in its body made vmap run the program once per example, and the print
    # happened once per example (found by the XLA fuzzer, under jacfwd of a jitted function)
    pytest.importorskip("jax")
    src = ("let clipped = custom_vjp(fn(x) => tanh(x), fn(x, out, g) => (clamp(g, -0.5, 0.5),))\n"
           "fn f(p, w) {\n  let s = w\n  print(sum(s) > 0.0)\n  let c = 0\n  while c < 4 {\n"
           "    for j in range(3) { s = tanh(s * 0.5 + p) }\n    s = s + 0.1 * clipped(s)\n    c += 1\n  }\n"
           "  return s\n}")
    w = np.array([0.2, -0.1, 0.4])
    printed = {}
    for backend in ("numpy", "xla"):
        out = io.StringIO()
        i = dsl.Interpreter(stdout=out, backend=backend)
        i.run(src + "\nlet h = jit(f)\nlet plain = jacfwd(f, argnums=1)")
        i.set("w", w)
        for _ in range(2):
            np.testing.assert_allclose(i.eval("jacfwd(h, argnums=1)(0.3, w)"), i.eval("plain(0.3, w)"), rtol=1e-12)
        printed[backend] = out.getvalue()
    assert printed["xla"] == printed["numpy"] == "true\n" * 4


def test_jacfwd_of_a_jitted_nest_of_loops_batches_only_the_tangents():
    # vmap of the compiled program found every result of the inner loop step batched, the primal
    # leaves too, so a print of a primal value depended on the batch and vmap ran the program
    # once per example, printing once each (found by the fuzzer)
    src = ("fn f(p, w) {\n  let a = p\n  let v = w\n  for i in range(3) {\n"
           f"    for j in range({NESTED_MIN_ITEMS}) {{ a = tanh(a + 0.01 * sum(w * a)); v = tanh(v * 0.5 + a) }}\n"
           "  }\n  let c = 0\n  while c < 2 { print(sum(v) > 0.0); c += 1 }\n  return sum(v) + a\n}")
    printed = []
    for expr in ("jacfwd(jit(f), argnums=1)", "jacfwd(f, argnums=1)"):
        out = io.StringIO()
        i = dsl.Interpreter(stdout=out)
        i.run(src + f"\nlet g = {expr}")
        i.set("w", np.array([0.1, 0.2, 0.3]))
        printed.append((i.eval("g(0.3, w)"), out.getvalue()))
    np.testing.assert_allclose(printed[0][0], printed[1][0], rtol=1e-12)
    assert printed[0][1] == printed[1][1] == "true\n" * 2
