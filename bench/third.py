"""Third derivatives through a loop (bench/programs/third.dg): jit(grad(grad(grad(f)))) of a
1,000-step loop against jit(grad(f)) of the same loop, first call and later calls, with
jax.jit of the same derivative (lax.fori_loop) beside them where JAX is installed. The value is
checked against third-order Taylor arithmetic by hand."""

import math

from .engines import MISSING_JAX, dg_program, jax_or_none, printed_by_new_process
from .jaxpr_floats import python_of
from .loops import _first_call
from .report import make_row
from .timing import measure, median

FULL = {"steps": 1000, "reps": 9, "firsts": 3}
SMOKE = {"steps": 10, "reps": 2, "firsts": 1}
H = 0.001
X0 = 0.5


def third_by_hand(x, steps):
    """d3 s / dx3 by truncated Taylor series in x (coefficients c0..c3, c_k = f^(k) / k!)."""
    def mul(a, b):
        return [sum(a[i] * b[k - i] for i in range(k + 1)) for k in range(4)]

    def sin_cos(u):
        s, c = [math.sin(u[0])] + [0.0] * 3, [math.cos(u[0])] + [0.0] * 3
        for k in range(1, 4):
            s[k] = sum(j * u[j] * c[k - j] for j in range(1, k + 1)) / k
            c[k] = -sum(j * u[j] * s[k - j] for j in range(1, k + 1)) / k
        return s, c

    xs = [x, 1.0, 0.0, 0.0]
    s = list(xs)
    for _ in range(steps):
        sine, _ = sin_cos(s)
        step = mul(sine, xs)
        s = [a + H * b for a, b in zip(s, step)]
    return 6.0 * s[3]


def third_floats(x, steps):
    """The same derivative by third-order Taylor arithmetic written out by hand on Python floats:
    the least work a Python loop can do for it (the later-calls row's floor for Python code)."""
    sin, cos = math.sin, math.cos
    s0, s1, s2, s3 = x, 1.0, 0.0, 0.0
    for _ in range(steps):
        sn, cs = sin(s0), cos(s0)
        sn1, cs1 = s1 * cs, -s1 * sn
        sn2 = (s1 * cs1 + 2.0 * s2 * cs) * 0.5
        cs2 = -(s1 * sn1 + 2.0 * s2 * sn) * 0.5
        sn3 = (s1 * cs2 + 2.0 * s2 * cs1 + 3.0 * s3 * cs) / 3.0
        s0, s1, s2, s3 = s0 + H * sn * x, s1 + H * (sn1 * x + sn), s2 + H * (sn2 * x + sn1), s3 + H * (sn3 * x + sn2)
    return 6.0 * s3


def _jax_loop(jax, steps):
    """The loop in JAX, as lax.fori_loop."""
    jnp, lax = jax.numpy, jax.lax
    return lambda x: lax.fori_loop(0, steps, lambda _, s: s + H * jnp.sin(s) * x, x)


def _floors(jax, steps):
    """JAX's own staged programs of grad and grad(grad(grad)) of the loop, run as Python on
    floats (bench/jaxpr_floats.py): {order: the program as a Python function}."""
    f = _jax_loop(jax, steps)
    return {1: python_of(jax.make_jaxpr(jax.grad(f))(X0)),
            3: python_of(jax.make_jaxpr(jax.grad(jax.grad(jax.grad(f))))(X0))}


def _jax_orders(jax, steps):
    """jax.jit(grad(f)) and jax.jit(grad(grad(grad(f)))) of the loop: JAX's own ratio of the two
    is the reference for what linearize + transpose costs per order."""
    f, jnp = _jax_loop(jax, steps), jax.numpy
    first, third = jax.jit(jax.grad(f)), jax.jit(jax.grad(jax.grad(jax.grad(f))))
    return lambda x: float(first(jnp.float64(x))), lambda x: float(third(jnp.float64(x)))


FIRST_JAX = """
import statistics, time
from bench.engines import jax_or_none
from bench.third import X0, _jax_loop
jax = jax_or_none()
firsts, traces = {1: [], 3: []}, {1: [], 3: []}
def made(order):
    g = _jax_loop(jax, STEPS)       # a new function: nothing of it traced or compiled yet
    for _ in range(order):
        g = jax.grad(g)
    return jax.jit(g)
x = jax.numpy.float64(X0)
for _ in range(FIRSTS):
    for order in (1, 3):
        g = made(order)
        t0 = time.process_time()
        g.trace(x).lower()
        traces[order].append(time.process_time() - t0)
        g = made(order)
        t0 = time.process_time()
        float(g(x))
        firsts[order].append(time.process_time() - t0)
print(*[statistics.median(d[o]) for d in (firsts, traces) for o in (1, 3)])
"""


def _jax_first_calls(cfg):
    """jax.jit's first calls of grad and of grad(grad(grad)) of the loop in a new process, where
    no compilation cache is set (this process's dg on XLA sets JAX's): (first call of each
    order, tracing and lowering of each order), in ms."""
    code = FIRST_JAX.replace("FIRSTS", str(cfg["firsts"])).replace("STEPS", str(cfg["steps"]))
    return [t * 1e3 for t in printed_by_new_process(code)]


