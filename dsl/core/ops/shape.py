"""Shape primitives: reshape, transpose, cat, stack, indexing, gather, and the
broadcasting helpers the gradient rules use (broadcast_to, index_add)."""

import math

import numpy as np

from ...errors import DgError
from ..tape import REVERSE, record
from .core import (Box, FLOAT, MAX_AXES, a_type_name, brief_int, check_shape_arg, check_size, error,
                   float_type, fmt_shape, ndarray, norm, normalize_axis, peek, raw, to_tensor, type_name)
from .slots import unpack

# ---------------------------------------------------------------- reshape / transpose
def reshape(x, shape, span=None):
    """reshape(x, shape); one entry of shape may be -1."""
    shape = check_shape_arg(shape)
    if type(x) is Box:
        return record("Reshape", (x,), {"shape": shape}, span)
    v = _mask_or_tensor(x, "a tensor to reshape")
    if shape.count(-1) > 1 or any(s < -1 for s in shape):
        raise error("value", f"reshape takes at most one -1 and no other negative size, got {shape}")
    known = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 or v.size % known:
            raise error("shape", f"cannot reshape a tensor of shape {fmt_shape(v.shape)} "
                                 f"({v.size} elements) into {fmt_shape(shape)}")
    elif known != v.size:
        raise error("shape", f"cannot reshape a tensor of shape {fmt_shape(v.shape)} "
                             f"({v.size} elements) into {fmt_shape(shape)}")
    return v.reshape(shape)


def _mask_or_tensor(x, what):
    """A tensor argument of a shape operation: a bool tensor stays bool (a mask stays a mask), as in numpy."""
    if type(x) is ndarray and x.dtype.kind == "b":
        return x
    return to_tensor(x, what)


def transpose(x, axes=None, span=None):
    """transpose(x) reverses the axes; transpose(x, axes) permutes them."""
    if axes is not None:
        axes = check_shape_arg(axes, "permutation of axes")
    if type(x) is Box:
        return record("TransposeOp", (x,), {"axes": axes}, span)
    v = _mask_or_tensor(x, "a tensor to transpose")
    if axes is not None:
        axes = tuple(a + v.ndim if a < 0 else a for a in axes)
        if sorted(axes) != list(range(v.ndim)):
            raise error("value", f"transpose needs a permutation of the {v.ndim} axes of a tensor of "
                                 f"shape {fmt_shape(v.shape)}, got {axes}")
    return v.transpose(axes)


def moveaxis(x, source, destination):
    """x with the axes at source (an int or a tuple of non-negative ints) moved to the positions
    destination, the others kept in order (numpy's moveaxis); x itself where nothing moves."""
    src = (source,) if type(source) is int else tuple(source)
    dst = (destination,) if type(destination) is int else tuple(destination)
    order = [a for a in range(np.ndim(peek(x))) if a not in src]
    for d, a in sorted(zip(dst, src)):
        order.insert(d, a)
    return x if order == sorted(order) else transpose(x, tuple(order))


def swap_last(x):
    """Swap the last two axes (the transpose inside a batched matmul's rule)."""
    nd = peek(x).ndim
    axes = tuple(range(nd - 2)) + (nd - 1, nd - 2)
    return transpose(x, axes)


# ---------------------------------------------------------------- cat / stack
def _tensors(items, name):
    """The elements of a cat/stack argument as a list."""
    boxed, items = items, peek(items)
    if type(items) is ndarray:
        if items.ndim == 0 or items.shape[0] == 0:
            raise error("value", f"{name} needs at least one tensor, got a tensor of shape {fmt_shape(items.shape)}")
        if type(boxed) is Box:      # the rows of a recorded tensor, read on the tape
            return [index(boxed, (i,)) for i in range(items.shape[0])]
        return list(items)
    if type(items) is not tuple:
        raise error("type", f"{name} takes a tuple of tensors, got {type_name(items)}")
    if not items:
        raise error("value", f"{name} needs at least one tensor")
    if type(boxed) is Box:          # a recorded tuple (a differentiated argument): read its elements
        return list(unpack(boxed))
    return list(items)


def _axis_given(axis, name):
    """cat, stack and gather work along one axis: none is not one; a tensor there is the second
    of the tensors to join, given apart (numpy's concatenate takes them as one sequence too)."""
    if axis is None:
        raise error("type", f"{name} needs an int axis, got none")
    if type(peek(axis)) is ndarray and name in ("cat", "stack"):
        raise error("type", f"{name}'s second argument is the axis, got a tensor",
                    hint=f"{name} takes the tensors as one tuple: {name}((a, b))")


