"""The two array namespaces rules are written against.

`EAGER` computes on plain Python numbers and numpy arrays directly: no boxes
to look for and no argument checks, since the forward pass has checked shapes
already. It keeps dg's conventions: floats in give floats out, and IEEE
results (inf, nan) where Python would raise.

`TRACED` is dg's own primitives (dsl/ops): used when a rule sees a boxed value,
so that the rule's own work is recorded on the outer trace (higher-order
derivatives, jvp of grad, jit and vmap of grad).

`pick(*values)` chooses: EAGER when no value is a Box.
"""

import math
from types import SimpleNamespace

import numpy as np

from .. import ops as O, tape
from ..ops.core import norm
from ..tape import Box


# ---------------------------------------------------------------- eager: numbers and numpy
def _ieee(ufunc, a, b):
    """A scalar result Python refuses (division by zero, overflow): numpy's IEEE answer."""
    return norm(ufunc(np.float64(a), np.float64(b)))


def add(a, b):
    """a + b."""
    try:
        return a + b
    except OverflowError:       # an int operand beyond float range
        return _ieee(np.add, _float(a), _float(b))


def sub(a, b):
    """a - b."""
    try:
        return a - b
    except OverflowError:
        return _ieee(np.subtract, _float(a), _float(b))


def mul(a, b):
    """a * b."""
    try:
        return a * b
    except OverflowError:
        return _ieee(np.multiply, _float(a), _float(b))


def _float(v):
    """A Python int as a float (inf beyond range); arrays and floats as they are."""
    return O.to_float(v) if type(v) is int else v


def div(a, b):
    """a / b, IEEE for a float divided by zero."""
    try:
        return norm(a / b)
    except ZeroDivisionError:
        return _ieee(np.true_divide, a, b)
    except OverflowError:
        return _ieee(np.true_divide, _float(a), _float(b))


def negate(g):
    """-g, but 0.0 rather than -0.0 where g is zero (a gradient of 0 prints as 0.0)."""
    return norm(0.0 - g)


def cmul(g, c):
    """g times a constant (a mask or a number); in place when nothing else refers to g."""
    # + 0.0 turns -0.0 into 0.0: a masked-out entry is 0.0 (as JAX's select gives), not -g * 0
    if type(g) is np.ndarray and g is tape.get_owned() and np.shape(c) == g.shape:
        return np.add(np.multiply(g, c, out=g), 0.0, out=g)
    return norm(g * c + 0.0)


def _unary(scalar, vector):
    """An elementwise function of floats (math) and arrays (numpy), IEEE where math raises."""

    def fn(x):
        if type(x) is int:
            x = O.to_float(x)
        if type(x) is float:
            try:
                return scalar(x)
            except (OverflowError, ValueError):
                return float(vector(np.float64(x)))
        return norm(vector(x))
    return fn


def where(c, a, b):
    """a where c, else b; numbers in give a number out."""
    r = np.where(c, _float(a), _float(b))
    return r.item() if r.ndim == 0 and not any(type(v) is np.ndarray for v in (c, a, b)) else r


def sum_(x, axis=None, keepdims=False):
    """The sum over `axis` (all axes: a float)."""
    if type(x) is float:
        return x
    return norm(np.add.reduce(x, axis=axis, keepdims=keepdims) if axis is not None else
                (np.sum(x, keepdims=True) if keepdims else float(np.add.reduce(x.reshape(-1)))))


def mean(x, axis=None, keepdims=False):
    """The mean over `axis`."""
    return norm(np.mean(x, axis=axis, keepdims=keepdims)) if type(x) is not float else x


def reshape(x, shape):
    """x with a new shape (a float stays a float for shape ())."""
    if type(x) is float:
        return x if shape == () else np.full(shape, x)
    out = x.reshape(shape)
    return out


def transpose(x, axes=None):
    """x with its axes permuted (reversed by default); a number stays itself."""
    if type(x) is not np.ndarray:
        return x
    return x.T if axes is None else np.transpose(x, axes)


def broadcast_to(x, shape):
    """x broadcast to `shape`."""
    if type(x) is np.ndarray:
        return x if x.shape == shape else np.broadcast_to(x, shape)
    if type(x) is float and shape:
        return np.full(shape, x)        # 3x faster than a view of a 0-d array
    return np.broadcast_to(x, shape) if shape else x


def index(x, key):
    """x[key] for a checked key."""
    return norm(x[key])


def index_add(g, key, shape):
    """zeros(shape) with g added at key (repeats accumulate)."""
    return O.index_add(g, key, shape)


def set_index(x, key, v):
    """A copy of x with x[key] = v."""
    out = np.array(x, dtype=O.float_type(x))
    out[key] = v
    return out


def matmul(a, b):
    """a @ b."""
    return O.matmul_kernel(a, b)