def run(smoke):
    """The first-call and later-call rows."""
    cfg = SMOKE if smoke else FULL
    steps = cfg["steps"]
    interp = dg_program("third")
    jit, grad, f = interp.lookup("jit"), interp.lookup("grad"), interp.lookup("f")

    def first_order():
        return jit(grad(f))

    def third_order():
        return jit(grad(grad(grad(f))))

    g1, g3 = first_order(), third_order()
    want = third_by_hand(X0, steps)
    got = g3(X0, steps)
    if abs(got - want) > 1e-9 * max(1.0, abs(want)):
        raise AssertionError(f"jit(grad(grad(grad(f)))) gave {got}, by hand {want}")
    if abs(third_floats(X0, steps) - want) > 1e-9 * max(1.0, abs(want)):
        raise AssertionError("the Taylor arithmetic on floats differs from the one by hand")
    fns = {"jit(grad)": lambda: g1(X0, steps), "jit(grad(grad(grad)))": lambda: g3(X0, steps),
           "floats": lambda: third_floats(X0, steps)}
    notes = []
    jax = jax_or_none()
    if jax is not None:
        j1, j3 = _jax_orders(jax, steps)
        if abs(j3(X0) - want) > 1e-9 * max(1.0, abs(want)):
            raise AssertionError("jax's third derivative differs from the one by hand")
        x1, x3 = jit(grad(f), backend="xla"), jit(grad(grad(grad(f))), backend="xla")
        if abs(x3(X0, steps) - want) > 1e-9 * max(1.0, abs(want)):
            raise AssertionError("dg's third derivative on XLA differs from the one by hand")
        floors = _floors(jax, steps)
        if abs(floors[3](X0)[0] - want) > 1e-9 * max(1.0, abs(want)):
            raise AssertionError("JAX's program of the third derivative, as Python, differs from the one by hand")
        fns.update({"jax": lambda: j3(X0), "jax1": lambda: j1(X0),
                    "xla": lambda: x3(X0, steps), "xla1": lambda: x1(X0, steps),
                    "floor1": lambda: floors[1](X0), "floor3": lambda: floors[3](X0)})
    else:
        notes.append(MISSING_JAX)
    times = measure(fns, cfg["reps"])
    ms = {name: median(ts) * 1e3 for name, ts in times.items()}
    first1 = _first_call(first_order, lambda g: g(X0, steps), cfg["firsts"]) * 1e3
    first3 = _first_call(third_order, lambda g: g(X0, steps), cfg["firsts"]) * 1e3
    jax_ref = {"jax.jit": ms["jax"], "jax.jit(grad)": ms["jax1"],
               "dg on XLA": ms["xla"], "jit(grad) on XLA": ms["xla1"],
               "JAX's program as Python": ms["floor3"], "JAX's grad program as Python": ms["floor1"]} if "jax" in ms else {}
    later = ms["jit(grad(grad(grad)))"] / ms["jit(grad)"]
    what = f"d3/dx3 of a {steps}-step loop s <- s + {H} sin(s) x"
    later_notes = list(notes)
    if "jax" in ms:
        later_notes.append(f"the same ratio for jax.jit, whose loops are compiled: {ms['jax'] / ms['jax1']:.3g}x; "
                           f"for dg on XLA: {ms['xla'] / ms['xla1']:.3g}x")
        later_notes.append(f"FLOOR: JAX's own linearize + transpose programs of the two derivatives, run as Python on "
                           f"floats (one line per operation, repeated ones merged), take {ms['floor3'] / ms['floor1']:.3g}x: "
                           f"the method's floor for code that runs each operation as a Python operation, above the target")
    first_refs, first_notes = {"jit(grad), first call": first1}, [what + "; the loop and its pullbacks are Scan steps"]
    if "jax" in ms:
        jf1, jf3, jt1, jt3 = _jax_first_calls(cfg)
        first_refs.update({"jax.jit(grad), first call": jf1, "jax.jit, first call": jf3})
        first_notes.append(f"FLOOR: the same method in JAX (jax.jit of grad and of grad(grad(grad)), each a new "
                           f"function, in a new process without a compilation cache) takes {jf3 / jf1:.3g}x for "
                           f"its first call, its tracing and lowering alone {jt3 / jt1:.3g}x: staging and "
                           f"compiling eight loops against two costs more than the target allows")
    return [
        make_row("jit(grad(grad(grad))) through a loop, first call", "ms", first3,
                 first_refs, first3 / first1, "jit(grad), first call",
                 "<= 3x jit(grad)", None if smoke else first3 <= 3.0 * first1,
                 "; ".join(first_notes + notes)),
        make_row("jit(grad(grad(grad))) through a loop, later calls", "ms/call", ms["jit(grad(grad(grad)))"],
                 {"jit(grad)": ms["jit(grad)"], "Taylor on floats by hand": ms["floats"], **jax_ref}, later,
                 "jit(grad)", "<= 4x jit(grad)", None if smoke else later <= 4.0,
                 f"{what}; eight compiled Python loops (the Scan and the Scans of its pullbacks) of 1 to 165 "
                 f"steps per iteration; hand-written Taylor arithmetic on floats does the derivative in "
                 f"{ms['floats'] / ms['jit(grad)']:.2g}x jit(grad)" + "".join("; " + n for n in later_notes)),
    ]
