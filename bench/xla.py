"""dg's jit with backend="xla" against hand-written jax.jit of the same programs, in one process
(docs/xla.md): the projectile and the RNN (value_and_grad through a loop), the MLP benchmark's
training step, an attention block, the Hessian and grad(grad) of a 100-link chain, a pendulum
fitted through 200 RK4 steps, their geometric mean, and the first call: the XLA compilation in a new process with
an empty compilation cache, and again with the cache the first one wrote. dg's numpy jit is
beside each row. Skipped where JAX is not installed."""

import tempfile

import numpy as np

from .engines import MISSING_JAX, dg_program, jax_or_none, printed_by_new_process
from .loops import PROJECTILE, RNN, _close, projectile_jax, rnn_data, rnn_jax
from .mlp import FULL as MLP, SMOKE as MLP_SMOKE, make_data
from .report import make_row
from .timing import measure, median
from .transforms import FULL as HIGHER, SMOKE as HIGHER_SMOKE, X0, _jax_refs, chain_second, hessian_exact

TARGET = 1.2        # dg's XLA backend against jax.jit: at most this ratio per row


def _jitted(interp, name):
    """(numpy jit, xla jit) of a dg function."""
    jit, fn = interp.lookup("jit"), interp.lookup(name)
    return jit(fn), jit(fn, backend="xla")


def _row(what, ms, smoke, note):
    """A row: dg xla's ms per call against jax.jit's, dg's numpy jit beside it."""
    ratio = ms["dg xla"] / ms["jax.jit"]
    return make_row(f"{what}, jit(backend=\"xla\")", "ms/call", ms["dg xla"],
                    {"jax.jit": ms["jax.jit"], "dg numpy jit": ms["dg numpy"]}, ratio, "jax.jit",
                    f"<= {TARGET}x jax.jit", None if smoke else ratio <= TARGET,
                    f"{note}; dg numpy jit / xla = {ms['dg numpy'] / ms['dg xla']:.1f}x")


def _timed(fns, reps):
    """Median milliseconds per call of each function."""
    return {name: median(ts) * 1e3 for name, ts in measure(fns, reps).items()}


def _checked_row(what, fns, reps, smoke, note):
    """The row of `fns` (dg numpy, dg xla, jax.jit), each checked first against dg numpy's result."""
    want = fns["dg numpy"]()
    for name, fn in fns.items():
        _close(f"{what}: {name}", fn(), want, rtol=1e-10)
    return _row(what, _timed(fns, reps), smoke, note)


def projectile_row(jax, smoke):
    """value_and_grad of the projectile's loss through its Euler loop."""
    cfg = PROJECTILE["smoke" if smoke else "full"]
    steps = cfg["steps"]
    interp = dg_program("projectile")
    launch = interp.lookup("launch")
    jn, jx = _jitted(interp, "step")

    def dg_of(fn):
        def run():
            value, g = fn(launch, steps)
            return value, (g.speed, g.angle, g.drag)
        return run
    fns = {"dg numpy": dg_of(jn), "dg xla": dg_of(jx), "jax.jit": projectile_jax(jax, steps)}
    return _checked_row("projectile", fns, cfg["reps"], smoke, f"{steps} Euler steps, value_and_grad")


def rnn_row(jax, smoke):
    """value_and_grad of the RNN's loss through its time loop."""
    cfg = RNN["smoke" if smoke else "full"]
    params, xs, ys = rnn_data(cfg["T"], cfg["B"], cfg["I"], cfg["H"])
    interp = dg_program("rnn")
    p = interp.lookup("Rnn")(*params)
    jn, jx = _jitted(interp, "step")

    def dg_of(fn):
        def run():
            value, g = fn(p, xs, ys)
            return value, (g.wx, g.wh, g.b, g.wo)
        return run
    fns = {"dg numpy": dg_of(jn), "dg xla": dg_of(jx), "jax.jit": rnn_jax(jax, params, xs, ys)}
    return _checked_row("RNN", fns, cfg["reps"], smoke,
                f"{cfg['T']} steps, hidden {cfg['H']}, batch {cfg['B']}, value_and_grad")


