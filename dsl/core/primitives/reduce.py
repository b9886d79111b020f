"""Reductions: Sum Mean Max Min LogSumExp, over all axes or the given ones."""

import numpy as np

from .. import ops as O
from ..ops.core import shape_of
from .registry import define


def kept(ns, g, shape, axis, keepdims):
    """A reduced value reshaped so that it broadcasts against the input's shape."""
    if keepdims or axis is None:      # a reduction over every axis is a number: it broadcasts as it is
        return g
    axes = {a % len(shape) for a in (axis if type(axis) is tuple else (axis,))}
    return ns.reshape(g, tuple(1 if i in axes else s for i, s in enumerate(shape)))


def spread(ns, g, x, axis, keepdims):
    """A reduction's cotangent broadcast back over the reduced axes."""
    xs = shape_of(x)
    return ns.broadcast_to(kept(ns, g, xs, axis, keepdims), xs)


def batch_axis(axis, example_ndim):
    """A reduction's axis for examples stacked on a new axis 0."""
    if axis is None:
        return tuple(range(1, example_ndim + 1))
    if type(axis) is tuple:
        return tuple(a % example_ndim + 1 for a in axis)
    return axis % example_ndim + 1


def _batch(reduction):
    """The batching rule of a reduction: the same reduction, with its axes moved past the batch."""
    def rule(ns, args, batched, kw):
        x = args[0]
        axis = batch_axis(kw.get("axis"), len(shape_of(x)) - 1)
        return reduction(x, axis=axis, keepdims=kw.get("keepdims", False))
    return rule


def _ns_batch(name):
    """Batching through the namespace's own reduction (which records where values are boxed)."""
    def rule(ns, args, batched, kw):
        x = args[0]
        axis = batch_axis(kw.get("axis"), len(shape_of(x)) - 1)
        return getattr(ns, name)(x, axis=axis, keepdims=kw.get("keepdims", False))
    return rule


def _sum_jvp(ns, tangents, ans, args, kw):
    """The sum of the tangent."""
    return ns.sum(tangents[0], kw.get("axis"), kw.get("keepdims", False))


def _mean_vjp(ns, g, ans, x, axis=None, keepdims=False):
    """The cotangent spread evenly over what was averaged."""
    return spread(ns, ns.div(g, float(O.count(shape_of(x), axis))), x, axis, keepdims)   # divide the small one


define("Sum", O.sum_, emit={"array": "np.add.reduce({0}, axis={axis}, keepdims={keepdims})"}, vjp=(lambda ns, g, ans, x, axis=None, keepdims=False: spread(ns, g, x, axis, keepdims),),
       jvp=_sum_jvp, batch=_ns_batch("sum"), linear=True, keeps_nan=True)
define("Mean", O.mean, vjp=(_mean_vjp,), emit={"array": "K.mean({0}, {axis}, {keepdims})"}, batch=_ns_batch("mean"), linear=True,
       jvp=lambda ns, tangents, ans, args, kw: ns.mean(tangents[0], kw.get("axis"), kw.get("keepdims", False)),
       keeps_nan=True)


def _share(ns, ans, x, axis, keepdims):
    """Max/Min: the share of each element in the extreme (1/k among k that tie for it, else 0)."""
    hit = ns.equal(x, kept(ns, ans, shape_of(x), axis, keepdims))
    return ns.div(hit, ns.sum(ns.where(hit, 1.0, 0.0), axis, True))


def _extreme_vjp(ns, g, ans, x, axis=None, keepdims=False):
    """The cotangent shared equally among the elements that tie for the extreme (reference 6.6)."""
    return ns.cmul(spread(ns, g, x, axis, keepdims), _share(ns, ans, x, axis, keepdims))


def _extreme_jvp(ns, tangents, ans, args, kw):
    """The tangents of the elements that tie for the extreme, averaged."""
    axis, keepdims = kw.get("axis"), kw.get("keepdims", False)
    x = args[0]
    return ns.sum(ns.mul(tangents[0], _share(ns, ans, x, axis, keepdims)), axis, keepdims)


