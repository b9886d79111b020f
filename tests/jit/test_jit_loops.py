"""jit stages a `for` loop over a range once (dsl/transform/jit/rolling.py, dsl/core/primitives/loops.py): the same
results as the interpreter, the loop recorded as one step where it can be, written out where not."""

import io

import numpy as np
import pytest

import dsl

PROJECTILE = """
struct Launch { speed, angle, drag }
fn loss(p, steps) {
    let dt = 0.01
    let x = 0.0
    let y = 0.0
    let vx = p.speed * cos(p.angle)
    let vy = p.speed * sin(p.angle)
    for i in range(steps) {
        let speed = sqrt(vx * vx + vy * vy)
        let ax = -p.drag * speed * vx
        let ay = -9.81 - p.drag * speed * vy
        x = x + dt * vx
        y = y + dt * vy
        vx = vx + dt * ax
        vy = vy + dt * ay
    }
    return (x - 30.0) ** 2 + (y + 20.0) ** 2
}
let launch = Launch(20.0, 0.8, 0.01)
"""


def interp(src):
    """An interpreter that has run `src`, printing into a buffer (interp.out); it keeps tapes, so
    that the functions run without jit write their loops out (the reference each test compares with)."""
    out = io.StringIO()
    i = dsl.Interpreter(seed=0, stdout=out, keep_tape=True)
    i.out = out
    i.run(src)
    return i


def ops_of(jitted):
    """The primitives of every recording a jitted function holds."""
    return {s[1] for entries in jitted.call.entries.values() for e in entries for s in e.program.steps}


def leaves(v):
    """The numbers of a result, flattened (structs, tuples, maps, tensors)."""
    if isinstance(v, dsl.Struct):
        return [x for f in v.vals for x in leaves(f)]
    if isinstance(v, dict):
        return [x for f in v.values() for x in leaves(f)]
    if isinstance(v, tuple):
        return [x for f in v for x in leaves(f)]
    return list(np.ravel(np.asarray(v, dtype=float)))


def same(a, b, tol=0.0):
    """Whether two results hold the same numbers (to a relative `tol`)."""
    x, y = leaves(a), leaves(b)
    return len(x) == len(y) and np.allclose(x, y, rtol=tol, atol=0.0, equal_nan=True)


def same_error(fast, slow, args, lines=2):
    """The dg errors a jitted function and its uncompiled twin raise on `args`, whose first
    `lines` lines (message and place) must agree: their texts (jitted, uncompiled)."""
    with pytest.raises(dsl.DgError) as jitted:
        fast(*args)
    with pytest.raises(dsl.DgError) as plain:
        slow(*args)
    assert str(jitted.value).splitlines()[:lines] == str(plain.value).splitlines()[:lines]
    return str(jitted.value), str(plain.value)


def staged_and_compiled(fn, args, want, tol=0.0):
    """Whether a jitted function's next two calls (the first may stage it, the second runs its
    compiled code) both give `want`."""
    return same(fn(*args), want, tol) and same(fn(*args), want, tol)


def test_a_loop_under_value_and_grad_is_one_step_each_way_and_exact():
    i = interp(PROJECTILE + "let step = value_and_grad(loss)\nlet fast = jit(step)")
    step, fast, launch = i.lookup("step"), i.lookup("fast"), i.lookup("launch")
    want = step(launch, 300)
    assert same(fast(launch, 300), want)        # staging call
    assert same(fast(launch, 300), want)        # compiled call: bit for bit
    assert {"Loop", "LoopBack"} <= ops_of(fast)
    program = next(iter(fast.call.entries.values()))[0].program
    assert len(program.steps) < 200             # one body (not 300) each way
    other = i.lookup("Launch")(18.0, 0.7, 0.02)
    assert same(fast(other, 300), step(other, 300))
    assert type(fast(launch, 300)[1]).__name__ == "Struct"


def test_forward_only_loops_are_rolled_and_exact():
    i = interp(PROJECTILE + "let fast = jit(loss)")
    loss, fast, launch = i.lookup("loss"), i.lookup("fast"), i.lookup("launch")
    assert fast(launch, 50) == loss(launch, 50) == fast(launch, 50)
    assert "Loop" in ops_of(fast) and "LoopBack" not in ops_of(fast)


@pytest.mark.parametrize("loop", ["for i in range(20) {", "while t < 2.0 {\n t = t + 0.1"])
def test_the_variables_a_body_declares_are_not_the_loops_state(loop):
    # RK4's k1..k4 are set before they are read on every iteration and gone after the loop: a loop
    # that carried them would carry their (always zero) cotangents back too
    src = ("fn f(x) {\n  let y = x\n  let t = 0.0\n"
           f"  {loop}\n    let k1 = sin(y) * x\n    let k2 = sin(y + 0.05 * k1) * x\n"
           "    if k2 > 0.0 { let k3 = k2 * 2.0\n y = y + 0.1 * k3 } else { y = y + 0.1 * k1 }\n  }\n"
           "  return y\n}\nlet fast = jit(grad(f))")
    i = interp(src)
    want = i.lookup("grad")(i.lookup("f"))(0.7)
    fast = i.lookup("fast")
    assert staged_and_compiled(fast, (0.7,), want)
    state = {len(s[2]) for entries in fast.call.entries.values() for e in entries
             for s in e.program.steps if s[1] == "Loop"}
    assert state == {3}     # x, y and t: the function's variables (k1, k2 and k3 too: 6)


def test_the_loop_variable_enters_the_body_as_a_number():
    src = ("fn f(x) {\n  let s = 0.0\n  for i in range(10) { s = s + sin(i * x) }\n  return s\n}\n"
           "let fast = jit(value_and_grad(f))")
    i = interp(src)
    want = i.lookup("value_and_grad")(i.lookup("f"))(0.3)
    fast = i.lookup("fast")
    assert staged_and_compiled(fast, (0.3,), want)
    assert "Loop" in ops_of(fast)