def softmax(x, axis=-1):
    """softmax along `axis`."""
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    """log_softmax along `axis`."""
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _compare(ufunc, py):
    """A comparison giving a bool for numbers and a bool array for arrays."""
    def fn(a, b):
        if type(a) is float and type(b) is float:
            return py(a, b)
        return norm(ufunc(_float(a), _float(b)))
    return fn


EAGER = SimpleNamespace(
    add=add, sub=sub, mul=mul, div=div, neg=lambda x: norm(-x), negate=negate, cmul=cmul,
    exp=_unary(math.exp, np.exp), ln=_unary(math.log, np.log), sin=_unary(math.sin, np.sin),
    cos=_unary(math.cos, np.cos), sqrt=_unary(math.sqrt, np.sqrt),
    sigmoid=O.sigmoid, erf=O.erf, erfc=O.erfc, tanh=_unary(math.tanh, np.tanh), floor=_unary(math.floor, np.floor),
    sinh=_unary(math.sinh, np.sinh), cosh=_unary(math.cosh, np.cosh),
    sign=O.sign, pow=lambda a, b: O.pow(a, b), where=where,
    greater=_compare(np.greater, lambda a, b: a > b), less=_compare(np.less, lambda a, b: a < b),
    equal=_compare(np.equal, lambda a, b: a == b), greater_equal=_compare(np.greater_equal, lambda a, b: a >= b),
    less_equal=_compare(np.less_equal, lambda a, b: a <= b),
    logical_and=np.logical_and, logical_or=np.logical_or, logical_not=np.logical_not,
    any=lambda m: bool(np.any(m)), isfinite=lambda x: norm(np.isfinite(x)), sum=sum_, mean=mean, max=lambda x, axis=None, keepdims=False: norm(np.max(x, axis=axis, keepdims=keepdims)),
    reshape=reshape, transpose=transpose, broadcast_to=broadcast_to,
    unbroadcast=O.unbroadcast, index=index, index_add=index_add, set_index=set_index, row=O.row, row_add=O.row_add,
    set_row=O.set_row, rows=O.rows, rows_add=O.rows_add, set_rows=O.set_rows,
    cat=lambda xs, axis=0: np.concatenate(xs, axis=axis), stack=lambda xs, axis=0: np.stack(xs, axis=axis),
    matmul=matmul, softmax=softmax, log_softmax=log_softmax, ssm_scan=O.ssm_scan, nz=O.nz, nz_matmul=O.nz_matmul,
    zeros=np.zeros, astype=O.cast, eager=True,
)


# ---------------------------------------------------------------- traced: dg's primitives
TRACED = SimpleNamespace(
    add=O.add, sub=O.sub, mul=O.mul, div=O.div, neg=O.neg, negate=lambda g: O.sub(0.0, g),
    cmul=lambda g, c: O.mul(g, c), exp=O.exp, ln=O.ln, sin=O.sin, cos=O.cos, sqrt=O.sqrt, sigmoid=O.sigmoid,
    erf=O.erf, erfc=O.erfc, tanh=O.tanh, floor=O.floor, sign=O.sign, pow=O.pow, where=O.where, sinh=O.sinh,
    cosh=O.cosh, greater=lambda a, b: O.order(">", a, b), less=lambda a, b: O.order("<", a, b), equal=O.eq,
    greater_equal=lambda a, b: O.order(">=", a, b), less_equal=lambda a, b: O.order("<=", a, b),
    logical_and=O.logical_and, logical_or=O.logical_or, logical_not=O.logical_not, any=O.any_, isfinite=O.isfinite,
    sum=O.sum_, mean=O.mean, max=O.max_, reshape=O.reshape, transpose=O.transpose,
    broadcast_to=O.broadcast_to, unbroadcast=O.unbroadcast, index=O.index, index_add=O.index_add, row=O.row,
    row_add=O.row_add, set_row=O.set_row, rows=O.rows, rows_add=O.rows_add, set_rows=O.set_rows,
    set_index=O.set_index, cat=O.cat, stack=O.stack, matmul=O.matmul, softmax=O.softmax,
    log_softmax=O.log_softmax, ssm_scan=O.ssm_scan, nz=O.nz, nz_matmul=O.nz_matmul, zeros=np.zeros, eager=False,
    astype=lambda x, name: O.astype(x, O.dtype_arg(name, "astype")),
)


def pick(*values):
    """EAGER when none of the values is boxed, else TRACED."""
    for v in values:
        if type(v) is Box:
            return TRACED
    return EAGER


def pick_in(values):
    """pick over a sequence (args of a node; None entries allowed)."""
    for v in values:
        if type(v) is Box:
            return TRACED
    return EAGER


__all__ = ["EAGER", "TRACED", "pick", "pick_in"]
