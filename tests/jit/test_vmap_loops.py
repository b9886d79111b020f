"""vmap of a loop staged once (dsl/core/primitives/loops.py, `_loop_batch`): vmap's look at a function
records a `for` or `while` loop as one Loop step, and its batching rule runs the loop of vmap(P);
the same results as running the function on each example, under grad, jvp, hessian and jit."""

import numpy as np
import pytest

from dsl.transform.jit import loop_body, rolling
from test_jit_loops import interp, ops_of, same, staged_and_compiled

SPRING = """
struct Spring { k, c }
fn sim(p, x0) {
    let x = x0
    let v = 0.0
    for i in range(200) {
        let a = -p.k * x - p.c * v
        v = v + 0.01 * a
        x = x + 0.01 * v
    }
    return x
}
let p = Spring(1.5, 0.1)
"""

XS = np.linspace(-1.0, 1.0, 7)


@pytest.fixture
def batched_bodies(monkeypatch):
    """The batch sizes of the batched loop bodies staged while the test runs (Body.batch_body;
    not those that raised: a batched value decided the body's control flow)."""
    made = []
    real = loop_body.Body.batch_body

    def spy(self, item, state, batched, size):
        body = real(self, item, state, batched, size)
        made.append(size)
        return body
    monkeypatch.setattr(loop_body.Body, "batch_body", spy)
    return made


def each(fn, *columns):
    """fn on each example (rows of the tensors in `columns`; other arguments as they are)."""
    n = next(len(c) for c in columns if isinstance(c, np.ndarray))
    return [fn(*(c[k] if isinstance(c, np.ndarray) else c for c in columns)) for k in range(n)]


def test_vmap_of_a_loop_runs_its_body_batched_and_equals_each_example(batched_bodies):
    i = interp(SPRING + "let bs = vmap(sim, in_axes=(none, 0))\nlet jbs = jit(bs)")
    L = i.lookup
    want = each(L("sim"), L("p"), XS)
    assert same(L("bs")(L("p"), XS), want, 1e-12)
    assert batched_bodies == [len(XS)]
    assert staged_and_compiled(L("jbs"), (L("p"), XS), want, 1e-12)
    assert "Loop" in ops_of(L("jbs"))


def test_a_short_loop_is_written_out_by_vmap_alone_and_staged_once_under_jit(batched_bodies):
    # vmap alone rolls only long loops (a look ahead and its compilations pay only for them), jit all
    src = ("fn f(x) {\n  let y = x\n  for i in range(N) { y = sin(y) * 0.9 + x }\n  return y\n}\n"
           "let vf = vmap(f)\nlet jf = jit(vf)")
    short, long = interp(src.replace("N", str(rolling.VMAP_MIN_ITEMS - 1))), interp(src.replace("N", "40"))
    for i in (short, long):
        assert same(i.lookup("vf")(XS), each(i.lookup("f"), XS), 1e-12)
    assert batched_bodies == [len(XS)]          # the long loop's
    assert staged_and_compiled(short.lookup("jf"), (XS,), each(short.lookup("f"), XS), 1e-12)
    assert batched_bodies == [len(XS)] * 2 and "Loop" in ops_of(short.lookup("jf"))


def test_state_the_batch_reaches_later_is_batched_from_the_start():
    # acc starts as an unbatched 0.0 and is updated from x; t starts batched and is set to a constant
    src = ("fn f(x, c) {\n  let acc = 0.0\n  let t = x\n  let k = 0\n"
           "  for i in range(40) { acc = acc * 0.5 + t * c\n t = 1.0\n k += 2 }\n  return (acc, t, k)\n}\n"
           "let vf = vmap(f, in_axes=(0, none))")
    i = interp(src)
    got = i.lookup("vf")(XS, 0.3)
    want = each(i.lookup("f"), XS, 0.3)
    assert same(got[0], [w[0] for w in want], 1e-12)
    assert same(got[1], [w[1] for w in want])
    assert np.asarray(got[2]).tolist() == [w[2] for w in want] == [80] * len(XS)


def test_a_branch_on_a_batched_value_runs_per_example(capfd):
    src = ("fn f(x) {\n  let y = x\n  for i in range(40) { if y > 0.0 { y = y - 0.3 } else { y = y + 0.1 } }\n"
           "  return y\n}\nlet vf = vmap(f, explain=true)")
    i = interp(src)
    assert same(i.lookup("vf")(XS), each(i.lookup("f"), XS))
    assert "batched value decided control flow" in capfd.readouterr().err


def test_a_branch_on_an_unbatched_value_that_changes_later_writes_the_loop_out():
    src = ("fn f(x, c) {\n  let s = c\n  let y = x\n"
           "  for i in range(40) { s = s + 1.0\n if s > 5.0 { y = y * 0.5 } else { y = y + 1.0 } }\n"
           "  return y\n}\nlet vf = vmap(f, in_axes=(0, none))\nlet jf = jit(vf)")
    i = interp(src)
    want = each(i.lookup("f"), XS, 0.0)
    assert same(i.lookup("vf")(XS, 0.0), want)
    assert staged_and_compiled(i.lookup("jf"), (XS, 0.0), want)


