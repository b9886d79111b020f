"""Index tensors that are values of a staged program (labels or token ids passed to a jitted
step, a minibatch's shuffled positions, a graph's edges): `x[idx]`, `x[:, idx]`, `gather` and
`scatter_add` gather and add rows at them by Take and TakeAdd steps (dsl/core/ops/take.py), and
`x[idx] = v` sets them (a LastWriter step and a gather), checked on each run, rather than
guarding their values; so new positions run the same
recording, where each call with other positions staged the function again. Each case is
checked against the interpreter running the same function without jit."""

import contextlib
import io

import numpy as np
import pytest

import dsl
from dsl.core.primitives.namespaces import EAGER
from dsl.core.primitives.registry import PRIMS

CASES = {
    "x[idx]": "fn f(x, idx) { return sum(sin(x[idx]) * x[idx]) }",
    "x[idx] of two axes": "fn f(x, idx) { return sum(sin(x[reshape(idx, (2, 3))])) }",
    "x[:, idx]": "fn f(x, idx) { return sum(sin(x[:, idx]) * 2.0) + sum(x[:, idx][0]) }",
    "gather on axis 1": "fn f(x, idx) { return sum(cos(gather(x, idx, 1))) }",
    "gather": "fn f(x, idx) { return sum(cos(gather(x, idx))) }",
    "x[idx[0]]": "fn f(x, idx) { return sum(x[idx[0]] * x[idx[1]]) }",
    "scatter_add": "fn f(x, idx) { return sum(sin(scatter_add(x * 0.5, idx, x[0:6] * 2.0))) }",
    "an embedding": "fn f(x, idx) { let e = x[idx]; return sum(tanh(e @ transpose(x[0:2]))) }",
    "negative positions": "fn f(x, idx) { return sum(x[idx - 8.0] ** 2) }",
    "minibatches in a loop": ("fn f(x, idx) { let s = 0.0; for k in range(3) { "
                              "s = s + sum(sin(x[idx[k * 2:(k + 1) * 2]])) * (k + 1.0) }; return s }"),
    "x[arange(n), idx]": "fn f(x, idx) { return sum(log_softmax(x, axis=1)[arange(6), idx]) }",
    "x[idx, idx2, :]": "fn f(x, idx) { return sum(sin(reshape(x, (4, 4, 4))[floor(idx / 2.0) - 2.0, 3.0 - floor(idx / 2.0), :])) }",
    "x[:, idx, 0]": "fn f(x, idx) { return sum(cos(reshape(x, (2, 8, 4))[:, idx, 0])) }",
    "x[1, idx]": "fn f(x, idx) { return sum(exp(x[1, idx] * 0.1)) + sum(x[idx, -2] ** 2) }",
    "segment_sum": ("fn f(x, idx) { let h = x; for r in range(3) { "
                    "h = tanh(segment_sum(h[0:6] * 0.5, idx, 8) + h * 0.3) }; return sum(h ** 2) }"),
    "x[idx] = v": "fn f(x, idx) { let y = x * 1.0\n y[idx] = sin(x[0:6]) * 2.0\n return sum(y ** 2 * x) }",
    "x[idx] = a number": "fn f(x, idx) { let y = x * x\n y[idx] = 0.5\n return sum(sin(y) * x) }",
    "x[idx] = one row": "fn f(x, idx) { let y = tanh(x)\n y[idx] = x[7] * 3.0\n return sum(y * y) }",
    "x[idx] = v of two axes": ("fn f(x, idx) { let y = cos(x)\n y[reshape(idx, (2, 3))] = reshape(x[1:7], (2, 3, 8))\n"
                               " return sum(y * x) }"),
    "x[:, idx] = v": "fn f(x, idx) { let y = x * 2.0\n y[:, idx] = cos(x[:, 0:6]) + x[:, 6:7]\n return sum(sin(y) * x) }",
    "x[:, idx] = v of two axes": ("fn f(x, idx) { let y = reshape(x, (2, 8, 4)) * 1.0\n y[:, reshape(idx, (3, 2))] = 0.25\n"
                                  " return sum(y ** 3) + sum(y[0] * x[0:8, 0:4]) }"),
    "x[idx] = v in a loop": ("fn f(x, idx) { let y = x * 0.5; for k in range(3) { "
                             "y[idx[k * 2:(k + 1) * 2]] = y[idx[0:2]] * (k + 1.0) + y[k] }; return sum(y ** 2) }"),
    "message passing": ("fn f(x, idx) { let h = x; for r in range(3) { "
                        "h = tanh(scatter_add(h * 0.3, idx, h[idx] * 0.5)) }; return sum(h ** 2) }"),
}
TRANSFORMS = ("let jf = jit(f, explain=true)\nlet g = grad(f)\nlet jg = jit(grad(f), explain=true)\n"
              "let v = vmap(f, in_axes=(none, 0))\nlet jv = jit(vmap(f, in_axes=(none, 0)), explain=true)\n"
              "let gv = vmap(grad(f), in_axes=(0, 0))\nlet jgv = jit(vmap(grad(f), in_axes=(0, 0)), explain=true)\n"
              "let h = fn(x, i) => jvp(fn(x) => grad(f)(x, i), (x,), (x * 0.3,))[1]\nlet jh = jit(h, explain=true)")
