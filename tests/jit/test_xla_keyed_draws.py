"""Keyed draws compiled by XLA (dsl/backends/xla/keyed.py): split, fold_in and uniforms in [0, 1)
give numpy's numbers bit for bit, normal agrees to 1e-13 relative (XLA's log1p), a key that is no
key is dg's error, and a program that draws with keys runs whole on XLA, with no call back into
Python."""

import hashlib

import numpy as np
import pytest

import dsl
from dsl.backends.xla import disk
from dsl.backends.xla.rules import ON_HOST
from dsl.errors import DgError

jax = pytest.importorskip("jax")


def _both(src, result):
    """`result` after running src with jit compiling for numpy, then for XLA, and the XLA interpreter."""
    out = {}
    for backend in ("numpy", "xla"):
        i = dsl.Interpreter(seed=0, backend=backend)
        i.run(src)
        out[backend] = i.lookup(result)
    return out["numpy"], out["xla"], i


def _ops(program):
    """Every primitive a staged program runs, its loops' bodies included."""
    found = set()
    for step in program.steps:
        found.add(step[1])
        body = (step[4] or {}).get("body") if step[1] in ("Scan", "Loop") else None
        if body is not None:
            found |= _ops(getattr(body, "program", None) or body.forward)
    return found


def _whole_on_xla(jitted):
    """The recordings of a jitted function ran on XLA, calling no Python kernel, and can be kept on
    disk (a program that calls back into its process cannot)."""
    for entries in jitted.call.entries.values():
        for entry in entries:
            assert entry.xla.why is None
            assert not _ops(entry.program) & ON_HOST
            disk._program(hashlib.sha256(), entry.program)


def test_keys_and_uniform_draws_are_numpys_bits():
    src = ("let f = jit(fn(k, i) => (split(k, 5), fold_in(k, i), fold_in(k, 1099511627779.0), "
           "uniform(shape=(1001,), key=k), uniform(shape=(4, 3), key=fold_in(k, i)), uniform(key=k), "
           "vmap(fn(q) => uniform(shape=(7,), key=q))(split(k, 64)), vmap(fn(j) => fold_in(k, j))([0.0, 5.0, 9.0]), "
           "split(split(k, 3), 2)))\n"
           "let r = (f(rng(1), 7), f(rng(2), 0), f([4294967295.0, 0.0], 123456))")
    want, got, i = _both(src, "r")
    for w, g in zip(want, got):
        for a, b in zip(w, g):
            assert np.array_equal(np.asarray(a), np.asarray(b)) and np.shape(a) == np.shape(b)
    _whole_on_xla(i.lookup("f"))


def test_normal_draws_agree_to_1e13_and_draws_in_a_loop_stay_on_xla():
    src = ("let f = jit(fn(k) => (normal(shape=(20000,), key=k), uniform(-2.0, 3.3, (20000,), key=k)))\n"
           "fn walk(key, n) {\n  let s = zeros(3)\n  let hits = 0.0\n  for t in range(n) {\n"
           "    let ks = split(key, 3)\n    key = ks[0]\n    s = s + 0.1 * normal(shape=(3,), key=ks[1])\n"
           "    hits = hits + where(uniform(key=ks[2]) < 0.5, 1.0, 0.0)\n  }\n  return (s, hits, key)\n}\n"
           "let w = jit(walk)\nlet r = (f(rng(3)), f(rng(4)), w(rng(5), 300), w(rng(6), 300))")
    want, got, i = _both(src, "r")
    for (a, ua), (b, ub) in zip(want[:2], got[:2]):
        np.testing.assert_allclose(b, a, rtol=1e-13, atol=0)
        assert np.mean(a == b) > 0.5        # most of them to the bit: log1p differs in the last bits only
        # lo + (hi - lo) u, which XLA may round once (a fused multiply-add): an ulp of the interval
        np.testing.assert_allclose(ub, ua, rtol=0, atol=4 * np.spacing(5.3))
    for (s0, h0, k0), (s1, h1, k1) in zip(want[2:], got[2:]):
        np.testing.assert_allclose(s1, s0, rtol=1e-12, atol=1e-14)
        assert h1 == h0 and np.array_equal(k1, k0)
    _whole_on_xla(i.lookup("f"))
    _whole_on_xla(i.lookup("w"))


@pytest.mark.parametrize("call, words", [
    ("f([1.0, 2.5], 1.0)", "a random key is a tensor of two whole numbers"),
    ("f(rng(1), -1.0)", "fold_in needs a whole number in [0, 2^64)"),
    ("f(rng(1), 0.5)", "fold_in needs a whole number in [0, 2^64)"),
])
def test_a_key_or_number_numpy_refuses_is_dgs_error_on_xla(call, words):
    src = "let f = jit(fn(k, d) => normal(shape=(2,), key=fold_in(k, d)))\nlet a = f(rng(1), 3.0)"
    errors = {}
    for backend in ("numpy", "xla"):
        i = dsl.Interpreter(backend=backend)
        i.run(src)
        with pytest.raises(DgError) as info:
            i.run(f"let b = {call}")
        errors[backend] = str(info.value)
    assert errors["xla"] == errors["numpy"] and words in errors["xla"]


def test_fold_in_of_a_number_from_2_to_the_63_is_numpys_key():
    # XLA's conversion of such a float to uint64 need not be numpy's: that call runs on numpy
    src = "let f = jit(fn(k, d) => fold_in(k, d))\nlet r = (f(rng(1), 9223372036854779904.0), f(rng(1), 3.0))"
    want, got, _ = _both(src, "r")
    assert all(np.array_equal(a, b) for a, b in zip(want, got))
