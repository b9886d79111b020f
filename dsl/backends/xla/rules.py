"""How each primitive is computed on XLA: a table of lowering rules, and the primitives that
keep a program on the numpy backend, each with its reason.

A rule is `rule(L, *args, **kw)`: the primitive's arguments as JAX values (or the constants
the step holds), its options as recorded, and `L` the lowering (lower.py): `L.np` is
jax.numpy, `L.lax`, `L.special` (jax.scipy.special), `L.nn` (jax.nn), `L.linalg`
(jax.scipy.linalg), and `L.require(ok)` adds a flag that must hold for the result to be the
numpy backend's (an int division by zero, a matrix numpy would refuse): where one fails, the
call runs on the numpy backend, which says what went wrong as it always does.

The result's type and shape are checked against what the step gave when it was staged
(lower.py), so a rule that differs from the kernel is found when the program is lowered, not
by a wrong answer. `ON_HOST` names the primitives numpy's own kernel computes on the host while
XLA runs (effects, keyed draws). A primitive in none of the three tables fails the test that
asks for every one.
"""

import itertools

import numpy as np

from ...core.ops.dtypes import int_range
from ...core.primitives.shape import written
from .errors import NotLowerable
from .keyed import KEYED
from .matrix_rules import MATRIX, finite_or_refused

# ---------------------------------------------------------------- elementwise
def _erfinv(L, x):
    """JAX's erfinv, then one step of numpy's kernel's refinement (dsl/core/ops/special.py): Halley's
    on erf for |x| <= 0.5, Newton's on ln erfc beyond. JAX's alone is off by 4e-13 at 0.999999, which
    the derivative, exp(erfinv(x)^2), makes 1e-11."""
    jnp, special = L.np, L.special
    a = jnp.abs(x)
    y = special.erfinv(a)
    d = (2.0 / np.sqrt(np.pi)) * jnp.exp(-y * y)
    refine = jnp.isfinite(y) & (d > 0)
    ys = jnp.where(refine, y, 1.0)
    d = jnp.where(refine, d, 1.0)
    r = special.erf(ys) - a
    c = special.erfc(ys)
    tail = ys + (jnp.log(c) - jnp.log1p(-a)) * c / d
    y = jnp.where(refine, jnp.where(a <= 0.5, ys - r / (d + ys * r), tail), y)
    return jnp.copysign(y, x)


def _erfcinv(L, q):
    """The inverse of erfc from the normal quantile of q / 2 (JAX has no erfcinv; ndtri keeps a
    far tail's small q), then one Newton step on ln erfc, as numpy's kernel takes."""
    jnp, special = L.np, L.special
    s = jnp.where(q > 1.0, 2.0 - q, q)
    y = -special.ndtri(0.5 * s) * np.sqrt(0.5)
    c = special.erfc(y)
    d = (2.0 / np.sqrt(np.pi)) * jnp.exp(-y * y)
    refine = jnp.isfinite(y) & (c > 0) & (d > 0)
    y = jnp.where(refine, y + (jnp.log(jnp.where(refine, c, 1.0)) - jnp.log(s)) * c / jnp.where(refine, d, 1.0), y)
    y = jnp.where(q > 1.0, -y, y)
    return jnp.where((q >= 0.0) & (q <= 2.0), y, jnp.nan)


def _floor_int(fn):
    """An int floor-divide or remainder: numpy's where the divisor is not 0 (dg raises there)."""

    def rule(L, a, b):
        if L.is_int(a) and L.is_int(b):
            L.require(L.np.all(b != 0))
        return fn(L.np)(a, b)
    return rule


def _int_numbers(L, a, b):
    """Whether both operands are int numbers: dg's Python ints (not int tensors, which are
    numpy's int64 on both backends)."""
    return L.is_int(a) and L.is_int(b) and not L.np.ndim(a) and not L.np.ndim(b)


def _div(L, a, b):
    """a / b: numpy's, but an int number divided by the int 0 is dg's error (int tensors divide
    as numpy's, to inf)."""
    if _int_numbers(L, a, b):
        L.require(b != 0)
    return L.np.true_divide(a, b)


