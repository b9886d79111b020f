"""`for x in xs` over a tensor's rows (and `for i, x in enumerate(xs)`, `for a, b in zip(xs, ys)`),
as jit stages it: a loop over positions.

A loop over a range rolls (rolling.py) because its variable is an int the look ahead can stage.
A tensor's rows are values, not positions: walked as they are, the loop is written out, one copy
per row. So where jit stages, the loop runs as `for i in range(n) { x = xs[i]; body }`, the
tensors and i in frame slots the resolver gave the loop (For.row_slots), x = xs[i] a Row step of
the body (dsl/core/ops/structs.py): the same loop JAX's scan over xs is.
"""

from ...core import ops
from ...core.ops.core import ndarray
from ...core.tape import peek
from ...frontend import ast as A
from .frames import declared
from .rolling import Roller


def row_roller(s, body, bind, interp, scope, reads, form=None):
    """run(f, *xs): loop `s` over the rows of the tensors xs as a rolled loop over positions (a
    Roller), binding each row, or (`form` "enumerate") the pair of its position and it, or
    ("zip") the tuple of each tensor's row; its `wanted(range)` says whether the roller would try."""
    *held, at = s.row_slots

    def row_body(f):
        i = f[at]
        rows = tuple(ops.item(f[h], (i,)) for h in held)
        bind(f, (i, rows[0]) if form == "enumerate" else rows if form == "zip" else rows[0])
        return body(f)

    def bind_position(f, i):
        f[at] = i

    local = {b.slot for b in s.bindings if getattr(b, "kind", None) == "local"}
    span = s.iterable.span
    roller = Roller(row_body, bind_position, interp, span.where(), scope, span, reads=reads,
                    body_locals=declared([s.body]) | local)

    def run(f, *xs):
        for h, x in zip(held, xs):
            f[h] = x
        try:
            return roller(f, range(min(ops.core.shape_of(x)[0] for x in xs)))
        finally:
            for h in held:
                f[h] = None     # the frame does not keep the tensors alive
            f[at] = None
    run.wanted = roller.wanted
    return run


def walked_call(s):
    """For `for i, x in enumerate(xs)` or `for a, b in zip(xs, ys)` (of any expressions): ("enumerate"
    or "zip", the expression of the function, those of its arguments), which the loop evaluates
    once to see whether they are the builtin and tensors; else None."""
    it = s.iterable
    if len(s.row_slots) < 2 or len(s.names) < 2 or type(it) is not A.Call:
        return None
    return it.fn.id, it.fn, it.args


def rows_of(x):
    """How many rows a tensor has (0 for anything else, which is walked as written)."""
    v = peek(x)
    return v.shape[0] if type(v) is ndarray and v.ndim else 0
