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
