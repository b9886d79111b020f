"""Reductions: Sum Mean Max Min LogSumExp, over all axes or the given ones."""

import numpy as np

from .. import ops as O
from ..ops.core import shape_of
from .registry import define


def kept(ns, g, shape, axis, keepdims):
    """A reduced value reshaped so that it broadcasts against the input's shape."""
    if keepdims or (axis is None and not shape):
        return g
    if axis is None:
        return ns.reshape(g, (1,) * len(shape))
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
    return ns.div(spread(ns, g, x, axis, keepdims), float(O.count(shape_of(x), axis)))


define("Sum", O.sum_, emit={"array": "np.add.reduce({0}, axis={axis}, keepdims={keepdims})"}, vjp=(lambda ns, g, ans, x, axis=None, keepdims=False: spread(ns, g, x, axis, keepdims),),
       jvp=_sum_jvp, batch=_ns_batch("sum"), linear=True)
define("Mean", O.mean, vjp=(_mean_vjp,), emit={"array": "np.mean({0}, axis={axis}, keepdims={keepdims})"}, batch=_ns_batch("mean"), linear=True,
       jvp=lambda ns, tangents, ans, args, kw: ns.mean(tangents[0], kw.get("axis"), kw.get("keepdims", False)))


def _share(ns, ans, x, axis, keepdims):
    """Max/Min: the share of each element in the extreme (1/k among k that tie for it, else 0)."""
    hit = ns.equal(x, kept(ns, ans, shape_of(x), axis, keepdims))
    return ns.div(hit, ns.sum(ns.where(hit, 1.0, 0.0), axis, True))


def _extreme_vjp(ns, g, ans, x, axis=None, keepdims=False):
    """The cotangent shared equally among the elements that tie for the extreme (SPEC 6.6)."""
    return ns.cmul(spread(ns, g, x, axis, keepdims), _share(ns, ans, x, axis, keepdims))


def _extreme_jvp(ns, tangents, ans, args, kw):
    """The tangents of the elements that tie for the extreme, averaged."""
    axis, keepdims = kw.get("axis"), kw.get("keepdims", False)
    x = args[0]
    return ns.sum(ns.mul(tangents[0], _share(ns, ans, x, axis, keepdims)), axis, keepdims)


define("Max", O.max_, vjp=(_extreme_vjp,), jvp=_extreme_jvp, batch=_batch(O.max_))
define("Min", O.min_, vjp=(_extreme_vjp,), jvp=_extreme_jvp, batch=_batch(O.min_))


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


define("LogSumExp", O.logsumexp, vjp=(_lse_vjp,), jvp=_lse_jvp, batch=_batch(O.logsumexp))

__all__ = ["kept", "spread", "batch_axis", "np"]
