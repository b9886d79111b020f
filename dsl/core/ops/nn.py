"""Neural-network primitives, each one tape node with a fused rule:
softmax, log_softmax, cross_entropy, layer_norm, batch_norm, ssm_scan."""

import numpy as np

from ..tape import REVERSE, nondiff, peek, record, top_trace
from .core import (Box, FLOAT, check_size, error, fmt_shape, ndarray, norm, normalize_axis, raw, to_float,
                   to_tensor, type_name)
from .shape import reshape, stack


def _tensor_arg(x, name):
    """A tensor argument with at least one axis."""
    v = to_tensor(x, f"a tensor for {name}")
    if v.ndim == 0:
        raise error("shape", f"{name} needs a tensor with at least one axis, got a number")
    return v


# ---------------------------------------------------------------- softmax family
def _over_all(fn, x, name, span):
    """fn along one axis of x's entries flattened, in x's shape: axis=None, as JAX's."""
    shape = _tensor_arg(peek(x), name).shape
    return reshape(fn(reshape(x, (int(np.prod(shape)),)), -1, span), shape)


def softmax(x, axis=-1, span=None):
    """softmax(x, axis=-1), stable for large logits."""
    if axis is None:
        return _over_all(softmax, x, "softmax", span)
    if type(x) is Box:
        return record("Softmax", (x,), {"axis": axis}, span)
    v = _tensor_arg(x, "softmax")
    ax = normalize_axis(axis, v.ndim, False)
    if v.size == 0:
        return np.zeros(v.shape)
    e = np.exp(v - np.max(v, axis=ax, keepdims=True))
    return e / np.sum(e, axis=ax, keepdims=True)


def log_softmax(x, axis=-1, span=None):
    """log_softmax(x, axis=-1), stable for large logits."""
    if axis is None:
        return _over_all(log_softmax, x, "log_softmax", span)
    if type(x) is Box:
        return record("LogSoftmax", (x,), {"axis": axis}, span)
    v = _tensor_arg(x, "log_softmax")
    ax = normalize_axis(axis, v.ndim, False)
    if v.size == 0:
        return np.zeros(v.shape)
    shifted = v - np.max(v, axis=ax, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=ax, keepdims=True))


# ---------------------------------------------------------------- cross entropy
def cross_entropy(logits, targets, span=None):
    """Mean cross-entropy; targets are class indices or probabilities (reference section 5)."""
    if type(peek(targets)) is tuple:     # (0, 2, 1) is a tensor of class indices, as sum((1.0, 2.0)) reads one
        items = peek(targets)
        if not items or any(type(peek(t)) not in (int, float) for t in items):
            got = "a tuple of other things" if items else "an empty tuple"
            raise error("type", f"cross_entropy targets must be a tensor, a number or a tuple of numbers, "
                                f"got {got}")
        targets = stack(targets)
    lv, tv = peek(logits), peek(targets)
    if _target_mode(lv, tv) == "index":
        targets = class_indices(targets, lv.shape[-1])
    if type(logits) is Box or type(targets) is Box:
        return record("CrossEntropy", (logits, targets), None, span)
    return cross_entropy_kernel(logits, targets)


def cross_entropy_kernel(logits, targets):
    """The CrossEntropy primitive: targets are int class indices (checked) or probabilities."""
    if type(logits) is Box or type(targets) is Box:
        return record("CrossEntropy", (logits, targets))
    _check_examples(logits)
    if type(targets) is not ndarray or targets.dtype.kind != "i":
        return float(-np.mean(np.sum(to_tensor(targets) * log_softmax(logits), axis=-1))) + 0.0
    idx = targets
    lv = logits if logits.dtype == FLOAT else to_tensor(logits)
    # Only the picked entries of log_softmax are needed: the same arithmetic in fewer passes,
    # with ufunc reductions (numpy's max/sum/mean wrappers cost more than a small batch does).
    flat = lv.reshape(-1, lv.shape[-1])
    shifted = flat - np.maximum.reduce(flat, axis=-1, keepdims=True)
    lse = np.log(np.add.reduce(np.exp(shifted), axis=-1))
    picked = shifted[np.arange(flat.shape[0]), idx.reshape(-1)] - lse
    return float(-(np.add.reduce(picked) / picked.size)) + 0.0     # + 0.0: a perfect fit is 0.0


