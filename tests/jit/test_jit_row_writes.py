"""A rolled loop that writes row i of a tensor (`traj[i] = state`, `hist[i] = loss`): the write is
a SetRow step of the loop's body (dsl/core/ops/shape.py), not a guard on i, so the loop stays one
step under jit, grad, jvp, vmap and higher orders, on numpy and on XLA. The reference each test
compares with is the interpreter with its loops written out (keep_tape=True)."""

import io

import numpy as np
import pytest

import dsl
from dsl.core.primitives.namespaces import EAGER
from dsl.core.primitives.registry import PRIMS

SIM = """
fn sim(p, steps) {
    let traj = zeros((steps, 2))
    let x = p[0]
    let v = p[1]
    for i in range(steps) {
        v = v - 0.05 * sin(x) * p[2]
        x = x + 0.05 * v
        traj[i] = [x, v * v]
    }
    return traj
}
fn loss(p) {
    let t = sim(p, 40)
    return sum(t[:, 0] * t[:, 1]) + sum(tanh(t))
}
fn hist(w, steps) {
    let h = zeros((steps,))
    for i in range(steps) {
        let l, g = value_and_grad(fn(w) => sum((w - 3.0) ** 2))(w)
        w = w - 0.1 * g
        h[i] = l
    }
    return h
}
"""
P = np.array([0.8, 0.1, 1.3])


def interp(keep_tape=False, backend="numpy"):
    """An interpreter that has run SIM; with keep_tape its loops under grad are written out."""
    i = dsl.Interpreter(seed=0, stdout=io.StringIO(), keep_tape=keep_tape, backend=backend)
    i.run(SIM)
    i.set("P", P)
    i.set("PS", np.stack([P, P * 1.1, P * 0.9]))
    return i


def steps_of(jitted):
    """The primitives of every recording a jitted function holds, loop bodies included."""
    out = set()
    for entries in jitted.call.entries.values():
        for e in entries:
            for s in e.program.steps:
                out.add(s[1])
                body = (s[4] or {}).get("body") if type(s[4]) is dict else None
                for part in ("forward", "program"):
                    program = getattr(body, part, None)
                    if program is not None:
                        out |= {t[1] for t in program.steps}
    return out


EXPRESSIONS = [
    "jit(sim)(P, 40)",
    "jit(grad(loss))(P)",
    "jit(hessian(loss))(P)",
    "jit(jacfwd(fn(p) => sim(p, 40)))(P)",
    "jit(vmap(grad(loss)))(PS)",
    "jit(vmap(fn(p) => sim(p, 10), in_axes=0))(PS)",
    "jit(fn(q) => jvp(fn(p) => sim(p, 30), (q,), (q * 0.5,)))(P)",
    "jit(grad(fn(q) => sum(grad(loss)(q))))(P)",
    "jit(grad(grad(grad(fn(s) => loss(P * s)))))(1.2)",
    "jit(hist)([1.0, 2.0], 30)",
    "grad(loss)(P)",
]


def test_row_writes_in_a_loop_give_the_written_out_loops_results(backend):
    want = interp(keep_tape=True)
    got = interp(backend=backend)
    for expr in EXPRESSIONS:
        w = want.eval(expr)
        for _ in range(2):      # staged, then compiled
            np.testing.assert_allclose(np.asarray(got.eval(expr), float), np.asarray(w, float),
                                       rtol=1e-11, atol=1e-13, err_msg=expr)


def test_the_loop_is_one_step_with_its_row_write_inside(capfd):
    i = interp()
    i.run("let f = jit(sim, explain=true)\nlet g = jit(grad(loss), explain=true)\nlet h = jit(hist, explain=true)")
    for name, args in (("f", (P, 40)), ("g", (P,)), ("h", (np.array([1.0, 2.0]), 30))):
        fn = i.lookup(name)
        fn(*args)
        fn(*args)
        found = steps_of(fn)
        assert "Loop" in found and "SetRow" in found, name     # (the first iteration runs as written)
    said = capfd.readouterr().err
    assert "written out" not in said


def test_the_gradient_through_row_writes_matches_central_differences():
    i = interp()
    rng = np.random.default_rng(3)
    c = rng.standard_normal((40, 2))
    i.set("C", c)
    i.run("fn f(p) { return sum(sim(p, 40) * C) }\nlet g = jit(grad(f))")
    f, g = i.lookup("f"), i.lookup("g")
    got = g(P)
    h = 1e-6
    want = [(f(P + h * e) - f(P - h * e)) / (2 * h) for e in np.eye(3)]
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)


