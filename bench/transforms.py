"""Issues 12 and 13's higher-order and vectorized rows (bench/programs/higher.dg): the Hessian of
sum(sin(x) * x ** 2) with x of size 20, grad(grad(f)) of a chain of 200 scalar operations, and
per-example gradients by vmap(grad) of the MLP benchmark's model, with jax.jit beside them where
JAX is installed."""

import numpy as np

from .engines import MISSING_JAX, dg_program, jax_or_none
from .loops import _first_call
from .mlp import make_data
from .report import make_row
from .timing import measure, median

FULL = {"n": 20, "links": 100, "sizes": (784, 256, 10), "batch": 256, "reps": 21, "vmap_reps": 7}
SMOKE = {"n": 4, "links": 5, "sizes": (12, 8, 3), "batch": 4, "reps": 2, "vmap_reps": 2}
X0 = 0.7        # where grad(grad(chain)) is taken


def _check(name, got, want, rtol=1e-9):
    """Fail loudly when an engine's result differs from the reference."""
    for a, b in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        if not np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=rtol, atol=1e-10):
            raise AssertionError(f"{name}: result differs from the reference")


def hessian_exact(x):
    """The Hessian of sum(sin(x) * x**2), by hand: diagonal (2 - x^2) sin x + 4 x cos x."""
    return np.diag((2.0 - x * x) * np.sin(x) + 4.0 * x * np.cos(x))


def chain_second(x, links):
    """d2/dx2 of acc <- sin(acc) * x (links times, from acc = x), by forward-mode arithmetic by hand."""
    a, da, dda = x, 1.0, 0.0
    for _ in range(links):
        s, c = np.sin(a), np.cos(a)
        # acc' = sin(a) * x: first and second derivatives by the product and chain rules
        a, da, dda = s * x, c * da * x + s, (-s * da * da + c * dda) * x + 2.0 * c * da
    return dda


def _jax_refs(jax, n, links):
    """jax.jit of the Hessian and of grad(grad(chain)), or None."""
    jnp, lax = jax.numpy, jax.lax

    def f(x):
        return jnp.sum(jnp.sin(x) * x ** 2)

    def chain(x):
        return lax.fori_loop(0, links, lambda _, acc: jnp.sin(acc) * x, x)

    hess, second = jax.jit(jax.hessian(f)), jax.jit(jax.grad(jax.grad(chain)))
    return (lambda x: np.asarray(hess(jnp.asarray(x)))), (lambda x: float(second(jnp.float64(x))))


