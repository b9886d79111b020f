"""Rows of a batched loop's state on XLA (dsl/backends/xla/swapped.py): vmap's rules read and
write row i of a batch of states with the batch moved behind the rows, a transpose of the whole
batch on each side; the lowering reads and writes along the batch's axis 1 instead, where XLA
copied the batch twice per iteration."""

import io

import numpy as np
import pytest

import dsl
from dsl.backends.xla import runtime
from dsl.backends.xla.lower import Lowering, lower_steps

pytest.importorskip("jax")

TRAJECTORY = """
fn f(a) {
    let y = zeros((60, 3))
    y[0] = [a, 2.0 * a, -a]
    for i in range(1, 60) { y[i] = tanh(y[i - 1] * a) + 0.1 * y[i - 1, 0] }
    return sum(y * y) + y[59, 1]
}
"""


def scan_bodies(jaxpr):
    """The jaxprs of the scans in a jaxpr, at any depth."""
    for eqn in jaxpr.eqns:
        for value in eqn.params.values():
            inner = getattr(value, "jaxpr", None)
            if inner is not None and hasattr(inner, "eqns"):
                if eqn.primitive.name == "scan":
                    yield inner
                yield from scan_bodies(inner)


def scan_ops(jitted):
    """The operations of each scan's body in the lowering of a jitted function's one recording
    (which XLA runs)."""
    (entries,) = jitted.call.entries.values()
    entry = entries[0]
    assert entry.xla.why is None
    program = entry.program
    jx = runtime.load()
    values = [np.zeros(program.kinds[s][3]) for s in program.inputs]
    with runtime.x64():
        jaxpr = jx.jax.make_jaxpr(lambda *v: lower_steps(Lowering(jx), program, list(v)))(*values)
    return [[e.primitive.name for e in body.eqns] for body in scan_bodies(jaxpr.jaxpr)]


@pytest.mark.parametrize("expr, loops", [("vmap(f)", 1), ("vmap(grad(f))", 2)])
def test_a_batched_loop_and_its_pass_back_read_and_write_rows_without_transposing_the_batch(expr, loops):
    # the pass back sets the row's cotangent and adds the one before it in place, on axis 1 too
    i = dsl.Interpreter(stdout=io.StringIO(), backend="xla")
    i.run(TRAJECTORY + f"let g = jit({expr})\nlet want = {expr}")
    a = np.array([0.3, -0.45, 0.8, 1.1])
    g = i.lookup("g")
    for _ in range(3):
        np.testing.assert_allclose(g(a), i.lookup("want")(a), rtol=1e-12)
    bodies = scan_ops(g)
    assert len(bodies) == loops
    for ops in bodies:
        assert "transpose" not in ops, ops


def test_the_numerics_check_of_a_batched_pass_back_names_the_operation_numpy_names():
    # the check reads the rows the pass back added (on the batch's axis 1): an infinite
    # derivative in one example is found where numpy finds it
    src = ("fn f(a) {\n  let y = zeros(30)\n  y[0] = a\n"
           "  for i in range(1, 30) { y[i] = sqrt(y[i - 1] - 0.5 * a) + 0.1 }\n  return sum(y)\n}\n")
    said = []
    for backend in ("numpy", "xla"):
        i = dsl.Interpreter(stdout=io.StringIO(), backend=backend)
        i.run(src + "let g = jit(vmap(grad(f)))")
        i.lookup("g")(np.array([0.3, 0.4]))     # staged and compiled on finite values
        with pytest.raises(dsl.DgError) as got:
            i.lookup("g")(np.array([0.3, 0.0]))
        said.append((got.value.kind, str(got.value).splitlines()[0]))
    assert said[0] == said[1] and said[0][0] == "numerics", said


def test_a_loop_over_a_matrix_columns_reads_and_writes_them_in_place():
    # x[:, j] is row j with that axis moved to the front, and out[:, j] = ... written back the same
    i = dsl.Interpreter(stdout=io.StringIO(), backend="xla")
    i.run("fn cols(a, x) {\n  let out = zeros((shape(a)[0], shape(x)[1]))\n  for j in range(shape(x)[1]) {\n"
          "    out[:, j] = a @ x[:, j] + x[0, j]\n  }\n  return out\n}\nlet f = jit(cols)")
    a, x = np.random.default_rng(2).normal(size=(3, 4)), np.arange(20.0).reshape(4, 5)
    f = i.lookup("f")
    for _ in range(2):
        np.testing.assert_allclose(f(a, x), a @ x + x[0], rtol=1e-12)
    (ops,) = scan_ops(f)
    assert "transpose" not in ops, ops
