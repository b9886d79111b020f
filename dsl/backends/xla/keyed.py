"""Keyed draws on XLA: the generator of dsl/core/primitives/random.py (Philox4x32-10 on a key's two
words) in XLA's integer arithmetic, so that a program drawing with `key=` runs whole on XLA, with
no call back into Python per draw (a sampler drawing each step spent most of its time there).

split, fold_in and the uniforms in [0, 1) are numpy's numbers bit for bit: Philox is integer
arithmetic, and a uniform's 53 bits become a float64 exactly. normal's Box-Muller transform goes through XLA's
log1p, which differs from the C library's that numpy calls in the last bits: its numbers agree
with numpy's to 1e-13 relative, as XLA's other transcendental functions do (docs/xla.md). A key
that is no key (words not whole numbers in [0, 2^32)) fails the call's flag, and the numpy
backend raises dg's error for it.
"""

import numpy as np

from ...core.primitives import random as R
from .errors import NotLowerable

_U = np.uint64
_MASK, _SHIFT = _U(0xFFFFFFFF), _U(32)


def _words(L, key):
    """A key tensor (..., 2) as its two words, uint64 arrays of shape (..., 1) (random.key_words),
    with the flag that it is a key."""
    jnp = L.np
    if jnp.ndim(key) < 1 or jnp.shape(key)[-1] != 2:
        raise NotLowerable("a random key of another shape than (..., 2)")
    k = jnp.asarray(key, jnp.float64)
    L.require(jnp.all((k >= 0.0) & (k < 2.0 ** 32) & (k == jnp.floor(k))))
    k = jnp.where((k >= 0.0) & (k < 2.0 ** 32), k, 0.0).astype(jnp.uint64)
    return k[..., 0, None], k[..., 1, None]


def _blocks(L, k0, k1, n, domain, round_=0):
    """Philox of counters (i, 0, domain, round) for i below n under each key (random.blocks)."""
    i = L.np.arange(n, dtype=L.np.uint64)
    return R.philox_rounds(k0, k1, i & _MASK, i >> _SHIFT, _U(domain), _U(round_))


def _uniforms(L, key, n, domain):
    """n uniform floats in [0, 1) per key, numpy's 53-bit conversion: (*lead, n) (random._uniforms)."""
    jnp = L.np
    w0, w1, w2, w3 = _blocks(L, *_words(L, key), (n + 1) // 2, domain)
    a, b = R.unit_floats(w0, w1), R.unit_floats(w2, w3)
    return jnp.stack((a, b), axis=-1).reshape(a.shape[:-1] + (-1,))[..., :n]


def _uniform01(L, key, shape=()):
    """RandomUniform: uniform floats in [0, 1) of `shape` per key."""
    n = int(np.prod(shape, dtype=np.int64))
    return _uniforms(L, key, n, R.DRAW).reshape(L.np.shape(key)[:-1] + tuple(shape))


def _normal01(L, key, shape=()):
    """RandomNormal: Box-Muller on two uniforms per number, as random.normal01."""
    jnp = L.np
    n = int(np.prod(shape, dtype=np.int64))
    u = _uniforms(L, key, 2 * n, R.DRAW)
    z = jnp.sqrt(-2.0 * jnp.log1p(-u[..., :n])) * jnp.cos(2.0 * np.pi * u[..., n:])
    return z.reshape(jnp.shape(key)[:-1] + tuple(shape))


def _split(L, key, n=2):
    """RandomSplit: n new keys per key, (*lead, n, 2)."""
    w0, w1, _, _ = _blocks(L, *_words(L, key), n, R.SPLIT)
    return L.np.stack((w0, w1), axis=-1).astype(L.np.float64)


def _fold_in(L, key, data):
    """RandomFoldIn: a new key from a key and a whole number (one per key under vmap). Numbers
    from 2^63, which XLA's conversion to uint64 need not take as numpy's does, go to numpy."""
    jnp = L.np
    k0, k1 = _words(L, key)
    d = jnp.asarray(data, jnp.float64)
    L.require(jnp.all((d >= 0.0) & (d < 2.0 ** 63) & (d == jnp.floor(d))))
    d = jnp.where((d >= 0.0) & (d < 2.0 ** 63), d, 0.0).astype(jnp.uint64)
    if d.ndim:
        d = d.reshape(d.shape + (1,) * (k0.ndim - d.ndim))
    w0, w1, _, _ = R.philox_rounds(k0, k1, d & _MASK, d >> _SHIFT, _U(R.FOLD), _U(0))
    return jnp.stack((w0[..., 0], w1[..., 0]), axis=-1).astype(jnp.float64)


KEYED = {"RandomUniform": _uniform01, "RandomNormal": _normal01, "RandomSplit": _split, "RandomFoldIn": _fold_in}
