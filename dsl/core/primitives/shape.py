"""Shape primitives: Reshape TransposeOp BroadcastTo Index GatherOp IndexAdd Row RowAdd SetRow Rows RowsAdd
SetRows SetIndex CatOp Stack, and Linspace. Their rules move cotangents and tangents the same way."""

import numpy as np

from .. import ops as O
from ..ops.core import shape_of, to_float
from ..ops.shape import _cat, _set_index_forward, _stack
from ..tape import Box, record
from .batching import Unbatchable, batch_behind, batch_first, batched_key, broadcast_batch
from .registry import define


# ---------------------------------------------------------------- reshape / transpose / broadcast
def permutation(axes, ndim):
    """A transpose's `axes` option as a permutation of range(ndim) (None reverses the axes)."""
    return tuple(range(ndim - 1, -1, -1)) if axes is None else tuple(a % ndim for a in axes)


def _inverse(axes):
    """The permutation undoing `axes` (None: the reversal, its own inverse)."""
    if axes is None:
        return None
    return tuple(int(i) for i in np.argsort([a % len(axes) for a in axes]))


def _reshape_batch(ns, args, batched, kw):
    """Each example reshaped: the batch axis stays in front."""
    x = args[0]
    return ns.reshape(x, shape_of(x)[:1] + _example_shape(kw["shape"], shape_of(x)[1:]))


