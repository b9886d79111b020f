"""A trajectory written row by row under grad (bench/programs/trajectory.dg): a damped
oscillator's 4,000 semi-implicit Euler steps, each state written to traj[i], fitted to
observations. jit(value_and_grad) against jax.jit of the same loop (lax.fori_loop writing rows
with .at[i].set), first call and later calls."""

from .engines import MISSING_JAX, dg_program, jax_or_none
from .loops import _first_call
from .report import make_row
from .timing import measure, median

FULL = {"steps": 4000, "reps": 9, "firsts": 3}
SMOKE = {"steps": 20, "reps": 2, "firsts": 1}
K, C = 2.0, 0.1


def _jax_loss(jax, steps):
    """The loss in jax.numpy, the loop as lax.fori_loop writing each state's row."""
    jnp = jax.numpy

    def loss(k, c, observed):
        """The mean squared distance of the simulated trajectory from the observed one."""
        def body(i, state):
            traj, x, v = state
            v = v - 0.01 * (k * x + c * v)
            x = x + 0.01 * v
            return traj.at[i].set(jnp.stack([x, v])), x, v
        traj, _, _ = jax.lax.fori_loop(0, steps, body, (jnp.zeros((steps, 2)), 1.0, 0.0))
        return jnp.mean((traj - observed) ** 2)
    return loss


def run(smoke):
    """The first-call and later-call rows."""
    cfg = SMOKE if smoke else FULL
    steps = cfg["steps"]
    interp = dg_program("trajectory")
    jit, vg = interp.lookup("jit"), interp.lookup("value_and_grad")
    observed = interp.lookup("simulate")(K * 1.1, C * 0.9, steps)
    make = lambda: jit(vg(interp.lookup("loss"), (0, 1)))     # noqa: E731
    fit = make()
    value, grads = fit(K, C, observed)
    eager_value, eager_grads = vg(interp.lookup("loss"), (0, 1))(K, C, observed)
    if abs(value - eager_value) > 1e-12 * abs(eager_value) or \
            max(abs(a - b) for a, b in zip(grads, eager_grads)) > 1e-9 * max(abs(g) for g in eager_grads):
        raise AssertionError(f"jit gave {value, grads}, eager {eager_value, eager_grads}")
    fns = {"dg": lambda: fit(K, C, observed)}
    notes, refs = [], {}
    jax = jax_or_none()
    if jax is not None:
        jfit = jax.jit(jax.value_and_grad(_jax_loss(jax, steps), (0, 1)))
        jv, jg = jfit(K, C, observed)
        if abs(float(jv) - value) > 1e-9 * abs(value):
            raise AssertionError(f"jax gave {float(jv)}, dg {value}")
        fns["jax"] = lambda: jax.block_until_ready(jfit(K, C, observed))
    else:
        notes.append(MISSING_JAX)
    ms = {name: median(ts) * 1e3 for name, ts in measure(fns, cfg["reps"]).items()}
    first = _first_call(make, lambda f: f(K, C, observed), cfg["firsts"]) * 1e3
    if "jax" in ms:
        refs["jax.jit"] = ms["jax"]
    what = (f"jit(value_and_grad) of {steps} steps writing traj[i] = [x, v]; the loop writes its rows in place "
            f"and, past 64K numbers, keeps its history under grad at checkpoints")
    return [
        make_row("trajectory under grad, later calls", "ms/call", ms["dg"], refs,
                 ms["dg"] / ms["jax"] if "jax" in ms else None, "jax.jit" if "jax" in ms else None, "-", None,
                 "; ".join([what] + notes)),
        make_row("trajectory under grad, first call", "ms", first, {}, None, None, "-", None,
                 "staging, compiling and running once"),
    ]
