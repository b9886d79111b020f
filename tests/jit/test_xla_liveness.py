"""Which values a program's results need (dsl/backends/xla/liveness.py): the lowering checks
only those, so that JAX can still drop a loop's unread outputs and the work behind them."""

from types import SimpleNamespace

from dsl.backends.xla.liveness import ALL, body_outputs, live


def _op(op, refs, out, **kw):
    return ("op", op, tuple(refs), (None,) * len(refs), kw, None, out)


def test_a_value_only_an_unread_output_reads_is_dead():
    steps = [_op("Add", (0, 1), 2), _op("Mul", (0, 0), 3), _op("Scan", (2, 3), 4),
             _op("StructField", (4,), 5, field_index=1), _op("StructField", (4,), 6, field_index=0),
             _op("Sin", (6,), 7)]
    slots, fields = live(steps, (2, 5, 7), wanted={0, 1})
    assert fields[4] == {1} and {0, 1, 2, 3} <= slots and 6 not in slots and 7 not in slots
    slots, fields = live(steps, (2, 5, 7))
    assert fields[4] == {0, 1} and {6, 7} <= slots


def test_a_tuple_read_whole_has_every_field_read_and_guards_are_live():
    steps = [_op("Scan", (0,), 1), _op("StructField", (1,), 5, field_index=0), _op("Cos", (2,), 3),
             ("guard", "Guard", (3,), (True,), None, None, -1), _op("Tuple", (1, 5), 4)]
    slots, fields = live(steps, (4,))
    assert fields[1] is ALL and {0, 1, 2, 3, 5} <= slots


def test_a_loop_variable_the_body_reads_for_a_live_one_is_live():
    # carry a' = a + b, b' = sin(b): the final a needs b on every iteration, the final b only b
    body = SimpleNamespace(inputs=(0, 1, 2), steps=[_op("Add", (1, 2), 3), _op("Sin", (2,), 4)], out_refs=(3, 4))
    counts = (0, 2, 0, 0)
    assert body_outputs(body, counts, {0}) == {0, 1}
    assert body_outputs(body, counts, {1}) == {1}
    assert body_outputs(body, counts, {3}) == {1}       # b's history
    assert body_outputs(body, counts, set()) == set()
    assert body_outputs(body, counts, ALL) == {0, 1}


def test_a_scans_xs_its_body_does_not_read_are_not_live():
    # the reverse Scan of a loop that writes rows of a tensor takes that tensor's history and reads
    # none of it: the forward Scan's history of it is dead (it held the loop's length squared)
    back = SimpleNamespace(program=SimpleNamespace(inputs=(0, 1, 2, 3), steps=[_op("Mul", (2, 3), 4)], out_refs=(4,)),
                           counts=(2, 1, 0, 0))
    steps = [_op("Scan", (0,), 1), _op("StructField", (1,), 2, field_index=1), _op("StructField", (1,), 3, field_index=2),
             _op("Scan", (2, 3, 9), 5, body=back)]
    slots, fields = live(steps, (5,))
    assert fields[1] == {2} and 3 in slots and 2 not in slots


def test_the_pass_back_of_row_writes_on_xla_gives_numpys_gradient():
    import numpy as np
    import pytest
    pytest.importorskip("jax")
    import dsl
    src = ("fn f(a, ys) {\n  let traj = zeros(shape(ys)[0])\n  let x = 0.0\n"
           "  for i in range(shape(ys)[0]) { x = x * a + ys[i]\n traj[i] = x }\n  return sum(traj ** 2)\n}\n")
    ys = np.sin(np.arange(40.0))
    want = dsl.Interpreter(keep_tape=True)
    want.run(src)
    got = dsl.Interpreter(backend="xla")
    got.run(src + "let g = jit(grad(f))")
    w = want.lookup("grad")(want.lookup("f"))(0.9, ys)
    for _ in range(3):
        assert abs(got.lookup("g")(0.9, ys) - w) <= 1e-12 * abs(w)
    assert got.lookup("g").call.entries and all(e.xla.why is None for es in got.lookup("g").call.entries.values() for e in es)
