"""A hot `for` loop under grad, outside jit, runs as one Loop step (dsl/transform/jit/eager_loops.py) in an
interpreter that keeps no tapes: the same numbers, output and errors as the loop written out,
which an interpreter keeping tapes still does."""

import io

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import dsl
from dsl.errors import DgError
from dsl.transform.jit import eager_loops
from dsl.transform.jit.eager_loops import MIN_ITEMS, MISSES, SKIPPED
from fuzz_harness import fuzz_examples, long_run
from test_grad_fuzz import CHECKS, Writer
from test_jit_loops import PROJECTILE, leaves

STEP = PROJECTILE + "let step = value_and_grad(loss)\n"


def pair(src, **settings):
    """(rolling, written out): two interpreters that have run `src`, printing into buffers (.out)."""
    made = []
    for keep in (False, True):
        out = io.StringIO()
        i = dsl.Interpreter(seed=0, stdout=out, keep_tape=keep, **settings)
        i.out = out
        i.run(src)
        made.append(i)
    return made


@pytest.fixture
def rolls(monkeypatch):
    """A list that gets one entry per `for` loop run rolled outside jit: its number of items."""
    seen = []
    real = eager_loops.EagerLoops.roll

    def spy(self, f, skip, item, items):
        done = real(self, f, skip, item, items)
        if done and items is not None:      # a `for`: items are those after the first
            seen.append(len(items) + 1)
        return done
    monkeypatch.setattr(eager_loops.EagerLoops, "roll", spy)
    return seen


@pytest.fixture
def while_rolls(monkeypatch):
    """A list that gets, for each while loop run rolled outside jit, how many iterations it ran rolled."""
    seen = []
    real = eager_loops._loop_kernel

    def spy(*state, body=None, items=(), history=False):
        out = real(*state, body=body, items=items, history=history)
        if items is None:
            seen.append(body.ran)
        return out
    monkeypatch.setattr(eager_loops, "_loop_kernel", spy)
    return seen


def errors(pair_, expr):
    """The DgError expr raises in each interpreter of a pair."""
    raised = []
    for i in pair_:
        with pytest.raises(DgError) as caught:
            i.eval(expr)
        raised.append(caught.value)
    return raised


def both(pair_, expr, times=4):
    """expr evaluated `times` times in each interpreter of a pair: (rolling's results, written out's)."""
    return tuple([i.eval(expr) for _ in range(times)] for i in pair_)


def test_a_hot_loop_under_grad_is_rolled_and_gives_the_written_out_numbers_bit_for_bit(rolls):
    fast, slow = pair(STEP)
    got, want = both((fast, slow), "step(launch, 1000)")
    assert rolls == [1000] * len(got)       # from the first run on
    for g, w in zip(got, want):
        assert leaves(g) == leaves(w)
    # other launches through the kept body: still the same numbers
    for speed in (5.0, 31.0):
        expr = f"step(Launch({speed}, 0.3, 0.02), 400)"
        assert leaves(fast.eval(expr)) == leaves(slow.eval(expr))


def test_a_loop_staged_again_on_every_run_is_left_written_out_for_a_while(rolls):
    # the outer loop is too short to roll; its counter, an int of the frame, is part of what the
    # inner loop's body is staged for, so each of its runs would stage the body again
    src = """
fn f(x) {
    let acc = x
    for epoch in range(12) {
        for i in range(20) { acc = sin(acc) * 0.5 + x * epoch * 0.01 }
    }
    return acc
}
let g = grad(f)
"""
    fast, slow = pair(src)
    assert fast.eval("g(0.3)") == pytest.approx(slow.eval("g(0.3)"), rel=1e-13)
    assert rolls == [20] * MISSES and 12 - MISSES < SKIPPED      # then the next SKIPPED runs as written


def test_memory_is_flat_over_many_rolled_calls(rolls):
    import gc
    import tracemalloc
    fast, _ = pair(STEP)
    for k in range(50):
        fast.eval(f"step(Launch({20.0 + k % 7 * 0.1}, 0.8, 0.01), 300)")
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for k in range(200):
        fast.eval(f"step(Launch({20.0 + k % 7 * 0.1}, 0.8, 0.01), 300)")
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(rolls) == 250
    assert after - before < 100_000, f"memory grew by {after - before} bytes over 200 calls"


