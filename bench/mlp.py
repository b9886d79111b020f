"""Benchmarks 2 and 3: a 784-256-10 MLP training step (value and gradient), and structured parameters."""

import numpy as np

from .engines import MISSING_AUTOGRAD, MISSING_TORCH, autograd_or_none, dg_program, torch_or_none
from .report import make_row
from .timing import measure, median

FULL = {"sizes": (784, 256, 10), "batch": 256, "reps": 41}
SMOKE = {"sizes": (12, 8, 3), "batch": 4, "reps": 2}


def make_data(sizes, batch, seed=0):
    """Random float64 inputs, integer labels (as floats) and small random weights."""
    n_in, n_hid, n_out = sizes
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, n_in))
    y = rng.integers(0, n_out, batch).astype(np.float64)
    w1 = rng.standard_normal((n_in, n_hid)) * np.sqrt(2.0 / n_in)
    b1 = np.zeros(n_hid)
    w2 = rng.standard_normal((n_hid, n_out)) * np.sqrt(1.0 / n_hid)
    b2 = np.zeros(n_out)
    return (w1, b1, w2, b2), x, y


def numpy_step(params, x, y):
    """Forward and a hand-written backward in plain numpy: (loss, gradients)."""
    w1, b1, w2, b2 = params
    labels = y.astype(np.intp)
    n = x.shape[0]
    z1 = x @ w1 + b1
    h = np.maximum(z1, 0.0)
    logits = h @ w2 + b2
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    s = e.sum(axis=1, keepdims=True)
    rows = np.arange(n)
    loss = float(np.mean(np.log(s[:, 0]) - shifted[rows, labels]))
    dlogits = e / s
    dlogits[rows, labels] -= 1.0
    dlogits /= n
    dw2 = h.T @ dlogits
    db2 = dlogits.sum(axis=0)
    dz1 = dlogits @ w2.T
    dz1 *= z1 > 0
    dw1 = x.T @ dz1
    db1 = dz1.sum(axis=0)
    return loss, (dw1, db1, dw2, db2)


def autograd_step(ag):
    """value_and_grad of the same loss written for HIPS autograd (params as a tuple)."""
    anp = ag.numpy

    def loss(params, x, labels):
        """Mean cross-entropy of the MLP, through a stable log-softmax."""
        w1, b1, w2, b2 = params
        h = anp.maximum(x @ w1 + b1, 0.0)
        logits = h @ w2 + b2
        m = anp.max(logits, axis=1, keepdims=True)
        logp = logits - (m + anp.log(anp.sum(anp.exp(logits - m), axis=1, keepdims=True)))
        return -anp.mean(logp[anp.arange(x.shape[0]), labels])

    return ag.value_and_grad(loss)


def torch_step(torch, params, x, y):
    """A function computing (loss, gradients) with PyTorch float64 tensors."""
    tparams = [torch.tensor(p, requires_grad=True) for p in params]
    tx = torch.tensor(x)
    ty = torch.tensor(y.astype(np.int64))
    ce = torch.nn.functional.cross_entropy

    def step():
        """One value and gradient with torch."""
        w1, b1, w2, b2 = tparams
        loss = ce(torch.relu(tx @ w1 + b1) @ w2 + b2, ty)
        grads = torch.autograd.grad(loss, tparams)
        return loss.item(), grads

    return step


def check_same(name, got, want):
    """Fail loudly if an engine's loss or gradients differ from numpy's."""
    (gl, gg), (wl, wg) = got, want
    if not np.isclose(float(gl), wl, rtol=1e-9, atol=1e-12):
        raise AssertionError(f"mlp: {name} loss {gl} differs from numpy's {wl}")
    for a, b in zip(gg, wg):
        if not np.allclose(np.asarray(a), b, rtol=1e-7, atol=1e-12):
            raise AssertionError(f"mlp: {name} gradient differs from numpy's")


def check_float32(got, want):
    """The float32 step: float32 gradients within float32's precision of numpy's float64 ones."""
    loss, grads = got
    if abs(loss - want[0]) > 1e-4 * (1.0 + abs(want[0])):
        raise AssertionError(f"mlp: float32 loss {loss} differs from numpy's {want[0]}")
    for g, w in zip(grads, want[1]):
        if g.dtype != np.float32 or np.max(np.abs(g - w)) > 1e-3 * (1.0 + np.max(np.abs(w))):
            raise AssertionError("mlp: the float32 gradient is not float32, or differs from numpy's")