def test_a_row_written_out_of_range_is_the_interpreters_error_at_its_line(backend):
    i = dsl.Interpreter(stdout=io.StringIO(), backend=backend)
    i.run("fn d(n) {\n  let h = zeros((n,))\n  for i in range(n) {\n    h[i + 1] = 1.0\n  }\n  return h\n}\n"
          "let f = jit(d)")
    for _ in range(2):
        with pytest.raises(dsl.DgError) as err:
            i.run("f(6)")
        assert err.value.kind == "index" and "out of range" in err.value.message and err.value.line == 4


def test_set_row_rules_against_its_kernel():
    rng = np.random.default_rng(7)
    prim = PRIMS["SetRow"]
    x, v, g = rng.standard_normal((5, 3)), rng.standard_normal(3), rng.standard_normal((5, 3))
    for i in (2, -1):
        out = prim.impl(x, i, v)
        want = x.copy()
        want[i] = v
        np.testing.assert_array_equal(out, want)
        # linear in (x, v) together: <set_row(x, i, v), g> = <x, gx> + <v, gv>
        gx = prim.vjp[0](EAGER, g, out, x, i, v)
        gv = prim.vjp[2](EAGER, g, out, x, i, v)
        assert np.sum(out * g) == pytest.approx(np.sum(x * gx) + np.sum(v * gv), rel=1e-13)
        assert prim.vjp[1] is None
        # a number written to a row broadcasts; its cotangent is the row's sum
        assert prim.vjp[2](EAGER, g, None, x, i, 1.5) == pytest.approx(np.sum(g[i]))
        tx, tv = rng.standard_normal((5, 3)), rng.standard_normal(3)
        np.testing.assert_array_equal(prim.jvp(EAGER, (tx, None, tv), out, (x, i, v), {}), prim.impl(tx, i, tv))
        np.testing.assert_array_equal(prim.jvp(EAGER, (None, None, tv), out, (x, i, v), {}),
                                      prim.impl(np.zeros((5, 3)), i, tv))
        # batched x, v or both (batch on axis 0), i shared
        xb, vb = rng.standard_normal((4, 5, 3)), rng.standard_normal((4, 3))
        for bx, bv in ((True, False), (False, True), (True, True)):
            xs, vs = (xb if bx else x), (vb if bv else v)
            got = prim.batch(EAGER, (xs, i, vs), (bx, False, bv), {})
            np.testing.assert_array_equal(got, np.stack([prim.impl(xb[k] if bx else x, i, vb[k] if bv else v)
                                                         for k in range(4)]))
    with pytest.raises(dsl.DgError, match="out of range"):
        prim.impl(x, 5, v)


GRID = """
fn heat(u0, steps) {
    let u = u0
    let n = shape(u)[0]
    for t in range(steps) {
        let new = u
        for i in range(1, n - 1) {
            for j in range(1, n - 1) {
                new[i, j] = u[i, j] + 0.1 * (u[i + 1, j] + u[i - 1, j] + u[i, j + 1] + u[i, j - 1] - 4.0 * u[i, j])
            }
        }
        u = new
    }
    return u
}
fn heat_by_tensors(u0, steps) {
    let u = u0
    for t in range(steps) {
        let lap = roll(u, 1, axis=0) + roll(u, -1, axis=0) + roll(u, 1, axis=1) + roll(u, -1, axis=1) - 4.0 * u
        let inner = zeros(shape(u))
        inner[1:-1, 1:-1] = lap[1:-1, 1:-1]
        u = u + 0.1 * inner
    }
    return u
}
fn rows(x) {
    let s = 0.0
    for i in range(shape(x)[0]) { s = s + sum(x[i, 1:3]) * x[i, 0] + x[i, -1] }
    return s
}
"""