X = np.random.default_rng(0).standard_normal((8, 8))
POSITIONS = [np.array([0.0, 3, 7, 1, 1, 5]), np.array([2.0, 2, 6, 0, 4, 3])]


@pytest.mark.parametrize("name", sorted(CASES))
def test_staged_positions_give_the_interpreters_values_from_one_recording(name, backend):
    i = dsl.Interpreter(seed=0, stdout=io.StringIO(), backend=backend)
    i.run(CASES[name] + "\n" + TRANSFORMS)
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        for idx in POSITIONS:
            for fast, slow, args in (("jf", "f", (X, idx)), ("jg", "g", (X, idx)), ("jv", "v", (X, np.stack(POSITIONS))),
                                     ("jgv", "gv", (np.stack([X, X * 2]), np.stack(POSITIONS))), ("jh", "h", (X, idx))):
                want = i.lookup(slow)(*args)
                for _ in range(2):
                    np.testing.assert_allclose(i.lookup(fast)(*args), want, rtol=1e-11, atol=1e-12,
                                               err_msg=f"{name}: {fast}")
    text = said.getvalue()
    # each of the five jitted functions staged once, for the first positions only
    assert text.count("staging it") == 5 and "written out" not in text and "numpy backend" not in text, text


def test_rows_written_at_staged_positions_keep_a_repeated_positions_last_write(backend):
    # numpy's x[idx] = v keeps the last write of a position named twice, and its gradient reaches
    # that write's row of v only; a -0.0 written stays -0.0 (a gather, not zeros added to)
    i = dsl.Interpreter(stdout=io.StringIO(), backend=backend)
    i.run("fn f(x, idx, v) { let y = x * 1.0\n y[idx] = v\n return y }\nlet jf = jit(f)\n"
          "fn l(x, idx, v) { return sum(f(x, idx, v) * x) }\nlet jg = jit(grad(l, (0, 2)))")
    x, v = X[:, 0].copy(), np.array([-0.0, 5.0, 6.0, 7.0, -1.0])
    for idx in (np.array([3.0, 1.0, 3.0, -1.0, 1.0]), np.array([0.0, 0.0, 0.0, 2.0, 4.0])):
        want = x.copy()
        want[idx.astype(int)] = v
        for _ in range(2):
            got = i.lookup("jf")(x, idx, v)
            assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
            gx, gv = i.lookup("jg")(x, idx, v)
            written = np.zeros(8, bool)
            written[idx.astype(int)] = True
            last = np.array([k == max(j for j in range(5) if idx[j] % 8 == idx[k] % 8) for k in range(5)])
            np.testing.assert_array_equal(gv, np.where(last, x[idx.astype(int)], 0.0))
            np.testing.assert_allclose(gx, want + np.where(written, 0.0, x), rtol=1e-15)
    assert len([e for es in i.lookup("jf").call.entries.values() for e in es]) == 1
    with pytest.raises(dsl.DgError) as err:
        i.lookup("jf")(x, np.array([0.0, 9.0, 1.0, 2.0, 3.0]), v)
    assert err.value.kind == "index" and "index 9 is out of range" in err.value.message and err.value.line == 2
    with pytest.raises(dsl.DgError) as err:
        i.lookup("jf")(x, np.array([0.0, 1.0]), v)
    assert err.value.kind == "shape" and "cannot assign a value of shape (5,)" in err.value.message
    with pytest.raises(dsl.DgError) as plain:
        i.lookup("f")(x, np.array([0.0, 1.0]), v)
    assert plain.value.message == err.value.message