@pytest.mark.parametrize("body, rolled", [
    ("s = s + xs[i] * w", True),                         # the loop variable as an index: a Row step
    ("s = s * w + xs[i - 1] - xs[5 - i]", True),          # ints computed from it (one negative)
    ("s = s + xs[(i + 1) % 6] * w", True),
    ("print(s)\n s = s * w", False),                     # an effect on every iteration
    ("s = s + w * randn(())", True),                    # a keyless draw: each iteration's pass back
    ("s = s + w * randn(()) * s", True),                # runs from the generator's state it began from
    ("xs = cat((xs, xs[0:1] * w))\n s = s + sum(xs)", False),   # a tensor that grows
    ("n = n + 1\n s = s * w + n", True),                 # an int that counts: staged with the state
    ("n = n + 2\n s = s + xs[n % 6] * w", True),         # ... and read as an index
    ("n = n + 1\n if n > 2 { s = s * w } else { s = s + w }", True),      # ... deciding a branch (both run)
    ("n = n + 1\n if n > 2 { s = s * w % 7.0 } else { s = s + w }", False),   # ... one that cannot
    ("let g = fn(z) => z * w\n s = g(s) + 1.0", True),   # a function made on each iteration, in a
    #                                                     variable of the body (not the loop's state)
    ("for j in range(3) { s = s * w + j }", True),        # a nested loop (written out inside)
])
def test_loops_that_cannot_be_one_step_are_written_out_and_exact(body, rolled):
    src = ("fn f(w, xs) {\n  let s = 1.0\n  let n = 0\n"
           f"  for i in range(6) {{\n {body}\n  }}\n  return s\n}}\n"
           "let fast = jit(value_and_grad(f))")
    want_i, got_i = interp(src), interp(src)
    xs = np.linspace(0.5, 1.0, 6)
    plain = want_i.lookup("value_and_grad")(want_i.lookup("f"))
    fast = got_i.lookup("fast")
    for _ in range(2):      # staged, then compiled (random draws: the same numbers as the interpreter's)
        assert same(fast(0.9, xs), plain(0.9, xs))
    assert ("Loop" in ops_of(fast)) == rolled
    # effects happened once per iteration per call, as in the interpreter
    assert got_i.out.getvalue() == want_i.out.getvalue()


@pytest.mark.parametrize("body, why", [
    ("if s > 1.5 { s = s * w % 7.0 } else { s = s + w }",
     "a condition in the loop at <input>:5:12 went another way on a later iteration (at <input>:6:5)"),
    ("for j in range(i) { s = s * w }", "the body decides something by the value of the loop variable"),
    ("print(s)\n s = s * w", "the body has an effect"),
    ("n = fn(z) => z * w\n s = n(s) + 1.0", "`n` holds something other than numbers and tensors"),
    ("t = t + (s,)\n s = s * w", "`t` is a tuple that grows on every iteration (t = t + (x,)): write the items "
                                 "into a tensor made before the loop"),
    ("let g = fn(z) => z * w\n s = g(s) + 1.0", None),       # a variable of the body: not the loop's state
    ("s = s * w", None),
])
def test_explain_says_why_a_loop_is_written_out(body, why, capfd):
    src = ("fn f(w) {\n  let s = 1.0\n  let n = 0\n  let t = ()\n"
           f"  for i in range(6) {{\n {body}\n  }}\n  return s\n}}\n"
           "let fast = jit(value_and_grad(f), explain=true)\nlet out = fast(0.9)")
    interp(src)
    err = capfd.readouterr().err
    written_out = [line for line in err.splitlines() if "written out" in line]
    if why is None:
        assert written_out == []
    else:
        assert len(written_out) == 1 and "loop at <input>:5:" in written_out[0] and why in written_out[0], err


def test_a_condition_that_changes_on_a_later_iteration_stages_the_loop_written_out():
    src = ("fn f(x) {\n  print(\"start\")\n  let s = x\n"
           "  for i in range(20) { if s < 3.0 { s = s * 1.5 % 100.0 } else { s = s - 0.1 } }\n  return s\n}\n"
           "let fast = jit(value_and_grad(f))")
    i, j = interp(src), interp(src)
    want = [i.lookup("value_and_grad")(i.lookup("f"))(x) for x in (1.0, 1.0, 0.5)]
    fast = j.lookup("fast")
    got = [fast(x) for x in (1.0, 1.0, 0.5)]
    assert all(same(a, b) for a, b in zip(got, want))
    assert j.out.getvalue() == i.out.getvalue() == "start\n" * 3      # printed once per call
    assert "Loop" not in ops_of(fast)


@pytest.mark.parametrize("transform", ["jit(f)", "jit(value_and_grad(f))"])
def test_a_rolled_loop_whose_results_nothing_reads_still_guards_later_calls(transform):
    # staged with c = 0, every iteration takes the else branch: the loop changes only `a`, which
    # nothing reads after it. With c = 1 the second iteration doubles v: the loop's guards must be
    # checked although its results are not (a loop left out of the program returned x, gradient 1)
    src = ("fn f(x, t, c) {\n  let a = 0.0\n  let v = x\n"
           "  for i in range(10) { if a > t { v = v * 2.0 } else { a = t * 0.5 + c } }\n  return v\n}\n"
           f"let fast = {transform}\nlet slow = {transform.replace('jit(', '', 1)[:-1]}")
    i = interp(src)
    fast, slow = i.lookup("fast"), i.lookup("slow")
    for c in (0.0, 0.0, 1.0, 1.0, 0.0):
        assert same(fast(0.75, 1.0, c), slow(0.75, 1.0, c))
    assert same(fast(0.75, 1.0, 1.0), slow(0.75, 1.0, 1.0)) and leaves(slow(0.75, 1.0, 1.0))[0] == 0.75 * 2 ** 9


@pytest.mark.parametrize("outer", ["vmap", "grad"])
def test_a_condition_that_changes_on_a_later_iteration_under_another_transformation(outer):
    # vmap of jit replays the recording's loop iteration by iteration (through the primitives): a
    # guard failing there is the loop's, as in compiled code, and jit stages the loop written out
    # (it escaped as Python's GuardFailed); grad of jit, whose calls take both branches, too
    src = ("fn f(x, t) {\n  let s = x\n"
           "  for i in range(8) { if s < 1.0 { s = s * 1.5 + t } else { s = s * 0.5 } }\n  return s\n}\n"
           "let fast = jit(f)\n")
    i = interp(src)
    f, fast = i.lookup("f"), i.lookup("fast")
    if outer == "vmap":
        x = np.array([0.5, 2.0, 0.125])
        got = i.lookup("vmap")(fast, (0, None))(x, 0.25)
        want = np.array([f(v, 0.25) for v in x])
        assert same(got, want)
    else:
        grad = i.lookup("grad")
        for x in (0.5, 0.5, 2.0, 0.125):
            assert same(grad(fast)(x, 0.25), grad(f)(x, 0.25))


