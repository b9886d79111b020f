"""Batching rules shared by many primitives (vmap, dsl/transform/vmap.py).

A batched argument carries its batch on axis 0 and every rule puts the batch on
axis 0 of its result, so that rules compose without tracking where batches are.
"""

import numpy as np

from .. import ops as O
from ..ops.core import shape_of
from ..tape import Box, peek

ELEMENTWISE = "elementwise"     # a primitive's batch field: by the generic elementwise rule below


class Unbatchable(Exception):
    """A batched run cannot give each example's result: vmap runs the function once per example."""


class Lanes(tuple):
    """A rule's tuple result whose elements are not all batched (a loop's state, where an int
    counter has no batch axis): `batched[i]` says whether element i is. A read of an element
    (StructField's rule) passes that on, as `Unbatched` where it is not."""

    def __new__(cls, values, batched):
        lanes = super().__new__(cls, values)
        lanes.batched = tuple(batched)
        return lanes


class Unbatched:
    """A rule's result that has no batch axis (the same for every example)."""

    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v


def elementwise(prim):
    """The batching rule of an elementwise primitive: line each batched argument's example up
    behind the batch axis, so that numpy's broadcasting from the right pairs the examples' axes."""
    impl = prim.impl

    def rule(ns, args, batched, kw):
        rank = max(len(shape_of(a)) - b for a, b in zip(args, batched))
        lined = []
        for a, b in zip(args, batched):
            if b:
                s = shape_of(a)
                missing = rank - (len(s) - 1)
                if missing:
                    a = O.reshape(a, s[:1] + (1,) * missing + s[1:])
            lined.append(a)
        out = impl(*lined, **kw) if kw else impl(*lined)
        return out
    return rule


def batch_size(args, batched):
    """The batch size: the length of axis 0 of the first batched argument."""
    return next(shape_of(a)[0] for a, b in zip(args, batched) if b)


def broadcast_batch(ns, args, batched):
    """Every argument with the batch axis: unbatched ones repeated along a new axis 0."""
    size = batch_size(args, batched)
    return [a if b else ns.broadcast_to(a, (size,) + shape_of(a)) for a, b in zip(args, batched)]


def batched_key(key, example_ndim):
    """A checked index key for one example, made into one for the batch: (key, moved).

    `moved` is None when the batch axis stays in front of x[key]; otherwise numpy put
    the advanced (array) indices' axes first, and `moved` is how many there are: the
    batch axis then sits behind them (see `batch_first`)."""
    out = (slice(None),) + tuple(key)
    arrays = [i for i, k in enumerate(key) if type(k) is np.ndarray]
    if not arrays:
        return out, None
    advanced = [i for i, k in enumerate(key) if type(k) is np.ndarray or type(k) is int]
    if advanced == list(range(advanced[0], advanced[-1] + 1)):
        return out, None            # adjacent: numpy keeps their axes in place, behind the batch
    shapes = [(int(key[i].sum()),) if key[i].dtype.kind == "b" else key[i].shape for i in arrays]
    return out, len(np.broadcast_shapes(*shapes))


def batch_first(ns, x, moved):
    """x[key] of a batch with the batch axis brought back in front of the advanced axes."""
    if moved is None:
        return x
    nd = len(shape_of(x))
    return ns.transpose(x, (moved,) + tuple(range(moved)) + tuple(range(moved + 1, nd)))


def batch_behind(ns, x, moved):
    """The inverse of batch_first: the batch axis back behind the advanced axes."""
    if moved is None:
        return x
    nd = len(shape_of(x))
    return ns.transpose(x, tuple(range(1, moved + 1)) + (0,) + tuple(range(moved + 1, nd)))


def spread_where(values, wanted, batched, size):
    """The values, each that `wanted` marks and `batched` does not (None: no value is) repeated
    for every example."""
    if batched is None:
        batched = (False,) * len(values)
    return [spread(v, size) if w and not b else v for v, w, b in zip(values, wanted, batched)]


def spread(v, size):
    """An unbatched leaf repeated for every example, on a new axis 0 (a string or none: a tuple)."""
    pv = peek(v)
    if type(pv) is np.ndarray or type(pv) in (float, int, bool) or isinstance(pv, np.generic):
        return O.broadcast_to(O.to_tensor(v) if type(v) is not Box and type(pv) is not np.ndarray else v,
                              (size,) + np.shape(pv))
    return PerExample((v,) * size)


class PerExample:
    """An output leaf that is not a number or tensor (a string, none): a tuple of every example's."""

    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v


__all__ = ["PerExample", "spread", "spread_where", "Unbatchable", "Lanes", "Unbatched", "elementwise", "batch_size", "broadcast_batch", "batched_key", "batch_first",
           "batch_behind", "ELEMENTWISE"]
