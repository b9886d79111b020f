"""Differential fuzzing of jit: random programs with loops, run compiled and in the interpreter.

Each program is a function of a float p, a vector w, a matrix m and rows xs, whose `for` loop
over the rows updates a struct, a tuple, a map, floats and an int counter by random
expressions: conditions on traced values, row reads, matmuls, helper calls, a gradient inside
the body, a `break`, a `while` whose trip count depends on the data, prints, random draws,
stop_gradient, custom_vjp and checkpoint. The function is called through one composition of jit with another
transformation (jit of value_and_grad, grad of jit, vmap of jit, ...) on four sets of random
arguments, so that later calls run the compiled code or take another path; every result must
equal the interpreter's (to 1e-12: compiled code may order a sum differently), what it prints
the interpreter's, and an error the interpreter's error. Found this way: a rolled loop that
nothing read was left out of its recording, with its guards; a guard failing in a loop vmap
replayed escaped as Python's exception; stop_gradient and custom_vjp were lost to derivatives
taken through a recording (docs/decisions.md).

CI runs a bounded number of examples (derandomized); `DG_FUZZ_EXAMPLES=2000 pytest
tests/fuzz/test_jit_fuzz.py` runs a long random search. The programs compare no two values that
are equal up to rounding (a sum of a softmax, which is 1.0 give or take its last bit): a batched
or compiled sum may round the other way, as a sum in another order does, and such a condition
would go another way without a bug.
"""

import io
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import dsl
from dsl.errors import DgError
from fuzz_harness import fuzz_examples, long_run

# dg raises Python's recursion limit for its call depth; hypothesis warns that it cannot restore it.
pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")

UNARY = ["sin", "cos", "tanh", "sigmoid", "abs", "relu", "gelu"]

# (a composition with jit, the same without it: the reference)
COMPOSITIONS = [
    ("jit(f)", "f"),
    ("jit(value_and_grad(f, argnums=(0, 1, 2)))", "value_and_grad(f, argnums=(0, 1, 2))"),
    ("jit(grad(f, argnums=(1, 3)))", "grad(f, argnums=(1, 3))"),
    ("grad(jit(f), argnums=(0, 1))", "grad(f, argnums=(0, 1))"),
    ("vmap(jit(f), in_axes=(0, none, none, none))", "vmap(f, in_axes=(0, none, none, none))"),
    ("jit(vmap(grad(f), in_axes=(0, none, none, none)))", "vmap(grad(f), in_axes=(0, none, none, none))"),
    ("jit(hessian(f))", "hessian(f)"),
    ("fn(p, w, m, xs) => jvp(jit(f), (p, w, m, xs), (1.0, w, m * 0.5, xs))",
     "fn(p, w, m, xs) => jvp(f, (p, w, m, xs), (1.0, w, m * 0.5, xs))"),
    ("jit(fn(p, w, m, xs) => jvp(grad(f, argnums=(0, 1)), (p, w, m, xs), (1.0, w, m, xs)))",
     "fn(p, w, m, xs) => jvp(grad(f, argnums=(0, 1)), (p, w, m, xs), (1.0, w, m, xs))"),
    ("jit(fn(p, w, m, xs) => jvp(f, (p, w, m, xs), (1.0, w, m * 0.5, xs)))",
     "fn(p, w, m, xs) => jvp(f, (p, w, m, xs), (1.0, w, m * 0.5, xs))"),
    # reverse mode through a jitted jvp (JT is bound after g, before g is called)
    ("grad(fn(p, w, m, xs) => JT(p, w, m, xs), argnums=(0, 1))\n"
     "let JT = jit(fn(p, w, m, xs) => jvp(f, (p, w, m, xs), (1.0, w, m, xs))[1])",
     "grad(fn(p, w, m, xs) => jvp(f, (p, w, m, xs), (1.0, w, m, xs))[1], argnums=(0, 1))"),
    ("fn(p, w, m, xs) => vjp(jit(f), p, w, m, xs)[1](1.5)", "fn(p, w, m, xs) => vjp(f, p, w, m, xs)[1](1.5)"),
    ("grad(fn(p, w, m, xs) => jit(f)(p, w, m, xs) * jit(f)(p * 0.5, w, m, xs), argnums=(0, 1))",
     "grad(fn(p, w, m, xs) => f(p, w, m, xs) * f(p * 0.5, w, m, xs), argnums=(0, 1))"),
    ("hessian(jit(f))", "hessian(f)"),
    ("jacfwd(jit(f), argnums=1)", "jacfwd(f, argnums=1)"),
    ("jacrev(jit(f), argnums=1)", "jacrev(f, argnums=1)"),
    ("grad(jit(grad(f)))", "grad(grad(f))"),
    # two reverse levels under jit: loops rolled there (dsl/core/primitives/loop_twice.py)
    ("jit(grad(grad(f)))", "grad(grad(f))"),
    ("jit(grad(fn(p, w, m, xs) => grad(f, argnums=(0, 1))(p, w, m, xs)[1] @ w + f(p, w, m, xs)))",
     "grad(fn(p, w, m, xs) => grad(f, argnums=(0, 1))(p, w, m, xs)[1] @ w + f(p, w, m, xs))"),
    # three reverse levels, and two with a forward one: loops rolled as Scan steps (dsl/core/primitives/scan.py)
    ("jit(grad(grad(grad(f))))", "grad(grad(grad(f)))"),
    ("jit(fn(p, w, m, xs) => jvp(grad(grad(f)), (p, w, m, xs), (1.0, w, m, xs)))",
     "fn(p, w, m, xs) => jvp(grad(grad(f)), (p, w, m, xs), (1.0, w, m, xs))"),
    ("jit(jit(f))", "f"),
]
JACFWD_OF_JIT = next(c for c in COMPOSITIONS if c[0].startswith("jacfwd("))
JIT_OF_HESSIAN = ("jit(hessian(f))", "hessian(f)")
JIT_OF_JVP = COMPOSITIONS[9]


