"""Take and TakeAdd: rows gathered at staged positions, and added back there (dsl/core/ops/take.py);
LastWriter: which of the positions writes each row last in x[idx] = v (ops.put), no derivative.

Both are linear in their tensor and each other's transpose; the positions get no derivative.
Under vmap the batch axis of the tensor is moved behind the rows (positions shared), the
positions' batch is the result's leading axis already (tensor shared), and where both carry
one, each example takes from its own rows (`batched`). vmap of such a batched step runs per
example of the outer vmap."""

from .. import ops as O
from ..ops.core import shape_of
from .batching import Unbatchable, batch_behind, batch_first
from .registry import define


def _take_batch(ns, args, batched, kw):
    """Each example's rows (see the module docstring)."""
    x, idx = args
    bx, bi = batched
    if kw.get("batched"):
        raise Unbatchable("rows gathered per example, under a second vmap")
    if not bx:
        return O.take(x, idx)
    if not bi:
        return batch_first(ns, O.take(batch_behind(ns, x, 1), idx), len(shape_of(idx)))
    return O.take(x, idx, batched=True)


def _take_add_batch(ns, args, batched, kw):
    """Each example's rows added back (see the module docstring)."""
    g, idx = args
    bg, bi = batched
    shape = tuple(kw["shape"])
    if kw.get("batched"):
        raise Unbatchable("rows added back per example, under a second vmap")
    nonnegative = kw.get("nonnegative", False)
    if not bi:
        k = len(shape_of(idx))
        return batch_first(ns, O.take_add(batch_behind(ns, g, k), idx, shape[:1] + shape_of(g)[:1] + shape[1:], False,
                                          nonnegative), 1)
    size = shape_of(idx)[0]
    if not bg:
        g = O.broadcast_to(g, (size,) + shape_of(g))
    return O.take_add(g, idx, (size,) + shape, True, nonnegative)


def _no_gradient(ns, g, ans, *args, **kw):
    """The positions' cotangent: none (they may still be recorded values, a loop's state)."""
    return None


define("Take", O.take, linear=True, plain=O.take_plain, keeps_nan=True, indexed=True, batch=_take_batch,
       vjp=(lambda ns, g, ans, x, idx, batched=False: O.take_add(g, idx, shape_of(x), batched), _no_gradient),
       jvp=lambda ns, tangents, ans, args, kw: None if tangents[0] is None else O.take(
           tangents[0], args[1], kw.get("batched", False)))
define("TakeAdd", O.take_add, linear=True, plain=O.take_add_plain, keeps_nan=True, indexed=True, batch=_take_add_batch,
       vjp=(lambda ns, g, ans, gr, idx, shape=None, batched=False, nonnegative=False: O.take(g, idx, batched),
            _no_gradient),
       jvp=lambda ns, tangents, ans, args, kw: None if tangents[0] is None else O.take_add(
           tangents[0], args[1], kw["shape"], kw.get("batched", False), kw.get("nonnegative", False)))


def _last_writer_batch(ns, args, batched, kw):
    """Each example's positions, each of its rows' last writer."""
    if kw.get("batched"):
        raise Unbatchable("positions written per example, under a second vmap")
    return O.last_writer(args[0], kw["n"], True)


define("LastWriter", O.last_writer, differentiable=False, plain=O.last_writer_plain, can_fail=True,
       batch=_last_writer_batch)
