"""A loop with a branch taken on some of its iterations (bench/programs/ball.dg): a bouncing
ball, 1,000 Euler steps, value_and_grad w.r.t. a struct, dg eager and jitted, against a
hand-written floor in Python floats and jax.jit (`lax.fori_loop`, the branch as `jnp.where`)
where installed; and a training loop of 30 gradient steps whose calls bounce on other steps.
No target: jit runs the branch both ways (docs/decisions.md), where it had written the loop
out and staged it again on nearly every training step."""

import math

from .engines import MISSING_JAX, dg_program, jax_or_none
from .loops import _first_call
from .report import make_row
from .timing import measure, median

BALL = {"full": {"steps": 1000, "reps": 15, "train": 30}, "smoke": {"steps": 30, "reps": 2, "train": 2}}
DROP = (2.0, 0.0, 0.8)      # height, velocity, restitution
DT, G = 0.01, 9.81


def ball_floor(h, v, e, steps):
    """Value and gradient by hand: the forward loop keeping each step's velocity and whether it bounced."""
    y, kept = h, []
    for _ in range(steps):
        v = v - G * DT
        y = y + v * DT
        bounced = y < 0.0
        kept.append((v, bounced))
        if bounced:
            y, v = -y, -v * e
    loss = (y - 1.0) ** 2 + v
    gy, gv, ge = 2.0 * (y - 1.0), 1.0, 0.0
    for v1, bounced in reversed(kept):
        if bounced:         # y = -y1, v = -v1 * e
            ge -= v1 * gv
            gy, gv = -gy, -e * gv
        gv += DT * gy       # y1 = y0 + v1 * dt; v1 = v0 - g dt
    return loss, (gy, gv, ge)


def _jax_step(jax, steps):
    """jax.jit(value_and_grad) of the same loss, the loop a fori_loop and the bounce a where."""
    jnp, lax = jax.numpy, jax.lax

    def loss(p):
        h, v0, e = p

        def body(_, state):
            y, v = state
            v = v - G * DT
            y = y + v * DT
            down = y < 0.0
            return jnp.where(down, -y, y), jnp.where(down, -v * e, v)
        y, v = lax.fori_loop(0, steps, body, (h, v0))
        return (y - 1.0) ** 2 + v
    step = jax.jit(jax.value_and_grad(loss))
    p = tuple(jax.numpy.float64(x) for x in DROP)

    def run():
        value, g = step(p)
        return float(value), tuple(float(x) for x in g)
    return run


def run(smoke):
    """The bouncing ball's row."""
    cfg = BALL["smoke" if smoke else "full"]
    steps = cfg["steps"]
    interp = dg_program("ball")
    step, drop, jit, train = (interp.lookup(n) for n in ("step", "drop", "jit", "train"))
    jstep = jit(step)

    def dg_of(fn):
        def go():
            value, g = fn(drop, steps)
            return value, (g.h, g.v, g.e)
        return go

    fns = {"floor": lambda: ball_floor(*DROP, steps), "dg eager": dg_of(step), "dg jit": dg_of(jstep)}
    jax = jax_or_none()
    if jax is not None:
        fns["jax.jit"] = _jax_step(jax, steps)
    want = fns["floor"]()
    for name, fn in fns.items():
        value, g = fn()
        if not (math.isclose(value, want[0], rel_tol=1e-9) and
                all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) for a, b in zip(g, want[1]))):
            raise AssertionError(f"ball: {name} computed {(value, g)}, expected {want}")
    times = measure(fns, cfg["reps"])
    ms = {name: median(ts) * 1e3 for name, ts in times.items()}
    first = _first_call(lambda: jit(step), lambda f: f(drop, steps), 3 if not smoke else 1) * 1e3
    trained = measure({"eager": lambda: train(step, drop, steps, cfg["train"]),
                       "jit": lambda: train(jit(step), drop, steps, cfg["train"])}, 1 if smoke else 3)
    eager_t, jit_t = (median(trained[k]) * 1e3 for k in ("eager", "jit"))
    refs = {"floor": ms["floor"], "eager": ms["dg eager"], "first jit call": first,
            **({"jax.jit": ms["jax.jit"]} if "jax.jit" in ms else {})}
    note = [f"{steps:,} Euler steps, value_and_grad w.r.t. a struct; {cfg['train']} training steps (one jit "
            f"for them, its first call included): jit {jit_t:.0f} ms, eager {eager_t:.0f} ms"]
    note += [f"dg jit / jax.jit = {ms['dg jit'] / ms['jax.jit']:.2f}x"] if "jax.jit" in ms else [MISSING_JAX]
    return [make_row("bouncing ball, jit", "ms/call", ms["dg jit"], refs, ms["dg jit"] / ms["floor"],
                     "floor", "none (informational)", None, "; ".join(note))]
