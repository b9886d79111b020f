"""Rows added into zeros, kept unmade until something reads them (lower.py).

A loop that reads `x[i]` under grad sums the read's cotangent into a tensor of x's size on
every iteration: RowAdd (zeros with g at row i), then Add into the sum carried so far. Made as
written, each iteration writes and adds the whole tensor, so a loop over the n rows of x costs
n^2 (and XLA does not fold the zeros away); JAX's own loops add the row in place. A RowAdd's
value is therefore a `RowAdds`, the rows it stands for: an Add of two adds their rows, an Add
into a tensor of the same shape and type adds them in place (`x.at[i].add(g)`, which XLA runs
on the carried buffer: one row's work), and any other use makes the tensor.
"""

import numpy as np

from ...core.stage import is_array_kind


class RowAdds:
    """zeros(shape, dtype) with each (i, g) of `rows` added at row i."""

    __slots__ = ("shape", "dtype", "rows")

    def __init__(self, shape, dtype, rows):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.rows = tuple(rows)

    def made(self, jnp):
        """The tensor itself."""
        return self.into(jnp.zeros(self.shape, self.dtype))

    def into(self, x, at=()):
        """x with the rows added (x of this shape and type); `at`: the rows of x's leading axes this
        stands for (a row that is itself rows added: an entry of a grid read at [i][j])."""
        for i, g in self.rows:
            x = g.into(x, (*at, i)) if type(g) is RowAdds else x.at[(*at, i)].add(g)
        return x


def add(jnp, a, b, kind):
    """a + b where one or both are RowAdds, for a step of `kind` (stage.kind_of): RowAdds where
    both are, the rows added in place where the other is a tensor of the result's shape and type,
    else None (the caller makes them and adds as any Add)."""
    if type(a) is RowAdds and type(b) is RowAdds:
        if a.shape == b.shape and a.dtype == b.dtype:
            return RowAdds(a.shape, a.dtype, a.rows + b.rows)
        return None
    rows, x = (a, b) if type(a) is RowAdds else (b, a)
    return added_into(jnp, rows, x, kind, rows.shape)


def added_into(jnp, rows, x, kind, shape, at=()):
    """The rows added in place into the tensor x (`rows.into(x, at)`), where x and the step's
    `kind` have `shape` and the rows' type; else None."""
    if not is_array_kind(kind) or tuple(kind[3]) != shape or np.dtype(kind[4]) != rows.dtype:
        return None
    x = jnp.asarray(x)
    if x.shape != shape or x.dtype != rows.dtype:
        return None
    return rows.into(x, at)


def grown_carries(steps, outs, inputs, counts, kinds, checks):
    """{checked slot: carry position} for a loop body's carries that grow by rows only: the carry
    out is an Add of the carry in (some of its rows set to finite constants) and rows (RowAdd, or
    Adds of them) of its own shape and type.
    Such a carry is finite on every iteration where it starts finite and each row it gains is
    (rows left alone stay as they were): the loop checks those rows and its first carry, where
    checking the whole carry on every iteration would cost the tensor's size again."""
    nx, nc = counts[0], counts[1]
    made_by = {s[6]: s for s in steps}
    found = {}
    for j in range(nc):
        r, carry_in = outs[j], inputs[1 + nx + j]
        step = made_by.get(r)
        if r not in checks or step is None or step[1] != "Add" or kinds[r] != kinds[carry_in]:
            continue
        a, b = step[2]
        other = b if _from_carry(a, carry_in, made_by) else a if _from_carry(b, carry_in, made_by) else None
        if other is not None and _rows_axis(other, made_by, kinds) is not None:
            found[r] = j
    return found


def swaps_front(axes):
    """Whether a TransposeOp's axes swap the first two and keep the others (vmap's rules move a
    batch behind the rows and back with them: swapped.py)."""
    return axes is not None and len(axes) >= 2 and tuple(axes) == (1, 0, *range(2, len(axes)))


def _swap(step):
    """Whether a step is a TransposeOp that swaps the first two axes."""
    return step[1] == "TransposeOp" and swaps_front((step[4] or {}).get("axes"))


def _from_carry(r, carry_in, made_by):
    """Whether slot r is the carry in, or it with rows set to finite constants (the pass back's
    g[i] = 0 beside a read of g[i]; under vmap, between two swaps): what the carry held but those
    rows, which are finite."""
    swapped = False
    while r != carry_in:
        step = made_by.get(r)
        if step is not None and _swap(step):
            swapped = not swapped
        elif step is None or step[1] != "SetRow" or step[2][2] >= 0 or not np.all(np.isfinite(step[3][2])):
            return False
        r = step[2][0]
    return not swapped


def _rows_axis(r, made_by, kinds):
    """The axis the rows slot r holds were added on into zeros of its kind (a RowAdd, or an Add of
    such, all of them on axis 0 or all swapped to axis 1 under vmap: swapped.py), or None where it
    holds other values."""
    step = made_by.get(r)
    if step is None:
        return None
    if step[1] == "RowAdd":
        return 0
    if _swap(step):
        inner = _rows_axis(step[2][0], made_by, kinds)
        return None if inner is None else 1 - inner
    if step[1] != "Add" or not all(x >= 0 and kinds[x] == kinds[r] for x in step[2]):
        return None
    axes = {_rows_axis(x, made_by, kinds) for x in step[2]}
    return axes.pop() if len(axes) == 1 else None