def cat(tensors, axis=0, span=None):
    """cat((a, b, ...), axis=0): join tensors along an existing axis."""
    items = _tensors(tensors, "cat")
    _axis_given(axis, "cat")
    if any(type(t) is Box for t in items):
        return record("CatOp", tuple(items), {"axis": axis}, span)
    return _cat(*items, axis=axis)


def _cat(*items, axis=0):
    """cat on values unboxed at one level (they may be boxed at an outer one), with shape checks."""
    if any(type(t) is Box for t in items):
        return record("CatOp", items, {"axis": axis})
    vals = [to_tensor(t, "tensors to cat") for t in items]
    nd = vals[0].ndim
    if nd == 0:
        raise error("shape", "cat needs tensors with at least one axis (use stack for numbers)")
    ax = normalize_axis(axis, nd, False)
    for v in vals[1:]:
        if v.ndim != nd or v.shape[:ax] + v.shape[ax + 1:] != vals[0].shape[:ax] + vals[0].shape[ax + 1:]:
            raise error("shape", f"cannot cat tensors of shapes "
                                 f"{', '.join(fmt_shape(w.shape) for w in vals)} along axis {axis}")
    shape = list(vals[0].shape)
    shape[ax] = sum(v.shape[ax] for v in vals)
    check_size(tuple(shape), "cat result")
    return _keep_bool(items, np.concatenate(vals, axis=ax))


def stack(tensors, axis=0, span=None):
    """stack((a, b, ...), axis=0): join numbers or same-shape tensors along a new axis."""
    items = _tensors(tensors, "stack")
    _axis_given(axis, "stack")
    if any(type(t) is Box for t in items):
        return record("Stack", tuple(items), {"axis": axis}, span)
    return _stack(*items, axis=axis)


def _stack(*items, axis=0):
    """stack on values unboxed at one level (they may be boxed at an outer one), with shape checks."""
    if any(type(t) is Box for t in items):
        return record("Stack", items, {"axis": axis})
    vals = [to_tensor(t, "numbers or tensors to stack") for t in items]
    shape = vals[0].shape
    for v in vals[1:]:
        if v.shape != shape:
            raise error("shape", f"cannot stack tensors of different shapes "
                                 f"{fmt_shape(shape)} and {fmt_shape(v.shape)}")
    if len(shape) >= MAX_AXES:
        raise error("limit", f"a tensor may have at most {MAX_AXES} axes")
    ax = normalize_axis(axis, len(shape) + 1, False)
    check_size((len(vals),) + shape)
    return _keep_bool(items, np.stack(vals, axis=ax))


def _keep_bool(items, out):
    """Joining only bools (masks) gives a bool tensor, as numpy does; any number makes it float."""
    if all(type(t) is bool or (type(t) is ndarray and t.dtype.kind == "b") for t in items):
        return out.astype(bool)
    return out


# ---------------------------------------------------------------- broadcasting
def broadcast_to(x, shape, span=None):
    """x broadcast to `shape` (used by the rules of reductions)."""
    if type(x) is Box:
        return record("BroadcastTo", (x,), {"shape": shape}, span)
    if np.shape(x) == shape:
        return x
    return np.broadcast_to(x, shape)


# ---------------------------------------------------------------- indexing
def make_key(shape, subs):
    """Check dg subscripts against a tensor shape and build a numpy index tuple (`none` adds an
    axis of length 1 there, as numpy's None and newaxis do; `...` stands for every axis the other
    subscripts leave)."""
    subs = _expand_ellipsis(shape, subs)
    key, axis = [], 0
    n_axes = sum(1 for s in subs if s is not None and not (type(s) is ndarray and s.dtype.kind == "b")) + sum(
        s.ndim for s in subs if type(s) is ndarray and s.dtype.kind == "b")
    if n_axes > len(shape):
        masks = [s for s in subs if type(s) is ndarray and s.dtype.kind == "b"]
        if masks:   # "too many indices (1)" misleads when one mask covers several axes
            raise error("shape", f"a bool mask of shape {fmt_shape(masks[0].shape)} does not fit "
                                 f"a tensor of shape {fmt_shape(shape)}")
        raise error("index", f"too many indices ({len(subs)}) for a tensor of shape {fmt_shape(shape)}")
    for s in subs:
        s = raw(s)
        t = type(s)
        if s is None:
            key.append(None)
        elif t is slice:
            key.append(s)
            axis += 1
        elif t is int or (t is float and s.is_integer()):
            i, size = int(s), shape[axis]
            if not -size <= i < size:
                raise error("index", f"index {brief_int(i)} is out of range for axis {axis} with size {size}")
            key.append(i)
            axis += 1
        elif t is ndarray and s.dtype.kind == "b":
            want = shape[axis:axis + s.ndim]
            if s.shape != want:
                raise error("shape", f"a bool mask of shape {fmt_shape(s.shape)} does not match "
                                     f"axes of shape {fmt_shape(want)}")
            key.append(s)
            axis += s.ndim
        elif t is ndarray:
            key.append(index_array(s, shape[axis], axis))
            axis += 1
        elif t is float:
            raise error("type", f"an index must be a whole number, got {s!r}")
        else:
            raise error("type", f"cannot index a tensor with {type_name(s)}")
    arrays = [k for k in key if type(k) is ndarray]
    if arrays and any(k is None for k in key):
        raise error("index", "none (a new axis) cannot be combined with index tensors or masks in one "
                             "subscript", hint="index first, then add the axis: x[idx][:, none]")
    if len(arrays) > 1 or (arrays and arrays[0].dtype.kind != "b"):
        _check_gather(shape, key)
    return tuple(key)


