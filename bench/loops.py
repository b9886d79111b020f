"""Issue 12's loops: a scalar projectile (1,000 Euler steps, parameters a struct) and a vanilla
RNN (100 steps, hidden 32, input 8, batch 16), value_and_grad in dg eager and jitted, against a
hand-written floor (Python floats, numpy), PyTorch eager and jax.jit where they are installed."""

import math

import numpy as np

from .engines import MISSING_TORCH, dg_program, jax_or_none, torch_or_none, MISSING_JAX
from .report import make_row
from .timing import CLOCKS, clock_name, measure, median

PROJECTILE = {"full": {"steps": 1000, "reps": 15}, "smoke": {"steps": 20, "reps": 2}}
RNN = {"full": {"T": 100, "B": 16, "I": 8, "H": 32, "reps": 31}, "smoke": {"T": 5, "B": 2, "I": 3, "H": 4, "reps": 2}}
LAUNCH = (20.0, 0.8, 0.01)      # speed, angle, drag
DT = 0.01


# ---------------------------------------------------------------- the projectile
def projectile_floor(speed, angle, drag, steps, m=math):
    """Value and gradient by hand: the forward loop keeping what the backward loop needs (`m`:
    math for numbers, numpy for a batch of launches, each parameter a vector)."""
    x = y = 0.0
    c, s = m.cos(angle), m.sin(angle)
    vx, vy = speed * c, speed * s
    kept = []
    for _ in range(steps):
        sp = m.sqrt(vx * vx + vy * vy)
        kept.append((vx, vy, sp))
        ax = -drag * sp * vx
        ay = -9.81 - drag * sp * vy
        x, y, vx, vy = x + DT * vx, y + DT * vy, vx + DT * ax, vy + DT * ay
    loss = (x - 30.0) ** 2 + (y + 20.0) ** 2
    gx, gy = 2.0 * (x - 30.0), 2.0 * (y + 20.0)
    gvx = gvy = gdrag = 0.0
    for vx, vy, sp in reversed(kept):
        gax, gay = DT * gvx, DT * gvy
        gsp = -drag * (vx * gax + vy * gay)
        gdrag -= sp * (vx * gax + vy * gay)
        gvx, gvy = (gvx + DT * gx - drag * sp * gax + gsp * vx / sp,
                    gvy + DT * gy - drag * sp * gay + gsp * vy / sp)
    return loss, (gvx * c + gvy * s, speed * (gvy * c - gvx * s), gdrag)


def _jax_loss(jax, steps):
    """The projectile's loss in jax.numpy, the loop as lax.fori_loop."""
    jnp, lax = jax.numpy, jax.lax

    def loss(p):
        """The squared distance from the target after `steps` Euler steps."""
        speed, angle, drag = p

        def body(_, state):
            x, y, vx, vy = state
            sp = jnp.sqrt(vx * vx + vy * vy)
            return x + DT * vx, y + DT * vy, vx + DT * (-drag * sp * vx), vy + DT * (-9.81 - drag * sp * vy)
        start = (0.0, 0.0, speed * jnp.cos(angle), speed * jnp.sin(angle))
        x, y, _, _ = lax.fori_loop(0, steps, body, start)
        return (x - 30.0) ** 2 + (y + 20.0) ** 2
    return loss


def projectile_jax(jax, steps):
    """jax.jit(value_and_grad) of the same loss."""
    step = jax.jit(jax.value_and_grad(_jax_loss(jax, steps)))
    p = tuple(jax.numpy.float64(v) for v in LAUNCH)

    def run():
        value, g = step(p)
        return float(value), tuple(float(v) for v in g)
    return run


def projectile_hvp_jax(jax, steps, v):
    """jax.jit of the Hessian-vector product of the same loss along v (jvp of grad)."""
    grad = jax.grad(_jax_loss(jax, steps))
    hvp = jax.jit(lambda p, t: jax.jvp(grad, (p,), (t,))[1])
    p, t = tuple(jax.numpy.float64(x) for x in LAUNCH), tuple(jax.numpy.float64(x) for x in v)
    return lambda: tuple(float(x) for x in hvp(p, t))