@pytest.mark.parametrize("outer", ["jvp", "hessian"])
def test_loops_under_forward_mode_keep_custom_rules(outer):
    # forward mode through custom_vjp uses the user's rule (bwd, transposed), which a loop staged
    # without it would replace by the true derivative: under jvp the loop is rolled with the
    # CustomVjp step in its body, whose jvp (P') applies the rule. Under hessian (a jvp of the
    # grad) it is a Scan, which differentiates the rule's own steps: Loop's reverse loop of P' would
    # give grad(jvp(f)), which a custom rule makes differ from jvp(grad(f)) (its mixed derivatives
    # need not be symmetric)
    src = ("let clipped = custom_vjp(fn(x) => tanh(x), fn(x, out, g) => (clamp(g, -0.5, 0.5),))\n"
           "fn k(p) {\n  let acc = 0.0\n  for i in range(4) { acc = acc + clipped(p * 2.0 + acc) * 3.0 }\n"
           "  return acc\n}\nfn plain(p) {\n  let acc = 0.0\n"
           "  for i in range(4) { acc = acc + tanh(p * 2.0 + acc) * 3.0 }\n  return acc\n}\n"
           "let jk = jit(k)\nlet jh = jit(hessian(k))")
    i = interp(src)
    k, jk, jh, plain = i.lookup("k"), i.lookup("jk"), i.lookup("jh"), i.lookup("plain")
    for p in (0.3, 0.3, -0.2):
        if outer == "jvp":
            jvp = i.lookup("jvp")
            assert same(jvp(jk, (p,), (1.0,)), jvp(k, (p,), (1.0,)))
            assert not same(jvp(jk, (p,), (1.0,)), jvp(plain, (p,), (1.0,)), 1e-6)     # the rule is used
        else:
            assert same(jh(p), i.lookup("hessian")(k)(p))
            assert not same(jh(p), i.lookup("hessian")(plain)(p), 1e-6)
    assert ("Loop" in ops_of(jk)) if outer == "jvp" else ("Scan" in ops_of(jh) and "Loop" not in ops_of(jh))


def test_a_custom_rule_in_a_loop_under_jvp_of_grad_gives_the_interpreters_second_derivative():
    # rolled with P''s reverse loop, this gave 4.18 for the interpreter's 2.51 (grad of jvp: 5.01);
    # a Scan differentiates the rule's own steps
    src = ("let clipped = custom_vjp(fn(x) => tanh(x), fn(x, out, g) => (clamp(g, -0.5, 0.5),))\n"
           "fn f(p) {\n  let a = tanh(p)\n  let acc = 0.0\n  for i in range(3) { acc = acc + clipped(a * p) }\n"
           "  return acc\n}\nlet hvp = fn(p) => jvp(grad(f), (p,), (1.0,))[1]\nlet ghv = grad(fn(p) => jvp(f, (p,), (1.0,))[1])\n"
           "let jhvp = jit(hvp, explain=true)\nlet jghv = jit(ghv)\n")
    i = interp(src)
    for p in (0.3, 0.3, -0.7):
        assert same(i.lookup("jhvp")(p), i.lookup("hvp")(p), 1e-12)
        assert same(i.lookup("jghv")(p), i.lookup("ghv")(p), 1e-12)
    assert not same(i.lookup("hvp")(0.3), i.lookup("ghv")(0.3), 1e-3)     # the two orders differ here
    assert "Loop" in ops_of(i.lookup("jghv"))
    assert "Scan" in ops_of(i.lookup("jhvp"))


FORWARD = {
    # jvp of a loop: one loop of its body's jvp (state and tangents together)
    "jit(jvp)": ("jit(fn(p, v) => jvp(loss, (p, 60), (v, 0))[1])",
                 "fn(p, v) => jvp(loss, (p, 60), (v, 0))[1]", {"Loop"}),
    # Hessian-vector products: the reverse loop of the jvp'd body, read with the cotangents swapped
    "jit(jvp(grad))": ("jit(fn(p, v) => jvp(grad(loss), (p, 60), (v, 0))[1])",
                       "fn(p, v) => jvp(grad(loss), (p, 60), (v, 0))[1]", {"Loop", "LoopBack"}),
    "jit(grad(jvp))": ("jit(grad(fn(p, v) => jvp(loss, (p, 60), (v, 0))[1]))",
                       "grad(fn(p, v) => jvp(loss, (p, 60), (v, 0))[1])", {"Loop", "LoopBack"}),
    "jvp(jit(grad))": ("fn(p, v) => jvp(JG, (p, 60), (v, 0))[1]\nlet JG = jit(grad(loss))",
                       "fn(p, v) => jvp(grad(loss), (p, 60), (v, 0))[1]", {"Loop", "LoopBack"}),
    "jit(jvp(jvp))": ("jit(fn(p, v) => jvp(fn(q) => jvp(loss, (q, 60), (v, 0))[1], (p,), (v,))[1])",
                      "fn(p, v) => jvp(fn(q) => jvp(loss, (q, 60), (v, 0))[1], (p,), (v,))[1]", {"Loop"}),
}


@pytest.mark.parametrize("fast_src, slow_src, ops", list(FORWARD.values()), ids=list(FORWARD))
def test_loops_under_forward_mode_are_one_step_and_exact(fast_src, slow_src, ops):
    i = interp(PROJECTILE + f"let fast = {fast_src}\nlet slow = {slow_src}\n")
    Launch, fast, slow = i.lookup("Launch"), i.lookup("fast"), i.lookup("slow")
    for p, v in ((Launch(20.0, 0.8, 0.01), Launch(1.0, 0.1, -0.5)), (Launch(15.0, 0.6, 0.02), Launch(0.3, -1.0, 2.0)),
                 (Launch(20.0, 0.8, 0.01), Launch(-1.0, 0.5, 0.5))):
        assert same(fast(p, v), slow(p, v), 1e-12)
    jitted = fast if "JG" not in fast_src else i.lookup("JG")
    assert ops <= ops_of(jitted)


