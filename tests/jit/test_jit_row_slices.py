"""Slices between ints a rolled loop computes (`x[i:i + 3]`, a minibatch `x[k * b:(k + 1) * b]`,
`out[:, i:i + 2] = v`): n rows read and written by Rows and SetRows steps of the loop's body
(dsl/core/ops/structs.py), guarded to take n rows that are there, so the loop stays one step under
jit, grad, vmap and jvp, on numpy and on XLA; and the ints a loop carries (adam's step count)
stay values of the recording, so a jitted epoch is staged once, not once per call. Each case is
checked against the interpreter running the same function without jit."""

import io
import contextlib

import numpy as np
import pytest

import dsl
from dsl.core.primitives.namespaces import EAGER
from dsl.core.primitives.registry import PRIMS
from fuzz_harness import long_run

# subscripts read in a loop over i in range(4) of x of shape (6, 5, 4), and whether the loop stays
# one step (False: the slice clips at the end, or starts below 0, on some iteration, as numpy's
# slices do, so the loop is written out)
READS = [("x[i:i+2]", True), ("x[i:i+2, 1]", True), ("x[i:i+2, :, 1:3]", True), ("x[:, i:i+2]", True),
         ("x[1:3, i:i+2]", True), ("x[..., i:i+1]", True), ("x[1:3, i:i+2, 1:3, ...]", True),
         ("x[i:i+2, ..., [1.0, 3.0]]", True), ("x[i:i+2, i]", True), ("x[i:i+2][0]", True), ("x[i:i]", True),
         ("x[i:i+2, none]", True), ("x[0, i:i+2]", True), ("x[i, i:i+2]", True), ("x[i+1:i+3, ..., 0]", True),
         ("x[..., i]", True), ("x[0, :, i]", True), ("x[1:3, :, i]", True), ("x[i, [1.0, 3.0]]", True),
         ("x[i, [1.0, 3.0], 0]", True),
         ("x[:, :, i:i+2]", False), ("x[2*i:2*i+2]", False), ("x[-2:i]", False), ("x[i:5-i]", False),
         ("x[i, :, [1.0, 3.0]]", False)]
# targets written in the same loop, with the value written (v2 has shape (2, 5, 4))
WRITES = [("y[i:i+2]", "v2"), ("y[i:i+2]", "1.5"), ("y[i:i+2]", "v2[0]"), ("y[i:i+2]", "v2[:, 0:1]"),
          ("y[:, i:i+2]", "v2[0:1, 0:2, :]"), ("y[:, i:i+2]", "2.0"), ("y[i:i+2, 1]", "v2[:, 0]"),
          ("y[..., i:i+1]", "v2[0:1, :, 0:1]"), ("y[1:3, i:i+2, 0]", "v2[0, 0:2, 0:2]"),
          ("y[i, i:i+2]", "v2[0, 0:2]"), ("y[i:i+2, [1.0, 3.0]]", "v2[:, 0:2, :]"),
          ("y[i:i+2, 1:3, ..., 0]", "v2[:, 0:2, 0]"), ("y[..., i]", "v2[0, :, 0]"), ("y[0, :, i]", "v2[0, :, 0]"),
          ("y[i, [1.0, 3.0]]", "v2[0, 0:2]")]


def _read(sub):
    return f"fn f(x) {{ let s = 0.0; for i in range(4) {{ s = s + sum(sin({sub}) * (i + 1.0)) }}; return s }}"


def _write(target, value):
    return (f"fn f(x) {{ let y = x * 0.5; let v2 = x[0:2] * x[1:3]; for i in range(4) {{ {target} = {value}; "
            f"y = y * 1.1 + sin(y) * 0.1 }}; return sum(y * y) + sum(y[0]) }}")


CASES = [(sub, _read(sub), rolled) for sub, rolled in READS] + \
        [(f"{t} = {v}", _write(t, v), True) for t, v in WRITES]
