"""Random distributions. Each draws from a key (dsl/core/primitives/random.py: the same key gives the
same numbers, everywhere) given as `key=`, or without one from the interpreter's stream (`seed`
restarts it), which hands out a fresh key per draw. The draws are composed of a few primitives
(uniform, normal, gamma and Poisson numbers of a key) and dg's operations, so a draw's
derivative with respect to its parameters is the pathwise one (reparameterisation: the
derivative of mean + std * z in mean and std), batching and staging those operations'."""

import math

import numpy as np

from ...core import ops
from ...core.ops.core import check_size, fmt_shape, normalize_axis, to_float
from ...core.ops.gamma_draws import gamma_draw
from ...core.primitives import random as R
from ...core.stage import Draw, differentiated, perform
from ...core.tape import peek, raw, strip_unstaged
from ...core.values import brief, type_name
from ...errors import error
from .arrays import flag
from .tensors import _count, _float_dtype, _shape

SQRT_HALF = math.sqrt(0.5)


def _param(v, who, name):
    """A numeric parameter: a number or a tensor (big ints as floats, bools as 0 and 1), or dg's
    type error."""
    p = peek(v)
    t = type(p)
    if t is np.ndarray:
        return v if p.dtype.kind == "f" or type(v) is not np.ndarray else p.astype(float)
    if t in (float, int, bool) or isinstance(p, np.generic):
        return v if type(v) is not t else to_float(p)
    shaped = t is tuple and all(type(peek(s)) is int for s in p)    # gamma(2.0, (3,)): a shape meant
    raise error("type", f"{who}: {name} must be a number or a tensor, got {type_name(p)}",
                hint=f"a shape goes by name: {who}(..., shape={brief(p)})" if shaped else None)


def _gamma01(key, a, shape):
    """Gamma(a, 1) draws with their derivative in a: drawn with a held constant, which GammaDraw
    then gives back as their shape parameter (the implicit reparameterisation, JAX's)."""
    x = R.gamma01(key, strip_unstaged(a), shape)
    return gamma_draw(a, x) if differentiated(a) else x


def _in_type(u, dtype, who, *params, counts=False):
    """A float64 draw `u` in the float type `dtype` names, or else in the one its parameters promote
    to (float64 when they are numbers): float32 parameters give float32 draws, as numpy's promotion.
    With `counts` (a discrete draw: 0/1, class indices, counts, positions), `dtype` may name any
    element type ("int64", "bool", ...), as astype's."""
    if dtype is not None:
        kind = ops.dtype_arg(dtype, who) if counts else _float_dtype(dtype, who)
    else:
        # numbers take the tensors' type (weak, as in numpy 2), so only float tensors decide it
        floats = [v.dtype for v in map(peek, params) if type(v) is np.ndarray and v.dtype.kind == "f"]
        kind = np.result_type(*floats) if floats else np.float64
    return u if kind == np.float64 else ops.astype(u, kind)


def _shape_of(*params):
    """The broadcast shape of the parameters (a draw's shape when none is given), in dg's words."""
    shapes = [np.shape(peek(p)) for p in params]
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise error("shape", "the parameters of shapes " + ", ".join(fmt_shape(s) for s in shapes)
                    + " do not broadcast together") from None


def _population(x, who, dtype=None):
    """What a permutation or a choice draws from: (n, true) for an int n (0..n-1), (its rows, false)
    for a tensor. Only the type is peeked: a staged tensor's values stay free of guards. A tensor's
    rows keep their own type: `dtype` is for the positions drawn from an int."""
    v = peek(x)
    if type(v) in (int, float) and not isinstance(v, bool):
        return _count(raw(x), f"{who} needs an int or a tensor"), True
    if type(v) is not np.ndarray or not v.shape:
        raise error("type", f"{who} needs an int or a tensor with at least one axis, got {type_name(v)}")
    if dtype is not None:
        raise error("type", f"{who}: dtype= is for draws from an int n; a tensor's rows keep its type "
                            f"(astype the result to change it)")
    return v.shape[0], False


