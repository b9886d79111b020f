"""The README's performance table, made from a saved run (bench/results/latest.json) by
`python -m bench --docs`, so that its figures are the run's, never an older sitting's."""

START = "<!-- the performance table: python -m bench --docs -->"
END = "<!-- end of the performance table -->"


def times(v):
    """A ratio as the table writes it: two significant digits, 'x' behind."""
    if v >= 10:
        return f"{v:.0f}x"
    text = f"{v:.2g}"
    return f"{text if '.' in text or 'e' in text else text + '.0'}x"


def versus(ref_name, ref, dg_name, dg):
    """Which of two times is faster, and by how much (level within 5%)."""
    if abs(ref / dg - 1.0) <= 0.05:
        return f"{ref_name} level with {dg_name} ({times(ref / dg)} its time)"
    if ref < dg:
        return f"{ref_name} {times(dg / ref)} faster than {dg_name}"
    return f"{dg_name} {times(ref / dg)} faster than {ref_name}"


def table(rows):
    """The Markdown table of the README's Performance section from a run's rows."""
    by = {r["benchmark"]: r for r in rows}

    def dg(name):
        return by[name]["dg"]

    def ref(name, key):
        return by[name]["refs"][key]

    lines = ["| workload | dg | reference |", "|---|---|---|"]

    def add(workload, ours, theirs=""):
        lines.append(f"| {workload} | {ours} | {theirs} |")

    s = "scalar overhead (grad)"
    add("`grad` of scalar code, per operation", f"{times(dg(s) / ref(s, 'torch'))} PyTorch's 0-d tensors",
        f"{times(dg(s) / ref(s, 'autograd'))} HIPS autograd")
    m = "MLP step vs numpy"
    add("MLP 784-256-10 training step", f"{times(dg(m) / ref(m, 'numpy'))} hand-written numpy",
        versus("PyTorch eager", ref(m, "torch"), "dg", dg(m)))
    f32 = "MLP step in float32"
    add("the same step in float32", f"{times(ref(f32, 'float64') / dg(f32))} faster than float64")
    pj, pe = "projectile, jit", "projectile, eager"
    add("1,000-step simulation, `value_and_grad`",
        f"eager {times(dg(pe) / ref(pe, 'floor'))}, `jit` {times(dg(pj) / ref(pj, 'floor'))} a hand-written "
        f"Python floor", versus("`jax.jit`", ref(pj, "jax.jit"), "dg's jit", dg(pj)))
    rj, re_ = "RNN, jit", "RNN, eager"
    add("100-step RNN, `value_and_grad`",
        f"eager {times(dg(re_) / ref(re_, 'floor'))}, `jit` {times(dg(rj) / ref(rj, 'floor'))} a hand-written "
        f"numpy floor", versus("PyTorch eager", ref(rj, "torch"), "dg's eager", dg(re_)))
    gg = "jit(grad(grad)) vs eager"
    add("`jit(grad(grad(f)))`, 200 scalar operations", f"{times(ref(gg, 'eager') / dg(gg))} faster than eager",
        versus("`jax.jit`", ref(gg, "jax.jit"), "dg's jit", dg(gg)))
    t1, t3 = "jit(grad(grad(grad))) through a loop, first call", "jit(grad(grad(grad))) through a loop, later calls"
    as_python = ref(t3, "JAX's program as Python") / ref(t3, "JAX's grad program as Python")
    add("`jit(grad(grad(grad(f))))` through a 1,000-step loop",
        f"first call {times(by[t1]['ratio'])} `jit(grad(f))`'s, later calls {times(by[t3]['ratio'])} "
        f"({times(ref(t3, 'dg on XLA') / ref(t3, 'jit(grad) on XLA'))} on XLA; JAX's own programs run as Python: "
        f"{times(as_python)})",
        versus("`jax.jit`", ref(t3, "jax.jit"), "dg's jit", dg(t3)))
    gp = "GP likelihood and gradient: cholesky against loops"
    add("a GP's likelihood and gradient, 60 points",
        f"{times(ref(gp, 'the same as loops') / dg(gp))} faster than the same written as loops",
        versus("`jax.jit`", ref(gp, "jax.jit"), "dg's jit", dg(gp)))
    cnn = "CNN loss and gradient"
    add("a small CNN's loss and gradient, batch 64", "", versus("`jax.jit`", ref(cnn, "jax.jit"), "dg's jit", dg(cnn)))
    tr = "training loop, jitted adam step"
    add("a jitted adam training step, 300 steps", f"{times(ref(tr, 'eager') / dg(tr))} faster than eager, "
        f"its first call's staging included")
    # the steady-state rows the geometric mean row is taken over (not the first call's)
    xla = [r for r in rows if r["benchmark"].endswith('jit(backend="xla")') and r["ratio"] is not None
           and not r["benchmark"].startswith(("geometric mean", "projectile first call"))]
    ratios = [r["ratio"] for r in xla]
    gmean = by['geometric mean, jit(backend="xla")']["ratio"]       # bench/xla.py's, over the same rows
    px, hx = 'projectile, jit(backend="xla")', 'hessian, jit(backend="xla")'
    numpy_jit = "dg's numpy jit"
    add(f'`jit(f, backend="xla")`, {len(xla)} workloads (simulation, RNN, MLP, attention, Hessian, grad of grad, '
        f'RK4 fit)', f"{times(min(ratios))}-{times(max(ratios))} `jax.jit`, geometric mean {times(gmean)}",
        versus(numpy_jit, ref(px, "dg numpy jit"), "XLA", dg(px)) + " on the simulation, "
        + versus(numpy_jit, ref(hx, "dg numpy jit"), "XLA", dg(hx)) + " on a 20-point Hessian")
    return "\n".join(lines) + "\n"


def rewrite(text, rows):
    """The README's text with the table between START and END made from `rows`."""
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{table(rows)}{END}{tail}"