class Writer:
    """Random dg source from a seed (a failure's message holds its program)."""

    def __init__(self, seed, keys=False, branch_grads=False):
        self.r = random.Random(seed)
        self.in_loop = False
        self.keys = keys        # half the draws from a key the loop carries (XLA calls them back)
        # a gradient may be taken in an if's branch, one whose numerics check fails on some
        # values (an if run both ways guards it where the branch is taken: lookahead.py)
        self.branch_grads = branch_grads

    def scalar(self, depth=0):
        """A float expression."""
        r = self.r
        if depth >= 3 or r.random() < 0.3:
            leaves = ["s.a", "p", "t[0]", "sum(s.v)", "s.v[1]", "w[0]", "0.5", "sum(s.v * w)", "max(s.v)",
                      "helper(p, s.a)", "sum(m @ s.v)", "d[\"k\"]", "clipped(s.a * p)", "sum(smooth(s.v))",
                      "piece(s.a)"]
            if self.in_loop:
                leaves += ["sum(xs[i])", "xs[i][1]", "(i * 0.1)", "(n * 0.1)", "sum(xs[n % shape(xs)[0]])"]
            return r.choice(leaves)
        kind = r.randrange(4)
        if kind == 0:
            return f"{r.choice(UNARY)}({self.scalar(depth + 1)})"
        if kind == 1:
            return f"({self.scalar(depth + 1)} {r.choice(['+', '-', '*'])} {self.scalar(depth + 1)})"
        if kind == 2:
            return f"({self.scalar(depth + 1)} / (1.5 + sin({self.scalar(depth + 1)})))"
        vector = self.vector(depth + 1)
        # a sum of a softmax (or of a where between softmaxes) is 1.0 give or take its last bit:
        # a condition between two of them goes the way the rounding goes, which another order of
        # summing or XLA's exp changes (seed 356 on XLA); weighted, it is a number like any other
        return f"sum({vector} * w)" if vector.startswith(("softmax(", "where(")) and "softmax(" in vector \
            else f"sum({vector})"

    def vector(self, depth=0):
        """A expression of a vector of 3."""
        r = self.r
        if depth >= 3 or r.random() < 0.3:
            leaves = ["s.v", "w", "(s.v * p)", "[s.a, t[1], 1.0]", "(w + s.a)", "(m @ s.v)", "(s.v @ m)"]
            if self.in_loop:
                leaves += ["xs[i]", "(xs[i] * s.a)"]
            return r.choice(leaves)
        kind = r.randrange(4)
        if kind == 0:
            return f"{r.choice(UNARY)}({self.vector(depth + 1)})"
        if kind == 1:
            other = self.vector(depth + 1) if r.random() < 0.5 else self.scalar(depth + 1)
            return f"({self.vector(depth + 1)} {r.choice(['+', '-', '*'])} {other})"
        if kind == 2:
            return (f"where({self.vector(depth + 1)} > {self.scalar(depth + 1)}, {self.vector(depth + 1)}, "
                    f"{self.vector(depth + 1)})")
        return f"softmax({self.vector(depth + 1)})"

    def statement(self, nested=False):
        """One statement of the loop body (no conditionals inside conditionals)."""
        r = self.r
        if self.branch_grads and r.random() < 0.5:
            kind = 8 if nested else 7
        else:
            kind = r.randrange(16 if not nested else 7)
        if kind == 0:
            return f"s.a = tanh({self.scalar()})"
        if kind == 1:
            return f"s.v = tanh({self.vector()})"
        if kind == 2:
            return f"t = (tanh({self.scalar()}), t[1])"
        if kind == 3:
            return f"s = State(tanh({self.scalar()}) * 0.5, s.v)"
        if kind == 4:
            return f"acc = acc + {self.scalar()} * 0.1"
        if kind == 5:
            return f"s.v[{r.randrange(3)}] = tanh({self.scalar()})"
        if kind == 6:
            return f"d[\"k\"] = tanh({self.scalar()})"
        if kind == 7:
            cond = f"{self.scalar()} > {self.scalar()}"
            if r.random() < 0.3:
                cond = f"{cond} {r.choice(['and', 'or'])} {'not ' if r.random() < 0.3 else ''}{self.scalar()} < 0.5"
            return f"if {cond} {{ {self.statement(True)} }} else {{ {self.statement(True)} }}"
        if kind == 8:
            if self.branch_grads and r.random() < 0.5:      # infinite where the square root's argument is 0
                return (f"let g = grad(fn(q) => sum(sqrt(q * q * {self.scalar()} + 0.05)))(s.v)\n"
                        f"        s.v = tanh(s.v - 0.1 * g)")
            return (f"let g = grad(fn(q) => sum(tanh(q * {self.scalar()})))(s.v)\n"
                    f"        s.v = tanh(s.v - 0.1 * g)")
        if kind == 9:
            return f"acc = acc + stop_gradient({self.scalar()}) * 0.1"
        if kind == 10:
            return f"print({self.scalar()} > 0.0)"
        if kind == 11:
            if self.keys and r.random() < 0.5:
                return self.keyed_draw()
            return f"s.a = tanh(s.a + 0.1 * randn(()) + {self.scalar()})"
        if kind == 13:
            return f"n += {r.randrange(1, 3)}"
        if kind == 12:      # a trip count that depends on the data
            return (f"let k = 0\n        while s.a < {self.scalar()} and k < 3 {{ s.a = s.a + 0.25\n"
                    f"            k += 1 }}")
        if kind == 14:      # a loop in the body: a step of the body's program (rolling.py)
            return (f"for j in range({r.choice([3, 4])}) {{ s.a = tanh(s.a + 0.25 * {self.scalar()})\n"
                    f"            s.v = tanh(s.v * 0.5 + {self.vector()}) }}")
        return f"if {self.scalar()} > 1.5 {{ break }}"

    def keyed_draw(self):
        """A draw from the key f carries: split on, folded with the row's index, or split three ways."""
        r = self.r
        which = r.randrange(3)
        if which == 0:
            return f"key = split(key)[0]\n        s.a = tanh(s.a + 0.1 * normal(key=key) + {self.scalar()})"
        if which == 1:
            return f"s.v = tanh(s.v + 0.1 * uniform(-1.0, 1.0, (3,), key=fold_in(key, i)) + {self.scalar()})"
        return f"s.v = tanh(s.v * bernoulli(0.7, (3,), key=split(key, 3)[2]) + {self.scalar()})"

    def program(self, with_while=False):
        """The function f(p, w, m, xs) and its helpers; `with_while`: a while loop after the `for`,
        whose trip count depends on the data, over random statements as well."""
        self.in_loop = True
        body = "\n        ".join(self.statement() for _ in range(self.r.randint(1, 4)))
        after = ""
        if with_while:
            # its counter is c: `i` (what the statements read) is an int computed from it. No bound
            # of 1.0: a sum of a softmax is 1.0 give or take its last bit, which XLA's exp rounds
            # otherwise (seed 141889829 ran its loop a different number of times on XLA)
            cond = f"{self.scalar()} < {self.r.choice(['0.5', '0.75', '2.0'])}"
            statements = "\n        ".join(self.statement() for _ in range(self.r.randint(1, 4)))
            after = (f"let c = 0\n    while {cond} and c < {self.r.choice([4, 9, 30])} {{\n"
                     f"        let i = c % shape(xs)[0]\n        {statements}\n        c += 1\n    }}\n    ")
        self.in_loop = False
        result = self.scalar()
        return f"""
struct State {{ a, v }}
fn helper(x, y) {{ return tanh(x * y + 0.25) }}
fn piece(x) {{ if x > 0.25 {{ return x * x }} else {{ return 0.5 * x - 0.0625 }} }}
let clipped = custom_vjp(fn(x) => tanh(x), fn(x, out, g) => (clamp(g, -0.5, 0.5),))
let smooth = checkpoint(fn(x) => sin(x) * x)
fn f(p, w, m, xs) {{
    let s = State(tanh(p), tanh(w * p))
    let t = (0.25, p)
    let d = {{"k": 0.5}}
    let acc = 0.0
    let n = 0{"" if not self.keys else chr(10) + "    let key = split(rng(3))[1]"}
    for i in range(shape(xs)[0]) {{
        {body}
    }}
    {after}return {result} + acc + t[0]
}}
"""


