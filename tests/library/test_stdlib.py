"""The standard library written in dg: stdlib/nn.dg and stdlib/optim.dg (SPEC section 9).

Every function is compared with the same computation done by hand in numpy.
"""

import numpy as np
import pytest

import dsl
from dsl.errors import DgError


def ev(src, interp=None):
    """Run dg source (nn and optim imported) and return the value of its last expression."""
    interp = interp or dsl.Interpreter()
    return interp.run("import nn\nimport optim\n" + src)


def sigmoid(z):
    """The logistic function in numpy."""
    return 1.0 / (1.0 + np.exp(-z))


# ---------------------------------------------------------------- nn.linear / mlp
def test_linear_is_a_struct_with_he_init_and_zero_bias():
    layer = ev("seed(0)\nnn.linear(400, 300)")
    assert layer._name == "Linear" and layer._fields == ("w", "b")
    assert layer.w.shape == (400, 300) and layer.b.shape == (300,)
    assert np.all(layer.b == 0.0)
    assert abs(layer.w.std() / np.sqrt(2.0 / 400) - 1.0) < 0.02
    assert abs(layer.w.mean()) < 0.005


def test_conv_layer_is_he_initialised_and_adds_its_bias_per_channel():
    layer = ev("seed(0)\nnn.conv_layer(20, 30, 5)")
    assert layer.w.shape == (30, 20, 5, 5) and np.all(layer.b == 0.0)
    assert abs(np.std(layer.w) - np.sqrt(2.0 / 500)) < 0.003
    one_d = ev('seed(0)\nnn.conv_layer(4, 6, (3,), init="glorot")')
    assert one_d.w.shape == (6, 4, 3) and abs(np.std(one_d.w) - np.sqrt(2.0 / 30)) < 0.02
    y = ev("seed(0)\nlet c = nn.conv_layer(2, 3, 3)\nc = nn.Conv(w=c.w, b=[1.0, 2.0, 3.0])\n"
           "nn.conv_apply(c, ones((4, 2, 6, 5)), padding=\"same\") - conv(ones((4, 2, 6, 5)), c.w, padding=\"same\")")
    assert y.shape == (4, 3, 6, 5)
    np.testing.assert_allclose(y, np.broadcast_to(np.array([1.0, 2.0, 3.0])[:, None, None], (4, 3, 6, 5)))


def test_linear_glorot_init_scale():
    layer = ev('seed(0)\nnn.linear(400, 200, init="glorot")')
    assert abs(layer.w.std() / np.sqrt(2.0 / 600) - 1.0) < 0.02


def test_linear_is_reproducible_under_seed_and_differs_without_it():
    a = ev("seed(3)\nnn.linear(4, 5)").w
    b = ev("seed(3)\nnn.linear(4, 5)").w
    c = ev("seed(4)\nnn.linear(4, 5)").w
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_linear_rejects_an_unknown_init(run_error):
    err = run_error('import nn\nnn.linear(2, 3, init="uniform")')
    assert err.kind == "user" and "he" in err.message and "glorot" in err.message


def test_dense_is_x_at_w_plus_b():
    interp = dsl.Interpreter()
    out = ev("let l = nn.Linear(w=[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], b=[0.5, -1.0])\n"
             "nn.dense(l, [[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]])", interp)
    w = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    x = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]])
    np.testing.assert_allclose(out, x @ w + [0.5, -1.0])


def test_mlp_builds_a_tuple_of_layers_joining_the_sizes():
    layers = ev("seed(0)\nnn.mlp((3, 8, 5, 2))")
    assert isinstance(layers, tuple) and len(layers) == 3
    assert [l.w.shape for l in layers] == [(3, 8), (8, 5), (5, 2)]
    assert [l.b.shape for l in layers] == [(8,), (5,), (2,)]


def test_mlp_needs_two_sizes(run_error):
    assert run_error("import nn\nnn.mlp((3,))").kind == "user"


