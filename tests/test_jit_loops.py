"""jit stages a `for` loop over a range once (dsl/jit/rolling.py, dsl/primitives/loops.py): the same
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
    """An interpreter that has run `src`, printing into a buffer (interp.out)."""
    out = io.StringIO()
    i = dsl.Interpreter(seed=0, stdout=out)
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


def test_the_loop_variable_enters_the_body_as_a_number():
    src = ("fn f(x) {\n  let s = 0.0\n  for i in range(10) { s = s + sin(i * x) }\n  return s\n}\n"
           "let fast = jit(value_and_grad(f))")
    i = interp(src)
    want = i.lookup("value_and_grad")(i.lookup("f"))(0.3)
    fast = i.lookup("fast")
    assert staged_and_compiled(fast, (0.3,), want)
    assert "Loop" in ops_of(fast)


@pytest.mark.parametrize("body, rolled", [
    ("s = s + xs[i] * w", False),                        # the loop variable read as an index
    ("print(s)\n s = s * w", False),                     # an effect on every iteration
    ("s = s + w * randn(())", False),                   # a random draw
    ("xs = cat((xs, xs[0:1] * w))\n s = s + sum(xs)", False),   # a tensor that grows
    ("n = n + 1\n s = s * w + n", False),                # an int that counts
    ("let g = fn(z) => z * w\n s = g(s) + 1.0", False),  # a function made on each iteration
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


def test_a_condition_that_changes_on_a_later_iteration_stages_the_loop_written_out():
    src = ("fn f(x) {\n  print(\"start\")\n  let s = x\n"
           "  for i in range(20) { if s < 3.0 { s = s * 1.5 } else { s = s - 0.1 } }\n  return s\n}\n"
           "let fast = jit(value_and_grad(f))")
    i, j = interp(src), interp(src)
    want = [i.lookup("value_and_grad")(i.lookup("f"))(x) for x in (1.0, 1.0, 0.5)]
    fast = j.lookup("fast")
    got = [fast(x) for x in (1.0, 1.0, 0.5)]
    assert all(same(a, b) for a, b in zip(got, want))
    assert j.out.getvalue() == i.out.getvalue() == "start\n" * 3      # printed once per call
    assert "Loop" not in ops_of(fast)


def test_a_compiled_loop_whose_condition_changes_stages_again():
    src = ("fn f(x, t) {\n  let s = x\n  for i in range(30) { if t > 0.0 { s = s * 0.9 + t } else { s = s * 1.1 } }\n"
           "  return s\n}\nlet fast = jit(grad(f))")
    i = interp(src)
    g, fast = i.lookup("grad")(i.lookup("f")), i.lookup("fast")
    for t in (1.0, -1.0, 2.0, -2.0):
        assert same(fast(0.5, t), g(0.5, t))
    assert "Loop" in ops_of(fast)
    assert sum(len(e) for e in fast.call.entries.values()) == 2      # one recording per branch


@pytest.mark.parametrize("outer", ["grad", "jvp", "vmap", "hessian", "jit_hessian", "jit_grad_grad"])
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
    with pytest.raises(dsl.DgError) as jitted:
        fast(1.0)
    with pytest.raises(dsl.DgError) as plain:
        i.lookup("grad")(i.lookup("f"))(1.0)
    assert str(jitted.value).splitlines()[0] == str(plain.value).splitlines()[0]


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