def _expand_ellipsis(shape, subs):
    """subs with `...` replaced by as many full slices as the axes the other subscripts leave."""
    dots = [i for i, s in enumerate(subs) if s is Ellipsis]
    if not dots:
        return subs
    if len(dots) > 1:
        raise error("index", "an index may hold one ... (every remaining axis), not several")
    named = sum(0 if s is None or s is Ellipsis else s.ndim if type(s) is ndarray and s.dtype.kind == "b" else 1
                for s in (raw(s) for s in subs))
    i = dots[0]
    return tuple(subs[:i]) + (slice(None),) * max(len(shape) - named, 0) + tuple(subs[i + 1:])


def _check_gather(shape, key):
    """Index tensors must broadcast together, and what they gather must fit the size limit."""
    shapes = [(int(k.sum()),) if k.dtype.kind == "b" else k.shape for k in key if type(k) is ndarray]
    try:
        out = list(np.broadcast_shapes(*shapes))
    except ValueError:
        raise error("shape", "index tensors of shapes " + ", ".join(fmt_shape(s) for s in shapes)
                    + " do not broadcast together") from None
    axis = 0
    for k in key:
        if type(k) is slice:
            out.append(len(range(*k.indices(shape[axis]))))
        axis += k.ndim if type(k) is ndarray and k.dtype.kind == "b" else 1
    check_size(tuple(out) + tuple(shape[axis:]), "gathered tensor")


def index_array(s, size, axis):
    """An int-valued float tensor used as indices: as intp, checked against `size`."""
    if s.size and not np.all(np.isfinite(s) & (s == np.floor(s))):
        raise error("type", "index tensors must hold whole numbers")
    # check before the cast: a float past the intp range would wrap and be reported wrongly
    if s.size and (s.min() < -size or s.max() >= size):
        bad = s[(s < -size) | (s >= size)].flat[0]
        raise error("index", f"index {int(bad)} is out of range for axis {axis} with size {size}")
    return s.astype(np.intp)


def index(x, key, span=None, op="Index"):
    """x[key] for a checked numpy key (see make_key)."""
    if type(x) is Box:
        if x.op == "Input" and x.trace.kind is REVERSE:
            # a read of an argument not differentiated: nothing it gives can reach a gradient,
            # so it is not recorded (as `record` decides, without its generality: xs[t] in a loop)
            return index(x.v, key, span, op)
        return record(op, (x,), {"key": key, "op": op}, span)
    return norm(x[key])


def index_add(g, key, shape, span=None):
    """zeros(shape) with g added at key: the cotangent of indexing (repeats accumulate)."""
    if type(g) is Box:
        return record("IndexAdd", (g,), {"key": key, "shape": shape}, span)
    out = np.zeros(shape, float_type(g))
    if _accumulates(key):
        np.add.at(out, key, g)
    else:
        out[key] = g
    return out


def _accumulates(key):
    """Whether a key names positions by index tensors, where a repeated position adds up (a key
    with new axes is basic indexing only: make_key refuses index tensors beside them)."""
    many = False
    for k in key:
        if k is None:
            return False
        if type(k) is ndarray:
            many = True
    return many


def row(x, i, span=None):
    """x[i] for an int i that was computed while the program was staged (a rolled loop's
    variable): a step of the program rather than a guard on i's value (dsl/transform/jit/rolling.py)."""
    if type(x) is Box or type(i) is Box:
        return record("Row", (x, i), None, span)
    n = x.shape[0]
    if not -n <= i < n:
        raise error("index", f"index {i} is out of range for axis 0 with size {n}")
    return norm(x[i])


def row_add(g, i, shape, span=None):
    """zeros(shape) with g at row i: the cotangent of row(x, i)."""
    if type(g) is Box or type(i) is Box:
        return record("RowAdd", (g, i), {"shape": shape}, span)
    out = np.zeros(shape, float_type(g))
    out[i] = g
    return out


