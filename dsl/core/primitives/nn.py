"""Neural-network primitives, each one node with a fused rule: Softmax LogSoftmax
CrossEntropy LayerNorm BatchNorm SsmScan."""

import functools

import numpy as np

from .. import ops as O
from ..ops.core import normalize_axis, shape_of
from ..ops.nn import cross_entropy_kernel, norm_kernel
from ..tape import peek
from .reduce import batch_axis
from .registry import define


# ---------------------------------------------------------------- softmax family
def _axis_batch(fn):
    """Batching for an operation along one axis: the same axis, counted past the batch."""
    def rule(ns, args, batched, kw):
        x = args[0]
        return fn(x, axis=normalize_axis(kw.get("axis", -1), len(shape_of(x)) - 1, False) + 1)
    return rule


define("Softmax", O.softmax,
       vjp=(lambda ns, g, ans, x, axis=-1: ns.mul(ans, ns.sub(g, ns.sum(ns.mul(g, ans), axis, True))),),
       jvp=lambda ns, tangents, ans, args, kw: ns.mul(ans, ns.sub(tangents[0], ns.sum(
           ns.mul(tangents[0], ans), kw.get("axis", -1), True))),
       batch=_axis_batch(O.softmax), keeps_nan=True)
define("LogSoftmax", O.log_softmax,
       vjp=(lambda ns, g, ans, x, axis=-1: ns.sub(g, ns.mul(ns.exp(ans), ns.sum(g, axis, True))),),
       jvp=lambda ns, tangents, ans, args, kw: ns.sub(tangents[0], ns.sum(
           ns.mul(ns.exp(ans), tangents[0]), kw.get("axis", -1), True)),
       batch=_axis_batch(O.log_softmax), keeps_nan=True)


# ---------------------------------------------------------------- cross entropy
def _cross_entropy_vjp(ns, g, ans, args, kw, wanted):
    """Mean cross-entropy: (softmax - target) / batch for logits; -log_softmax / batch for probabilities."""
    logits, targets = args
    ls = shape_of(logits)
    n = int(np.prod(ls[:-1], dtype=np.int64)) if len(ls) > 1 else 1
    dl = dt = None
    if _indices(targets):       # class indices
        if wanted[0] and ns.eager and type(g) is float:
            # (softmax - onehot) * g / n computed in place
            flat = logits.reshape(-1, ls[-1])
            e = ns.softmax(flat)
            e[np.arange(flat.shape[0]), targets.reshape(-1)] -= 1.0
            e *= g / n
            return e.reshape(ls), None
        if wanted[0]:
            dl = ns.mul(ns.sub(ns.softmax(logits), _one_hot(ns, targets, ls)), ns.div(g, float(n)))
        return dl, None
    scale = ns.div(g, float(n))
    if wanted[0]:
        total = ns.sum(targets, -1, True)
        dl = ns.mul(ns.sub(ns.mul(ns.softmax(logits), total), targets), scale)
    if wanted[1]:
        dt = ns.mul(ns.neg(ns.log_softmax(logits)), scale)
    return dl, dt


def _indices(targets):
    """Whether cross-entropy targets are class indices (an int tensor), however it is boxed."""
    t = peek(targets)
    return type(t) is np.ndarray and t.dtype.kind == "i"


def _one_hot(ns, targets, logits_shape):
    """Class indices as one-hot rows of the logits' shape: a mask, which arithmetic with the
    logits reads as 1.0 and 0.0 of their float type."""
    column = ns.reshape(targets, shape_of(targets) + (1,))
    return ns.equal(column, np.arange(logits_shape[-1]))


def _cross_entropy_jvp(ns, tangents, ans, args, kw):
    """A scalar's tangent: the gradient (the pullback of 1) dotted with the tangents."""
    grads = _cross_entropy_vjp(ns, 1.0, ans, args, kw, tuple(t is not None for t in tangents))
    out = None
    for d, t in zip(grads, tangents):
        if t is not None and d is not None:
            term = ns.sum(ns.mul(d, t))
            out = term if out is None else ns.add(out, term)
    return out


