"""jit stages a `while` loop once (dsl/transform/jit/rolling.py, dsl/core/primitives/loops.py): one recording
for every trip count, that runs until an iteration goes another way than the one staged (its
condition turns false, a `break` is taken, a branch changes), and goes on as written from there;
the same results as the interpreter, under every transformation."""

import numpy as np
import pytest

import dsl
from test_jit_loops import interp, ops_of, same, same_error, staged_and_compiled

NEWTON = """
fn root(a) {
    let x = a
    while abs(x * x - a) > 1e-12 * a { x = 0.5 * (x + a / x) }
    return x
}
"""

# the shape of GradBench's particle: an Euler loop that ends when the particle crosses y = 0,
# its force the gradient of a potential
PARTICLE = """
fn potential(x, c) { return 1.0 / sqrt(sum((x - [10.0, c]) ** 2)) + 1.0 / sqrt(sum((x - [10.0, 0.0]) ** 2)) }
fn miss(w) {
    let x = [0.0, 8.0]
    let v = [0.75, 0.0]
    let steps = 0
    while true {
        let a = -grad(fn(q) => potential(q, 10.0 - w))(x)
        let x_new = x + 0.1 * v
        if x_new[1] <= 0.0 { break }
        x = x_new
        v = v + 0.1 * a
        steps += 1
    }
    let t = -x[1] / v[1]
    return (x[0] + t * v[0]) ** 2 + steps * 0.0
}
"""


def test_a_while_loop_is_one_recording_for_every_trip_count():
    i = interp(NEWTON + "let fast = jit(root)")
    fast, root = i.lookup("fast"), i.lookup("root")
    for a in (2.0, 30.0, 1e6, 0.001, 7.0, 123456.0):
        assert fast(a) == root(a)
    assert sum(len(e) for e in fast.call.entries.values()) == 1
    assert "Loop" in ops_of(fast)


@pytest.mark.parametrize("transform", ["jit(value_and_grad(miss))", "grad(jit(miss))", "jit(grad(miss))"])
def test_a_loop_ended_by_a_break_under_reverse_mode(transform):
    i = interp(PARTICLE + f"let fast = {transform}\nlet slow = value_and_grad(miss)")
    fast, slow = i.lookup("fast"), i.lookup("slow")
    for w in (0.0, 0.3, -0.1, 0.45):     # the particle crosses after another number of steps each time
        want = slow(w)
        want = want if transform.startswith("jit(value") else want[1]
        assert same(fast(w), want, 1e-12)
    if transform.startswith("jit"):
        assert {"Loop", "LoopBack"} <= ops_of(fast)
        assert sum(len(e) for e in fast.call.entries.values()) == 1


@pytest.mark.parametrize("transform", ["jvp", "jit_jvp_grad", "jit_hessian"])
def test_a_while_loop_under_forward_mode(transform):
    src = PARTICLE + ("let jj = jit(fn(w) => jvp(miss, (w,), (1.0,)))\n"
                      "let jh = jit(fn(w) => jvp(grad(miss), (w,), (1.0,)))\nlet hh = jit(hessian(miss))\n")
    i = interp(src)
    L = i.lookup
    miss = L("miss")
    for w in (0.0, 0.45, -0.2):
        if transform == "jvp":
            fast, want = L("jj"), L("jvp")(miss, (w,), (1.0,))
        elif transform == "jit_jvp_grad":
            fast, want = L("jh"), L("jvp")(L("grad")(miss), (w,), (1.0,))
        else:
            fast, want = L("hh"), L("hessian")(miss)(w)
        assert staged_and_compiled(fast, (w,), want, 1e-10)
        assert "Loop" in ops_of(fast)


def test_a_branch_that_changes_on_a_later_iteration_goes_on_as_written():
    # the loop stops where the branch goes the other way; the rest of the iterations, as written,
    # are the recording's, and a call that goes otherwise stages again (a branch that cannot run
    # both ways: `%` is refused, dsl/transform/jit/rolling.py BothWays)
    src = ("fn f(x) {\n  let s = x\n  let k = 0\n"
           "  while k < 40 { if s > 2.0 { s = s * 0.5 % 100.0 } else { s = s * 1.3 + 0.1 }\n k += 1 }\n"
           "  return s\n}\nlet fast = jit(value_and_grad(f))\nlet slow = value_and_grad(f)")
    i = interp(src)
    fast, slow = i.lookup("fast"), i.lookup("slow")
    for x in (0.1, 0.1, 1.5, 0.1, 3.0):
        assert same(fast(x), slow(x), 1e-12)
    assert "Loop" in ops_of(fast)