def run(smoke):
    """Time the MLP step in dg (flat and structured), numpy, autograd and torch; three rows."""
    cfg = SMOKE if smoke else FULL
    params, x, y = make_data(cfg["sizes"], cfg["batch"])
    interp = dg_program("mlp")
    step_flat, step_struct = interp.lookup("step_flat"), interp.lookup("step_struct")
    linear = interp.lookup("Linear")
    w1, b1, w2, b2 = params
    tree = {"hidden": linear(w=w1, b=b1), "out": linear(w=w2, b=b2)}

    def dg_struct():
        """The structured step, its gradients read back in numpy_step's order."""
        loss, g = step_struct(tree, x, y)
        return loss, (g["hidden"].w, g["hidden"].b, g["out"].w, g["out"].b)

    p32 = [a.astype(np.float32) for a in (w1, b1, w2, b2, x)]
    fns = {"dg": lambda: step_flat(w1, b1, w2, b2, x, y), "dg_struct": dg_struct,
           "numpy": lambda: numpy_step(params, x, y), "dg_float32": lambda: step_flat(*p32, y)}
    notes = []
    ag = autograd_or_none()
    if ag is not None:
        astep = autograd_step(ag)
        labels = y.astype(np.intp)
        fns["autograd"] = lambda: astep(params, x, labels)
    else:
        notes.append(MISSING_AUTOGRAD)
    torch = torch_or_none()
    if torch is not None:
        fns["torch"] = torch_step(torch, params, x, y)
    else:
        notes.append(MISSING_TORCH)
    want = numpy_step(params, x, y)
    for name, fn in fns.items():
        if name != "dg_float32":
            check_same(name, fn(), want)
    check_float32(fns["dg_float32"](), want)

    times = measure(fns, cfg["reps"])
    ms = {name: median(ts) * 1e3 for name, ts in times.items()}
    refs = {"numpy": ms["numpy"], "autograd": ms.get("autograd"), "torch": ms.get("torch")}
    shape = "-".join(map(str, cfg["sizes"])) + f", batch {cfg['batch']}"
    vs_numpy = ms["dg"] / ms["numpy"]
    rows = [make_row("MLP step vs numpy", "ms/step", ms["dg"], refs, vs_numpy, "numpy",
                     "<= 1.15x numpy", None if smoke else vs_numpy <= 1.15,
                     "; ".join([f"value_and_grad, {shape}, float64, flat tensor arguments"]
                               + ([f"dg / torch = {ms['dg'] / ms['torch']:.2f}x"] if "torch" in ms else [])
                               + notes))]
    if "autograd" in ms:
        vs_ag = ms["dg"] / ms["autograd"]
        rows.append(make_row("MLP step vs autograd", "ms/step", ms["dg"], {"autograd": ms["autograd"]},
                             vs_ag, "autograd", "< 1.0x autograd", None if smoke else vs_ag < 1.0))
    else:
        rows.append(make_row("MLP step vs autograd", "ms/step", ms["dg"], {"autograd": None}, None,
                             "autograd", "< 1.0x autograd", None, MISSING_AUTOGRAD))
    f32_ratio = ms["dg_float32"] / ms["dg"]
    rows.append(make_row("MLP step in float32", "ms/step", ms["dg_float32"], {"float64": ms["dg"]}, f32_ratio,
                         "float64", "<= 0.67x float64 (1.5x faster)", None if smoke else f32_ratio <= 1 / 1.5,
                         f"the same step with float32 parameters and inputs, {shape}; its gradients are float32"))
    struct_ratio = ms["dg_struct"] / ms["dg"]
    rows.append(make_row("structured parameters", "ms/step", ms["dg_struct"], {"flat": ms["dg"]},
                         struct_ratio, "flat", "<= 1.05x flat", None if smoke else struct_ratio <= 1.05,
                         "params as {\"hidden\": Linear(w, b), \"out\": Linear(w, b)} vs four tensor arguments"))
    return rows