def _int_exact(fn):
    """a + b, a - b, a * b: numpy's, but where both are int numbers (dg's ints are Python's,
    exact at any size) the result must stay well inside int64, which XLA would wrap around;
    past that the numpy backend computes the call."""

    def rule(L, a, b):
        if _int_numbers(L, a, b):
            L.require(L.np.abs(fn(L.np, L.np.asarray(a, np.float64), L.np.asarray(b, np.float64))) < 2.0 ** 62)
        return fn(L.np, a, b)
    return rule


def _pow(L, a, b):
    """a ** b: an int result only from ints with a non-negative exponent that stays an int64."""
    if L.is_int(a) and L.is_int(b):
        L.require(L.np.all(b >= 0))
        L.require(L.np.all(L.np.abs(L.np.power(a.astype(float), b.astype(float))) < 2.0 ** 62))
    return L.np.power(a, b)


def _nz_zero(L, a, b, r):
    """Where nz replaces r by 0: a or b is 0 and r is not finite (reference 6.7)."""
    np_ = L.np
    return np_.logical_and(np_.logical_or(np_.equal(a, 0), np_.equal(b, 0)), np_.logical_not(np_.isfinite(r)))


def _clamp(L, x, lo=None, hi=None):
    """min(max(x, lo), hi), as numpy's clip (lo > hi gives hi)."""
    out = x if lo is None else L.np.maximum(x, lo)
    return out if hi is None else L.np.minimum(out, hi)


def _astype(L, v, dtype):
    """Astype; a float without a value of the int type it is cast to (NaN, past the range) is
    refused, as numpy's backend refuses it."""
    v = L.np.asarray(v)
    if dtype in ("int32", "int64") and L.np.issubdtype(v.dtype, L.np.floating):
        lo, hi = int_range(dtype)
        whole = L.np.trunc(v)
        L.require(L.np.all((whole >= lo) & (whole < hi)))
    return v.astype(dtype)


UNARY = {
    "Exp": "exp", "Ln": "log", "Log2": "log2", "Log10": "log10", "Sin": "sin", "Cos": "cos", "Sqrt": "sqrt", "Abs": "abs",
    "TanhAct": "tanh", "Log1p": "log1p", "Expm1": "expm1", "Tan": "tan", "Asin": "arcsin", "Acos": "arccos",
    "Atan": "arctan", "Sinh": "sinh", "Cosh": "cosh", "Asinh": "arcsinh", "Acosh": "arccosh", "Atanh": "arctanh",
    "Floor": "floor", "Ceil": "ceil", "Round": "round", "Sign": "sign", "Neg": "negative", "Cbrt": "cbrt",
    "LogicalNot": "logical_not", "IsFinite": "isfinite",
}
BINARY = {
    "Maximum": "maximum", "Minimum": "minimum", "Atan2": "arctan2", "LogAddExp": "logaddexp", "Hypot": "hypot",
    "Equal": "equal", "NotEqual": "not_equal", "Less": "less", "LessEqual": "less_equal",
    "Greater": "greater", "GreaterEqual": "greater_equal", "LogicalAnd": "logical_and", "LogicalOr": "logical_or",
}

