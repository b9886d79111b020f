"""Closures that read a differentiated value through their capture: every way of capturing
(a struct field, a map key, a tuple element, a structure inside a structure, a tensor) from a
closure made inline, inside another closure, by a helper function or reading twice, under
checkpoint, jit, vmap and loops (eager, rolled and jitted, `for` and `while`), differentiated by grad with
one and several argnums, by jit of grad, by a mixed second derivative, hessian and vmap of grad.

The oracle is the same program without the wrapper (a loop's oracle is its closed form), so a
gradient that a wrapper loses or doubles shows up as a difference. checkpoint once lost it where
argnums named the captured argument beside another: the first run of the function inside the
checkpoint was discarded, and with it the tape node of the structure read it had recorded, which
the second run then found in the trace's cache of reads.
"""

import io
import itertools
import re

import pytest

import dsl
from dsl.errors import DgError

CAPTURES = {
    "field":  ("S([3.0, 4.0], 1.5)", "p.k"),
    "key":    ('{"k": [3.0, 4.0], "z": 1.0}', 'p["k"]'),
    "tuple":  ("([3.0, 4.0], 2.0)", "p[0]"),
    "nested": ('{"a": S([3.0, 4.0], 1.0)}', 'p["a"].k'),
    "deep":   ('(S(([3.0, 4.0], 0.5), 1.0),)', "p[0].k[0]"),
    "tensor": ("[3.0, 4.0]", "p"),
}
CLOSURES = {
    "inline": "fn(u) => u * {R} + sin({R})",
    "inner":  "fn(u) => (fn(v) => v * {R} + sin({R}))(u)",
    "made":   "mk(p)",
    "twice":  "fn(u) {{ let r = {R}\n let q = {R}\n return u * r + sin(q) }}",
}
CLOSED_FORM = "sum(g(a)) * 0.1 * ((1.01 ** 20 - 1.0) / 0.01)"      # what the loops below compute
WRAPPERS = {
    "checkpoint": "sum(checkpoint(g)(a))",
    "jit":        "sum(jit(g)(a))",
    "vmap":       "sum(vmap(g)(a))",
    "vmap_jit":   "sum(vmap(jit(g))(a))",
    "jit_checkpoint": "sum(jit(checkpoint(g))(a))",
    "for":        "fold_for(g, a)",
    "while":      "fold_while(g, a)",
    "jit_for":    "jit(fn(b) => fold_for(g, b))(a)",
    "jit_while":  "jit(fn(b) => fold_while(g, b))(a)",
}
OUTER = {
    "argnums 0":      "grad(loss, argnums=0)(A, P)",
    "argnums 1":      "grad(loss, argnums=1)(A, P)",
    "argnums (0, 1)": "grad(loss, argnums=(0, 1))(A, P)",
    "argnums (1, 0)": "grad(loss, argnums=(1, 0))(A, P)",
    "jit of grad":    "jit(grad(loss, argnums=(0, 1)))(A, P)",
    "mixed second":   "grad(fn(a, p) => sum(grad(loss, argnums=0)(a, p) * W), argnums=(0, 1))(A, P)",
    "hessian":        "hessian(loss)(A, P)",
    "vmap of grad":   "vmap(grad(loss, argnums=(0, 1)), in_axes=(0, none))(B, P)",
}
PRELUDE = """struct S { k, j }
fn fold_for(g, a) {
    let s = 0.0
    for i in range(20) { s = s + sum(g(a)) * 0.1 + s * 0.01 }
    return s
}
fn fold_while(g, a) {
    let s = 0.0
    let i = 0
    while i < 20 {
        s = s + sum(g(a)) * 0.1 + s * 0.01
        i += 1
    }
    return s
}
"""


