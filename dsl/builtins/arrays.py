"""numpy's array functions that dg composes of its own operations (so each is differentiable
wherever its parts are, under every transformation): flip, roll, diff, cumprod, meshgrid, and the
tests isnan, isfinite and allclose."""

import numpy as np

from .. import ops
from ..autodiff.tape import peek, raw
from ..errors import DgError, error
from ..ops.core import fmt_shape, normalize_axis
from ..values import type_name


def _axis(axis, nd, who):
    """An axis given as an int, checked against the number of axes (as every builtin's axis)."""
    try:
        return normalize_axis(raw(axis), nd, False)
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
    """flip(x, axis=none): x with the order of its entries reversed along an axis (every axis: none)."""
    shape = _tensor_shape(x, "flip")
    axes = range(len(shape)) if raw(axis) is None else [_axis(axis, len(shape), "flip")]
    for a in axes:
        x = ops.index(x, _along(a, slice(None, None, -1)))
    return x


def roll(x, shift, axis=None):
    """roll(x, shift, axis=none): entries moved shift places along an axis, wrapping around (numpy's;
    with axis none, of the flattened tensor, shaped back)."""
    shape = _tensor_shape(x, "roll")
    shift = raw(shift)
    if type(shift) is not int:
        raise error("type", f"roll: shift must be an int, got {type_name(shift)}")
    if raw(axis) is None:
        return ops.reshape(roll(ops.reshape(x, (int(np.prod(shape)),)), shift, 0), shape)
    a = _axis(axis, len(shape), "roll")
    n = shape[a]
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
        raise error("value", f"diff: n must be an int of at least 0, got {n!r}")
    if not shape:
        raise error("shape", "diff needs a tensor with at least one axis, got a number")
    a = _axis(axis, len(shape), "diff")
    for _ in range(n):
        x = ops.sub(ops.index(x, _along(a, slice(1, None))),
                    ops.index(x, _along(a, slice(None, -1))))
    return x


def cumprod(x, axis=None):
    """cumprod(x, axis=none): running products along an axis (none: of the flattened tensor)."""
    shape = _tensor_shape(x, "cumprod")
    if raw(axis) is None:
        return ops.cumprod(ops.reshape(x, (int(np.prod(shape)),)), 0)
    return ops.cumprod(x, _axis(axis, len(shape), "cumprod"))


def meshgrid(*xs, indexing="xy"):
    """meshgrid(*xs, indexing="xy"): coordinate tensors of the grid the vectors xs span (numpy's)."""
    indexing = raw(indexing)
    if indexing not in ("xy", "ij"):
        raise error("value", f"meshgrid: indexing must be \"xy\" or \"ij\", got {indexing!r}")
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


def allclose(a, b, rtol=1e-05, atol=1e-08):
    """allclose(a, b, rtol=1e-05, atol=1e-08): whether every |a - b| <= atol + rtol |b| (numpy's)."""
    av, bv = (np.asarray(raw(_numbers(v, "allclose")), dtype=float) for v in (a, b))
    tolerances = [raw(rtol), raw(atol)]
    if any(type(t) not in (float, int) or isinstance(t, bool) for t in tolerances):
        raise error("type", "allclose: rtol and atol must be numbers")
    try:
        return bool(np.allclose(av, bv, rtol=float(tolerances[0]), atol=float(tolerances[1])))
    except ValueError:
        raise error("shape", f"allclose: shapes {fmt_shape(av.shape)} and {fmt_shape(bv.shape)} do not "
                             f"broadcast") from None


BUILTINS = {"flip": flip, "roll": roll, "diff": diff, "cumprod": cumprod, "meshgrid": meshgrid,
            "isnan": isnan, "isfinite": isfinite, "allclose": allclose}