def test_a_hessian_vector_product_of_a_rolled_loop_is_the_hessian_times_the_vector():
    src = ("fn f(x) {\n  let s = x\n  for i in range(40) { s = tanh(s @ [[0.9, 0.2], [-0.3, 0.8]] + 0.1 * x) }\n"
           "  return sum(s * s)\n}\nlet hvp = jit(fn(x, v) => jvp(grad(f), (x,), (v,))[1])\n")
    i = interp(src)
    x, H = np.array([0.3, -0.7]), i.lookup("hessian")(i.lookup("f"))(np.array([0.3, -0.7]))
    for v in (np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([0.5, -2.0])):
        np.testing.assert_allclose(i.lookup("hvp")(x, v), H @ v, rtol=1e-12, atol=1e-14)
    assert {"Loop", "LoopBack"} <= ops_of(i.lookup("hvp"))


def test_a_condition_that_changes_on_a_later_iteration_under_jvp_writes_the_loop_out(capfd):
    src = ("fn f(x) {\n  let s = x\n"
           "  for i in range(8) { if s < 1.0 { s = s * 1.5 % 100.0 + 0.25 } else { s = s * 0.5 } }\n  return s\n}\n"
           "let fast = jit(fn(x) => jvp(f, (x,), (1.0,)), explain=true)\n")
    i = interp(src)
    for x in (0.5, 0.5, 2.0, 0.125):
        assert same(i.lookup("fast")(x), i.lookup("jvp")(i.lookup("f"), (x,), (1.0,)))
    assert "Loop" not in ops_of(i.lookup("fast"))
    assert "staging it again with a loop written out: a condition in the loop" in capfd.readouterr().err


def test_a_gradient_that_overflows_in_a_loop_under_jvp_is_the_interpreters_error():
    src = ("fn f(x) {\n  let s = x\n  for i in range(4) { s = exp(s) }\n  return s\n}\n"
           "let fast = jit(fn(x) => jvp(grad(f), (x,), (1.0,)))\nlet slow = fn(x) => jvp(grad(f), (x,), (1.0,))\n")
    i = interp(src)
    fast, slow = i.lookup("fast"), i.lookup("slow")
    assert same(fast(0.1), slow(0.1))
    assert "Loop" in ops_of(fast)
    same_error(fast, slow, (1.0,))


@pytest.mark.parametrize("transform", ["jit(grad(f))", "grad(jit(f))"])
def test_a_rolled_loop_keeps_custom_vjp_rules_and_stop_gradient(transform):
    # the Loop's reverse rule differentiates the body's staged program: custom_vjp must be in it
    # as itself (with its rule) and stop_gradient as a step, or the pullback differentiates
    # through them (it gave 28 for 40 and 21 for 12 here)
    src = ("fn square(x) { return x * x }\nlet tenfold = custom_vjp(square, fn(x, out, g) => (g * 10.0,))\n"
           "fn f(x) {\n  let acc = 0.0\n"
           "  for i in range(6) { acc = acc + tenfold(x) + x * stop_gradient(x) }\n  return acc\n}\n"
           f"let fast = {transform}\nlet slow = grad(f)")
    i = interp(src)
    fast, slow = i.lookup("fast"), i.lookup("slow")
    for x in (3.0, 3.0, -2.0):
        assert fast(x) == slow(x) == 6 * (10.0 + x)
    if transform == "jit(grad(f))":
        assert "Loop" in ops_of(fast)


def test_a_compiled_loop_whose_condition_changes_stages_again():
    src = ("fn f(x, t) {\n  let s = x\n  for i in range(30) { if t > 0.0 { s = s * 0.9 + t } else { s = s * 1.1 } }\n"
           "  return s\n}\nlet fast = jit(grad(f))")
    i = interp(src)
    g, fast = i.lookup("grad")(i.lookup("f")), i.lookup("fast")
    for t in (1.0, -1.0, 2.0, -2.0):
        assert same(fast(0.5, t), g(0.5, t))
    assert "Loop" in ops_of(fast)
    assert sum(len(e) for e in fast.call.entries.values()) == 2      # one recording per branch


@pytest.mark.parametrize("outer", ["grad", "jvp", "vmap", "hessian", "jit_hessian", "jit_grad_grad", "grad_jit_grad"])
def test_a_rolled_loop_composes_with_every_transformation(outer):
    src = ("fn f(x) {\n  let s = x\n  let t = 0.0\n"
           "  for i in range(25) { t = t + sin(s) * x\n s = s * 0.9 + 0.1 * cos(t) }\n  return s + t\n}\n"
           "let fast = jit(f)\n")
    i = interp(src)
    L = i.lookup
    f, fast = L("f"), L("fast")
    fast(0.7)   # staged plainly first: the transformations below replay the recording
    if outer == "grad":
        assert same(L("grad")(fast)(0.7), L("grad")(f)(0.7), 1e-12)
    elif outer == "jvp":
        assert same(L("jvp")(fast, (0.7,), (1.0,)), L("jvp")(f, (0.7,), (1.0,)), 1e-12)
    elif outer == "vmap":
        xs = np.linspace(0.1, 0.9, 5)
        assert same(L("vmap")(fast)(xs), L("vmap")(f)(xs), 1e-12)
    elif outer == "hessian":
        assert same(L("hessian")(fast)(0.7), L("hessian")(f)(0.7), 1e-10)
    elif outer == "grad_jit_grad":     # a recording's own reverse loop, differentiated again
        jg = L("jit")(L("grad")(f))
        jg(0.7)
        assert {"Loop", "LoopBack"} <= ops_of(jg)
        assert same(L("grad")(jg)(0.7), L("grad")(L("grad")(f))(0.7), 1e-10)
    elif outer == "jit_hessian":
        h = L("jit")(L("hessian")(f))
        assert staged_and_compiled(h, (0.7,), L("hessian")(f)(0.7), 1e-10)
    else:
        gg = L("jit")(L("grad")(L("grad")(f)))
        want = L("grad")(L("grad")(f))(0.7)
        assert staged_and_compiled(gg, (0.7,), want, 1e-10)


def test_tensor_state_and_a_struct_of_tensors():
    src = ("struct Net { w, b }\nfn loss(p, x) {\n  let h = x\n"
           "  for t in range(12) { h = tanh(h @ p.w + p.b) }\n  return sum(h * h)\n}\n"
           "let fast = jit(value_and_grad(loss))")
    i = interp(src)
    rng = np.random.default_rng(0)
    net = i.lookup("Net")(rng.standard_normal((4, 4)) * 0.5, rng.standard_normal(4) * 0.1)
    x = rng.standard_normal((3, 4))
    want = i.lookup("value_and_grad")(i.lookup("loss"))(net, x)
    fast = i.lookup("fast")
    assert staged_and_compiled(fast, (net, x), want, 1e-12)
    assert "Loop" in ops_of(fast)