def higher_rows(jax, smoke):
    """The Hessian of sum(sin(x) * x ** 2) and grad(grad) of a chain of sin(acc) * x."""
    cfg = HIGHER_SMOKE if smoke else HIGHER
    interp = dg_program("higher")
    x, links = np.linspace(-1.0, 1.0, cfg["n"]), cfg["links"]
    hn, hx = _jitted(interp, "hess")
    sn, sx = _jitted(interp, "second")
    jh, js = _jax_refs(jax, cfg["n"], links)
    hess = {"dg numpy": lambda: hn(x), "dg xla": lambda: hx(x), "jax.jit": lambda: jh(x)}
    second = {"dg numpy": lambda: sn(X0, links), "dg xla": lambda: sx(X0, links), "jax.jit": lambda: js(X0)}
    want_h, want_s = hessian_exact(x), chain_second(X0, links)
    for name in hess:
        np.testing.assert_allclose(hess[name](), want_h, rtol=1e-10, err_msg=f"hessian: {name}")
        np.testing.assert_allclose(second[name](), want_s, rtol=1e-10, err_msg=f"grad(grad): {name}")
    return [_row("hessian", _timed(hess, cfg["reps"]), smoke, f"hessian of sum(sin(x) * x ** 2), n = {cfg['n']}"),
            _row("grad(grad)", _timed(second, cfg["reps"]), smoke, f"grad(grad) of a {links}-link chain, a loop")]


def mlp_row(jax, smoke):
    """One training step (value and gradient) of the MLP benchmark's 784-256-10 model."""
    cfg = MLP_SMOKE if smoke else MLP
    params, x, y = make_data(cfg["sizes"], cfg["batch"])
    jn, jx = _jitted(dg_program("mlp"), "step_flat")
    jnp = jax.numpy

    def loss(w1, b1, w2, b2, x, labels):
        logits = jnp.maximum(x @ w1 + b1, 0.0) @ w2 + b2
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), labels[:, None], axis=1))
    step = jax.jit(jax.value_and_grad(loss, argnums=(0, 1, 2, 3)))
    jargs = [jnp.asarray(a) for a in params] + [jnp.asarray(x), jnp.asarray(y.astype(np.int64))]

    def reference():
        value, g = step(*jargs)
        return float(value), [np.asarray(v) for v in g]
    fns = {"dg numpy": lambda: jn(*params, x, y), "dg xla": lambda: jx(*params, x, y), "jax.jit": reference}
    sizes = "-".join(map(str, cfg["sizes"]))
    return _checked_row("MLP step", fns, cfg["reps"], smoke, f"{sizes}, batch {cfg['batch']}, value_and_grad")


def attention_row(jax, smoke):
    """value_and_grad of one self-attention head with a residual, on a batch of sequences."""
    b, t, d = (2, 4, 3) if smoke else (8, 64, 32)
    rng = np.random.default_rng(0)
    w = [rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(4)]
    x, y = rng.standard_normal((b, t, d)), rng.standard_normal((b, t, d))
    interp = dg_program("xla")
    p = interp.lookup("Attention")(*w)
    jn, jx = _jitted(interp, "attention_step")
    jnp = jax.numpy

    def loss(p, x, y):
        wq, wk, wv, wo = p
        scores = jnp.einsum("btd,bsd->bts", x @ wq, x @ wk) / jnp.sqrt(float(d))
        h = x + jnp.einsum("bts,bsd->btd", jax.nn.softmax(scores, axis=-1), x @ wv) @ wo
        return jnp.mean((h - y) ** 2)
    step = jax.jit(jax.value_and_grad(loss))
    jw, jxs, jys = tuple(jnp.asarray(v) for v in w), jnp.asarray(x), jnp.asarray(y)

    def dg_of(fn):
        def run():
            value, g = fn(p, x, y)
            return value, (g.wq, g.wk, g.wv, g.wo)
        return run

    def reference():
        value, g = step(jw, jxs, jys)
        return float(value), [np.asarray(v) for v in g]
    fns = {"dg numpy": dg_of(jn), "dg xla": dg_of(jx), "jax.jit": reference}
    return _checked_row("attention block", fns, 3 if smoke else 31, smoke,
                f"batch {b}, {t} positions, width {d}, value_and_grad")


def rk4_row(jax, smoke):
    """A pendulum's length and damping fitted through 200 RK4 steps: value_and_grad."""
    steps = 10 if smoke else 200
    interp = dg_program("xla")
    p = interp.lookup("Pendulum")(1.2, 0.3)
    jn, jx = _jitted(interp, "swing_step")
    jnp, lax = jax.numpy, jax.lax

    def swing(q, theta, omega):
        length, damping = q
        h, g = 0.01, 9.81 / length

        def accel(th, om):
            return -g * jnp.sin(th) - damping * om

        def body(_, state):
            th, om = state
            k1t, k1w = om, accel(th, om)
            k2t = om + 0.5 * h * k1w
            k2w = accel(th + 0.5 * h * k1t, k2t)
            k3t = om + 0.5 * h * k2w
            k3w = accel(th + 0.5 * h * k2t, k3t)
            k4t = om + h * k3w
            k4w = accel(th + h * k3t, k4t)
            return (th + h / 6.0 * (k1t + 2.0 * k2t + 2.0 * k3t + k4t),
                    om + h / 6.0 * (k1w + 2.0 * k2w + 2.0 * k3w + k4w))
        th, om = lax.fori_loop(0, steps, body, (theta, omega))
        return (th - 0.3) ** 2 + 0.1 * om ** 2
    step = jax.jit(jax.value_and_grad(swing))
    q = (jnp.float64(1.2), jnp.float64(0.3))

    def dg_of(fn):
        def run():
            value, g = fn(p, 1.0, 0.0, steps)
            return value, (g.length, g.damping)
        return run

    def reference():
        value, g = step(q, jnp.float64(1.0), jnp.float64(0.0))
        return float(value), [float(v) for v in g]
    fns = {"dg numpy": dg_of(jn), "dg xla": dg_of(jx), "jax.jit": reference}
    return _checked_row("RK4 ODE fit", fns, 3 if smoke else 31, smoke,
                f"{steps} RK4 steps of a damped pendulum, value_and_grad by its length and damping")