def run(smoke):
    """The Hessian, grad(grad(f)) and per-example gradient rows."""
    cfg = SMOKE if smoke else FULL
    interp = dg_program("higher")
    jit = interp.lookup("jit")
    hess, by_rows, second = interp.lookup("hess"), interp.lookup("hessian_by_rows"), interp.lookup("second")
    jhess, jsecond = jit(hess), jit(second)
    x = np.linspace(-1.0, 1.0, cfg["n"])
    links = cfg["links"]
    fns = {"hessian": lambda: hess(x), "hessian by rows": lambda: by_rows(x), "jit(hessian)": lambda: jhess(x),
           "grad(grad)": lambda: second(X0, links), "jit(grad(grad))": lambda: jsecond(X0, links)}
    notes = []
    jax = jax_or_none()
    if jax is not None:
        jh, js = _jax_refs(jax, cfg["n"], cfg["links"])
        fns["jax hessian"], fns["jax grad(grad)"] = lambda: jh(x), lambda: js(X0)
    else:
        notes.append(MISSING_JAX)
    want_h, want_s = hessian_exact(x), chain_second(X0, cfg["links"])
    for name, fn in fns.items():
        _check(name, fn(), want_h if "hessian" in name else want_s)
    floors = {"closed form by hand": lambda: hessian_exact(x), "compile() of its code": _compiling(jhess)}
    times = measure({**fns, **floors}, cfg["reps"])
    ms = {name: median(ts) * 1e3 for name, ts in times.items()}
    firsts = 1 if smoke else 5
    first_h = _first_call(lambda: jit(hess), lambda g: g(x), firsts) * 1e3
    first_s = _first_call(lambda: jit(second), lambda g: g(X0, links), firsts) * 1e3
    # a new hessian(f)'s first call: grad(f) staged on one seed and replayed by the batching rules,
    # which its later calls run compiled (vmap keeps the program: dsl/transform/vmap.py)
    hessian, f = interp.lookup("hessian"), interp.lookup("f")
    uncompiled_h = _first_call(lambda: hessian(f), lambda h: h(x), firsts) * 1e3
    jax_h = {"jax.jit": ms["jax hessian"]} if "jax hessian" in ms else {}
    jax_s = {"jax.jit": ms["jax grad(grad)"]} if "jax grad(grad)" in ms else {}
    faster_rows = ms["hessian by rows"] / ms["hessian"]
    faster_h = ms["hessian"] / ms["jit(hessian)"]
    faster_s = ms["grad(grad)"] / ms["jit(grad(grad))"]
    n, ops = cfg["n"], 2 * cfg["links"]
    rows = [
        make_row("hessian vs by rows", "ms/call", ms["hessian"], {"by rows": ms["hessian by rows"]},
                 faster_rows, "faster", ">= 5x faster", None if smoke else faster_rows >= 5.0,
                 f"hessian of sum(sin(x) * x ** 2), x of size {n}; 'by rows': one forward pass of grad(f), "
                 f"then one backward pass per row (vjp)"),
        make_row("jit(hessian) vs eager", "ms/call", ms["jit(hessian)"],
                 {"eager": ms["hessian"], "closed form by hand": ms["closed form by hand"], **jax_h},
                 faster_h, "faster", ">= 20x faster", None if smoke else faster_h >= 20.0,
                 "; ".join([f"same function, x of size {n}; 'eager': an eager hessian's call after its "
                            f"second, which runs its batched replay compiled (vmap keeps it); 'closed form by hand': "
                            f"the Hessian's formula "
                            f"diag((2 - x^2) sin x + 4 x cos x) in numpy, no differentiation, "
                            f"{ms['closed form by hand'] / (ms['hessian'] / 20.0):.1f}x the time the target "
                            f"allows (eager / 20)"] + notes)),
        make_row("jit(grad(grad)) vs eager", "ms/call", ms["jit(grad(grad))"],
                 {"eager": ms["grad(grad)"], **jax_s}, faster_s, "faster", ">= 20x faster",
                 None if smoke else faster_s >= 20.0, f"grad(grad(f)) of a chain of {ops} scalar operations"),
        make_row("jit(hessian), first call", "ms", first_h,
                 {"uncompiled call": uncompiled_h, "eager call": ms["hessian"],
                  "compile() of its code": ms["compile() of its code"]},
                 first_h / uncompiled_h, "uncompiled call", "<= 3x uncompiled call",
                 None if smoke else first_h <= 3.0 * uncompiled_h,
                 f"'uncompiled call': the first call of a new hessian(f), which stages grad(f) on one "
                 f"seed and replays it by the batching rules; an eager hessian's later calls run that "
                 f"replay compiled (vmap keeps it, compiled on its second call: 'eager call'), against "
                 f"which the first jit call is {first_h / ms['hessian']:.0f}x; 'compile() of its code': "
                 f"Python's compile() of the source jit generates for it, part of its first call"),
        make_row("jit(grad(grad)), first call", "ms", first_s, {"eager call": ms["grad(grad)"]},
                 first_s / ms["grad(grad)"], "eager call", "<= 3x eager call",
                 None if smoke else first_s <= 3.0 * ms["grad(grad)"]),
    ]
    return rows + _per_example_rows(interp, cfg, jax, smoke)


def _compiling(jitted):
    """A call of Python's compile() on the source of the code `jitted` generated (it has been called)."""
    sources = [entry.code.source for entries in jitted.call.entries.values() for entry in entries if entry.code]
    source = "\n".join(sources)
    return lambda: compile(source, "<jit>", "exec")