def test_a_gradient_that_overflows_in_the_loop_is_reported_as_in_the_interpreter():
    src = ("fn f(x) {\n  let s = x\n  for i in range(4) { s = exp(s) }\n  return s\n}\n"
           "let fast = jit(grad(f))")
    i = interp(src)
    fast = i.lookup("fast")
    assert same(fast(0.1), i.lookup("grad")(i.lookup("f"))(0.1))
    assert "Loop" in ops_of(fast)
    same_error(fast, i.lookup("grad")(i.lookup("f")), (1.0,), lines=1)


def test_a_training_loop_with_grad_in_its_body_is_one_step_and_differentiable_through():
    src = ("fn loss(w, x, y) { return mean((x @ w - y) ** 2) }\n"
           "fn train(w, x, y) {\n  for i in range(40) {\n    let g = grad(loss)(w, x, y)\n    w = w - 0.05 * g\n  }\n"
           "  return loss(w, x, y)\n}\nlet fast = jit(train)\nlet fastg = jit(grad(train))")
    i = interp(src)
    rng = np.random.default_rng(1)
    w, x, y = rng.standard_normal(3), rng.standard_normal((10, 3)), rng.standard_normal(10)
    fast, fastg = i.lookup("fast"), i.lookup("fastg")
    want, gwant = i.lookup("train")(w, x, y), i.lookup("grad")(i.lookup("train"))(w, x, y)
    assert fast(w, x, y) == want == fast(w, x, y)
    assert staged_and_compiled(fastg, (w, x, y), gwant, 1e-12)
    assert "Loop" in ops_of(fast) and {"Loop", "LoopBack"} <= ops_of(fastg)


def test_a_gradient_inside_the_body_that_overflows_is_the_interpreters_error():
    # the body's code left a zero rule out (it holds a grad), so a failed guard in it may be one the
    # exact program passes: the loop checks it exactly, then writes the loop out and reports as eager
    src = ("fn loss(w) { return w * w * w * w }\n"
           "fn train(w) {\n  for i in range(30) { w = w - 0.5 * grad(loss)(w) }\n  return w\n}\n"
           "let fast = jit(train)")
    i = interp(src)
    fast, train = i.lookup("fast"), i.lookup("train")
    assert fast(0.1) == train(0.1) == fast(0.1)
    assert "Loop" in ops_of(fast)
    with pytest.raises(dsl.DgError) as jitted:
        fast(3.0)
    with pytest.raises(dsl.DgError) as plain:
        train(3.0)
    assert str(jitted.value).splitlines()[0] == str(plain.value).splitlines()[0]


# ---------------------------------------------------------------- rows read by the loop variable
RNN = """
struct Rnn { wx, wh, b, wo }
fn loss(p, xs, ys) {
    let h = zeros((shape(xs)[1], shape(p.wh)[0]))
    let total = 0.0
    for t in range(shape(xs)[0]) {
        h = tanh(xs[t] @ p.wx + h @ p.wh + p.b)
        total = total + mean((h @ p.wo - ys[t]) ** 2)
    }
    return total / shape(xs)[0]
}
"""


def rnn(i, T=9):
    """Weights, inputs and targets of a small RNN."""
    rng = np.random.default_rng(3)
    p = i.lookup("Rnn")(rng.standard_normal((2, 4)) * 0.5, rng.standard_normal((4, 4)) * 0.4,
                        rng.standard_normal(4) * 0.1, rng.standard_normal((4, 1)) * 0.5)
    return p, rng.standard_normal((T, 3, 2)), rng.standard_normal((T, 3, 1))


def bodies(jitted):
    """The staged loop bodies a jitted function's recordings hold."""
    return [s[4]["body"] for entries in jitted.call.entries.values() for e in entries
            for s in e.program.steps if s[1] == "Loop"]


@pytest.mark.parametrize("argnums", ["0", "(0, 1, 2)"])
def test_a_recurrent_network_reading_rows_is_one_step_each_way_and_exact(argnums):
    # the reverse loop runs the pullback's reverse half on what the forward loop kept (split.py),
    # computing the cotangents of xs and ys only where they are wanted
    i = interp(RNN + f"let step = value_and_grad(loss, argnums={argnums})\nlet fast = jit(step)")
    p, xs, ys = rnn(i)
    fast = i.lookup("fast")
    assert staged_and_compiled(fast, (p, xs, ys), i.lookup("step")(p, xs, ys), 1e-12)
    assert {"Loop", "LoopBack"} <= ops_of(fast) and "Row" in {s[1] for b in bodies(fast) for s in b.forward.steps}
    (body,) = bodies(fast)
    assert body._split
    (reverse,) = body._split[2].values()
    assert ("RowAdd" in {s[1] for s in reverse.source.steps}) == (argnums != "0")
    other = rnn(i, T=9)[0]      # new weights: the same recording
    assert same(fast(other, xs * 0.5, ys), i.lookup("step")(other, xs * 0.5, ys), 1e-12)


def test_a_row_out_of_range_is_the_interpreters_error():
    src = ("fn f(w, xs) {\n  let s = 0.0\n  for i in range(6) {\n    s = s + xs[i + 1] * w\n  }\n  return s\n}\n"
           "let fast = jit(grad(f))")
    i = interp(src)
    fast = i.lookup("fast")
    assert same(fast(0.5, np.arange(8.0)), i.lookup("grad")(i.lookup("f"))(0.5, np.arange(8.0)))
    for _ in range(2):
        message = same_error(fast, i.lookup("grad")(i.lookup("f")), (0.5, np.arange(6.0)))[0]
        assert "out of range" in message and ":4:" in message