def _cross_entropy_batch(ns, args, batched, kw):
    """Each example's mean loss over its rows, for every example: shape (batch,)."""
    logits, targets = args
    bl, bt = batched
    lsm = ns.log_softmax(logits)
    if _indices(targets):
        per_row = ns.sum(ns.mul(lsm, _one_hot(ns, targets, shape_of(logits))), -1)
    else:
        per_row = ns.sum(ns.mul(targets, lsm), -1)
    rows = shape_of(per_row)
    size = rows[0] if (bl or bt) else 1
    if not bl and not bt:
        return ns.neg(ns.mean(per_row))
    if len(rows) == 1:
        return ns.neg(per_row)
    return ns.neg(ns.mean(ns.reshape(per_row, (size, -1)), 1))


define("CrossEntropy", cross_entropy_kernel, vjp_all=_cross_entropy_vjp, jvp=_cross_entropy_jvp,
       batch=_cross_entropy_batch, can_fail=True)


# ---------------------------------------------------------------- normalisation
def _statistics(ns, x, axis, eps):
    """x normalised over `axis`, and the inverse standard deviation."""
    mu = ns.mean(x, axis, True)
    xc = ns.sub(x, mu)
    inv = ns.div(1.0, ns.sqrt(ns.add(ns.mean(ns.mul(xc, xc), axis, True), eps)))
    return ns.mul(xc, inv), inv


def _normalization_vjp(axis):
    """The rule of layer_norm (axis -1) or batch_norm (axis 0), with optional gamma and beta: the
    statistics the forward kernel kept, where it kept them (on a reverse tape, over plain values),
    else computed again (on the values another level differentiates)."""

    def rule(ns, g, ans, args, kw, wanted):
        x, gamma, beta = args
        stats = kw.get("stats")
        if stats:
            mu, inv = stats
            xhat = ns.mul(ns.sub(x, mu), inv)
        else:
            xhat, inv = _statistics(ns, x, axis, kw["eps"])
        dx = dgamma = dbeta = None
        if wanted[0]:
            dxhat = ns.mul(g, gamma) if gamma is not None else g
            m1 = ns.mean(dxhat, axis, True)
            m2 = ns.mean(ns.mul(dxhat, xhat), axis, True)
            dx = ns.mul(inv, ns.sub(ns.sub(dxhat, m1), ns.mul(xhat, m2)))
        if wanted[1]:
            dgamma = ns.unbroadcast(ns.mul(g, xhat), shape_of(gamma))
        if wanted[2]:
            dbeta = ns.unbroadcast(g, shape_of(beta))
        return dx, dgamma, dbeta

    return rule


def _normalization_jvp(axis):
    """d xhat = inv * (dx - mean(dx) - xhat * mean(dx * xhat)); dy = d xhat * gamma + xhat * dgamma + dbeta."""

    def rule(ns, tangents, ans, args, kw):
        x, gamma, beta = args
        tx, tgamma, tbeta = tangents
        xhat, inv = _statistics(ns, x, axis, kw["eps"])
        out = None
        if tx is not None:
            dxhat = ns.mul(inv, ns.sub(ns.sub(tx, ns.mean(tx, axis, True)),
                                       ns.mul(xhat, ns.mean(ns.mul(tx, xhat), axis, True))))
            out = ns.mul(dxhat, gamma) if gamma is not None else dxhat
        for term in (None if tgamma is None else ns.mul(xhat, tgamma), tbeta):
            if term is not None:
                out = term if out is None else ns.add(out, term)
        if out is None:
            return None
        return out if shape_of(out) == shape_of(ans) else ns.broadcast_to(out, shape_of(ans))

    return rule


def _normalization_batch(axis):
    """Each example normalised over its own axis, gamma and beta lined up behind the batch."""

    def rule(ns, args, batched, kw):
        x, gamma, beta = args
        bx = batched[0]
        size = shape_of(x if bx else gamma if batched[1] else beta)[0]
        if not bx:
            x = ns.broadcast_to(x, (size,) + shape_of(x))
        nd = len(shape_of(x)) - 1
        y, _ = _statistics(ns, x, axis % nd + 1, kw["eps"])
        for p, is_batched, combine in ((gamma, batched[1], ns.mul), (beta, batched[2], ns.add)):
            if p is None:
                continue
            if is_batched:      # (batch, *p) lined up with (batch, *x): the parameter broadcasts from the right
                sp = shape_of(p)
                p = ns.reshape(p, sp[:1] + (1,) * (nd - (len(sp) - 1)) + sp[1:])
            y = combine(y, p)
        return y

    return rule