def set_row(x, i, v, span=None):
    """A copy of x with row i set to v, for an int i computed while the program was staged (a
    rolled loop's variable: `hist[k] = loss`): a step of the program rather than a guard on i's
    value, as row(x, i) reads it."""
    if type(x) is Box or type(i) is Box or type(v) is Box:
        return record("SetRow", (x, i, v), None, span)
    n = x.shape[0]
    if not -n <= i < n:
        raise error("index", f"index {i} is out of range for axis 0 with size {n}")
    return set_index(x, (i,), v)


def set_row_plain(x, i, v):
    """set_row in generated code: a row out of range is numpy's IndexError (kernels.RAISED), so a
    compiled loop stops there and the program runs that iteration again, naming the line."""
    return set_index(x, (i,), v)


def rows(x, i, n, span=None):
    """x[i:i + n] for an int i computed while the program was staged (x[i:i + 3] in a rolled loop):
    n rows, a step of the program rather than a guard on i's value. The caller (structs.item)
    guards that the slice it stands for is these n rows: 0 <= i and i + n <= x's length."""
    if type(x) is Box or type(i) is Box:
        return record("Rows", (x, i), {"n": n}, span)
    if not 0 <= i <= x.shape[0] - n:
        raise error("index", f"rows {i} to {i + n} are out of range for axis 0 with size {x.shape[0]}")
    return x[i:i + n]


def rows_add(g, i, shape, span=None):
    """zeros(shape) with g at rows i to i + len(g): the cotangent of rows(x, i, n)."""
    if type(g) is Box or type(i) is Box:
        return record("RowsAdd", (g, i), {"shape": shape}, span)
    out = np.zeros(shape, float_type(g))
    out[i:i + np.shape(g)[0]] = g
    return out


def set_rows(x, i, v, n, span=None):
    """A copy of x with rows i to i + n set to v (`out[i:i + 3] = v` in a rolled loop), as rows(x,
    i, n) reads them."""
    if type(x) is Box or type(i) is Box or type(v) is Box:
        return record("SetRows", (x, i, v), {"n": n}, span)
    if not 0 <= i <= x.shape[0] - n:
        raise error("index", f"rows {i} to {i + n} are out of range for axis 0 with size {x.shape[0]}")
    return set_index(x, (slice(i, i + n),), v)


def plain_kernel(kernel):
    """`kernel` for generated code, where dg's error for a value it refuses is Python's IndexError
    (kernels.RAISED): the program then runs again exactly, and its guard fails or the kernel
    reports the error at its line."""
    def plain(*args, **kw):
        try:
            return kernel(*args, **kw)
        except DgError:
            raise IndexError(kernel.__name__) from None
    return plain


rows_plain = plain_kernel(rows)
set_rows_plain = plain_kernel(set_rows)


def _set_index_forward(x, v, key=None):
    """set_index with the argument order the SetIndex node records (the tensors first)."""
    return set_index(x, key, v)


def _stored_type(x, val):
    """The float or int type of x after storing val in it."""
    t = type(val)
    if t is float or t is int or t is bool:
        return x.dtype if x.dtype.kind in "fi" and not (t is float and x.dtype.kind == "i") else FLOAT
    if t is ndarray and val.dtype.kind in "fi" and x.dtype.kind in "fi":
        return np.result_type(x.dtype, val.dtype)
    return float_type(x)


def assign_shape_error(value_shape, target_shape):
    """The `shape` error of x[key] = v where v does not broadcast to x[key]'s shape."""
    return error("shape", f"cannot assign a value of shape {fmt_shape(value_shape)} to x[...] of shape "
                          f"{fmt_shape(target_shape)}")


def set_index(x, key, v, span=None):
    """A copy of tensor x with x[key] = v (value semantics)."""
    if type(x) is Box or type(v) is Box:
        return record("SetIndex", (x, v), {"key": key}, span)
    val = raw(v)
    # a bool tensor stays bool when given bools or a bool tensor (as numpy), else it becomes float
    # the result's type is what x and v promote to (numpy 2's rules: a number takes x's type), except
    # that a bool tensor given numbers becomes a float one (dg's numbers are floats)
    keep = x.dtype.kind == "b" and (type(val) is bool or getattr(val, "dtype", None) == np.bool_)
    out = np.array(x, dtype=bool if keep else _stored_type(x, val))
    try:
        out[key] = val
    except ValueError:
        raise assign_shape_error(np.shape(val), np.shape(out[key])) from None
    except TypeError:
        raise error("type", f"cannot store {a_type_name(val)} in a tensor") from None
    return out
