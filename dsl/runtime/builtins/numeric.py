"""numpy's everyday functions a scientist reaches for (any, all, logical_and/or/xor/not, isclose,
isinf, squeeze, expand_dims, broadcast_to, ravel, moveaxis, swapaxes, full_like, square, sinc, cross,
trapezoid, interp, quantile, median, histogram), composed of dg's primitives: their
derivatives, batching, staging and lowering are those of the primitives they record, so each
differentiates, vmaps and jits as they do, on every backend."""

import math

import numpy as np

from ...core import ops
from ...core.ops.core import check_broadcast, check_shape_arg, check_size, fmt_shape
from ...core.tape import concrete, peek, raw
from ...core.values import brief, type_name
from ...errors import error
from .arrays import _along, _axis, _numbers, _tensor_shape, flag
from .tensors import full, linspace


# ---------------------------------------------------------------- truth of entries
def any_(x, axis=None, keepdims=False):
    """any(x, axis=none, keepdims=false): whether any entry is true (not zero; nan counts as true)."""
    x = _numbers(ops.sequence_operand(x), "any")
    return ops.order(">", ops.sum_(ops.ne(x, 0), _axis(axis, np.ndim(peek(x)), "any", True), keepdims), 0)


def all_(x, axis=None, keepdims=False):
    """all(x, axis=none, keepdims=false): whether every entry is true (not zero; nan counts as true)."""
    x = _numbers(ops.sequence_operand(x), "all")
    return ops.eq(ops.sum_(ops.eq(x, 0), _axis(axis, np.ndim(peek(x)), "all", True), keepdims), 0)


def _mask(x, who):
    """A mask of x's entries: bools as they are, numbers true where not zero (numpy's truth)."""
    x = _numbers(x, who)
    v = peek(x)
    return x if type(v) is bool or getattr(v, "dtype", None) == np.bool_ else ops.ne(x, 0)


def _masks(a, b, who):
    """Two masks that broadcast together, or dg's shape error."""
    a, b = _mask(a, who), _mask(b, who)
    check_broadcast(peek(a), peek(b), f"{who.split('_')[1]} the masks of")
    return a, b


def logical_and(a, b):
    """logical_and(a, b): entry by entry, whether both are true (numpy's &, on masks)."""
    return ops.logical_and(*_masks(a, b, "logical_and"))


def logical_or(a, b):
    """logical_or(a, b): entry by entry, whether either is true (numpy's |, on masks)."""
    return ops.logical_or(*_masks(a, b, "logical_or"))


def logical_xor(a, b):
    """logical_xor(a, b): entry by entry, whether exactly one is true."""
    return ops.ne(*_masks(a, b, "logical_xor"))


def logical_not(x):
    """logical_not(x): entry by entry, whether x is false (numpy's ~, on masks)."""
    return ops.logical_not(_mask(x, "logical_not"))


def isclose(a, b, rtol=1e-05, atol=1e-08):
    """isclose(a, b, rtol=1e-05, atol=1e-08): entry by entry, whether |a - b| <= atol + rtol |b|."""
    a, b = _numbers(a, "isclose"), _numbers(b, "isclose")
    rtol, atol = raw(rtol), raw(atol)
    if any(type(t) not in (float, int) for t in (rtol, atol)):
        raise error("type", "isclose: rtol and atol must be numbers")
    near = ops.order("<=", ops.abs_(ops.sub(a, b)), ops.add(atol, ops.mul(rtol, ops.abs_(b))))
    return ops.logical_or(ops.eq(a, b), near)       # inf is close to itself, as numpy's


def isinf(x):
    """isinf(x): which entries are infinite, either sign (a bool tensor; a bool for a number)."""
    x = _numbers(x, "isinf")
    return False if type(peek(x)) is int else ops.eq(ops.abs_(x), np.inf)