def program(capture, closure, value, outer):
    """A loss(a, p) whose closure g reads p through its capture, and one derivative of it printed."""
    start, read = CAPTURES[capture]
    g = "mk(p)" if closure == "made" else CLOSURES[closure].format(R=read)
    return PRELUDE + f"""fn mk(p) {{ return fn(u) => u * {read} + sin({read}) }}
fn loss(a, p) {{
    let g = {g}
    return {value}
}}
let A = [[1.0, 2.0], [0.5, -1.0], [2.0, 0.25]]
let B = [A, A * 0.5]
let W = [[1.0, -2.0], [0.5, 0.3], [0.7, 1.1]]
let P = {start}
print({OUTER[outer]})
"""


def output(src, **options):
    """What the program printed, or its error's first line."""
    out = io.StringIO()
    try:
        dsl.Interpreter(stdout=out, **options).run(src, "<captures>")
    except DgError as err:
        return "error: " + str(err.settle()).splitlines()[0]
    return out.getvalue()


NUMBER = re.compile(r"-?\d+\.?\d*(?:e[-+]?\d+)?|nan|inf")


def agree(got, want):
    """The same printed structure, and numbers equal to rounding."""
    if NUMBER.sub("#", got) != NUMBER.sub("#", want):
        return False
    return all(abs(float(x) - float(y)) <= 1e-9 * max(1.0, abs(float(x)), abs(float(y)))
               for x, y in zip(NUMBER.findall(got), NUMBER.findall(want)))


@pytest.mark.parametrize("capture, closure", list(itertools.product(CAPTURES, CLOSURES)))
def test_a_captured_value_gets_its_gradient_under_every_wrapper(capture, closure):
    wrong = []
    for outer in OUTER:
        plain = output(program(capture, closure, "sum(g(a))", outer))
        looped = output(program(capture, closure, CLOSED_FORM, outer))
        assert not plain.startswith("error"), plain
        for wrapper, value in WRAPPERS.items():
            want = looped if wrapper.endswith(("for", "while")) else plain
            got = output(program(capture, closure, value, outer))
            if not agree(got, want):
                wrong.append(f"{wrapper} under {outer}: {got.strip()} instead of {want.strip()}")
            if wrapper in ("for", "while"):     # without a tape kept, the interpreter rolls the loop
                got = output(program(capture, closure, value, outer), keep_tape=False)
                if not agree(got, want):
                    wrong.append(f"{wrapper} rolled under {outer}: {got.strip()} instead of {want.strip()}")
    assert not wrong, "\n".join(wrong)


def test_the_checkpoint_case_as_reported(run):
    src = ('fn loss(a, p) { return sum(checkpoint(fn(u) => u + p["k"])(a)) }\n'
           'print(grad(loss, argnums=(0, 1))([1.0, 2.0], {"k": [3.0, 4.0]}))')
    assert run(src) == '([1.0, 1.0], {"k": [1.0, 1.0]})\n'


CUSTOM = """struct S { k, j }
fn loss(a, p) {
    let g = custom_vjp(fn(u) => u * p.k, fn(u, out, ct) => (ct * p.k,))
    return sum(g(a))
}
let A = [1.0, 2.0]
let P = S([3.0, 4.0], 1.5)
"""


@pytest.mark.parametrize("call", ["grad(loss, argnums=0)(A, P)", "jit(grad(loss, argnums=0))(A, P)",
                                  "vmap(grad(loss, argnums=0), in_axes=(0, none))([A, A], P)[1]"])
def test_custom_vjp_may_read_a_value_not_differentiated(run, call):
    assert run(CUSTOM + f"print({call})") == "[3.0, 4.0]\n"


def test_custom_vjp_with_no_argument_differentiated_is_differentiated_as_written(run):
    # its backward function is not asked for anything: the captured value's gradient is f's own
    assert run(CUSTOM + "print(grad(loss, argnums=1)(A, P))") == "S(k=[1.0, 2.0], j=0.0)\n"


@pytest.mark.parametrize("argnums", ["(0, 1)", "(1, 0)"])
def test_custom_vjp_reading_a_differentiated_value_through_its_closure_is_an_error(run_error, argnums):
    # its backward function gives gradients for its arguments only: the captured one would get none
    err = run_error(CUSTOM + f"print(grad(loss, argnums={argnums})(A, P))")
    assert err.kind == "grad" and "through its closure" in err.message