def _close(name, got, want, rtol=1e-9):
    """Fail loudly if an engine's value or gradient differs from the floor's."""
    (gv, gg), (wv, wg) = got, want
    ok = math.isclose(float(gv), wv, rel_tol=rtol) and all(
        np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=rtol, atol=1e-12)
        for a, b in zip(gg, wg))
    if not ok:
        raise AssertionError(f"{name} computed {got}, expected {want}")


def _first_call(make, call, reps):
    """Median time of a first call of a freshly made function (its compile time included)."""
    now = CLOCKS[clock_name()]
    times = []
    for _ in range(reps):
        fn = make()
        t0 = now()
        call(fn)
        times.append(now() - t0)
    return median(times)


def run_projectile(smoke):
    """The projectile's rows: jit and eager against the floor, and the first jitted call."""
    cfg = PROJECTILE["smoke" if smoke else "full"]
    steps = cfg["steps"]
    interp = dg_program("projectile")
    step, launch = interp.lookup("step"), interp.lookup("launch")
    jit = interp.lookup("jit")
    jstep = jit(step)

    def dg_of(fn):
        def run():
            value, g = fn(launch, steps)
            return value, (g.speed, g.angle, g.drag)
        return run

    written = dg_program("projectile", keep_tape=True)
    fns = {"floor": lambda: projectile_floor(*LAUNCH, steps), "dg eager": dg_of(step), "dg jit": dg_of(jstep),
           "dg written out": dg_of(written.lookup("step"))}
    notes = []
    jax = jax_or_none()
    if jax is not None:
        fns["jax.jit"] = projectile_jax(jax, steps)
    else:
        notes.append(MISSING_JAX)
    want = fns["floor"]()
    for name, fn in fns.items():
        _close(f"projectile: {name}", fn(), want)
    times = measure(fns, cfg["reps"])
    ms = {name: median(ts) * 1e3 for name, ts in times.items()}
    first = _first_call(lambda: jit(step), lambda f: f(launch, steps), 3 if not smoke else 1) * 1e3
    first_eager = _first_call(lambda: dg_program("projectile"), lambda i: i.lookup("step")(launch, steps),
                              3 if not smoke else 1) * 1e3
    return _rows("projectile", f"{steps:,} Euler steps, value_and_grad w.r.t. a struct", ms, first, first_eager,
                 jit_target=5.0, eager_target=40.0, smoke=smoke, notes=notes) + \
        [_hvp_row(interp, jax, cfg, smoke, written), _vmap_row(interp, jax, cfg, smoke)]


def projectile_vmap_jax(jax, steps, launches):
    """jax.jit(vmap(value_and_grad)) of the same loss over a batch of launches."""
    step = jax.jit(jax.vmap(jax.value_and_grad(_jax_loss(jax, steps))))
    p = tuple(jax.numpy.asarray(v) for v in launches)

    def run():
        value, g = step(p)
        return np.asarray(value), tuple(np.asarray(v) for v in g)
    return run