def test_rows_written_at_staged_positions_keep_numpys_element_types(backend, capfd):
    # a number stored takes the tensor's type, a tensor promotes with it (numpy 2's rules)
    i = dsl.Interpreter(stdout=io.StringIO(), backend=backend)
    i.run("fn f(x, idx, v) { let y = x * 1.0\n y[idx] = v\n y[:, idx] = 0.25\n return y }\nlet jf = jit(f, explain=true)")
    for xd, vd in (("float32", "float32"), ("float32", "float64"), ("float64", "float32"), ("float32", None)):
        x = X[:6, :6].astype(xd)
        for idx in POSITIONS:
            v = (X[:6, 0:6][:len(idx)] * 2).astype(vd) if vd else 1.5
            got, want = i.lookup("jf")(x, idx[:3] % 6, v[:3] if vd else v), i.lookup("f")(x, idx[:3] % 6, v[:3] if vd else v)
            assert got.dtype == want.dtype and np.array_equal(got, want), (xd, vd)
    assert capfd.readouterr().err.count("staging it") == 4      # once per element types, not per positions


def test_a_bad_staged_position_is_the_interpreters_error_at_its_line(backend):
    i = dsl.Interpreter(stdout=io.StringIO(), backend=backend)
    i.run("fn f(x, idx) {\n  let y = x * 2.0\n  return sum(y[idx]) + sum(y[arange(2), idx])\n}\nlet jf = jit(f)\n"
          "fn g(x, idx) {\n  let y = x * 2.0\n  return sum(y[idx[0], idx])\n}\nlet jg = jit(g)")
    jf, jg = i.lookup("jf"), i.lookup("jg")
    assert jf(X, np.array([0.0, 1.0])) == pytest.approx(2 * X[[0, 1]].sum() + 2 * X[[0, 1], [0, 1]].sum(), rel=1e-14)
    assert jg(X, np.array([0.0, 1.0])) == pytest.approx(2 * X[0, [0, 1]].sum(), rel=1e-14)
    for idx, kind, words in ((np.array([0.0, 8.0]), "index", "index 8 is out of range for axis"),
                             (np.array([0.5, 1.0]), "type", "whole number"),
                             (np.array([-9.0, 1.0]), "index", "index -9 is out of range")):
        for fn, line in ((jf, 3), (jg, 8)):
            for _ in range(2):      # the same recording, compiled
                with pytest.raises(dsl.DgError) as err:
                    fn(X, idx)
                assert err.value.kind == kind and words in err.value.message and err.value.line == line
    assert len([e for es in jf.call.entries.values() for e in es]) == 1
    # segment ids, which are never counted from the end: the builtin's own words, jitted or not
    i.run("fn s(x, ids) {\n  return sum(segment_sum(x[0:2], ids, 8))\n}\nlet js = jit(s)")
    for ids, kind, words in ((np.array([0.0, -1.0]), "index", "a segment id is negative"),
                             (np.array([0.0, 8.0]), "index", "segment_sum: index 8 is out of range"),
                             (np.array([0.0, 1.5]), "type", "segment_sum: indices must be whole numbers")):
        for fn in ("js", "js", "s"):
            with pytest.raises(dsl.DgError) as err:
                i.lookup(fn)(X, ids)
            assert err.value.kind == kind and words in err.value.message and err.value.line == 2, fn