def _check_key(key, who):
    """A key argument: a tensor whose last axis holds the two words (its values are checked where
    they are known, by the primitives)."""
    v = peek(key)
    if type(v) is not np.ndarray or v.shape[-1:] != (2,):
        got = f"a tensor of shape {fmt_shape(v.shape)}" if type(v) is np.ndarray else type_name(v)
        # numpy's split(x, 3) divides an array; dg's split divides a random key
        if who == "split":
            hint = "split divides a random key; a tensor's parts are slices, x[0:2]"
        elif who == "fold_in":
            hint = None
        else:   # JAX's habit: the key first, positionally
            hint = f"a distribution takes its key by name, after the rest: {who}(..., key=k)"
        raise error("type", f"{who}: key must be a random key (rng(seed), split(key)), got {got}", hint=hint)
    return key


def make(interp):
    """The distributions, drawing from the interpreter's stream where no key is given."""

    def fresh(key, who):
        """The key to draw with: the one given, or the next of the interpreter's stream."""
        if key is not None:     # not raw(key): that would make jit guard on the key's value
            return _check_key(key, who)
        return perform(interp.staging, Draw(lambda: interp.rng.integers(0, 2 ** 32, size=2).astype(float)), ())

    def draw_shape(shape, *params):
        """The shape asked for, or the parameters' broadcast shape."""
        return _shape_of(*params) if raw(shape) is None else _shape(shape)

    def kernel_shape(shape, who, *params):
        """draw_shape for a draw whose kernel reads its parameters (gamma's, beta's, poisson's): as
        numpy's, each must broadcast to the shape asked for."""
        out = draw_shape(shape, *params)
        for param in params:
            given = np.shape(peek(param))
            try:
                fits = tuple(np.broadcast_shapes(given, out)) == tuple(out)
            except ValueError:
                fits = False
            if not fits:
                raise error("shape", f"{who}'s parameter of shape {fmt_shape(given)} does not broadcast to the "
                                     f"shape asked for, {fmt_shape(out)}")
        return out

    def uniform(lo=0.0, hi=1.0, shape=None, key=None, dtype=None):
        """uniform(lo=0, hi=1, shape=none, key=none): floats uniform in [lo, hi)."""
        lo, hi = _param(lo, "uniform", "lo"), _param(hi, "uniform", "hi")
        u = _in_type(R.uniform01(fresh(key, "uniform"), draw_shape(shape, lo, hi)), dtype, "uniform", lo, hi)
        return ops.add(lo, ops.mul(ops.sub(hi, lo), u))

    def normal(mean=0.0, std=1.0, shape=None, key=None, dtype=None):
        """normal(mean=0, std=1, shape=none, key=none): normal floats."""
        mean, std = _param(mean, "normal", "mean"), _param(std, "normal", "std")
        z = _in_type(R.normal01(fresh(key, "normal"), draw_shape(shape, mean, std)), dtype, "normal", mean, std)
        return ops.add(mean, ops.mul(std, z))

    def exponential(scale=1.0, shape=None, key=None, dtype=None):
        """exponential(scale=1, shape=none, key=none): exponential floats of mean scale (numpy's)."""
        scale = _param(scale, "exponential", "scale")
        u = _in_type(R.uniform01(fresh(key, "exponential"), draw_shape(shape, scale)), dtype, "exponential", scale)
        return ops.mul(scale, ops.neg(ops.log1p(ops.neg(u))))

    def bernoulli(p=0.5, shape=None, key=None, dtype=None):
        """bernoulli(p=0.5, shape=none, key=none, dtype=none): 1.0 with probability p, else 0.0."""
        p = _param(p, "bernoulli", "p")
        u = R.uniform01(fresh(key, "bernoulli"), draw_shape(shape, p))
        return _in_type(ops.where(ops.order("<", u, p), 1.0, 0.0), dtype, "bernoulli", p, counts=True)

    def gumbel(k, shape):
        """Standard Gumbel floats, -ln(-ln u)."""
        return ops.neg(ops.ln(ops.neg(ops.log1p(ops.neg(R.uniform01(k, shape))))))

    def categorical(logits, axis=-1, shape=None, key=None, dtype=None):
        """categorical(logits, axis=-1, shape=none, key=none, dtype=none): class indices drawn with
        probabilities softmax(logits) along axis (the Gumbel-max trick, as JAX's)."""
        logits = _param(logits, "categorical", "logits")
        full = np.shape(peek(logits))
        if not full:
            raise error("shape", "categorical needs logits with at least one axis (the classes)")
        ax = normalize_axis(raw(axis), len(full), False)
        last = ops.transpose(logits, tuple(i for i in range(len(full)) if i != ax) + (ax,))
        batch = full[:ax] + full[ax + 1:]
        out = batch if raw(shape) is None else _shape(shape)
        g = gumbel(fresh(key, "categorical"), tuple(out) + (full[ax],))
        return _in_type(ops.argmax(ops.add(last, g), -1), dtype, "categorical", logits, counts=True)

    def permutation(x, key=None, dtype=None):
        """permutation(x, key=none, dtype=none): an int n gives 0..n-1 shuffled; a tensor, its rows
        shuffled."""
        n, count = _population(x, "permutation", dtype)
        order = ops.argsort(R.uniform01(fresh(key, "permutation"), (n,)))
        return _in_type(order, dtype, "permutation", counts=True) if count else ops.gather(x, order, 0)

    def choice(a, shape=(), replace=True, p=None, key=None, dtype=None):
        """choice(a, shape=(), replace=true, p=none, key=none, dtype=none): entries of a (rows of a
        tensor, or 0..a-1 for an int), uniformly or with probabilities p."""
        n, count = _population(a, "choice", dtype)
        out = _shape(shape)
        size = math.prod(out)
        if not flag(replace, "choice: replace") and size > n:
            raise error("value", f"choice: {size} draws without replacement from {n} entries")
        if raw(p) is not None:
            p = _param(p, "choice", "p")
        if raw(p) is not None and np.shape(peek(p)) != (n,):
            raise error("shape", f"choice: p must have one probability per entry ({n}), got shape "
                                 f"{fmt_shape(np.shape(peek(p)))}")
        k = fresh(key, "choice")
        if raw(replace) and raw(p) is None:
            idx = ops.floor(ops.mul(R.uniform01(k, out), float(n)))
        elif raw(replace):
            idx = ops.argmax(ops.add(ops.ln(p), gumbel(k, tuple(out) + (n,))), -1)
        else:   # the first `size` of the entries ordered by Gumbel-perturbed log-probabilities
            scores = gumbel(k, (n,)) if raw(p) is None else ops.add(ops.ln(p), gumbel(k, (n,)))
            idx = ops.reshape(ops.index(ops.argsort(ops.neg(scores)), (slice(0, size),)), out)
        if count:
            return _in_type(idx, dtype, "choice", counts=True)
        rows = ops.gather(a, ops.reshape(idx, (size,)), 0)
        return ops.reshape(rows, tuple(out) + tuple(np.shape(peek(a)))[1:])

    def gamma(a, scale=1.0, shape=None, key=None, dtype=None):
        """gamma(a, scale=1, shape=none, key=none): gamma floats of shape parameter a (numpy's)."""
        a, scale = _param(a, "gamma", "a"), _param(scale, "gamma", "scale")
        g = _gamma01(fresh(key, "gamma"), a, kernel_shape(shape, "gamma", a, scale))
        return ops.mul(scale, _in_type(g, dtype, "gamma", a, scale))

    def beta(a, b, shape=None, key=None, dtype=None):
        """beta(a, b, shape=none, key=none): beta floats in [0, 1]."""
        a, b = _param(a, "beta", "a"), _param(b, "beta", "b")
        keys = R.split(fresh(key, "beta"), 2)      # a staged pair under jit or vmap: read row by row
        ka, kb = ops.index(keys, (0,)), ops.index(keys, (1,))
        out = kernel_shape(shape, "beta", a, b)
        x, y = _gamma01(ka, a, out), _gamma01(kb, b, out)
        return _in_type(ops.div(x, ops.add(x, y)), dtype, "beta", a, b)

    def dirichlet(alpha, shape=(), key=None, dtype=None):
        """dirichlet(alpha, shape=(), key=none): probability vectors (the last axis sums to 1)."""
        alpha = _param(alpha, "dirichlet", "alpha")
        dims = np.shape(peek(alpha))
        if len(dims) != 1:
            raise error("shape", f"dirichlet needs alpha as a vector of concentrations, got shape {fmt_shape(dims)}")
        g = _gamma01(fresh(key, "dirichlet"), alpha, tuple(_shape(shape)) + dims)
        return _in_type(ops.div(g, ops.sum_(g, -1, True)), dtype, "dirichlet", alpha)

    def poisson(lam=1.0, shape=None, key=None, dtype=None):
        """poisson(lam=1, shape=none, key=none, dtype=none): counts (as floats) of mean lam."""
        lam = _param(lam, "poisson", "lam")
        counts = R.poisson01(fresh(key, "poisson"), lam, kernel_shape(shape, "poisson", lam))
        return _in_type(counts, dtype, "poisson", lam, counts=True)

    def truncated_normal(lo, hi, shape=None, key=None, dtype=None):
        """truncated_normal(lo, hi, shape=none, key=none): standard normal floats in [lo, hi]."""
        lo, hi = _param(lo, "truncated_normal", "lo"), _param(hi, "truncated_normal", "hi")
        u = _in_type(R.uniform01(fresh(key, "truncated_normal"), draw_shape(shape, lo, hi)), dtype,
                     "truncated_normal", lo, hi)
        # the inverse of the normal CDF at a point u of the way across [lo, hi], read through erfc
        # on the side of 0 where the interval lies (mirrored, x -> -x, when it lies mostly below
        # 0): erfc's small values in a far tail keep their digits, where erf's round to 1 (through
        # erf, [8, 9] gave a dozen distinct numbers, some of them infinite)
        below = ops.order("<", ops.add(lo, hi), 0.0)
        a = ops.erfc(ops.mul(ops.where(below, ops.neg(lo), lo), SQRT_HALF))
        b = ops.erfc(ops.mul(ops.where(below, ops.neg(hi), hi), SQRT_HALF))
        z = ops.div(ops.erfcinv(ops.add(a, ops.mul(u, ops.sub(b, a)))), SQRT_HALF)
        return ops.clamp(ops.where(below, ops.neg(z), z), lo, hi)

    return {"uniform": uniform, "normal": normal, "exponential": exponential, "bernoulli": bernoulli,
            "categorical": categorical, "permutation": permutation, "choice": choice, "gamma": gamma,
            "beta": beta, "dirichlet": dirichlet, "poisson": poisson, "truncated_normal": truncated_normal}


def rng(seed):
    """rng(seed): the random key of a whole number in [0, 2^64): the tensor [seed // 2^32, seed % 2^32]."""
    s = _count(seed, "rng needs a non-negative int seed")
    if s >= 2 ** 64:
        raise error("value", f"rng needs a seed below 2^64, got {s}")
    return np.array([float(s >> 32), float(s & 0xFFFFFFFF)])


def split(key, n=2):
    """split(key, n=2): n new keys (a tensor of shape (n, 2): `let a, b = split(key)`)."""
    if type(peek(key)) is str:      # Python's str.split
        raise error("type", "split divides a random key, not a string",
                    hint="dg's strings have no split: for c in s walks a string's characters, and s[a:b] slices it")
    n = _count(n, "split needs a non-negative int n")
    check_size((n, 2), "split's keys")
    return R.split(_check_key(key, "split"), n)


def fold_in(key, data):
    """fold_in(key, data): a new key for each whole number data (a loop's step, an example's index)."""
    _param(data, "fold_in", "data")     # a number or a tensor (the kernel checks they are whole)
    return R.fold_in(_check_key(key, "fold_in"), data)


BUILTINS = {"rng": rng, "split": split, "fold_in": fold_in}