def _example_shape(shape, example):
    """A reshape's target for one example, with its -1 worked out."""
    if -1 not in shape:
        return tuple(shape)
    known = int(np.prod([s for s in shape if s != -1]))
    size = int(np.prod(example))
    return tuple(size // known if s == -1 else s for s in shape)


define("Reshape", O.reshape, linear=True, emit={"array": "{0}.reshape({shape})", "bools": True},
       vjp=(lambda ns, g, ans, x, shape=None: ns.reshape(g, shape_of(x)),),
       jvp=lambda ns, tangents, ans, args, kw: ns.reshape(tangents[0], shape_of(ans)),
       batch=_reshape_batch, keeps_nan=True)


def _transpose_batch(ns, args, batched, kw):
    """The examples' axes permuted behind the batch axis."""
    x = args[0]
    axes = permutation(kw.get("axes"), len(shape_of(x)) - 1)
    return ns.transpose(x, (0,) + tuple(a + 1 for a in axes))


define("TransposeOp", O.transpose, linear=True, emit={"array": "np.transpose({0}, {axes})", "bools": True},
       vjp=(lambda ns, g, ans, x, axes=None: ns.transpose(g, _inverse(axes)),),
       jvp=lambda ns, tangents, ans, args, kw: ns.transpose(tangents[0], kw.get("axes")),
       batch=_transpose_batch, keeps_nan=True)


def _broadcast_batch(ns, args, batched, kw):
    """Each example broadcast to the shape: the batch axis in front, the example lined up behind it."""
    x = args[0]
    shape = tuple(kw["shape"])
    ex = shape_of(x)[1:]
    x = ns.reshape(x, shape_of(x)[:1] + (1,) * (len(shape) - len(ex)) + ex)
    return ns.broadcast_to(x, shape_of(x)[:1] + shape)


# a number broadcast (a sum's cotangent) is a new array: np.full takes a fifth of broadcast_to's time
define("BroadcastTo", O.broadcast_to, linear=True,
       emit={"array": "np.broadcast_to({0}, {shape})", "from_float": "np.full({shape}, {0})"},
       vjp=(lambda ns, g, ans, x, shape=None: ns.unbroadcast(g, shape_of(x)),),
       jvp=lambda ns, tangents, ans, args, kw: ns.broadcast_to(tangents[0], kw["shape"]),
       batch=_broadcast_batch, keeps_nan=True)


# ---------------------------------------------------------------- indexing
def _index_batch(ns, args, batched, kw):
    """x[key] for each example: the batch axis is one more leading slice."""
    key, moved = batched_key(kw["key"], len(shape_of(args[0])) - 1)
    return batch_first(ns, ns.index(args[0], key), moved)


for _name in ("Index", "GatherOp"):
    define(_name, O.index, linear=True, keeps_nan=True, emit={"array": "{0}[{key}]", "bools": True},
           vjp=(lambda ns, g, ans, x, key=None, op=None: ns.index_add(g, key, shape_of(x)),),
           jvp=lambda ns, tangents, ans, args, kw: ns.index(tangents[0], kw["key"]),
           batch=_index_batch)


def _row_batch(ns, args, batched, kw):
    """Row i of each example: the batch axis moved behind the rows, then row i (i is never batched:
    it is a loop's variable)."""
    x, i = args
    return ns.row(batch_behind(ns, x, 1), i)


define("Row", O.row, linear=True, emit={"array": "{0}[{1}]", "ints": True},
       vjp=(lambda ns, g, ans, x, i: ns.row_add(g, i, shape_of(x)), None),
       jvp=lambda ns, tangents, ans, args, kw: None if tangents[0] is None else ns.row(tangents[0], args[1]),
       batch=_row_batch, keeps_nan=True, indexed=True)


def _row_add_batch(ns, args, batched, kw):
    """Each example's g at its row i: written with the rows in front, then the batch moved behind them."""
    g, i = args
    shape = tuple(kw["shape"])
    return batch_behind(ns, ns.row_add(g, i, shape[:1] + shape_of(g)[:1] + shape[1:]), 1)


define("RowAdd", O.row_add, linear=True,
       vjp=(lambda ns, g, ans, gr, i, shape=None: ns.row(g, i), None),
       jvp=lambda ns, tangents, ans, args, kw: None if tangents[0] is None else ns.row_add(tangents[0], args[1], kw["shape"]),
       batch=_row_add_batch, keeps_nan=True, indexed=True)


def _set_row_jvp(ns, tangents, ans, args, kw):
    """x's tangent with v's tangent written at row i (zeros for whichever has none)."""
    tx, _, tv = tangents
    if tx is None and tv is None:
        return None
    base = tx if tx is not None else np.zeros(shape_of(args[0]))
    return ns.set_row(base, args[1], tv if tv is not None else 0.0)


def _written_per_example(ns, args, batched, what):
    """(x, i, v) of a batched write at a staged int i (SetRow, SetRows), x given its batch axis
    where only v has one; i is never batched (it is a loop's variable)."""
    x, i, v = args
    bx, bi, _ = batched
    if bi:
        raise Unbatchable(f"a tensor's {what} written at a batched position")
    if not bx:
        x = ns.broadcast_to(x, shape_of(v)[:1] + shape_of(x))
    return x, i, v


def _set_row_batch(ns, args, batched, kw):
    """Row i of each example set to its v: written with the rows in front, then the batch moved
    back to axis 0 (i is never batched: it is a loop's variable)."""
    x, i, v = _written_per_example(ns, args, batched, "row")
    bv = batched[2]
    rest = shape_of(x)[2:]
    if bv and len(shape_of(v)) - 1 < len(rest):     # v's batch axis lined up with the row's
        v = ns.reshape(v, shape_of(v)[:1] + (1,) * (len(rest) - len(shape_of(v)) + 1) + shape_of(v)[1:])
    return batch_behind(ns, ns.set_row(batch_behind(ns, x, 1), i, v), 1)


define("SetRow", O.set_row,
       vjp=(lambda ns, g, ans, x, i, v: ns.set_row(g, i, 0.0), None,
            lambda ns, g, ans, x, i, v: ns.unbroadcast(ns.row(g, i), shape_of(v))),
       jvp=_set_row_jvp, batch=_set_row_batch, keeps_nan=True, indexed=True, plain=O.set_row_plain)


# ---------------------------------------------------------------- n rows from a staged int: x[i:i + n]
def _set_rows_jvp(ns, tangents, ans, args, kw):
    """x's tangent with v's tangent written at the rows (zeros for whichever has none)."""
    tx, _, tv = tangents
    if tx is None and tv is None:
        return None
    base = tx if tx is not None else np.zeros(shape_of(args[0]))
    return ns.set_rows(base, args[1], tv if tv is not None else 0.0, kw["n"])


def _set_rows_batch(ns, args, batched, kw):
    """Each example's rows set to its v, written with the rows in front of the batch axis (i is never
    batched: it is a loop's variable); v lined up with the rows and the batch as numpy would
    broadcast it against one example's rows."""
    x, i, v = _written_per_example(ns, args, batched, "rows")
    bv = batched[2]
    size = shape_of(x)[0]
    depth = len(shape_of(x)) - 1        # the axes of one example's rows
    if bv:
        example = shape_of(v)[1:]
        v = batch_behind(ns, ns.reshape(v, (size,) + (1,) * (depth - len(example)) + example), 1)
    elif len(shape_of(v)) == depth:     # v has the rows axis: the batch goes behind it
        v = ns.reshape(v, shape_of(v)[:1] + (1,) + shape_of(v)[1:])
    return batch_behind(ns, ns.set_rows(batch_behind(ns, x, 1), i, v, kw["n"]), 1)


define("Rows", O.rows, linear=True, plain=O.rows_plain,
       vjp=(lambda ns, g, ans, x, i, n=None: ns.rows_add(g, i, shape_of(x)), None),
       jvp=lambda ns, tangents, ans, args, kw: None if tangents[0] is None else ns.rows(tangents[0], args[1], kw["n"]),
       batch=lambda ns, args, batched, kw: batch_behind(ns, ns.rows(batch_behind(ns, args[0], 1), args[1], kw["n"]), 1),
       keeps_nan=True, indexed=True)
define("RowsAdd", O.rows_add, linear=True,
       vjp=(lambda ns, g, ans, gr, i, shape=None: ns.rows(g, i, shape_of(gr)[0]), None),
       jvp=lambda ns, tangents, ans, args, kw: None if tangents[0] is None else ns.rows_add(tangents[0], args[1], kw["shape"]),
       batch=lambda ns, args, batched, kw: batch_behind(ns, ns.rows_add(
           batch_behind(ns, args[0], 1), args[1], tuple(kw["shape"][:1]) + shape_of(args[0])[:1] + tuple(kw["shape"][1:])), 1),
       keeps_nan=True, indexed=True)
define("SetRows", O.set_rows, plain=O.set_rows_plain,
       vjp=(lambda ns, g, ans, x, i, v, n=None: ns.set_rows(g, i, 0.0, n), None,
            lambda ns, g, ans, x, i, v, n=None: ns.unbroadcast(ns.rows(g, i, n), shape_of(v))),
       jvp=_set_rows_jvp, batch=_set_rows_batch, keeps_nan=True, indexed=True)


def _index_add_batch(ns, args, batched, kw):
    """zeros(shape) with each example's g added at key, for every example at once."""
    g = args[0]
    size = shape_of(g)[0]
    key, moved = batched_key(kw["key"], len(kw["shape"]))
    return ns.index_add(batch_behind(ns, g, moved), key, (size,) + tuple(kw["shape"]))


define("IndexAdd", O.index_add, linear=True,
       vjp=(lambda ns, g, ans, x, key=None, shape=None: ns.index(g, key),),
       jvp=lambda ns, tangents, ans, args, kw: ns.index_add(tangents[0], kw["key"], kw["shape"]),
       batch=_index_add_batch, keeps_nan=True)


def _set_index_jvp(ns, tangents, ans, args, kw):
    """x's tangent with v's tangent written at key (zeros for whichever has none)."""
    tx, tv = tangents
    x, v = args
    if tx is None and tv is None:
        return None
    base = tx if tx is not None else np.zeros(shape_of(x))
    return ns.set_index(base, kw["key"], tv if tv is not None else 0.0)


def _set_index_batch(ns, args, batched, kw):
    """x[key] = v in every example."""
    x, v = args
    bx, bv = batched
    size = shape_of(x)[0] if bx else shape_of(v)[0]
    if not bx:
        x = ns.broadcast_to(x, (size,) + shape_of(x))
    key, moved = batched_key(kw["key"], len(shape_of(x)) - 1)
    if bv:      # v is one value per example: lined up with the batch's x[key]
        target = shape_of(np.zeros(shape_of(x))[key])
        if moved is None and len(shape_of(v)) < len(target):
            v = ns.reshape(v, shape_of(v)[:1] + (1,) * (len(target) - len(shape_of(v))) + shape_of(v)[1:])
        v = batch_behind(ns, v, moved)
    return ns.set_index(x, key, v)


def written(shape, key):
    """Which entries of x[key] (x of `shape`) the result of x[key] = v keeps: where an index
    array names a position twice, the one write numpy makes last there; None where no position
    repeats (slices, ints and masks never do). Found by the same assignment the kernel makes."""
    if not any(type(k) is np.ndarray and k.dtype.kind in "iu" and k.size > 1 for k in
               (key if type(key) is tuple else (key,))):
        return None
    slots = np.arange(int(np.prod(shape))).reshape(shape)[key]
    if np.unique(slots).size == slots.size:
        return None
    order = np.full(shape, -1)
    order[key] = np.arange(slots.size).reshape(slots.shape)
    return order[key] == np.arange(slots.size).reshape(slots.shape)


def _set_index_v_vjp(ns, g, ans, x, v, key=None):
    """The cotangent of x[key] reaching v: an entry overwritten by a later write of the same
    position reaches nothing (`x[[0, 0]] = [a, b]` keeps b)."""
    part = ns.index(g, key)
    keep = written(shape_of(x), key)
    return ns.unbroadcast(part if keep is None else ns.where(keep, part, 0.0), shape_of(v))


define("SetIndex", _set_index_forward,
       vjp=(lambda ns, g, ans, x, v, key=None: ns.set_index(g, key, 0.0), _set_index_v_vjp),
       jvp=_set_index_jvp, batch=_set_index_batch, keeps_nan=True)


# ---------------------------------------------------------------- cat / stack
def _cat_vjp(ns, g, ans, args, kw, wanted):
    """Split the cotangent of a concatenation back into its pieces."""
    nd = len(shape_of(args[0]))
    axis = (int(kw.get("axis", 0)) + nd) % nd
    out, start = [], 0
    for a, want in zip(args, wanted):
        n = shape_of(a)[axis]
        out.append(ns.index(g, (slice(None),) * axis + (slice(start, start + n),)) if want else None)
        start += n
    return out


def _zeros_for(tangents, args):
    """The tangents, with zeros standing in for the missing ones."""
    return tuple(t if t is not None else np.zeros(shape_of(a)) for t, a in zip(tangents, args))


def _cat_jvp(ns, tangents, ans, args, kw):
    """The tangents concatenated."""
    if all(t is None for t in tangents):
        return None
    return ns.cat(_zeros_for(tangents, args), kw.get("axis", 0))


def _join_batch(kind):
    """cat/stack of examples: every piece batched, the axis moved past the batch."""
    def rule(ns, args, batched, kw):
        pieces = broadcast_batch(ns, args, batched)
        nd = len(shape_of(pieces[0])) - 1 + (kind == "stack")
        axis = int(kw.get("axis", 0)) % nd + 1
        return (ns.cat if kind == "cat" else ns.stack)(tuple(pieces), axis)
    return rule


define("CatOp", _cat, vjp_all=_cat_vjp, jvp=_cat_jvp, batch=_join_batch("cat"), linear=True, keeps_nan=True)


def _stack_vjp(ns, g, ans, args, kw, wanted):
    """Each stacked element's slice of the cotangent."""
    nd = len(shape_of(args[0])) + 1
    axis = (int(kw.get("axis", 0)) + nd) % nd
    return [ns.index(g, (slice(None),) * axis + (i,)) if want else None for i, want in enumerate(wanted)]


def _floats_stacked(kinds):
    """Stack's template for floats (a state written as a row, [x, v]): the vector of them."""
    if any(k != "float" for k in kinds):
        return None
    return "np.array((" + "".join(f"{{{j}}}, " for j in range(len(kinds))) + "))"


define("Stack", _stack, vjp_all=_stack_vjp, linear=True, batch=_join_batch("stack"), emit={"from_float": _floats_stacked},
       jvp=lambda ns, tangents, ans, args, kw: None if all(t is None for t in tangents) else
       ns.stack(_zeros_for(tangents, args), kw.get("axis", 0)), keeps_nan=True)


# ---------------------------------------------------------------- linspace
def _linspace_share(ans, of_start):
    """How much each point of linspace(a, b, n) moves with a (1 - t) or with b (t), t = i / (n - 1)."""
    t = np.linspace(0.0, 1.0, shape_of(ans)[-1])
    return 1.0 - t if of_start else t


def _linspace_jvp(ns, tangents, ans, args, kw):
    """(1 - t) da + t db."""
    ta, tb = tangents[0], tangents[1]
    out = None
    for t, of_start in ((ta, True), (tb, False)):
        if t is not None:
            term = ns.mul(t, _linspace_share(ans, of_start))
            out = term if out is None else ns.add(out, term)
    return out


def _linspace_batch(ns, args, batched, kw):
    """Every example's linspace(a, b, n) as numpy computes one, a + i * ((b - a) / (n - 1)) with
    the last point b itself: the same points, to the bit, as the examples' own calls (a histogram's
    edges decide in which bin a value on an edge falls)."""
    a, b, n = args
    col = lambda v, is_batched: ns.reshape(v, (shape_of(v)[0], 1)) if is_batched else v
    a, b = col(a, batched[0]), col(b, batched[1])
    if n < 2:
        t = np.linspace(0.0, 1.0, n)
        return ns.add(ns.mul(a, 1.0 - t), ns.mul(b, t))
    steps = np.arange(float(n))
    points = ns.add(ns.mul(steps, ns.div(ns.sub(b, a), float(n - 1))), a)
    return ns.where(steps == n - 1, b, points)


def _linspace_impl(a, b, n):
    """linspace(a, b, n) on values unboxed at one level (the builtin has checked that the bounds
    are numbers): recorded again where a bound is boxed by an outer level."""
    if type(a) is Box or type(b) is Box:
        return record("Linspace", (a, b, n))
    return np.linspace(to_float(a), to_float(b), n)


define("Linspace", _linspace_impl, linear=True, jvp=_linspace_jvp, batch=_linspace_batch,
       vjp=(lambda ns, g, ans, a, b, n: ns.sum(ns.cmul(g, _linspace_share(ans, True))),
            lambda ns, g, ans, a, b, n: ns.sum(ns.cmul(g, _linspace_share(ans, False))),
            None))