# ---------------------------------------------------------------- shapes
def squeeze(x, axis=None):
    """squeeze(x, axis=none): x without its axes of length 1 (all of them, or the given ones)."""
    shape = _tensor_shape(x, "squeeze")
    if raw(axis) is None:
        gone = {a for a, n in enumerate(shape) if n == 1}
    else:
        found = _axis(axis, len(shape), "squeeze", True)
        gone = set(found if type(found) is tuple else (found,))
        for a in sorted(gone):
            if shape[a] != 1:
                raise error("shape", f"squeeze: axis {a} of a tensor of shape {fmt_shape(shape)} has length "
                                     f"{shape[a]}, not 1")
    return ops.reshape(x, tuple(n for a, n in enumerate(shape) if a not in gone))


def expand_dims(x, axis):
    """expand_dims(x, axis): x with a new axis of length 1 at each position given (in the result)."""
    shape = _tensor_shape(x, "expand_dims")
    given = raw(axis)
    positions = given if type(given) is tuple else (given,)
    nd = len(shape) + len(positions)
    at = _axes_given(tuple(positions), nd, "expand_dims")
    rest = iter(shape)
    return ops.reshape(x, tuple(1 if a in at else next(rest) for a in range(nd)))


def broadcast_to(x, shape):
    """broadcast_to(x, shape): x repeated along new leading axes and its axes of length 1 (numpy's)."""
    have = _tensor_shape(x, "broadcast_to")
    want = check_shape_arg(shape)
    try:
        fits = np.broadcast_shapes(have, want) == want
    except ValueError:
        fits = False
    if not fits:
        raise error("shape", f"broadcast_to: a tensor of shape {fmt_shape(have)} does not broadcast to "
                             f"{fmt_shape(want)}")
    check_size(want, "broadcast_to result")
    return ops.broadcast_to(x, want)


def ravel(x):
    """ravel(x): x's entries in one axis, in row-major order."""
    return ops.reshape(x, (int(np.prod(_tensor_shape(x, "ravel"))),))


def _axes_given(v, nd, who):
    """An int axis or a tuple of them (none is not one here), normalised against nd axes."""
    v = concrete(v)     # a tuple's staged ints too (jit's), guarded
    items = v if type(v) is tuple else (v,)
    if any(i is None for i in items):
        raise error("type", f"{who}: an axis must be an int, got none")
    return _axis(tuple(items), nd, who, True)


def moveaxis(x, source, destination):
    """moveaxis(x, source, destination): x with the axes at source (an int or a tuple) moved to the
    positions destination, the others kept in order (numpy's)."""
    shape = _tensor_shape(x, "moveaxis")
    nd = len(shape)
    src, dst = _axes_given(source, nd, "moveaxis"), _axes_given(destination, nd, "moveaxis")
    if len(src) != len(dst):
        raise error("value", f"moveaxis: source and destination must name as many axes, got {len(src)} "
                             f"and {len(dst)}")
    return ops.moveaxis(x, src, dst)


def swapaxes(x, axis1, axis2):
    """swapaxes(x, axis1, axis2): x with two axes exchanged."""
    shape = _tensor_shape(x, "swapaxes")
    (a,), (b,) = _axes_given(axis1, len(shape), "swapaxes"), _axes_given(axis2, len(shape), "swapaxes")
    order = list(range(len(shape)))
    order[a], order[b] = b, a
    return ops.transpose(x, tuple(order))


def full_like(x, v, dtype=None):
    """full_like(x, v, dtype=none): a tensor of x's shape (and element type, unless dtype says
    another) filled with v; a differentiated v keeps its gradient, as full's does."""
    shape = _tensor_shape(x, "full_like")
    like = peek(x)
    if type(peek(v)) not in (int, float, bool):
        raise error("type", f"full_like needs a number to fill with, got {type_name(peek(v))}")
    kind = np.result_type(like) if dtype is None else ops.dtype_arg(dtype, "full_like")
    return full(shape, v, np.dtype(kind).name)


# ---------------------------------------------------------------- arithmetic
def square(x):
    """square(x): x * x, entry by entry."""
    x = _numbers(x, "square")
    return ops.mul(x, x)


