"""A finite-difference gradient checker for dg expressions.

`check(expr, x=..., y=...)` builds `fn f(x, y, ..., c) { return sum((expr) * c) }`
with a random cotangent `c` of the expression's shape (never just sum(out):
through a normalisation that gradient is ~0 and proves nothing), asks dg for
the gradient with respect to every float argument, and compares it with
central differences in float64.
"""

import numpy as np

import dsl

H = 1e-6


def _interp():
    """A fresh interpreter with the numerics check on."""
    return dsl.Interpreter(seed=0)


def numeric_grad(f, args, i):
    """Central differences of scalar Python callable f with respect to args[i]."""
    x = args[i]
    if isinstance(x, float):
        plus = list(args)
        minus = list(args)
        plus[i], minus[i] = x + H, x - H
        return (f(*plus) - f(*minus)) / (2 * H)
    g = np.zeros_like(x)
    flat = g.reshape(-1)
    for k in range(x.size):
        xp, xm = x.copy(), x.copy()
        xp.reshape(-1)[k] += H
        xm.reshape(-1)[k] -= H
        plus, minus = list(args), list(args)
        plus[i], minus[i] = xp, xm
        flat[k] = (f(*plus) - f(*minus)) / (2 * H)
    return g


def assert_close(got, want, what, rtol=1e-6, atol=1e-7):
    """Compare an analytic and a numeric gradient with a readable failure."""
    got = np.asarray(got, dtype=float)
    want = np.asarray(want, dtype=float)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert np.allclose(got, want, rtol=rtol, atol=atol), (
        f"{what}: analytic gradient differs from finite differences\n"
        f"analytic:\n{got}\nnumeric:\n{want}\nmax abs diff {np.max(np.abs(got - want))}")


def check(expr, rtol=1e-6, atol=1e-7, wrt=None, seed=0, prelude="", **args):
    """Check dg's gradient of sum(expr * c) against finite differences for each float argument
    (`prelude`: dg definitions the expression uses)."""
    names = list(args)
    interp = _interp()
    interp.run(prelude)
    params = ", ".join(names)
    interp.run(f"fn out({params}) {{ return {expr} }}")
    value = interp.lookup("out")(*args.values())
    rng = np.random.default_rng(seed)
    shape = np.shape(value)
    c = rng.standard_normal(shape) if shape else float(rng.standard_normal())
    interp.run(f"fn f({params}, c) {{ return sum(({expr}) * c) }}")
    f = interp.lookup("f")
    values = list(args.values())
    wrt = wrt or [n for n, v in args.items() if isinstance(v, (float, np.ndarray))]
    nums = tuple(names.index(n) for n in wrt)
    grads = interp.lookup("grad")(f, nums)(*values, c)
    for n, i, g in zip(wrt, nums, grads):
        want = numeric_grad(lambda *a: f(*a, c), values, i)
        assert_close(g, want, f"d/d{n} of {expr}", rtol, atol)
    return grads


def check_second(expr, rtol=1e-5, atol=1e-6, seed=1, **args):
    """Check reverse-over-reverse: the gradient of <grad f(x), v> against finite differences of grad f."""
    names = list(args)
    params = ", ".join(names)
    interp = _interp()
    interp.run(f"fn out({params}) {{ return {expr} }}")
    value = interp.lookup("out")(*args.values())
    rng = np.random.default_rng(seed)
    shape = np.shape(value)
    c = rng.standard_normal(shape) if shape else float(rng.standard_normal())
    x = args[names[0]]
    v = rng.standard_normal(np.shape(x)) if np.shape(x) else float(rng.standard_normal())
    interp.run(f"""
fn f({params}, c) {{ return sum(({expr}) * c) }}
fn gv({params}, c, v) {{ return sum(grad(f)({params}, c) * v) }}
""")
    values = list(args.values())
    gv = interp.lookup("gv")
    analytic = interp.lookup("grad")(gv)(*values, c, v)
    f = interp.lookup("f")
    grad_f = interp.lookup("grad")(f)

    def directional(*a):
        return float(np.sum(np.asarray(grad_f(*a, c)) * v))

    want = numeric_grad(directional, values, 0)
    assert_close(analytic, want, f"second derivative of {expr}", rtol, atol)
    return analytic


def jax_or_skip():
    """jax with float64, or skip the test (JAX is the xla extra)."""
    import pytest
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


def check_against_jax(expr, ref, args, rtol=1e-10, atol=1e-12):
    """dg's value, gradient (of sum(expr * cot), a random cotangent) and tangent (along random
    tangents) of `expr` against JAX's of ref(jax.numpy, *args), for every argument; skipped
    where JAX is not installed."""
    jax = jax_or_skip()
    jnp = jax.numpy
    names, values = list(args), [np.asarray(v) for v in args.values()]
    cot = np.random.default_rng(1).normal(size=np.shape(ref(jnp, *values)))
    tangents = [np.random.default_rng(2 + i).normal(size=v.shape) for i, v in enumerate(values)]
    want_value = np.asarray(ref(jnp, *values))
    want_grads = jax.grad(lambda *xs: jnp.sum(ref(jnp, *xs) * cot), argnums=tuple(range(len(values))))(*values)
    want_tangent = jax.jvp(lambda *xs: ref(jnp, *xs), tuple(values), tuple(tangents))[1]
    interp = _interp()
    for name, v in zip(names, values):
        interp.set(name, v)
    interp.set("cot", cot)
    for i, t in enumerate(tangents):
        interp.set(f"t{i}", t)
    params = ", ".join(names)
    interp.run(f"fn f({params}) {{ return {expr} }}\n"
               f"let value = f({params})\n"
               f"let grads = grad(fn({params}) => sum(f({params}) * cot), argnums={tuple(range(len(names)))})({params})\n"
               f"let tangent = jvp(f, ({params},), ({', '.join(f't{i}' for i in range(len(names)))},))[1]")
    np.testing.assert_allclose(interp.get("value"), want_value, rtol=1e-12, atol=1e-12)
    for got, want in zip(interp.get("grads"), want_grads):
        np.testing.assert_allclose(got, np.asarray(want), rtol=rtol, atol=atol)
    np.testing.assert_allclose(interp.get("tangent"), np.asarray(want_tangent), rtol=rtol, atol=atol)