LOWER = {name: (lambda fn: lambda L, x: getattr(L.np, fn)(x))(fn) for name, fn in UNARY.items()}
LOWER.update({name: (lambda fn: lambda L, a, b: getattr(L.np, fn)(a, b))(fn) for name, fn in BINARY.items()})
LOWER.update({
    "Add": _int_exact(lambda np_, a, b: np_.add(a, b)),
    "Sub": _int_exact(lambda np_, a, b: np_.subtract(a, b)),
    "Mul": _int_exact(lambda np_, a, b: np_.multiply(a, b)),
    "ScalarMul": _int_exact(lambda np_, a, b: np_.multiply(a, b)),
    "Div": _div,
    "FloorDiv": _floor_int(lambda np_: np_.floor_divide),
    "Mod": _floor_int(lambda np_: np_.mod),
    "Pow": _pow,
    "Sigmoid": lambda L, x: L.nn.sigmoid(x),
    "Relu": lambda L, x: L.np.maximum(x, 0.0),
    "Silu": lambda L, x: x * L.nn.sigmoid(x),
    "Gelu": lambda L, x: 0.5 * x * L.np.where(x < -1.0, L.special.erfc(-x * np.sqrt(0.5)),
                                              1.0 + L.special.erf(x / np.sqrt(2.0))),
    "Erf": lambda L, x: L.special.erf(x),
    "Erfc": lambda L, x: L.special.erfc(x),
    "Erfinv": _erfinv,
    "Erfcinv": _erfcinv,
    "Lgamma": lambda L, x: L.special.gammaln(x),
    "Digamma": lambda L, x: L.special.digamma(x),
    "Trigamma": lambda L, x: L.special.polygamma(1, x),
    "Polygamma": lambda L, n, x: L.special.polygamma(n, x),
    "Softplus": lambda L, x: L.np.logaddexp(0.0, x),
    "LogSigmoid": lambda L, x: -L.np.logaddexp(0.0, -x),
    "Logit": lambda L, x: L.np.log(x) - L.np.log1p(-x),
    "Xlogy": lambda L, a, b: L.special.xlogy(a, b),
    "Where": lambda L, c, a, b: L.np.where(c, a, b),
    "Clamp": _clamp,
    "Nz": lambda L, a, b, r: L.np.where(_nz_zero(L, a, b, r), 0.0, r),
    "NzKept": lambda L, a, b, r: L.np.broadcast_to(L.np.logical_not(_nz_zero(L, a, b, r)),
                                                   L.np.broadcast_shapes(L.np.shape(a), L.np.shape(b), L.np.shape(r))),
    # a product with reference 6.7's zero, where a @ b is not finite (numpy's backend computes it
    # again term by term): jit leaves it out where a result would show the NaN (optimize.py)
    "NzMatMul": lambda L, a, b, r: finite_or_refused(L, r),
    "StopGradient": lambda L, x: x,
    "Astype": _astype,
})


# ---------------------------------------------------------------- reductions and shapes
def _all_finite(L, v, rows=False):
    """AllFinite: no NaN or infinity (with `rows`, for each entry of axis 0)."""
    np_ = L.np
    if rows:
        return np_.isfinite(np_.reshape(v, (np_.shape(v)[0], -1))).all(axis=1)
    return np_.all(np_.isfinite(v)) if np_.issubdtype(np_.result_type(v), np_.floating) else np_.bool_(True)


def _cumsum(L, x, axis=None):
    """numpy's cumsum: over the flattened tensor where no axis is given."""
    return L.np.cumsum(L.np.reshape(x, (-1,))) if axis is None else L.np.cumsum(x, axis=axis)


def _index_add(L, g, key, shape):
    """zeros(shape) with g added at key (repeated indices accumulate). A key of ints and slices
    (no repeats) is a pad of g: XLA's scatter runs one element at a time on CPU (an RK4 loop's
    pass back, four shifted slices per stage, took 15x its forward loop)."""
    padded = _padded(L, g, key, shape)
    if padded is not None:
        return padded
    return L.np.zeros(shape, L.np.result_type(g)).at[key].add(g)


def _padded(L, g, key, shape):
    """zeros(shape) with g at the ints and slices of key, by lax.pad (a slice's step between its
    entries as interior padding); None for a key with anything else (arrays, masks, new axes)."""
    items = key if type(key) is tuple else (key,)
    if any(type(k) not in (int, slice) and k is not Ellipsis for k in items) or list(items).count(Ellipsis) > 1:
        return None
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items = items[:at] + (slice(None),) * (len(shape) - len(items) + 1) + items[at + 1:]
    items = items + (slice(None),) * (len(shape) - len(items))
    np_, lax = L.np, L.lax
    g = np_.broadcast_to(np_.asarray(g), tuple(len(range(*k.indices(n))) for k, n in zip(items, shape) if type(k) is slice))
    config, axis = [], 0
    for k, n in zip(items, shape):
        if type(k) is int:
            k = k + n if k < 0 else k
            g = np_.expand_dims(g, axis)
            config.append((k, n - k - 1, 0))
        else:
            picked = range(*k.indices(n))
            start, step, count = picked.start, picked.step, len(picked)
            if count == 0:
                return np_.zeros(shape, np_.result_type(g))
            if step < 0:        # the same entries in increasing order
                g = np_.flip(g, axis)
                start, step = start + (count - 1) * step, -step
            config.append((start, n - (start + (count - 1) * step) - 1, step - 1))
        axis += 1
    return lax.pad(g, np_.zeros((), np_.result_type(g)), config)


