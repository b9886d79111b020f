"""Random numbers as pure functions of a key: Philox4x32-10 (Salmon et al. 2011, the counter-based
generator of Random123 and of numpy's Philox), in numpy, vectorised over counters and keys.

A key is a float tensor of two whole numbers below 2^32 (the generator's two key words), the
shape of JAX's raw keys. A draw hashes (key, the position of each number, a domain word for the
kind of draw) through Philox: the same key gives the same numbers, whatever ran before, on every
backend and under every transformation; a batch of keys (vmap) is one vectorised call. split and
fold_in derive new keys from the same hash in domains of their own, so streams derived from one
key never overlap the numbers it draws.

Every primitive here is a function of its key; the numbers carry no derivative of it. gamma's
draws depend smoothly on their shape parameter a: RandomGamma draws with a held constant, and
GammaDraw gives them their derivative in a, the implicit reparameterisation (JAX's; the
functions in dsl/core/ops/gamma_draws.py), to the second order; a third is dg's grad error.
"""

import math

import numpy as np

from ...errors import error
from ..ops import gamma_draws as G
from ..ops.core import check_size, fmt_shape, shape_of, to_float
from ..ops.special import digamma
from ..tape import Box
from .batching import ELEMENTWISE
from .mechanism import ONE
from .registry import define

MASK = np.uint64(0xFFFFFFFF)
_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
DRAW, SPLIT, FOLD, GAMMA, POISSON = range(5)      # the domain word (the third counter word) of each use
_TWO53 = float(2 ** 53)


# ---------------------------------------------------------------- the generator
def philox(k0, k1, c0, c1, c2, c3):
    """Philox4x32-10 of counters (c0..c3) under keys (k0, k1): four 32-bit words, as uint64 arrays
    (every argument a uint64 array or scalar below 2^32; they broadcast)."""
    k0, k1 = np.asarray(k0, np.uint64), np.asarray(k1, np.uint64)
    return philox_rounds(k0, k1, *(np.asarray(c, np.uint64) for c in (c0, c1, c2, c3)))