def test_a_nan_of_a_left_out_zero_rule_in_the_reverse_loop_is_run_again_exactly():
    # sqrt(0) has an infinite derivative times a zero cotangent at one row: the reverse loop's
    # checks wait until its end, find the NaN, and run it again with the rule (reference 6.7)
    src = ("fn f(w, xs) {\n  let s = 0.0\n  for i in range(6) { s = s + sqrt(xs[i] * w) * 0.0 + w * xs[i] }\n"
           "  return s\n}\nlet fast = jit(grad(f))")
    i = interp(src)
    fast, g = i.lookup("fast"), i.lookup("grad")(i.lookup("f"))
    xs = np.linspace(1.0, 2.0, 6)
    assert staged_and_compiled(fast, (0.5, xs), g(0.5, xs))
    (body,) = bodies(fast)
    (reverse,) = body._split[2].values()
    assert reverse.fast is not None       # the checks wait
    xs[3] = 0.0
    want = g(0.5, xs)
    assert np.isfinite(want) and same(fast(0.5, xs), want)


@pytest.mark.parametrize("outer", ["vmap", "jvp", "grad"])
def test_rows_of_a_rolled_loop_under_other_transformations(outer):
    # vmap and jvp replay the loop through Row's batching and forward rules; grad of a jitted
    # gradient with respect to the rows' tensor differentiates RowAdd
    src = ("fn f(w, xs) {\n  let s = w\n  for i in range(7) { s = sin(s * xs[i]) + xs[i - 1] * w }\n  return s\n}\n"
           "let fast = jit(f)\nlet fastg = jit(grad(f, argnums=1))\n")
    i = interp(src)
    L = i.lookup
    rng = np.random.default_rng(5)
    xs = rng.standard_normal(7)
    L("fast")(0.3, xs)
    L("fastg")(0.3, xs)
    assert "Row" in {s[1] for b in bodies(L("fast")) for s in b.forward.steps}
    if outer == "vmap":
        batch = rng.standard_normal((4, 7))
        got = L("vmap")(L("fast"), (None, 0))(0.3, batch)
        want = np.array([L("f")(0.3, b) for b in batch])
        np.testing.assert_allclose(got, want, rtol=1e-12)
    elif outer == "jvp":
        v = rng.standard_normal(7)
        assert same(L("jvp")(L("fast"), (0.3, xs), (0.5, v)), L("jvp")(L("f"), (0.3, xs), (0.5, v)), 1e-12)
    else:
        c = rng.standard_normal(7)
        i.set("c", c)
        i.set("xs", xs)
        got = i.eval("grad(fn(w, v) => sum(fastg(w, v) * c), argnums=(0, 1))(0.3, xs)")
        want = i.eval("grad(fn(w, v) => sum(grad(f, argnums=1)(w, v) * c), argnums=(0, 1))(0.3, xs)")
        assert same(got, want, 1e-12)


def test_row_rules_against_each_other_and_a_loop():
    from dsl.core.primitives.namespaces import EAGER
    from dsl.core.primitives.registry import PRIMS
    rng = np.random.default_rng(7)
    x, g = rng.standard_normal((5, 3)), rng.standard_normal(3)
    row, add = PRIMS["Row"], PRIMS["RowAdd"]
    for i in (2, -1):
        # both are linear in their tensor: each one's vjp is the other, <row(x), g> = <x, row_add(g)>
        back = row.vjp[0](EAGER, g, row.impl(x, i), x, i)
        np.testing.assert_array_equal(back, add.impl(g, i, (5, 3)))
        assert np.sum(row.impl(x, i) * g) == pytest.approx(np.sum(x * back), rel=1e-14)
        np.testing.assert_array_equal(add.vjp[0](EAGER, x, None, g, i, shape=(5, 3)), x[i])
        np.testing.assert_array_equal(row.jvp(EAGER, (x, None), None, (x, i), {}), x[i])
        np.testing.assert_array_equal(add.jvp(EAGER, (g, None), None, (g, i), {"shape": (5, 3)}),
                                      add.impl(g, i, (5, 3)))
        # a batch of 4 on axis 0, i shared
        xb, gb = rng.standard_normal((4, 5, 3)), rng.standard_normal((4, 3))
        np.testing.assert_array_equal(row.batch(EAGER, (xb, i), (True, False), {}), np.stack([b[i] for b in xb]))
        np.testing.assert_array_equal(add.batch(EAGER, (gb, i), (True, False), {"shape": (5, 3)}),
                                      np.stack([add.impl(b, i, (5, 3)) for b in gb]))
    with pytest.raises(dsl.DgError, match="out of range"):
        row.impl(x, 5)


def test_a_body_with_a_branch_keeps_its_forward_values_for_the_reverse_loop():
    # the pullback replays the body, its branch's guard with it; that guard is the body's own,
    # so the forward loop keeps what the reverse needs (split.py) instead of it being computed again
    src = ("fn f(x, t) {\n  let s = x\n  for i in range(30) { if t > 0.0 { s = tanh(s) * 0.9 + t } else { s = s * 1.1 } }\n"
           "  return s\n}\nlet fast = jit(grad(f))")
    i = interp(src)
    fast = i.lookup("fast")
    want = i.lookup("grad")(i.lookup("f"))(0.5, 1.0)
    assert staged_and_compiled(fast, (0.5, 1.0), want, 1e-12)
    bodies = [s[4]["body"] for e in fast.call.entries.values() for r in e for s in r.program.steps if s[1] == "Loop"]
    assert bodies and all(b._split for b in bodies)


@pytest.mark.parametrize("make", ["jit(f)", "jit(value_and_grad(f))"])
def test_a_compiled_loop_stopped_at_one_iteration_runs_it_exactly_and_goes_on(make, run_alone):
    # Python's exp raises at the middle iteration (exp(1000)), where dg's gives inf: the loop,
    # compiled whole, stops there, that iteration runs as run_code runs it, and the loop goes on
    # compiled from the next one
    src = ("fn f(x) {\n  let s = x\n  for i in range(21) {\n"
           "    s = s + minimum(exp(1000.0 / (1.0 + (i - 10.0) ** 2)), 1.0) * x\n  }\n"
           f"  return s\n}}\nlet fast = {make}\nlet slow = {make.replace('jit(', '(')}")
    i = interp(src)
    fast, slow = i.lookup("fast"), i.lookup("slow")
    assert staged_and_compiled(fast, (0.5,), slow(0.5))
    assert "Loop" in ops_of(fast)
    assert run_alone == [10, 10]        # once per call (the first call stages from the second iteration on)


