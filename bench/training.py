"""A training loop whose step is jitted: 300 adam steps of a 2-16-1 MLP (bench/programs/train.dg),
the step's int counter among its arguments. jit stages the step once for all 300 calls (its ints
are values of the recording), so the loop, its first call included, runs faster than eager."""

import math

from .engines import dg_program
from .report import make_row
from .timing import measure, median

TRAIN = {"full": {"steps": 300, "reps": 5}, "smoke": {"steps": 3, "reps": 1}}


def run(smoke):
    """The training loop's row: the whole loop jitted (a new jit each time, staging included) and eager."""
    cfg = TRAIN["smoke" if smoke else "full"]
    interp = dg_program("train")
    train, step, jit = (interp.lookup(n) for n in ("train", "step", "jit"))
    stagings = []

    def jitted():
        fast = jit(step)
        loss = train(fast, cfg["steps"])
        stagings.append(sum(len(v) for v in fast.call.entries.values()))
        return loss

    eager_loss, jit_loss = train(step, cfg["steps"]), jitted()
    if not math.isclose(eager_loss, jit_loss, rel_tol=1e-12):
        raise AssertionError(f"training: jit's loss {jit_loss} is not eager's {eager_loss}")
    times = measure({"eager": lambda: train(step, cfg["steps"]), "jit": jitted}, cfg["reps"])
    eager_ms, jit_ms = (median(times[k]) * 1e3 for k in ("eager", "jit"))
    met = None if smoke else (jit_ms < eager_ms and max(stagings) <= 2)
    return [make_row("training loop, jitted adam step", "ms/loop", jit_ms, {"eager": eager_ms},
                     jit_ms / eager_ms, "eager", "< 1x eager, staged at most twice", met,
                     f"{cfg['steps']} steps of a 2-16-1 MLP with adam, the first call's staging included; "
                     f"recordings made: {max(stagings)}")]