def _check_examples(lv):
    """The mean over no examples (or no classes) is undefined, as mean's is."""
    if lv.size == 0:
        raise error("value", f"cross_entropy needs at least one example and one class, got logits of "
                             f"shape {fmt_shape(lv.shape)}")


def _target_mode(lv, tv):
    """Whether targets are class indices ("index") or probabilities ("prob")."""
    if type(lv) is not ndarray or lv.ndim == 0:
        raise error("type", f"cross_entropy needs logits as a tensor with a class axis, got {type_name(lv)}")
    tshape = tv.shape if type(tv) is ndarray else ()
    if type(tv) is ndarray and tv.dtype.kind == "i":
        return "index"
    if tshape == lv.shape:
        return "prob"
    if tshape == lv.shape[:-1]:
        if type(tv) not in (ndarray, int, float):
            raise error("type", f"cross_entropy targets must be a tensor or a number, got {type_name(tv)}")
        return "index"
    raise error("shape", f"cross_entropy targets of shape {fmt_shape(tshape)} fit neither logits of shape "
                         f"{fmt_shape(lv.shape)} (probabilities) nor {fmt_shape(lv.shape[:-1])} (class indices)")


def class_indices(targets, n):
    """Class-index targets as an int array, checked against the number n of classes."""
    if type(targets) is Box:    # a value jit and vmap stage: converted (and checked) when it runs
        return nondiff("ClassIndices", (targets,), {"n": n})
    tv = targets
    if type(tv) is ndarray and tv.dtype.kind == "i":
        idx = tv                    # an int tensor holds whole numbers already (its range is checked below)
    else:
        t = np.asarray(to_float(tv) if type(tv) is int else tv, dtype=FLOAT)
        # t - floor(t) is 0 exactly for whole numbers (nan for nan and the infinities)
        if t.size and not (np.subtract(t, np.floor(t)) == 0.0).all():
            raise error("value", "cross_entropy class indices must be whole numbers")
        outside = (t < 0) | (t >= n)    # checked before the conversion, which would wrap 1e300 around
        if outside.any():
            bad = float(t[outside].flat[0])
            raise error("index", f"cross_entropy class index {int(bad) if abs(bad) < 2 ** 53 else bad!r} "
                                 f"is out of range for {n} classes")
        idx = t.astype(np.intp)
    if idx.size and (np.minimum.reduce(idx, axis=None) < 0 or np.maximum.reduce(idx, axis=None) >= n):
        raise error("index", f"cross_entropy class index {int(idx[(idx < 0) | (idx >= n)].flat[0])} "
                             f"is out of range for {n} classes")
    return idx


# ---------------------------------------------------------------- normalisation
def _eps(eps, name):
    """A normalisation's eps as a float."""
    e = raw(eps)
    if type(e) not in (int, float, bool):
        raise error("type", f"{name}: eps must be a number, got {type_name(e)}")
    return to_float(e)


def _norm_params(v, gamma, beta, shape, name):
    """Check gamma/beta of a normalisation against the normalised shape."""
    for p, pname in ((gamma, "gamma"), (beta, "beta")):
        pv = peek(p)
        if pv is None:
            continue
        if type(pv) not in (ndarray, int, float, bool):
            raise error("type", f"{name}: {pname} must be a tensor or a number, got {type_name(pv)}")
        ps = pv.shape if type(pv) is ndarray else ()
        try:
            fits = np.broadcast_shapes(ps, v.shape) == v.shape
        except ValueError:
            fits = False
        # a scale or shift broadcasts to x's shape: one that would make the result larger than x
        # is a mistake (and one vmap could not batch as each example runs)
        if not fits:
            raise error("shape", f"{name}: {pname} of shape {fmt_shape(ps)} does not fit x of shape "
                                 f"{fmt_shape(v.shape)} (expected {fmt_shape(shape)})")


def _as_float(p):
    """gamma or beta: an int as the float it stands for (±inf beyond float range, as in arithmetic),
    anything else as it is."""
    return to_float(p) if type(p) in (int, bool) else p