def test_an_int_counter_decides_the_condition():
    # `while k < n` with k staged: its guard stops the loop where the count is reached
    src = ("fn f(x, n) {\n  let k = 0\n  let s = x\n  while k < n { s = sin(s) + x\n k += 1 }\n"
           "  return (s, k)\n}\nlet fast = jit(grad(fn(x, n) => f(x, n)[0]))\nlet slow = grad(fn(x, n) => f(x, n)[0])\n"
           "let plain = jit(f)")
    i = interp(src)
    fast, slow, plain, f = i.lookup("fast"), i.lookup("slow"), i.lookup("plain"), i.lookup("f")
    for n in (5, 12, 40):
        assert same(fast(0.3, n), slow(0.3, n), 1e-12)
        assert plain(0.3, n) == f(0.3, n)
    assert "Loop" in ops_of(plain)


def test_vmap_of_a_jitted_while_loop_runs_each_example_its_own_count():
    i = interp(NEWTON + "let fast = jit(root)")
    fast, root = i.lookup("fast"), i.lookup("root")
    fast(2.0)
    xs = np.array([2.0, 50.0, 1e5, 0.01])
    got = i.lookup("vmap")(fast)(xs)
    assert same(got, np.array([root(x) for x in xs]))


def test_a_gradient_that_overflows_in_the_loop_is_reported_as_in_the_interpreter():
    src = ("fn f(x) {\n  let s = x\n  let k = 0\n  while k < 4 { s = exp(s)\n k += 1 }\n  return s\n}\n"
           "let fast = jit(grad(f))\nlet slow = grad(f)")
    i = interp(src)
    fast, slow = i.lookup("fast"), i.lookup("slow")
    assert same(fast(0.1), slow(0.1), 1e-12)
    assert "Loop" in ops_of(fast)
    assert "numerics" in same_error(fast, slow, (1.0,))[1]


def test_a_rolled_while_loop_keeps_the_step_budget():
    src = "fn f(x) {\n  let s = x\n  while s > 0.0 { s = s + 1.0 }\n  return s\n}\nlet fast = jit(f)"
    i = dsl.Interpreter(seed=0, max_steps=20_000)
    i.run(src)
    with pytest.raises(dsl.DgError) as raised:
        i.lookup("fast")(1.0)
    assert "limit" in str(raised.value) and "20,000 steps" in str(raised.value)


def test_a_while_loop_with_an_effect_is_written_out_and_says_why(capfd):
    src = ("fn f(x) {\n  let s = x\n  while s < 3.0 { s = s + 1.0\n print(s) }\n  return s\n}\n"
           "let fast = jit(f, explain=true)")
    i = interp(src)
    assert i.lookup("fast")(0.5) == 3.5
    assert i.out.getvalue() == "1.5\n2.5\n3.5\n"
    assert "Loop" not in ops_of(i.lookup("fast"))
    assert "the body has an effect" in capfd.readouterr().err


def test_a_short_while_loop_run_many_times_in_one_staging_is_rolled_three_times_at_most():
    # an inner while loop of two iterations inside a loop jit writes out (its body prints): each
    # run would look ahead and compile for nothing
    src = ("fn f(x) {\n  let acc = 0.0\n  for i in range(12) {\n    let s = x + i\n    let k = 0\n"
           "    while k < 2 { s = s * 0.5\n k += 1 }\n    acc = acc + s\n    print(i)\n  }\n  return acc\n}\n"
           "let fast = jit(f)")
    i = interp(src)
    from dsl.transform.jit import rolling
    tries = []
    real = rolling.Roller.roll_while

    def counted(self, f, start=None):
        tries.append(f)
        return real(self, f, start)
    rolling.Roller.roll_while = counted
    try:
        assert i.lookup("fast")(1.0) == i.lookup("f")(1.0)
        assert len(tries) == 3
        tries.clear()
        i.lookup("jit")(i.lookup("f"))(2.0)        # another staging tries again
        assert len(tries) == 3
    finally:
        rolling.Roller.roll_while = real