EMBEDDING = """
import nn
import optim
fn loss(p, ids, y) { return mean((nn.embed(p[0], ids) @ p[1] - y) ** 2) }
fn step(p, s, ids, y) {
    let l, g = value_and_grad(loss)(p, ids, y)
    let q, t = optim.adam(p, g, s, 0.05)
    return q, t, l
}
seed(0)
let p = (nn.embedding(20, 4), randn((4, 1)))
let fast = jit(step, explain=true)
"""


def test_a_jitted_training_step_of_an_embedding_is_staged_once(backend, capfd):
    i = dsl.Interpreter(seed=0, stdout=io.StringIO(), backend=backend)
    i.run(EMBEDDING)
    rng = np.random.default_rng(1)
    p = i.lookup("p")
    want = got = (p, i.eval("optim.adam_init(p)"))
    for _ in range(4):
        ids = rng.integers(0, 20, 16).astype(float)
        y = rng.standard_normal((16, 1))
        want = i.lookup("step")(want[0], want[1], ids, y)
        got = i.lookup("fast")(got[0], got[1], ids, y)
        assert got[2] == pytest.approx(want[2], rel=1e-12)
    np.testing.assert_allclose(got[0][0].table, want[0][0].table, rtol=1e-12)
    assert capfd.readouterr().err.count("staging it") == 1


def test_take_rules_against_their_kernels():
    rng = np.random.default_rng(3)
    take, add = PRIMS["Take"], PRIMS["TakeAdd"]
    x = rng.standard_normal((6, 3))
    for idx in (np.array([4.0, 0.0, 4.0, -1.0]), np.array([[1.0, 2.0], [5.0, -6.0]])):
        out = take.impl(x, idx)
        np.testing.assert_array_equal(out, x[idx.astype(int)])
        g = rng.standard_normal(out.shape)
        # each other's transpose, repeated positions adding up: <take(x), g> = <x, take_add(g)>
        back = take.vjp[0](EAGER, g, out, x, idx)
        want = np.zeros_like(x)
        np.add.at(want, idx.astype(int), g)
        np.testing.assert_array_equal(back, want)
        np.testing.assert_array_equal(add.impl(g, idx, (6, 3)), want)
        assert np.sum(out * g) == pytest.approx(np.sum(x * back), rel=1e-13)
        np.testing.assert_array_equal(add.vjp[0](EAGER, x, None, g, idx, shape=(6, 3)), out)
        assert take.vjp[1](EAGER, g, out, x, idx) is None
        np.testing.assert_array_equal(take.jvp(EAGER, (x, None), None, (x, idx), {}), out)
        # batched tensor, positions or both (batch on axis 0): against a loop over the examples
        xb, ib = rng.standard_normal((4, 6, 3)), np.stack([np.roll(idx, k) for k in range(4)])
        for bx, bi in ((True, False), (False, True), (True, True)):
            xs, ids = (xb if bx else x), (ib if bi else idx)
            got = take.batch(EAGER, (xs, ids), (bx, bi), {})
            np.testing.assert_array_equal(got, np.stack([take.impl(xb[k] if bx else x, ib[k] if bi else idx)
                                                         for k in range(4)]))
            gb = rng.standard_normal((4,) + out.shape)
            got = add.batch(EAGER, (gb, ids), (True, bi), {"shape": (6, 3)})
            np.testing.assert_array_equal(got, np.stack([add.impl(gb[k], ib[k] if bi else idx, (6, 3))
                                                         for k in range(4)]))
    with pytest.raises(dsl.DgError, match="out of range"):
        take.impl(x, np.array([6.0]))
    with pytest.raises(dsl.DgError, match="whole numbers"):
        add.impl(np.ones((1, 3)), np.array([0.5]), (6, 3))