# sin(t) / t's Taylor series, 1 - t^2/3! + t^4/5! - ..., to t^20: within a rounding of it where
# |t| < SINC_SERIES, and exact at 0 in every derivative up to the twentieth (the quotient is 0 / 0
# there, and its derivatives near 0 cancel: the third's keeps 9 digits at t = 0.03, 15 at 0.5)
SINC_SERIES = 0.5
SINC_TERMS = tuple((-1.0) ** k / math.factorial(2 * k + 1) for k in range(11))


def sinc(x):
    """sinc(x): sin(pi x) / (pi x), and 1 at 0 (numpy's normalised sinc)."""
    t = ops.mul(_numbers(x, "sinc"), np.pi)
    near = ops.order("<", ops.abs_(t), SINC_SERIES)
    away = ops.where(near, 1.0, t)      # no 0 / 0 in the branch not taken, nor in its derivatives
    t2 = ops.mul(t, t)
    series = SINC_TERMS[-1]
    for c in reversed(SINC_TERMS[:-1]):
        series = ops.add(ops.mul(series, t2), c)
    return ops.where(near, series, ops.div(ops.sin(away), away))


def cross(a, b, axis=-1):
    """cross(a, b, axis=-1): the cross product of 3-vectors along an axis (batched over the rest)."""
    sa, sb = _tensor_shape(a, "cross"), _tensor_shape(b, "cross")
    axis = -1 if raw(axis) is None else axis        # numpy's and JAX's: none leaves the last axis
    ka, kb = _axis(axis, len(sa), "cross"), _axis(axis, len(sb), "cross")
    if sa[ka] != 3 or sb[kb] != 3:
        raise error("shape", f"cross needs vectors of length 3 along the axis, got shapes {fmt_shape(sa)} and "
                             f"{fmt_shape(sb)}")
    a1, a2, a3 = (ops.index(a, _along(ka, i)) for i in range(3))
    b1, b2, b3 = (ops.index(b, _along(kb, i)) for i in range(3))
    parts = (ops.sub(ops.mul(a2, b3), ops.mul(a3, b2)), ops.sub(ops.mul(a3, b1), ops.mul(a1, b3)),
             ops.sub(ops.mul(a1, b2), ops.mul(a2, b1)))
    out = ops.stack(parts, -1)
    nd = len(np.shape(peek(out)))
    at = ka - len(sa) + nd          # a's axis, counted in the (broadcast) result's axes
    return out if at == nd - 1 else ops.transpose(out, _moved(nd, at))


def _moved(nd, at):
    """The axes order that moves the last axis of an nd tensor to position `at`."""
    order = list(range(nd - 1))
    order.insert(at, nd - 1)
    return tuple(order)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """trapezoid(y, x=none, dx=1.0, axis=-1): the integral of y along an axis by the trapezoid rule,
    at sample points x (a vector along that axis, or y's shape) or spaced dx apart."""
    shape = _tensor_shape(y, "trapezoid")
    if not shape:
        raise error("shape", "trapezoid needs a tensor with at least one axis, got a number")
    a = _axis(axis, len(shape), "trapezoid")
    if raw(x) is None:
        d = dx
    else:
        xs = _tensor_shape(x, "trapezoid")
        if not xs:
            raise error("type", "trapezoid: x is the sample points, a tensor, got a number",
                        hint=f"a spacing goes by name: trapezoid(y, dx={brief(raw(x))})")
        d = ops.sub(ops.index(x, _along(len(xs) - 1 if len(xs) == 1 else a, slice(1, None))),
                    ops.index(x, _along(len(xs) - 1 if len(xs) == 1 else a, slice(None, -1))))
        if len(xs) == 1:
            if xs[0] != shape[a]:
                raise error("shape", f"trapezoid: x has {xs[0]} points, y {shape[a]} along axis {a}")
            d = ops.reshape(d, tuple(xs[0] - 1 if k == a else 1 for k in range(len(shape))))
        elif xs != shape:
            raise error("shape", f"trapezoid: x must be a vector or of y's shape {fmt_shape(shape)}, got "
                                 f"{fmt_shape(xs)}")
    mid = ops.mul(ops.add(ops.index(y, _along(a, slice(1, None))), ops.index(y, _along(a, slice(None, -1)))), 0.5)
    return ops.sum_(ops.mul(mid, d), a)


