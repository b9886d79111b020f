"""Programs a scientist writes (bench/programs/science.dg): a Gaussian process's likelihood and
Newton's method with dg's linear algebra against the same written as loops, Hamiltonian Monte
Carlo with random keys (its first call is mostly staging), and a CNN's loss and gradient; with
jax.jit of the same beside them where JAX is installed. Every dg result is checked against the
loop version or numpy before it is timed."""

import numpy as np

from dsl.core.primitives import matrix

from .engines import MISSING_JAX, dg_program, jax_or_none
from .loops import _first_call
from .report import make_row
from .timing import measure, median

FULL = {"n": 60, "d": 30, "samples": 500, "batch": 64, "reps": 7, "firsts": 3}
SMOKE = {"n": 8, "d": 4, "samples": 5, "batch": 4, "reps": 2, "firsts": 1}


def _data(cfg):
    """The fixed inputs of every row."""
    rng = np.random.default_rng(0)
    x = np.sort(rng.uniform(-3.0, 3.0, cfg["n"]))
    y = np.sin(2.0 * x) + 0.1 * rng.normal(size=cfg["n"])
    a = rng.normal(size=(4 * cfg["d"], cfg["d"]))
    t = (rng.uniform(size=4 * cfg["d"]) < 0.5).astype(float)
    images = rng.normal(size=(cfg["batch"], 1, 8, 8))
    labels = rng.integers(0, 3, cfg["batch"]).astype(float)
    return x, y, a, t, images, labels


def _close(a, b, what):
    """dg's two versions (or dg and numpy) agree, or the benchmark fails loudly."""
    if not np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=1e-8, atol=1e-9):
        raise AssertionError(f"{what}: the two results differ")


def _jax_refs(jax, cfg, x, y, a, t, images, labels):
    """jax.jit of each program: the GP's value and gradient, a Newton step, HMC, the CNN's."""
    jnp, lax = jax.numpy, jax.lax

    def nll(p):
        d = x[:, None] - x[None, :]
        c = jnp.exp(2 * p[1]) * jnp.exp(-0.5 * d * d / jnp.exp(2 * p[0])) + (jnp.exp(2 * p[2]) + 1e-6) * jnp.eye(len(x))
        l = jnp.linalg.cholesky(c)
        alpha = jax.scipy.linalg.cho_solve((l, True), y)
        return 0.5 * jnp.sum(y * alpha) + jnp.sum(jnp.log(jnp.diag(l))) + 0.5 * len(x) * jnp.log(2 * jnp.pi)

    def loss(w):
        z = a @ w
        return jnp.sum(jax.nn.softplus(z) - t * z) + 0.5 * jnp.sum(w * w)

    def newton(w):
        return w - jnp.linalg.solve(jax.hessian(loss)(w), jax.grad(loss)(w))

    prec = jnp.array([[2.0, -1.6], [-1.6, 2.0]])

    def logp(q):
        return -0.5 * q @ prec @ q

    def make_hmc():
        """A new jax.jit of the sampler (a new function: JAX's caches do not know it)."""
        return jax.jit(lambda q, key: hmc(q, key))

    def hmc(q, key):
        def sample(carry, _):
            q, key = carry
            key, k1, k2 = jax.random.split(key, 3)
            p = jax.random.normal(k1, (2,))
            p1 = p + 0.075 * jax.grad(logp)(q)

            def leap(_, s):
                q1, p1 = s
                q1 = q1 + 0.15 * p1
                return q1, p1 + 0.15 * jax.grad(logp)(q1)
            q1, p1 = lax.fori_loop(0, 10, leap, (q, p1))
            p1 = p1 - 0.075 * jax.grad(logp)(q1)
            ratio = logp(q1) - 0.5 * p1 @ p1 - logp(q) + 0.5 * p @ p
            q = jnp.where(jnp.log(jax.random.uniform(k2)) < ratio, q1, q)
            return (q, key), q
        _, qs = lax.scan(sample, (q, key), None, length=cfg["samples"])
        return jnp.mean(qs, axis=0)

    def cnn(params):
        w1, b1, w2, b2, w3, b3 = params
        conv = lambda h, w: lax.conv_general_dilated(h, w, (1, 1), "SAME")     # noqa: E731
        h = jax.nn.relu(conv(images, w1) + b1[:, None, None])
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        h = jax.nn.relu(conv(h, w2) + b2[:, None, None])
        logits = jnp.mean(h, axis=(2, 3)) @ w3 + b3
        return jnp.mean(jax.nn.logsumexp(logits, axis=1) - logits[jnp.arange(len(labels)), labels.astype(int)])
    return (jax.jit(jax.value_and_grad(nll)), jax.jit(newton), make_hmc, jax.jit(jax.value_and_grad(cnn)))


