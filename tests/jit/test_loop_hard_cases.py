"""Loops under a derivative that are hard to run as one staged step: their index read by the loop
variable, recursion, a gradient taken inside the body, custom rules, struct and map state, a
rebound module-level name, branches, early exits and late errors. Each program gives the same
numbers, output and errors rolled (an interpreter keeping no tape: dsl/transform/jit/eager_loops.py),
written out (one keeping tapes) and under jit; the cases marked `True` must actually roll, so
that the comparison exercises the rolled path."""

import io

import numpy as np
import pytest

import dsl
from dsl.transform.jit import eager_loops

# name -> (program setting `out`, whether its loop rolls outside jit). `GRAD` is replaced by the
# derivative builtin in use: value_and_grad as written, jit(value_and_grad) for the jit run.
CASES = {
    "index_by_the_loop_variable": ("""
fn f(x) { let acc = 0.0
  for i in range(20) { acc = acc + x[i % 4] * sin(acc + x[(i + 1) % 4]) }
  return acc }
let out = GRAD(f)([0.1, 0.2, 0.3, 0.4])""", True),
    "recursion_in_the_body": ("""
fn r(a, n) { if n == 0 { return a } return r(sin(a), n - 1) }
fn f(x) { let acc = x
  for i in range(20) { acc = r(acc, 2) + x }
  return acc }
let out = GRAD(f)(0.3)""", True),
    "a_gradient_inside_the_body": ("""
fn h(a, b) { return sin(a * b) }
fn f(x) { let acc = x
  for i in range(20) { acc = acc + grad(h)(acc, x) * 0.1 }
  return acc }
let out = GRAD(f)(0.3)""", True),
    "struct_state": ("""
struct P { a, b }
fn f(p) { let s = p
  for i in range(25) { s = P(a=s.a * 0.9 + s.b * 0.1, b=sin(s.a)) }
  return s.a + s.b }
let out = GRAD(f)(P(a=0.3, b=0.7))""", True),
    "map_state": ("""
fn f(m) { let acc = m
  for i in range(25) { acc = {"u": acc["u"] * 0.9 + acc["v"], "v": cos(acc["u"])} }
  return acc["u"] * acc["v"] }
let out = GRAD(f)({"u": 0.3, "v": 0.2})""", True),
    "an_int_tensor_becoming_float": ("""
fn f(x) { let acc = [0, 0, 0]
  for i in range(20) { acc = acc + x * i }
  return sum(acc * acc) }
let out = GRAD(f)([0.1, 0.2, 0.3])""", True),
    "a_rebound_module_level_name": ("""
let scale = 0.5
fn step(a) { return a * scale }
fn f(x) { let acc = x
  for i in range(20) { acc = step(acc) + x }
  return acc }
let o1 = GRAD(f)(0.3)
scale = 0.7
let out = (o1, GRAD(f)(0.3))""", True),
    "a_branch_both_ways": ("""
fn f(x) { let acc = x
  for i in range(30) { if acc > 0.5 { acc = acc * 0.5 } else { acc = acc * 1.7 + x } }
  return acc }
let out = (GRAD(f)(0.3), GRAD(f)(0.9))""", True),
    "stop_gradient_checkpoint_and_custom_vjp": ("""
let g = checkpoint(fn(a, b) => sin(a) * b)
let sq = custom_vjp(fn(a) => a * a, fn(a, out, d) => 2.0 * a * d)
fn f(x) { let acc = x
  for i in range(30) { acc = g(acc, x) * 0.5 + stop_gradient(acc) * 0.1 + sq(acc) * 0.2 }
  return acc }
let out = GRAD(f)(0.3)""", True),
    "a_while_loop_with_continue": ("""
fn f(x) { let acc = x
  let k = 0
  while k < 30 { k += 1
    if k % 2 == 0 { continue }
    acc = acc * 0.9 + x * 0.1 }
  return acc }
let out = GRAD(f)(0.3)""", False),
    "a_break": ("""
fn f(x) { let acc = x
  for i in range(40) { acc = acc * 1.1 + 0.01
    if acc > 2.0 { break } }
  return acc * acc }
let out = GRAD(f)(0.5)""", False),
    "an_early_return": ("""
fn f(x) { let acc = x
  for i in range(50) { acc = acc * 1.05
    if acc > 1.0 { return acc * 2.0 } }
  return acc }
let out = GRAD(f)(0.3)""", False),
    "an_inner_loop_whose_length_changes": ("""
fn f(x) { let acc = x
  for i in range(20) { for j in range(i % 3) { acc = sin(acc) + x } }
  return acc }
let out = GRAD(f)(0.3)""", False),
    "an_error_on_a_late_iteration": ("""
fn f(x) { let acc = x
  for i in range(30) { acc = acc + x
    if i == 25 { let t = [1.0, 2.0][i] } }
  return acc }
let out = GRAD(f)(0.3)""", False),
}


def run(src, keep_tape, jitted):
    """("ok", out, printed) or ("error", the error's first line, printed)."""
    printed = io.StringIO()
    interp = dsl.Interpreter(keep_tape=keep_tape, stdout=printed, seed=1)
    try:
        interp.run(src.replace("GRAD(f)", "jit(value_and_grad(f))" if jitted else "value_and_grad(f)"))
        return "ok", interp.get("out"), printed.getvalue()
    except dsl.DgError as exc:
        return "error", str(exc).splitlines()[0], printed.getvalue()


def assert_same(a, b):
    """Equal structures, numbers within 1e-11 (the order of additions may differ)."""
    if hasattr(a, "_asdict"):
        a, b = a._asdict(), b._asdict()
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            assert_same(a[k], b[k])
    elif a is None or isinstance(a, str):
        assert a == b
    else:
        np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("name", list(CASES))
def test_rolled_written_out_and_jitted_agree(name, monkeypatch):
    src, rolls = CASES[name]
    rolled = []
    real = eager_loops.EagerLoops.roll

    def spy(self, *args):
        done = real(self, *args)
        rolled.append(bool(done))
        return done
    monkeypatch.setattr(eager_loops.EagerLoops, "roll", spy)
    fast = run(src, False, False)
    assert any(rolled) is rolls
    written = run(src, True, False)
    jitted = run(src, False, True)
    for other in (written, jitted):
        assert fast[0] == other[0] and fast[2] == other[2]
        if fast[0] == "ok":
            assert_same(fast[1], other[1])
        else:
            assert fast[1] == other[1]