define("Max", O.max_, vjp=(_extreme_vjp,), jvp=_extreme_jvp, batch=_batch(O.max_), keeps_nan=True)
define("Min", O.min_, vjp=(_extreme_vjp,), jvp=_extreme_jvp, batch=_batch(O.min_), keeps_nan=True)


def _lse_weights(ns, ans, x, axis, keepdims):
    """d logsumexp(x) / dx = softmax(x) over the reduced axes (computed stably)."""
    xs = shape_of(x)
    if axis is None:
        return ns.reshape(ns.softmax(ns.reshape(x, (-1,))), xs) if xs else 1.0
    if type(axis) is tuple:
        return ns.exp(ns.sub(x, kept(ns, ans, xs, axis, keepdims)))
    return ns.softmax(x, axis)


def _lse_vjp(ns, g, ans, x, axis=None, keepdims=False):
    """The cotangent spread with softmax weights."""
    return ns.mul(spread(ns, g, x, axis, keepdims), _lse_weights(ns, ans, x, axis, keepdims))


def _lse_jvp(ns, tangents, ans, args, kw):
    """The softmax-weighted sum of the tangent."""
    axis, keepdims = kw.get("axis"), kw.get("keepdims", False)
    return ns.sum(ns.mul(tangents[0], _lse_weights(ns, ans, args[0], axis, keepdims)), axis, keepdims)


define("LogSumExp", O.logsumexp, vjp=(_lse_vjp,), jvp=_lse_jvp, batch=_batch(O.logsumexp), keeps_nan=True)

# ---------------------------------------------------------------- var, prod, cumsum
def _centered(ns, x, axis):
    """x minus its mean over `axis`, and how many entries each mean averaged."""
    return ns.sub(x, ns.mean(x, axis, True)), float(O.count(shape_of(x), axis))


def _var_vjp(ns, g, ans, x, axis=None, keepdims=False):
    """d var / dx = 2 (x - mean) / n."""
    centered, n = _centered(ns, x, axis)
    return ns.mul(spread(ns, g, x, axis, keepdims), ns.mul(centered, 2.0 / n))


def _var_jvp(ns, tangents, ans, args, kw):
    """The sum of 2 (x - mean) / n times the tangent."""
    axis, keepdims = kw.get("axis"), kw.get("keepdims", False)
    centered, n = _centered(ns, args[0], axis)
    return ns.sum(ns.mul(tangents[0], ns.mul(centered, 2.0 / n)), axis, keepdims)


define("Var", O.var, vjp=(_var_vjp,), jvp=_var_jvp, batch=_batch(O.var))


def _others(ns, ans, x, axis, keepdims):
    """Each entry's partial derivative of prod: the product of the other entries of its reduction,
    as (product of those before) * (product of those after), by running products: no division, so
    zeros are no trouble, and every piece is differentiable again (hessian of prod at a zero)."""
    xs = shape_of(x)
    nd = len(xs)
    if nd == 0:     # the product of a number is that number: no other entries
        return 1.0
    if 0 in xs:     # no entries, no partial derivatives
        return np.zeros(xs)
    axes = tuple(range(nd)) if axis is None else tuple(a % nd for a in (axis if type(axis) is tuple else (axis,)))
    rest = tuple(i for i in range(nd) if i not in axes)
    order = axes + rest
    moved = ns.transpose(x, order) if order != tuple(range(nd)) else x
    n = int(np.prod([xs[a] for a in axes], dtype=np.int64))
    flat = ns.reshape(moved, (n, -1))
    ones = np.ones((1, shape_of(flat)[1]))
    before = ns.cat((ones, ns.index(O.cumprod(flat, 0), (slice(0, n - 1),))), 0)
    rev = (slice(None, None, -1),)
    after = ns.index(ns.cat((ones, ns.index(O.cumprod(ns.index(flat, rev), 0), (slice(0, n - 1),))), 0), rev)
    others = ns.reshape(ns.mul(before, after), shape_of(moved))
    if order == tuple(range(nd)):
        return others
    return ns.transpose(others, tuple(int(i) for i in np.argsort(order)))


def _prod_vjp(ns, g, ans, x, axis=None, keepdims=False):
    """g times the product of the other entries."""
    return ns.mul(spread(ns, g, x, axis, keepdims), _others(ns, ans, x, axis, keepdims))


