"""numpy's array functions that dg composes of its own operations (so each is differentiable
wherever its parts are, under every transformation): flip, roll, diff, cumprod, meshgrid, tile,
repeat, take_along_axis, scatter_add, segment_sum, top_k, and the tests isnan, isfinite and
allclose; and searchsorted and digitize, positions, which the SearchSorted primitive finds."""

import numpy as np

from ...base.suggest import tuple_hint
from ...core import ops
from ...core.ops.core import check_size, fmt_shape, normalize_axis, to_float
from ...core.tape import concrete, peek, raw
from ...core.values import brief, type_name
from ...errors import DgError, error


def _axis(axis, nd, who, several=False):
    """An axis given as an int (`several`: or a tuple of ints, or none), checked against the number
    of axes (as every builtin's axis), an error in the words of `who`."""
    if not several and raw(axis) is None:       # (a caller that takes none for "every axis" asks first)
        raise error("type", f"{who}: an axis must be an int, got none")
    try:
        return normalize_axis(raw(axis), nd, several)
    except DgError as exc:
        raise error(exc.kind, f"{who}: {exc.message}") from None


def _along(axis, part):
    """An index key taking `part` (a slice) along one axis and everything along the others."""
    return (slice(None),) * axis + (part,)


def _tensor_shape(x, who):
    """The shape of a tensor argument (a number is a tensor of shape ())."""
    v = peek(x)
    if type(v) not in (np.ndarray, float, int, bool):
        raise error("type", f"{who} needs a tensor, got {type_name(v)}",
                    hint="tensor(t) makes a tensor of a tuple of numbers" if type(v) is tuple else None)
    return np.shape(v)


def flip(x, axis=None):
    """flip(x, axis=none): x with the order of its entries reversed along an axis or a tuple of axes
    (every axis: none)."""
    shape = _tensor_shape(x, "flip")
    axes = range(len(shape)) if raw(axis) is None else _axes(axis, len(shape), "flip")
    for a in axes:
        x = ops.index(x, _along(a, slice(None, None, -1)))
    return x


def _axes(axis, nd, who):
    """An int or a tuple of ints as a tuple of axes, checked as `_axis` checks one."""
    axis = raw(axis)
    return tuple(_axis(a, nd, who) for a in axis) if type(axis) is tuple else (_axis(axis, nd, who),)


def roll(x, shift, axis=None):
    """roll(x, shift, axis=none): entries moved shift places along an axis, wrapping around (numpy's;
    with axis none, of the flattened tensor, shaped back; shift and axis may be tuples, paired as
    numpy broadcasts them, and the shifts of one axis add)."""
    shape = _tensor_shape(x, "roll")
    shift = concrete(shift)     # a tuple's staged ints too (jit's): guarded, as an int shift is
    shifts = shift if type(shift) is tuple else (shift,)
    if not shifts or any(type(s) is not int for s in shifts):
        raise error("type", f"roll: shift must be an int or a tuple of ints, got {brief(shift)}")
    if raw(axis) is None:
        return ops.reshape(roll(ops.reshape(x, (int(np.prod(shape)),)), shift, 0), shape)
    axes = _axes(axis, len(shape), "roll")
    try:
        pairs = np.broadcast(np.array(shifts, dtype=object), np.array(axes))     # as numpy pairs them
    except ValueError:
        raise error("shape", f"roll: {len(shifts)} shifts for {len(axes)} axes: give one shift per axis") from None
    total = {}
    for s, a in pairs:
        total[int(a)] = total.get(int(a), 0) + s
    for a, s in total.items():
        x = _roll_one(x, s, a, shape[a])
    return x


def _roll_one(x, shift, a, n):
    """x rolled `shift` places along axis `a` of length n: two slices put together the other way round."""
    if n == 0 or shift % n == 0:
        return x
    k = shift % n
    return ops.cat((ops.index(x, _along(a, slice(n - k, None))),
                    ops.index(x, _along(a, slice(None, n - k)))), a)


def diff(x, n=1, axis=-1):
    """diff(x, n=1, axis=-1): differences of neighbours along an axis, n times (numpy's)."""
    shape = _tensor_shape(x, "diff")
    n = raw(n)
    if type(n) is not int or n < 0:
        raise error("value", f"diff: n must be an int of at least 0, got {brief(n)}")
    if not shape:
        raise error("shape", "diff needs a tensor with at least one axis, got a number")
    a = _axis(axis, len(shape), "diff")
    for _ in range(n):
        x = ops.sub(ops.index(x, _along(a, slice(1, None))),
                    ops.index(x, _along(a, slice(None, -1))))
    return x