def _vmap_row(interp, jax, cfg, smoke):
    """vmap(value_and_grad(loss)) over a batch of launches, eager and jitted: a loop that vmap
    batches as one loop of its batched body. No target: the floor (the hand-written gradient on
    numpy vectors), eager dg and jax.jit beside it."""
    steps, n = cfg["steps"], 4 if smoke else 256
    launches = (np.linspace(15.0, 25.0, n), np.linspace(0.6, 1.0, n), np.linspace(0.005, 0.015, n))
    jit, Launch = interp.lookup("jit"), interp.lookup("Launch")
    batched = interp.lookup("vmap")(interp.lookup("step"), in_axes=(0, None))
    jbatched = jit(batched)
    p = Launch(*launches)

    def dg_of(fn):
        def run():
            value, g = fn(p, steps)
            return value, (g.speed, g.angle, g.drag)
        return run

    fns = {"floor": lambda: projectile_floor(*launches, steps, m=np), "dg eager": dg_of(batched),
           "dg jit": dg_of(jbatched)}
    if jax is not None:
        fns["jax.jit"] = projectile_vmap_jax(jax, steps, launches)
    want = fns["floor"]()
    for name, fn in fns.items():
        (value, g), (wv, wg) = fn(), want
        if not all(np.allclose(a, b, rtol=1e-9, atol=1e-12) for a, b in zip((value, *g), (wv, *wg))):
            raise AssertionError(f"projectile vmap: {name} differs from the floor")
    times = measure(fns, max(2, cfg["reps"] // 3))
    ms = {name: median(ts) * 1e3 for name, ts in times.items()}
    first = _first_call(lambda: jit(batched), lambda f: f(p, steps), 3 if not smoke else 1) * 1e3
    refs = {"floor": ms["floor"], "eager": ms["dg eager"], "first jit call": first,
            **({"jax.jit": ms["jax.jit"]} if "jax.jit" in ms else {})}
    note = [f"{n} launches, {steps:,} Euler steps each; vmap(value_and_grad(loss)); the loop is one batched "
            f"loop each way"]
    note += [f"dg jit / jax.jit = {ms['dg jit'] / ms['jax.jit']:.2f}x"] if "jax.jit" in ms else [MISSING_JAX]
    return make_row("projectile vmap(value_and_grad), jit", "ms/call", ms["dg jit"], refs,
                    ms["dg jit"] / ms["floor"], "floor", "none (informational)", None, "; ".join(note))


HVP_DIRECTION = (1.0, -0.5, 20.0)


def _hvp_row(interp, jax, cfg, smoke, written):
    """The Hessian-vector product of the projectile's loss (jvp of grad), jitted: a loop rolled
    under forward mode over reverse. No target: eager dg and jax.jit beside it."""
    steps = cfg["steps"]
    hvp, jit, launch = interp.lookup("hvp"), interp.lookup("jit"), interp.lookup("launch")
    v = interp.lookup("Launch")(*HVP_DIRECTION)
    jhvp = jit(hvp)

    def dg_of(fn):
        def run():
            g = fn(launch, v, steps)
            return g.speed, g.angle, g.drag
        return run

    fns = {"dg eager": dg_of(hvp), "dg jit": dg_of(jhvp),
           "dg written out": dg_of(written.lookup("hvp"))}
    if jax is not None:
        fns["jax.jit"] = projectile_hvp_jax(jax, steps, HVP_DIRECTION)
    # the reference: central differences of the hand-written gradient along v
    h = 1e-6
    plus = projectile_floor(*(p + h * d for p, d in zip(LAUNCH, HVP_DIRECTION)), steps)[1]
    minus = projectile_floor(*(p - h * d for p, d in zip(LAUNCH, HVP_DIRECTION)), steps)[1]
    want = tuple((a - b) / (2 * h) for a, b in zip(plus, minus))
    exact = fns["dg eager"]()
    if not np.allclose(exact, want, rtol=1e-5, atol=1e-6):
        raise AssertionError(f"projectile hvp: {exact}, central differences give {want}")
    for name, fn in fns.items():
        if not np.allclose(fn(), exact, rtol=1e-9, atol=1e-12):
            raise AssertionError(f"projectile hvp: {name} differs from dg eager")
    times = measure(fns, max(2, cfg["reps"] // 3))
    ms = {name: median(ts) * 1e3 for name, ts in times.items()}
    first = _first_call(lambda: jit(hvp), lambda f: f(launch, v, steps), 3 if not smoke else 1) * 1e3
    refs = {"eager": ms["dg eager"], "written out": ms["dg written out"], "first jit call": first,
            **({"jax.jit": ms["jax.jit"]} if "jax.jit" in ms else {})}
    note = [f"{steps:,} Euler steps; jvp(grad(loss)) along a Launch; the loop is one step each way; eager rolls "
            f"it too (dsl/transform/jit/eager_loops.py), an interpreter keeping tapes writes it out"]
    note += [f"dg jit / jax.jit = {ms['dg jit'] / ms['jax.jit']:.2f}x"] if "jax.jit" in ms else [MISSING_JAX]
    return make_row("projectile Hessian-vector product, jit", "ms/call", ms["dg jit"], refs,
                    ms["dg jit"] / ms["dg eager"], "eager", "none (informational)", None, "; ".join(note))


# ---------------------------------------------------------------- the RNN
def rnn_data(T, B, I, H, seed=0):
    """Sequences, targets and weights of issue 12's RNN."""
    rng = np.random.default_rng(seed)
    xs, ys = rng.standard_normal((T, B, I)), rng.standard_normal((T, B, 1))
    params = (rng.standard_normal((I, H)) * 0.3, rng.standard_normal((H, H)) * 0.2, np.zeros(H),
              rng.standard_normal((H, 1)) * 0.3)
    return params, xs, ys


def rnn_floor(params, xs, ys):
    """Value and gradient in numpy by hand: backpropagation through time."""
    wx, wh, b, wo = params
    T, B = xs.shape[0], xs.shape[1]
    h = np.zeros((B, wh.shape[0]))
    hs, outs, total = [h], [], 0.0
    for t in range(T):
        h = np.tanh(xs[t] @ wx + h @ wh + b)
        o = h @ wo - ys[t]
        hs.append(h)
        outs.append(o)
        total += np.mean(o ** 2)
    gwx, gwh, gb, gwo = np.zeros_like(wx), np.zeros_like(wh), np.zeros_like(b), np.zeros_like(wo)
    gh = np.zeros_like(h)
    for t in reversed(range(T)):
        go = outs[t] * (2.0 / (outs[t].size * T))
        gwo += hs[t + 1].T @ go
        ga = (gh + go @ wo.T) * (1.0 - hs[t + 1] ** 2)
        gwx += xs[t].T @ ga
        gwh += hs[t].T @ ga
        gb += ga.sum(axis=0)
        gh = ga @ wh.T
    return total / T, (gwx, gwh, gb, gwo)


def rnn_torch(torch, params, xs, ys):
    """The same loss in PyTorch eager, float64: (value, gradients) per call."""
    tp = [torch.tensor(p, requires_grad=True) for p in params]
    txs, tys = torch.tensor(xs), torch.tensor(ys)

    def run():
        wx, wh, b, wo = tp
        h = torch.zeros((txs.shape[1], wh.shape[0]), dtype=torch.float64)
        total = 0.0
        for t in range(txs.shape[0]):
            h = torch.tanh(txs[t] @ wx + h @ wh + b)
            total = total + torch.mean((h @ wo - tys[t]) ** 2)
        loss = total / txs.shape[0]
        grads = torch.autograd.grad(loss, tp)
        return loss.item(), [g.numpy() for g in grads]
    return run


def rnn_jax(jax, params, xs, ys):
    """jax.jit(value_and_grad) of the same loss, the time loop as lax.scan."""
    jnp, lax = jax.numpy, jax.lax

    def loss(p, xs, ys):
        wx, wh, b, wo = p

        def body(h, xy):
            x, y = xy
            h = jnp.tanh(x @ wx + h @ wh + b)
            return h, jnp.mean((h @ wo - y) ** 2)
        _, errs = lax.scan(body, jnp.zeros((xs.shape[1], wh.shape[0])), (xs, ys))
        return jnp.sum(errs) / xs.shape[0]

    step = jax.jit(jax.value_and_grad(loss))
    jp, jx, jy = tuple(jnp.asarray(p) for p in params), jnp.asarray(xs), jnp.asarray(ys)

    def run():
        value, g = step(jp, jx, jy)
        return float(value), [np.asarray(v) for v in g]
    return run


def run_rnn(smoke):
    """The RNN's rows: jit and eager against the floor, torch and JAX beside them, the first jitted call."""
    cfg = RNN["smoke" if smoke else "full"]
    params, xs, ys = rnn_data(cfg["T"], cfg["B"], cfg["I"], cfg["H"])
    interp = dg_program("rnn")
    step, jit = interp.lookup("step"), interp.lookup("jit")
    p = interp.lookup("Rnn")(*params)
    jstep = jit(step)

    def dg_of(fn, params=p):
        def run():
            value, g = fn(params, xs, ys)
            return value, (g.wx, g.wh, g.b, g.wo)
        return run

    written = dg_program("rnn", keep_tape=True)
    fns = {"floor": lambda: rnn_floor(params, xs, ys), "dg eager": dg_of(step), "dg jit": dg_of(jstep),
           "dg written out": dg_of(written.lookup("step"), written.lookup("Rnn")(*params))}
    notes = []
    torch = torch_or_none()
    if torch is not None:
        fns["torch"] = rnn_torch(torch, params, xs, ys)
    else:
        notes.append(MISSING_TORCH)
    jax = jax_or_none()
    if jax is not None:
        fns["jax.jit"] = rnn_jax(jax, params, xs, ys)
    else:
        notes.append(MISSING_JAX)
    want = fns["floor"]()
    for name, fn in fns.items():
        _close(f"rnn: {name}", fn(), want, rtol=1e-8)
    times = measure(fns, cfg["reps"])
    ms = {name: median(ts) * 1e3 for name, ts in times.items()}
    first = _first_call(lambda: jit(step), lambda f: f(p, xs, ys), 3 if not smoke else 1) * 1e3
    first_eager = _first_call(lambda: dg_program("rnn"), lambda i: i.lookup("step")(i.lookup("Rnn")(*params), xs, ys),
                              3 if not smoke else 1) * 1e3
    size = f"{cfg['T']} steps, hidden {cfg['H']}, input {cfg['I']}, batch {cfg['B']}, value_and_grad"
    rows = _rows("RNN", size, ms, first, first_eager, jit_target=1.5, eager_target=2.5, smoke=smoke, notes=notes)
    vs = ms["dg eager"] / ms["torch"] if "torch" in ms else None
    rows.append(make_row("RNN eager vs torch", "ms/call", ms["dg eager"], {"torch": ms.get("torch")}, vs,
                         "torch", "< 1.0x torch", None if smoke or vs is None else vs < 1.0,
                         "PyTorch eager, float64" if vs is not None else MISSING_TORCH))
    return rows


def _rows(what, size, ms, first, first_eager, jit_target, eager_target, smoke, notes):
    """The rows of one loop benchmark: jit and eager against the floor, and the first call's time
    (`first_eager`: the eager first call's, which stages the loop)."""
    floor = ms["floor"]
    refs = {"floor": floor}
    if "jax.jit" in ms:
        refs["jax.jit"] = ms["jax.jit"]
    if "torch" in ms:
        refs["torch"] = ms["torch"]
    jit_ratio, eager_ratio = ms["dg jit"] / floor, ms["dg eager"] / floor
    jax_note = [f"dg jit / jax.jit = {ms['dg jit'] / ms['jax.jit']:.2f}x"] if "jax.jit" in ms else []
    # the eager call rolls its loop (dsl/transform/jit/eager_loops.py), compiled: an uncompiled call is one
    # with the loop written out, as an interpreter keeping tapes runs it
    uncompiled = ms["dg written out"]
    first_ratio = first / uncompiled
    eager_note = (f"the loop rolled (one Loop step, compiled; a first eager call, which stages it, took "
                  f"{first_eager:.3g} ms); written out (an interpreter keeping tapes): "
                  f"{uncompiled / floor:.1f}x floor")
    return [
        make_row(f"{what}, jit", "ms/call", ms["dg jit"], refs, jit_ratio, "floor",
                 f"<= {jit_target:g}x floor", None if smoke else jit_ratio <= jit_target,
                 "; ".join([size] + jax_note + notes)),
        make_row(f"{what}, eager", "ms/call", ms["dg eager"],
                 {"floor": floor, "written out": uncompiled},
                 eager_ratio, "floor", f"<= {eager_target:g}x floor", None if smoke else eager_ratio <= eager_target,
                 eager_note),
        make_row(f"{what}, first jit call", "ms", first,
                 {"uncompiled call": uncompiled, "eager call": ms["dg eager"]},
                 first_ratio, "uncompiled call", "<= 3x uncompiled call", None if smoke else first_ratio <= 3.0,
                 f"staging and compiling for a new signature, then running; against an eager call with the loop "
                 f"written out (the eager call compiles its loop too: {first / ms['dg eager']:.2f}x it)"),
    ]
