"""Reductions: sum, mean, max, min, logsumexp, over all axes or the given ones; and unbroadcast,
the sum over broadcast axes that gradient rules use."""

import math

import numpy as np

from ..tape import record
from ...base.suggest import tuple_text
from ...errors import DgError
from .core import (Box, error, fmt_shape, ndarray, norm, normalize_axis, peek, range_values, shape_of, to_tensor,
                   type_name)
from .shape import reshape, stack


def sequence_operand(x):
    """A reduction's operand: tensors as they are, a tuple of numbers/tensors stacked, a range's
    values as floats (numpy's sum(range(10)))."""
    v = peek(x)
    if type(v) is tuple:
        return stack(x)
    if type(v) is range:
        return range_values(v)
    return x


# Python's max(a, b) and sum(a, b) take several values; dg's reductions take one tensor and an
# axis, so max(1.0, 2.0) fails on its axis: say what was meant
TWO_VALUES = {
    "max": "max(x, axis) is the largest entry of one tensor; the larger of two values, entry by entry, "
           "is maximum(a, b)",
    "min": "min(x, axis) is the smallest entry of one tensor; the smaller of two values, entry by entry, "
           "is minimum(a, b)",
    "sum": "sum(x, axis) adds the entries of one tensor; a + b adds two values (sum((a, b)) sums a tuple)",
}


def check_keepdims(keepdims, name, hint=None):
    """A keepdims argument must be true or false: else dg's type error, in the words of `name`."""
    if type(keepdims) is not bool:
        raise error("type", f"{name}'s keepdims must be true or false, got {type_name(keepdims)}", hint=hint)


def _reduction(op, name, fn, empty_ok):
    """Make a reduction primitive `name(x, axis=none, keepdims=false)`."""

    def prim(x, axis=None, keepdims=False, span=None):
        check_keepdims(keepdims, name, TWO_VALUES.get(name))     # max(a, b, c): Python's largest of several values
        x = sequence_operand(x)
        if type(x) is Box:
            return record(op, (x,), {"axis": axis, "keepdims": keepdims}, span)
        v = to_tensor(x, f"a tensor to {name}")
        try:
            ax = normalize_axis(axis, v.ndim)
        except DgError as exc:
            # a number's axis, or an axis that is a tensor or a float: two values were meant
            if exc.hint is None and (v.ndim == 0 or type(peek(axis)) in (ndarray, float)):
                exc.hint = TWO_VALUES.get(name)
                a = peek(axis)
                # sum(x, axis=[0, 1]): a bracket literal is a tensor; axes are a tuple
                axes = tuple_text(a.tolist()) if type(a) is ndarray and a.ndim == 1 else None
                if axes:
                    exc.hint = f"several axes are a tuple: axis={axes}" + (f"; {exc.hint}" if exc.hint else "")
            raise
        # only a reduction over an empty axis is undefined: max(zeros((0, 3)), axis=1) is empty, as in numpy
        if not empty_ok and (v.size == 0 if ax is None else any(v.shape[a] == 0 for a in np.atleast_1d(ax))):
            raise error("value", f"cannot take the {name} of an empty tensor (shape {fmt_shape(v.shape)})")
        return norm(fn(v, ax, bool(keepdims)))

    prim.__name__ = name
    prim.__doc__ = f"{name}(x, axis=none): reduce over all axes or the given ones (records {op})."
    return prim