# ---------------------------------------------------------------- per-example gradients
def numpy_per_example(params, x, y):
    """Per-example gradients of the MLP's cross-entropy by hand in numpy (outer products by einsum)."""
    w1, b1, w2, b2 = params
    z1 = x @ w1 + b1
    h = np.maximum(z1, 0.0)
    logits = h @ w2 + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    d = e / e.sum(axis=1, keepdims=True)
    d[np.arange(x.shape[0]), y.astype(np.intp)] -= 1.0
    dz1 = (d @ w2.T) * (z1 > 0)
    return np.einsum("bi,bj->bij", x, dz1), dz1, np.einsum("bi,bj->bij", h, d), d


def _jax_per_example(jax):
    """jax.jit(vmap(grad)) of the one-example loss."""
    jnp = jax.numpy

    def loss_one(params, x, y):
        w1, b1, w2, b2 = params
        logits = jnp.maximum(x @ w1 + b1, 0.0) @ w2 + b2
        return jax.nn.logsumexp(logits) - logits[y]

    fn = jax.jit(jax.vmap(jax.grad(loss_one), in_axes=(None, 0, 0)))

    def run(params, x, y):
        g = fn(tuple(jnp.asarray(p) for p in params), jnp.asarray(x), jnp.asarray(y.astype(np.int64)))
        return tuple(np.asarray(v) for v in g)
    return run


def _per_example_rows(interp, cfg, jax, smoke):
    """vmap(grad(loss of one example)) over a batch against one batched value_and_grad."""
    params, x, y = make_data(cfg["sizes"], cfg["batch"])
    per_example, batched = interp.lookup("per_example"), interp.lookup("batched")
    per_bytes = cfg["batch"] * sum(int(np.prod(p.shape)) for p in params) * 8
    out = np.zeros(per_bytes // 8)      # touched once here: the timing writes pages already mapped
    fns = {"vmap(grad)": lambda: per_example(*params, x, y), "batched value_and_grad": lambda: batched(*params, x, y),
           "numpy per-example": lambda: numpy_per_example(params, x, y), "writing the output": lambda: out.fill(1.0)}
    if jax is not None:
        jpe = _jax_per_example(jax)
        fns["jax vmap(grad)"] = lambda: jpe(params, x, y)
    want = numpy_per_example(params, x, y)
    for name in ("vmap(grad)", "jax vmap(grad)"):
        if name in fns:
            _check(name, fns[name](), want, rtol=1e-7)
    _, mean_grads = batched(*params, x, y)
    _check("batched value_and_grad", mean_grads, tuple(g.mean(axis=0) for g in want), rtol=1e-7)
    times = measure(fns, cfg["vmap_reps"])
    ms = {name: median(ts) * 1e3 for name, ts in times.items()}
    ratio = ms["vmap(grad)"] / ms["batched value_and_grad"]
    refs = {"batched value_and_grad": ms["batched value_and_grad"], "numpy per-example": ms["numpy per-example"],
            "writing the output": ms["writing the output"]}
    if "jax vmap(grad)" in ms:
        refs["jax.jit(vmap(grad))"] = ms["jax vmap(grad)"]
    size = "-".join(map(str, cfg["sizes"]))
    return [make_row("vmap(grad) per-example", "ms/call", ms["vmap(grad)"], refs, ratio,
                     "batched value_and_grad", "<= 1.5x batched", None if smoke else ratio <= 1.5,
                     f"{cfg['batch']} examples of the {size} MLP; the per-example gradients alone are "
                     f"{per_bytes / 1e6:,.0f} MB, which the batched step never writes: 'numpy per-example' "
                     f"is the hand-written floor of that work, and 'writing the output' fills an array of "
                     f"that size (already in memory) once, "
                     f"{ms['writing the output'] / (1.5 * ms['batched value_and_grad']):.1f}x the time the "
                     f"target allows (1.5x batched)")]