def test_a_while_loop_under_jvp_counts_its_iterations_for_the_short_loop_rule():
    # the loop of P' runs in P's place: its count is the loop's (it read 0, and the fourth run in
    # one staging was written out as if the loop were short)
    src = NEWTON + ("fn four(a) { return jvp(root, (a,), (1.0,))[1] + jvp(root, (a * 2.0,), (1.0,))[1] + "
                    "jvp(root, (a * 3.0,), (1.0,))[1] + jvp(root, (a * 4.0,), (1.0,))[1] }\nlet fast = jit(four)")
    i = interp(src)
    fast, four = i.lookup("fast"), i.lookup("four")
    assert same(fast(50.0), four(50.0), 1e-12)
    loops = [s for e in fast.call.entries.values() for r in e for s in r.program.steps if s[1] == "Loop"]
    assert len(loops) == 4


def test_a_rolled_while_loop_replayed_under_grad_keeps_the_step_budget():
    # grad of a jitted gradient replays the recording's loop through the primitives, iteration by
    # iteration: for x = 0 it never ends, and the budget stops it there too
    src = ("fn f(x) {\n  let s = 1.0\n  while s < 100.0 { s = s + x * x * s }\n  return s\n}\n"
           "let jg = jit(grad(f))\nlet gg = grad(jg)")
    i = dsl.Interpreter(seed=0, max_steps=20_000)
    i.run(src)
    jg = i.lookup("jg")
    assert same(jg(1.0), i.lookup("grad")(i.lookup("f"))(1.0), 1e-12)
    assert {"Loop", "LoopBack"} <= ops_of(jg)
    with pytest.raises(dsl.DgError) as raised:
        i.lookup("gg")(0.0)
    assert "limit" in str(raised.value) and "20,000 steps" in str(raised.value)


@pytest.mark.parametrize("make", ["jit(f)", "jit(value_and_grad(f))"])
def test_a_compiled_while_loop_stopped_at_one_iteration_runs_it_exactly_and_goes_on(make, run_alone):
    # as for a `for` loop (test_jit_loops.py): Python's exp raises on the iteration where k is 10
    # (dg's gives inf), the compiled loop stops there, that iteration runs alone, the loop goes on
    src = ("fn f(x) {\n  let s = x\n  let k = 0.0\n  while k < 21.0 {\n"
           "    s = s + minimum(exp(1000.0 / (1.0 + (k - 10.0) ** 2)), 1.0) * x\n    k = k + 1.0\n  }\n"
           f"  return s\n}}\nlet fast = {make}\nlet slow = {make.replace('jit(', '(')}")
    i = interp(src)
    fast, slow = i.lookup("fast"), i.lookup("slow")
    assert staged_and_compiled(fast, (0.5,), slow(0.5))
    assert "Loop" in ops_of(fast)
    # per call, the iteration that raised: k = 10, the Loop's 10th (the first runs as written)
    assert run_alone == [9, 9]


# an adaptive solver's shape: a while loop per output interval, some intervals one step long
INTERVALS = """
fn walk(x, t, a) {
    let s = t[0]
    let y = x
    for i in range(1, len(t)) {
        let end = t[i]
        while s < end {
            let last = 0.3 >= end - s
            let step = 0.3
            if last { step = end - s }
            y = y + step * sin(y) * (a * a + 1.0)
            if last { s = end } else { s = s + step }
        }
    }
    return y
}
let t = tensor([0.0, 0.1, 0.2, 1.0, 1.1, 2.0, 2.1, 3.0])
"""


@pytest.mark.parametrize("form", ["walk", "grad(walk)"])
def test_a_while_loop_that_ran_once_stays_rolled_in_the_loop_around_it(form, capfd):
    # its look ahead found the condition false (the interval was one step): it was written out,
    # and so, when a later interval took three steps, was the loop over the intervals; under grad
    # the failed guard was also looked up in the body's program, where the forward loop that ran
    # (what reads only `a` moved out of it) numbers its steps otherwise: the inner loop was never
    # rolled
    i = interp(INTERVALS + f"let fast = jit({form}, explain=true)\nlet slow = {form}")
    fast, slow, t = i.lookup("fast"), i.lookup("slow"), i.lookup("t")
    for x in (0.5, 1.25, 2.0):
        assert same(fast(x, t, 0.5), slow(x, t, 0.5), 1e-13)
    said = capfd.readouterr().err
    assert "written out" not in said and said.count("staging it") <= 2, said