# ---------------------------------------------------------------- an if on a staged value, both ways
BALL = """
struct Ball { h, v, e }
fn loss(p, steps) {
    let y = p.h
    let v = p.v
    for i in range(steps) {
        v = v - 9.81 * 0.01
        y = y + v * 0.01
        if y < 0.0 {
            let bounced = -v * p.e
            y = -y
            v = bounced
        }
    }
    return (y - 1.0) ** 2 + v
}
"""


@pytest.mark.parametrize("transform", ["jit(value_and_grad(loss))", "jit(loss)",
                                       "jit(fn(p, n) => jvp(loss, (p, n), (Ball(1.0, 0.5, 0.25), 0)))",
                                       "jit(fn(p, n) => jvp(grad(loss), (p, n), (Ball(1.0, 0.5, 0.25), 0)))"])
def test_a_branch_that_flips_on_later_iterations_is_taken_both_ways_and_the_loop_rolled(transform, capfd):
    # the ball bounces on a few of the 300 steps, at steps that move with its height: a guard on the
    # bounce would write the loop out and stage it again for every height; both branches run and
    # a where picks, so that one recording (a rolled loop) serves every call, with the interpreter's
    # numbers (a where selects; the branch not taken gets a zero cotangent; second derivatives may
    # add their terms in another order)
    src = BALL + f"let fast = {transform[:-1]}, explain=true)\nlet slow = {transform[4:-1]}"
    i = interp(src)
    fast, slow, Ball = i.lookup("fast"), i.lookup("slow"), i.lookup("Ball")
    tol = 1e-12 if "grad(loss), (p" in transform else 0.0
    for h in (2.0, 2.0, 1.7, 3.1, 0.4, 2.0):
        assert same(fast(Ball(h, 0.0, 0.8), 300), slow(Ball(h, 0.0, 0.8), 300), tol)
    assert "Loop" in ops_of(fast) and "Where" in {s[1] for b in _bodies(fast) for s in b.forward.steps}
    assert capfd.readouterr().err.count("staging it") == 1


def _bodies(jitted):
    """The staged loop bodies in a jitted function's recordings."""
    return [s[4]["body"] for entries in jitted.call.entries.values() for e in entries for s in e.program.steps
            if s[1] == "Loop"]


@pytest.mark.parametrize("branch, rolled", [
    ("if s > 0.0 { s = sqrt(s) + w } else { s = sqrt(-s) - w }", True),     # the other branch makes NaN
    ("if s > 0.9 { s = s * w } else { s = s + 0.5 }", True),
    ("if s > 0.9 { s = s * w }", True),                                   # no else
    ("if s > 0.9 { s = s * w } else if s > 0.5 { s = s - w } else { s = s + 1.0 }", True),
    ("if s > 0.9 { s = s * w\n print(s) } else { s = s + 0.1 }", False),   # an effect: guarded
    ("n = n + 1\n if n < 3 { s = s + xs[n] } else { s = s * w }", False),  # xs[n] fails from n = 3 on
    ("if s > 0.9 { xs[1] = s * w } else { xs[2] = s }\n s = s * w + sum(xs) * 0.1", True),   # a constant index
    ("if s > 0.9 { k = -1 } else { k = 1 }\n s = s + 0.1 * k * w", True),    # an int set two ways: chosen as an int
    ("if s > 0.9 { k = -1 } else { k = 1 }\n s = s + xs[k] * w", True),       # ... and read as an index
    # a gradient whose numerics check fails where the branch is not taken (sqrt' at s - 0.9 <= 0)
    ("if s > 0.9 { s = s * w + grad(fn(z) => sqrt(z))(s - 0.9) } else { s = s + 0.5 }", True),
])
def test_an_if_is_taken_both_ways_only_where_both_branches_only_compute(branch, rolled):
    src = ("fn f(w, xs) {\n  let s = 0.75\n  let n = 0\n  let k = 0\n"
           f"  for i in range(12) {{\n {branch}\n  }}\n  return s\n}}\n"
           "let fast = jit(value_and_grad(f))")
    want_i, got_i = interp(src), interp(src)
    xs = np.array([0.5, -0.25, 0.125])
    plain = want_i.lookup("value_and_grad")(want_i.lookup("f"))
    fast = got_i.lookup("fast")
    for w in (0.9, 0.9, 1.3, -0.7):
        assert same(fast(w, xs), plain(w, xs))
    assert ("Loop" in ops_of(fast)) == rolled
    assert got_i.out.getvalue() == want_i.out.getvalue()


# a row at the loop's variable (plus or minus an int) that every iteration's range has is read or
# written in a branch run both ways; a row that may be missing on an iteration keeps the guard
@pytest.mark.parametrize("loop, rolled", [
    ("for i in range(12) { if ys[i] > 0.0 { s = s * w + ys[i] } else { s = s - w * ys[i] } }", True),
    ("for i in range(12) { if i % 3 == 0 { s = s * w } else { s = s + ys[i] } }", True),
    ("for i in range(11) { if i % 2 == 0 { s = s + w * ys[i + 1] } }", True),
    ("for i in range(12) { if i % 2 == 0 { s = s * w + ys[i - 1] } }", True),       # ys[-1] is numpy's last row
    ("for i in range(12) { if i % 2 == 0 { s = s + w * ys[i + 1] } }", False),      # i = 11 has no row 12
    ("for i in range(12) { s = s * w + ys[i]\n if s > 0.0 { traj[i] = s } }", True),
    ("for i in range(12) { if ys[i] > 0.0 { traj[i] = ys[i] * w } else { traj[i] = -w } }", True),
    ("for i in range(12) { if ys[i] > 0.0 { s = s * w } else { traj[i] = s } }", True),
    ("for i in range(11) { s = s * w + ys[i]\n if s > 0.0 { traj[i + 1] = s } }", True),
])
def test_rows_at_the_loops_variable_in_an_if_run_both_ways(loop, rolled, backend):
    src = ("fn f(w, ys) {\n  let s = 0.5\n  let traj = zeros(12)\n"
           f"  {loop}\n  return s + sum(traj * traj)\n}}\n")
    want_i = interp(src)
    got_i = dsl.Interpreter(seed=0, stdout=io.StringIO(), backend=backend)
    got_i.run(src + "let fast = jit(value_and_grad(f))")
    plain, fast = want_i.lookup("value_and_grad")(want_i.lookup("f")), got_i.lookup("fast")
    ys = np.sin(np.arange(12.0) * 1.7)
    for w in (0.9, 0.9, 1.3, -0.7):
        assert same(fast(w, ys), plain(w, ys), 1e-12)
    assert ("Loop" in ops_of(fast) or "Scan" in ops_of(fast)) == rolled