def philox_rounds(k0, k1, c0, c1, c2, c3):
    """Philox's ten rounds on uint64 words below 2^32, by operators alone: numpy's arrays here,
    XLA's in the backend's lowering (dsl/backends/xla/keyed.py), the same arithmetic."""
    for _ in range(10):
        p0, p1 = c0 * _M0, c2 * _M1
        c0, c1, c2, c3 = (p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & MASK, (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & MASK
        k0, k1 = (k0 + _W0) & MASK, (k1 + _W1) & MASK
    return c0, c1, c2, c3


def key_words(key):
    """A key tensor (..., 2) as its two words (uint64 arrays of the leading shape), or dg's error."""
    k = np.asarray(key, dtype=float)
    if k.ndim < 1 or k.shape[-1] != 2 or not np.all((k >= 0) & (k < 2.0 ** 32) & (k == np.floor(k))):
        raise error("value", f"a random key is a tensor of two whole numbers in [0, 2^32), as rng(seed) and "
                             f"split give, got {'a tensor of shape ' + fmt_shape(k.shape) if k.ndim else k}")
    k = k.astype(np.uint64)
    return k[..., 0, None], k[..., 1, None]


def _philox_small(k0, k1, c0, c1, c2, c3):
    """Philox4x32-10 of one counter in Python ints: for a few numbers, 50 times faster than numpy's
    calls on arrays of one (a draw per step of a loop)."""
    m0, m1, w0, w1, mask = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85, 0xFFFFFFFF
    for _ in range(10):
        p0, p1 = c0 * m0, c2 * m1
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & mask, (p0 >> 32) ^ c3 ^ k1, p0 & mask
        k0, k1 = (k0 + w0) & mask, (k1 + w1) & mask
    return c0, c1, c2, c3


SMALL = 8       # counters below which one key's words are made in Python ints


def blocks(k0, k1, counters, domain, round_=0):
    """Philox of counters (i, 0.., domain, round) for i in `counters` (a uint64 vector) under each
    key: four word arrays of shape (*lead, len(counters))."""
    if k0.shape == (1,) and len(counters) <= SMALL:
        a, b = int(k0[0]), int(k1[0])
        words = [_philox_small(a, b, int(i) & 0xFFFFFFFF, int(i) >> 32, domain, round_) for i in counters]
        return tuple(np.array([w[j] for w in words], dtype=np.uint64) for j in range(4))
    return philox(k0, k1, counters & MASK, counters >> np.uint64(32), domain, round_)


def _one_key(key):
    """A single key's two words as Python ints, where it is a valid one (else None: the checks of
    key_words then say what is wrong)."""
    if type(key) is not np.ndarray or key.shape != (2,):
        return None
    a, b = key.tolist()
    if 0 <= a < 4294967296.0 and 0 <= b < 4294967296.0 and a == int(a) and b == int(b):
        return int(a), int(b)
    return None


def _uniforms(key, n, domain, round_=0):
    """n uniform floats in [0, 1) per key (53 bits each, numpy's conversion): (*lead, n)."""
    one = _one_key(key) if n <= 2 * SMALL else None
    if one is not None:     # a draw per step of a loop: Python ints and floats (the same exact arithmetic)
        out = []
        for i in range((n + 1) // 2):
            w0, w1, w2, w3 = _philox_small(one[0], one[1], i, 0, domain, round_)
            out += (((w0 >> 5) * 67108864.0 + (w1 >> 6)) / _TWO53, ((w2 >> 5) * 67108864.0 + (w3 >> 6)) / _TWO53)
        return np.array(out[:n])
    k0, k1 = key_words(key)
    w0, w1, w2, w3 = blocks(k0, k1, np.arange((n + 1) // 2, dtype=np.uint64), domain, round_)
    a, b = unit_floats(w0, w1), unit_floats(w2, w3)
    return np.stack((a, b), axis=-1).reshape(a.shape[:-1] + (-1,))[..., :n]


def unit_floats(hi, lo):
    """Floats in [0, 1) from two 32-bit words each, numpy's 53-bit conversion: exact at every step
    (below 2^53), with or without a fused multiply-add, on numpy's arrays or XLA's."""
    return ((hi >> np.uint64(5)).astype(float) * 67108864.0 + (lo >> np.uint64(6)).astype(float)) / _TWO53


def _lead(key):
    """The leading (batch) shape of a key tensor."""
    return np.shape(key)[:-1]


def _sized(shape):
    """The number of entries of a draw's shape, after the size check."""
    check_size(tuple(shape), "random draw")
    return math.prod(shape)


# ---------------------------------------------------------------- kernels
def uniform01(key, shape=()):
    """Uniform floats in [0, 1) of the given shape, per key."""
    if type(key) is Box:
        return UNIFORM.bind(key, shape=shape)
    u = _uniforms(key, _sized(shape), DRAW).reshape(_lead(key) + tuple(shape))
    return float(u) if u.ndim == 0 else u


def normal01(key, shape=()):
    """Standard normal floats of the given shape, per key (Box-Muller on two uniforms each)."""
    if type(key) is Box:
        return NORMAL.bind(key, shape=shape)
    n = _sized(shape)
    u = _uniforms(key, 2 * n, DRAW)
    z = np.sqrt(-2.0 * np.log1p(-u[..., :n])) * np.cos(2.0 * np.pi * u[..., n:])
    z = z.reshape(_lead(key) + tuple(shape))
    return float(z) if z.ndim == 0 else z


def split(key, n=2):
    """n new keys, (*lead, n, 2)."""
    if type(key) is Box:
        return SPLIT_P.bind(key, n=n)
    one = _one_key(key) if n <= SMALL else None
    if one is not None:     # a split per step of a loop: Python ints
        return np.array([_philox_small(one[0], one[1], i, 0, SPLIT, 0)[:2] for i in range(n)], dtype=float)
    k0, k1 = key_words(key)
    w0, w1, _, _ = blocks(k0, k1, np.arange(n, dtype=np.uint64), SPLIT)
    return np.stack((w0, w1), axis=-1).astype(float)


def fold_in(key, data):
    """A new key from a key and a whole number in [0, 2^64) (a loop index, an example's number)."""
    if type(key) is Box or type(data) is Box:
        return FOLD_IN.bind(key, data)
    one = _one_key(key)
    if one is not None and type(data) is int and 0 <= data < 2 ** 53:     # a loop index: Python ints (exact as a float)
        w0, w1, _, _ = _philox_small(one[0], one[1], data & 0xFFFFFFFF, data >> 32, FOLD, 0)
        return np.array([w0, w1], dtype=float)
    d = np.asarray(to_float(data) if type(data) is int else data, dtype=float)     # (past float's range: inf)
    if not np.all((d >= 0) & (d < 2.0 ** 64) & (d == np.floor(d))):
        raise error("value", f"fold_in needs a whole number in [0, 2^64), got {data!r}")
    k0, k1 = key_words(key)
    d = d.astype(np.uint64)
    if d.ndim:      # a batch of numbers (vmap): one key each
        d = d.reshape(d.shape + (1,) * (k0.ndim - d.ndim))
    w0, w1, _, _ = philox(k0, k1, d & MASK, d >> np.uint64(32), FOLD, 0)
    return np.stack((w0[..., 0], w1[..., 0]), axis=-1).astype(float)


def _lgamma(x):
    """ln |Gamma(x)| over an array."""
    return np.vectorize(math.lgamma, otypes=[float])(x) if np.size(x) else np.zeros(np.shape(x))


def _rounds(key, n, domain, accept_round, what):
    """Run a vectorised rejection sampler: accept_round(round, uniforms (*lead, n, 4), pending)
    returns (accepted mask, values); rounds go on while some entry waits (never a loop over
    entries; each entry's numbers depend on the key and its position only)."""
    out = np.full(_lead(key) + (n,), np.nan)
    pending = np.ones(out.shape, dtype=bool)
    for r in range(200):
        u = _uniforms(key, 4 * n, domain, r).reshape(_lead(key) + (n, 4))
        ok, values = accept_round(r, u, pending)
        take = pending & ok
        out[take] = values[take]
        pending &= ~ok
        if not pending.any():
            return out
    raise error("value", f"{what}: the sampler did not finish (a parameter out of its range?)")


def gamma01(key, a, shape=()):
    """Gamma(a, 1) floats (Marsaglia and Tsang's method; a < 1 boosted by u^(1/a)), a broadcast to
    (*lead, *shape)."""
    if type(key) is Box or type(a) is Box:
        return GAMMA_P.bind(key, a, shape=shape)
    full = _lead(key) + tuple(shape)
    a = np.broadcast_to(np.asarray(a, dtype=float), full).reshape(_lead(key) + (-1,)) if full else \
        np.asarray(a, dtype=float).reshape(_lead(key) + (1,))
    if np.any(~(a > 0) | ~np.isfinite(a)):
        raise error("value", "gamma needs a finite shape parameter a > 0 (beta and dirichlet draw gamma "
                             "numbers of their parameters: each must be finite and > 0)")
    n = _sized(shape)
    d = np.where(a < 1.0, a + 1.0, a) - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * d)

    def attempt(r, u, pending):
        x = np.sqrt(-2.0 * np.log1p(-u[..., 0])) * np.cos(2.0 * np.pi * u[..., 1])
        v = (1.0 + c * x) ** 3
        with np.errstate(invalid="ignore", divide="ignore"):
            ok = (v > 0) & (np.log1p(-u[..., 2]) < 0.5 * x * x + d - d * v + d * np.log(v))
        return ok, d * v
    g = _rounds(key, n, GAMMA, attempt, "gamma")
    boost = _uniforms(key, n, GAMMA, 0xFFFFFFFF)
    with np.errstate(divide="ignore"):
        g = np.where(a < 1.0, g * np.exp(np.log1p(-boost) / a), g)
    g = g.reshape(full)
    return float(g) if g.ndim == 0 else g


def poisson01(key, lam, shape=()):
    """Poisson(lam) counts as floats: Knuth's products below 10, Hormann's PTRS from 10 (numpy's)."""
    if type(key) is Box or type(lam) is Box:
        return POISSON_P.bind(key, lam, shape=shape)
    full = _lead(key) + tuple(shape)
    lam = np.broadcast_to(np.asarray(lam, dtype=float), full).reshape(_lead(key) + (-1,)) if full else \
        np.asarray(lam, dtype=float).reshape(_lead(key) + (1,))
    if np.any(~(lam >= 0)) or np.any(lam > 1e10):
        raise error("value", "poisson needs a rate in [0, 1e10]")
    n = _sized(shape)
    small = lam < 10.0
    limit = np.exp(-lam)
    product = np.ones(lam.shape)
    count = np.zeros(lam.shape)
    safe = np.maximum(lam, 10.0)
    slam, loglam = np.sqrt(safe), np.log(safe)
    b = 0.931 + 2.53 * slam
    a_ = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)

    def attempt(r, u, pending):
        nonlocal product, count
        # Knuth: multiply uniforms until the product falls below exp(-lam); the count is the draw
        product = np.where(pending & small, product * (1.0 - u[..., 0]), product)
        done_small = product <= limit
        count = np.where(pending & small & ~done_small, count + 1.0, count)
        uu, v = u[..., 1] - 0.5, u[..., 2]
        us = 0.5 - np.abs(uu)
        k = np.floor((2.0 * a_ / us + b) * uu + safe + 0.43)
        with np.errstate(divide="ignore", invalid="ignore"):
            quick = (us >= 0.07) & (v <= vr)
            sure_no = (k < 0) | ((us < 0.013) & (v > us))
            # the exact test, with its ln k!, only where the quick ones leave the answer open
            # (ln k! entry by entry costs more than the rest of a round)
            need = pending & ~small & ~quick & ~sure_no
            log_ok = np.zeros(need.shape, dtype=bool)
            if need.any():
                kn, un, iv, bn, an = k[need], us[need], inv_alpha[need], b[need], a_[need]
                log_ok[need] = (np.log(v[need]) + np.log(iv) - np.log(an / (un * un) + bn)
                                <= -safe[need] + kn * loglam[need] - _lgamma(kn + 1.0))
        big_ok = quick | (~sure_no & log_ok)
        return np.where(small, done_small, big_ok), np.where(small, count, k)
    out = _rounds(key, n, POISSON, attempt, "poisson").reshape(full)
    return float(out) if out.ndim == 0 else out


# ---------------------------------------------------------------- rules
def _keys_batched(kernel, shaped=True):
    """Batching: a batch of keys is more leading key axes; parameters batched with an unbatched key
    get the key repeated (the same numbers for every example, as one key gives)."""
    def rule(ns, args, batched, kw):
        size = next(shape_of(a)[0] for a, b in zip(args, batched) if b)
        key = args[0] if batched[0] else ns.broadcast_to(args[0], (size,) + tuple(shape_of(args[0])))
        rest = []
        for arg, b in zip(args[1:], batched[1:]):
            if b and shaped:     # the example's parameter, aligned with the example's shape
                s = shape_of(arg)
                arg = ns.reshape(arg, (s[0],) + (1,) * (len(kw.get("shape", ())) - len(s) + 1) + tuple(s[1:]))
            rest.append(arg)
        return kernel(key, *rest, **kw)
    return rule


def _log_ratio(ns, a, xs):
    """ln x - psi(a), the derivative in a of ln p(x; a), at xs: x with 0 (a draw that underflowed) as 1."""
    return ns.sub(ns.ln(xs), digamma(a))


def _grad_in_a(ns, ans, a, x):
    """d/da G = -K - G (ln x - psi(a)) (dsl/core/ops/gamma_draws.py)."""
    xs = ns.where(ns.greater(x, 0.0), x, 1.0)
    return ns.neg(ns.add(G.gamma_draw_grad2(a, x), ns.mul(ans, _log_ratio(ns, a, xs))))


def _grad_in_x(ns, ans, a, x):
    """d/dx G = -(ln x - psi(a)) - G ((a - 1) / x - 1); 0 at x = 0, where G is 0."""
    positive = ns.greater(x, 0.0)
    xs = ns.where(positive, x, 1.0)
    d = ns.neg(ns.add(_log_ratio(ns, a, xs), ns.mul(ans, ns.sub(ns.div(ns.sub(a, 1.0), xs), 1.0))))
    return ns.where(positive, d, 0.0)


def _third_order(*rule_args):
    """A third derivative of gamma's draws in a (GammaDrawGrad2's, in either mode): not computed; say so."""
    raise error("grad", "gamma's draws have derivatives with respect to their shape parameter a of the first "
                        "and second order in dg, not of the third",
                hint="stop_gradient(a) inside the outer derivatives if a is not to be learnt there")


UNIFORM = define("RandomUniform", uniform01, differentiable=False, batch=_keys_batched(uniform01))
NORMAL = define("RandomNormal", normal01, differentiable=False, batch=_keys_batched(normal01))
SPLIT_P = define("RandomSplit", split, differentiable=False, batch=_keys_batched(split))
FOLD_IN = define("RandomFoldIn", fold_in, differentiable=False, batch=_keys_batched(fold_in, shaped=False))
GAMMA_P = define("RandomGamma", gamma01, differentiable=False, batch=_keys_batched(gamma01), can_fail=True)
# x as a function of a, the draw x made with a held constant (dsl/runtime/builtins/random.py)
define("GammaDraw", G.gamma_draw, batch=ELEMENTWISE, keeps_nan=True,
       partials=(lambda ns, ans, a, x: G.gamma_draw_grad(a, ans), ONE))     # ans: the draw, a function of a
define("GammaDrawGrad", G.gamma_draw_grad, batch=ELEMENTWISE, keeps_nan=True, partials=(_grad_in_a, _grad_in_x))
define("GammaDrawGrad2", G.gamma_draw_grad2, batch=ELEMENTWISE, keeps_nan=True, vjp_all=_third_order, jvp=_third_order)
POISSON_P = define("RandomPoisson", poisson01, differentiable=False, batch=_keys_batched(poisson01), can_fail=True)