def test_an_int_counted_in_a_branch_keeps_the_loop_rolled():
    # a bouncing ball counting its bounces: the if runs both ways with the count chosen as an
    # int (a where would make it a float, changing the loop state's type, and the loop was
    # written out and staged again at each new bounce count)
    src = ("fn drop(h, e) {\n  let y = h\n  let v = 0.0\n  let t = 0.0\n  let bounces = 0\n"
           "  while t < 2.0 {\n    v = v - 9.81 * 0.001\n    y = y + v * 0.001\n"
           "    if y < 0.0 { y = -y\n v = -e * v\n bounces += 1 }\n    t = t + 0.001\n  }\n"
           "  return (y, bounces)\n}\nlet fast = jit(drop)")
    i = interp(src)
    fast, drop = i.lookup("fast"), i.lookup("drop")
    for h, e in ((1.0, 0.8), (2.0, 0.7), (0.5, 0.9)):
        got, want = fast(h, e), drop(h, e)
        assert got == want and type(got[1]) is int and want[1] > 0
    assert sum(len(entries) for entries in fast.call.entries.values()) == 1
    assert "Loop" in ops_of(fast)


def test_an_inner_while_loop_that_runs_no_iterations_when_looked_ahead_at_stays_rolled():
    # a line search that takes no step on the iteration looked ahead at and some on later ones:
    # rolled in the outer loop's body (staged as if its condition held, its Loop running no
    # iterations there), where it was written out with a guard that its condition is false, and
    # the outer loop went on as written from the first iteration that searched
    src = ("fn f(x) {\n  let k = 0\n  let s = x\n  while k < 30 {\n    let t = 1.0\n"
           "    while s * t > 1.0 { t = t * 0.5 }\n    s = s * 1.3 + t * 0.01\n    k += 1\n  }\n"
           "  return s\n}\nlet fast = jit(f)\nlet slow = jit(grad(f))")
    i = interp(src)
    fast, slow, f = i.lookup("fast"), i.lookup("slow"), i.lookup("f")
    grad = i.lookup("grad")(f)
    for x in (0.1, 0.2, 0.05, 0.3, 0.01):
        assert fast(x) == f(x)
        assert same(slow(x), grad(x), 1e-12)
    assert sum(len(entries) for entries in fast.call.entries.values()) == 1
    assert "Loop" in ops_of(fast)
    steps = sum(len(e.program.steps) for entries in fast.call.entries.values() for e in entries)
    assert steps < 120      # the outer loop is one step, not 30 iterations written out


def test_a_while_loop_under_two_reverse_levels_that_ran_once_when_staged_is_exact_when_it_runs_more():
    # staged from its start and run as a Scan of no iterations, its second derivative was another
    # number on a later call that went round twice (found by the XLA fuzzer)
    src = ("fn f(p, w, xs) {\n  let a = tanh(p)\n  let v = tanh(w * p)\n  let c = 0\n"
           "  while max(v) < 0.5 and c < 4 {\n    for j in range(4) { a = tanh(a + 0.25 * tanh(p * a))\n"
           "      v = tanh(v * 0.5 + xs[c % 3]) }\n    c += 1\n  }\n  return sum(cos(sigmoid(w + a)))\n}\n"
           "let fast = jit(grad(grad(f)))\nlet slow = grad(grad(f))\nlet also = grad(jit(grad(f)))")
    i = interp(src)
    fast, slow, also = i.lookup("fast"), i.lookup("slow"), i.lookup("also")
    rng = np.random.default_rng(540072480)
    calls = []
    for _ in range(4):
        p = float(rng.uniform(-1, 1))
        calls.append((p, rng.uniform(-1, 1, 3), rng.uniform(-1, 1, (3, 3))))
        rng.uniform(-1, 1, (3, 3))
    for args in calls:      # the loop goes round once on the first two calls, twice on the others
        want = slow(*args)
        assert same(fast(*args), want, 1e-12) and same(also(*args), want, 1e-12)
