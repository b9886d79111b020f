"""Gradient truth by fuzzing: random programs over the differentiable builtins, their derivatives
checked against central differences and against each other.

Each program is a scalar function f(p, q, t) of a struct P {a, v, m} (a float, a vector of 4, a
4x4 matrix), a map {"u": vector, "k": float} and a tuple (vector, float, int, string), built from
random let-bound expressions over section 5's math, shape builtins, indexing, reductions,
structures made and read inside f, a `for` loop, helper functions and closures (some reading a part
of an argument through their capture, under checkpoint, jit, vmap or a loop). At a random
point and along random directions dp, dq, dt (trees like the arguments):

- reverse mode: <grad f, d> equals the central difference of f along d (first order);
- forward mode: jvp(f, x, d) equals <grad f, d> (both exact, so to rounding);
- second order, four ways: <grad <grad f, d>, e> (reverse over reverse), jvp of <grad f, d>
  along e (forward over reverse), <grad jvp(f, x, d), e> (reverse over forward) and the central
  difference of <grad f, d> along e agree.

A point where the central differences at two step sizes disagree lies near a kink (abs, relu,
max, clamp, sort, a branch): the example is dropped, not judged. A numerics error (an overflow
the program made) drops it too; any other error fails the test.

CI runs a bounded number of examples (derandomized); `DG_FUZZ_EXAMPLES=2000 pytest
tests/fuzz/test_grad_fuzz.py` runs a long random search.
"""

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import dsl
from dsl.errors import DgError
from fuzz_harness import fuzz_examples, long_run

pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")

# elementwise functions, as templates over one operand (written so that they stay finite)
SMOOTH = ["sin({})", "cos({})", "tanh({})", "sigmoid({})", "silu({})", "gelu({})", "erf({})", "exp(tanh({}))",
          "ln(1.0 + {0} * {0})", "log2(2.0 + {0} * {0})", "sqrt(1.0 + {0} * {0})", "log1p({0} * {0})",
          "expm1(tanh({}))", "({}) ** 2", "tanh({}) ** 3", "pow(1.5 + sin({}), 1.3)", "-({})", "neg({})"]
KINKED = ["abs({})", "relu({})"]
BINARY = ["({} + {})", "({} - {})", "({} * {})", "({} / (1.5 + sin({})))", "((1.2 + cos({})) ** tanh({}))",
          "maximum({}, {})", "minimum({}, {})", "pow(1.3 + tanh({}) * 0.5, {})"]