def leaves(v):
    """The numbers of a result, flattened."""
    if isinstance(v, (tuple, list)):
        return [x for part in v for x in leaves(part)]
    return list(np.ravel(np.asarray(v, dtype=float)))


def agree(got, want, backend="numpy"):
    """Whether two results hold the same numbers (to 1e-12; NaN equal to NaN). XLA computes exp,
    tanh and fused multiply-adds its own way: a value that cancels to near 0 keeps an error of
    the size of the terms' rounding, so its absolute tolerance is wider (docs/xla.md)."""
    x, y = leaves(got), leaves(want)
    atol = 1e-14 if backend == "numpy" else 1e-11
    return len(x) == len(y) and np.allclose(x, y, rtol=1e-12, atol=atol, equal_nan=True)


def first_line(err):
    """An error's first line (the frames that follow may add jit(...))."""
    return str(err).splitlines()[0]


@settings(max_examples=fuzz_examples(22), deadline=None, database=None, derandomize=not long_run(),
          suppress_health_check=[HealthCheck.too_slow], print_blob=True)
@given(st.integers(0, 2 ** 31), st.sampled_from(COMPOSITIONS), st.sampled_from([3, 5, 8]))
@example(5241, JACFWD_OF_JIT, 3)        # a recording that did not apply, cut from jacfwd's stage, took a guard
@example(271, JACFWD_OF_JIT, 5)         # ... and had left its prints there
@example(4338, JIT_OF_HESSIAN, 3)       # compiled code freed a value it checked at the end (UnboundLocalError)
@example(67108865, JIT_OF_HESSIAN, 3)   # a custom rule in a loop rolled under jvp of grad (reverse of P')
@example(429900, COMPOSITIONS[4], 3)     # vmap(jit(f)), a loop rolled from its first iteration: another draw
def test_random_loop_programs_give_the_interpreters_results_under_jit(seed, composition, rows):
    check_program(Writer(seed).program(), seed, composition, rows)


