"""Tensors with their first two axes swapped, kept as they were until something else reads them
(lower.py).

vmap's rules for a loop's row operations (Row, SetRow: dsl/core/primitives/shape.py) move the
batch axis behind the rows, read or write row i, and move the batch back in front: a transpose
of the whole batch of states on each side of every row a loop's body reads or writes (and a
loop over a matrix's columns, `x[:, j]`, reads and writes row j of it with that axis moved to
the front, the same way). XLA
copies the tensor for each of those transposes, once per iteration (an 8,000-step trajectory
batched over 2 examples: 58 ms a call, where reading and writing along axis 1 takes 0.3 ms).
A TransposeOp that swaps the first two axes gives a `Swapped`, the tensor as it was; a row of it
is read or written along the tensor's axis 1; a transpose that swaps them back gives the tensor;
any other use makes the transposed tensor.
"""

from .row_adds import RowAdds, added_into
from .rules import storing


class Swapped:
    """x with its first two axes swapped: a tensor, or rows added into zeros (RowAdds, the
    cotangent of a row read under vmap)."""

    __slots__ = ("x",)

    def __init__(self, x):
        self.x = x

    def made(self, jnp):
        """The transposed tensor itself."""
        x = self.x.made(jnp) if type(self.x) is RowAdds else self.x
        return jnp.swapaxes(x, 0, 1)

    def rows(self, v):
        """The entries of v (a tensor of this one's shape) where this holds rows added (a carry's
        check reads those): at each row's index on v's axis 1."""
        return [v[:, i] for i, _ in self.x.rows]


def _at(L, s, i):
    """Row i of a Swapped as an index of its tensor's axis 1, which must be in range (numpy's
    kernel raises otherwise); a negative one counts from the end, as numpy's."""
    n = L.np.shape(s.x)[1]
    L.require((i >= -n) & (i < n))
    return L.np.where(i < 0, i + n, i)


def row(L, s, i):
    """s[i]: the tensor's entries at i on axis 1."""
    return L.lax.dynamic_index_in_dim(s.x, _at(L, s, i), axis=1, keepdims=False)


def set_row(L, s, i, v):
    """s with row i set to v: the tensor with its entries at i on axis 1 set, still swapped."""
    jnp = L.np
    x = storing(L, s.x, v)
    shape = x.shape[:1] + x.shape[2:]
    v = jnp.broadcast_to(jnp.asarray(v, x.dtype), shape)
    return Swapped(L.lax.dynamic_update_index_in_dim(x, v, _at(L, s, i), axis=1))


def add(jnp, a, b, kind):
    """a + b where one is a Swapped of rows added (RowAdds, each row a tensor) and the other a
    tensor of the result's shape and type (`kind`: stage.kind_of): the rows added in place at
    their index on the tensor's axis 1, as RowAdds adds them on axis 0; else None (the caller
    makes them and adds as any Add)."""
    s, x = (a, b) if type(a) is Swapped else (b, a)
    rows = s.x
    if type(rows) is not RowAdds or type(x) in (Swapped, RowAdds) or any(type(g) is RowAdds for _, g in rows.rows):
        return None
    # row i of the rows is the tensor's entries at i on axis 1: x[:, i]
    return added_into(jnp, rows, x, kind, (rows.shape[1], rows.shape[0], *rows.shape[2:]), (slice(None),))


RULES = {"Row": row, "SetRow": set_row}