class Writer:
    """A random program from a seed (a failure's message holds its text)."""

    def __init__(self, seed):
        self.r = random.Random(seed)
        self.names = {"s": ["s0", "s1", "s2"], "v": ["v0", "v1", "v2"], "m": ["m0"]}
        self.lines = []

    def leaf(self, kind):
        """A variable of that kind (or a constant)."""
        if kind == "s" and self.r.random() < 0.1:
            return self.r.choice(["0.7", "-1.3"])
        return self.r.choice(self.names[kind])

    def expr(self, kind, depth=0):
        """A random expression of kind s (float), v (vector of 4) or m (4x4 matrix)."""
        r = self.r
        if depth >= 3 or r.random() < 0.25:
            return self.leaf(kind)
        e = lambda k: self.expr(k, depth + 1)
        choice = r.random()
        if choice < 0.3:
            return "(" + r.choice(SMOOTH + KINKED).format(e(kind)) + ")"     # a postfix [i] may follow
        if choice < 0.55:
            other = kind if kind == "s" or r.random() < 0.6 else r.choice(["s", "v"] if kind == "m" else ["s"])
            a, b = (e(kind), e(other)) if r.random() < 0.5 else (e(other), e(kind))
            return r.choice(BINARY).format(a, b)
        return getattr(self, "special_" + kind)(e)

    def special_s(self, e):
        """An expression of a float from tensors."""
        i, j = self.r.randrange(4), self.r.randrange(4)
        return self.r.choice([
            f"sum({e('v')})", f"mean({e('v')})", f"logsumexp({e('v')})", f"var({e('v')})",
            f"std({e('v')})", f"norm({e('v')})", f"prod(1.5 + tanh({e('v')}))", f"max({e('v')})",
            f"min({e('v')})", f"{e('v')}[{i}]", f"{e('m')}[{i}, {j}]", f"sum({e('m')})", f"mean({e('m')})",
            f"cross_entropy({e('m')}, [0, 2, 1, 3])", f"cross_entropy({e('m')}, softmax({e('m')}))",
            f"({e('v')} @ {e('v')})", f"einsum(\"i,i->\", {e('v')}, {e('v')})", f"logsumexp({e('m')})",
            f"sum(cumsum({e('v')}, 0) * [0.1, -0.2, 0.3, 0.4])", f"sum(sort({e('v')}) * [1.0, 2.0, 3.0, 4.0])",
        ])

    def special_v(self, e):
        """An expression of a vector of 4."""
        k = self.r.randrange(4)
        return self.r.choice([
            f"softmax({e('v')})", f"log_softmax({e('v')})", f"layer_norm({e('v')})",
            f"layer_norm({e('v')}, gamma={e('v')}, beta={e('v')})", f"cumsum({e('v')}, 0)", f"sort({e('v')})",
            f"({e('m')} @ {e('v')})", f"({e('v')} @ {e('m')})", f"sum({e('m')}, axis=0)",
            f"mean({e('m')}, axis=1)", f"max({e('m')}, axis=0)", f"logsumexp({e('m')}, axis=1)",
            f"{e('m')}[{k}]", f"{e('m')}[:, {k}]", f"where(arange(4) > 1.5, {e('v')}, {e('v')})",
            f"[{e('s')}, {e('s')}, {e('s')}, {e('s')}]", f"cat(({e('v')}[0:2], {e('v')}[2:4]))",
            f"gather({e('v')}, [3, 0, 2, 1])", f"{e('v')}[[1, 1, 0, 3]]", f"clamp({e('v')}, -0.5, 0.5)",
            f"ssm_scan(sigmoid({e('v')}), {e('v')}, {e('v')})", f"einsum(\"ij,j->i\", {e('m')}, {e('v')})",
            f"reshape({e('m')}, (16,))[4:8]", f"{e('v')}[::-1]", f"tensor(({e('s')}, {e('s')}, 0.5, {e('s')}))",
        ])

    def special_m(self, e):
        """An expression of a 4x4 matrix."""
        return self.r.choice([
            f"({e('m')} @ {e('m')})", f"transpose({e('m')})", f"softmax({e('m')})", f"softmax({e('m')}, axis=0)",
            f"log_softmax({e('m')})", f"layer_norm({e('m')})", f"batch_norm({e('m')})",
            f"batch_norm({e('m')}, gamma={e('v')}, beta={e('v')})", f"stack(({e('v')}, {e('v')}, v0, v1))",
            f"stack(({e('v')}, {e('v')}, v2, v0), axis=1)", f"cumsum({e('m')}, 1)",
            f"reshape(transpose(reshape({e('m')}, (2, 8))), (4, 4))",
            f"(reshape({e('v')}, (4, 1)) * reshape({e('v')}, (1, 4)))",
            f"einsum(\"ij,jk->ik\", {e('m')}, {e('m')})", f"where({e('m')} > 0.0, {e('m')}, {e('m')})",
            f"cat(({e('m')}[0:1], {e('m')}[1:4]), axis=0)", f"{e('m')}[[2, 0, 1, 3]]",
        ])

    def statement(self):
        """One statement binding a new name of a random kind, by one of the forms below."""
        kind = self.r.choice("ssvvm")
        name = f"{kind}{len(self.names[kind])}"
        form = self.r.choices(FORMS, weights=[w for _, w in FORMS])[0][0]
        self.lines.append(getattr(self, "form_" + form)(kind, name))
        self.names[kind].append(name)

    def form_let(self, kind, name):
        """let name = an expression."""
        return f"let {name} = {self.expr(kind)}"

    def form_for(self, kind, name):
        """A for loop over a range whose bound is an argument (an int)."""
        return (f"let {name} = {self.leaf(kind)}\n    for i in range(t[2]) {{ {name} = tanh({name} * 0.7 + "
                f"{self.expr(kind, 2)} * 0.3) }}")

    def form_for_branch(self, kind, name):
        """A for loop whose body branches on a traced value (jit runs such an if both ways)."""
        both = f" and {self.expr('s', 2)} < 0.5" if self.r.random() < 0.3 else ""
        return (f"let {name} = {self.leaf(kind)}\n    for i in range(t[2]) {{ if {self.expr('s', 2)} > 0.1{both} "
                f"{{ {name} = tanh({name} * 0.7 + {self.expr(kind, 2)} * 0.3) }} else {{ {name} = {name} * 0.5 }} }}")

    def form_rows(self, kind, name):
        """A for loop over the rows of a matrix, and one over a map's items."""
        return (f"let {name} = {self.expr(kind, 2)}\n    for row in {self.expr('m', 2)} {{ {name} += sum(row) * 0.1 }}\n"
                f"    for k, w in items({{\"a\": {self.expr('s', 2)}, \"b\": {self.expr('s', 2)}}}) {{ {name} -= w * 0.2 }}")

    def form_while(self, kind, name):
        """A while loop whose trip count is fixed."""
        return (f"let {name} = {self.expr(kind, 2)}\n    let k{name} = 0\n"
                f"    while k{name} < 2 {{ {name} = sin({name}) * 0.9 + 0.1\n        k{name} += 1 }}")

    def form_struct(self, kind, name):
        """A struct in a map in a tuple, updated by value and read back."""
        field = self.pick(kind, f'mp{name}["x"]')
        return (f"let st{name} = P(a={self.expr('s', 2)}, v={self.expr('v', 2)}, m={self.expr('m', 2)})\n"
                f"    let mp{name} = {{\"x\": st{name}, \"y\": ({self.expr(kind, 2)}, 1)}}\n"
                f"    mp{name}[\"x\"].v = tanh(mp{name}[\"x\"].v)\n"
                f"    mp{name}[\"x\"].a += {self.expr('s', 2)}\n"
                f"    let {name} = mp{name}[\"y\"][0] * 0.5 + {field}")

    def form_assign(self, kind, name):
        """A tensor written through an index: a slice, a reversed view, or an index tensor naming a
        position twice (numpy keeps the last write; only it passes a gradient on)."""
        e, r = self.expr, self.r
        if kind == "m":
            where, value = r.choice([("tensor([0, 0]), :", f"stack(({e('v', 2)}, {e('v', 2)}))"),
                                     (":, tensor([3, 1, 3])", f"{e('m', 2)}[:, 0:3]"), ("1:3, ::-1", e('s', 2))])
        else:
            where, value = r.choice([("tensor([1, 3, 1])", f"{e('v', 2)}[0:3]"), ("tensor([2, 2])", e('s', 2)),
                                     ("1:3", f"{e('v', 2)}[2:4]"), ("::-1", e('v', 2))])
        target = "m" if kind == "m" else "v"
        read = {"s": f"sum(w{name} * v0)", "v": f"w{name}", "m": f"w{name}"}[kind]
        return (f"let w{name} = {e(target, 1)} * 1.0\n    w{name}[{where}] = {value}\n"
                f"    let {name} = {read}")

    def form_tuple(self, kind, name):
        """A tuple destructured."""
        return f"let {name}, _{name} = ({self.expr(kind, 1)}, {self.expr('s', 2)})"

    def form_helper(self, kind, name):
        """A call of a top-level function."""
        return f"let {name} = helper({self.expr(kind, 1)}, {self.expr('s', 2)})"

    def form_closure(self, kind, name):
        """A closure over a value on the tape."""
        return (f"let sc{name} = {self.expr('s', 2)}\n"
                f"    let {name} = (fn(x) => x * sc{name} + sin(x))({self.expr(kind, 1)})")

    def form_captured(self, kind, name):
        """A closure that reads a part of an argument (a struct field, a map key, a tuple element, a
        structure inside a structure) through its capture, called plainly, under checkpoint, jit or
        vmap, from a closure inside it, or in a loop."""
        r = self.r
        read = r.choice(['p.a', 'q["k"]', 't[1]', 'p.v[1]', 'q["u"][2]', 't[0][3]', 'sum(p.m[0])'])
        other = r.choice(['q["k"]', 'p.a', 't[1]', 'sum(q["u"])'])
        body = r.choice([f"x * {read} + sin(x * {other})",
                         f"(fn(y) => y * {read})(x) + sin(x * {other})"])
        wrap = r.choice(["", "checkpoint", "jit", "vmap", "loop"] if kind != "s" else ["", "checkpoint", "jit", "loop"])
        closure = f"fn(x) => {body}"
        if wrap == "loop":
            return (f"let cl{name} = {closure}\n    let {name} = {self.expr(kind, 2)}\n"
                    f"    for i in range(t[2]) {{ {name} = tanh(cl{name}({name}) * 0.5) }}")
        called = f"{wrap}({closure})" if wrap else closure
        return f"let cl{name} = {called}\n    let {name} = cl{name}({self.expr(kind, 1)})"

    def early_capture(self):
        """A closure reading a slot of an argument that nothing has read yet (f's first statement):
        a structure's slot read once is one tape node, so a read inside checkpoint, jit or vmap
        must not be lost where that is the first read."""
        r = self.r
        kind = r.choice("svm")
        arg = r.choice({"s": ['p.a', 'q["k"]', 't[1]'], "v": ['p.v', 'q["u"]', 't[0]'], "m": ['p.m']}[kind])
        read = r.choice(['p.a', 'q["k"]', 't[1]', 'p.v[1]', 'q["u"][2]', 't[0][3]', 'p.m[1, 2]'])
        body = r.choice([f"x * {read} + sin(x)", f"(fn(y) => y * {read})(x) + cos(x * {read})"])
        wrap = r.choice(["", "checkpoint", "jit"] + (["vmap"] if kind != "s" else []))
        called = f"{wrap}(fn(x) => {body})" if wrap else f"fn(x) => {body}"
        return f"let early = ({called})({arg})"

    def form_branch(self, kind, name):
        """An if on a traced value."""
        return (f"let {name} = {self.leaf(kind)}\n"
                f"    if {self.expr('s', 2)} > 0.1 {{ {name} = {self.expr(kind, 2)} }} "
                f"else {{ {name} = {self.expr(kind, 2)} * 0.5 }}")

    def form_rules(self, kind, name):
        """checkpoint, custom_vjp (with an exact rule) or a piecewise function on the way."""
        return f"let {name} = {self.r.choice(['recomputed', 'ruled', 'piece'])}({self.expr(kind, 1)})"

    def form_inner(self, kind, name):
        """A derivative taken inside f of a function closing over f's values (no perturbation confusion)."""
        inner = self.r.choice([f"grad(fn(z) => sum(tanh(z * {self.expr('s', 2)})))",
                               f"fn(z) => jvp(fn(y) => sin(y) * {self.expr('s', 2)}, (z,), (ones_like(z) + 0.0,))[1]",
                               f"fn(z) => sum(jacfwd(fn(y) => tanh(y * {self.expr('s', 2)}))(z), axis=0)"]
                              [:2 if kind == "m" else 3])     # a matrix's Jacobian has four axes
        if kind == "s":
            return f"let {name} = sum(({inner})({self.expr('v', 1)}))"
        return f"let {name} = ({inner})({self.expr(kind, 1)})"

    def pick(self, kind, st):
        """A field of the struct st of that kind."""
        return {"s": f"{st}.a", "v": f"{st}.v", "m": f"{st}.m"}[kind]

    def program(self):
        """The function f and what the test reads: value, gradient, jvp and the second-order forms."""
        for _ in range(self.r.randint(2, 6)):
            self.statement()
        newest = [self.names[k][-1] for k in "svm"]
        result = (f"{newest[0]} + sum({newest[1]} * [0.3, -0.5, 0.7, 0.2]) + "
                  f"sum({newest[2]} * reshape(linspace(-1.0, 1.0, 16), (4, 4))) + 0.1 * {self.expr('s')}")
        body = "\n    ".join(self.lines)
        early = ""
        if self.r.random() < 0.3:
            early = self.early_capture() + "\n    "
            result += " + 0.3 * sum(early)"
        return PRELUDE + f"""
fn f(p, q, t) {{
    {early}    let s0 = p.a
    let v0 = p.v
    let m0 = p.m
    let v1 = q["u"]
    let s1 = q["k"]
    let v2 = t[0]
    let s2 = t[1]
    {body}
    return {result}
}}
""" + CHECKS