def _put_along(L, g, idx, axis, shape):
    """zeros(shape) with g added at the positions idx along axis (take_along's transpose)."""
    np_ = L.np
    idx = np_.asarray(idx).astype(np_.int64)
    grid = list(np_.indices(idx.shape, sparse=True))
    grid[axis] = idx
    return np_.zeros(shape, np_.result_type(g)).at[tuple(grid)].add(g)


def _row(L, x, i):
    """x[i] for a staged int i, which must be in range (numpy's kernel raises otherwise)."""
    n = L.np.shape(x)[0]
    L.require((i >= -n) & (i < n))
    return x[i]


def _row_add(L, g, i, shape):
    """zeros(shape) with g at row i."""
    return L.np.zeros(shape, L.np.result_type(g)).at[i].set(g)


def storing(L, x, v):
    """x in the type numpy's kernel stores v in (shape.set_index): what x and v promote to, a bool
    tensor given numbers float64. XLA's scatter would cast v to x's type (2.5 into an int tensor: 2)."""
    jnp = L.np
    x = jnp.asarray(x)
    kind = jnp.result_type(x, v)
    if x.dtype == jnp.bool_ and kind != jnp.bool_:
        kind = jnp.float64
    return x.astype(kind)


def _set_row(L, x, i, v):
    """x with row i set to v, for a staged int i in range."""
    x = storing(L, x, v)
    n = L.np.shape(x)[0]
    L.require((i >= -n) & (i < n))
    return x.at[i].set(v)


def _rows(L, x, i, n):
    """x[i:i + n] for a staged int i, the rows in range (structs.item guards it; numpy's kernel
    raises otherwise, where XLA's dynamic slice would move the window)."""
    L.require((i >= 0) & (i <= L.np.shape(x)[0] - n))
    return L.lax.dynamic_slice_in_dim(x, i, n, axis=0)


def _rows_add(L, g, i, shape):
    """zeros(shape) with g at rows i to i + len(g)."""
    return L.lax.dynamic_update_slice_in_dim(L.np.zeros(shape, L.np.result_type(g)), g, i, axis=0)


def _set_rows(L, x, i, v, n):
    """x with rows i to i + n set to v (broadcast to them), the rows in range."""
    x = storing(L, x, v)
    L.require((i >= 0) & (i <= L.np.shape(x)[0] - n))
    rows = L.np.broadcast_to(L.np.asarray(v, x.dtype), (n,) + tuple(L.np.shape(x)[1:]))
    return L.lax.dynamic_update_slice_in_dim(x, rows, i, axis=0)


def _positions(L, shape, idx, batched, nonnegative=False):
    """The index of rows idx (Take, TakeAdd), which must be whole numbers within the axis (numpy's
    kernel raises otherwise, where XLA's gather would clamp them)."""
    jnp = L.np
    n = shape[1 if batched else 0]
    L.require((jnp.floor(idx) == idx) & (idx >= (0 if nonnegative else -n)) & (idx < n))
    i = idx.astype(jnp.int64)
    i = jnp.where(i < 0, i + n, i)
    if not batched:
        return i
    return (jnp.arange(shape[0]).reshape((shape[0],) + (1,) * (i.ndim - 1)), i)


def _take(L, x, idx, batched=False):
    """The rows of x at the positions idx."""
    return x[_positions(L, L.np.shape(x), L.np.asarray(idx), batched)]


def _take_add(L, g, idx, shape, batched=False, nonnegative=False):
    """zeros(shape) with the rows of g added at the positions idx."""
    at = _positions(L, shape, L.np.asarray(idx), batched, nonnegative)
    return L.np.zeros(shape, L.np.result_type(g)).at[at].add(g)


def _last_writer(L, idx, n, batched=False):
    """For each of n rows, the last of the positions idx (flattened) that writes it, or -1: the
    largest, by a scatter of maxima, which XLA computes the same in any order."""
    jnp = L.np
    idx = jnp.asarray(idx)
    if not batched:
        at = _positions(L, (n,), idx, False).reshape(-1)
        return jnp.full((n,), -1, at.dtype).at[at].max(jnp.arange(at.shape[0])).astype(jnp.float64)
    rows, at = _positions(L, (idx.shape[0], n), idx, True)
    at = at.reshape(at.shape[0], -1)
    order = jnp.broadcast_to(jnp.arange(at.shape[1]), at.shape)
    return jnp.full((at.shape[0], n), -1, at.dtype).at[rows.reshape(-1, 1), at].max(order).astype(jnp.float64)