@settings(max_examples=fuzz_examples(20), deadline=None, database=None, derandomize=not long_run(),
          suppress_health_check=[HealthCheck.too_slow], print_blob=True)
@given(st.integers(0, 2 ** 31), st.sampled_from(COMPOSITIONS), st.sampled_from([3, 5, 8]))
@example(64099, JIT_OF_JVP, 3)     # a loop's int counter, a constant, went to its kernel as a float
@example(305019010, COMPOSITIONS[3], 3)     # grad(jit(f)): a recorded read of an int took a cotangent
@example(9999999, COMPOSITIONS[0], 3)       # a for loop rolled from its first iteration drew other numbers
@example(893, COMPOSITIONS[6], 3)   # a Scan of no iterations under jvp ran on the stage's boxes (a Python error)
def test_random_while_loop_programs_give_the_interpreters_results_under_jit(seed, composition, rows):
    # a while loop jit stages as one step runs until an iteration goes another way (its condition,
    # a break, a branch): the statement goes on as written from there
    check_program(Writer(seed).program(with_while=True), seed, composition, rows)


@settings(max_examples=fuzz_examples(10), deadline=None, database=None, derandomize=not long_run(),
          suppress_health_check=[HealthCheck.too_slow], print_blob=True)
@given(st.integers(0, 2 ** 31), st.sampled_from(COMPOSITIONS), st.sampled_from([3, 5, 8]), st.booleans())
def test_random_programs_drawing_from_keys_give_the_interpreters_results_under_jit(seed, composition, rows, w):
    check_program(Writer(seed, keys=True).program(with_while=w), seed, composition, rows)