@pytest.mark.parametrize("bound", ["n", "y"])
def test_a_while_loop_under_vmap(bound, batched_bodies):
    # on an unbatched bound the loop of vmap(P) runs; on a batched one it runs while every example
    # goes on, and vmap runs per example where they part
    cond = "k < n" if bound == "n" else "y < 3.0"
    src = (f"fn f(x, n) {{\n  let y = x\n  let k = 0\n  while {cond} {{ y = y * 1.1 + 0.2\n k += 1 }}\n"
           f"  return y + k\n}}\nlet vf = vmap(f, in_axes=(0, none))\nlet jf = jit(vf)")
    i = interp(src)
    for n in (5, 9):
        want = each(i.lookup("f"), XS, n)
        assert same(i.lookup("vf")(XS, n), want, 1e-12)
        assert staged_and_compiled(i.lookup("jf"), (XS, n), want, 1e-12)
    assert batched_bodies or bound == "y"


def test_per_example_gradients_through_a_loop(batched_bodies):
    i = interp(SPRING + "let pg = vmap(grad(sim), in_axes=(none, 0))\nlet jpg = jit(pg)")
    L = i.lookup
    want = each(L("grad")(L("sim")), L("p"), XS)
    got = L("pg")(L("p"), XS)
    assert same((got.vals[0], got.vals[1]), ([w.vals[0] for w in want], [w.vals[1] for w in want]), 1e-12)
    assert batched_bodies
    assert staged_and_compiled(L("jpg"), (L("p"), XS), got, 1e-12)
    assert {"Loop", "LoopBack"} <= ops_of(L("jpg"))


def test_per_example_gradients_of_a_loop_the_batch_does_not_reach():
    # the loop reads only w (unbatched); its cotangent, x, is each example's: the history is spread
    src = ("fn f(w, x) {\n  let s = w\n  for i in range(40) { s = sin(s) * w + 0.1 }\n  return s * x\n}\n"
           "let pg = vmap(grad(f), in_axes=(none, 0))\nlet jpg = jit(pg)")
    i = interp(src)
    want = each(i.lookup("grad")(i.lookup("f")), 0.8, XS)
    assert same(i.lookup("pg")(0.8, XS), want, 1e-12)
    assert staged_and_compiled(i.lookup("jpg"), (0.8, XS), want, 1e-12)


def test_grad_of_a_vmapped_loop_sums_each_examples_gradient():
    i = interp(SPRING + "fn total(p, xs, u) { return sum(vmap(sim, in_axes=(none, 0))(p, xs) * u) }\n"
                        "let g = grad(total)\nlet jg = jit(g)")
    L = i.lookup
    u = np.random.default_rng(1).normal(size=len(XS))      # a random cotangent: no cancelling out
    per = each(L("grad")(L("sim")), L("p"), XS)
    want = (sum(w.vals[0] * c for w, c in zip(per, u)), sum(w.vals[1] * c for w, c in zip(per, u)))
    got = L("g")(L("p"), XS, u)
    assert same(tuple(got.vals), want, 1e-12) and abs(want[0]) > 1e-3
    assert staged_and_compiled(L("jg"), (L("p"), XS, u), got, 1e-12)


LOOPED = """
fn simt(w, x0) {
    let x = x0
    for i in range(40) { x = tanh(w * x) + 0.1 * x }
    return sum(x * x * w)
}
"""


def test_the_hessian_of_a_tensor_argument_through_a_loop(batched_bodies):
    # hessian (forward over reverse, vmapped over the directions) against reverse over reverse
    i = interp(LOOPED + "let h = hessian(simt)\nlet jh = jit(h)\nlet rr = jacobian(grad(simt))")
    w, x0 = np.array([0.5, 0.6, 0.7]), np.array([1.0, -2.0, 3.0])
    want = i.lookup("rr")(w, x0)
    assert same(i.lookup("h")(w, x0), want, 1e-10)
    assert same(i.lookup("h")(w * 0.9, x0), i.lookup("rr")(w * 0.9, x0), 1e-10)     # jacfwd's kept program
    assert batched_bodies
    assert staged_and_compiled(i.lookup("jh"), (w, x0), want, 1e-10)


def test_nested_vmap_and_vmap_of_a_jitted_loop():
    i = interp(LOOPED + "let vv = vmap(vmap(simt, in_axes=(none, 0)), in_axes=(0, none))\n"
                        "let vj = vmap(jit(simt), in_axes=(none, 0))")
    ws, x0s = np.linspace(0.1, 0.9, 4)[:, None] * np.ones(3), np.linspace(-1, 1, 15).reshape(5, 3)
    simt = i.lookup("simt")
    want = [[simt(w, x) for x in x0s] for w in ws]
    assert same(i.lookup("vv")(ws, x0s), want, 1e-12)
    assert same(i.lookup("vj")(ws[0], x0s), want[0], 1e-12)
