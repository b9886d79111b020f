"""Random keys and distributions: the generator against Random123's known answers, keys as
values (the same key, the same numbers; split streams apart), the distributions' moments on
many draws, pathwise derivatives, the same numbers under jit and vmap, a draw in a jitted loop
staged once, and dg's errors."""

import math

import numpy as np
import pytest

import dsl
from dsl.errors import DgError
from dsl.core.primitives.random import philox
from gradcheck import check

from test_jit_loops import ops_of

N = 200_000


def run(src, **values):
    """An interpreter that has run src with `values` bound."""
    interp = dsl.Interpreter(seed=0)
    for name, v in values.items():
        interp.set(name, v)
    interp.run(src, "t.dg")
    return interp


def ev(expr):
    """The value of one expression."""
    return run(f"let r = {expr}").get("r")


def test_philox_gives_random123s_known_answers():
    m = 0xFFFFFFFF
    for key, ctr, want in [((0, 0), (0, 0, 0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
                           ((m, m), (m, m, m, m), (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
                           ((0xa4093822, 0x299f31d0), (0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344),
                            (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]:
        assert tuple(int(w) for w in philox(*key, *ctr)) == want


def test_one_keys_few_numbers_made_in_python_are_the_vectorised_generators():
    # a draw per step of a loop takes Python ints and floats; the numbers are those of the batched
    # path (a key among others under vmap), bit for bit
    from dsl.core.primitives import random as R
    rng = np.random.default_rng(0)
    keys = np.vstack([rng.integers(0, 2 ** 32, size=(20, 2)), [[0, 0], [2 ** 32 - 1, 2 ** 32 - 1]]]).astype(float)
    for n in range(1, 2 * R.SMALL + 3):
        batch = R._uniforms(np.vstack([keys, keys[:1]]), n, R.DRAW)      # more than one key: numpy's path
        for key, row in zip(keys, batch):
            assert np.array_equal(R._uniforms(key, n, R.DRAW), row)
    assert R.normal01(keys[0], (3,)).tolist() == R.normal01(keys[:2], (3,))[0].tolist()
    # split and fold_in of one key (a loop's `split(fold_in(key, i))`) too, with ints up to 2^53
    # (the batched path reads them as floats, exact to there)
    ints = [0, 1, 7, 2 ** 32 - 1, 2 ** 32, 2 ** 40 + 7, 2 ** 53 - 1, 2 ** 53, 2 ** 60 + 1]
    for n in (1, 2, 3, R.SMALL, R.SMALL + 1):
        batch = R.split(np.vstack([keys, keys[:1]]), n)
        for key, row in zip(keys, batch):
            assert np.array_equal(R.split(key, n), row)
    for d in ints:
        batch = R.fold_in(np.vstack([keys, keys[:1]]), np.full(len(keys) + 1, float(d)))
        for key, row in zip(keys, batch):
            assert np.array_equal(R.fold_in(key, d), row)


def test_a_key_is_a_value_the_same_key_gives_the_same_numbers():
    r = ev("(rng(42), rng(2 ** 40 + 5), uniform(shape=(4,), key=rng(1)), uniform(shape=(4,), key=rng(1)), "
           "uniform(shape=(4,), key=rng(2)), split(rng(1)), split(rng(1), 3), fold_in(rng(1), 7))")
    assert list(r[0]) == [0.0, 42.0] and list(r[1]) == [256.0, 5.0]
    assert np.array_equal(r[2], r[3]) and not np.any(r[2] == r[4])
    assert r[5].shape == (2, 2) and r[6].shape == (3, 2) and np.array_equal(r[5], r[6][:2])
    assert not np.array_equal(r[5][0], r[5][1]) and not np.array_equal(r[7], r[5][0])
    # a longer draw extends a shorter one: each number depends on the key and its position only
    # (a few numbers are made in Python ints, many in numpy arrays: the same words)
    longer, shorter, many, few = ev("(uniform(shape=(40,), key=rng(3)), uniform(shape=(5,), key=rng(3)), "
                                    "split(rng(3), 30), split(rng(3), 3))")
    assert np.array_equal(longer[:5], shorter) and np.array_equal(many[:3], few)


def test_without_a_key_draws_follow_the_interpreters_seed():
    a = run("seed(5)\nlet x = (normal(shape=(3,)), uniform())\nseed(5)\nlet y = (normal(shape=(3,)), uniform())")
    assert np.array_equal(a.get("x")[0], a.get("y")[0]) and a.get("x")[1] == a.get("y")[1]
    b = run("let x = normal(shape=(3,))\nlet y = normal(shape=(3,))")
    assert not np.any(b.get("x") == b.get("y"))


def _moments(x):
    return float(np.mean(x)), float(np.var(x))


@pytest.mark.parametrize("expr, mean, var", [
    (f"uniform(-1.0, 3.0, ({N},), key=k)", 1.0, 16.0 / 12),
    (f"normal(2.0, 0.5, ({N},), key=k)", 2.0, 0.25),
    (f"exponential(2.0, ({N},), key=k)", 2.0, 4.0),
    (f"bernoulli(0.3, ({N},), key=k)", 0.3, 0.21),
    (f"gamma(0.5, 2.0, ({N},), key=k)", 1.0, 2.0),
    (f"gamma(3.0, shape=({N},), key=k)", 3.0, 3.0),
    (f"beta(2.0, 3.0, ({N},), key=k)", 0.4, 6.0 / 150),
    (f"poisson(3.0, ({N},), key=k)", 3.0, 3.0),
    (f"poisson(50.0, ({N},), key=k)", 50.0, 50.0),
    (f"truncated_normal(-1.0, 2.0, ({N},), key=k)", None, None),
    (f"dirichlet([1.0, 2.0, 3.0], ({N},), key=k)[:, 2]", 0.5, 0.5 * 0.5 / 7),
])
def test_distributions_have_their_moments(expr, mean, var):
    x = run(f"let k = rng(11)\nlet r = {expr}").get("r")
    if mean is None:        # a standard normal cut to [-1, 2]: moments from its density
        pdf = lambda t: math.exp(-t * t / 2) / math.sqrt(2 * math.pi)      # noqa: E731
        z = 0.5 * (math.erf(2 / math.sqrt(2)) - math.erf(-1 / math.sqrt(2)))
        mean = (pdf(-1.0) - pdf(2.0)) / z
        var = 1 + (-1.0 * pdf(-1.0) - 2.0 * pdf(2.0)) / z - mean ** 2
        assert x.min() >= -1.0 and x.max() <= 2.0
    m, v = _moments(x)
    assert abs(m - mean) < 5 * math.sqrt(var / N)
    assert abs(v - var) < 0.02 * var


def _truncated_normal_moments(lo, hi):
    """The mean and variance of a standard normal cut to [lo, hi], from erfc on the interval's side
    of 0 (exact in a far tail)."""
    if lo + hi < 0:
        m, v = _truncated_normal_moments(-hi, -lo)
        return -m, v
    pdf = lambda t: math.exp(-t * t / 2) / math.sqrt(2 * math.pi)      # noqa: E731
    z = 0.5 * (math.erfc(lo / math.sqrt(2)) - math.erfc(hi / math.sqrt(2)))
    mean = (pdf(lo) - pdf(hi)) / z
    return mean, 1 + (lo * pdf(lo) - hi * pdf(hi)) / z - mean ** 2


@pytest.mark.parametrize("lo, hi", [(8.0, 9.0), (-9.0, -8.0), (-30.0, -29.0), (20.0, 20.5), (-0.5, 6.0),
                                    (-7.0, 0.5), (3.0, 300.0)])
def test_truncated_normals_in_far_tails_have_their_moments(lo, hi):
    # drawn through erf, which rounds to 1 there, [8, 9] took a dozen distinct values, some infinite
    x = run(f"let r = truncated_normal({lo}, {hi}, ({N},), key=rng(12))").get("r")
    mean, var = _truncated_normal_moments(lo, hi)
    assert x.min() >= lo and x.max() <= hi and len(np.unique(x)) > N * 0.99
    m, v = _moments(x)
    assert abs(m - mean) < 5 * math.sqrt(var / N)
    assert abs(v - var) < 0.03 * var


def test_discrete_draws_have_their_frequencies():
    r = ev(f"(categorical([0.0, 1.0, 2.0], shape=({N},), key=rng(1)), choice(4, ({N},), p=[0.1, 0.2, 0.3, 0.4], "
           f"key=rng(2)), choice(5, (5,), replace=false, key=rng(3)), permutation(6, key=rng(4)), "
           f"permutation(tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), key=rng(5)), choice(10, ({N},), key=rng(6)))")
    probs = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    np.testing.assert_allclose(np.bincount(r[0].astype(int)) / N, probs, atol=0.005)
    np.testing.assert_allclose(np.bincount(r[1].astype(int)) / N, [0.1, 0.2, 0.3, 0.4], atol=0.005)
    assert sorted(r[2]) == [0, 1, 2, 3, 4] and sorted(r[3]) == [0, 1, 2, 3, 4, 5]
    assert sorted(map(tuple, r[4])) == [(1.0, 2.0), (3.0, 4.0), (5.0, 6.0)]
    np.testing.assert_allclose(np.bincount(r[5].astype(int)) / N, np.full(10, 0.1), atol=0.005)


def test_parameters_outside_numpys_range_follow_the_formula_as_documented():
    # normal is mean + std * z and exponential scale * e, their parameters unchecked; bernoulli
    # is u < p, as JAX's (numpy raises for each)
    r = ev("(normal(1.0, -2.0, (5,), key=rng(0)), normal(1.0, 2.0, (5,), key=rng(0)), "
           "exponential(-1.0, (5,), key=rng(1)), exponential(1.0, (5,), key=rng(1)), "
           "bernoulli(1.5, (5,), key=rng(2)), bernoulli(-0.5, (5,), key=rng(2)))")
    np.testing.assert_allclose(r[0] - 1.0, -(r[1] - 1.0), rtol=1e-15)
    np.testing.assert_allclose(r[2], -r[3], rtol=1e-15)
    assert (r[2] < 0).all() and (r[4] == 1.0).all() and (r[5] == 0.0).all()


def test_derivatives_are_pathwise():
    interp = run(f"let k = rng(3)\n"
                 f"let g = grad(fn(m, s) => mean(normal(m, s, ({N},), key=k)), argnums=(0, 1))(1.0, 2.0)\n"
                 f"let z = mean(normal(0.0, 1.0, ({N},), key=k))\n"
                 f"let gs = grad(fn(s) => sum(gamma(2.0, s, (3,), key=k)))(1.5)\n"
                 f"let draws = gamma(2.0, 1.0, (3,), key=k)")
    assert interp.get("g")[0] == pytest.approx(1.0, abs=1e-12)
    assert interp.get("g")[1] == pytest.approx(interp.get("z"), abs=1e-12)
    assert interp.get("gs") == pytest.approx(float(np.sum(interp.get("draws"))), rel=1e-12)
    check("truncated_normal(x[0], x[1], (5,), key=k) + uniform(x[0], x[1], (5,), key=k)", prelude="let k = rng(7)",
          x=np.array([-0.5, 1.2]))
    check("exponential(x, (4,), key=k) * normal(x, x * x, (4,), key=k)", prelude="let k = rng(8)", x=0.7)


@pytest.mark.parametrize("how", ["grad(f)", "jit(grad(f))", "fn(p) => jvp(f, (p,), (1.0,))[1]"])
def test_a_key_a_loop_carries_under_a_derivative_draws_as_a_constant(how):
    # the outer while loop's state holds the key, and under grad (or jvp) the loop machinery
    # boxes it with the rest: a draw from it was recorded as a step with no reverse rule (an
    # error on some calls, not others); a key has no derivative, the draw is a constant
    src = ("fn f(p) {\n  let a = tanh(p)\n  let key = split(rng(3))[1]\n  let c = 0\n  while c < 3 {\n"
           "    let k = 0\n    while a < 0.5 and k < 3 { a = a + 0.25\n      k += 1 }\n"
           "    key = split(key)[0]\n    a = tanh(a + 0.1 * normal(key=key) + 0.1 * uniform(key=fold_in(key, c)))\n"
           "    c += 1\n  }\n  return a\n}\n")
    interp = run(src + f"let g = {how}")
    g, f = interp.lookup("g"), interp.lookup("f")
    for p in (-0.9, 0.3, 0.05, 0.8):
        h = 1e-6
        assert g(p) == pytest.approx((f(p + h) - f(p - h)) / (2 * h), rel=1e-6, abs=1e-8)


def test_jit_and_vmap_give_the_same_numbers(capfd):
    interp = run("fn f(k, m) { return normal(m, 1.0, (3,), key=k) + gamma(2.0, shape=(3,), key=fold_in(k, 1)) }\n"
                 "let keys = split(rng(9), 4)\n"
                 "let mapped = vmap(f, in_axes=(0, none), explain=true)(keys, 0.5)\n"
                 "let looped = stack((f(keys[0], 0.5), f(keys[1], 0.5), f(keys[2], 0.5), f(keys[3], 0.5)))\n"
                 "let jitted = jit(f)(keys[2], 0.5)\n"
                 "let per_mean = vmap(fn(m) => f(keys[0], m))([0.0, 1.0])\n"
                 "let rates = vmap(fn(lam, a) => (poisson(lam, (2,), key=keys[0]), gamma(a, shape=(2,), key=keys[1])))"
                 "([1.0, 30.0], [0.5, 4.0])\n"
                 "let rates_looped = ((poisson(1.0, (2,), key=keys[0]), gamma(0.5, shape=(2,), key=keys[1])),\n"
                 "                    (poisson(30.0, (2,), key=keys[0]), gamma(4.0, shape=(2,), key=keys[1])))\n"
                 "fn g() { return uniform(shape=(2,)) + normal() }\n"
                 "seed(3)\nlet eager = (g(), g())\nseed(3)\nlet fast = jit(g)\nlet staged = (fast(), fast())")
    assert "once per example" not in capfd.readouterr().err
    np.testing.assert_array_equal(interp.get("mapped"), interp.get("looped"))
    np.testing.assert_array_equal(interp.get("jitted"), interp.get("looped")[2])
    per_mean = interp.get("per_mean")
    np.testing.assert_allclose(per_mean[1] - per_mean[0], 1.0, rtol=1e-12)     # one key: the same noise
    rates, looped = interp.get("rates"), interp.get("rates_looped")
    for i in range(2):
        np.testing.assert_array_equal(rates[0][i], looped[i][0])
        np.testing.assert_array_equal(rates[1][i], looped[i][1])
    for a, b in zip(interp.get("eager"), interp.get("staged")):
        np.testing.assert_array_equal(a, b)


def test_vmap_inside_jit_over_parameters_with_the_functions_key_draws_per_example(backend):
    # the key is the jitted function's argument, a value of the staged program, and not batched:
    # the batching rule read it as a number (a Python TypeError, not dg's error)
    interp = dsl.Interpreter(backend=backend)
    interp.run("let k = rng(4)\nfn per(k, ps) { return (vmap(fn(j) => fold_in(k, j))(ps), "
               "vmap(fn(p) => normal(p, 1.0, (2,), key=k))(ps), "
               "vmap(fn(p) => gamma(p, shape=(2,), key=k))(ps + 1.0)) }\n"
               "let jitted = jit(per)(k, [0.0, 5.0, 9.0])\nlet eager = per(k, [0.0, 5.0, 9.0])\n"
               "let looped = (stack((fold_in(k, 0.0), fold_in(k, 5.0), fold_in(k, 9.0))), "
               "stack((normal(0.0, 1.0, (2,), key=k), normal(5.0, 1.0, (2,), key=k), normal(9.0, 1.0, (2,), key=k))), "
               "stack((gamma(1.0, shape=(2,), key=k), gamma(6.0, shape=(2,), key=k), gamma(10.0, shape=(2,), key=k))))")
    for got in (interp.get("jitted"), interp.get("eager")):
        for a, b in zip(got, interp.get("looped")):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=0)


def test_a_keyed_draw_in_a_jitted_loop_is_staged_once():
    interp = run("fn walk(x, k) {\n  for i in range(300) {\n    let pair = split(k)\n    k = pair[0]\n"
                 "    x = x * 0.9 + normal(0.0, 0.1, (3,), key=pair[1]) + uniform(shape=(3,), key=fold_in(k, i))\n"
                 "  }\n  return sum(x * x)\n}\nlet fast = jit(value_and_grad(walk))")
    fast, walk = interp.lookup("fast"), interp.lookup("walk")
    x, k = np.ones(3), np.array([0.0, 7.0])
    want = interp.lookup("value_and_grad")(walk)(x, k)
    for _ in range(2):
        got = fast(x, k)
        assert got[0] == want[0] and np.array_equal(got[1], want[1])
    assert "Loop" in ops_of(fast)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_a_jitted_sampler_stages_once_whichever_way_its_first_accept_goes(backend):
    # a loop no derivative is taken of is one Loop step (a Scan on XLA) from its first iteration
    # (written out, its first accept was guarded: a new key whose first proposal went the other
    # way staged the sampler again)
    if backend == "xla":
        pytest.importorskip("jax")
    interp = run("fn logp(q) { return -0.5 * sum(q * q) - 0.1 * sum(q ** 4) }\n"
                 "fn mh(q, key, n) {\n  let total = zeros_like(q)\n  let acc = 0\n  for i in range(n) {\n"
                 "    let k1, k2 = split(fold_in(key, i))\n    let prop = q + 0.5 * normal(shape=shape(q), key=k1)\n"
                 "    if ln(uniform(key=k2)) < logp(prop) - logp(q) { q = prop\n acc += 1 }\n"
                 "    total = total + q\n  }\n  return (total / n, acc)\n}\n"
                 f"let fast = jit(mh, backend=\"{backend}\")")
    fast, mh = interp.lookup("fast"), interp.lookup("mh")
    firsts = set()
    for seed in range(8):
        key = np.array([0.0, float(seed)])
        got, want = fast(np.zeros(2), key, 50), mh(np.zeros(2), key, 50)
        if backend == "numpy":
            assert np.array_equal(got[0], want[0])
        else:       # XLA's sums: to 1e-12 (docs/xla.md)
            np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        assert got[1] == want[1] and type(got[1]) is int
        firsts.add(mh(np.zeros(2), key, 1)[1])
    assert firsts == {0, 1}     # the first accept went both ways
    assert sum(len(entries) for entries in fast.call.entries.values()) == 1
    assert ("Loop" if backend == "numpy" else "Scan") in ops_of(fast)


KEYLESS = """
fn walk(x) {
    for i in range(300) {
        x = x * 0.9 + normal(0.0, 0.1, (3,)) + uniform(shape=(3,)) * 0.01 + rand(3) * 0.001 - randn(3) * 0.001
    }
    return sum(x * x)
}
fn walk_while(x) {
    let i = 0
    while i < 200 {
        x = x * 0.9 + normal(0.0, 0.1, (3,))
        i += 1
    }
    return sum(x * x)
}
"""


def test_a_keyless_draw_in_a_jitted_for_loop_is_staged_once_and_draws_the_eager_numbers():
    interp = run(KEYLESS + "let fast = jit(walk)")
    fast, slow, reseed = interp.lookup("fast"), interp.lookup("walk"), interp.lookup("seed")
    x = np.ones(3)
    reseed(4)
    want = [slow(x), slow(x)]           # two calls: the second goes on where the first stopped
    reseed(4)
    got = [fast(x), fast(x)]            # the first call stages, the second runs the compiled program
    assert got == want
    assert "Loop" in ops_of(fast)
    reseed(4)
    assert fast(x) == want[0]


BRANCHING = """
fn stop_early(x) {
    let s = 0.0
    for i in range(200) {
        let z = normal()
        if z > 2.0 { break }
        s = s + z * x + uniform()
    }
    return s
}
fn by_threshold(x) {
    let s = 0.0
    for i in range(200) {
        if uniform() < x { s = s + normal() } else { s = s - 0.1 }
    }
    return s
}
fn until_large(x) {
    let s = 0.0
    let n = 0
    while n < 300 {
        let z = normal()
        s = s + z * x
        if z > 2.5 { break }
        n += 1
    }
    return s
}
"""


@pytest.mark.parametrize("name, args, rolled", [
    ("stop_early", (1.0, 1.0), None),       # a break taken on a later iteration: staged again
    ("by_threshold", (2.0, 0.5), None),     # a branch that goes another way on the second call
    ("walk_while", (np.ones(3), np.ones(3)), True),     # a while loop
    ("until_large", (1.0, 1.0), True),      # its last iteration, stopped by the break after a draw, runs
])                                          # again as written from a generator put back
def test_keyless_draws_in_a_jitted_loop_that_goes_another_way_draw_the_eager_numbers(name, args, rolled):
    interp = run(KEYLESS + BRANCHING + f"let fast = jit({name})")
    fast, slow, reseed, draw = (interp.lookup(n) for n in ("fast", name, "seed", "uniform"))
    reseed(5)
    want = [slow(a) for a in args] + [draw()]
    reseed(5)
    got = [fast(a) for a in args] + [draw()]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    if rolled is not None:
        assert ("Loop" in ops_of(fast)) == rolled


def test_a_jitted_while_loop_draws_each_keyless_number_once(monkeypatch):
    # the compiled loop stops at the iteration whose condition fails; where that one drew nothing,
    # the generator is where the statement after the loop starts (no draws made again to find it)
    from dsl.core import stage
    interp = run(KEYLESS + "let fast = jit(walk_while)")
    fast, slow, reseed, draw = (interp.lookup(n) for n in ("fast", "walk_while", "seed", "uniform"))
    x = np.ones(3)
    fast(x)
    fast(x)
    calls = []
    real = stage.Draw.__call__
    monkeypatch.setattr(stage.Draw, "__call__", lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    reseed(6)
    got = [fast(x)]
    assert len(calls) == 200
    monkeypatch.undo()
    got.append(draw())
    reseed(6)
    assert [slow(x), draw()] == got


def central_gradient(f, x, reseed, seed, h=1e-6):
    """The gradient of f at x by central differences, each evaluation from the same seed."""
    want = []
    for i in range(len(x)):
        e = np.zeros(len(x))
        e[i] = h
        reseed(seed)
        up = f(x + e)
        reseed(seed)
        down = f(x - e)
        want.append((up - down) / (2 * h))
    return np.array(want)


def test_a_keyless_draw_in_a_loop_under_grad_gives_the_gradient_of_what_was_drawn():
    interp = run(KEYLESS + "let g = jit(grad(walk))")
    g, walk, reseed = interp.lookup("g"), interp.lookup("walk"), interp.lookup("seed")
    x = np.array([0.3, -0.2, 0.1])
    reseed(9)
    got = g(x)
    np.testing.assert_allclose(got, central_gradient(walk, x, reseed, 9), rtol=1e-6, atol=1e-9)


UNDER_GRAD = """
fn noisy(x) {
    for i in range(100) {
        x = x * 0.95 + normal(0.0, 0.1, (3,)) * x + uniform(shape=(3,)) * 0.01 - randn(3) * 0.001
    }
    return sum(x * x)
}
fn noisy_while(x) {
    let i = 0
    while i < 80 {
        x = x * 0.95 + normal(0.0, 0.1, (3,)) * x
        i += 1
    }
    return sum(x * x)
}
fn noisy_until(x) {
    let s = 0.0
    let n = 0
    while n < 300 {
        let z = normal()
        s = s + z * sum(x * x)
        if z > 2.5 { break }
        n += 1
    }
    return s
}
"""


@pytest.mark.parametrize("name", ["noisy", "noisy_while", "noisy_until"])
@pytest.mark.parametrize("how", ["jit(grad({}))", "jit(value_and_grad({}))", "grad(jit({}))"])
def test_a_keyless_draw_in_a_loop_under_one_reverse_level_stages_once_and_gives_the_eager_gradient(name, how):
    """The loop rolls (one Loop step), its pass back runs each iteration again from the generator's
    state as that iteration began, so the gradient is the one of what was drawn, equal to the
    loop as written, call after call, and the generator goes on where the loop as written leaves it."""
    interp = run(UNDER_GRAD + f"let fast = {how.format(name)}\nlet slow = {how.replace('jit(', '(').format(name)}")
    fast, reseed = _draws_as_written(interp, rtol=1e-12, atol=0)
    x = np.array([0.3, -0.2, 0.1])
    if how.startswith("jit"):
        assert "Loop" in ops_of(fast)
    reseed(6)
    value = fast(x)
    gradient = value[1] if how.startswith("jit(value") else value
    f = interp.lookup(name)
    np.testing.assert_allclose(gradient, central_gradient(f, x, reseed, 6), rtol=1e-5, atol=1e-9)


def test_a_keyless_draw_in_a_loop_under_a_batched_reverse_pass_gives_each_example_its_draws():
    """jacrev of a tensor-valued function and vmap of grad run the loop's pass back once per
    example (a batched body would hold each draw as one constant), each from the noted states."""
    interp = run(UNDER_GRAD + "fn vec(x) { return noisy_while(x) * x }\nfn one(x) { return noisy(x) }\n"
                              "let fast_jac = jit(jacrev(vec))\nlet slow_jac = jacrev(vec)\n"
                              "let fast_vg = jit(vmap(grad(one)))\nlet slow_vg = vmap(grad(one))\n"
                              "let fast_gv = vmap(jit(grad(one)))")
    reseed = interp.lookup("seed")
    x, xs = np.array([0.3, -0.2, 0.1]), np.array([[0.3, -0.2, 0.1], [0.5, 0.4, -0.3]])
    for fast, slow, arg in (("fast_jac", "slow_jac", x), ("fast_vg", "slow_vg", xs), ("fast_gv", "slow_vg", xs)):
        for seed in (1, 2):
            reseed(seed)
            want = interp.lookup(slow)(arg)
            reseed(seed)
            np.testing.assert_allclose(interp.lookup(fast)(arg), want, rtol=1e-12)


@pytest.mark.parametrize("how", ["jit(hessian({}))", "jit(grad(fn(x) => sum(grad({})(x))))",
                                 "jit(fn(x) => jvp(grad({}), (x,), (x,))[1])", "jit(fn(x) => jvp({}, (x,), (x,)))"])
@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_a_keyless_draw_in_a_for_loop_under_forward_mode_or_two_reverse_levels_rolls_and_is_exact(how, backend):
    """The loop is one Scan step: each iteration's numbers are drawn before it, in the loop's
    order, and reach the body as data, so every pass that runs an iteration again reads what it
    drew. The same numbers as the loop as written, call after call, and the generator goes on
    where the loop as written leaves it."""
    if backend == "xla":
        pytest.importorskip("jax")
    interp = dsl.Interpreter(seed=0, backend=backend)
    interp.run(UNDER_GRAD + f"let fast = {how.format('noisy')}\nlet slow = {how.replace('jit(', '(', 1).format('noisy')}")
    fast, _ = _draws_as_written(interp, rtol=1e-10, atol=1e-14)
    assert "Scan" in ops_of(fast)


@pytest.mark.parametrize("how", ["jit(hessian({}))", "jit(grad(fn(x) => sum(grad({})(x))))",
                                 "jit(grad(fn(x) => sum(grad(fn(y) => sum(grad({})(y)))(x))))",
                                 "jit(fn(x) => jvp(grad({}), (x,), (x,))[1])"])
@pytest.mark.parametrize("name", ["noisy_while", "noisy_until"])
@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_a_keyless_draw_in_a_while_loop_under_forward_mode_or_two_reverse_levels_rolls_and_is_exact(
        how, name, backend):
    """The loop is one Scan step over as many iterations as it makes from here (found by running
    it once, the generator put back), its numbers drawn before it as a for loop's are; a call that
    runs another count (noisy_until's ends on a draw: each seed its own) fails a guard and is
    staged for that count. The numbers, results and generator are the loop's as written."""
    if backend == "xla":
        pytest.importorskip("jax")
    interp = dsl.Interpreter(seed=0, backend=backend)
    interp.run(UNDER_GRAD + f"let fast = {how.format(name)}\nlet slow = {how.replace('jit(', '(', 1).format(name)}")
    fast, _ = _draws_as_written(interp, rtol=1e-10, atol=1e-14)
    ops = ops_of(fast)
    assert "Scan" in ops and "Loop" not in ops


def test_a_keyless_draw_in_a_while_loop_under_two_reverse_levels_is_staged_once_whatever_its_count(capfd):
    """The recording holds each body a few times, not once per iteration; explain says it serves
    that number of iterations."""
    sizes = []
    for count in (20, 400):
        interp = run(UNDER_GRAD.replace("while i < 80", f"while i < {count}") +
                     "let fast = jit(grad(fn(x) => sum(grad(noisy_while)(x))), explain=true)")
        interp.lookup("fast")(np.array([0.3, -0.2, 0.1]))
        sizes.append(len([s for entries in interp.lookup("fast").call.entries.values()
                          for e in entries for s in e.program.steps]))
    assert sizes[0] == sizes[1] < 200, sizes
    assert "is one step over the 399 iterations after its first: it draws without a key" in capfd.readouterr().err


@pytest.mark.parametrize("name", ["noisy_while", "noisy_until", "noisy_moved"])
def test_a_keyless_draw_in_a_while_loop_under_jvp_stays_rolled_and_draws_as_written(name):
    # a loop of the body's jvp, which draws on each iteration, in order; an iteration that breaks
    # on a draw runs again as written from the generator as it began (the body's jvp is inexact
    # code, whose exact twin then runs that iteration: it draws those numbers again, not the next)
    moved = ("fn noisy_moved(x) {\n    let i = 0\n    while i < 60 {\n"
             "        x = x * 0.97 + normal(x * 0.1, 0.05, (3,)) * x\n        i += 1\n    }\n    return sum(x)\n}\n")
    interp = run(UNDER_GRAD + moved + f"let fast = jit(fn(x) => jvp({name}, (x,), (x * 0.5,)))\n"
                                      f"let slow = fn(x) => jvp({name}, (x,), (x * 0.5,))")
    fast, _ = _draws_as_written(interp, rtol=1e-12, atol=1e-14)
    assert "Loop" in ops_of(fast)


@pytest.mark.parametrize("name", ["noisy", "noisy_while", "noisy_until"])
@pytest.mark.parametrize("how", ["fn(x) => jvp({jf}, (x,), (x,))", "jacfwd({jf})", "hessian({jf})",
                                 "grad(fn(x) => sum({jg}(x) * x))", "jit(fn(x) => jvp({jf}, (x,), (x,)))"])
def test_a_jitted_loop_that_draws_keylessly_gives_the_eager_numbers_under_a_later_derivative(name, how):
    """A jitted function staged with no derivative in view rolls its loop with the draws in the
    body; called later under forward mode (jvp, jacfwd, hessian), its recording does not apply
    (the loop of P' would hold one iteration's numbers as constants, and a while loop that ends on
    a draw never ended): it is staged again there, the loop written out. Under a second reverse
    level over jit(grad), the pass back runs each iteration again from the generator's state as
    it began. Each gives the numbers and the generator state of the functions as written."""
    interp = run(UNDER_GRAD + f"let jf = jit({name})\nlet jg = jit(grad({name}))\n"
                              f"let staged = (jf([0.3, -0.2, 0.1]), jg([0.3, -0.2, 0.1]))\n"
                              f"let fast = {how.format(jf='jf', jg='jg')}\n"
                              f"let slow = {how.replace('jit(', '(', 1).format(jf=name, jg=f'grad({name})')}")
    _draws_as_written(interp, rtol=1e-10, atol=1e-12)


def test_a_jitted_while_loop_that_ends_on_a_draw_ends_under_a_later_jvp():
    """The loop ends when a draw says so: a replay in forward mode that held one draw as a constant
    never ended (the step budget stops such a run here)."""
    interp = dsl.Interpreter(seed=0, max_steps=10 ** 6)
    interp.run("fn until(x) {\n    let s = x\n    while true {\n        let r = floor(rand(()) * 10.0)\n"
               "        if r > 8.0 { break }\n        s = s * 0.9 + r * x\n    }\n    return s\n}\n"
               "let ju = jit(until)\nlet staged = ju([0.3, -0.2, 0.1])\n"
               "let fast = fn(x) => jvp(ju, (x,), (x,))\nlet slow = fn(x) => jvp(until, (x,), (x,))", "t.dg")
    _draws_as_written(interp, rtol=1e-12, atol=0)


def _draws_as_written(interp, rtol, atol):
    """Check that `fast` gives what `slow` gives, and leaves the generator where `slow` leaves it
    (the next `uniform()`), on three calls of x = [0.3, -0.2, 0.1] (the first stages, the later
    ones run the compiled program): (fast, seed)."""
    fast, slow, reseed, draw = (interp.lookup(n) for n in ("fast", "slow", "seed", "uniform"))
    x = np.array([0.3, -0.2, 0.1])
    for seed in (3, 4, 5):
        reseed(seed)
        want = [slow(x), draw()]
        reseed(seed)
        got = [fast(x), draw()]
        np.testing.assert_allclose(np.hstack(flat(got)), np.hstack(flat(want)), rtol=rtol, atol=atol)
    return fast, reseed


def flat(v):
    """The numbers of a value (a tuple of numbers and tensors, nested) as a list of 1-d arrays."""
    if isinstance(v, (tuple, list)):
        return [a for x in v for a in flat(x)]
    return [np.ravel(np.asarray(v, dtype=float))]


@pytest.mark.parametrize("draw, dtype", [
    ("bernoulli(0.3, (50,), key=k, dtype={})", "bool"), ("bernoulli(0.3, (50,), key=k, dtype={})", "float32"),
    ("categorical([0.0, 1.0, 2.0], shape=(50,), key=k, dtype={})", "int64"),
    ("poisson(3.0, (50,), key=k, dtype={})", "int32"), ("permutation(50, key=k, dtype={})", "int64"),
    ("choice(7, (50,), key=k, dtype={})", "int64"), ("choice(7, (5,), replace=false, key=k, dtype={})", "float32"),
])
def test_a_discrete_draw_comes_in_the_element_type_asked_for(draw, dtype):
    """The same numbers as without dtype, in that type: in the interpreter, under jit and vmap."""
    interp = run(f"fn plain(k) {{ return {draw.format('none')} }}\n"
                 f"fn typed(k) {{ return {draw.format(repr(dtype).replace(chr(39), chr(34)))} }}\n"
                 "let keys = split(rng(3), 2)\n"
                 "let eager = (plain(keys[0]), typed(keys[0]))\n"
                 "let jitted = jit(typed)(keys[0])\nlet batched = vmap(typed)(keys)\nlet rows = vmap(plain)(keys)")
    plain, typed = interp.get("eager")
    assert typed.dtype == np.dtype(dtype) and plain.dtype == np.float64
    np.testing.assert_array_equal(typed, plain.astype(dtype))
    np.testing.assert_array_equal(interp.get("jitted"), typed)
    assert interp.get("batched").dtype == np.dtype(dtype)
    np.testing.assert_array_equal(interp.get("batched"), interp.get("rows").astype(dtype))


def test_a_discrete_draw_without_dtype_has_its_parameters_float_type():
    interp = run('let p = astype([0.2, 0.7], "float32")\n'
                 'let types = (dtype(bernoulli(p, key=rng(0))), dtype(categorical(astype([[0.0, 1.0]], "float32"), '
                 'key=rng(0))), dtype(poisson(p, key=rng(0))), dtype(bernoulli(0.5, (2,), key=rng(0))))')
    assert interp.get("types") == ("float32", "float32", "float32", "float64")


@pytest.mark.parametrize("src, kind, words", [
    ("permutation([1.0, 2.0], dtype=\"int64\")", "type", "a tensor's rows keep its type"),
    ("bernoulli(0.5, dtype=\"int8\")", "value", "unknown dtype"),
    ("uniform(dtype=\"int64\")", "value", "draws floats"),
    ("uniform(key=[1.0, 2.0, 3.0])", "type", "key must be a random key"),
    ("uniform(key=[1.5, 2.0])", "value", "two whole numbers"),
    ("normal(key=3)", "type", "key must be a random key"),
    ("gamma(-1.0, key=rng(1))", "value", "a > 0"),
    ("poisson(-1.0, key=rng(1))", "value", "rate"),
    ("poisson([1.0, 1.0, 1.0], (2,))", "shape", "does not broadcast to the shape asked for, (2,)"),
    ("gamma([1.0, 2.0], 1.0, 0)", "shape", "does not broadcast"),
    ("beta(1.0, [1.0, 2.0], (3,))", "shape", "does not broadcast"),
    ("choice(3, (4,), replace=false)", "value", "4 draws without replacement from 3"),
    ("choice(3, p=[0.5, 0.5])", "shape", "one probability per entry"),
    ("rng(-1)", "value", "non-negative"),
    ("rng(2 ** 64)", "value", "below 2^64"),
    ("fold_in(rng(1), 0.5)", "value", "whole number"),
    ("dirichlet(1.0)", "shape", "vector of concentrations"),
    ("normal([0.0, 1.0], [1.0, 2.0, 3.0])", "shape", "do not broadcast"),
])
def test_bad_input_is_a_dg_error(src, kind, words):
    with pytest.raises(DgError) as info:
        run(f"let r = {src}")
    assert info.value.kind == kind and words in info.value.message


def test_beta_without_a_key_batches_and_stages():
    # its two keys come from one split, a staged pair under vmap or jit
    interp = run("seed(2)\nlet a = vmap(fn(x) => beta(x, 2.0))([1.5, 0.75])\n"
                 "let b = jit(fn(x) => beta(x, 2.0))(1.5)\nlet c = jit(fn(x) => beta(x, 2.0, key=rng(3)))(1.5)")
    a, b = interp.get("a"), interp.get("b")
    assert a.shape == (2,) and np.all((a > 0) & (a < 1)) and 0 < b < 1
    assert interp.get("c") == ev("beta(1.5, 2.0, key=rng(3))")


def test_jacfwd_of_a_jitted_loop_that_draws_is_staged_again_without_the_draws_of_the_attempt_it_gave_up():
    # a later call goes another way in the loop (its inner while): jit stages again, first rolled,
    # then written out. The rolled attempt recorded its draws on vmap's staging of the jvp, which
    # then made them on every run (3 extra numbers per call, a wrong jacobian; fuzz seed 6350)
    src = ("fn f(p, w, xs) {\n    let a = tanh(p)\n    let v = tanh(w * p)\n    for i in range(shape(xs)[0]) {\n"
           "        let k = 0\n        while a < sum(xs[i] * a) + 0.3 and k < 3 { a = a + 0.25\n            k += 1 }\n"
           "        a = tanh(a + 0.1 * randn(()) + sum(v * w))\n    }\n    return a\n}\n")
    fast, slow = run(src + "let g = jacfwd(jit(f), argnums=1)"), run(src + "let g = jacfwd(f, argnums=1)")
    rng = np.random.default_rng(6350)
    for _ in range(6):
        args = (float(rng.uniform(-1, 1)), rng.uniform(-1, 1, 3), rng.uniform(-1, 1, (3, 3)))
        np.testing.assert_allclose(fast.lookup("g")(*args), slow.lookup("g")(*args), rtol=1e-10)
        assert fast.rng.bit_generator.state == slow.rng.bit_generator.state


@pytest.mark.parametrize("limits, body, how, words", [
    ({"timeout": 0.5}, "while s > -1.0 { s = s * 0.5 + 0.1 * abs(normal()) }", "grad(grad(f))", "longer than"),
    ({"max_steps": 5000}, "let i = 0\n while i < 20000 { s = s * 0.999 + 0.001 * normal() * x\n i += 1 }",
     "hessian(f)", "5,000 steps"),
])
def test_a_while_loop_that_draws_under_two_derivatives_is_stopped_by_the_limits_when_counted(limits, body, how, words):
    """The run ahead that counts its iterations is stopped at the loop's line by a timeout (a loop
    that never ends) or the step budget, as the loop as written would be."""
    interp = dsl.Interpreter(seed=0, **limits)
    interp.run(f"fn f(x) {{ let s = x\n {body}\n return s }}\nlet fast = jit({how})")
    with pytest.raises(dsl.DgError) as err:
        interp.lookup("fast")(0.3)
    assert err.value.kind == "limit" and words in str(err.value)