def geometric_mean_row(rows, smoke):
    """The geometric mean over the per-call rows of dg xla / jax.jit."""
    ratios = [r["ratio"] for r in rows]
    mean = float(np.exp(np.mean(np.log(ratios))))
    return make_row("geometric mean, jit(backend=\"xla\")", "x jax.jit", mean, {}, mean, "jax.jit", "<= 1.0x",
                    None if smoke else mean <= 1.0, "over the rows above: " + ", ".join(
                        f"{r['benchmark'].split(',')[0]} {r['ratio']:.2f}x" for r in rows))


# ---------------------------------------------------------------- first calls, in new processes
FIRST_DG = """
from bench.timing import CLOCKS, clock_name
now = CLOCKS[clock_name()]    # the run's clock: CPU time, or wall time on a GPU
from bench.engines import dg_program, jax_or_none
from dsl.backends.xla import load
jax_or_none()      # JAX imported and set up as for the reference, outside the time
load()
i = dg_program("projectile")
launch, step, jit = i.lookup("launch"), i.lookup("step"), i.lookup("jit")
t1 = now()
f = jit(step, backend="xla")
f(launch, STEPS)       # stages (runs in the interpreter)
t2 = now()
f(launch, STEPS)       # XLA compiles (or reads its compilation cache), then runs
t3 = now()
print(t2 - t1, t3 - t2)
"""
FIRST_JAX = """
from bench.timing import CLOCKS, clock_name
now = CLOCKS[clock_name()]    # the run's clock: CPU time, or wall time on a GPU
from bench.engines import jax_or_none
from bench.loops import projectile_jax
jax = jax_or_none()
t0 = now()
projectile_jax(jax, STEPS)()
print(now() - t0)
"""


def _in_new_process(code, cache, steps):
    """What a program prints, run in a new Python process with this XLA compilation cache."""
    return printed_by_new_process(code.replace("STEPS", str(steps)), DG_XLA_CACHE=cache)


def first_call_row(smoke):
    """The first call of jit(value_and_grad) of the projectile on XLA, in a new process: staging,
    then XLA's compilation, with an empty cache and with the one the first process wrote."""
    steps = PROJECTILE["smoke" if smoke else "full"]["steps"]
    with tempfile.TemporaryDirectory() as cache:
        stage, cold = _in_new_process(FIRST_DG, cache, steps)
        stage2, warm = _in_new_process(FIRST_DG, cache, steps)
        jax_first = _in_new_process(FIRST_JAX, cache, steps)[0]
    first, again = (stage + cold) * 1e3, (stage2 + warm) * 1e3
    ratio = first / (jax_first * 1e3)
    return [make_row("projectile first call, jit(backend=\"xla\")", "ms", first,
                     {"jax.jit first call": jax_first * 1e3, "dg, cache warm (new process)": again},
                     ratio, "jax.jit first call", "<= 1.5x jax.jit; warm cache < 300 ms",
                     None if smoke else ratio <= 1.5 and again < 300.0,
                     f"staging {stage * 1e3:.0f} ms (the interpreter runs the call) + XLA's compilation "
                     f"{cold * 1e3:.0f} ms; with the cache a new process wrote: staging {stage2 * 1e3:.0f} ms "
                     f"+ {warm * 1e3:.0f} ms")]


def run(smoke):
    """The rows, or one saying JAX is missing."""
    jax = jax_or_none()
    if jax is None:
        return [make_row("jit(backend=\"xla\")", "-", None, {}, None, None, "-", None, MISSING_JAX)]
    rows = [projectile_row(jax, smoke), rnn_row(jax, smoke), mlp_row(jax, smoke), attention_row(jax, smoke),
            *higher_rows(jax, smoke), rk4_row(jax, smoke)]
    return [*rows, geometric_mean_row(rows, smoke), *first_call_row(smoke)]