def test_what_is_not_rolled(rolls):
    src = STEP + "let step2 = value_and_grad(fn(p) => grad(fn(q) => loss(q, 40))(p).speed)\n"
    fast, slow = pair(src)
    short = f"step(launch, {MIN_ITEMS - 1})"
    got, want = both((fast, slow), short)
    assert got == want
    assert rolls == []      # too short
    assert leaves(fast.eval("step2(launch)")) == leaves(slow.eval("step2(launch)"))
    fast.eval("step2(launch)")
    assert rolls == []      # two reverse levels
    fast.eval("loss(launch, 100)"), fast.eval("loss(launch, 100)"), fast.eval("loss(launch, 100)")
    assert rolls == []      # no gradient
    budget, _ = pair(STEP, max_steps=10 ** 7)
    both((budget, slow), "step(launch, 100)")
    assert rolls == []      # a step budget counts the iterations as written
    both((slow, slow), "step(launch, 100)")
    assert rolls == []      # a kept tape shows every iteration


def test_a_branch_that_goes_another_way_on_a_later_run_runs_as_written(rolls):
    # a branch holding `%` is not run both ways: the if is a guard of the staged body
    src = """
fn f(x, k) {
    let acc = x
    for i in range(40) {
        if acc > k { acc = (acc % 100.0) * 0.9 } else { acc = acc + 1.5 }
    }
    return acc
}
let g = grad(f)
"""
    fast, slow = pair(src)
    for x, k in [(1.0, 100.0)] * 3 + [(1.0, 3.0), (2.5, 3.0), (1.0, 100.0)]:
        expr = f"g({x}, {k})"
        assert fast.eval(expr) == slow.eval(expr)
    # rolled: the first three runs, and the last (the body staged by the first applies again)
    assert rolls == [40, 40, 40, 40]


def test_an_error_on_a_later_iteration_is_the_written_out_error(rolls):
    src = """
fn f(x, v, n) {
    let acc = x
    let k = 0
    for i in range(20) {
        acc = acc * 0.5 + v[k]
        k = k + n
    }
    return acc
}
let g = grad(f)
"""
    fast, slow = pair(src)
    for _ in range(3):
        assert fast.eval("g(1.0, linspace(0.0, 1.0, 60), 1)") == slow.eval("g(1.0, linspace(0.0, 1.0, 60), 1)")
    assert rolls
    got, want = errors((fast, slow), "g(1.0, linspace(0.0, 1.0, 60), 4)")
    assert (got.kind, got.message, got.span.line, got.span.column) == \
           (want.kind, want.message, want.span.line, want.span.column)


def test_a_module_level_name_rebound_is_read_again(rolls):
    src = """
let scale = 0.5
fn helper(x) { return x * scale }
fn f(x) {
    let acc = x
    for i in range(30) { acc = sin(helper(acc)) + x }
    return acc
}
let g = value_and_grad(f)
"""
    fast, slow = pair(src)
    before = both((fast, slow), "g(0.3)")[0][-1]
    assert rolls
    for i in (fast, slow):
        i.run("scale = 0.75")
    got, want = both((fast, slow), "g(0.3)")
    assert got == want and got[-1] != before
    for i in (fast, slow):
        i.run("fn helper(x) { return x * scale * scale }")
    again, want = both((fast, slow), "g(0.3)")
    assert again == want and again[-1] != got[-1]


def test_a_function_argument_is_part_of_what_the_body_was_staged_for(rolls):
    src = """
fn f(x, act) {
    let acc = x
    for i in range(25) { acc = act(acc) * 0.9 + x }
    return acc
}
let g = grad(f)
"""
    fast, slow = pair(src)
    for act in ("sin", "tanh", "sin", "fn(z) => z * z * 0.1", "tanh"):
        expr = f"g(0.4, {act})"
        got, want = both((fast, slow), expr, 3)
    assert got == want
    assert rolls


def test_closures_alike_share_a_staged_body_and_closures_over_other_values_do_not(rolls, monkeypatch):
    staged = []
    real = eager_loops.EagerLoops._body

    def spy(self, *args):
        found = real(self, *args)
        staged.append(bool(found and found[3]))
        return found
    monkeypatch.setattr(eager_loops.EagerLoops, "_body", spy)
    src = """
fn f(x, act) {
    let k = 0.7
    fn h(z) { return act(z) * k + x }      # a new closure on each call, over this frame's cells
    let acc = x
    for i in range(30) { acc = h(acc) }
    return acc
}
fn scaled(c) { return fn(z) => sin(z) * c }
let g = grad(f)
let half, most = scaled(0.5), scaled(0.9)
"""
    fast, slow = pair(src)
    for act in ("half", "half", "half", "most", "most", "half"):
        expr = f"g(0.4, {act})"
        assert fast.eval(expr) == pytest.approx(slow.eval(expr), rel=1e-13)
    assert len(rolls) == 6
    # h's body is staged once; `most`, a closure of the same code over another Cell, once more
    assert staged == [True, False, False, True, False, False]


