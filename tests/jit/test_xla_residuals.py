"""Residuals on XLA (dsl/backends/xla/residuals.py): a reverse loop reads the tensors its forward
loop computed instead of computing them again; the results stay those of the numpy backend."""

import numpy as np
import pytest

import dsl
from dsl.backends.xla.residuals import hoist

pytest.importorskip("jax")

RNN = """
struct P { wx, wh }
fn loss(p, xs) {
    let h = tanh(xs[0] @ p.wx)
    let total = 0.0
    for t in range(shape(xs)[0]) {
        h = tanh(xs[t] @ p.wx + h @ p.wh)
        total = total + sum(sin(h) * h)
    }
    return total
}
fn scaled(a, p, xs) { return loss(P(a * p.wx, p.wh), xs) }
"""

RNG = np.random.default_rng(11)
WX, WH, XS = RNG.normal(size=(3, 4)) * 0.5, RNG.normal(size=(4, 4)) * 0.5, RNG.normal(size=(6, 2, 3))


def _both(composition):
    """(interpreter, jit on numpy, jit on XLA) of `composition`."""
    i = dsl.Interpreter()
    i.run(RNN + f"\nlet g = {composition}\nlet __n = jit(g)\nlet __x = jit(g, backend=\"xla\")")
    return i, i.lookup("__n"), i.lookup("__x")


def _program(jitted):
    """The one recording of a jitted function, which XLA ran (numpy's code never needed)."""
    (entries,) = jitted.call.entries.values()
    entry = entries[0]
    assert entry.xla.why is None and entry._code is None
    return entry.program


def _reverse_bodies(program):
    """The bodies of the Scans that run backwards, at every depth."""
    for step in program.steps:
        if step[1] == "Scan":
            body = step[4]["body"]
            if step[4]["reverse"]:
                yield body
            yield from _reverse_bodies(body.program)


def _close(got, want):
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        if isinstance(w, dsl.Struct):
            for k in w._fields:
                np.testing.assert_allclose(getattr(g, k), getattr(w, k), rtol=1e-10, atol=1e-12)
        else:
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_an_rnns_pass_back_reads_its_forward_loops_tensors():
    i, jn, jx = _both("value_and_grad(loss)")
    p = i.lookup("P")(WX, WH)
    for k in range(3):
        _close(jx(p, XS * (1 + 0.1 * k)), jn(p, XS * (1 + 0.1 * k)))
    staged = _program(jx)
    lowered = hoist(staged)
    assert lowered is not staged
    (before,), (after,) = list(_reverse_bodies(staged)), list(_reverse_bodies(lowered))
    # staged: the iteration computed again (two products, tanh), then passed back (three products)
    ops = [s[1] for s in before.program.steps]
    assert "TanhAct" in ops and ops.count("MatMul") == 5
    # and no cotangent for the inputs xs, which nothing differentiates: each iteration had added
    # its row's into a sum of the whole sequence's size
    assert "RowAdd" not in ops and before.counts[1] == 4      # carry: h, total and the sums for wx, wh
    ops = [s[1] for s in after.program.steps]
    assert "TanhAct" not in ops and ops.count("MatMul") == 3
    assert after.counts[0] > before.counts[0]        # it reads rows of the residuals instead


@pytest.mark.parametrize("composition", [
    "grad(fn(a, p, xs) => grad(scaled)(a, p, xs))",
    "grad(fn(a, p, xs) => grad(fn(b, q, ys) => grad(scaled)(b, q, ys))(a, p, xs))",
    "fn(a, p, xs) => jvp(fn(b) => grad(scaled)(b, p, xs), (a,), (1.0,))[1]",
    "fn(a, p, xs) => sum(grad(fn(q) => scaled(a, q, xs))(p).wx)",
])
def test_loops_under_several_derivatives_agree_with_numpy(composition):
    # a Scan whose history two reverse Scans read, and Scans of pullbacks paired in turn: the
    # fields of each forward Scan are numbered anew as residuals are added to it
    i, jn, jx = _both(composition)
    p = i.lookup("P")(WX, WH)
    for k in range(3):
        a = 0.9 + 0.1 * k
        _close(jx(a, p, XS), jn(a, p, XS))
    staged = _program(jx)
    assert hoist(staged) is not staged


def test_a_loop_over_numbers_computes_them_again():
    i = dsl.Interpreter()
    i.run("fn f(x) {\n  let s = x\n  for k in range(50) { s = s + 0.01 * sin(s) * x }\n  return s\n}\n"
          "let g = jit(grad(grad(f)), backend=\"xla\")")
    g = i.lookup("g")
    assert abs(g(0.7) - i.lookup("grad")(i.lookup("grad")(i.lookup("f")))(0.7)) < 1e-12
    staged = _program(g)
    assert hoist(staged) is staged


def test_numbers_read_out_of_a_carried_tensor_are_residuals_so_its_history_is_not_kept():
    # y[i] = tanh(y[i - 1]) + x[i]: the pass back needs tanh' at y[i - 1], a number; computed again
    # from the carry the iteration started from, it kept a copy of y per iteration (n^2 numbers)
    i = dsl.Interpreter()
    i.run("fn f(x) {\n  let y = zeros(shape(x)[0])\n  for k in range(1, shape(x)[0]) { y[k] = tanh(y[k - 1]) + x[k] }\n"
          "  return sum(y * y)\n}\nlet g = jit(grad(f), backend=\"xla\")")
    x = np.random.default_rng(3).normal(size=30)
    g = i.lookup("g")
    for _ in range(2):
        np.testing.assert_allclose(g(x), i.lookup("grad")(i.lookup("f"))(x), rtol=1e-12, atol=1e-14)
    (back,) = list(_reverse_bodies(hoist(_program(g))))
    program, (nx, nc, nk, ny) = back.program, back.counts
    read = {r for s in program.steps for r in s[2]} | set(program.out_refs)
    # its xs: the residuals, then A's history (y, then the sum so far), then cotangents
    tensors = [s for s in program.inputs[1:1 + nx] if program.kinds[s][0] == "array" and s not in read]
    assert tensors, "the history of y is still read by the pass back"


def test_a_batched_loops_pass_back_reads_residuals_through_vmaps_two_swaps():
    # vmap's rule hands a batched Scan's history on with the batch first and the reverse Scan's
    # rule swaps it back: through the two transposes the pair was not found, and the pass back
    # computed each iteration again from the history, a copy of the batch of y per iteration
    i = dsl.Interpreter()
    i.run("fn f(a) {\n  let y = zeros(40)\n  y[0] = a\n  for k in range(1, 40) { y[k] = tanh(y[k - 1]) * a }\n"
          "  return sum(y * y)\n}\nlet g = jit(vmap(grad(f)), backend=\"xla\")\nlet want = vmap(grad(f))")
    a = np.array([0.3, 0.45, -0.8])
    g = i.lookup("g")
    for _ in range(2):
        np.testing.assert_allclose(g(a), i.lookup("want")(a), rtol=1e-12, atol=1e-14)
    (back,) = list(_reverse_bodies(hoist(_program(g))))
    program, (nx, nc, nk, ny) = back.program, back.counts
    read = {r for s in program.steps for r in s[2]} | set(program.out_refs)
    assert not any(s[1] == "TanhAct" for s in program.steps)
    assert [s for s in program.inputs[1:1 + nx] if program.kinds[s][0] == "array" and s not in read]