def _normalize(v, axis, gamma, beta, eps, stats=None):
    """(v - mean) / sqrt(var + eps) * gamma + beta, statistics over `axis`; with `stats` (a list),
    the mean and 1 / sqrt(var + eps) put in it, for the reverse rule (dsl/core/primitives/nn.py)."""
    mu = np.mean(v, axis=axis, keepdims=True)
    xc = v - mu
    var = np.mean(xc * xc, axis=axis, keepdims=True)
    sd = np.sqrt(var + eps)
    if stats is not None:
        stats[:] = (mu, 1.0 / sd)
    y = xc / sd
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y


# primitive -> (the axis of its statistics, its builtin's name, what that axis must hold one of)
NORMS = {"LayerNorm": (-1, "layer_norm", "feature (last axis)"), "BatchNorm": (0, "batch_norm", "example (axis 0)")}


def layer_norm(x, gamma=None, beta=None, eps=1e-5, span=None):
    """layer_norm over the last axis, with optional scale gamma and shift beta."""
    return _norm("LayerNorm", x, gamma, beta, eps, span)


def batch_norm(x, gamma=None, beta=None, eps=1e-5, span=None):
    """batch_norm: each feature normalised over axis 0 (training statistics)."""
    return _norm("BatchNorm", x, gamma, beta, eps, span)


def _norm(op, x, gamma, beta, eps, span):
    """layer_norm or batch_norm (`op`): recorded where an argument is boxed; on a reverse tape
    its kernel keeps the statistics for the reverse rule, which then need not compute them again."""
    name = NORMS[op][1]
    eps = _eps(eps, name)
    gamma, beta = _as_float(gamma), _as_float(beta)
    if type(x) is Box or type(gamma) is Box or type(beta) is Box:
        kw = {"eps": eps}
        top = top_trace((x, gamma, beta))
        if top.kind is REVERSE:
            kw["stats"] = []        # filled by the kernel where it computes on plain values
        return record(op, (x, gamma, beta), kw, span)
    return norm_kernel(op, x, gamma, beta, eps)


def norm_kernel(op, x, gamma, beta, eps, stats=None):
    """layer_norm's or batch_norm's kernel (dsl/core/primitives/nn.py): on values that may still be
    boxed by outer levels (then recorded there), else computed, keeping the statistics in
    `stats` where given."""
    if type(x) is Box or type(gamma) is Box or type(beta) is Box:
        return _norm(op, x, gamma, beta, eps, None)
    axis, name, needs = NORMS[op]
    v = _tensor_arg(x, name)
    if v.shape[axis] == 0:        # statistics of nothing, as mean's are
        raise error("value", f"{name} needs at least one {needs}, got shape {fmt_shape(v.shape)}")
    _norm_params(v, gamma, beta, v.shape[-1:] if axis == -1 else v.shape[1:], name)
    return _normalize(v, axis, gamma, beta, eps, stats)


# ---------------------------------------------------------------- linear recurrence
def ssm_scan(a, b, x, span=None):
    """h[t] = a[t] * h[t-1] + b[t] * x[t] along axis 0 with h[-1] = 0."""
    if type(a) is Box or type(b) is Box or type(x) is Box:
        return record("SsmScan", (a, b, x), None, span)
    av, bv, xv = (to_tensor(v, "tensors for ssm_scan") for v in (a, b, x))
    try:
        shape = np.broadcast_shapes(av.shape, bv.shape, xv.shape)
    except ValueError:
        raise error("shape", "ssm_scan needs a, b and x of shapes that broadcast together, got "
                             f"{fmt_shape(av.shape)}, {fmt_shape(bv.shape)} and {fmt_shape(xv.shape)}") from None
    if len(shape) == 0:
        raise error("shape", "ssm_scan needs a time axis (axis 0)")
    check_size(shape, "result of ssm_scan")
    av = np.broadcast_to(av, shape)
    u = np.broadcast_to(bv * xv, shape)
    kind = np.result_type(av, u)
    h = np.empty(shape, kind)
    prev = np.zeros(shape[1:], kind)
    for t in range(shape[0]):
        prev = av[t] * prev + u[t]
        h[t] = prev
    return h


__all__ = ["softmax", "log_softmax", "cross_entropy", "layer_norm", "batch_norm", "ssm_scan", "norm"]
