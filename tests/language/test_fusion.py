"""A hot run of lets and assignments is compiled into one Python function (dsl/runtime/fusion.py): it
computes, records, fails and reports exactly as the closures it replaces."""

import io
from pathlib import Path

import numpy as np
import pytest

import dsl
from dsl.runtime import fusion
from dsl.errors import DgError, format_error

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.dg"))
NEVER = 10 ** 9


def outcome(monkeypatch, hot, src=None, path=None):
    """What a program prints and the error it ends with (as dg reports it), with runs fused
    after `hot` runs; and how many runs were fused."""
    built = []
    real = fusion._Writer.function

    def counted(self, stmts, value=None):
        built.append((len(stmts), value is not None))
        return real(self, stmts, value)
    monkeypatch.setattr(fusion, "HOT", hot)
    monkeypatch.setattr(fusion._Writer, "function", counted)
    out = io.StringIO()
    interp = dsl.Interpreter(stdout=out, seed=0)
    try:
        interp.run_file(path) if path is not None else interp.run(src)
        report = None
    except DgError as err:
        report = format_error(err)
    return (out.getvalue(), report), built


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_prints_the_same_fused_from_the_first_run(path, monkeypatch):
    fused, _ = outcome(monkeypatch, 0, path=path)
    closures, never = outcome(monkeypatch, NEVER, path=path)
    assert never == []
    assert fused == closures


def test_the_examples_fuse_runs(monkeypatch):
    # the test above proves something only if the examples have runs to fuse
    fused = [p.stem for p in EXAMPLES if outcome(monkeypatch, 0, path=p)[1]]
    assert len(fused) >= len(EXAMPLES) // 2, fused


LOOP = """
struct P { w, b }
fn loss(p, xs) {
    let total = 0.0
    let h = 0.0
    for i in range(20) {
        let x = xs[i]
        let z = p.w * x + p.b
        h = -tanh(z) * 0.5 + h * 0.9
        total = total + (h - x) ** 2
    }
    return total
}
let xs = linspace(-1.0, 1.0, 20)
let p = P(0.7, -0.2)
let vg = value_and_grad(loss)(p, xs)
print(vg)
print(grad(grad(fn(s) => loss(P(s, 0.1), xs)))(0.3))
print(jit(value_and_grad(loss))(p, xs))
"""


def test_a_fused_loop_computes_and_differentiates_as_the_closures(monkeypatch):
    fused, built = outcome(monkeypatch, 3, src=LOOP)
    closures, _ = outcome(monkeypatch, NEVER, src=LOOP)
    assert built and fused == closures and fused[1] is None


# errors raised inside fused code, each one at an operation nested in a hot loop's statement
FAILING = [
    # an operator's type error, pointed at that operator (not at the statement or the outer one)
    ("fn f(n) { let t = 0.0\n for i in range(n) { let v = (1.0, \"a\")[i // 10]\n t = t + (1.0 - v * i) * 2.0 }\n"
     " return t }\nf(20)", "type"),
    # a field that is not there: the hint names the closest field
    ("struct P { width }\nstruct Q { widths }\nfn f(n) { let t = 0.0\n for i in range(n) {\n"
     " t = t + (P(1.0), Q(2.0))[i // 10].width * 2.0 }\n return t }\nf(20)", "key"),
    # an error raised inside a called function (its frame), and a call with the wrong arguments
    ("fn g(x) { return x[3] }\nfn f(n) { let t = 0.0\n for i in range(n) {\n"
     " let y = g(((1.0, 2.0, 3.0, 4.0), (1.0, 2.0))[i // 10]) * 2.0\n t = t + y }\n return t }\nf(20)", "index"),
    ("fn f(n) { let t = 0.0\n for i in range(n) { let h = (fn(a, b) => a, sqrt)[i // 10]\n t = t + h(1.0, 2.0) }\n"
     " return t }\nf(20)", "type"),
    ("fn f(n) { let t = 0.0\n for i in range(n) { t = t + -(1.0, (1.0, 2.0))[i // 10] }\n return t }\nf(20)", "type"),
    # in a function body of lets and a return, and in a lambda's expression, fused once called 3 times
    ("fn g(x, i) { let y = x * 2.0\n return y - (1.0, \"a\")[i // 10] }\nfn f(n) { let t = 0.0\n"
     " for i in range(n) { t = t + g(1.0, i) }\n return t }\nf(20)", "type"),
    ("let g = fn(x, i) => x * 2.0 - (1.0, \"a\")[i // 10]\nfn f(n) { let t = 0.0\n"
     " for i in range(n) { t = t + g(1.0, i) }\n return t }\nf(20)", "type"),
    # a shape error on a tape
    ("fn f(x) { let t = x\n for i in range(12) { t = t + ones((i // 10 + 2,)) * 1.0 }\n return sum(t) }\n"
     "grad(f)(tensor([1.0, 2.0]))", "shape"),
]


@pytest.mark.parametrize("src,kind", FAILING, ids=[k + str(i) for i, (_, k) in enumerate(FAILING)])
def test_an_error_in_fused_code_is_reported_as_the_closures_report_it(src, kind, monkeypatch):
    fused, built = outcome(monkeypatch, 3, src=src)
    closures, _ = outcome(monkeypatch, NEVER, src=src)
    assert built, "nothing was fused: the test proves nothing"
    assert ("fn g" not in src and "let g" not in src) or any(returns for _, returns in built), "no body fused"
    assert fused == closures
    assert fused[1].startswith(f"error[{kind}]")


def test_a_run_is_compiled_once_after_it_has_run_hot_times(monkeypatch):
    src = "fn f(n) { let t = 0.0\n for i in range(n) { let u = t * 0.5\n t = u + 1.0 }\n return t }\nprint(f(40))"
    (out, err), built = outcome(monkeypatch, 5, src=src)
    assert err is None and built == [(2, False)]     # the loop body's two statements, once (the first run: 1 statement,
    assert float(out) == pytest.approx(2.0 - 2.0 ** -39)   # run once, is never hot)


PEAKS = [
    # each statement's two temporaries: let go of once used, not when the function returns
    ("fn f(x) { let a = sum((x * 2.0) * 3.0)\n let b = sum((x * 4.0) * 5.0)\n"
     " let c = sum((x * 6.0) * 7.0)\n return a + b + c }", 68.0),
    # (y * 2.0) is fresh: + writes into it (dsl/core/ops/elision.py) rather than allocating
    ("fn f(x) { let y = x\n for i in range(3) { y = (y * 2.0) + 1.0\n let z = (y * 1.0) - 1.0 }\n"
     " return sum(y) }", 15.0),
]


def _peak(monkeypatch, hot, src, n):
    """The peak memory of f(x), x of n floats, with runs fused after `hot` runs, and f's value."""
    import tracemalloc
    monkeypatch.setattr(fusion, "HOT", hot)
    interp = dsl.Interpreter()
    x = np.ones(n)
    interp.run(src)
    f = interp.lookup("f")
    f(x)
    tracemalloc.start()
    try:
        value = f(x)
        return tracemalloc.get_traced_memory()[1], value
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("src,value", PEAKS)
def test_fused_code_takes_no_more_memory_than_the_closures(src, value, monkeypatch):
    n = 200_000
    (fused, got), (closures, _) = _peak(monkeypatch, 0, src, n), _peak(monkeypatch, NEVER, src, n)
    assert got == value * n
    assert fused < closures + 4 * n      # half of one temporary of slack