@settings(max_examples=fuzz_examples(8), deadline=None, database=None, derandomize=not long_run(),
          suppress_health_check=[HealthCheck.too_slow], print_blob=True)
@given(st.integers(0, 2 ** 31), st.sampled_from(COMPOSITIONS), st.sampled_from([3, 5, 8]))
def test_random_programs_taking_gradients_in_branches_give_the_interpreters_results_under_jit(seed, composition,
                                                                                              rows):
    check_program(Writer(seed, branch_grads=True).program(), seed, composition, rows)


@pytest.mark.parametrize("seed", [63, 126])
def test_programs_the_fuzzer_found_with_every_nested_loop_rolled(seed, monkeypatch):
    # with every `for` in a rolled body a loop step (the numpy backend rolls those of 100
    # iterations or more): seed 63's forward-mode loop drew other numbers where its body drew
    # without a key and called a custom rule around a loop step (such a body's loops are written
    # out), and seed 126's print ran once per example under jacfwd (stage.batched_outputs)
    from dsl.transform.jit import rolling
    monkeypatch.setattr(rolling, "NESTED_MIN_ITEMS", 3)
    check_program(Writer(seed).program(with_while=True), seed, ("jacfwd(jit(f), argnums=1)", "jacfwd(f, argnums=1)"), 3)


def check_program(source, seed, composition, rows, backend="numpy"):
    """The program's `f` through a composition with jit gives what it gives without jit, call
    after call (values, output, errors); jit compiling for `backend`."""
    fast_src, slow_src = composition
    # two interpreters with the same seed: the compiled calls must print and draw what the
    # interpreter's do, call after call
    out = {"fast": io.StringIO(), "slow": io.StringIO()}
    fns = {}
    for name, src in (("fast", fast_src), ("slow", slow_src)):
        i = dsl.Interpreter(seed=0, stdout=out[name], backend=backend if name == "fast" else "numpy")
        i.run(source + f"\nlet g = {src}\n")
        fns[name] = i.lookup("g")
    rng = np.random.default_rng(seed)
    for call in range(4):
        p = rng.uniform(-1, 1, 2) if "vmap" in fast_src else float(rng.uniform(-1, 1))
        args = (p, rng.uniform(-1, 1, 3), rng.uniform(-1, 1, (3, 3)), rng.uniform(-1, 1, (rows, 3)))
        try:
            want = fns["slow"](*args)
        except DgError as err:
            with pytest.raises(DgError) as raised:
                fns["fast"](*args)
            assert first_line(raised.value) == first_line(err), source
            continue
        got = fns["fast"](*args)
        assert agree(got, want, backend), f"call {call}: {got} != {want}\n{source}"
        assert out["fast"].getvalue() == out["slow"].getvalue(), f"call {call}: printed differently\n{source}"