def cumprod(x, axis=None):
    """cumprod(x, axis=none): running products along an axis (none: of the flattened tensor)."""
    x = ops.sequence_operand(x)
    shape = _tensor_shape(x, "cumprod")
    if raw(axis) is None:
        return ops.cumprod(ops.reshape(x, (int(np.prod(shape)),)), 0)
    return ops.cumprod(x, _axis(axis, len(shape), "cumprod"))


def meshgrid(*xs, indexing="xy"):
    """meshgrid(*xs, indexing="xy"): coordinate tensors of the grid the vectors xs span (numpy's)."""
    indexing = raw(indexing)
    if type(indexing) is not str or indexing not in ("xy", "ij"):
        raise error("value", f"meshgrid: indexing must be \"xy\" or \"ij\", got {brief(indexing)}")
    sizes = []
    for x in xs:
        s = _tensor_shape(x, "meshgrid")
        if len(s) != 1:
            raise error("shape", f"meshgrid needs vectors, got a tensor of shape {fmt_shape(s)}")
        sizes.append(s[0])
    order = list(range(len(xs)))
    if indexing == "xy" and len(xs) >= 2:
        order[0], order[1] = 1, 0          # the first vector runs along the columns
    shape = tuple(sizes[i] for i in order)
    out = []
    for i, x in enumerate(xs):
        at = order.index(i)
        view = tuple(sizes[i] if k == at else 1 for k in range(len(xs)))
        out.append(ops.broadcast_to(ops.reshape(x, view), shape))
    return tuple(out)


def _numbers(x, who):
    """A tensor or number argument, refused in dg's words otherwise (a map, a string, a tuple)."""
    v = peek(x)
    if type(v) not in (np.ndarray, float, int, bool):
        raise error("type", f"{who} needs a number or a tensor, got {type_name(v)}")
    return x


def isnan(x):
    """isnan(x): which entries are nan (a bool tensor; a bool for a number)."""
    x = _numbers(x, "isnan")
    return ops.ne(x, x)


def isfinite(x):
    """isfinite(x): which entries are finite (a bool tensor; a bool for a number)."""
    x = _numbers(x, "isfinite")
    return True if type(peek(x)) is int else ops.isfinite(x)      # an int, however long, is finite


def _float_of(v):
    """A number (an int past float's range as an infinity) or a tensor, for numpy's float math."""
    return to_float(v) if type(v) is int else v


def allclose(a, b, rtol=1e-05, atol=1e-08):
    """allclose(a, b, rtol=1e-05, atol=1e-08): whether every |a - b| <= atol + rtol |b| (numpy's)."""
    av, bv = (np.asarray(_float_of(raw(_numbers(v, "allclose"))), dtype=float) for v in (a, b))
    tolerances = [raw(rtol), raw(atol)]
    if any(type(t) not in (float, int) or isinstance(t, bool) for t in tolerances):
        raise error("type", "allclose: rtol and atol must be numbers")
    try:
        return bool(np.allclose(av, bv, rtol=to_float(tolerances[0]), atol=to_float(tolerances[1])))
    except ValueError:
        raise error("shape", f"allclose: shapes {fmt_shape(av.shape)} and {fmt_shape(bv.shape)} do not "
                             f"broadcast") from None


def _int_tuple(v, who, name):
    """An int or a tuple of non-negative ints."""
    v = concrete(v)
    items = v if type(v) is tuple else (v,)
    if not items or any(type(i) is not int or i < 0 for i in items):
        raise error("value", f"{who}: {name} must be a non-negative int or a tuple of them, got {brief(v)}",
                    hint=tuple_hint(v))
    return items


def tile(x, reps):
    """tile(x, reps): x repeated reps times along each axis (numpy's: reps an int or a tuple; the
    shorter of the two is padded with leading ones)."""
    shape = _tensor_shape(x, "tile")
    reps = _int_tuple(reps, "tile", "reps")
    nd = max(len(shape), len(reps))
    shape = (1,) * (nd - len(shape)) + tuple(shape)
    reps = (1,) * (nd - len(reps)) + reps
    check_size(tuple(r * n for r, n in zip(reps, shape)), "tile result")
    spread = tuple(d for pair in ((1, n) for n in shape) for d in pair)
    wide = tuple(d for pair in zip(reps, shape) for d in pair)
    y = ops.broadcast_to(ops.reshape(x, spread), wide)
    return ops.reshape(y, tuple(r * n for r, n in zip(reps, shape)))