PRELUDE = """
struct P { a, v, m }
fn helper(x, y) { return tanh(x * y + 0.25) }
fn piece(x) { if sum(x) > 0.25 { return x * x } else { return 0.5 * x - 0.0625 } }
let recomputed = checkpoint(fn(x) => sin(x) * x)
let ruled = custom_vjp(fn(x) => tanh(x) * 2.0, fn(x, out, g) => (g * 2.0 * (1.0 - tanh(x) ** 2),))
"""

# the statement forms and how often each is written
FORMS = [("let", 50), ("for", 6), ("for_branch", 5), ("rows", 4), ("while", 4), ("struct", 8), ("tuple", 4), ("helper", 6),
         ("closure", 5), ("captured", 6), ("branch", 5), ("rules", 5), ("inner", 5),
         ("assign", 5)]

# The derivatives the test compares, in dg: <g, d> for trees like the arguments, f moved along
# a direction, and the first- and second-order forms.
CHECKS = """
fn dot(g, d) {
    return g[0].a * d[0].a + sum(g[0].v * d[0].v) + sum(g[0].m * d[0].m) + sum(g[1]["u"] * d[1]["u"]) +
        g[1]["k"] * d[1]["k"] + sum(g[2][0] * d[2][0]) + g[2][1] * d[2][1]
}
fn size_of(g, d) {
    return abs(g[0].a * d[0].a) + sum(abs(g[0].v * d[0].v)) + sum(abs(g[0].m * d[0].m)) +
        sum(abs(g[1]["u"] * d[1]["u"])) + abs(g[1]["k"] * d[1]["k"]) + sum(abs(g[2][0] * d[2][0])) +
        abs(g[2][1] * d[2][1])
}
fn moved(x, d, h) {
    return (P(a=x[0].a + h * d[0].a, v=x[0].v + h * d[0].v, m=x[0].m + h * d[0].m),
            {"u": x[1]["u"] + h * d[1]["u"], "k": x[1]["k"] + h * d[1]["k"]},
            (x[2][0] + h * d[2][0], x[2][1] + h * d[2][1], x[2][2], x[2][3]))
}
fn tangent(d) { return (d[0], d[1], (d[2][0], d[2][1], none, none)) }
fn at(x) { return f(x[0], x[1], x[2]) }
fn along(x, d, h) { return at(moved(x, d, h)) }
fn grad_dot(p, q, t, d) { return dot(grad(f, argnums=(0, 1, 2))(p, q, t), d) }
fn jvp_of(p, q, t, d) { return jvp(f, (p, q, t), tangent(d))[1] }

seed(SEED)
fn point() {
    return (P(a=randn((1,))[0], v=randn((4,)), m=randn((4, 4)) * 0.7), {"u": randn((4,)), "k": randn((1,))[0]},
            (randn((4,)), randn((1,))[0], 3, "label"))
}
let x = point()
let d = point()
let e = point()
let g = grad(f, argnums=(0, 1, 2))(x[0], x[1], x[2])
let first = dot(g, d)
let scale1 = size_of(g, d)
let forward = jvp_of(x[0], x[1], x[2], d)
let rr = dot(grad(grad_dot, argnums=(0, 1, 2))(x[0], x[1], x[2], d), e)
let fr = jvp(fn(p, q, t) => grad_dot(p, q, t, d), x, tangent(e))[1]
let rf = dot(grad(jvp_of, argnums=(0, 1, 2))(x[0], x[1], x[2], d), e)

# the same under jit (its second call runs the compiled code) and vmap (over the points x and d)
let gj = jit(grad(f, argnums=(0, 1, 2)))
let jit_first = (dot(gj(x[0], x[1], x[2]), d), dot(gj(x[0], x[1], x[2]), d))
let fj = jit(fn(p, q, t) => jvp(fn(p, q, t) => grad_dot(p, q, t, d), (p, q, t), tangent(e))[1])
let jit_fr = (fj(x[0], x[1], x[2]), fj(x[0], x[1], x[2]))
fn pair(a, b) { return stack((a, b)) }
fn row(gb, i) { return (P(a=gb[0].a[i], v=gb[0].v[i], m=gb[0].m[i]), {"u": gb[1]["u"][i], "k": gb[1]["k"][i]},
            (gb[2][0][i], gb[2][1][i], none, none))
}
let gv = vmap(grad(f, argnums=(0, 1, 2)), in_axes=(0, 0, none))(tree_map(pair, x[0], d[0]), tree_map(pair, x[1], d[1]), x[2])
let at_d = grad(f, argnums=(0, 1, 2))(d[0], d[1], x[2])
let vmapped = (dot(row(gv, 0), d), dot(row(gv, 1), e), dot(at_d, e))
"""