def test_mlp_apply_has_no_activation_after_the_last_layer():
    interp = dsl.Interpreter()
    out = ev("seed(1)\nlet layers = nn.mlp((3, 6, 4, 2))\nlet x = randn((5, 3))\n"
             "nn.mlp_apply(layers, x)", interp)
    layers, x = interp.lookup("layers"), interp.lookup("x")
    h = x
    for i, l in enumerate(layers):
        h = h @ l.w + l.b
        if i < len(layers) - 1:
            h = np.maximum(h, 0.0)
    np.testing.assert_allclose(out, h, rtol=1e-12)
    assert np.any(out < 0)      # a relu after the last layer would forbid this


def test_mlp_apply_takes_another_activation():
    interp = dsl.Interpreter()
    out = ev("seed(1)\nlet layers = nn.mlp((2, 3, 1))\nlet x = randn((4, 2))\n"
             "nn.mlp_apply(layers, x, act=tanh)", interp)
    (l1, l2), x = interp.lookup("layers"), interp.lookup("x")
    np.testing.assert_allclose(out, np.tanh(x @ l1.w + l1.b) @ l2.w + l2.b, rtol=1e-12)


def test_mlp_gradient_has_the_structure_of_the_layers():
    g = ev("seed(0)\nlet layers = nn.mlp((2, 4, 1))\nlet x = randn((6, 2))\n"
           "grad(fn(ls) => nn.mse(nn.mlp_apply(ls, x), zeros((6, 1))))(layers)")
    assert isinstance(g, tuple) and [l._name for l in g] == ["Linear", "Linear"]
    assert g[0].w.shape == (2, 4) and g[1].b.shape == (1,)


# ---------------------------------------------------------------- losses
def test_mse():
    assert ev("nn.mse([1.0, 2.0, 4.0], [0.0, 2.0, 1.0])") == pytest.approx((1 + 0 + 9) / 3)


def test_bce_with_logits_matches_numpy_and_is_stable():
    z = np.array([-3.0, -0.5, 0.0, 0.7, 2.5])
    y = np.array([0.0, 1.0, 1.0, 0.0, 1.0])
    got = ev("nn.bce_with_logits([-3.0, -0.5, 0.0, 0.7, 2.5], [0.0, 1.0, 1.0, 0.0, 1.0])")
    p = sigmoid(z)
    assert got == pytest.approx(np.mean(-(y * np.log(p) + (1 - y) * np.log(1 - p))), rel=1e-12)
    extreme = ev("nn.bce_with_logits([1000.0, -1000.0, 1000.0], [1.0, 0.0, 0.0])")
    assert extreme == pytest.approx(1000.0 / 3)


def test_bce_with_logits_gradient_is_sigmoid_minus_target():
    z = np.array([-1000.0, -2.0, 0.0, 0.0, 3.0, 1000.0])
    y = np.array([1.0, 0.0, 1.0, 0.0, 1.0, 0.0])
    g = ev("grad(fn(z) => nn.bce_with_logits(z, [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]))"
           "([-1000.0, -2.0, 0.0, 0.0, 3.0, 1000.0])")
    np.testing.assert_allclose(g, (sigmoid(z) - y) / len(z), atol=1e-15)


def test_accuracy_of_binary_logits():
    assert ev("nn.accuracy([2.0, -1.0, 0.5, -3.0], [1.0, 0.0, 0.0, 0.0])") == pytest.approx(0.75)


def test_accuracy_of_class_logits_with_index_and_one_hot_labels():
    logits = "[[0.1, 2.0, -1.0], [3.0, 0.0, 0.0], [0.0, 0.0, 5.0], [1.0, 1.0, 0.0]]"
    # rows predict 1, 0, 2 and (a tie, the first wins like numpy's argmax) 0
    assert ev(f"nn.accuracy({logits}, [1, 0, 1, 0])") == pytest.approx(0.75)
    assert ev(f"nn.accuracy({logits}, one_hot([1, 0, 1, 1], 3))") == pytest.approx(0.5)


