"""Benchmark 1: scalar overhead, microseconds per `*` or `+`, forward and backward."""

from .engines import MISSING_AUTOGRAD, MISSING_TORCH, autograd_or_none, dg_program, torch_or_none
from .report import make_row
from .timing import measure, median

FULL = {"iterations": 5000, "reps": 7}      # 5000 x (one * and one +) = 10,000 operations
SMOKE = {"iterations": 50, "reps": 2}
X = 0.5


def chain_python(x, n):
    """The same loop as bench/programs/scalar.dg, in Python (for autograd)."""
    acc = 0.0
    for _ in range(n):
        acc = acc * x + x
    return acc


def torch_grad(torch, n):
    """d chain / dx with 0-d float64 tensors and backward()."""
    x = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    acc = torch.tensor(0.0, dtype=torch.float64)
    for _ in range(n):
        acc = acc * x + x
    acc.backward()
    return x.grad.item()


def expected_grad(x, n):
    """The exact derivative of chain at x, by the same recurrence differentiated by hand."""
    acc, dacc = 0.0, 0.0
    for _ in range(n):
        acc, dacc = acc * x + x, dacc * x + acc + 1.0
    return dacc


def run(smoke):
    """Time grad of the chain in dg, autograd and torch; one row."""
    cfg = SMOKE if smoke else FULL
    n = cfg["iterations"]
    ops = 2 * n
    want = expected_grad(X, n)
    # the overhead of recording each operation: the loop written out, as an interpreter keeping
    # tapes runs it; `dg run` rolls it into one compiled step (dsl/transform/jit/eager_loops.py), shown beside
    dchain = dg_program("scalar", keep_tape=True).lookup("dchain")
    rolled = dg_program("scalar").lookup("dchain")
    fns = {"dg": lambda: dchain(X, n), "dg rolled": lambda: rolled(X, n)}
    notes = []
    ag = autograd_or_none()
    if ag is not None:
        agrad = ag.grad(chain_python)
        fns["autograd"] = lambda: agrad(X, n)
    else:
        notes.append(MISSING_AUTOGRAD)
    torch = torch_or_none()
    if torch is not None:
        fns["torch"] = lambda: torch_grad(torch, n)
    else:
        notes.append(MISSING_TORCH)
    for name, fn in fns.items():
        got = float(fn())
        if abs(got - want) > 1e-9 * max(1.0, abs(want)):
            raise AssertionError(f"scalar: {name} computed gradient {got}, expected {want}")
    times = measure(fns, cfg["reps"])
    per_op = {name: median(ts) / ops * 1e6 for name, ts in times.items()}
    refs = {"autograd": per_op.get("autograd"), "torch": per_op.get("torch"), "loop rolled": per_op["dg rolled"]}
    ratio = per_op["dg"] / per_op["autograd"] if "autograd" in per_op else None
    met = None if smoke or ratio is None else ratio <= 1.0
    if ratio is not None:
        notes.insert(0, f"stretch target <= 0.6x autograd: {'met' if ratio <= 0.6 else 'missed'}")
    if "torch" in per_op:
        notes.insert(0, f"dg / torch = {per_op['dg'] / per_op['torch']:.2f}x")
    notes.insert(0, f"{ops:,} operations per gradient call, the loop written out (an interpreter keeping tapes); "
                    f"rolled, as `dg run` runs it: {per_op['dg rolled']:.3g} us/op")
    return [make_row("scalar overhead (grad)", "us/op", per_op["dg"], refs, ratio, "autograd",
                     "<= 1.0x autograd", met, "; ".join(notes))]