def central(fn, h):
    """The central difference of fn(h) at 0."""
    return (fn(h) - fn(-h)) / (2 * h)


def close(a, b, scale, rtol):
    """Whether a and b agree relative to the size of the terms that made them."""
    return abs(a - b) <= rtol * (abs(a) + abs(b) + scale + 1e-3)


@settings(max_examples=fuzz_examples(40), deadline=None, database=None, derandomize=not long_run(),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much], print_blob=True)
@given(st.integers(0, 2 ** 31))
def test_random_programs_have_the_derivatives_of_central_differences_in_every_mode(seed):
    source = Writer(seed).program().replace("SEED", str(seed % 1000))
    interp = dsl.Interpreter()
    try:
        interp.run(source)
    except DgError as err:
        assume(err.kind != "numerics")      # the program overflowed: nothing to judge
        raise AssertionError(f"{err}\n{source}") from err
    get = lambda name: float(interp.lookup(name))
    x, d, e = (interp.lookup(n) for n in "xde")
    along, grad_dot, moved = interp.lookup("along"), interp.lookup("grad_dot"), interp.lookup("moved")
    fd = [central(lambda h: along(x, d, h), h) for h in (1e-4, 1e-6)]
    first, scale1 = get("first"), get("scale1")
    assume(np.isfinite(first) and close(fd[0], fd[1], scale1, 1e-5))   # not near a kink
    assert close(first, fd[1], scale1, 1e-5), f"<grad f, d> {first} != central difference {fd[1]}\n{source}"
    assert close(get("forward"), first, scale1, 1e-9), f"jvp {get('forward')} != <grad f, d> {first}\n{source}"
    jit_first, jit_fr, vmapped = (tuple(float(v) for v in interp.lookup(n)) for n in ("jit_first", "jit_fr", "vmapped"))
    for got in jit_first:
        assert close(got, first, scale1, 1e-9), f"jit(grad) {got} != grad {first}\n{source}"
    assert close(vmapped[0], first, scale1, 1e-9), f"vmap(grad) {vmapped[0]} != grad {first}\n{source}"
    # at d too, where f is not near a kink or chaotic there (pow(b, pow(b, s)) with a large s: its
    # gradient of 1e24 turns with the last bit of s, which vmap's products may round otherwise)
    fd_d = [central(lambda h: along((d[0], d[1], x[2]), e, h), h) for h in (1e-4, 1e-6)]
    if close(fd_d[0], fd_d[1], 0.0, 1e-5):
        assert close(vmapped[1], vmapped[2], abs(vmapped[2]), 1e-9), f"vmap(grad) {vmapped[1]} != grad {vmapped[2]}\n{source}"
    rr, fr, rf = get("rr"), get("fr"), get("rf")
    fd2 = [central(lambda h: grad_dot(*moved(x, e, h), d), h) for h in (1e-4, 1e-6)]
    scale2 = abs(rr) + abs(fd2[1])
    assume(close(fd2[0], fd2[1], scale2, 1e-4))
    assert close(rr, fd2[1], scale2, 1e-4), f"reverse over reverse {rr} != central difference {fd2[1]}\n{source}"
    assert close(fr, rr, scale2, 1e-8), f"forward over reverse {fr} != reverse over reverse {rr}\n{source}"
    assert close(rf, rr, scale2, 1e-8), f"reverse over forward {rf} != reverse over reverse {rr}\n{source}"
    for got in jit_fr:
        assert close(got, fr, scale2, 1e-9), f"jit of forward over reverse {got} != {fr}\n{source}"