def test_accuracy_rejects_three_axes(run_error):
    assert run_error("import nn\nnn.accuracy(zeros((2, 2, 2)), zeros((2,)))").kind == "user"


# ---------------------------------------------------------------- optimizers
TREE = ('{"layer": nn.Linear(w=[1.0, -2.0], b=0.5), "scale": 3.0, "steps": 7, "name": "net"}')
GRADS = ('{"layer": nn.Linear(w=[0.2, -0.4], b=1.5), "scale": -0.6, "steps": none, "name": none}')


def leaves(tree):
    """The trainable leaves of TREE-shaped values, as numpy arrays in a fixed order."""
    return [np.asarray(tree["layer"].w, float), np.asarray(tree["layer"].b, float),
            np.asarray(tree["scale"], float)]


P0 = [np.array([1.0, -2.0]), np.array(0.5), np.array(3.0)]
G0 = [np.array([0.2, -0.4]), np.array(1.5), np.array(-0.6)]


def test_sgd_matches_a_hand_computation_and_leaves_ints_and_strings():
    out = ev(f"optim.sgd({TREE}, {GRADS}, 0.1)")
    for got, p, g in zip(leaves(out), P0, G0):
        np.testing.assert_allclose(got, p - 0.1 * g, rtol=1e-15)
    assert out["steps"] == 7 and out["name"] == "net" and out["layer"]._name == "Linear"
    assert list(out) == ["layer", "scale", "steps", "name"]


def test_momentum_two_steps_match_a_hand_computation():
    interp = dsl.Interpreter()
    ev(f"let s0 = optim.momentum_init({TREE})\n"
       f"let p1, s1 = optim.momentum({TREE}, {GRADS}, s0, 0.1, beta=0.5)\n"
       f"let p2, s2 = optim.momentum(p1, {GRADS}, s1, 0.1, beta=0.5)", interp)
    s0 = interp.lookup("s0")
    assert list(s0) == ["velocity"] and s0["velocity"]["steps"] is None
    assert np.all(s0["velocity"]["layer"].w == 0) and s0["velocity"]["scale"] == 0.0
    p, v = P0, [np.zeros_like(x) for x in P0]
    for name in ("p1", "p2"):
        v = [0.5 * vi + g for vi, g in zip(v, G0)]
        p = [pi - 0.1 * vi for pi, vi in zip(p, v)]
        for got, want in zip(leaves(interp.lookup(name)), p):
            np.testing.assert_allclose(got, want, rtol=1e-14)
    for got, want in zip(leaves(interp.lookup("s2")["velocity"]), v):
        np.testing.assert_allclose(got, want, rtol=1e-14)


@pytest.mark.parametrize("wd", [0.0, 0.1])
def test_adam_three_steps_match_a_hand_computation(wd):
    interp = dsl.Interpreter()
    ev(f"let p = {TREE}\nlet s = optim.adam_init(p)\nlet trail = ()\n"
       f"for i in range(3) {{\n"
       f"    let g = tree_map(fn(x) => x * (i + 1.0), {GRADS})\n"
       f"    p, s = optim.adam(p, g, s, 0.01, b1=0.8, b2=0.9, eps=1e-6, weight_decay={wd})\n"
       f"    trail = trail + (p,)\n"
       f"}}", interp)
    p, m, v = list(P0), [np.zeros_like(x) for x in P0], [np.zeros_like(x) for x in P0]
    for t in range(1, 4):
        g = [gi * t for gi in G0]
        m = [0.8 * mi + 0.2 * gi for mi, gi in zip(m, g)]
        v = [0.9 * vi + 0.1 * gi * gi for vi, gi in zip(v, g)]
        mhat = [mi / (1 - 0.8 ** t) for mi in m]
        vhat = [vi / (1 - 0.9 ** t) for vi in v]
        p = [pi - 0.01 * (mh / (np.sqrt(vh) + 1e-6) + wd * pi) for pi, mh, vh in zip(p, mhat, vhat)]
        for got, want in zip(leaves(interp.lookup("trail")[t - 1]), p):
            np.testing.assert_allclose(got, want, rtol=1e-13)
    state = interp.lookup("s")
    assert state["step"] == 3
    for got, want in zip(leaves(state["m"]), m):
        np.testing.assert_allclose(got, want, rtol=1e-13)
    for got, want in zip(leaves(state["v"]), v):
        np.testing.assert_allclose(got, want, rtol=1e-13)
    assert interp.lookup("p")["steps"] == 7


