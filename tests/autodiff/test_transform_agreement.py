"""The transformations agree with each other, on structured arguments (a struct, a map, a tuple,
nested ones, a tensor, a number) and through loops, branches, closures and nested transformations:
grad against central differences, jvp (<grad, t>), a vjp pullback, jacfwd, jit(grad) and vmap(grad);
Hessian-vector products by jvp of grad, by grad of <grad, t> and by differences of gradients, and
under jit. Each program runs in an interpreter keeping tapes (loops written out) and in one that
keeps none (loops rolled: dsl/transform/jit/eager_loops.py). A sweep of this kind found a pullback that kept
one of two cotangents of a structure and jvp through custom_vjp dropping a nested struct's tangent."""

import io

import pytest

import dsl

HELPERS = """struct S { a, b }
fn tdot(u, v) { return sum(tensor(tree_leaves(tree_map(fn(p, q) => sum(p * q), u, v)))) }
fn tdiff(u, v) { return max(tensor(tree_leaves(tree_map(fn(p, q) => max(abs(p - q) + zeros((1,))), u, v)))) + 0.0 }
fn tsc(u, s) { return tree_map(fn(p) => p * s, u) }
fn tadd(u, v) { return tree_map(fn(p, q) => p + q, u, v) }
"""

BODIES = {
    "tree_map": "return global_norm(tree_map(fn(v) => sin(v) * v, x)) ** 2",
    "for_loop": "let acc = 0.0\n for i in range(20) { acc = acc + tdot(x, tsc(x, cos(acc * 0.1))) * 0.05 }\n return acc",
    "structured_state": "let s = x\n for i in range(18) { s = tree_map(fn(v) => v * 0.9 + sin(v) * 0.1, s) }\n"
                        " return tdot(s, s)",
    "while_loop": "let acc = 0.0\n let k = 0\n while k < 7 { acc = acc + global_norm(tsc(x, acc + 1.0)) * 0.1\n"
                  " k += 1 }\n return acc",
    "closure": "let g = fn(v) => tdot(v, x)\n return g(tsc(x, 2.0)) * tdot(x, x)",
    "branch": "if tdot(x, x) > 1.0 { return tdot(x, x) * 0.5 } else { return tdot(x, x) * 2.0 }",
    "loop_over_leaves": "let acc = 0.0\n for v in tree_leaves(x) { acc = acc + sum(v * v * v) }\n return acc",
    "checkpoint": "return global_norm(checkpoint(fn(t) => tree_map(fn(v) => exp(v * 0.3), t))(x))",
    "custom_vjp": "let h = custom_vjp(fn(t) => tree_map(fn(v) => v * v, t), "
                  "fn(t, out, g) => (tree_map(fn(v, w) => 2.0 * v * w, t, g),))\n return global_norm(h(x)) ** 2",
    "pullback_of_a_pair": "return tdot(vjp(fn(y) => (y, y), x)[1]((x, tsc(x, 2.0)))[0], x)",
    "grad_inside": "return tdot(grad(fn(y) => tdot(y, y) * tdot(y, x))(x), x)",
    "jvp_inside": "return jvp(fn(y) => tdot(y, tree_map(fn(v) => v * v, y)), (x,), (x,))[1]",
    "vmap_inside": "return sum(vmap(fn(w) => tdot(x, tsc(x, w)))([1.0, 2.0]))",
    "jit_inside": "return jit(fn(y) => tdot(y, tsc(y, 3.0)))(x) * tdot(x, x)",
    "carried_tree": "let acc = x\n for i in range(20) { acc = tadd(tsc(acc, 0.8), tree_map(fn(v) => tanh(v), x)) }\n"
                    " return tdot(acc, acc)",
}
POINTS = {"struct": "S(1.5, [0.5, -2.0])", "map": '{"a": 0.7, "b": [0.5, -0.4]}', "tuple": "(0.3, [0.5, -0.2])",
          "nested": '{"a": S(0.5, 0.9), "c": (0.3, [1.0])}', "tensor": "[0.3, -0.7, 0.2]", "number": "0.6"}

CHECKS = """
fn f(x) {{ {body} }}
let p = {point}
let t = tree_map(fn(v) => v * 0.3 + 0.1, p)
let g = grad(f)(p)
let gt = tdot(g, t)
let e = 1e-6
let fd = (f(tadd(p, tsc(t, e))) - f(tadd(p, tsc(t, -e)))) / (2.0 * e)
let hv = jvp(grad(f), (p,), (t,))[1]
let scale = 1.0 + global_norm(hv)
let hfd = tsc(tadd(grad(f)(tadd(p, tsc(t, 1e-5))), tsc(grad(f)(tadd(p, tsc(t, -1e-5))), -1.0)), 1.0 / 2e-5)
let diffs = {{
    "central differences": abs(fd - gt) / (1.0 + abs(fd)),
    "jvp": abs(jvp(f, (p,), (t,))[1] - gt) / (1.0 + abs(gt)),
    "vjp": tdiff(vjp(f, p)[1](1.0)[0], g),
    "jacfwd": tdiff(jacfwd(f)(p), g),
    "jit(grad)": tdiff(jit(grad(f))(p), g),
    "vmap(grad)": tdiff(tree_map(fn(v) => v[0], vmap(grad(f))(tree_map(fn(v) => stack((v, v * 0.5)), p))), g),
    "grad of <grad, t>": tdiff(grad(fn(x) => tdot(grad(f)(x), t))(p), hv) / scale,
    "differences of gradients": tdiff(hv, hfd) / scale,
    "jit(jvp(grad))": tdiff(jit(fn(q, r) => jvp(grad(f), (q,), (r,))[1])(p, t), hv) / scale,
}}
"""
# central differences in float64: first derivatives to ~1e-9, second (of gradients) to ~1e-8
LIMITS = {"central differences": 1e-6, "differences of gradients": 1e-5}


@pytest.mark.parametrize("point", list(POINTS))
@pytest.mark.parametrize("body", list(BODIES))
@pytest.mark.parametrize("keep_tape", [True, False], ids=["written_out", "rolled"])
def test_the_transformations_agree(body, point, keep_tape):
    interp = dsl.Interpreter(stdout=io.StringIO(), keep_tape=keep_tape)
    interp.run(HELPERS + CHECKS.format(body=BODIES[body], point=POINTS[point]))
    diffs = interp.get("diffs")
    assert len(diffs) == 9
    bad = {k: v for k, v in diffs.items() if not v <= LIMITS.get(k, 1e-9)}
    assert not bad, bad
