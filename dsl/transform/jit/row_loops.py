"""`for x in xs` over a tensor's rows, as jit stages it: a loop over positions.

A loop over a range rolls (rolling.py) because its variable is an int the look ahead can stage.
A tensor's rows are values, not positions: walked as they are, the loop is written out, one copy
per row. So where jit stages, the loop runs as `for i in range(n) { x = xs[i]; body }`, the
tensor and i in two frame slots the resolver gave the loop (For.row_slots), x = xs[i] a Row step
of the body (dsl/core/ops/structs.py): the same loop JAX's scan over xs is.
"""

from ...core import ops
from .frames import declared
from .rolling import Roller


def row_roller(s, body, bind, interp, scope, reads):
    """run(f, xs): loop `s` (a one-name For) over the rows of tensor xs as a rolled loop over
    positions (a Roller); its `wanted(range)` says whether the roller would try."""
    held, at = s.row_slots

    def row_body(f):
        bind(f, ops.item(f[held], (f[at],)))
        return body(f)

    def bind_position(f, i):
        f[at] = i

    local = {b.slot for b in s.bindings if getattr(b, "kind", None) == "local"}
    span = s.iterable.span
    rows = Roller(row_body, bind_position, interp, span.where(), scope, span, reads=reads,
                       body_locals=declared([s.body]) | local)

    def run(f, xs):
        f[held] = xs
        try:
            return rows(f, range(ops.core.shape_of(xs)[0]))
        finally:
            f[held] = f[at] = None      # the frame does not keep the tensor alive
    run.wanted = rows.wanted
    return run