def _without_lapack(fn, *args):
    """fn(*args) with cholesky and triangular_solve on numpy's kernels, as where scipy is not
    installed (dsl/core/primitives/matrix.py)."""
    found = matrix._lapack
    matrix._lapack = lambda: None
    try:
        return fn(*args)
    finally:
        matrix._lapack = found


def _gesv(h, g):
    """A call of LAPACK's gesv on the system through scipy (dg's solve of one matrix and one
    vector), or numpy's solve where scipy is missing."""
    lapack = matrix._lapack()
    if lapack is None:
        return lambda: np.linalg.solve(h, g)
    return lambda: lapack.dgesv(h, g)


def run(smoke):
    """The rows: GP and Newton against their loop versions, HMC's first and later calls, the CNN."""
    cfg = SMOKE if smoke else FULL
    interp = dg_program("science")
    get = interp.lookup
    jit, vg = get("jit"), get("value_and_grad")
    x, y, a, t, images, labels = _data(cfg)
    p0 = np.array([0.0, 0.0, -1.0])
    w0 = np.zeros(cfg["d"])
    gp, gp_loops = jit(vg(get("gp_nll"))), jit(vg(get("gp_nll_loops")))
    newton, newton_loops = jit(get("newton_step")), jit(get("newton_step_loops"))
    product = jit(get("newton_step_product"))
    v1, g1 = gp(p0, x, y)
    v2, g2 = gp_loops(p0, x, y)
    _close(v1, v2, "the GP's likelihood")
    _close(g1, g2, "the GP's gradient")
    _close(newton(w0, a, t), newton_loops(w0, a, t), "Newton's step")
    h = get("hessian")(get("logistic_loss"))(w0 + 0.1, a, t)
    g = get("grad")(get("logistic_loss"))(w0 + 0.1, a, t)
    solve, solve_loops = jit(get("solve")), jit(get("solve_loops"))
    _close(solve(h, g), np.linalg.solve(h, g), "solve")
    _close(solve_loops(h, g), np.linalg.solve(h, g), "the loops' solve")
    key = np.array([0.0, 1.0])
    q0 = np.zeros(2)
    make_hmc = lambda: jit(get("hmc"))      # noqa: E731
    hmc = make_hmc()
    mean, rate = hmc(q0, key, cfg["samples"])
    if not smoke and not (np.all(np.abs(mean) < 0.5) and 0.5 < rate <= 1.0):
        raise AssertionError(f"HMC's mean {mean} or acceptance {rate} is off")
    rng = np.random.default_rng(1)
    net = get("Cnn")(rng.normal(size=(8, 1, 3, 3)) * 0.4, np.zeros(8), rng.normal(size=(16, 8, 3, 3)) * 0.15,
                     np.zeros(16), rng.normal(size=(16, 3)) * 0.3, np.zeros(3))
    cnn = jit(vg(get("cnn_loss")))
    cnn(net, images, labels)
    fns = {"gp": lambda: gp(p0, x, y), "gp_loops": lambda: gp_loops(p0, x, y),
           "gp without scipy": lambda: _without_lapack(gp, p0, x, y),
           "newton": lambda: newton(w0, a, t), "newton_loops": lambda: newton_loops(w0, a, t),
           "product": lambda: product(w0, a, t), "numpy solve": lambda: np.linalg.solve(h, g),
           "lapack solve": _gesv(h, g),
           "numpy product": lambda: h @ g,
           "hmc": lambda: hmc(q0, key, cfg["samples"]), "cnn": lambda: cnn(net, images, labels)}
    notes, firsts = [], {}
    jax = jax_or_none()
    if jax is not None:
        jgp, jnewton, make_jhmc, jcnn = _jax_refs(jax, cfg, x, y, a, t, images, labels)
        jkey = jax.random.PRNGKey(1)
        firsts["jax.jit, first call"] = _first_call(make_jhmc, lambda f: f(q0, jkey).block_until_ready(), 1) * 1e3
        jhmc = make_jhmc()
        params = tuple(np.asarray(v) for v in net.vals)
        _close(jgp(p0)[0], v1, "jax's GP likelihood")
        _close(jnewton(w0), newton(w0, a, t), "jax's Newton step")
        _close(jcnn(params)[0], cnn(net, images, labels)[0], "jax's CNN loss")
        hmc_xla = jit(get("hmc"), backend="xla")     # its keys and draws XLA's own (dsl/backends/xla/keyed.py)
        _close(hmc_xla(q0, key, cfg["samples"])[0], mean, "HMC's mean on XLA")
        fns.update({"jax gp": lambda: jgp(p0)[0].block_until_ready(),
                    "xla hmc": lambda: hmc_xla(q0, key, cfg["samples"]),
                    "jax newton": lambda: jnewton(w0).block_until_ready(),
                    "jax hmc": lambda: jhmc(q0, jkey).block_until_ready(),
                    "jax cnn": lambda: jcnn(params)[0].block_until_ready()})
    else:
        notes.append(MISSING_JAX)
    times = measure(fns, cfg["reps"])
    ms = {name: median(ts) * 1e3 for name, ts in times.items()}
    first = _first_call(make_hmc, lambda f: f(q0, key, cfg["samples"]), cfg["firsts"]) * 1e3
    firsts["without keys, first call"] = _first_call(lambda: jit(get("hmc_stream")),
                                                     lambda f: f(q0, cfg["samples"]), 1) * 1e3
    solve_alone = measure({"solve": lambda: solve(h, g), "loops": lambda: solve_loops(h, g)}, cfg["reps"])
    solve_ms = {name: median(ts) * 1e3 for name, ts in solve_alone.items()}

    def ref(name):
        return {"jax.jit": ms[f"jax {name}"]} if f"jax {name}" in ms else {}
    hmc_refs = {**ref("hmc"), **({"dg on XLA": ms["xla hmc"]} if "xla hmc" in ms else {})}
    n, d, s = cfg["n"], cfg["d"], cfg["samples"]
    solver = "LAPACK's gesv through scipy" if ms["lapack solve"] < ms["numpy solve"] else "numpy.linalg.solve"
    floor_ms = ms["product"] - ms["numpy product"] + min(ms["numpy solve"], ms["lapack solve"])
    floor = floor_ms / ms["newton_loops"]
    note = "; ".join(notes)
    return [
        make_row("GP likelihood and gradient: cholesky against loops", "ms/call", ms["gp"],
                 {"the same as loops": ms["gp_loops"], "without scipy": ms["gp without scipy"], **ref("gp")},
                 ms["gp"] / ms["gp_loops"], "the same as loops",
                 "<= 0.1x the loops", None if smoke else ms["gp_loops"] >= 10 * ms["gp"],
                 f"jit(value_and_grad) of the negative log marginal likelihood of {n} points; cholesky and "
                 f"the triangular solves by LAPACK's potrf and trtrs through scipy (the xla extra installs it), "
                 f"'without scipy': numpy's cholesky and general solve, "
                 f"{ms['gp without scipy'] / ms['gp_loops']:.2g}x the loops"
                 + (f"; {note}" if note else "")),
        make_row("Newton step: solve against loops", "ms/call", ms["newton"],
                 {"the same as loops": ms["newton_loops"], **ref("newton")}, ms["newton"] / ms["newton_loops"],
                 "the same as loops", "<= 0.1x the loops",
                 None if smoke else ms["newton_loops"] >= 10 * ms["newton"],
                 f"jit of one step of L2-regularised logistic regression in {d} dimensions (grad, hessian, "
                 f"solve). Floor: the same step with a product h @ g where the solve goes takes "
                 f"{ms['product']:.3g} ms; less numpy's product ({ms['numpy product']:.2g} ms), plus "
                 f"the quicker solve of the system ({solver}, {min(ms['numpy solve'], ms['lapack solve']):.2g} ms; "
                 f"numpy.linalg.solve {ms['numpy solve']:.2g}): {floor_ms:.3g} ms, "
                 f"{floor:.3f}x the loops' step" + (", so no jit's solve brings the step to 0.1x" if floor > 0.1 else "")
                 + "; the solve is the next row"),
        make_row("Newton's solve against loops", "ms/call", solve_ms["solve"], {"the same as loops": solve_ms["loops"]},
                 solve_ms["solve"] / solve_ms["loops"], "the same as loops", "<= 0.1x the loops",
                 None if smoke else solve_ms["loops"] >= 10 * solve_ms["solve"],
                 f"jit of solve(h, g) against Gaussian elimination and back substitution as dg loops, "
                 f"the {d}x{d} hessian of the step above"),
        make_row("HMC with keys, first call", "ms", first, dict(firsts),
                 first / firsts["without keys, first call"], "without keys, first call", "-", None,
                 f"{s} samples; jit's first call: staging, compiling and running once; the sampling loop "
                 "stages once with keys carried by the loop and without keys (draws from the interpreter's "
                 "stream)"),
        make_row("HMC with keys, later calls", "ms/call", ms["hmc"], hmc_refs,
                 ms["hmc"] / ms["jax hmc"] if "jax hmc" in ms else None, "jax.jit" if "jax hmc" in ms else None,
                 "-", None, f"{s} samples, 10 leapfrog steps each, on a correlated 2-d Gaussian; 'dg on XLA': "
                 "jit(backend=\"xla\"), its splits and draws computed by XLA (numpy's numbers; normal draws to 1e-13 relative)"),
        make_row("CNN loss and gradient", "ms/call", ms["cnn"], ref("cnn"),
                 ms["cnn"] / ms["jax cnn"] if "jax cnn" in ms else None, "jax.jit" if "jax cnn" in ms else None,
                 "-", None, f"a batch of {cfg['batch']}: two 3x3 convolutions (8 and 16 channels) on 8x8 images, "
                 "max_pool, a dense layer"),
    ]