def _prod_jvp(ns, tangents, ans, args, kw):
    """The sum of the tangent times the product of the other entries."""
    axis, keepdims = kw.get("axis"), kw.get("keepdims", False)
    return ns.sum(ns.mul(tangents[0], _others(ns, ans, args[0], axis, keepdims)), axis, keepdims)


def _to_front(ns, x, axis):
    """x with `axis` moved to the front, and the permutation that undoes it."""
    nd = len(shape_of(x))
    order = (axis,) + tuple(i for i in range(nd) if i != axis)
    return (ns.transpose(x, order) if axis else x), tuple(int(i) for i in np.argsort(order))


def _back(ns, x, undo):
    """Undo _to_front."""
    return ns.transpose(x, undo) if undo != tuple(range(len(undo))) else x


def _shift_down(ns, c):
    """1 at position 0, then c[t-1]: the running product before each entry (axis 0)."""
    s = shape_of(c)
    return ns.cat((np.ones((1,) + s[1:]), ns.index(c, (slice(0, s[0] - 1),))), 0)


def _cumprod_vjp(ns, g, ans, x, axis=0):
    """g_j = (product before j) * S_j with S_j = g_j + x_{j+1} S_{j+1}: a reverse linear scan."""
    ax = axis % len(shape_of(x))
    xf, undo = _to_front(ns, x, ax)
    gf, _ = _to_front(ns, g, ax)
    cf, _ = _to_front(ns, ans, ax)
    s = shape_of(xf)
    following = ns.cat((ns.index(xf, (slice(1, s[0]),)), np.zeros((1,) + s[1:])), 0)     # x_{j+1}
    rev = (slice(None, None, -1),)
    sums = ns.index(ns.ssm_scan(ns.index(following, rev), 1.0, ns.index(gf, rev)), rev)
    return _back(ns, ns.mul(_shift_down(ns, cf), sums), undo)


def _cumprod_jvp(ns, tangents, ans, args, kw):
    """dC_t = x_t dC_{t-1} + t_t C_{t-1}: a linear scan."""
    x = args[0]
    ax = kw.get("axis", 0) % len(shape_of(x))
    xf, undo = _to_front(ns, x, ax)
    tf, _ = _to_front(ns, tangents[0], ax)
    cf, _ = _to_front(ns, ans, ax)
    return _back(ns, ns.ssm_scan(xf, 1.0, ns.mul(tf, _shift_down(ns, cf))), undo)


define("CumProd", O.cumprod, vjp=(_cumprod_vjp,), jvp=_cumprod_jvp,
       batch=lambda ns, args, batched, kw: O.cumprod(args[0], kw.get("axis", 0) % (len(shape_of(args[0])) - 1) + 1))
define("Prod", O.prod, vjp=(_prod_vjp,), jvp=_prod_jvp, batch=_batch(O.prod))


def _flipped_cumsum(ns, g, axis):
    """Sums from the end: the transpose of a running sum."""
    rev = (slice(None),) * axis + (slice(None, None, -1),)
    return ns.index(O.cumsum(ns.index(g, rev), axis), rev)


def _cumsum_vjp(ns, g, ans, x, axis=None):
    """Each entry receives the cotangents of every running sum it is part of."""
    if axis is None or not shape_of(x):     # a number's running sums are [x], whatever the axis
        return ns.reshape(_flipped_cumsum(ns, g, 0), shape_of(x))
    return _flipped_cumsum(ns, g, axis % len(shape_of(x)))


def _cumsum_batch(ns, args, batched, kw):
    """Running sums within each example (a flattened one for axis none)."""
    x = args[0]
    axis = kw.get("axis")
    if axis is None or len(shape_of(x)) == 1:      # examples that are numbers: as for axis none
        return O.cumsum(ns.reshape(x, (shape_of(x)[0], -1)), 1)
    return O.cumsum(x, axis % (len(shape_of(x)) - 1) + 1)


define("CumSum", O.cumsum, vjp=(_cumsum_vjp,), linear=True, batch=_cumsum_batch,
       jvp=lambda ns, tangents, ans, args, kw: O.cumsum(tangents[0], kw.get("axis")))

__all__ = ["kept", "spread", "batch_axis", "np"]