X = np.random.default_rng(0).standard_normal((6, 5, 4))
XS = np.random.default_rng(1).standard_normal((3, 6, 5, 4))
TRANSFORMS = ("let jf = jit(f, explain=true)\nlet jg = jit(grad(f), explain=true)\nlet g = grad(f)\n"
              "let jv = jit(vmap(f), explain=true)\nlet v = vmap(f)\n"
              "let h = fn(x) => jvp(grad(f), (x,), (x * 0.3,))[1]\nlet jh = jit(h, explain=true)")


def test_slices_at_a_loops_variable_give_the_interpreters_values_and_keep_the_loop(backend):
    # on XLA each case compiles four programs (30 s for all of them, the suite's slowest test):
    # every third case there, all of them in a long run (the staging is the numpy backend's)
    cases = CASES if backend == "numpy" or long_run() else CASES[::3]
    for name, src, rolled in cases:
        i = dsl.Interpreter(seed=0, stdout=io.StringIO(), backend=backend)
        i.run(src + "\n" + TRANSFORMS)
        said = io.StringIO()
        with contextlib.redirect_stderr(said):
            for fast, slow, arg in (("jf", "f", X), ("jg", "g", X), ("jv", "v", XS), ("jh", "h", X)):
                want = i.lookup(slow)(arg)
                for _ in range(2):      # staged, then compiled
                    np.testing.assert_allclose(i.lookup(fast)(arg), want, rtol=1e-11, atol=1e-12,
                                               err_msg=f"{name}: {fast}")
        assert ("written out" not in said.getvalue()) == rolled, (name, said.getvalue())
        assert "numpy backend" not in said.getvalue(), (name, said.getvalue())


def test_the_rows_are_steps_of_the_loops_body():
    i = dsl.Interpreter(stdout=io.StringIO())
    i.run(_read("x[i:i+2, 1]") + "\n" + _write("y[:, i:i+2]", "v2[0:1, 0:2, :]").replace("fn f", "fn w")
          + "\nlet jf = jit(f)\nlet jw = jit(w)")
    for name, op in (("jf", "Rows"), ("jw", "SetRows")):
        fn = i.lookup(name)
        fn(X)
        fn(X)
        entries = [e for es in fn.call.entries.values() for e in es]
        assert len(entries) == 1
        loops = [s for s in entries[0].program.steps if s[1] == "Loop"]
        assert len(loops) == 1 and op in {t[1] for t in loops[0][4]["body"].forward.steps}


MINIBATCH = """
import nn
import optim
fn loss(layers, x, y) { return mean((nn.mlp_apply(layers, x, act=tanh)[:, 0] - y) ** 2) }
fn epoch(layers, state, x, y, size) {
    let total = 0.0
    for k in range(shape(x)[0] // size) {
        let l, g = value_and_grad(loss)(layers, x[k * size:(k + 1) * size], y[k * size:(k + 1) * size])
        layers, state = optim.adam(layers, g, state, 0.01)
        total += l
    }
    return layers, state, total
}
seed(0)
let layers = nn.mlp((3, 8, 1), init="glorot")
let fast = jit(epoch, explain=true)
"""


def test_a_jitted_epoch_over_minibatches_with_adam_is_staged_once(backend, capfd):
    # the minibatch slices are Rows steps, and adam's step count, an int the loop carries from the
    # state passed in, is a value of the recording: each epoch called the same recording (a guard
    # on the count staged every call again)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((96, 3))
    i = dsl.Interpreter(seed=0, stdout=io.StringIO(), backend=backend)
    i.run(MINIBATCH)
    fast, slow = i.lookup("fast"), i.lookup("epoch")
    layers, state = i.lookup("layers"), i.eval("optim.adam_init(layers)")
    want, got = (layers, state), (layers, state)
    for _ in range(3):
        want = slow(want[0], want[1], x, np.sin(x).sum(1), 8)
        got = fast(got[0], got[1], x, np.sin(x).sum(1), 8)
        assert got[2] == pytest.approx(want[2], rel=1e-12)
        assert got[1]["step"] == want[1]["step"]
    assert want[1]["step"] == 36
    said = capfd.readouterr().err
    assert said.count("staging it") == 1 and "written out" not in said.replace("nn.dg", ""), said
    entries = [e for es in fast.call.entries.values() for e in es]
    assert len(entries) == 1 and "Loop" in {s[1] for s in entries[0].program.steps} | (
        {"Loop"} if backend == "xla" and "Scan" in {s[1] for s in entries[0].program.steps} else set())