def test_an_effect_in_the_body_keeps_the_loop_written_out(rolls):
    src = """
fn f(x) {
    let acc = x
    for i in range(20) {
        acc = sin(acc) + x
        if i % 10 == 0 { print(i) }
    }
    return acc
}
let g = grad(f)
"""
    fast, slow = pair(src)
    got, want = both((fast, slow), "g(0.3)")
    assert got == want
    assert fast.out.getvalue() == slow.out.getvalue() == "0\n10\n" * 4
    assert rolls == []


def test_tensors_structures_and_counters_roll_too(rolls):
    src = """
struct Rnn { w, u, b }
fn loss(p, xs) {
    let h = zeros((4,))
    let t = 0
    let total = 0.0
    for i in range(20) {
        h = tanh(h @ p.w + xs[t] @ p.u + p.b)
        total = total + sum(h * h) / (1.0 + t)
        t += 1
    }
    return total
}
seed(3)
let p = Rnn(randn((4, 4)) * 0.5, randn((3, 4)) * 0.5, randn((4,)))
let xs = randn((20, 3))
let g = grad(loss)
"""
    fast, slow = pair(src)
    got, want = both((fast, slow), "g(p, xs)")
    assert rolls
    for a, b in zip(got, want):
        np.testing.assert_allclose(leaves(a), leaves(b), rtol=1e-13, atol=1e-13)


def test_the_numerics_check_names_the_operation_in_a_rolled_loop(rolls):
    src = """
fn f(x) {
    let acc = x
    for i in range(20) { acc = sqrt(acc * acc - 1.0) + 1.0 }
    return acc
}
let g = grad(f)
"""
    fast, slow = pair(src)
    got, want = both((fast, slow), "g(3.0)")
    assert got == want
    assert rolls
    got, want = errors((fast, slow), "g(1.0)")
    assert got.kind == want.kind == "numerics"
    assert (got.message, got.span.line) == (want.message, want.span.line)


def test_forward_mode_and_hessian_vector_products_roll_too(rolls):
    src = STEP + """
let v = Launch(1.0, -0.5, 2.0)
fn tangent_of(p) { return jvp(fn(q) => loss(q, 300), (p,), (v,))[1] }
fn hvp(p, v, steps) { return jvp(grad(loss), (p, steps), (v, 0))[1] }
"""
    fast, slow = pair(src)
    for expr in ("tangent_of(launch)", "hvp(launch, v, 300)"):
        got, want = both((fast, slow), expr)
        for g, w in zip(got, want):
            np.testing.assert_allclose(leaves(g), leaves(w), rtol=1e-12)
    assert len(rolls) == 2 * 4
    fast.eval("hessian(fn(s) => loss(Launch(s, 0.8, 0.01), 300))(20.0)")
    assert len(rolls) == 2 * 4 + 1        # forward over reverse


def test_a_vjp_pullback_called_twice_through_a_rolled_loop(rolls):
    src = STEP + ("fn pulled(v) { let out, back = vjp(fn(p) => loss(p, 200), launch)\n"
                  " return (back(v), back(2.0 * v)) }\n")
    fast, slow = pair(src)
    got, want = both((fast, slow), "pulled(1.5)")
    assert rolls
    assert [leaves(g) for g in got] == [leaves(w) for w in want]


def test_a_while_loop_under_grad_rolls_until_its_condition_turns(while_rolls):
    src = PROJECTILE + """
fn fall(p) {
    let dt = 0.01
    let x = 0.0
    let y = 0.0
    let vx = p.speed * cos(p.angle)
    let vy = p.speed * sin(p.angle)
    let n = 0
    while y >= -20.0 {
        let speed = sqrt(vx * vx + vy * vy)
        vx = vx - dt * p.drag * speed * vx
        vy = vy + dt * (-9.81 - p.drag * speed * vy)
        x = x + dt * vx
        y = y + dt * vy
        n += 1
    }
    return (x - 30.0) ** 2 + n * 0.001
}
let step = value_and_grad(fall)
"""
    fast, slow = pair(src)
    for speed in (20.0, 20.0, 35.0, 8.0):
        expr = f"step(Launch({speed}, 0.8, 0.01))"
        got, want = fast.eval(expr), slow.eval(expr)
        np.testing.assert_allclose(leaves(got), leaves(want), rtol=1e-12)
    # the trip count differs with the speed; each run stops rolled where the condition turns
    assert len(while_rolls) == 4 and len(set(while_rolls)) == 3 and min(while_rolls) > 100


