"""Gathering rows at positions the program computes: `x[idx]` for an index tensor that is a value
of a staged program (a batch of labels or token ids passed to a jitted step, a minibatch's
shuffled positions), and its transpose, the rows added back at those positions.

An index tensor that is a constant of the recording is a key of reference 6.3's GatherOp
(shape.index), checked once, at staging; a staged one cannot be, so these kernels check each
call's positions themselves (whole numbers within the axis, negative ones counting from the end,
as numpy's), and a staged program then holds for any positions: JAX's gather and scatter-add.
With `batched`, x and idx carry one leading axis of examples (vmap of both): example b's rows
idx[b] of x[b].
"""

import numpy as np

from ..tape import STAGE, Box, nondiff, peek, raw, record
from .core import error, float_type, ndarray, norm, normalize_axis, to_float, type_name
from .compare import order
from .elementwise import where
from .shape import _axis_given, _check_gather, assign_shape_error, broadcast_to, index, index_array, moveaxis, plain_kernel, reshape


def gather(x, idx, axis=0, span=None):
    """gather(x, idx, axis=0): the slices of x at the int-valued positions idx along axis."""
    v = peek(x)
    if type(v) is not ndarray or v.ndim == 0:
        raise error("type", f"gather needs a tensor with at least one axis, got {type_name(x)}")
    _axis_given(axis, "gather")
    ax = normalize_axis(axis, v.ndim, False)
    if staged_index(idx):       # positions the program being staged computes: checked on each run
        return take_at(x, idx, ax)
    i = raw(idx)
    if type(i) is not ndarray:
        if type(i) in (int, float):
            i = np.asarray(to_float(i))     # (an int past float's range: inf, out of range)
        else:
            raise error("type", f"gather needs index values as a tensor, got {type_name(idx)}")
    key = (slice(None),) * ax + (index_array(i, v.shape[ax], ax),)
    _check_gather(v.shape, key)
    return index(x, key, span, op="GatherOp")


def staged_index(s):
    """Whether a subscript is an index tensor computed by the program being staged (not a mask,
    whose count of true entries decides a shape)."""
    while type(s) is Box and s.trace.kind is not STAGE:     # a level recording it first (grad, jvp)
        s = s.v
    if type(s) is not Box:
        return False
    v = peek(s)
    return type(v) is float or (type(v) is ndarray and v.dtype.kind in "fi")


def take_at(x, idx, axis):
    """The slices of x at the positions idx along `axis`, the positions' axes in its place (numpy's
    x[:, idx] and gather(x, idx, axis)): take with that axis moved to the front and back."""
    k = np.ndim(peek(idx))
    return moveaxis(take(moveaxis(x, axis, 0), idx), tuple(range(k, k + axis)), tuple(range(axis)))


def take(x, idx, batched=False, span=None):
    """The rows of tensor x at the whole-number positions idx: shape(idx) + shape(x)[1:]."""
    if type(x) is Box or type(idx) is Box:
        return record("Take", (x, idx), {"batched": True} if batched else None, span)
    return norm(x[_positions(x.shape, idx, batched)])


def take_add(g, idx, shape, batched=False, nonnegative=False, span=None):
    """zeros(shape) with the rows of g added at the positions idx, repeats adding up: take's
    cotangent (JAX's x.at[idx].add(g)); `nonnegative`: a negative position is an error (a
    segment id of segment_sum) rather than counted from the end."""
    if type(g) is Box or type(idx) is Box:
        kw = {"shape": shape}
        if batched:
            kw["batched"] = True
        if nonnegative:
            kw["nonnegative"] = True
        return record("TakeAdd", (g, idx), kw, span)
    out = np.zeros(shape, float_type(g))
    np.add.at(out, _positions(shape, idx, batched, nonnegative), g)
    return out


def _positions(shape, idx, batched, nonnegative=False):
    """numpy's index for the rows idx of a tensor of `shape` (dg's errors for bad positions)."""
    i = np.asarray(idx)
    if i.dtype.kind not in "fi":
        raise error("type", "index tensors must hold whole numbers")
    n = shape[1 if batched else 0]
    who = "segment_sum: " if nonnegative else ""      # segment ids: the builtins' own words
    if i.size and not np.all(np.isfinite(i) & (i == np.floor(i))):
        raise error("type", f"{who}indices must be whole numbers" if who else "index tensors must hold whole numbers")
    if nonnegative and i.size and i.min() < 0:
        raise error("index", "segment_sum: a segment id is negative")
    if i.size and (i.min() < -n or i.max() >= n):
        bad = i[(i < -n) | (i >= n)].flat[0]
        # (the axis is not named: x[:, idx] and x[arange(n), y] take from a moved or joined one)
        raise error("index", f"{who}index {int(bad)} is out of range for an axis of size {n}")
    i = i.astype(np.intp)
    if not batched:
        return i
    return (np.arange(shape[0]).reshape((shape[0],) + (1,) * (i.ndim - 1)), i)


def last_writer(idx, n, batched=False, span=None):
    """For each of n rows, the position among idx's entries (flattened) of the last write to it in
    x[idx] = v, or -1 where none writes it (numpy keeps a repeated position's last write), as
    floats, which `take` reads; with `batched`, per example of idx's leading axis."""
    if type(idx) is Box:        # positions have no derivative: recorded where every operation is staged
        return nondiff("LastWriter", (idx,), {"n": n, "batched": True} if batched else {"n": n}, span)
    at = _positions((len(idx), n) if batched else (n,), idx, batched)
    if not batched:
        src = np.full(n, -1.0)
        src[at.ravel()] = np.arange(at.size, dtype=float)      # numpy's assignment: the last write stays
        return src
    rows, i = at
    i = i.reshape(len(i), -1)
    src = np.full((len(i), n), -1.0)
    src[rows.reshape(-1, 1), i] = np.arange(i.shape[1], dtype=float)
    return src


def put(x, idx, v, axis=0):
    """x with its rows (along `axis`: x[:, idx] = v for 1) at positions idx the program being
    staged computes set to v: numpy's x[idx] = v (of a position written twice, the last write),
    as a gather of v's rows, each row of the result v's or x's exactly (of v's and x's promoted
    type). v broadcasts to x[idx]'s shape (checked here: a shape is known when staging)."""
    full, k = np.shape(peek(x)), np.shape(peek(idx))
    target = full[:axis] + k + full[axis + 1:]
    try:
        np.broadcast_shapes(np.shape(peek(v)), target)
    except ValueError:
        raise assign_shape_error(np.shape(peek(v)), target) from None
    if axis:        # the axis in front, and idx's axes of v with it
        front = tuple(range(axis, axis + len(k)))
        moved = put(moveaxis(x, axis, 0), idx, moveaxis(broadcast_to(v, target), front, tuple(range(len(k)))))
        return moveaxis(moved, 0, axis)
    rest, m = full[1:], int(np.prod(k))
    src = last_writer(idx, full[0])
    hit = order(">=", src, 0.0)
    rows = reshape(broadcast_to(v, target), (m,) + rest)
    got = take(rows, where(hit, src, 0.0))
    return where(reshape(hit, full[:1] + (1,) * len(rest)), got, x)


take_plain = plain_kernel(take)
take_add_plain = plain_kernel(take_add)
last_writer_plain = plain_kernel(last_writer)