def interp(x, xp, fp, left=None, right=None):
    """interp(x, xp, fp, left=none, right=none): the piecewise-linear function through the points
    (xp, fp), xp increasing, at x (numpy's interp): fp[0] (or left) below xp[0], fp[-1] (or right)
    above xp[-1]."""
    x = _numbers(x, "interp")
    sp, sf = _tensor_shape(xp, "interp"), _tensor_shape(fp, "interp")
    if len(sp) != 1 or sp != sf or sp[0] == 0:
        raise error("shape", f"interp needs xp and fp of one same length (vectors), got shapes {fmt_shape(sp)} "
                             f"and {fmt_shape(sf)}")
    n = sp[0]
    first, last = ops.index(fp, (0,)), ops.index(fp, (n - 1,))
    if n == 1:      # one knot: its value where x is on it
        inside = first
    else:
        # the segment each x falls in: how many knots lie at or below it, less one, kept inside;
        # read with take_along, which takes a position the program computes (a staged one too)
        shape = np.shape(peek(x))
        flat = ops.reshape(x, (int(np.prod(shape)), 1))
        i = ops.clamp(ops.sub(ops.sum_(ops.order(">=", flat, xp), -1), 1.0), 0.0, float(n - 2))
        j = ops.add(i, 1.0)
        x0, x1, y0, y1 = (ops.reshape(ops.take_along(v, k, 0), shape) for v, k in ((xp, i), (xp, j), (fp, i), (fp, j)))
        inside = ops.add(y0, ops.mul(ops.div(ops.sub(x, x0), ops.sub(x1, x0)), ops.sub(y1, y0)))
    out = ops.where(ops.order("<", x, ops.index(xp, (0,))), first if left is None else left, inside)
    return ops.where(ops.order(">", x, ops.index(xp, (n - 1,))), last if right is None else right, out)


# ---------------------------------------------------------------- order statistics
def quantile(x, q, axis=None, keepdims=False):
    """quantile(x, q, axis=none, keepdims=false): the q-th quantile (q in [0, 1]) over all entries or
    along an axis, interpolating linearly between the sorted entries (numpy's default method);
    nan where a nan is among them. A tensor of q gives one quantile per entry, along new leading
    axes (numpy's)."""
    shape = _tensor_shape(x, "quantile")
    ops.check_keepdims(raw(keepdims), "quantile")
    qv = raw(q)
    if type(qv) is np.ndarray and qv.dtype.kind in "fiu" and qv.size and np.all((qv >= 0) & (qv <= 1)):
        each = [quantile(x, float(p), axis, keepdims) for p in qv.ravel()]
        stacked = ops.stack(tuple(each), 0)
        return ops.reshape(stacked, qv.shape + tuple(np.shape(peek(each[0]))))
    if type(qv) not in (float, int) or not 0 <= qv <= 1:
        raise error("value", f"quantile: q must be a number or a tensor of numbers in [0, 1], got {brief(qv)}")
    if raw(axis) is None:
        flat = ops.reshape(x, (int(np.prod(shape)),))
        out = quantile(flat, q, 0)
        return ops.reshape(out, (1,) * len(shape)) if keepdims else out
    a = _axis(axis, len(shape), "quantile")
    n = shape[a]
    if n == 0:
        raise error("value", f"cannot take the quantile of an empty tensor (shape {fmt_shape(shape)})")
    s = ops.sort(x, a)
    pos = float(qv) * (n - 1)
    lo = int(np.floor(pos))
    hi = min(lo + 1, n - 1)
    frac = pos - lo
    below, above = ops.index(s, _along(a, lo)), ops.index(s, _along(a, hi))
    out = below if frac == 0 else ops.add(below, ops.mul(ops.sub(above, below), frac))
    # numpy's quantile is nan where the entries hold a nan (sort puts it last, out of reach)
    out = ops.where(any_(ops.ne(x, x), a), np.nan, out)
    return ops.reshape(out, (*shape[:a], 1, *shape[a + 1:])) if keepdims else out