def test_a_short_while_loop_is_left_written_out_after_a_few_runs(while_rolls):
    src = """
fn f(x) {
    let acc = x
    let k = 0
    while k < 4 { acc = sin(acc) + x
        k += 1 }
    return acc
}
let g = grad(f)
"""
    fast, slow = pair(src)
    got, want = both((fast, slow), "g(0.5)", MISSES + 3)
    assert got == want
    assert while_rolls == [3] * MISSES        # then SKIPPED runs as written


# ---------------------------------------------------------------- random programs
EAGER_CHECKS = """
seed(SEED)
fn point() {
    return (P(a=randn((1,))[0], v=randn((4,)), m=randn((4, 4)) * 0.7), {"u": randn((4,)), "k": randn((1,))[0]},
            (randn((4,)), randn((1,))[0], 20, "label"))
}
let xs = (point(), point(), point(), point())
let gf = value_and_grad(f, argnums=(0, 1, 2))
fn all_points() { return (gf(xs[0][0], xs[0][1], xs[0][2]), gf(xs[1][0], xs[1][1], xs[1][2]),
                          gf(xs[2][0], xs[2][1], xs[2][2]), gf(xs[3][0], xs[3][1], xs[3][2])) }
fn dot(g, d) {
    return g[0].a * d[0].a + sum(g[0].v * d[0].v) + sum(g[0].m * d[0].m) + sum(g[1]["u"] * d[1]["u"]) +
        g[1]["k"] * d[1]["k"] + sum(g[2][0] * d[2][0]) + g[2][1] * d[2][1]
}
fn tangent(d) { return (d[0], d[1], (d[2][0], d[2][1], none, none)) }
fn grad_dot(p, q, t, d) { return dot(grad(f, argnums=(0, 1, 2))(p, q, t), d) }
fn forward(x, d) { return jvp(f, x, tangent(d))[1] }
fn hvp(x, d, e) { return jvp(fn(p, q, t) => grad_dot(p, q, t, d), x, tangent(e))[1] }
let results = (all_points(), forward(xs[0], xs[1]), forward(xs[2], xs[3]), forward(xs[1], xs[0]),
               hvp(xs[0], xs[1], xs[2]), hvp(xs[3], xs[2], xs[1]), hvp(xs[1], xs[0], xs[3]))
"""


def long_while(w):
    """A statement form: a while loop whose trip count depends on the data (and is at most 40)."""
    def form(kind, name):
        grow = f"0.1 + 0.05 * tanh(sum({w.expr(kind, 2)}))"
        return (f"let {name} = {w.leaf(kind)}\n    let k{name} = 0\n    let c{name} = {w.expr('s', 2)}\n"
                f"    while c{name} < 3.0 and k{name} < 40 {{ {name} = tanh({name} * 0.8 + {w.expr(kind, 2)} * 0.2)\n"
                f"        c{name} = c{name} + {grow}\n        k{name} += 1 }}")
    return form


@settings(max_examples=fuzz_examples(15), deadline=None, database=None, derandomize=not long_run(),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much], print_blob=True)
@given(st.integers(0, 2 ** 31))
def test_random_loops_under_grad_give_the_written_out_gradients(seed):
    w = Writer(seed)
    kind = "sv"[seed % 2]
    w.lines.append([w.form_for_branch, w.form_for, long_while(w)][seed % 3](kind, kind + "3"))
    w.names[kind].append(kind + "3")
    source = w.program().replace(CHECKS, EAGER_CHECKS).replace("SEED", str(seed % 1000))
    got = []
    for keep in (False, True):
        interp = dsl.Interpreter(keep_tape=keep)
        try:
            interp.run(source)
        except DgError as err:
            got.append((err.kind, err.message))
            continue
        got.append(leaves(interp.lookup("results")))
    assume(not isinstance(got[1], tuple) or got[1][0] != "numerics")
    if isinstance(got[1], tuple):
        assert got[0] == got[1], source
        return
    scale = 1.0 + np.nanmax(np.abs(got[1]))     # (none, a gradient of an int or a string, reads as NaN)
    np.testing.assert_allclose(got[0], got[1], rtol=1e-11, atol=1e-11 * scale, err_msg=source)