def repeat(x, repeats, axis=None):
    """repeat(x, repeats, axis=none): each entry repeated along an axis (of the flattened x: none),
    repeats an int or one int per entry (numpy's)."""
    shape = _tensor_shape(x, "repeat")
    if raw(axis) is None:
        x, shape, a = ops.reshape(x, (int(np.prod(shape)),)), (int(np.prod(shape)),), 0
    else:
        a = _axis(axis, len(shape), "repeat")
    r = raw(repeats)
    if type(r) is int and r >= 0:
        check_size(shape[:a] + (shape[a] * r,) + shape[a + 1:], "repeat result")
        spread = shape[:a + 1] + (1,) + shape[a + 1:]
        wide = shape[:a + 1] + (r,) + shape[a + 1:]
        y = ops.broadcast_to(ops.reshape(x, spread), wide)
        return ops.reshape(y, shape[:a] + (shape[a] * r,) + shape[a + 1:])
    counts = np.asarray(r if type(r) is np.ndarray else _int_tuple(r, "repeat", "repeats"), dtype=float)
    if counts.shape != (shape[a],) or np.any(counts < 0) or np.any(counts != np.floor(counts)):
        raise error("value", f"repeat: repeats must be an int or {shape[a]} non-negative ints (one per entry)")
    check_size(shape[:a] + (int(counts.sum()),) + shape[a + 1:], "repeat result")
    return ops.gather(x, np.repeat(np.arange(shape[a], dtype=float), counts.astype(int)), a)


def _indices(idx, size, who):
    """Whole-number indices in [-size, size), as non-negative floats, or dg's index error."""
    v = concrete(idx)
    if type(v) is tuple and all(type(i) in (int, float) for i in v):
        v = tuple(to_float(i) for i in v)       # (an int past float's range: inf, out of range below)
    elif type(v) not in (np.ndarray, int, float) or isinstance(v, bool):
        raise error("type", f"{who}: indices must be a tensor of whole numbers, got {type_name(v)}")
    v = np.asarray(to_float(v) if type(v) is int else v, dtype=float)
    if v.size and not np.all(v == np.floor(v)):
        raise error("type", f"{who}: indices must be whole numbers")
    if v.size and (v.min() < -size or v.max() >= size):
        bad = v[(v < -size) | (v >= size)].flat[0]
        raise error("index", f"{who}: index {int(bad) if np.isfinite(bad) else float(bad)} is out of range for an "
                             f"axis of size {size}")
    return np.where(v < 0, v + size, v)


def take_along_axis(x, indices, axis):
    """take_along_axis(x, indices, axis): x's entries at the positions indices along axis (numpy's:
    indices has x's number of axes and broadcasts against it elsewhere; axis none: x flattened)."""
    shape = _tensor_shape(x, "take_along_axis")
    if raw(axis) is None:       # numpy's: x's entries flattened, indices one axis of positions in them
        shape, axis = (int(np.prod(shape)),), 0
        x = ops.reshape(x, shape)
    a = _axis(axis, len(shape), "take_along_axis")
    idx = _indices(indices, shape[a], "take_along_axis")
    if idx.ndim != len(shape):
        raise error("shape", f"take_along_axis: indices need as many axes as x ({len(shape)}), got shape "
                             f"{fmt_shape(idx.shape)}")
    try:
        full = np.broadcast_shapes(shape[:a] + (idx.shape[a],) + shape[a + 1:], idx.shape)
    except ValueError:
        raise error("shape", f"take_along_axis: indices of shape {fmt_shape(idx.shape)} do not broadcast "
                             f"against x of shape {fmt_shape(shape)}") from None
    x = ops.broadcast_to(x, full[:a] + (shape[a],) + full[a + 1:])
    return ops.take_along(x, np.broadcast_to(idx, full), a)


def _values_for_rows(values, count, shape, who):
    """The shape of `values`, one row of a tensor of `shape` for each of `count` indices, or dg's
    shape error."""
    vshape = _tensor_shape(values, who)
    if vshape != (count,) + tuple(shape[1:]):
        raise error("shape", f"{who}: values of shape {fmt_shape(vshape)} for {count} indices into "
                             f"rows of shape {fmt_shape(shape[1:])} (they need shape "
                             f"{fmt_shape((count,) + tuple(shape[1:]))})")
    return vshape


def _rows_added(values, idx, shape, who):
    """zeros(shape) with the rows of values added at rows idx (repeats accumulate)."""
    vshape = _values_for_rows(values, idx.shape[0], shape, who)
    spread = np.broadcast_to(idx.reshape(idx.shape + (1,) * (len(shape) - 1)), vshape)
    return ops.put_along(values, spread, 0, tuple(shape))


def _broadcast_values(values, count, shape):
    """values broadcast to one row of a tensor of `shape` for each of `count` indices, where they
    broadcast to it (a number, one row for every index: numpy's add.at and JAX's .at[].add take
    them); as they are otherwise (the check that follows says what they need)."""
    if type(values) is int:     # a number added to each row: a float (one past float's range is inf)
        values = to_float(values)
    vshape = np.shape(peek(values))
    target = (count,) + tuple(shape[1:])
    if type(peek(values)) not in (np.ndarray, float, int) or vshape == target:
        return values
    try:
        fits = np.broadcast_shapes(vshape, target) == target
    except ValueError:
        fits = False
    return ops.broadcast_to(values, target) if fits else values


