"""Entries, rows and cotangents written into a tensor's memory by compiled code (backends/in_place.py):
the results of the code that copies, on loops that write a matrix entry by entry."""

import io

import numpy as np
import pytest

import dsl

STENCIL = ("fn f(w, u) {\n  let n = shape(u)[0]\n  for sweep in range(2) { for i in range(1, n - 1) { for j in range(1, n - 1) {\n"
           "    u[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) + w } } }\n"
           "  return sum(u ** 2)\n}\n")


def _pair(src, extra=""):
    """(the interpreter that runs src on its tape, step by step; one that compiles it)."""
    want, got = dsl.Interpreter(keep_tape=True, stdout=io.StringIO()), dsl.Interpreter(stdout=io.StringIO())
    want.run(src)
    got.run(src + extra)
    return want, got


def _spy(monkeypatch, name, index):
    """A list that gathers item `index` of what codegen's `name` returns, on each call."""
    from dsl.backends import codegen
    seen, real = [], getattr(codegen, name)
    monkeypatch.setattr(codegen, name, lambda *a: (lambda r: seen.append(r[index]) or r)(real(*a)))
    return seen


def test_a_stencil_swept_entry_by_entry_writes_and_adds_in_place(monkeypatch):
    # Gauss-Seidel: each of 2 x 8 x 8 updates copied the whole matrix, and its pass back made
    # zeros of the matrix's shape per read entry: the time of each update grew with the matrix
    fused, inner, carried = (_spy(monkeypatch, "owned_writes", 1), _spy(monkeypatch, "inner_adds", 1),
                             _spy(monkeypatch, "rows_in_place", 1))
    want, got = _pair(STENCIL, "let jf = jit(f)\nlet jg = jit(grad(f, (0, 1)))\nlet eg = grad(f, (0, 1))\n"
                               "let jh = jit(grad(grad(f)))")
    u = np.sin(np.arange(100.0)).reshape(10, 10)
    wv, wg, wh = want.lookup("f")(0.1, u), want.eval("grad(f, (0, 1))")(0.1, u), want.eval("grad(grad(f))")(0.1, u)
    for _ in range(3):
        np.testing.assert_allclose(got.lookup("jf")(0.1, u), wv, rtol=1e-13)
        for name in ("jg", "eg"):
            g = got.lookup(name)(0.1, u)
            np.testing.assert_allclose(g[0], wg[0], rtol=1e-12)
            np.testing.assert_allclose(g[1], wg[1], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(got.lookup("jh")(0.1, u), wh, rtol=1e-11)
    assert np.array_equal(u, np.sin(np.arange(100.0)).reshape(10, 10))      # the caller's matrix untouched
    assert any(fused) and any(inner) and any(carried)


# loops over i and j writing and reading a matrix's entries and rows around each other
BODIES = [
    "u[i, j] = u[i, j] * w + u[i - 1, j - 1]",
    "let r = u[i]\n u[i, j] = r[j] * w + sum(r) * 0.01",
    "let r = u[i]\n u[i, j] = w * j\n s = s + sum(r) * 0.001",
    "let c = u[:, j]\n u[i, j] = sum(c) * 0.1 + w",
    "u[i] = u[i] * 0.9 + w * 0.01\n u[i, j] = u[i, j] + 1.0",
    "let keep = u\n u[i, j] = w\n s = s + sum(keep) * 0.001",
    "if u[i, j] > 0.0 { u[i, j] = u[i, j] * w } else { u[i, j] = -w }",
    "v[j] = v[j] + u[i, j] * w\n u[i, j] = v[j - 1]",
    # an iteration that stops partway (Python's exp raises where dg's gives inf) after writing
    # into the matrix: it runs again from the entries it began with
    "u[i, j] = u[i, j] + s\n s = s * 2.0 + where(s > 700.0, 0.0, exp(s)) * 1e-300",
    "u[i] = u[i] * 0.5\n u[i, j] = s\n u[i - 1, j] = u[i - 1, j] + s\n s = s * 2.0 + where(s > 700.0, 0.0, exp(s)) * 1e-300",
]


@pytest.mark.parametrize("body", BODIES)
def test_entries_written_in_place_give_the_tapes_results(body):
    src = ("fn f(w) {\n  let u = reshape(linspace(-1.0, 1.0, 64), (8, 8)) * w\n  let v = ones(8) * w\n  let s = 0.3 * w\n"
           f"  for i in range(1, 7) {{ for j in range(1, 7) {{\n {body}\n  }} }}\n  return sum(u * u) + sum(v * u[2]) + s\n}}\n")
    want, got = _pair(src, "let jf = jit(f)\nlet jg = jit(grad(f))\nlet eg = grad(f)\nlet jh = jit(grad(grad(f)))")
    for w in (0.7, -0.7, 2.0, 4.0):
        for fast, slow in (("jf", "f"), ("jg", "grad(f)"), ("eg", "grad(f)"), ("jh", "grad(grad(f))")):
            expected = want.eval(f"({slow})({w})")
            for _ in range(2):
                np.testing.assert_allclose(got.lookup(fast)(w), expected, rtol=1e-11, atol=1e-12, err_msg=f"{fast}: {body}")


def test_steps_moved_in_one_pass_land_where_one_move_at_a_time_puts_them():
    # owned_writes and inner_adds move each step just before another in one pass (a move at a
    # time was the square of the program's length); the order must be the one the moves give
    from dsl.backends.in_place import _move, _moved_before
    rng = np.random.default_rng(3)
    for _ in range(200):
        steps = [("op", f"S{k}") for k in range(int(rng.integers(2, 30)))]
        n = len(steps)
        targets = rng.choice(n, size=int(rng.integers(1, n // 2 + 1)), replace=False)
        free = [k for k in range(n) if k not in set(targets)]
        movers = rng.choice(free, size=min(len(free), len(targets)), replace=False)
        before = {id(steps[t]): steps[m] for t, m in zip(targets, movers)}
        one_by_one = list(steps)
        for step in steps:
            if id(step) in before:
                _move(one_by_one, before[id(step)], step)
        assert _moved_before(steps, before) == one_by_one
