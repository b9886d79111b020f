"""Element types: float32 (and float16) tensors stay in their type through every primitive and
every transformation, gradients come back in their primal's type, and values agree with float64
to float32's precision. Also dtype=, astype, dtype(), promotion as numpy 2 and checkpoints."""

import numpy as np
import pytest

import dsl
from test_primitive_rules import CASES, DEFS, IDS

# the cases whose float32 inputs meet a float64 tensor the expression makes itself: numpy's
# promotion makes their result float64 (their gradients are still float32)
FLOAT64_BY_PROMOTION = {
    "linspace(x, y, 4) * z",                        # linspace of two numbers is float64, as numpy's
    "cholesky(x @ transpose(x) + 3.0 * eye(3))",    # eye(3) is float64
    "astype(x, \"float64\") * y", "sum(astype(x * y, \"float64\"), axis=0)",      # casts to float64
}


def _f32(v):
    """Float tensors as float32, numbers as they are."""
    return v.astype(np.float32) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v


def _interp(expr, names):
    """f(args) = expr and L(args, c) = sum(expr * c) in one interpreter."""
    interp = dsl.Interpreter(seed=0)
    params = ", ".join(names)
    interp.run(DEFS + f"fn f({params}) {{ return {expr} }}\n"
                      f"fn L({params}, c) {{ return sum(f({params}) * c) }}")
    return interp