def test_rows_rules_against_their_kernels():
    rng = np.random.default_rng(7)
    rows, add, put = PRIMS["Rows"], PRIMS["RowsAdd"], PRIMS["SetRows"]
    x, g = rng.standard_normal((6, 3)), rng.standard_normal((2, 3))
    for i in (0, 3, 4):
        # Rows and RowsAdd are each other's transpose: <rows(x), g> = <x, rows_add(g)>
        out = rows.impl(x, i, 2)
        np.testing.assert_array_equal(out, x[i:i + 2])
        back = rows.vjp[0](EAGER, g, out, x, i, n=2)
        np.testing.assert_array_equal(back, add.impl(g, i, (6, 3)))
        assert np.sum(out * g) == pytest.approx(np.sum(x * back), rel=1e-14)
        np.testing.assert_array_equal(add.vjp[0](EAGER, x, None, g, i, shape=(6, 3)), x[i:i + 2])
        np.testing.assert_array_equal(rows.jvp(EAGER, (x, None), None, (x, i), {"n": 2}), x[i:i + 2])
        # SetRows is linear in (x, v) together, v broadcast to the rows
        for v in (rng.standard_normal((2, 3)), rng.standard_normal(3), 1.5):
            written = put.impl(x, i, v, 2)
            want = x.copy()
            want[i:i + 2] = v
            np.testing.assert_array_equal(written, want)
            gx = put.vjp[0](EAGER, g.repeat(3, axis=0), written, x, i, v, n=2)
            gv = put.vjp[2](EAGER, g.repeat(3, axis=0), written, x, i, v, n=2)
            assert np.sum(written * g.repeat(3, axis=0)) == pytest.approx(
                np.sum(x * gx) + np.sum(np.asarray(v) * gv), rel=1e-13)
            assert np.shape(gv) == np.shape(v)
        # batched on axis 0 (i shared): each rule against a loop over the examples
        xb, gb, vb = rng.standard_normal((4, 6, 3)), rng.standard_normal((4, 2, 3)), rng.standard_normal((4, 3))
        np.testing.assert_array_equal(rows.batch(EAGER, (xb, i), (True, False), {"n": 2}),
                                      np.stack([b[i:i + 2] for b in xb]))
        np.testing.assert_array_equal(add.batch(EAGER, (gb, i), (True, False), {"shape": (6, 3)}),
                                      np.stack([add.impl(b, i, (6, 3)) for b in gb]))
        for bx, bv, v in ((True, False, x[:2]), (False, True, vb), (True, True, vb), (True, False, x[0])):
            xs = xb if bx else x
            got = put.batch(EAGER, (xs, i, v), (bx, False, bv), {"n": 2})
            np.testing.assert_array_equal(got, np.stack([put.impl(xb[k] if bx else x, i, v[k] if bv else v, 2)
                                                         for k in range(4)]))
    with pytest.raises(dsl.DgError, match="out of range"):
        rows.impl(x, 5, 2)


