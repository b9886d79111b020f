"""The gradient rules: one entry per GradOp, written with dg's own primitives.

Because the rules call the same primitives the forward pass uses, a rule
running while an outer differentiation is active records its own work on the
outer tape: that is what makes grad(grad(f)) and hessian exact.

`defvjp(op, rule_for_arg0, rule_for_arg1, ...)`: each rule is
rule(g, ans, *args, **kw) and is called only for arguments that need a
gradient. `defvjp_all(op, rule)`: rule(g, ans, args, kw, wanted) returns one
cotangent (or None) per argument, for ops whose arguments share work.
"""

import math

import numpy as np

from .. import ops as O
from ..ops.shape import unbroadcast
from . import tape
from .tape import Box, defvjp, defvjp_all, raw

LN2 = math.log(2.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
SQRT_HALF = math.sqrt(0.5)


shape = O.shape_of    # the shape of a (possibly boxed) number or tensor


def ub(g, x):
    """Undo broadcasting: sum g back to the shape of operand x."""
    if type(g) is float and type(x) is float:
        return g
    return unbroadcast(g, shape(x))


def cmul(g, c):
    """g times a constant (a mask or a number), without recording the constant."""
    # + 0.0 turns -0.0 into 0.0: a masked-out entry is 0.0 (as JAX's select gives), not -g * 0
    if type(g) is np.ndarray:
        if g is tape.owned and np.shape(c) == g.shape:     # nobody else sees g: skip an allocation
            return np.add(np.multiply(g, c, out=g), 0.0, out=g)
        return O.core.norm(g * c + 0.0)
    if type(g) is float:
        return O.core.norm(g * c + 0.0)
    return O.mul(g, c)


def negate(g):
    """-g for a cotangent, but 0.0 rather than -0.0 where g is zero (a gradient of 0 prints as 0.0)."""
    if type(g) is np.ndarray or type(g) is float:
        return 0.0 - g
    return O.neg(g)


def nz(g, r):
    """SPEC 6.7: where the upstream cotangent is 0, the result is 0 even if r is inf or NaN."""
    rv = raw(r)
    if type(rv) is np.ndarray:
        if rv.size == 0 or tape.all_finite(rv):
            return r
        zero = raw(g) == 0
        if not np.any(zero):
            return r
        return O.where(zero, 0.0, r)
    if type(rv) is float and not math.isfinite(rv) and np.all(raw(g) == 0):
        return 0.0 if np.ndim(raw(g)) == 0 else O.where(raw(g) == 0, 0.0, r)
    return r


# ---------------------------------------------------------------- arithmetic
defvjp("Add", lambda g, ans, x, y: ub(g, x),
              lambda g, ans, x, y: ub(g, y))
defvjp("Sub", lambda g, ans, x, y: ub(g, x),
              lambda g, ans, x, y: ub(negate(g), y))
defvjp("Mul", lambda g, ans, x, y: ub(nz(g, O.mul(g, y)), x),     # nz: y may be inf where g is 0
              lambda g, ans, x, y: ub(nz(g, O.mul(g, x)), y))
defvjp("ScalarMul", lambda g, ans, x, c: O.mul(g, c))
defvjp("Div", lambda g, ans, x, y: ub(nz(g, O.div(g, y)), x),
              lambda g, ans, x, y: ub(nz(g, negate(O.div(O.mul(g, ans), y))), y))
defvjp("Neg", lambda g, ans, x: negate(g))
defvjp("Mod", lambda g, ans, x, y: ub(g, x),
              lambda g, ans, x, y: ub(cmul(O.neg(g), np.floor(np.divide(_f(raw(x)), _f(raw(y))))), y))


def _f(v):
    """A Python int as a float for numpy (±inf past float range); anything else unchanged."""
    return O.to_float(v) if type(v) is int else v


def _pow_base(g, ans, x, y):
    """d/dx x**y = y * x**(y-1)."""
    if type(y) is not Box and type(y) in (int, float) and y == 2:
        # a constant 2 only: an exponent differentiated at an outer level needs y * x**(y-1) itself
        return ub(nz(g, O.mul(g, O.mul(x, 2.0))), x)
    expo = O.sub(y, 1.0)
    # x**0 is constant: its derivative at x = 0 is 0, not 0 * 0**-1 = nan. Only there is the
    # exponent replaced (x**1 times y = 0 is 0 too); elsewhere y * x**(y-1) keeps its dependence on y
    zero = np.logical_and(raw(x) == 0, raw(y) == 0)
    if np.any(zero):
        expo = O.where(zero, 1.0, expo)
    return ub(nz(g, O.mul(g, O.mul(y, O.pow(x, expo)))), x)


def _pow_exponent(g, ans, x, y):
    """d/dy x**y = x**y * ln(x), taken as 0 where x == 0 (SPEC 6.6)."""
    xv = raw(x)
    safe_x = O.where(xv == 0, 1.0, x) if np.any(xv == 0) else x
    return ub(nz(g, O.mul(g, O.mul(ans, O.ln(safe_x)))), y)


defvjp("Pow", _pow_base, _pow_exponent)


def _matmul_parts(g, a, b):
    """Promote 1-D operands to matrices as numpy.matmul does; return (g2, a2, b2)."""
    av, bv = raw(a), raw(b)
    a2 = O.reshape(a, (1, av.shape[0])) if av.ndim == 1 else a
    b2 = O.reshape(b, (bv.shape[0], 1)) if bv.ndim == 1 else b
    gshape = np.broadcast_shapes(shape(a2)[:-2], shape(b2)[:-2]) + (shape(a2)[-2], shape(b2)[-1])
    g2 = O.reshape(g, gshape) if shape(g) != gshape else g
    return g2, a2, b2


def _matmul_a(g, ans, a, b):
    """Cotangent of the left operand of a @ b."""
    av, bv = raw(a), raw(b)
    if av.ndim == 2 and bv.ndim == 2:
        return O.matmul(g, O.transpose(b))
    if av.ndim == 1 and bv.ndim == 1:
        return O.mul(g, b)
    g2, a2, b2 = _matmul_parts(g, a, b)
    return O.reshape(unbroadcast(O.matmul(g2, O.swap_last(b2)), shape(a2)), av.shape)


def _matmul_b(g, ans, a, b):
    """Cotangent of the right operand of a @ b."""
    av, bv = raw(a), raw(b)
    if av.ndim == 2 and bv.ndim == 2:
        return O.matmul(O.transpose(a), g)
    if av.ndim == 1 and bv.ndim == 1:
        return O.mul(g, a)
    g2, a2, b2 = _matmul_parts(g, a, b)
    return O.reshape(unbroadcast(O.matmul(O.swap_last(a2), g2), shape(b2)), bv.shape)


defvjp("MatMul", _matmul_a, _matmul_b)


# ---------------------------------------------------------------- elementwise
defvjp("Exp", lambda g, ans, x: nz(g, O.mul(g, ans)))      # exp(1000) = inf where g may be 0
defvjp("Ln", lambda g, ans, x: nz(g, O.div(g, x)))
defvjp("Log2", lambda g, ans, x: nz(g, O.div(g, O.mul(x, LN2))))
defvjp("Sin", lambda g, ans, x: O.mul(g, O.cos(x)))
defvjp("Cos", lambda g, ans, x: negate(O.mul(g, O.sin(x))))
defvjp("Sqrt", lambda g, ans, x: nz(g, O.div(g, O.mul(ans, 2.0))))
defvjp("Abs", lambda g, ans, x: cmul(g, O.sign(x)))
defvjp("Sigmoid", lambda g, ans, x: O.mul(g, O.mul(ans, O.sub(1.0, ans))))
defvjp("TanhAct", lambda g, ans, x: O.mul(g, O.sub(1.0, O.mul(ans, ans))))
defvjp("Relu", lambda g, ans, x: cmul(g, raw(x) > 0))
defvjp("Erf", lambda g, ans, x: O.mul(g, O.mul(TWO_OVER_SQRT_PI, O.exp(O.neg(O.mul(x, x))))))


def _silu(g, ans, x):
    """d/dx x*s(x) = s * (1 + x * (1 - s))."""
    s = O.sigmoid(x)
    return O.mul(g, O.mul(s, O.add(1.0, O.mul(x, O.sub(1.0, s)))))


def _gelu(g, ans, x):
    """d/dx x*Phi(x) = Phi(x) + x * phi(x)."""
    cdf = O.mul(0.5, O.add(1.0, O.erf(O.mul(x, SQRT_HALF))))
    pdf = O.mul(INV_SQRT_2PI, O.exp(O.mul(-0.5, O.mul(x, x))))
    return O.mul(g, O.add(cdf, O.mul(x, pdf)))


defvjp("Silu", _silu)
defvjp("Gelu", _gelu)


def _tie_weights(a, b, wins):
    """Share of the cotangent each side of maximum/minimum gets: 1, 0, or 1/2 on ties."""
    av, bv = _f(raw(a)), _f(raw(b))
    return np.where(wins(av, bv), 1.0, 0.0) + np.where(av == bv, 0.5, 0.0)


defvjp("Maximum", lambda g, ans, a, b: ub(cmul(g, _tie_weights(a, b, np.greater)), a),
                  lambda g, ans, a, b: ub(cmul(g, _tie_weights(b, a, np.greater)), b))
defvjp("Minimum", lambda g, ans, a, b: ub(cmul(g, _tie_weights(a, b, np.less)), a),
                  lambda g, ans, a, b: ub(cmul(g, _tie_weights(b, a, np.less)), b))
defvjp("Where", None,
       lambda g, ans, c, a, b: ub(O.where(c, g, 0.0), a),
       lambda g, ans, c, a, b: ub(O.where(c, 0.0, g), b))


def _clamp_where(x, lo, hi):
    """Which entries clamp(x, lo, hi) takes from x, lo and hi (x where lo <= x <= hi: ties go to x)."""
    xv, lov, hiv = (None if v is None else _f(raw(v)) for v in (x, lo, hi))
    shape = np.broadcast_shapes(*(np.shape(v) for v in (xv, lov, hiv) if v is not None))
    # clamp is min(max(x, lo), hi), as numpy's clip: with lo > hi every entry is hi
    none = np.zeros(shape, dtype=bool)
    above = np.greater(np.maximum(xv, lov) if lo is not None else xv, hiv) if hi is not None else none
    below = np.less(xv, lov) & ~above if lo is not None else none
    inside = ~(below | above)
    return [np.broadcast_to(m, shape) if np.ndim(m) else bool(m) for m in (inside, below, above)]


def _clamp(g, ans, args, kw, wanted):
    """clamp's rule: g goes to x, lo or hi, wherever the result came from (masks worked out once)."""
    taken = _clamp_where(*args)
    return [ub(cmul(g, m), a) if w else None          # the bounds may broadcast x up
            for m, a, w in zip(taken, args, wanted)]


defvjp_all("Clamp", _clamp)


def _linspace_share(ans, of_start):
    """How much each point of linspace(a, b, n) moves with a (1 - t) or with b (t), t = i / (n - 1)."""
    t = np.linspace(0.0, 1.0, np.shape(raw(ans))[0])
    return 1.0 - t if of_start else t


defvjp("Linspace", lambda g, ans, a, b, n: O.sum_(cmul(g, _linspace_share(ans, True))),
                   lambda g, ans, a, b, n: O.sum_(cmul(g, _linspace_share(ans, False))),
                   None)


# ---------------------------------------------------------------- reductions
def _spread(g, x, axis, keepdims):
    """Broadcast a reduction's cotangent back over the reduced axes."""
    xs = shape(x)
    return O.broadcast_to(O.keep_axes(g, xs, axis, keepdims), xs)


defvjp("Sum", lambda g, ans, x, axis=None, keepdims=False: _spread(g, x, axis, keepdims))
defvjp("Mean", lambda g, ans, x, axis=None, keepdims=False:
       O.div(_spread(g, x, axis, keepdims), float(O.count(shape(x), axis))))


def _extreme(g, ans, x, axis=None, keepdims=False):
    """Max/Min: the cotangent is shared equally among the elements that tie for the extreme."""
    xv = np.asarray(raw(x))
    hit = xv == np.asarray(raw(O.keep_axes(raw(ans), xv.shape, axis, keepdims)))
    share = hit / np.sum(hit, axis=axis, keepdims=True)
    return cmul(_spread(g, x, axis, keepdims), share)


defvjp("Max", _extreme)
defvjp("Min", _extreme)


def _logsumexp(g, ans, x, axis=None, keepdims=False):
    """d/dx logsumexp(x) = softmax(x) over the reduced axes (computed stably)."""
    xs = shape(x)
    if axis is None:
        weights = O.reshape(O.softmax(O.reshape(x, (-1,))), xs) if xs else 1.0
    elif type(axis) is tuple:
        weights = O.exp(O.sub(x, O.keep_axes(ans, xs, axis, keepdims)))
    else:
        weights = O.softmax(x, axis)
    return O.mul(_spread(g, x, axis, keepdims), weights)


defvjp("LogSumExp", _logsumexp)


# ---------------------------------------------------------------- shapes
defvjp("Reshape", lambda g, ans, x, shape=None: O.reshape(g, np.shape(raw(x))))
defvjp("TransposeOp", lambda g, ans, x, axes=None:
       O.transpose(g, None if axes is None else tuple(int(i) for i in np.argsort(
           [a % len(axes) for a in axes]))))
defvjp("BroadcastTo", lambda g, ans, x, shape=None: ub(g, x))
defvjp("Index", lambda g, ans, x, key=None, op=None: O.index_add(g, key, shape(x)))
defvjp("GatherOp", lambda g, ans, x, key=None, op=None: O.index_add(g, key, shape(x)))
defvjp("IndexAdd", lambda g, ans, x, key=None, shape=None: O.index(g, key))
defvjp("SetIndex", lambda g, ans, x, v, key=None: O.set_index(g, key, 0.0),
                   lambda g, ans, x, v, key=None: ub(O.index(g, key), v))


def _cat(g, ans, args, kw, wanted):
    """Split the cotangent of a concatenation back into its pieces."""
    nd = len(shape(args[0]))
    axis = kw.get("axis", 0)
    axis = (int(axis) + nd) % nd
    out, start = [], 0
    for a, want in zip(args, wanted):
        n = shape(a)[axis]
        if want:
            key = (slice(None),) * axis + (slice(start, start + n),)
            out.append(O.index(g, key))
        else:
            out.append(None)
        start += n
    return out


def _stack(g, ans, args, kw, wanted):
    """Take each stacked element's slice of the cotangent."""
    nd = len(shape(args[0])) + 1
    axis = (int(kw.get("axis", 0)) + nd) % nd
    return [O.index(g, (slice(None),) * axis + (i,)) if want else None
            for i, want in enumerate(wanted)]


defvjp_all("CatOp", _cat)
defvjp_all("Stack", _stack)


# ---------------------------------------------------------------- neural-network ops
defvjp("Softmax", lambda g, ans, x, axis=-1: O.mul(
    ans, O.sub(g, O.sum_(O.mul(g, ans), axis, keepdims=True))))
defvjp("LogSoftmax", lambda g, ans, x, axis=-1: O.sub(
    g, O.mul(O.exp(ans), O.sum_(g, axis, keepdims=True))))


def _cross_entropy(g, ans, args, kw, wanted):
    """Mean cross-entropy: (softmax - target) / batch for logits; -log_softmax / batch for probabilities."""
    logits, targets = args
    lv, tv = raw(logits), raw(targets)
    n = lv.size // lv.shape[-1]
    scale = O.div(g, float(n))
    dl = dt = None
    if type(tv) is np.ndarray and tv.dtype.kind == "i":
        if wanted[0] and type(logits) is np.ndarray and logits.dtype == np.float64 and type(g) is float:
            # nothing records here (no outer differentiation): (softmax - onehot) * g / n in place
            flat = logits.reshape(-1, logits.shape[-1])
            e = O.softmax(flat)
            e[np.arange(flat.shape[0]), tv.reshape(-1)] -= 1.0
            e *= g / n
            return e.reshape(lv.shape), None
        if wanted[0]:
            onehot = np.zeros(lv.shape)
            np.put_along_axis(onehot, tv[..., None], 1.0, axis=-1)
            dl = O.mul(O.sub(O.softmax(logits), onehot), scale)
        return dl, None
    if wanted[0]:
        total = O.sum_(targets, -1, keepdims=True)
        dl = O.mul(O.sub(O.mul(O.softmax(logits), total), targets), scale)
    if wanted[1]:
        dt = O.mul(O.neg(O.log_softmax(logits)), scale)
    return dl, dt


defvjp_all("CrossEntropy", _cross_entropy)


def _normalization(axis):
    """The rule of layer_norm (axis -1) or batch_norm (axis 0), with optional gamma and beta."""

    def rule(g, ans, args, kw, wanted):
        x, gamma, beta = args
        eps = kw["eps"]
        mu = O.mean(x, axis, keepdims=True)
        xc = O.sub(x, mu)
        inv = O.div(1.0, O.sqrt(O.add(O.mean(O.mul(xc, xc), axis, keepdims=True), eps)))
        xhat = O.mul(xc, inv)
        dx = dgamma = dbeta = None
        if wanted[0]:
            dxhat = O.mul(g, gamma) if gamma is not None else g
            m1 = O.mean(dxhat, axis, keepdims=True)
            m2 = O.mean(O.mul(dxhat, xhat), axis, keepdims=True)
            dx = O.mul(inv, O.sub(O.sub(dxhat, m1), O.mul(xhat, m2)))
        if wanted[1]:
            dgamma = ub(O.mul(g, xhat), gamma)
        if wanted[2]:
            dbeta = ub(g, beta)
        return dx, dgamma, dbeta

    return rule


defvjp_all("LayerNorm", _normalization(-1))
defvjp_all("BatchNorm", _normalization(0))


def _flip0(v):
    """Reverse along axis 0."""
    return O.index(v, (slice(None, None, -1),))


def _shift_down(v):
    """v[t-1] at position t, with zeros at t = 0."""
    vs = shape(v)
    return O.cat((np.zeros((1,) + vs[1:]), O.index(v, (slice(0, vs[0] - 1),))), 0)


def _shift_up(v):
    """v[t+1] at position t, with zeros at the last step."""
    vs = shape(v)
    return O.cat((O.index(v, (slice(1, vs[0]),)), np.zeros((1,) + vs[1:])), 0)


def _ssm_scan(g, ans, args, kw, wanted):
    """Reverse-time scan: dh[t] = g[t] + a[t+1] * dh[t+1]; then da, db, dx by products."""
    a, b, x = args
    full = shape(ans)
    a_full = O.broadcast_to(a, full) if shape(a) != full else a
    dh = _flip0(O.ssm_scan(_flip0(_shift_up(a_full)), 1.0, _flip0(g)))
    da = ub(O.mul(dh, _shift_down(ans)), a) if wanted[0] else None
    db = ub(O.mul(dh, x), b) if wanted[1] else None
    dx = ub(O.mul(dh, b), x) if wanted[2] else None
    return da, db, dx


defvjp_all("SsmScan", _ssm_scan)