def _close(got, want, what, tol=2e-3):
    """float32 result against float64, relative to the float64 result's scale."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, what
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"{what}: {got} against {want}"
    got, want = np.nan_to_num(got), np.nan_to_num(want)
    scale = 1.0 + (np.max(np.abs(want)) if want.size else 0.0)
    assert np.all(np.abs(got - want) <= tol * scale), f"{what}: {got} against {want}"


def _dtype_ok(value, expr, args, what):
    """A float tensor result is float32 unless the expression itself brings float64 in (or its
    arguments are all numbers)."""
    if isinstance(value, np.ndarray) and value.dtype.kind == "f" and any(
            isinstance(v, np.ndarray) and v.dtype.kind == "f" for v in args):
        want = np.float64 if expr in FLOAT64_BY_PROMOTION else np.float32
        assert value.dtype == want, f"{what} of {expr} is {value.dtype}"


@pytest.mark.parametrize("expr,args", CASES, ids=IDS)
def test_float32_values_and_gradients_stay_float32(expr, args):
    names = list(args)
    a64 = list(args.values())
    a32 = [_f32(v) for v in a64]
    interp = _interp(expr, names)
    f = interp.lookup("f")
    want, got = f(*a64), f(*a32)
    _dtype_ok(got, expr, a32, "the value")
    _close(got, want, f"value of {expr}")
    rng = np.random.default_rng(3)
    c = rng.standard_normal(np.shape(want)) if np.shape(want) else float(rng.standard_normal())
    wrt = tuple(i for i, v in enumerate(a64) if isinstance(v, (float, np.ndarray)))
    grad = interp.lookup("grad")(interp.lookup("L"), wrt)
    g64 = grad(*a64, c)
    g32 = grad(*a32, _f32(c))
    for i, g, w in zip(wrt, g32, g64):
        if isinstance(a32[i], np.ndarray):
            assert isinstance(g, np.ndarray) and g.dtype == np.float32, f"d/d{names[i]} of {expr} is {g.dtype}"
        _close(g, w, f"d/d{names[i]} of {expr}", tol=5e-3)


@pytest.mark.parametrize("expr,args", CASES, ids=IDS)
def test_float32_tangents_and_batches_stay_float32(expr, args):
    names = list(args)
    a64 = list(args.values())
    a32 = [_f32(v) for v in a64]
    if not any(isinstance(v, np.ndarray) and v.dtype == np.float32 for v in a32):
        pytest.skip("no float tensor argument")
    interp = _interp(expr, names)
    f, jvp, vmap = (interp.lookup(n) for n in ("f", "jvp", "vmap"))
    rng = np.random.default_rng(5)
    dirs = [rng.standard_normal(np.shape(v)) if isinstance(v, np.ndarray) else 0.0 for v in a64]
    t64 = jvp(f, tuple(a64), tuple(dirs))[1]
    t32 = jvp(f, tuple(a32), tuple(_f32(d) for d in dirs))[1]
    _dtype_ok(t32, expr, a32, "the tangent")
    _close(t32, t64, f"tangent of {expr}", tol=5e-3)
    # a batch of two examples: the first argument mapped, the others shared
    first = next(i for i, v in enumerate(a32) if isinstance(v, np.ndarray) and v.dtype == np.float32)
    axes = tuple(0 if i == first else None for i in range(len(a32)))
    batch64 = list(a64)
    batch64[first] = np.stack([a64[first], a64[first] * 0.5])
    batch32 = [_f32(v) for v in batch64]
    b64 = vmap(f, axes)(*batch64)
    b32 = vmap(f, axes)(*batch32)
    _dtype_ok(b32, expr, a32, "the batch")
    _close(b32, b64, f"vmap of {expr}", tol=5e-3)


# ---------------------------------------------------------------- every transformation
PROGRAM = """
struct Linear { w, b }
fn mlp(p, x) { return tanh(x @ p.w + p.b) }
fn loss(p, x, y) { return cross_entropy(mlp(p, x) @ transpose(p.w), y) + 0.1 * sum(p.w * p.w) }
fn rolled(x) {
    let h = x
    for i in range(20) { h = h * 0.9 + sin(h) * 0.1 }
    return sum(h * h)
}
fn norm_loss(x) { return sum(layer_norm(x) * x) + logsumexp(x) }
"""


def _program(dtype):
    """The program and float tensors of one dtype."""
    interp = dsl.Interpreter(seed=0)
    interp.run(PROGRAM)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((6, 4)).astype(dtype)
    w = (rng.standard_normal((4, 4)) * 0.5).astype(dtype)
    b = rng.standard_normal(4).astype(dtype)
    return interp, x, w, b


TRANSFORMED = [
    ("grad(loss)(Linear(w, b), x, y).w", "a struct's gradient"),
    ("jit(grad(loss))(Linear(w, b), x, y).b", "jit of grad"),
    ("jit(rolled)(x)", "a rolled loop under jit"),
    ("grad(rolled)(x)", "grad through a loop"),
    ("jit(grad(rolled))(x)", "jit of grad through a rolled loop"),
    ("vmap(fn(r) => grad(norm_loss)(r))(x)", "per-example gradients"),
    ("jvp(norm_loss, (x,), (x * 0.5,))[1]", "forward mode"),
    ("jacfwd(fn(v) => tanh(v @ w))(b)", "a forward Jacobian"),
    ("jacrev(fn(v) => tanh(v @ w))(b)", "a reverse Jacobian"),
    ("hessian(fn(v) => sum(tanh(v @ w)))(b)", "a Hessian"),
    ("grad(fn(v) => sum(grad(fn(u) => sum(sin(u) * u))(v)))(b)", "grad of grad"),
    ("jit(vmap(fn(r) => mlp(Linear(w, b), r)))(x)", "jit of vmap"),
]


@pytest.mark.parametrize("expr,what", TRANSFORMED, ids=[w for _, w in TRANSFORMED])
def test_every_transformation_keeps_float32(expr, what):
    results = {}
    for dtype in (np.float64, np.float32):
        interp, x, w, b = _program(dtype)
        for name, v in (("x", x), ("w", w), ("b", b), ("y", np.array([0.0, 1.0, 3.0, 2.0, 1.0, 0.0]))):
            interp.set(name, v)
        results[dtype] = interp.eval(expr)
    got, want = results[np.float32], results[np.float64]
    if isinstance(got, np.ndarray):
        assert got.dtype == np.float32, f"{what}: {got.dtype}"
    _close(got, want, what, tol=2e-3)


def test_float16_computes_and_differentiates_in_float16():
    interp = dsl.Interpreter()
    interp.run('let x = astype([0.5, -1.0, 2.0], "float16")\n'
               'let g = grad(fn(v) => sum(tanh(v) * v))(x)')
    g = interp.get("g")
    assert g.dtype == np.float16
    x = np.array([0.5, -1.0, 2.0])
    _close(g, np.tanh(x) + x * (1 - np.tanh(x) ** 2), "float16 gradient", tol=5e-3)


def test_a_jitted_function_stages_again_for_another_dtype():
    interp = dsl.Interpreter()
    interp.run("let f = jit(fn(v) => v * 2.0 + 1.0)\n"
               'let a = f([1.0, 2.0])\nlet b = f(astype([1.0, 2.0], "float32"))\nlet c = f([3.0])')
    assert interp.get("a").dtype == np.float64 and interp.get("c").dtype == np.float64
    assert interp.get("b").dtype == np.float32
    np.testing.assert_array_equal(interp.get("b"), [3.0, 5.0])


def test_the_numerics_check_names_the_operation_that_overflows_float32():
    interp = dsl.Interpreter()
    with pytest.raises(dsl.DgError) as err:        # exp(100) is 2.7e43: finite in float64, inf in float32
        interp.run('let x = astype([1.0, 100.0], "float32")\n'
                   "let g = grad(fn(v) => sum(exp(v) * 0.0 + exp(v) / exp(v)))(x)")
    assert err.value.kind == "numerics" and "exp" in str(err.value)
    interp.run("let g64 = grad(fn(v) => sum(exp(v) * 0.0 + exp(v) / exp(v)))([1.0, 100.0])")
    np.testing.assert_allclose(interp.get("g64"), [0.0, 0.0], atol=1e-12)


# ---------------------------------------------------------------- the builtins and promotion
def _eval(src):
    """The value of one dg expression."""
    return dsl.Interpreter(seed=0).eval(src)


@pytest.mark.parametrize("src,want", [
    ('dtype(zeros(2, dtype="float32"))', "float32"), ('dtype(ones((2, 2), dtype="int64"))', "int64"),
    ('dtype(full(2, 3, dtype="int32"))', "int32"), ('dtype(full(2, 1.5, dtype="float16"))', "float16"),
    ('dtype(eye(2, dtype="bool"))', "bool"), ('dtype(arange(3, dtype="int64"))', "int64"),
    ('dtype(linspace(0.0, 1.0, 3, dtype="float32"))', "float32"), ('dtype(tensor([1, 2], dtype="int64"))', "int64"),
    ('dtype(zeros_like(zeros(2, dtype="float32")))', "float32"), ('dtype(ones_like([1.0], dtype="int64"))', "int64"),
    ('dtype(rand(2, dtype="float32"))', "float32"), ('dtype(randn(2, dtype="float32"))', "float32"),
    ('dtype(normal(0.0, 1.0, (2,), key=rng(0), dtype="float32"))', "float32"),
    ('dtype(uniform(zeros(2, dtype="float32"), 1.0, key=rng(0)))', "float32"),
    ('dtype(uniform(0.0, 1.0, (2,), key=rng(0)))', "float64"),
    ("dtype(zeros(2))", "float64"), ("dtype([1, 2])", "float64"), ("dtype(1.0)", "float64"), ("dtype(3)", "int64"),
    ("dtype(true)", "bool"), ("dtype([1.0] > 0.0)", "bool"), ("dtype(argmax([1.0, 2.0]))", "int64"),
    ("dtype(argmax([[1.0, 2.0]], axis=1))", "float64"),      # positions along an axis are floats, as indices are
    # numpy 2's promotion (NEP 50): numbers take the tensor's type, tensors promote between themselves
    ('dtype(zeros(2, dtype="float32") * 2.0)', "float32"), ('dtype(zeros(2, dtype="float32") + 1)', "float32"),
    ('dtype(zeros(2, dtype="float32") + zeros(2))', "float64"),
    ('dtype(zeros(2, dtype="float16") + zeros(2, dtype="float32"))', "float32"),
    ('dtype(arange(2, dtype="int64") * 2)', "int64"), ('dtype(arange(2, dtype="int64") / 2)', "float64"),
    ('dtype(arange(2, dtype="int64") + 0.5)', "float64"),
    ('dtype(arange(2, dtype="int64") + zeros(2, dtype="float32"))', "float64"),
    ('dtype(where([true, false], zeros(2, dtype="float32"), 1.0))', "float32"),
    ('dtype(zeros(2, dtype="float32") * ([1.0, 2.0] > 1.0))', "float32"),
    ('dtype(exp(zeros(2, dtype="float32")))', "float32"), ('dtype(erf(zeros(2, dtype="float32")))', "float32"),
    ('dtype(cat((zeros(2, dtype="float32"), zeros(2, dtype="float32"))))', "float32"),
    ('let x = zeros(3, dtype="float32")\nx[0] = 2.0\ndtype(x)', "float32"),
    ('dtype(diag(ones(2, dtype="float32")))', "float32"), ('dtype(diagonal(eye(2, dtype="float32")))', "float32"),
    ('dtype(einsum("ii->i", eye(2, dtype="float32")))', "float32"),
    ("type(arange(3, dtype=\"int64\")[1])", "int"), ('sum(arange(4, dtype="int64"))', 6),
    ('astype([1.7, -1.7, 2.5], "int64")[1]', -1), ('str(astype([1.7, -2.5], "int64"))', "[1, -2]"),
    ('str(astype([0.1, 2.0], "float32"))', "[0.1, 2.0]"), ('str(astype([0.0, 2.0], "bool"))', "[false, true]"),
    ('[10.0, 20.0, 30.0][arange(2, dtype="int64") + 1]', None),
    ('dtype(where([true, false], arange(2, dtype="int64"), 0))', "int64"), ("dtype(where([true, false], 1, 0))", "float64"),
    ('str(vmap(fn(v) => v * 2)(arange(3, dtype="int64")))', "[0, 2, 4]"),
    ('let t = [10.0, 20.0, 30.0]\nstr(vmap(fn(v) => t[v])(arange(3, dtype="int64")))', "[10.0, 20.0, 30.0]"),
    ('let f = jit(fn(v) => v[1] * 2 + sum(v))\nf(arange(3, dtype="int64")) + f(arange(3, dtype="int64") + 5)', 35),
])
def test_dtypes_of_constructors_casts_and_promotion(src, want):
    lines = src.split("\n")
    interp = dsl.Interpreter(seed=0)
    interp.run("\n".join(lines[:-1]))
    got = interp.eval(lines[-1])
    if want is None:
        np.testing.assert_array_equal(got, [20.0, 30.0])
    else:
        assert got == want and type(got) is type(want)


@pytest.mark.parametrize("src,kind,words", [
    ('zeros(2, dtype="bfloat16")', "value", "bfloat16 is not a numpy type"),
    ('astype([1.0], "float128")', "value", 'unknown dtype "float128"'),
    ("zeros(2, dtype=32)", "type", "dtype is a name"),
    ('rand(2, dtype="int64")', "value", "rand draws floats"),
    ('astype(3000000000, "int32")', "value", "does not fit in int32"),
    ('astype("a", "float32")', "type", "astype needs a number or tensor"),
    # numpy refuses an int result of 2 ** -1 (dg's ints give 0.5: a number is not a tensor)
    ('arange(3, dtype="int64") ** -1', "value", "an int tensor cannot be raised to a negative int power"),
    ('pow(arange(3, dtype="int64"), arange(3, dtype="int64") - 1)', "value", "negative int power"),
    ('jit(fn(v, n) => v ** n)(arange(3, dtype="int64"), -2)', "value", "negative int power"),
    ('vmap(fn(v) => v ** -1)(arange(3, dtype="int64"))', "value", "negative int power"),
])
def test_a_bad_dtype_is_an_error_in_dgs_words(src, kind, words):
    with pytest.raises(dsl.DgError) as err:
        _eval(src)
    assert err.value.kind == kind and words in str(err.value)


def test_a_float_without_an_int_value_is_refused_by_the_cast_on_every_backend(backend):
    # numpy's cast gives the machine's answer (INT_MIN on x86, saturation on ARM) and XLA's
    # saturates: a NaN, an infinity or a float past the range is an error everywhere
    interp = dsl.Interpreter(backend=backend)
    interp.run('let to32 = jit(fn(x) => astype(x, "int32"))\nlet to64 = jit(fn(x) => astype(x, "int64"))\n'
               'let a = to32([2.9, -2147483648.5])\nlet b = to32([2.9, -2147483648.5])\nlet c = to64(3.7)')
    assert interp.get("b").tolist() == [2, -2147483648] and interp.get("b").dtype == np.int32
    for src, words in [("to32([1.0, 2147483648.0])", "astype: 2147483648.0 does not fit in int32 (an entry"),
                       ("to32([-2147483649.0, 0.0])", "astype: -2147483649.0 does not fit in int32"),
                       ("to64(nan)", "astype: nan has no int64 value"), ("to64(-inf)", "astype: -inf has no int64 value"),
                       ("to64(9.3e18)", "astype: 9.3e+18 does not fit in int64"),
                       ('astype([1.0, nan], "int32")', "astype: nan has no int32 value (an entry"),
                       ('vmap(fn(x) => astype(x, "int32"))([1.0, 5e9])', "5000000000.0 does not fit in int32")]:
        for _ in range(2):      # staged, then compiled
            with pytest.raises(dsl.DgError) as err:
                interp.eval(src)
            assert err.value.kind == "value" and words in str(err.value), src
    assert interp.eval("to64(-9223372036854775808.0)") == -2 ** 63
    assert interp.eval('astype([nan, 0.0], "bool")').tolist() == [True, False]      # numpy's truth of NaN


def test_a_cast_to_ints_passes_no_gradient_and_float_casts_pass_it_in_the_argument_type():
    interp = dsl.Interpreter()
    interp.run('let g = grad(fn(v) => sum(astype(v, "float32") * astype(v * 3.0, "int64")))([0.5, 1.5])')
    g = interp.get("g")
    assert g.dtype == np.float64
    np.testing.assert_array_equal(g, [1.0, 4.0])     # d/dv of v * trunc(3v): trunc(3v), nothing through the int


@pytest.mark.parametrize("transform", ["grad(grad(f))", "jit(grad(f))", "jit(grad(grad(grad(f))))"])
def test_a_cast_of_a_number_under_nested_derivatives_is_recorded_on_each_level(transform):
    # the cast's kernel, called with a value still boxed by an outer level, records there too
    interp = dsl.Interpreter()
    interp.run('fn f(x) { return sum(astype([0.1, 0.2], "float32") * astype(x * x, "float32")) }\n'
               f"let d = {transform}")
    d = interp.lookup("d")
    want = {"grad(grad(f))": 0.6, "jit(grad(f))": 0.6 * 0.7, "jit(grad(grad(grad(f))))": 0.0}[transform]
    assert abs(float(d(0.7)) - want) < 1e-6


def test_checkpoints_and_python_keep_the_element_types(tmp_path):
    interp = dsl.Interpreter()
    path = str(tmp_path / "m.ckpt")
    interp.run(f'let m = {{"a": astype([0.1, 2.0], "float32"), "h": astype([1.5], "float16"), '
               f'"i": arange(3, dtype="int64"), "j": astype([7.0], "int32"), "f": [0.1], "m": [1.0] > 0.0}}\n'
               f'save("{path}", m)\nlet back = load("{path}")')
    back = interp.get("back")
    assert {k: v.dtype.name for k, v in back.items()} == {
        "a": "float32", "h": "float16", "i": "int64", "j": "int32", "f": "float64", "m": "bool"}
    np.testing.assert_array_equal(back["a"], np.array([0.1, 2.0], np.float32))
    interp.set("p", np.array([0.25, 0.5], np.float32))
    assert interp.eval("dtype(p)") == "float32" and interp.get("p").dtype == np.float32


def test_a_float32_model_trains_with_the_stdlib_and_stays_float32():
    interp = dsl.Interpreter(seed=0)
    interp.run('''
import nn
import optim
seed(0)
let x = randn((64, 2), dtype="float32")
let y = astype(x[:, 0] * x[:, 1] > 0.0, "float32")
let model = nn.mlp((2, 16, 1), dtype="float32")
fn loss(m) { return nn.bce_with_logits(nn.mlp_apply(m, x)[:, 0], y) }
let state = optim.adam_init(model)
let first = loss(model)
let step = jit(fn(m, s) {
    let l, g = value_and_grad(loss)(m)
    let m2, s2 = optim.adam(m, g, s, 0.05)
    return m2, s2, l
})
for i in range(100) {
    let m2, s2, l = step(model, state)
    model = m2
    state = s2
}
let last = loss(model)
''')
    assert interp.eval("last") < 0.5 * interp.eval("first")
    leaves = interp.eval("tree_leaves((model, state))")
    floats = [v for v in leaves if isinstance(v, np.ndarray)]
    assert floats and all(v.dtype == np.float32 for v in floats)