def _set_index(L, x, v, key=None):
    """x with x[key] = v. Where key names a position twice, XLA's scatter may keep either write
    (a GPU's does not promise the order): the write numpy keeps (`written`) is the one scattered."""
    x = storing(L, x, v)
    keep = written(np.shape(x), key)
    if keep is None:
        return x.at[key].set(v)
    slots = np.arange(int(np.prod(np.shape(x)))).reshape(np.shape(x))[key]
    kept = L.np.broadcast_to(L.np.asarray(v), slots.shape)[keep]
    return x.ravel().at[slots[keep]].set(kept).reshape(np.shape(x))


def _searchsorted(L, a, v, side="left"):
    """numpy's searchsorted: an int for a number, float positions for a tensor."""
    found = L.np.searchsorted(a, v, side=side)
    return found.astype(L.np.float64) if L.np.ndim(v) else found


def _take_along(L, x, idx, axis):
    """x's entries at idx along axis; each position must be in range (numpy raises otherwise)."""
    idx = L.np.asarray(idx).astype(L.np.int64)
    n = L.np.shape(x)[axis]
    L.require(L.np.all((idx >= -n) & (idx < n)))
    return L.np.take_along_axis(x, idx, axis=axis)


LOWER.update({
    "Sum": lambda L, x, axis=None, keepdims=False: L.np.sum(x, axis=axis, keepdims=keepdims),
    "Mean": lambda L, x, axis=None, keepdims=False: L.np.mean(x, axis=axis, keepdims=keepdims),
    "Max": lambda L, x, axis=None, keepdims=False: L.np.max(x, axis=axis, keepdims=keepdims),
    "Min": lambda L, x, axis=None, keepdims=False: L.np.min(x, axis=axis, keepdims=keepdims),
    "Prod": lambda L, x, axis=None, keepdims=False: L.np.prod(x, axis=axis, keepdims=keepdims),
    "Var": lambda L, x, axis=None, keepdims=False: L.np.var(x, axis=axis, keepdims=keepdims),
    "LogSumExp": lambda L, x, axis=None, keepdims=False: L.nn.logsumexp(x, axis=axis, keepdims=keepdims),
    "Softmax": lambda L, x, axis=-1: L.nn.softmax(x, axis=axis),
    "LogSoftmax": lambda L, x, axis=-1: L.nn.log_softmax(x, axis=axis),
    "CumSum": _cumsum,
    "CumProd": lambda L, x, axis=0: L.np.cumprod(x, axis=axis),
    "AllFinite": _all_finite,
    "Any": lambda L, a, rows=False: L.np.reshape(a, (L.np.shape(a)[0], -1)).any(axis=1) if rows else L.np.any(a),
    "ArgMax": lambda L, x, axis=None: L.np.argmax(x, axis=axis),
    "ArgMin": lambda L, x, axis=None: L.np.argmin(x, axis=axis),
    "Sort": lambda L, x, axis=-1: L.np.sort(x, axis=axis, stable=True),
    "ArgSort": lambda L, x, axis=-1: L.np.argsort(x, axis=axis, stable=True),
    "TakeAlong": _take_along,
    "SearchSorted": _searchsorted,
    "PutAlong": _put_along,
    "Reshape": lambda L, x, shape: L.np.reshape(x, shape),
    "TransposeOp": lambda L, x, axes=None: L.np.transpose(x, axes),
    "BroadcastTo": lambda L, x, shape: L.np.broadcast_to(x, shape),
    "Index": lambda L, x, key, op="Index": x[key],
    "GatherOp": lambda L, x, key, op="Index": x[key],
    "IndexAdd": _index_add,
    "SetIndex": _set_index,
    "Row": _row,
    "RowAdd": _row_add,
    "SetRow": _set_row,
    "Rows": _rows,
    "RowsAdd": _rows_add,
    "SetRows": _set_rows,
    "Take": _take,
    "TakeAdd": _take_add,
    "LastWriter": _last_writer,
    "Stack": lambda L, *items, axis=0: L.np.stack(items, axis=axis),
    "CatOp": lambda L, *items, axis=0: L.np.concatenate(items, axis=axis),
    "Linspace": lambda L, a, b, n: L.np.linspace(a, b, n),
    "StructField": lambda L, s, field_index=0, total_fields=0, name=None: L.field(s, field_index),
})


