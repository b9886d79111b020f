"""Convolution, pooling and padding: values against a loop over positions written here (always)
and against JAX (where installed), gradients against central differences, conv_transpose as the
adjoint of conv, second derivatives, vmap without a loop over examples, jit, and dg's errors."""

import itertools

import numpy as np
import pytest

import dsl
from dsl.errors import DgError
from gradcheck import check

RNG = np.random.default_rng(11)


def run(src, **values):
    """An interpreter that has run src with `values` bound."""
    interp = dsl.Interpreter(seed=0)
    for name, v in values.items():
        interp.set(name, v)
    interp.run(src, "t.dg")
    return interp


def reference_conv(x, w, stride, pads, dilation, groups):
    """The convolution by its definition: a loop over every output position and channel."""
    n = w.ndim - 2
    x = np.pad(x, ((0, 0), (0, 0)) + tuple(pads))
    sizes = x.shape[2:]
    out = tuple((s - d * (k - 1) - 1) // st + 1 for s, k, st, d in zip(sizes, w.shape[2:], stride, dilation))
    y = np.zeros((x.shape[0], w.shape[0]) + out)
    per_in, per_out = w.shape[1], w.shape[0] // groups
    for b, o in itertools.product(range(x.shape[0]), range(w.shape[0])):
        first = (o // per_out) * per_in
        for pos in itertools.product(*(range(m) for m in out)):
            for off in itertools.product(*(range(k) for k in w.shape[2:])):
                at = tuple(p * st + j * d for p, st, j, d in zip(pos, stride, off, dilation))
                y[(b, o) + pos] += np.dot(x[(b, slice(first, first + per_in)) + at], w[(o, slice(None)) + off])
    assert len(out) == n
    return y


CONVS = [   # (x shape, w shape, dg options, stride, pads, dilation, groups)
    ((2, 3, 7), (4, 3, 3), "", (1,), ((0, 0),), (1,), 1),
    ((2, 4, 9), (6, 2, 2), "stride=2, padding=(2,), dilation=2, groups=2", (2,), ((2, 2),), (2,), 2),
    ((2, 4, 6, 5), (6, 2, 3, 2), "stride=(2, 1), padding=1, dilation=(1, 2), groups=2", (2, 1), ((1, 1), (1, 1)),
     (1, 2), 2),
    ((1, 2, 5, 6), (3, 2, 2, 3), "padding=\"same\"", (1, 1), ((0, 1), (1, 1)), (1, 1), 1),
    ((1, 2, 5, 6), (3, 2, 3, 3), "stride=2, padding=((1, 0), (0, 2))", (2, 2), ((1, 0), (0, 2)), (1, 1), 1),
    ((1, 2, 4, 3, 5), (2, 2, 2, 2, 3), "stride=(1, 2, 1), padding=1", (1, 2, 1), ((1, 1),) * 3, (1, 1, 1), 1),
]


@pytest.mark.parametrize("xs, ws, opts, stride, pads, dilation, groups", CONVS, ids=[c[2] or "plain" for c in CONVS])
def test_conv_is_the_sum_over_each_window(xs, ws, opts, stride, pads, dilation, groups):
    x, w = RNG.normal(size=xs), RNG.normal(size=ws)
    got = run(f"let y = conv(x, w{', ' + opts if opts else ''})", x=x, w=w).get("y")
    np.testing.assert_allclose(got, reference_conv(x, w, stride, pads, dilation, groups), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("xs, ws, opts, stride, pads, dilation, groups", CONVS, ids=[c[2] or "plain" for c in CONVS])
def test_conv_gradients_agree_with_central_differences(xs, ws, opts, stride, pads, dilation, groups):
    check(f"conv(x, w{', ' + opts if opts else ''})", x=RNG.normal(size=xs), w=RNG.normal(size=ws))


@pytest.mark.parametrize("opts, size", [("stride=2, padding=1, output_padding=1", 8),
                                        ("stride=(2, 3), padding=(0, 1), dilation=(2, 1), groups=2", None)])
def test_conv_transpose_is_the_adjoint_of_conv(opts, size):
    # <conv(x, w), y> = <x, conv_transpose(y, w)> for every x and y: it is conv's input gradient
    groups = 2 if "groups=2" in opts else 1
    x, w = RNG.normal(size=(2, 4, 8, 9)), RNG.normal(size=(4, 4 // groups, 3, 2))
    conv_opts = opts.replace(", output_padding=1", "")
    interp = run(f"let y = conv(x, w, {conv_opts})", x=x, w=w)
    y = RNG.normal(size=interp.get("y").shape)
    interp = run(f"let back = conv_transpose(y, w, {opts})\nlet out = conv(x, w, {conv_opts})\n"
                 f"let g = grad(fn(x) => sum(conv(x, w, {conv_opts}) * y))(x)", x=x, w=w, y=y)
    back = interp.get("back")
    if size is None:        # without output_padding the last rows no window reached are left out
        back = np.pad(back, [(0, 0), (0, 0)] + [(0, a - b) for a, b in zip(x.shape[2:], back.shape[2:])])
    assert back.shape == x.shape
    np.testing.assert_allclose(back, interp.get("g"), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.sum(interp.get("out") * y), np.sum(x * back), rtol=1e-12)
    check(f"conv_transpose(y, w, {opts})", y=y, w=w)


def test_pooling_takes_the_max_or_mean_of_each_window():
    x = RNG.normal(size=(2, 3, 7, 6))
    interp = run("let a = max_pool(x, 2)\nlet b = avg_pool(x, (3, 2), stride=(2, 1), padding=1)\n"
                 "let c = max_pool(x, 3, stride=2, padding=\"same\")\nlet d = avg_pool(x[0], (2, 3))", x=x)
    np.testing.assert_array_equal(interp.get("a"), x[:, :, :6, :6].reshape(2, 3, 3, 2, 3, 2).max(axis=(3, 5)))
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.array([[[[padded[b, c, 2 * i:2 * i + 3, j:j + 2].mean() for j in range(7)] for i in range(4)]
                      for c in range(3)] for b in range(2)])
    np.testing.assert_allclose(interp.get("b"), want, rtol=1e-12)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (0, 1)), constant_values=-np.inf)
    want = np.array([[[[padded[b, c, 2 * i:2 * i + 3, 2 * j:2 * j + 3].max() for j in range(3)] for i in range(4)]
                      for c in range(3)] for b in range(2)])
    np.testing.assert_array_equal(interp.get("c"), want)
    np.testing.assert_allclose(interp.get("d"), x[0, :, :6, :6].reshape(3, 3, 2, 2, 3).mean(axis=(2, 4)), rtol=1e-12)
    check("max_pool(x, 3, stride=2, padding=1)", x=x)
    check("avg_pool(x, 2, padding=\"same\")", x=x)


def test_pad_as_numpy_in_every_mode():
    x = RNG.normal(size=(3, 4))
    for opts, kw in [("((1, 2), (0, 1))", {}), ("1, constant_values=2.5", {"constant_values": 2.5}),
                     ("2, mode=\"reflect\"", {"mode": "reflect"}), ("(1, 3), mode=\"wrap\"", {"mode": "wrap"}),
                     ("((0, 2), (3, 1)), mode=\"edge\"", {"mode": "edge"}),
                     ("2, mode=\"symmetric\"", {"mode": "symmetric"})]:
        width = eval(opts.split(", mode")[0].split(", constant")[0])
        np.testing.assert_array_equal(run(f"let p = pad(x, {opts})", x=x).get("p"), np.pad(x, width, **kw))
        check(f"pad(x, {opts})", x=x)
    # an int or bool tensor padded with a whole number keeps its type, as numpy.pad; with a
    # fraction it becomes float64 (numpy would cut the fraction off)
    ints = np.arange(6).reshape(2, 3)
    for src, want in [("pad(x, 1)", np.pad(ints, 1)), ("pad(x > 2, (1, 0))", np.pad(ints > 2, (1, 0))),
                      ("pad(x, 1, mode=\"edge\")", np.pad(ints, 1, mode="edge")),
                      ("pad(x, 1, constant_values=0.5)", np.pad(ints.astype(float), 1, constant_values=0.5))]:
        got = run(f"let x = astype(y, \"int64\")\nlet p = {src}", y=ints).get("p")
        assert got.dtype == want.dtype and (got == want).all(), src


def test_second_derivatives_vmap_and_jit(capfd):
    x, w = RNG.normal(size=(3, 2, 6, 6)), RNG.normal(size=(3, 2, 3, 3))
    interp = run("fn loss(w, x) { return sum(tanh(max_pool(conv(x, w, padding=1), 2)) ** 2) + sum(avg_pool(x, 3)) }\n"
                 "let per_example = vmap(fn(x) => grad(loss)(w, reshape(x, (1, 2, 6, 6))), explain=true)(x)\n"
                 "let looped = stack((grad(loss)(w, x[0:1]), grad(loss)(w, x[1:2]), grad(loss)(w, x[2:3])))\n"
                 "let eager = value_and_grad(loss)(w, x)\nlet jitted = jit(value_and_grad(loss))(w, x)\n"
                 "let hvp = jvp(grad(loss), (w, x), (w, zeros_like(x)))[1]", x=x, w=w)
    np.testing.assert_allclose(interp.get("per_example"), interp.get("looped"), rtol=1e-12, atol=1e-13)
    assert "once per example" not in capfd.readouterr().err
    (v1, g1), (v2, g2) = interp.get("eager"), interp.get("jitted")
    assert abs(v1 - v2) <= 1e-12 * abs(v1)
    np.testing.assert_allclose(g1, g2, rtol=1e-12, atol=1e-13)
    h = 1e-5
    grad_at = [run("fn loss(w, x) { return sum(tanh(max_pool(conv(x, w, padding=1), 2)) ** 2) }\n"
                   "let g = grad(loss)(w, x)", x=x, w=w + s * h * w).get("g") for s in (1, -1)]
    np.testing.assert_allclose(interp.get("hvp"), (grad_at[0] - grad_at[1]) / (2 * h), rtol=1e-5, atol=1e-6)


def test_against_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    lax, jnp = jax.lax, jax.numpy
    x, w = RNG.normal(size=(2, 4, 9, 8)), RNG.normal(size=(6, 2, 3, 2))
    cot = RNG.normal(size=(2, 6, 5, 5))

    def f(x, w):
        return lax.conv_general_dilated(x, w, (2, 2), ((1, 1), (2, 1)), rhs_dilation=(1, 2), feature_group_count=2)
    want = f(x, w)
    gx, gw = jax.grad(lambda x, w: jnp.sum(f(x, w) * cot), argnums=(0, 1))(x, w)
    interp = run("fn f(x, w) { return conv(x, w, stride=2, padding=((1, 1), (2, 1)), dilation=(1, 2), groups=2) }\n"
                 "let y = f(x, w)\nlet g = grad(fn(x, w) => sum(f(x, w) * cot), argnums=(0, 1))(x, w)",
                 x=x, w=w, cot=cot)
    np.testing.assert_allclose(interp.get("y"), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(interp.get("g")[0], gx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(interp.get("g")[1], gw, rtol=1e-12, atol=1e-12)
    pooled = lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 3, 2), (1, 1, 2, 2), ((0, 0), (0, 0), (1, 1), (0, 0)))
    summed = lax.reduce_window(x, 0.0, lax.add, (1, 1, 2, 2), (1, 1, 1, 1), "VALID") / 4
    interp = run("let m = max_pool(x, (3, 2), stride=2, padding=((1, 1), (0, 0)))\n"
                 "let a = avg_pool(x, 2, stride=1)", x=x)
    np.testing.assert_array_equal(interp.get("m"), pooled)
    np.testing.assert_allclose(interp.get("a"), summed, rtol=1e-12)
    # gradients of pooling and padding (no ties among random entries)
    cot_m, cot_a = RNG.normal(size=np.shape(pooled)), RNG.normal(size=np.shape(summed))

    def pools(x):
        m = lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 3, 2), (1, 1, 2, 2), ((0, 0), (0, 0), (1, 1), (0, 0)))
        a = lax.reduce_window(x, 0.0, lax.add, (1, 1, 2, 2), (1, 1, 1, 1), "VALID") / 4
        p = jnp.pad(x, ((0, 0), (1, 0), (2, 1), (0, 3)), mode="reflect")
        return jnp.sum(m * cot_m) + jnp.sum(a * cot_a) + jnp.sum(p * p)
    want = jax.grad(pools)(x)
    interp = run("let g = grad(fn(x) => sum(max_pool(x, (3, 2), stride=2, padding=((1, 1), (0, 0))) * cm) + "
                 "sum(avg_pool(x, 2, stride=1) * ca) + sum(pad(x, ((0, 0), (1, 0), (2, 1), (0, 3)), "
                 "mode=\"reflect\") ** 2))(x)", x=x, cm=cot_m, ca=cot_a)
    np.testing.assert_allclose(interp.get("g"), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("src, kind, words", [
    ("conv(zeros((1, 3, 5)), zeros((2, 2, 3)))", "shape", "the input must be (N, 2, ...)"),
    ("conv(zeros((1, 2, 2)), zeros((2, 2, 3)))", "shape", "does not fit"),
    ("conv(zeros((1, 2, 5)), zeros((2, 2)))", "shape", "over 1, 2 or 3 spatial axes"),
    ("conv(zeros((1, 2, 5)), zeros((2, 2, 3)), stride=0)", "value", "stride must be an int of at least 1"),
    ("conv(zeros((1, 2, 5)), zeros((2, 2, 3)), padding=\"full\")", "value", "padding must be"),
    ("conv((1, 2), zeros((2, 2, 3)))", "type", "the input x must be a tensor"),
    ("conv_transpose(zeros((1, 2, 5)), zeros((2, 2, 3)), stride=2, output_padding=2)", "value", "output_padding"),
    ("max_pool(zeros((1, 2, 5, 5)), 2, padding=2)", "value", "smaller than the window"),
    ("avg_pool(zeros((1, 2, 1)), 2)", "shape", "does not fit"),
    ("pad(zeros((2, 2)), 1, mode=\"linear_ramp\")", "value", "mode must be one of"),
    ("pad(zeros((2, 2)), -1)", "value", "pad_width"),
])
def test_bad_input_is_a_dg_error(src, kind, words):
    with pytest.raises(DgError) as info:
        run(f"let r = {src}")
    assert info.value.kind == kind and words in info.value.message