def test_adam_defaults_are_the_papers():
    out, state = ev(f"optim.adam({TREE}, {GRADS}, optim.adam_init({TREE}), 0.001)")
    # the first bias-corrected step moves every leaf by lr * g / (|g| + eps)
    for got, p, g in zip(leaves(out), P0, G0):
        np.testing.assert_allclose(got, p - 0.001 * g / (np.abs(g) + 1e-8), rtol=1e-12)
    assert state["step"] == 1


def test_clip_by_global_norm_then_step():
    interp = dsl.Interpreter()
    ev(f"let clipped, norm = clip_by_global_norm({GRADS}, 1.0)\n"
       f"let stepped = optim.sgd({TREE}, clipped, 0.5)", interp)
    total = np.sqrt(sum(float(np.sum(g * g)) for g in G0))
    assert interp.lookup("norm") == pytest.approx(total)
    for got, p, g in zip(leaves(interp.lookup("stepped")), P0, G0):
        np.testing.assert_allclose(got, p - 0.5 * g / total, rtol=1e-13)


def test_a_jitted_step_that_clips_stages_once_whether_it_clips_or_not():
    # global_norm read each leaf's value to see whether it counts (jit then guarded every
    # gradient: a new call, a new staging), and clipping chose by an if on the norm
    interp = dsl.Interpreter()
    ev("fn step(p, g) {\n  let c, n = clip_by_global_norm(g, 1.0)\n  return (optim.sgd(p, c, 0.5), global_norm(g))\n}\n"
       "let fast = jit(step)", interp)
    fast, step = interp.lookup("fast"), interp.lookup("step")
    p = {"w": np.array([1.0, 2.0]), "b": 0.5}
    for scale in (0.1, 3.0, 0.2, 5.0):
        g = {"w": np.array([0.3, -0.4]) * scale, "b": 0.2 * scale}
        got, want = fast(p, g), step(p, g)
        np.testing.assert_array_equal(got[0]["w"], want[0]["w"])
        assert got[0]["b"] == want[0]["b"] and got[1] == want[1]
    assert sum(len(entries) for entries in fast.call.entries.values()) == 1


def test_optimizers_train_a_model():
    loss = ev("seed(0)\nlet x = randn((64, 3))\nlet y = x @ [1.0, -2.0, 0.5]\n"
              "fn loss(m, x, y) { return nn.mse(nn.dense(m, x), y) }\n"
              "let m = nn.Linear(w=zeros((3,)), b=0.0)\nlet s = optim.adam_init(m)\n"
              "for i in range(300) { m, s = optim.adam(m, grad(loss)(m, x, y), s, 0.05) }\n"
              "loss(m, x, y)")
    assert loss < 1e-4


def test_sgd_rejects_mismatched_trees(run_error):
    err = run_error('import optim\noptim.sgd({"a": 1.0}, (1.0,), 0.1)')
    assert err.kind == "value" and "structure" in err.message


def test_stdlib_modules_are_found_from_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DgError) as info:
        dsl.Interpreter().run("import no_such_module_here")
    assert info.value.kind == "import"
    assert ev("type(nn.linear)") == "function"