def scatter_add(x, indices, values):
    """scatter_add(x, indices, values): x with each row of values added to row indices[i] of x,
    repeated indices adding up (JAX's x.at[indices].add(values), numpy's add.at; values broadcast
    to the rows indexed, as theirs do)."""
    shape = _tensor_shape(x, "scatter_add")
    if not shape:
        raise error("shape", "scatter_add needs a tensor with at least one axis")
    count = np.shape(peek(indices))[0] if np.ndim(peek(indices)) == 1 else None
    if count is not None:
        values = _broadcast_values(values, count, shape)
    if ops.staged_index(indices) and count is not None:
        # positions the program being staged computes (a graph's edges passed in): checked on each run
        _values_for_rows(values, count, shape, "scatter_add")
        return ops.add(x, ops.take_add(values, indices, tuple(shape)))
    idx = _indices(indices, shape[0], "scatter_add")
    if idx.ndim != 1:
        raise error("shape", f"scatter_add: indices must be a vector, got shape {fmt_shape(idx.shape)}")
    return ops.add(x, _rows_added(values, idx, shape, "scatter_add"))


def segment_sum(data, segment_ids, num_segments):
    """segment_sum(data, segment_ids, num_segments): row s the sum of the rows of data whose
    segment_ids are s (JAX's segment_sum; ids in [0, num_segments))."""
    shape = _tensor_shape(data, "segment_sum")
    n = raw(num_segments)
    if type(n) is not int or n < 0:
        raise error("value", f"segment_sum: num_segments must be a non-negative int, got {brief(n)}")
    check_size((n,) + tuple(shape[1:]), "segment_sum result")
    if ops.staged_index(segment_ids) and np.ndim(peek(segment_ids)) == 1 and shape[:1] == np.shape(peek(segment_ids)):
        # ids the program being staged computes (a graph's edges passed in): checked on each run
        return ops.take_add(data, segment_ids, (n,) + tuple(shape[1:]), nonnegative=True)
    idx = _indices(segment_ids, n, "segment_sum")
    if idx.size and np.any(np.asarray(raw(segment_ids), dtype=float) < 0):
        raise error("index", "segment_sum: a segment id is negative")
    if idx.ndim != 1 or not shape:
        raise error("shape", "segment_sum: segment_ids must be a vector, one id per row of data")
    return _rows_added(data, idx, (n,) + tuple(shape[1:]), "segment_sum")


def top_k(x, k):
    """top_k(x, k): (values, indices) of the k largest entries along the last axis, largest first,
    the lower index first on ties (JAX's lax.top_k)."""
    shape = _tensor_shape(x, "top_k")
    k = raw(k)
    if not shape or type(k) is not int or not 0 <= k <= shape[-1]:
        raise error("value", f"top_k: k must be an int in [0, {shape[-1] if shape else 0}] for a tensor of shape "
                             f"{fmt_shape(shape)}, got {brief(k)}")
    idx = ops.index(ops.argsort(ops.neg(x), -1), (Ellipsis, slice(0, k)))
    return ops.take_along(x, idx, -1), idx


def searchsorted(a, v, side="left"):
    """searchsorted(a, v, side="left"): where each entry of v would go in the sorted vector a to keep
    it sorted: before the entries equal to it ("left") or after them ("right"), as numpy's."""
    _tensor_shape(a, "searchsorted")
    _tensor_shape(v, "searchsorted")
    s = raw(side)
    if type(s) is not str or s not in ("left", "right"):
        raise error("value", f"searchsorted: side must be \"left\" or \"right\", got {brief(s)}")
    return ops.searchsorted(a, v, s)


def flag(v, what):
    """A bool option's value (`what` names it in the error: "svd: full_matrices"); dg's type error
    for anything else, 1 and 0 included, as numpy's keyword flags are true or false."""
    v = raw(v)
    if type(v) is not bool:
        raise error("type", f"{what} must be true or false, got {type_name(v)}")
    return v


def digitize(x, bins, right=False):
    """digitize(x, bins, right=false): the index of the bin of each entry of x between the
    increasing edges bins (numpy's): i where bins[i-1] <= x < bins[i], 0 below the first edge,
    len(bins) from the last on; with right, bins[i-1] < x <= bins[i]."""
    return searchsorted(bins, x, "left" if flag(right, "digitize: right") else "right")


BUILTINS = {"flip": flip, "roll": roll, "diff": diff, "cumprod": cumprod, "meshgrid": meshgrid,
            "isnan": isnan, "isfinite": isfinite, "allclose": allclose, "tile": tile, "repeat": repeat,
            "take_along_axis": take_along_axis, "scatter_add": scatter_add, "segment_sum": segment_sum,
            "top_k": top_k, "searchsorted": searchsorted, "digitize": digitize}