def test_nested_loops_over_a_grid_by_entries_stay_loops(backend):
    # x[i, j] read and written at loops' variables: row i, then entry j (numpy's x[i][j]), each a
    # step of the loop bodies; the loops were written out (10,979 steps for a 30 x 30 grid)
    i = dsl.Interpreter(stdout=io.StringIO(), backend=backend)
    i.run(GRID + "let f = jit(heat)\nlet g = jit(grad(fn(u) => sum(heat(u, 3) ** 2)))\n"
                 "let gt = grad(fn(u) => sum(heat_by_tensors(u, 3) ** 2))\nlet r = jit(rows)\nlet gr = jit(grad(rows))")
    u0 = np.sin(np.arange(64.0)).reshape(8, 8)
    x = np.arange(20.0).reshape(5, 4) / 7.0
    want_rows = sum(x[k, 1:3].sum() * x[k, 0] + x[k, -1] for k in range(5))
    want_grad_rows = np.zeros((5, 4))
    want_grad_rows[:, 1:3] = x[:, :1]
    want_grad_rows[:, 0] = x[:, 1:3].sum(axis=1)
    want_grad_rows[:, -1] += 1.0
    for _ in range(2):
        np.testing.assert_allclose(i.lookup("f")(u0, 5), i.lookup("heat_by_tensors")(u0, 5), rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(i.lookup("g")(u0), i.lookup("gt")(u0), rtol=1e-12, atol=1e-14)
        assert i.lookup("r")(x) == pytest.approx(want_rows, rel=1e-14)
        np.testing.assert_allclose(i.lookup("gr")(x), want_grad_rows, rtol=1e-14)
    for name in ("f", "g"):
        steps = [len(e.program.steps) for es in i.lookup(name).call.entries.values() for e in es]
        assert max(steps) < 100, (name, steps)
        if backend == "xla":
            # lowered (the pass back's entry adds into a row: row_adds.RowAdds inside a RowAdds)
            assert all(e.xla.why is None for es in i.lookup(name).call.entries.values() for e in es), name


def test_a_grid_entry_out_of_range_is_the_interpreters_error():
    i = dsl.Interpreter(stdout=io.StringIO())
    i.run("fn f(u) {\n  let v = u\n  for i in range(4) {\n    v[i, i + 1] = 1.0\n  }\n  return v\n}\nlet jf = jit(f)")
    for _ in range(2):
        with pytest.raises(dsl.DgError) as err:
            i.lookup("jf")(np.zeros((4, 4)))
        assert err.value.kind == "index" and err.value.line == 4


def test_a_loop_over_columns_stays_a_loop(backend):
    # x[:, j] read and written at a loop's variable: row j of x with that axis moved to the front
    # (numpy's x[:, j]), then moved back; a guard on j wrote the loop out
    src = ("fn cols(a, x) {\n  let out = zeros((shape(a)[0], shape(x)[1]))\n"
           "  for j in range(shape(x)[1]) {\n    out[:, j] = a @ x[:, j] + x[0, j]\n  }\n  return out\n}\n"
           "let f = jit(cols)\nlet g = jit(grad(fn(a, x) => sum(sin(cols(a, x))), argnums=(0, 1)))\n"
           "let slow = grad(fn(a, x) => sum(sin(a @ x + x[0:1, :])), argnums=(0, 1))")
    i = dsl.Interpreter(stdout=io.StringIO(), backend=backend)
    i.run(src)
    rng = np.random.default_rng(2)
    a, x = rng.standard_normal((3, 4)), rng.standard_normal((4, 9))
    for _ in range(2):
        np.testing.assert_allclose(i.lookup("f")(a, x), a @ x + x[0], rtol=1e-13)
        for got, want in zip(i.lookup("g")(a, x), i.lookup("slow")(a, x)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    for name in ("f", "g"):
        steps = [len(e.program.steps) for es in i.lookup(name).call.entries.values() for e in es]
        assert max(steps) < 60, (name, steps)


# ---------------------------------------------------------------- the history at checkpoints
def test_a_large_history_is_kept_at_checkpoints_with_the_same_results(monkeypatch):
    # a loop's history under grad holds the state each iteration started from; with a tensor the
    # loop writes a row of, that is its length squared: past a size, only every sqrt(n)-th state is
    # kept and the others run again from it. Forced here on small loops: every transformation
    # gives the written-out loop's numbers
    from dsl.transform.jit import checkpoints, loop_body
    monkeypatch.setattr(checkpoints, "CHECKPOINT_FROM", 0)
    monkeypatch.setattr(checkpoints, "ROWS_FROM", 0)
    monkeypatch.setattr(checkpoints, "MIN_ITEMS", 4)
    ran = []
    real = checkpoints.run_checkpointed
    monkeypatch.setattr(loop_body, "run_checkpointed", lambda *a: ran.append(a[2]) or real(*a))
    want = interp(keep_tape=True)
    got = interp()
    for expr in EXPRESSIONS:
        w = want.eval(expr)
        for _ in range(2):
            np.testing.assert_allclose(np.asarray(got.eval(expr), float), np.asarray(w, float),
                                       rtol=1e-11, atol=1e-13, err_msg=expr)
    assert ran


def test_a_history_at_checkpoints_reads_as_every_iterations_state():
    from dsl.transform.jit.checkpoints import Checkpointed
    states, items = [[0.5, np.arange(3.0)]], range(70)

    def step(item, state):
        return [state[0] * 0.9 + item, state[1] * 1.01 + state[0]]
    for k in items:
        states.append(step(k, states[-1]))
    kept = Checkpointed()
    kept.start(items, step)
    for start in range(0, len(items), kept.every):
        kept.marks.append(states[start])
        kept.count = min(start + kept.every, len(items))
    assert len(kept) == 70 and kept.every == 8 and len(kept.marks) == 9
    for k in [69, 68, 5, 40, 0, -1, -70, 33, 34, 32]:
        got, want = kept[k], states[k if k >= 0 else 70 + k]
        assert got[0] == want[0] and np.array_equal(got[1], want[1]), k
    for got, want in zip(reversed(kept), states[69::-1]):
        assert got[0] == want[0] and np.array_equal(got[1], want[1])
    assert [s[0] for s in kept][10:13] == [s[0] for s in states[10:13]] == [s[0] for s in kept[10:13]]
    with pytest.raises(IndexError):
        kept[70]
    plain = Checkpointed()      # before start: every state, as History keeps them
    plain.append(states[0])
    assert len(plain) == 1 and plain[0] is states[0] and list(plain) == [states[0]]


# ---------------------------------------------------------------- rows written in place
def test_a_loop_writes_rows_into_its_own_copy_of_the_tensor(monkeypatch):
    # written as a new tensor each iteration, the loop copied it whole every time (its time in the
    # square of its length); the compiled loop writes into its own copy, and the caller's tensor
    # is left as it was
    from dsl.backends import codegen
    found = []
    real = codegen.rows_in_place
    monkeypatch.setattr(codegen, "rows_in_place", lambda *a: (lambda r: found.append(r[1]) or r)(real(*a)))
    i = dsl.Interpreter(stdout=io.StringIO())
    i.run("fn fill(traj, n) { let x = 1.0\n for k in range(n) { x = x * 0.5 + k\n traj[k] = [x, x * x] }\n"
          " return traj }\nlet jfill = jit(fill)\nlet g = jit(grad(fn(s) => sum(fill(zeros((30, 2)) + s, 30) ** 2)))\n"
          "let e = grad(fn(s) => sum(fill(zeros((30, 2)) + s, 30) ** 2))")
    mine = np.zeros((30, 2))
    for _ in range(2):
        out = i.lookup("jfill")(mine, 30)
        assert np.array_equal(mine, np.zeros((30, 2)))
        assert np.array_equal(out, i.lookup("fill")(np.zeros((30, 2)), 30))
    assert any(found)
    found.clear()
    for _ in range(2):
        np.testing.assert_allclose(i.lookup("g")(0.3), i.lookup("e")(0.3), rtol=1e-13)
    assert any(found)       # the pass back's g[k] = 0, beside its read of g[k]


def test_an_iteration_stopped_after_writing_a_row_in_place_runs_again_from_the_row_it_began_with():
    # exp(s) overflows on the third iteration, after its write: Python's exp raises there, where
    # dg's gives inf, so the compiled loop stops, puts the row back, and the iteration runs again
    # exactly, reading the row it began with
    src = ("fn f(s) {\n  let traj = ones(12)\n  for k in range(12) {\n    let old = traj[k]\n"
           "    traj[k] = old + s\n    s = exp(s)\n  }\n  return traj\n}\n")
    want = dsl.Interpreter(keep_tape=True, stdout=io.StringIO())
    want.run(src)
    got = dsl.Interpreter(stdout=io.StringIO())
    got.run(src + "let jf = jit(f)")
    for s in (2.0, 2.0, 3.0):
        np.testing.assert_array_equal(got.lookup("jf")(s), want.lookup("f")(s))


# bodies that read the tensor they write rows of around the write: a view of it kept past the
# iteration (a residual, a carried value) must not see a later write in place
AROUND_WRITES = [
    "traj[k] = s\n s = 0.5 * s + 0.1 * sum(traj[0:3] * traj[0:3])",
    "let a = traj[0:3]\n traj[k] = s\n s = 0.5 * s + 0.1 * sum(a * a)",
    "traj[k] = s\n let r = traj[k]\n s = 0.5 * s + 0.1 * sum(r * r)",
    "let prev = traj[k - 1]\n traj[k] = s + 0.1 * sum(prev * prev)\n s = 0.9 * s",
    "traj[k] = s\n snap = traj[1:4]\n s = 0.9 * s + 0.01 * sum(snap * snap)",
    "traj[k] = s * sum(snap)\n snap = traj[0:3] * 1.0\n s = 0.9 * s",
    "traj[k] = traj[k] * s + s\n s = 0.9 * s + 0.01 * tanh(sum(traj * traj))",
    "traj[k] = s\n traj[k - 1] = traj[k - 1] * 0.5 + s\n s = 0.9 * s",
]


@pytest.mark.parametrize("body", AROUND_WRITES)
@pytest.mark.parametrize("shape", ["(40,)", "(40, 2)"])
def test_reads_around_a_row_written_in_place_give_the_written_out_loops_results(body, shape, monkeypatch):
    from dsl.transform.jit import checkpoints
    monkeypatch.setattr(checkpoints, "ROWS_FROM", 0)
    monkeypatch.setattr(checkpoints, "MIN_ITEMS", 4)
    src = (f"fn f(w) {{\n  let traj = ones({shape}) * w\n  let snap = ones(3 if {shape}[1:] == () else (3, 2)) * w\n"
           f"  let s = w\n  for k in range(1, 40) {{\n {body}\n  }}\n  return sum(s) + sum(traj * traj) + sum(snap)\n}}\n")
    src = src.replace("3 if (40,)[1:] == () else (3, 2)", "3").replace("3 if (40, 2)[1:] == () else (3, 2)", "(3, 2)")
    want, got = dsl.Interpreter(keep_tape=True, stdout=io.StringIO()), dsl.Interpreter(stdout=io.StringIO())
    want.run(src)
    got.run(src + "let jf = jit(f)\nlet jg = jit(grad(f))")
    for fast, slow in (("jf", "f"), ("jg", "grad(f)")):
        w = want.eval(f"({slow})(0.3)")
        for _ in range(3):
            np.testing.assert_allclose(got.lookup(fast)(0.3), w, rtol=1e-12, atol=1e-13, err_msg=f"{fast}: {body}")


@pytest.mark.parametrize("body", [
    "h = tanh(h * w + x)\n out[i] = h",
    "h = tanh(h * w + x + xs[i - 1] * 0.5)\n out[i] = h",
    "h = tanh(h * w + x * sum(xs[0]))",
])
def test_the_pass_back_adds_each_rows_cotangent_in_place(body, monkeypatch):
    # the cotangent of a tensor the loop reads row by row gathers one row per iteration: added
    # as x[i] += g into the loop's own tensor, where zeros with the row, added whole, made the
    # pass back's time grow with the square of the loop's length
    from dsl.backends import codegen
    added = []
    real = codegen.rows_in_place
    monkeypatch.setattr(codegen, "rows_in_place", lambda *a: (lambda r: added.append(r[3]) or r)(real(*a)))
    src = (f"fn f(w, xs) {{\n  let out = zeros(shape(xs))\n  let h = zeros(shape(xs)[1])\n"
           f"  for i, x in enumerate(xs) {{\n {body}\n  }}\n  return sum(out * out) + sum(h)\n}}\n")
    want, got = dsl.Interpreter(keep_tape=True, stdout=io.StringIO()), dsl.Interpreter(stdout=io.StringIO())
    want.run(src)
    got.run(src + "let jg = jit(grad(f, (0, 1)))")
    xs = np.sin(np.arange(120.0)).reshape(40, 3)
    w = want.eval("grad(f, (0, 1))")(0.6, xs)
    for _ in range(3):
        g = got.lookup("jg")(0.6, xs)
        np.testing.assert_allclose(g[0], w[0], rtol=1e-12)
        np.testing.assert_allclose(g[1], w[1], rtol=1e-12, atol=1e-15)
    assert any(added)