# ---------------------------------------------------------------- products, matrices and loops
LOWER.update(MATRIX)
LOWER.update({"Scan": lambda L, *args, **kw: L.scan(args, **kw), "Loop": lambda L, *state, **kw: L.while_loop(state, **kw)})


# ---------------------------------------------------------------- windows (convolution, pooling)
def _places(kernel, stride, dilation, out):
    """Per offset within a window, the strided slices of the trailing axes it reads at every
    window position (dsl/core/primitives/windows.py), offsets in row-major order."""
    for offset in itertools.product(*(range(k) for k in kernel)):
        yield tuple(slice(j * d, j * d + s * (o - 1) + 1, s) for j, d, s, o in zip(offset, dilation, stride, out))


def _windows(L, x, kernel=(), stride=(), dilation=()):
    """Every window of x's trailing axes, (*lead, *positions, *kernel): one strided slice per
    offset, stacked."""
    np_ = L.np
    n = len(kernel)
    lead, sizes = np_.shape(x)[:np_.ndim(x) - n], np_.shape(x)[np_.ndim(x) - n:]
    out = tuple(max((m - d * (k - 1) - 1) // s + 1, 0) for m, k, s, d in zip(sizes, kernel, stride, dilation))
    every = (slice(None),) * len(lead)
    parts = [x[every + place] for place in _places(kernel, stride, dilation, out)]
    return np_.reshape(np_.stack(parts, axis=-1), tuple(lead) + out + tuple(kernel))


def _windows_t(L, g, sizes=(), kernel=(), stride=(), dilation=()):
    """Each window of g added back onto its place: one strided add per offset."""
    np_ = L.np
    n = len(kernel)
    lead = np_.shape(g)[:np_.ndim(g) - 2 * n]
    out = np_.shape(g)[np_.ndim(g) - 2 * n:np_.ndim(g) - n]
    flat = np_.reshape(g, tuple(lead) + tuple(out) + (-1,))
    x = np_.zeros(tuple(lead) + tuple(sizes), np_.result_type(g))
    every = (slice(None),) * len(lead)
    for k, place in enumerate(_places(kernel, stride, dilation, out)):
        x = x.at[every + place].add(flat[..., k])
    return x


LOWER.update({"Windows": _windows, "WindowsT": _windows_t})


# ---------------------------------------------------------------- losses
def _class_indices(L, targets, n):
    """Class-index targets as ints: whole numbers in [0, n) (numpy's kernel names the bad one)."""
    np_ = L.np
    t = np_.asarray(targets)
    if not L.is_int(t):
        L.require(np_.all(np_.floor(t) == t))
    L.require(np_.all((t >= 0) & (t < n)))
    return t.astype(np_.int64)


def _cross_entropy(L, logits, targets):
    """The mean cross entropy of logits against class indices or probabilities (+ 0.0: a perfect
    fit is 0.0, not -0.0)."""
    np_ = L.np
    if np_.size(logits) == 0:
        raise NotLowerable("cross_entropy of no examples")
    logp = L.nn.log_softmax(logits, axis=-1)
    t = np_.asarray(targets)
    if L.is_int(t):
        flat = np_.reshape(logp, (-1, np_.shape(logp)[-1]))
        picked = np_.take_along_axis(flat, np_.reshape(t, (-1, 1)), axis=1)
        return -np_.mean(picked) + 0.0
    return -np_.mean(np_.sum(t * logp, axis=-1)) + 0.0


LOWER.update({"ClassIndices": _class_indices, "CrossEntropy": _cross_entropy})


def _normalization(axis):
    """layer_norm's (statistics over the last axis) or batch_norm's (over axis 0) kernel, in
    numpy's kernel's order (dsl/core/ops/nn.py). `stats`: what the numpy kernel fills for its
    reverse rule, which the staged program's own steps compute instead."""
    def rule(L, x, gamma, beta, eps=1e-5, stats=None):
        jnp = L.np
        xc = x - jnp.mean(x, axis=axis, keepdims=True)
        y = xc / jnp.sqrt(jnp.mean(xc * xc, axis=axis, keepdims=True) + eps)
        y = y if gamma is None else y * gamma
        return y if beta is None else y + beta
    return rule


def _ssm_scan(L, a, b, x):
    """h[t] = a[t] h[t-1] + b[t] x[t] along axis 0 from h[-1] = 0, as lax.scan."""
    jnp = L.np
    shape = jnp.broadcast_shapes(jnp.shape(a), jnp.shape(b), jnp.shape(x))
    kind = jnp.result_type(a, b, x)
    a = jnp.broadcast_to(a, shape).astype(kind)
    u = jnp.broadcast_to(b * x, shape).astype(kind)

    def step(h, au):
        h = au[0] * h + au[1]
        return h, h
    return L.lax.scan(step, jnp.zeros(shape[1:], kind), (a, u))[1]


def _cofactors(L, a):
    """det(a) inv(a)^T, or from the SVD where a matrix of the stack is singular (an exact zero
    pivot, where numpy's inv fails): numpy's kernel's two ways (dsl/core/primitives/matrix.py)."""
    jnp, lax = L.np, L.lax

    def by_inverse(a):
        return jnp.linalg.det(a)[..., None, None] * jnp.swapaxes(jnp.linalg.inv(a), -1, -2)

    def by_svd(a):
        u, sv, vh = jnp.linalg.svd(a)
        n = sv.shape[-1]
        others = jnp.prod(jnp.where(jnp.eye(n, dtype=bool), 1.0, sv[..., None, :]), axis=-1)
        sign = jnp.linalg.det(u) * jnp.linalg.det(vh)
        return (sign[..., None, None] * (u * others[..., None, :])) @ vh
    singular = jnp.any(jnp.linalg.det(a) == 0.0)
    return lax.cond(singular, by_svd, by_inverse, a)


LOWER.update({"LayerNorm": _normalization(-1), "BatchNorm": _normalization(0), "SsmScan": _ssm_scan,
              "Cofactors": _cofactors})


# ---------------------------------------------------------------- on the host
# Primitives whose own numpy kernel runs in Python while XLA runs the program (Lowering.host): an
# effect (print, a keyless draw, the clock), at its place in the program's order; the keyed gamma
# and poisson draws (rejection samplers, numpy's numbers bit for bit); and the derivatives of
# gamma draws in their shape parameter (series and continued fractions run to convergence entry
# by entry: dsl/core/ops/gamma_draws.py; XLA's random_gamma_grad stops at 2,000 terms and differs
# by up to 1e-11 relative), which only a derivative computes; and the factorisations whose vectors'
# signs are LAPACK's choice (eigh's vectors, svd's u and vh, qr), numpy's signs exactly (XLA's own
# need not make LAPACK's choices, on a GPU above all), so that a program using them, or taking the
# derivative of eigvalsh, the singular values or a spectral norm, which reads them, runs on XLA
# around one call back; and the incomplete gamma functions and their derivative in a (numpy's
# kernel is within 2e-13 of the exact values where XLA's, as scipy's, strays by 1e-11 at large a).
# Keys, uniform and normal draws are XLA's own (keyed.py).
ON_HOST = frozenset({"Effect", "RandomGamma", "RandomPoisson", "GammaDrawGrad", "GammaDrawGrad2",
                     "EighVectors", "SvdU", "SvdVh", "QrQ", "QrR", "Gammainc", "Gammaincc", "GammaincDa"})
LOWER.update(KEYED)
# a gamma draw as a function of its shape parameter: the draw itself (its derivative is the rule's)
LOWER["GammaDraw"] = lambda L, a, x: L.np.broadcast_to(x, L.np.broadcast_shapes(L.np.shape(a), L.np.shape(x)))


# ---------------------------------------------------------------- what stays on numpy, and why
_LOOPS = ("a while loop under a derivative, whose number of iterations is found by running it (the numpy "
          "backend's loop step)")
_HOST = "it runs Python (the user's function, a string) on each call"

FALLBACK = {
    "LoopBack": _LOOPS, "LoopBackAdd": _LOOPS, "LoopBackT": _LOOPS,
    "Checkpoint": _HOST, "CustomJvp": _HOST, "CustomVjp": _HOST, "HostCall": _HOST, "HostVjp": _HOST, "EffectLayout": _HOST,
    "EffectLeaf": _HOST, "FString": _HOST, "Str": _HOST,
    "MapLookup": "a map's entries are looked up by key in Python",
}