def _logsumexp(v, axis, keepdims):
    """A stable log(sum(exp(v))): shift by the max, which is finite for finite inputs."""
    m = np.max(v, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    out = np.log(np.sum(np.exp(v - m), axis=axis, keepdims=True)) + m
    if not keepdims:
        out = np.squeeze(out, axis=axis) if axis is not None else out.reshape(())
    return out if out.ndim else float(out)   # a full reduction is a float, as sum's is


def float_mean(x, axis=None, keepdims=False):
    """np.mean of a float tensor without its Python-level bookkeeping: numpy's own sum divided
    by the count, as np.mean divides it (the same bits; an empty tensor goes to np.mean)."""
    s = np.add.reduce(x, axis=axis, keepdims=keepdims)
    n = x.size if axis is None else x.size // s.size if s.size else 0
    return s / n if n else np.mean(x, axis=axis, keepdims=keepdims)


sum_ = _reduction("Sum", "sum", lambda v, a, k: np.sum(v, axis=a, keepdims=k), True)
mean = _reduction("Mean", "mean", lambda v, a, k: float_mean(v, a, k) if v.dtype == np.float64 else
                  np.mean(v, axis=a, keepdims=k), False)
max_ = _reduction("Max", "max", lambda v, a, k: np.max(v, axis=a, keepdims=k), False)
min_ = _reduction("Min", "min", lambda v, a, k: np.min(v, axis=a, keepdims=k), False)
logsumexp = _reduction("LogSumExp", "logsumexp", _logsumexp, False)


def keep_axes(g, shape, axis, keepdims):
    """Reshape a reduced cotangent so it broadcasts against the input's shape."""
    if keepdims or axis is None and not shape:
        return g
    if axis is None:
        return reshape(g, (1,) * len(shape))
    axes = axis if type(axis) is tuple else (axis,)
    axes = {a % len(shape) for a in axes}
    return reshape(g, tuple(1 if i in axes else s for i, s in enumerate(shape)))


def count(shape, axis):
    """How many elements a reduction over `axis` combines."""
    if axis is None:
        return math.prod(shape)     # of a few Python ints: 20x faster than np.prod
    axes = axis if type(axis) is tuple else (axis,)
    n = 1
    for a in axes:
        n *= shape[a % len(shape)]
    return n


__all__ = ["sum_", "mean", "max_", "min_", "logsumexp", "keep_axes", "count", "type_name", "unbroadcast"]


# ---------------------------------------------------------------- more reductions (numpy's semantics)
def var(x, axis=None, keepdims=False, span=None):
    """var(x, axis=none): the mean squared deviation from the mean (numpy's, ddof 0)."""
    check_keepdims(keepdims, "var")
    x = sequence_operand(x)
    if type(x) is Box:
        return record("Var", (x,), {"axis": axis, "keepdims": keepdims}, span)
    v = to_tensor(x, "a tensor to var")
    ax = normalize_axis(axis, v.ndim)
    if v.size == 0 if ax is None else any(v.shape[a] == 0 for a in np.atleast_1d(ax)):
        raise error("value", f"cannot take the var of an empty tensor (shape {fmt_shape(v.shape)})")
    return norm(np.var(v, axis=ax, keepdims=keepdims))


def prod(x, axis=None, keepdims=False, span=None):
    """prod(x, axis=none): the product over all axes or the given ones."""
    check_keepdims(keepdims, "prod")
    x = sequence_operand(x)
    if type(x) is Box:
        return record("Prod", (x,), {"axis": axis, "keepdims": keepdims}, span)
    v = to_tensor(x, "a tensor to prod")
    return norm(np.prod(v, axis=normalize_axis(axis, v.ndim), keepdims=keepdims))


def cumsum(x, axis=None, span=None):
    """cumsum(x, axis=none): running sums along an axis (none: of the flattened tensor)."""
    x = sequence_operand(x)
    if type(x) is Box:
        return record("CumSum", (x,), {"axis": axis}, span)
    v = to_tensor(x, "a tensor to cumsum")
    if v.ndim == 0:
        return np.reshape(v, (1,))
    if axis is None:
        return np.cumsum(v.reshape(-1))
    return np.cumsum(v, axis=normalize_axis(axis, v.ndim, False))


def cumprod(x, axis=0, span=None):
    """Running products along an axis (the building block of prod's derivative)."""
    if type(x) is Box:
        return record("CumProd", (x,), {"axis": axis}, span)
    v = to_tensor(x, "a tensor to cumprod")
    return np.cumprod(v, axis=normalize_axis(axis, v.ndim, False))


def unbroadcast(g, shape):
    """Sum a cotangent over the axes that broadcasting added or stretched, back to `shape`."""
    gshape = shape_of(g)
    if gshape == shape:
        return g
    if shape == ():
        return sum_(g)
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape)
                                      if s == 1 and gshape[i + lead] != 1)
    if type(g) is ndarray:     # a plain cotangent (no outer differentiation): numpy directly
        if axes:
            g = np.add.reduce(g, axis=axes)
        return g if g.shape == shape else g.reshape(shape)
    if axes:
        g = sum_(g, axes)
    if shape_of(g) != shape:
        g = reshape(g, shape)
    return g
