"""`for x in xs` over a tensor's rows (and `for i, x in enumerate(xs)`), as jit stages it: a loop
over positions.

A loop over a range rolls (rolling.py) because its variable is an int the look ahead can stage.
A tensor's rows are values, not positions: walked as they are, the loop is written out, one copy
per row. So where jit stages, the loop runs as `for i in range(n) { x = xs[i]; body }`, the
tensor and i in two frame slots the resolver gave the loop (For.row_slots), x = xs[i] a Row step
of the body (dsl/core/ops/structs.py): the same loop JAX's scan over xs is.
"""

from ...core import ops
from ...frontend import ast as A
from .frames import declared
from .rolling import Roller


def row_roller(s, body, bind, interp, scope, reads, numbered=False):
    """run(f, xs): loop `s` over the rows of tensor xs as a rolled loop over positions (a Roller),
    binding each row (`numbered`: the pair of its position and it, as enumerate gives); its
    `wanted(range)` says whether the roller would try."""
    held, at = s.row_slots

    def row_body(f):
        i = f[at]
        row = ops.item(f[held], (i,))
        bind(f, (i, row) if numbered else row)
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


def enumerated(s):
    """For `for i, x in enumerate(xs)` with xs a name: the expressions `enumerate` and xs (read
    twice at no cost, to see whether they are the builtin and a tensor); else None."""
    it = s.iterable
    if len(s.names) != 2 or s.pattern is not None or type(it) is not A.Call or type(it.fn) is not A.Name \
            or it.fn.id != "enumerate" or len(it.args) != 1 or it.kwargs or type(it.args[0]) is not A.Name:
        return None
    return it.fn, it.args[0]
