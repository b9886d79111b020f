"""Ordering: argmax, argmin, sort, argsort (numpy's semantics).

Positions come back as whole numbers: an int for a full reduction, else a float tensor of
them, which indexes and gathers as reference section 4 says index tensors do. Only sort has a
derivative: each entry's gradient goes back to the place it was sorted from.
"""

import numpy as np

from ..tape import nondiff, peek, record
from .core import Box, FLOAT, error, float_type, fmt_shape, normalize_axis, to_float, to_tensor
from .shape import reshape


def _tensor(x, name):
    """A tensor argument with at least one element."""
    v = to_tensor(x, f"a tensor for {name}")
    if v.size == 0:
        raise error("value", f"{name} of an empty tensor (shape {fmt_shape(v.shape)})")
    return v


def argmax(x, axis=None, span=None):
    """argmax(x, axis=none): the position of the largest entry (the first, on ties)."""
    return _position(x, axis, "ArgMax", "argmax", np.argmax)


def argmin(x, axis=None, span=None):
    """argmin(x, axis=none): the position of the smallest entry (the first, on ties)."""
    return _position(x, axis, "ArgMin", "argmin", np.argmin)


def _position(x, axis, op, name, find):
    """argmax/argmin: an int over the whole tensor, index floats along an axis."""
    if type(x) is Box:
        return nondiff(op, (x,), {"axis": axis})
    v = _tensor(x, name)
    if axis is None:
        return int(find(v))
    return find(v, axis=normalize_axis(axis, v.ndim, False)).astype(FLOAT)


def _flattened(x, name):
    """x's entries in one axis: what numpy's sort and argsort order for axis=None."""
    return reshape(x, (to_tensor(peek(x), f"a tensor for {name}").size,))


def argsort(x, axis=-1, span=None):
    """argsort(x, axis=-1): the positions that sort x along an axis (a stable sort)."""
    if axis is None:
        return argsort(_flattened(x, "argsort"), -1, span)
    if type(x) is Box:
        return nondiff("ArgSort", (x,), {"axis": axis})
    v = to_tensor(x, "a tensor for argsort")
    if v.ndim == 0:
        raise error("shape", "argsort needs a tensor with at least one axis")
    return np.argsort(v, axis=normalize_axis(axis, v.ndim, False), kind="stable").astype(FLOAT)


def sort(x, axis=-1, span=None):
    """sort(x, axis=-1): x sorted along an axis (a stable sort)."""
    if axis is None:
        return sort(_flattened(x, "sort"), -1, span)
    if type(x) is Box:
        return record("Sort", (x,), {"axis": axis}, span)
    v = to_tensor(x, "a tensor for sort")
    if v.ndim == 0:
        raise error("shape", "sort needs a tensor with at least one axis")
    return np.sort(v, axis=normalize_axis(axis, v.ndim, False), kind="stable")


def take_along(x, idx, axis, span=None):
    """x's entries at the positions idx along axis (numpy's take_along_axis): Sort's tangent."""
    if type(x) is Box or type(idx) is Box:
        return record("TakeAlong", (x, idx), {"axis": axis}, span)
    return np.take_along_axis(to_tensor(x), np.asarray(idx).astype(np.intp), axis=axis)


def put_along(g, idx, axis, shape, span=None):
    """zeros(shape) with g added at the positions idx along axis: the transpose of take_along."""
    if type(g) is Box or type(idx) is Box:
        return record("PutAlong", (g, idx), {"axis": axis, "shape": shape}, span)
    g = to_tensor(g)
    out = np.zeros(shape, float_type(g))
    i = np.asarray(idx).astype(np.intp)
    grids = list(np.indices(i.shape, sparse=True))
    grids[axis % len(shape)] = i
    np.add.at(out, tuple(grids), g)
    return out


def searchsorted(a, v, side="left", span=None):
    """searchsorted(a, v, side="left"): where each entry of v would go in the sorted vector a to
    keep it sorted (numpy's: before equal entries, or after them with side "right"; nan after
    every number): an int for a number v, else a float tensor of v's shape."""
    shape = np.shape(peek(a))       # checked before recording: a staged call checks it too
    if len(shape) != 1:
        raise error("shape", f"searchsorted needs a sorted vector, got a tensor of shape {fmt_shape(shape)}")
    if type(a) is Box or type(v) is Box:
        return nondiff("SearchSorted", (a, v), {"side": side})
    av = to_tensor(a, "a sorted vector for searchsorted")
    if type(v) in (int, float, bool):
        return int(np.searchsorted(av, to_float(v), side=side))
    return np.searchsorted(av, to_tensor(v, "values for searchsorted"), side=side).astype(FLOAT)
