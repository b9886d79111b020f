"""Ordering primitives: ArgMax ArgMin ArgSort SearchSorted (no derivative) and Sort."""

from .. import ops as O
from ..ops.core import normalize_axis, shape_of
from .batching import broadcast_batch
from .registry import define


def _along(axis, example_ndim, default=None):
    """An ordering's axis for examples stacked on a new axis 0."""
    return normalize_axis(default if axis is None else axis, example_ndim, False) + 1


def _arg_batch(fn):
    """argmax/argmin per example: a whole example flattened, or along its axis."""
    def rule(ns, args, batched, kw):
        x = args[0]
        if kw.get("axis") is None:
            return fn(ns.reshape(x, (shape_of(x)[0], -1)), 1)
        return fn(x, _along(kw["axis"], len(shape_of(x)) - 1))
    return rule


define("ArgMax", O.argmax, differentiable=False, batch=_arg_batch(O.argmax))
define("ArgMin", O.argmin, differentiable=False, batch=_arg_batch(O.argmin))
define("ArgSort", O.argsort, differentiable=False,
       batch=lambda ns, args, batched, kw: O.argsort(args[0], _along(kw.get("axis", -1), len(shape_of(args[0])) - 1)))


def _searchsorted_batch(ns, args, batched, kw):
    """searchsorted per example. Values alone batched: one search of them all. A batch of sorted
    vectors: each position counted as the entries before it, in numpy's order (nan after every
    number), a comparison of every value with its example's vector."""
    a, v = args
    if not batched[0]:
        return O.searchsorted(a, v, kw.get("side", "left"))
    if not batched[1]:
        v = ns.broadcast_to(v, shape_of(a)[:1] + shape_of(v))
    extra = len(shape_of(v)) - 1
    a = ns.reshape(a, shape_of(a)[:1] + (1,) * extra + shape_of(a)[1:])
    v = ns.reshape(v, shape_of(v) + (1,))
    v_nan, a_nan = O.ne(v, v), O.ne(a, a)
    if kw.get("side", "left") == "left":
        before = O.logical_or(O.order("<", a, v), O.logical_and(v_nan, O.logical_not(a_nan)))
    else:
        before = O.logical_or(O.order("<=", a, v), v_nan)
    return O.sum_(before, len(shape_of(v)) - 1)      # a count of bools: a float, as positions are


define("SearchSorted", O.searchsorted, differentiable=False, batch=_searchsorted_batch)


def _positions(x, axis):
    """Where sort took each entry from (a staged operation where jit and vmap record them)."""
    return O.argsort(x, axis)


def _norm_axis(x, axis):
    """A sort axis counted from the front."""
    return normalize_axis(axis, len(shape_of(x)), False)


define("Sort", O.sort, linear=True,
       vjp=(lambda ns, g, ans, x, axis=-1: O.put_along(g, _positions(x, axis), _norm_axis(x, axis), shape_of(x)),),
       jvp=lambda ns, tangents, ans, args, kw: O.take_along(tangents[0], _positions(args[0], kw.get("axis", -1)),
                                                            _norm_axis(args[0], kw.get("axis", -1))),
       batch=lambda ns, args, batched, kw: O.sort(args[0], _along(kw.get("axis", -1), len(shape_of(args[0])) - 1)))


def _along_batch(ns, args, batched, kw):
    """take_along/put_along with the batch in front of the data and of the positions."""
    data, idx = broadcast_batch(ns, args, batched)
    if "shape" in kw:
        axis = kw["axis"] % len(kw["shape"]) + 1       # a negative axis counts from the example's end
        return O.put_along(data, idx, axis, (shape_of(data)[0],) + tuple(kw["shape"]))
    return O.take_along(data, idx, kw["axis"] % (len(shape_of(data)) - 1) + 1)


define("TakeAlong", O.take_along, linear=True, batch=_along_batch,
       vjp=(lambda ns, g, ans, x, idx, axis=0: O.put_along(g, idx, axis, shape_of(x)), None),
       jvp=lambda ns, tangents, ans, args, kw: O.take_along(tangents[0], args[1], kw["axis"]))
define("PutAlong", O.put_along, linear=True, batch=_along_batch,
       vjp=(lambda ns, g, ans, x, idx, axis=0, shape=None: O.take_along(g, idx, axis), None),
       jvp=lambda ns, tangents, ans, args, kw: O.put_along(tangents[0], args[1], kw["axis"], kw["shape"]))