def test_a_row_in_a_branch_missing_on_an_iteration_that_takes_it_is_the_interpreters_error():
    src = "fn f(w, ys) {\n  let s = 0.5\n  for i in range(12) { if i % 2 == 1 { s = s + w * ys[i + 1] } }\n  return s\n}"
    i = interp(src + "\nlet fast = jit(f)")
    text, _ = same_error(i.lookup("fast"), i.lookup("f"), (0.9, np.arange(12.0)))
    assert "index 12 is out of range" in text


def test_a_gradient_in_a_branch_run_both_ways_is_checked_where_the_branch_is_taken():
    # its numerics check holds where the branch is taken: the loop rolls though the gradient is
    # infinite or NaN on the iterations that take the other branch, and a call where one that
    # takes it makes an infinity is the interpreter's error
    src = ("fn f(x) {\n  let s = 0.0\n  for i in range(10) {\n"
           "    if i < 5 { s = s + grad(fn(z) => sqrt(z))(x - i) } else { s = s + 1.0 }\n  }\n  return s\n}")
    i = interp(src + "\nlet fast = jit(f)")
    fast, f = i.lookup("fast"), i.lookup("f")
    for x in (7.0, 6.5):
        assert same(fast(x), f(x)) and "Loop" in ops_of(fast)
    text, _ = same_error(fast, f, (3.0,))
    assert "numerics" in text


def test_an_if_whose_branches_both_return_gives_a_where_of_what_they_return(monkeypatch):
    # a piecewise function called in the body (both branches return) is rolled with the loop; a
    # recursive one is guarded inside its own branch (run both ways there too, its recursion would
    # go on to the depth limit)
    from dsl.transform.jit.both_ways import BothWays
    running, reentered, both = set(), [], BothWays._both

    def spy(self, f, c, look):
        if id(self) in running:
            reentered.append(self)      # (an assertion here would be caught as the branch's error)
        running.add(id(self))
        try:
            return both(self, f, c, look)
        finally:
            running.discard(id(self))
    monkeypatch.setattr(BothWays, "_both", spy)
    src = ("fn piece(x) { if x > 0.5 { return x * x } else { return 0.25 * x + 0.125 } }\n"
           "fn down(x) { if x > 0.0 { return down(x - 1.0) * 0.5 } else { return x } }\n"
           "fn f(w) {\n  let s = 0.6\n  for i in range(40) { s = tanh(s + piece(s) * w) }\n  return s\n}\n"
           "fn g(w) {\n  let s = 0.6\n  for i in range(40) { s = tanh(s * w) + down(s) * 0.01 }\n  return s\n}\n"
           "let fast = jit(value_and_grad(f))\nlet slow = value_and_grad(f)\n"
           "let fast_g = jit(value_and_grad(g))\nlet slow_g = value_and_grad(g)")
    i = interp(src)
    for w in (0.3, 0.3, -0.9, 1.7, 0.3):
        assert same(i.lookup("fast")(w), i.lookup("slow")(w))
        assert same(i.lookup("fast_g")(w), i.lookup("slow_g")(w))
    bodies = _bodies(i.lookup("fast"))
    assert bodies and "Where" in {s[1] for b in bodies for s in b.forward.steps}
    assert running == set() and reentered == []
    assert len(i.lookup("fast").call.entries) == 1 and len(next(iter(i.lookup("fast").call.entries.values()))) == 1


@pytest.mark.parametrize("orelse", ["s = 0.0", "s = s * 0.0", "s = sqrt(1.0 - s)"])
def test_a_reverse_loop_through_an_if_run_both_ways_runs_whole_and_exactly(orelse):
    # the reverse loop's `where` may drop an infinity or NaN that a zero rule left out made (sqrt at
    # 0, or of a negative number, on a branch not taken), but only by choosing the other operand, the
    # exact code's own: the loop compiled without checks gives the interpreter's numbers
    src = ("fn f(w) {\n  let s = 1.0\n  let acc = 0.0\n"
           f"  for i in range(6) {{\n    acc = acc + sqrt(s) * w\n    if s > 0.5 {{ s = s * w }} else {{ {orelse} }}\n"
           "  }\n  return acc\n}\nlet fast = jit(value_and_grad(f))\nlet slow = value_and_grad(f)")
    i = interp(src)
    for w in (0.4, 0.4, 0.9, 1.2, 0.4):
        assert same(i.lookup("fast")(w), i.lookup("slow")(w))
    splits = [b._split for b in _bodies(i.lookup("fast"))]
    assert splits and all(s and all(h.fast is not None for h in s[2].values()) and s[2] for s in splits)


@pytest.mark.parametrize("cond, rolled", [
    ("y < 0.0 and v < 0.0", True),              # both compared, combined by a staged and
    ("y < 0.0 or y > 50.0", True),
    ("not (y >= 0.0)", True),
    ("n < 3 and xs[n] > 0.0", False),            # xs[n] fails from n = 3 on: `and` short-circuits
    ("y < 0.0 and v", False),                    # a float is no condition: the error, where reached
])
def test_and_or_not_of_staged_bools_in_a_loop_body_take_the_if_both_ways(cond, rolled):
    src = ("fn f(e, xs) {\n  let y = 1.0\n  let v = 0.0\n  let n = 0\n  for i in range(40) {\n"
           f"    v = v - 9.81 * 0.05\n    y = y + v * 0.05\n    n = n + 1\n    if {cond} {{ y = -y\n v = -v * e }}\n"
           "  }\n  return y + v\n}\nlet fast = jit(value_and_grad(f))\nlet slow = value_and_grad(f)")
    i = interp(src)
    xs = np.array([0.5, -0.25, 0.125])
    for e in (0.8, 0.8, 0.6, 0.9):
        try:
            want = i.lookup("slow")(e, xs)
        except dsl.DgError as err:
            with pytest.raises(dsl.DgError) as got:
                i.lookup("fast")(e, xs)
            assert str(got.value).splitlines()[0] == str(err).splitlines()[0]
            continue
        assert same(i.lookup("fast")(e, xs), want)
    assert ("Loop" in ops_of(i.lookup("fast"))) == rolled