define("LayerNorm", functools.partial(norm_kernel, "LayerNorm"), vjp_all=_normalization_vjp(-1),
       jvp=_normalization_jvp(-1), batch=_normalization_batch(-1), keeps_nan=True)
define("BatchNorm", functools.partial(norm_kernel, "BatchNorm"), vjp_all=_normalization_vjp(0),
       jvp=_normalization_jvp(0), batch=_normalization_batch(0), keeps_nan=True)


# ---------------------------------------------------------------- linear recurrence
def _flip0(ns, v):
    """Reverse along axis 0."""
    return ns.index(v, (slice(None, None, -1),))


def _shift_down(ns, v):
    """v[t-1] at position t, with zeros at t = 0."""
    vs = shape_of(v)
    return ns.cat((np.zeros((1,) + vs[1:]), ns.index(v, (slice(0, vs[0] - 1),))), 0)


def _shift_up(ns, v):
    """v[t+1] at position t, with zeros at the last step."""
    vs = shape_of(v)
    return ns.cat((ns.index(v, (slice(1, vs[0]),)), np.zeros((1,) + vs[1:])), 0)


def _full(ns, v, shape):
    """v broadcast to the scan's full shape."""
    return ns.broadcast_to(v, shape) if shape_of(v) != shape else v


def _ssm_scan_vjp(ns, g, ans, args, kw, wanted):
    """Reverse-time scan: dh[t] = g[t] + a[t+1] * dh[t+1]; then da, db, dx by products."""
    a, b, x = args
    full = shape_of(ans)
    dh = _flip0(ns, ns.ssm_scan(_flip0(ns, _shift_up(ns, _full(ns, a, full))), 1.0, _flip0(ns, g)))
    da = ns.unbroadcast(ns.mul(dh, _shift_down(ns, ans)), shape_of(a)) if wanted[0] else None
    db = ns.unbroadcast(ns.mul(dh, x), shape_of(b)) if wanted[1] else None
    dx = ns.unbroadcast(ns.mul(dh, b), shape_of(x)) if wanted[2] else None
    return da, db, dx


def _ssm_scan_jvp(ns, tangents, ans, args, kw):
    """dh[t] = a[t] dh[t-1] + (da[t] h[t-1] + db[t] x[t] + b[t] dx[t]): the same scan of the driving terms."""
    a, b, x = args
    ta, tb, tx = tangents
    drive = None
    for term in (None if ta is None else ns.mul(ta, _shift_down(ns, ans)),
                 None if tb is None else ns.mul(tb, x), None if tx is None else ns.mul(b, tx)):
        if term is not None:
            drive = term if drive is None else ns.add(drive, term)
    if drive is None:
        return None
    return ns.ssm_scan(_full(ns, a, shape_of(ans)), 1.0, _full(ns, drive, shape_of(ans)))


def _ssm_scan_batch(ns, args, batched, kw):
    """The time axis stays first: every operand goes to (time, batch, ...) and back."""
    size = next(shape_of(v)[0] for v, is_b in zip(args, batched) if is_b)
    examples = [shape_of(v)[1:] if is_b else shape_of(v) for v, is_b in zip(args, batched)]
    full = np.broadcast_shapes(*examples)
    moved = []
    for v, is_b in zip(args, batched):
        if is_b:
            v = ns.broadcast_to(ns.reshape(v, shape_of(v)[:1] + (1,) * (len(full) - len(shape_of(v)) + 1)
                                           + shape_of(v)[1:]), (size,) + full)
            v = ns.transpose(v, (1, 0) + tuple(range(2, len(full) + 1)))
        else:
            v = ns.reshape(ns.broadcast_to(v, full), full[:1] + (1,) + full[1:])
        moved.append(v)
    h = ns.ssm_scan(*moved)
    return ns.transpose(h, (1, 0) + tuple(range(2, len(full) + 1)))


define("SsmScan", O.ssm_scan, vjp_all=_ssm_scan_vjp, jvp=_ssm_scan_jvp, batch=_ssm_scan_batch, keeps_nan=True)

__all__ = ["batch_axis"]
