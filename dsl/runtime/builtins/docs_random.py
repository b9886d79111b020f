"""The documentation of random keys and distributions (dsl/runtime/builtins/random.py), in the form of
dsl/runtime/builtins/docs.py, which merges it."""

NAMES = ["rng", "split", "fold_in", "uniform", "normal", "exponential", "bernoulli", "categorical", "permutation",
         "choice", "gamma", "beta", "dirichlet", "poisson", "truncated_normal"]

_STREAM = """Without key, the draw takes a fresh key from the interpreter's stream (seed(n) restarts
it); with key=k it is a function of k: the same key, the same numbers, under jit and vmap too."""

_KEY = _STREAM + """
dtype="float32" (or "float16") draws in that type; without it the draw has the float type its
tensor parameters promote to (float64 for numbers)."""

# a discrete draw's values are whole numbers: any element type holds them, as JAX's int and bool draws
_COUNTS = _STREAM + """
dtype= names the result's element type ("int64", "bool", "float32", ... as astype's); without it
the result has the float type its tensor parameters promote to (float64 for numbers)."""

_POSITIONS = _STREAM + """
dtype= names the element type of positions drawn from an int n ("int64", "float32", ... as
astype's; float64 without it); a tensor's rows keep the tensor's type."""

DOCS = {
    "rng": """rng(seed): a random key: the tensor [seed // 2^32, seed % 2^32] of a whole number seed in
[0, 2^64) (the layout of JAX's raw keys; the numbers drawn are dg's own, Philox4x32-10). A key is
a value: pass it, keep it in a struct, split it; every distribution takes one as key=.
Differentiable: no.
>>> rng(42)
[0.0, 42.0]""",
    "split": """split(key, n=2): n new keys from one, as a tensor of shape (n, 2) (let a, b = split(key)):
independent streams, each different from what key itself draws. Split a key rather than reuse it.
Differentiable: no.
>>> shape(split(rng(0), 3))
(3, 2)""",
    "fold_in": """fold_in(key, data): a new key from a key and a whole number (a loop's step, an example's
index), so that a loop can draw with fold_in(key, i) without carrying a key along.
Differentiable: no.
>>> fold_in(rng(0), 1) == fold_in(rng(0), 2)
[false, false]""",
    "uniform": f"""uniform(lo=0, hi=1, shape=none, key=none, dtype=none): floats uniform in [lo, hi); shape none is
the broadcast shape of lo and hi. {_KEY}
Differentiable: yes, in lo and hi (pathwise: lo + (hi - lo) * u).
>>> shape(uniform(-1.0, 1.0, (2, 3), key=rng(0)))
(2, 3)""",
    "normal": f"""normal(mean=0, std=1, shape=none, key=none, dtype=none): normal floats (numpy's normal(loc, scale,
size)); shape none is the broadcast shape of mean and std. {_KEY} The draw is mean + std * z for
standard normal z, std unchecked: a negative std draws from the same distribution as its
absolute value, as the formula gives under jit and grad (numpy raises for it).
Differentiable: yes, in mean and std (pathwise: mean + std * z).
>>> normal(3.0, 0.0, key=rng(0))
3.0""",
    "exponential": f"""exponential(scale=1, shape=none, key=none, dtype=none): exponential floats of mean scale
(numpy's). {_KEY} The draw is scale * e for standard exponential e, scale unchecked: a negative
scale gives negative numbers (numpy raises for it).
Differentiable: yes, in scale.
>>> exponential(2.0, (3,), key=rng(0)) >= 0.0
[true, true, true]""",
    "bernoulli": f"""bernoulli(p=0.5, shape=none, key=none, dtype=none): 1.0 with probability p, else 0.0
(u < p for uniform u, as JAX's: p above 1 always gives 1.0, below 0 never; numpy raises for them).
{_COUNTS}
Differentiable: no (its derivative in p is 0 almost everywhere).
>>> bernoulli(1.0, (3,), key=rng(0))
[1.0, 1.0, 1.0]""",
    "categorical": f"""categorical(logits, axis=-1, shape=none, key=none, dtype=none): class indices (as floats) drawn with
probabilities softmax(logits) along axis (JAX's categorical, by the Gumbel-max trick); shape none
is the logits' shape without that axis. {_COUNTS}
Differentiable: no.
>>> categorical([0.0, -1e9, -1e9], shape=(2,), key=rng(0))
[0.0, 0.0]""",
    "permutation": f"""permutation(x, key=none, dtype=none): an int n gives 0, ..., n-1 (as floats, as argsort's) in a
random order; a tensor gives its rows (axis 0) in a random order. {_POSITIONS}
Differentiable: yes, in a tensor x (its rows are moved, not changed).
>>> sort(permutation(4, key=rng(0)))
[0.0, 1.0, 2.0, 3.0]""",
    "choice": f"""choice(a, shape=(), replace=true, p=none, key=none, dtype=none): entries drawn from a tensor's
rows (or from 0, ..., a-1 for an int a), uniformly or with probabilities p (one per entry), with
or without replacement (numpy's Generator.choice). {_POSITIONS}
Differentiable: yes, in a tensor a.
>>> choice(tensor([5.0, 6.0]), (3,), p=[0.0, 1.0], key=rng(0))
[6.0, 6.0, 6.0]""",
    "gamma": f"""gamma(a, scale=1, shape=none, key=none, dtype=none): gamma floats of shape parameter a > 0 and
scale (numpy's gamma; mean a * scale), by Marsaglia and Tsang's method. {_KEY}
Differentiable: yes, in scale, and in a by implicit reparameterisation, as JAX's: a draw x stands
for F^-1(u; a) at its quantile u = F(x; a), whose derivative in a is -(dF/da) / (dF/dx); first and
second derivatives (a third is a grad error).
>>> gamma(2.0, 0.0, key=rng(0))
0.0""",
    "beta": f"""beta(a, b, shape=none, key=none, dtype=none): beta floats in [0, 1] (mean a / (a + b)), as
x / (x + y) of two gamma draws. {_KEY}
Differentiable: yes, in a and b, through gamma's draws (to the second order).
>>> beta(2.0, 3.0, key=rng(0)) < 1.0
true""",
    "dirichlet": f"""dirichlet(alpha, shape=(), key=none, dtype=none): probability vectors of concentrations alpha
(a vector), of shape shape + shape(alpha), each summing to 1. {_KEY}
Differentiable: yes, in alpha, through gamma's draws (to the second order).
>>> abs(sum(dirichlet([1.0, 2.0, 3.0], key=rng(0))) - 1.0) < 1e-12
true""",
    "poisson": f"""poisson(lam=1, shape=none, key=none, dtype=none): Poisson counts (as floats) of mean lam
in [0, 1e10] (numpy's algorithms: products of uniforms below 10, Hormann's PTRS above). {_COUNTS}
Differentiable: no (its derivative in lam is 0 almost everywhere).
>>> poisson(0.0, (2,), key=rng(0))
[0.0, 0.0]""",
    "truncated_normal": f"""truncated_normal(lo, hi, shape=none, key=none, dtype=none): standard normal floats cut to
[lo, hi] (JAX's truncated_normal: the normal's inverse distribution function of a uniform between
those of lo and hi, computed through erfc on the interval's side of 0, so that an interval in a far
tail, [8, 9] or [-30, -29], is drawn to full precision where erf would round it away). {_KEY}
Differentiable: yes, in lo and hi (pathwise).
>>> truncated_normal(0.5, 0.5, key=rng(0))
0.5""",
}
