"""A loop that reads x[i] under grad, on XLA (dsl/backends/xla/row_adds.py): each iteration's
cotangent of x is a row added into the sum carried so far, in place, and the numerics check
reads the rows gained, so an iteration costs a row, not x's size (n^2 over n rows, a 100,000-
entry x took seconds a call where JAX's fori_loop takes milliseconds); the staging run keeps no
history of the pullback (a tensor of x's size per iteration: gigabytes). The results stay the
numpy backend's."""

import numpy as np
import pytest

import dsl
from dsl.backends.xla import runtime
from dsl.backends.xla.code import hoist
from dsl.backends.xla.lower import Lowering, lower_steps
from dsl.core.primitives import scan as scan_primitive
from dsl.errors import DgError

jax = pytest.importorskip("jax")

LOOPS = """
fn squares(x) {
    let s = 0.0
    for i in range(shape(x)[0]) { s = s + x[i] * x[i] }
    return s
}
fn neighbours(x, w) {
    let s = 0.0
    for i in range(shape(x)[0] - 1) { s = s + tanh(w * x[i] - x[i + 1]) ** 2 }
    return s
}
fn recurrence(x) {
    let y = zeros(shape(x)[0])
    for i in range(1, shape(x)[0]) { y[i] = 0.9 * y[i - 1] + x[i] }
    return sum(y * y)
}
fn roots(x) {
    let s = 0.0
    for i in range(shape(x)[0]) { s = s + sqrt(x[i]) }
    return s
}
"""

X = np.random.default_rng(5).uniform(0.5, 2.0, size=40)


def _interp(backend):
    """An interpreter on `backend` holding the loops and x."""
    interp = dsl.Interpreter(backend=backend)
    interp.run(LOOPS)
    interp.set("x", X)
    return interp


def _program(jitted):
    """The one recording of a jitted function."""
    (entries,) = jitted.call.entries.values()
    return entries[0].program


@pytest.mark.parametrize("expr", [
    "jit(grad(squares))(x)", "jit(grad(neighbours, argnums=(0, 1)))(x, 0.7)", "jit(hessian(squares))(x[:6])",
    "jit(grad(fn(x) => grad(fn(w) => neighbours(x, w))(0.7)))(x)",
    "jit(vmap(grad(squares)))(stack((x, 2.0 * x)))", "jit(grad(recurrence))(x)",
])
def test_gradients_of_loops_reading_rows_are_the_numpy_backends(expr):
    want, interp = _interp("numpy").eval(expr), _interp("xla")
    for _ in range(2):      # staged, then compiled
        got = interp.eval(expr)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def test_a_non_finite_row_gained_is_reported_as_on_numpy():
    # sqrt'(0) is infinite: the row of x[3] the pass back adds is, and the numerics check names Sqrt
    for backend in ("numpy", "xla"):
        interp = _interp(backend)
        interp.run("let g = jit(grad(roots))\nlet ok = (g(x), g(x))")
        bad = X.copy()
        bad[3] = 0.0
        interp.set("bad", bad)
        with pytest.raises(DgError) as err:
            interp.eval("g(bad)")
        assert err.value.kind == "numerics" and "Sqrt" in err.value.message, backend


def _reverse_body_ops_of_xs_size(fn):
    """The operations of the reverse loop's body, on XLA, that give a tensor of x's size."""
    interp = _interp("xla")
    interp.run(f"let g = jit(grad({fn}))\nlet ok = (g(x), g(x))")
    program = hoist(_program(interp.lookup("g")))
    jx = runtime.load()

    def run(x):
        lowering = Lowering(jx)
        return lower_steps(lowering, program, [x]), lowering.ok()
    with runtime.x64():
        jaxpr = jax.make_jaxpr(run)(X)
    (back,) = [e for e in jaxpr.eqns if e.primitive.name == "scan" and e.params["reverse"]]
    body = back.params["jaxpr"].jaxpr
    return [e.primitive.name for e in body.eqns if any(getattr(v.aval, "shape", ()) == X.shape for v in e.outvars)]


def test_the_pass_back_adds_rows_in_place_and_checks_only_them():
    # the sum of x's cotangents gains its rows by scatter-adds: no zeros of x's size made, added
    # or multiplied by 0 for the check on each iteration
    found = _reverse_body_ops_of_xs_size("squares")
    assert found and set(found) == {"scatter-add"}
    # the cotangent of y, whose row i the pass back sets to 0 (y[i] was written) before adding
    # into row i - 1: its check reads the rows gained too
    found = _reverse_body_ops_of_xs_size("recurrence")
    assert found and set(found) == {"scatter", "scatter-add"}


def test_staging_keeps_no_history_of_a_pullback_nothing_differentiates(monkeypatch):
    # the first call runs the loops as it stages them: the pullback's history, the sum of x's
    # cotangents at every iteration, was stacked, len(x) ** 2 numbers that nothing read
    stacked = []
    keep = scan_primitive._stacked
    monkeypatch.setattr(scan_primitive, "_stacked", lambda rows, kind: stacked.append(kind) or keep(rows, kind))
    interp = _interp("xla")
    interp.run("let g = jit(grad(squares))\nlet ok = g(x)")
    assert not [k for k in stacked if k != "float" and tuple(k[3]) == X.shape]
    (back,) = [s for s in _program(interp.lookup("g")).steps if s[1] == "Scan" and s[4]["reverse"]]
    _, nc, _, ny = back[4]["body"].counts
    assert back[4]["reads"] <= frozenset(range(nc + ny))


def test_the_staging_runs_pass_back_adds_each_row_in_place(monkeypatch):
    # the staging run's pass back (the numpy code of the reverse Scan) made x's cotangent row as
    # zeros of x's size plus the row, twice (x[i] * x[i] reads it twice), added it to the sum and
    # checked the whole sum, per iteration: seconds for 100,000 rows. The two rows are summed
    # first (in_place.summed_row_adds) and added in place by a loop checked once at its end.
    from dsl.transform.jit import scan_body
    ran = []
    keep = scan_body.ScanBody._unchecked
    monkeypatch.setattr(scan_body.ScanBody, "_unchecked",
                        lambda self, *a: ran.append((self, keep(self, *a))) or ran[-1][1])
    interp = _interp("xla")
    interp.run("let g = jit(grad(squares))")
    np.testing.assert_allclose(interp.lookup("g")(X), 2.0 * X, rtol=1e-15)
    ((body, out),) = ran
    assert out is not None          # the unchecked loop's results stood
    looped = [s[1] for s in body.looped.steps]
    assert looped.count("RowAdd") == 1 and [s[1] for s in body.program.steps].count("RowAdd") == 2


def test_a_carry_the_pass_back_resets_to_a_constant_is_not_written_in_place():
    # found by the XLA fuzzer once the staging run kept no history of the pass back: its compiled
    # loop (in_place.rows_in_place) wrote the cotangent of an overwritten carry into the carried
    # tensor in place, and each iteration passed the constant zero on as that tensor, so the next
    # wrote into the constant itself (a gradient off by 1e-9)
    from test_jit_fuzz import Writer, check_program
    check_program(Writer(39709).program(with_while=True), 39709,
                  ("jit(value_and_grad(f, argnums=(0, 1, 2)))", "value_and_grad(f, argnums=(0, 1, 2))"), 3,
                  backend="xla")
