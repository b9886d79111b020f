"""dg's jit with backend="xla" against hand-written jax.jit of the same programs, in one process
(docs/xla.md): the projectile and the RNN (value_and_grad through a loop), the Hessian and
grad(grad) of a 100-link chain, and the first call: the XLA compilation in a new process with
an empty compilation cache, and again with the cache the first one wrote. dg's numpy jit is
beside each row. Skipped where JAX is not installed."""

import os
import subprocess
import sys
import tempfile

import numpy as np

from .engines import MISSING_JAX, dg_program, jax_or_none
from .loops import PROJECTILE, RNN, _close, projectile_jax, rnn_data, rnn_jax
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
    want = fns["dg numpy"]()
    for name, fn in fns.items():
        _close(f"projectile: {name}", fn(), want, rtol=1e-10)
    return _row("projectile", _timed(fns, cfg["reps"]), smoke, f"{steps} Euler steps, value_and_grad")


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
    want = fns["dg numpy"]()
    for name, fn in fns.items():
        _close(f"rnn: {name}", fn(), want, rtol=1e-10)
    return _row("RNN", _timed(fns, cfg["reps"]), smoke,
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


# ---------------------------------------------------------------- first calls, in new processes
FIRST_DG = """
import time
from bench.engines import dg_program, jax_or_none
from dsl.backends.xla import load
jax_or_none()      # JAX imported and set up as for the reference, outside the time
load()
i = dg_program("projectile")
launch, step, jit = i.lookup("launch"), i.lookup("step"), i.lookup("jit")
t1 = time.process_time()
f = jit(step, backend="xla")
f(launch, STEPS)       # stages (runs in the interpreter)
t2 = time.process_time()
f(launch, STEPS)       # XLA compiles (or reads its compilation cache), then runs
t3 = time.process_time()
print(t2 - t1, t3 - t2)
"""
FIRST_JAX = """
import time
from bench.engines import jax_or_none
from bench.loops import projectile_jax
jax = jax_or_none()
t0 = time.process_time()
projectile_jax(jax, STEPS)()
print(time.process_time() - t0)
"""


def _in_new_process(code, cache, steps):
    """What a program prints, run in a new Python process with this XLA compilation cache."""
    env = dict(os.environ, DG_XLA_CACHE=cache, PYTHONPATH=os.getcwd())
    done = subprocess.run([sys.executable, "-c", code.replace("STEPS", str(steps))], env=env, capture_output=True,
                          text=True, check=True)
    return [float(v) for v in done.stdout.split()]


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
    return [projectile_row(jax, smoke), rnn_row(jax, smoke), *higher_rows(jax, smoke), *first_call_row(smoke)]
