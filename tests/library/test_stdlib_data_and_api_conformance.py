"""The standard library, the data and run builtins (reference section 9) and the Python API
(section 8) against the reference.

Each test names the reference sentence (or the decision) it holds dg to.
"""


def test_accuracy_of_a_single_logit_column_is_binary(run):
    # SPEC 9: accuracy(logits, labels). nn.mlp((..., 1)) gives logits of shape (n, 1); they were
    # treated as one-class scores whose argmax is always class 0, so the accuracy was the share of
    # label 0 (0.25 here) whatever the model said.
    src = """import nn
let logits = [[2.0], [-1.0], [0.5], [3.0]]
print(nn.accuracy(logits, [1.0, 0.0, 1.0, 0.0]))
print(nn.accuracy(logits, [[1.0], [0.0], [1.0], [0.0]]))
print(nn.accuracy([2.0, -1.0, 0.5, 3.0], [[1.0], [0.0], [1.0], [0.0]]))
print(nn.accuracy([[1.0, 2.0], [3.0, 0.0]], [[1], [1]]))
"""
    assert run(src) == "0.75\n0.75\n0.75\n0.5\n"


def test_train_test_split_counts_test_rows_without_float_noise(run):
    # SPEC 9: train_test_split(x, y, fraction), fraction the test share, ceil(fraction * n) rows.
    # 0.07 * 100 is 7.000000000000001 in floating point, so 8 rows were held out, not 7.
    src = """let x = zeros((100, 1))
let xtr, xte, ytr, yte = train_test_split(x, x, 0.07)
print(shape(xtr), shape(xte))
let a, b, c, d = train_test_split(x, x, 0.071)
print(shape(b))
"""
    assert run(src) == "(93, 1) (7, 1)\n(8, 1)\n"


def test_one_hot_takes_bool_labels(run):
    # SPEC 9: one_hot(labels, n); labels such as `y > 0` are a bool tensor (classes 0 and 1, as
    # jax.nn.one_hot reads them). It was a type error that said "got tensor".
    assert run("print(one_hot([1.0, -1.0] > 0, 2))") == "[[0.0, 1.0], [1.0, 0.0]]\n"
    assert run("print(one_hot(true, 2), one_hot((false, 1), 2))") == "[0.0, 1.0] [[1.0, 0.0], [0.0, 1.0]]\n"


def test_len_of_batches_is_the_number_of_batches_left(run):
    # SPEC 9: batches(x, y, size) yields batches of up to `size` rows; len() of it (like len() of
    # a PyTorch DataLoader) was a type error "an iterator has no length".
    src = """let x = zeros((10, 2))
let b = batches(x, x, 3)
print(len(b))
for xb, yb in b { }
print(len(b))
"""
    assert run(src) == "4\n0\n"


def test_save_names_the_unsavable_leaf_in_dg_form(run_error, tmp_path):
    # SPEC 9: save stores trees without functions; the error showed the path in Python form,
    # (at ['f'][True]), not dg's ["f"][true].
    err = run_error(f'save("{tmp_path / "x.ckpt"}", {{"f": {{true: (1, print)}}}})')
    assert err.kind == "type" and '(at ["f"][true][1])' in err.message


def test_run_returns_tensors_the_caller_may_change_without_changing_dg_values():
    # docs/python.md: "Arrays are copied in both directions, so changing a numpy array never
    # changes a dg value". .get and .eval copied, but .run handed out dg's own arrays: writing
    # into its result changed the variable w in dg.
    import dsl
    interp = dsl.Interpreter()
    w = interp.run("let w = ones(3)\nw")
    w[0] = 99.0
    p = interp.run("struct P { w }\nlet p = (P(ones(2)), {\"k\": ones(1)})\np")
    p[0].w[0] = 5.0
    p[1]["k"][0] = 7.0
    assert interp.eval("w").tolist() == [1.0, 1.0, 1.0]
    assert interp.eval("p[0].w").tolist() == [1.0, 1.0] and interp.eval('p[1]["k"]').tolist() == [1.0]


def test_python_api_reaches_an_imported_modules_functions_by_their_dg_name():
    # SPEC 8: .function(name), .grad(name); a test of the standard library from Python writes
    # interp.function("nn.mse") as dg does. That was a name error "'nn.mse' is not a dg name".
    import numpy as np
    import pytest
    import dsl
    interp = dsl.Interpreter(seed=0)
    interp.run("import nn\nimport optim as o\nlet x = 1")
    assert interp.function("nn.mse")(np.ones(2), np.zeros(2)) == 1.0
    assert interp.grad("nn.mse")(np.ones(2), np.zeros(2)).tolist() == [1.0, 1.0]
    assert interp.function("o.sgd")({"a": 1.0}, {"a": 1.0}, lr=0.5) == {"a": 0.5}
    assert interp.get("nn.linear")(2, 3).w.shape == (2, 3)
    with pytest.raises(dsl.DgError) as info:
        interp.function("nn.nope")
    assert info.value.kind == "name" and "nope" in info.value.message
    with pytest.raises(dsl.DgError) as info:
        interp.function("x.y")
    assert info.value.kind == "type"


def test_losses_match_a_single_output_column_to_its_labels(run):
    # SPEC 9: mse(pred, y), bce_with_logits(logits, y). An mlp ending in one unit gives (n, 1)
    # predictions; against labels of shape (n,) they broadcast to an (n, n) table (mse 1.5 here,
    # and a binary classifier trained on it stayed at chance). Targets now take the predictions'
    # shape when the two differ by a trailing axis of 1, as in Keras.
    src = """import nn
import optim
print(nn.mse([[1.0], [2.0]], [1.0, 3.0]), nn.mse([1.0, 2.0], [[1.0], [3.0]]))
print(nn.bce_with_logits([[0.0], [1000.0]], [1.0, 0.0]) == nn.bce_with_logits([0.0, 1000.0], [1.0, 0.0]))
print(grad(fn(p) => nn.mse(p, [1.0, 3.0]))([[1.0], [2.0]]))
seed(0)
let x = randn((200, 2))
let y = where(x[:, 0] - x[:, 1] > 0, 1.0, 0.0)
let layers = nn.mlp((2, 8, 1))
fn loss(layers, x, y) { return nn.bce_with_logits(nn.mlp_apply(layers, x), y) }
let state = optim.adam_init(layers)
for step in range(200) {
    let l, g = value_and_grad(loss)(layers, x, y)
    layers, state = optim.adam(layers, g, state, 0.02)
}
print(nn.accuracy(nn.mlp_apply(layers, x), y) > 0.95)
"""
    assert run(src) == "0.5 0.5\ntrue\n[[0.0], [-1.0]]\ntrue\n"