def histogram(x, bins=10, range=None, weights=None, density=False):
    """histogram(x, bins=10, range=none, weights=none, density=false): (counts, edges) of x's
    entries, as numpy's: bins equal bins over range (x's min and max when none) or the given
    increasing edges; each bin holds lo <= x < hi, the last its upper edge too."""
    shape = _tensor_shape(x, "histogram")
    n = int(np.prod(shape))
    flat = ops.reshape(x, (n,))
    b = raw(bins)
    if type(b) is int:
        if b < 1:
            raise error("value", f"histogram: bins must be at least 1, got {b}")
        r = raw(range)
        if r is None:
            if n == 0:
                raise error("value", "histogram of an empty tensor needs its range")
            lo, hi = ops.min_(flat), ops.max_(flat)
        elif type(r) is tuple and len(r) == 2 and all(type(peek(e)) in (int, float) for e in r):
            lo, hi = r
        else:
            raise error("type", f"histogram: range must be a (lo, hi) pair of numbers, got {brief(r)}")
        same = ops.eq(lo, hi)       # one value: numpy's bins span it by half a unit either way
        edges = linspace(ops.where(same, ops.sub(lo, 0.5), lo), ops.where(same, ops.add(hi, 0.5), hi), b + 1)
    elif type(b) is np.ndarray and b.ndim == 1 and b.size >= 2:
        if np.any(np.diff(b) < 0) or np.isnan(b).any():
            raise error("value", f"histogram: the edges in bins must increase, got {brief(b)}")
        edges = bins
    else:
        raise error("type", f"histogram: bins must be an int or a vector of at least two edges, got {brief(b)}")
    nb = int(np.shape(peek(edges))[0]) - 1
    last = ops.index(edges, (nb,))
    at = ops.sub(ops.searchsorted(edges, flat, "right"), 1.0)
    at = ops.where(ops.eq(flat, last), float(nb - 1), at)        # the last bin holds its upper edge
    inside = ops.logical_and(ops.order(">=", flat, ops.index(edges, (0,))), ops.order("<=", flat, last))
    if raw(weights) is not None and _tensor_shape(weights, "histogram") != shape:
        raise error("shape", f"histogram: weights must have x's shape {fmt_shape(shape)}, got "
                             f"{fmt_shape(_tensor_shape(weights, 'histogram'))}")
    w = np.ones(n) if raw(weights) is None else ops.reshape(weights, (n,))
    counts = ops.put_along(ops.where(inside, w, 0.0), ops.clamp(at, 0.0, float(nb - 1)), 0, (nb,))
    if flag(density, "histogram: density"):
        widths = ops.sub(ops.index(edges, (slice(1, None),)), ops.index(edges, (slice(None, -1),)))
        counts = ops.div(counts, ops.mul(ops.sum_(counts), widths))
    return counts, edges


def median(x, axis=None, keepdims=False):
    """median(x, axis=none, keepdims=false): the middle of the sorted entries (the mean of the two
    middle ones for an even count), over all entries or along an axis; nan where a nan is among them."""
    ops.check_keepdims(raw(keepdims), "median")
    return quantile(x, 0.5, axis, keepdims)


BUILTINS = {"any": any_, "all": all_, "isclose": isclose, "squeeze": squeeze, "expand_dims": expand_dims,
            "broadcast_to": broadcast_to, "ravel": ravel, "moveaxis": moveaxis, "swapaxes": swapaxes,
            "full_like": full_like, "isinf": isinf, "logical_and": logical_and, "logical_or": logical_or,
            "logical_xor": logical_xor, "logical_not": logical_not,
            "square": square, "sinc": sinc, "cross": cross, "trapezoid": trapezoid, "interp": interp,
            "quantile": quantile, "median": median, "histogram": histogram}
NAMES = list(BUILTINS)