# `for x in xs` over a tensor's rows, as jit stages it: a loop over positions whose body reads
# row i (Row), as `for i in range(n) { let x = xs[i] ... }` would; it was written out, a copy per row
ROW_LOOPS = {
    "rows": "fn f(x) { let s = 0.0; for r in x { s = s + sum(sin(r) * r) }; return s }",
    "times": "fn f(x) { let y = x[0]; for t in linspace(0.0, 1.0, 40) { y = y + 0.025 * cos(t * y) }; return sum(y) }",
    "a recurrence": "fn f(x) { let h = zeros((3,)); for xt in x { h = tanh(h * 0.5 + xt) }; return sum(h ** 2) }",
    "matrices": "fn f(x) { let s = 0.0; for m in reshape(x, (10, 2, 3)) { s = s + sum(m @ transpose(m)) }; return s }",
    "a closure": "fn f(x) { let s = 0.0; for r in x { s = s + (fn(z) => z * r)(2.0)[0] }; return s }",
    "nested": "fn f(x) { let s = 0.0; for r in x { for e in r { s = s + e * e } }; return s }",
    "enumerate": "fn f(x) { let h = zeros((3,)); for t, xt in enumerate(x) { h = tanh(h * 0.5 + xt * t) }; return sum(h) }",
    "zip": ("fn f(x) { let s = 0.0; let y = x[0:15] * 2.0; let z = sin(x)\n"
            "  for a, b, c in zip(x, y, z) { s = s + sum(a * b * c) }; return s }"),
    # of expressions: a struct's fields, arithmetic
    "zip of fields": ("struct Data { ts, ys }\nfn f(x) { let d = Data(x[:, 0], cos(x)); let s = 0.0\n"
                      "  for t, y in zip(d.ts, d.ys) { s = s * 0.9 + sum(y) * t }; return s }"),
    "enumerate of an expression": ("fn f(x) { let h = zeros((3,))\n"
                                   "  for t, xt in enumerate(x * 2.0) { h = tanh(h * 0.5 + xt * t) }; return sum(h) }"),
}


@pytest.mark.parametrize("name", sorted(ROW_LOOPS))
def test_a_loop_over_a_tensors_rows_is_one_loop(name, backend):
    i = dsl.Interpreter(seed=0, stdout=io.StringIO(), backend=backend)
    i.run(ROW_LOOPS[name] + "\nlet jf = jit(f)\nlet jg = jit(grad(f))\nlet g = grad(f)\nlet jv = jit(vmap(f))\nlet v = vmap(f)")
    x = np.random.default_rng(0).standard_normal((20, 3))
    for fast, slow, arg in (("jf", "f", x), ("jg", "g", x), ("jv", "v", np.stack([x, x * 0.5]))):
        want = i.lookup(slow)(arg)
        for _ in range(2):
            np.testing.assert_allclose(i.lookup(fast)(arg), want, rtol=1e-11, atol=1e-12, err_msg=f"{name}: {fast}")
        programs = [e.program for es in i.lookup(fast).call.entries.values() for e in es]
        assert len(programs) == 1 and {"Loop", "Scan"} & {s[1] for s in programs[0].steps}, (name, fast)
        assert len(programs[0].steps) < 60, (name, fast, len(programs[0].steps))


def test_the_arguments_of_a_walked_zip_are_evaluated_once(capsys):
    i = dsl.Interpreter()
    i.run("fn noisy(x) { print(\"made\"); return x * 2.0 }\n"
          "fn f(x) { let s = 0.0; for a, b in zip(noisy(x), x) { s = s + sum(a * b) }; return s }\n"
          "fn g(x) { let s = 0.0; for a, b in zip(noisy(x), 3.0) { s = s + a }; return s }\nlet jf = jit(f)\nlet jg = jit(g)")
    x = np.arange(6.0).reshape(3, 2)
    for _ in range(3):
        assert i.lookup("jf")(x) == 2 * (x * x).sum()
    assert capsys.readouterr().out == "made\n" * 3
    with pytest.raises(dsl.DgError, match="zip") as failed:      # not tensors: zip's own error, at the call
        i.lookup("jg")(x)
    assert capsys.readouterr().out == "made\n"
    assert failed.value.span.line == 3


def test_a_function_named_enumerate_or_zip_is_called_as_written():
    # the loop over positions stands for the builtins only: a user's own function is called
    i = dsl.Interpreter(stdout=io.StringIO())
    i.run("fn enumerate(z) { return ((0, z[0]), (5, z[1])) }\nfn zip(a, b) { return ((a[0], b[1]),) }\n"
          "fn f(x) { let s = 0.0; for k, r in enumerate(x) { s = s + sum(r) * k }; return s }\nlet jf = jit(f)\n"
          "fn g(x) { let s = 0.0; for a, b in zip(x, x) { s = s + sum(a * b) }; return s }\nlet jg = jit(g)")
    x = np.arange(60.0).reshape(20, 3)
    for _ in range(2):
        assert i.lookup("jf")(x) == 5 * x[1].sum()
        assert i.lookup("jg")(x) == (x[0] * x[1]).sum()
