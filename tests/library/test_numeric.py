"""numpy's everyday functions (dsl/runtime/builtins/numeric.py, and var's and std's ddof): values
as numpy's, derivatives against central differences (always) and JAX (where installed), batched
by vmap, jitted on the numpy and XLA backends, and dg's errors for bad shapes."""

import numpy as np
import pytest

import dsl
from dsl.errors import DgError
from gradcheck import check, check_against_jax, jax_or_skip

RNG = np.random.default_rng(11)
M = RNG.normal(size=(3, 4))
V3 = RNG.normal(size=(5, 3))
W3 = RNG.normal(size=(5, 3))
XP = np.array([-1.0, 0.0, 0.5, 2.0, 3.5])
FP = RNG.normal(size=5)
XQ = np.array([-2.0, -0.5, 0.2, 0.7, 1.9, 3.0, 4.0])      # outside, inside, none on a knot
Y = RNG.normal(size=(3, 6))
T = np.sort(RNG.uniform(0.0, 4.0, size=6))
MN = M.copy()
MN[0, 2] = MN[2, 0] = MN[2, 3] = np.nan

# (dg expression, numpy/jax.numpy function of (np, *args), the arguments)
CASES = [
    ("square(m)", lambda np_, m: np_.square(m), {"m": M}),
    ("cross(v, w)", lambda np_, v, w: np_.cross(v, w), {"v": V3, "w": W3}),
    ("cross(transpose(v), transpose(w), axis=0)", lambda np_, v, w: np_.cross(v.T, w.T, axis=0), {"v": V3, "w": W3}),
    ("trapezoid(y)", lambda np_, y: np_.trapezoid(y), {"y": Y}),
    ("trapezoid(y, x=t)", lambda np_, y, t: np_.trapezoid(y, x=t), {"y": Y, "t": T}),
    ("trapezoid(y, dx=0.3, axis=0)", lambda np_, y: np_.trapezoid(y, dx=0.3, axis=0), {"y": Y}),
    ("interp(q, xp, fp)", lambda np_, q, xp, fp: np_.interp(q, xp, fp), {"q": XQ, "xp": XP, "fp": FP}),
    ("interp(q, xp, fp, left=-5.0, right=5.0)", lambda np_, q, xp, fp: np_.interp(q, xp, fp, left=-5.0, right=5.0),
     {"q": XQ, "xp": XP, "fp": FP}),
    ("median(m)", lambda np_, m: np_.median(m), {"m": M}),
    ("median(m, axis=1)", lambda np_, m: np_.median(m, axis=1), {"m": M}),
    ("median(m, axis=0, keepdims=true)", lambda np_, m: np_.median(m, axis=0, keepdims=True), {"m": M}),
    ("quantile(m, 0.3, axis=1)", lambda np_, m: np_.quantile(m, 0.3, axis=1), {"m": M}),
    ("quantile(m, 0.9)", lambda np_, m: np_.quantile(m, 0.9), {"m": M}),
    ("quantile(m, [0.1, 0.5, 0.9], axis=1)", lambda np_, m: np_.quantile(m, np.array([0.1, 0.5, 0.9]), axis=1), {"m": M}),
    ("quantile(m, [0.25, 0.75], axis=0, keepdims=true)",
     lambda np_, m: np_.quantile(m, np.array([0.25, 0.75]), axis=0, keepdims=True), {"m": M}),
    ("squeeze(expand_dims(m, (0, 2)), 0)", lambda np_, m: np_.squeeze(np_.expand_dims(m, (0, 2)), 0), {"m": M}),
    ("var(m, ddof=1)", lambda np_, m: np_.var(m, ddof=1), {"m": M}),
    ("broadcast_to(m[0], (2, 3, 4)) * m", lambda np_, m: np_.broadcast_to(m[0], (2, 3, 4)) * m, {"m": M}),
    ("broadcast_to(m[:, 0:1], (3, 4)) * m", lambda np_, m: np_.broadcast_to(m[:, 0:1], (3, 4)) * m, {"m": M}),
    ("ravel(m) * arange(12.0)", lambda np_, m: np_.ravel(m) * np.arange(12.0), {"m": M}),
    ("moveaxis(v[:, :, newaxis] * w[:, newaxis, 0:2], (0, 1), (2, 0))",
     lambda np_, v, w: np_.moveaxis(v[:, :, None] * w[:, None, 0:2], (0, 1), (2, 0)), {"v": V3, "w": W3}),
    ("swapaxes(v[:, :, newaxis] * w[:, newaxis, 0:2], 0, 2)",
     lambda np_, v, w: np_.swapaxes(v[:, :, None] * w[:, None, 0:2], 0, 2), {"v": V3, "w": W3}),
    ("full_like(m, sum(m)) * m", lambda np_, m: np_.full_like(m, np_.sum(m)) * m, {"m": M}),
    ("std(m, axis=1, ddof=1)", lambda np_, m: np_.std(m, axis=1, ddof=1), {"m": M}),
    ("var(m, axis=0, keepdims=true, ddof=2)", lambda np_, m: np_.var(m, axis=0, keepdims=True, ddof=2), {"m": M}),
    # axis none: the entries flattened (numpy's sort and take_along_axis, JAX's softmax)
    ("sort(m, none) * arange(12.0)", lambda np_, m: np_.sort(m, axis=None) * np.arange(12.0), {"m": M}),
    ("softmax(m, none) * m", lambda np_, m: np_.exp(m - np_.max(m)) / np_.sum(np_.exp(m - np_.max(m))) * m, {"m": M}),
    ("log_softmax(m, none) * m", lambda np_, m: (m - np_.max(m) - np_.log(np_.sum(np_.exp(m - np_.max(m))))) * m,
     {"m": M}),
    ("take_along_axis(m, [5.0, 0.0, 11.0, 5.0], none)",
     lambda np_, m: np_.take_along_axis(np_.ravel(m), np.array([5, 0, 11, 5]), 0), {"m": M}),
    # statistics: rows as variables, columns as observations (or the other way round)
    ("cov(m)", lambda np_, m: np_.cov(m), {"m": M}),
    ("cov(m, m * m)", lambda np_, m: np_.cov(m, m * m), {"m": M}),
    ("cov(transpose(m), rowvar=false, ddof=0)", lambda np_, m: np_.cov(m.T, rowvar=False, ddof=0), {"m": M}),
    ("cov(m[0], bias=true)", lambda np_, m: np_.cov(m[0], bias=True), {"m": M}),
    ("corrcoef(m)", lambda np_, m: np_.corrcoef(m), {"m": M}),
    ("corrcoef(m[0], y[0, 0:4])", lambda np_, m, y: np_.corrcoef(m[0], y[0, 0:4]), {"m": M, "y": Y}),
    ("nansum(mn)", lambda np_, mn: np_.nansum(mn), {"mn": MN}),
    ("nansum(mn, axis=1)", lambda np_, mn: np_.nansum(mn, axis=1), {"mn": MN}),
    ("nanmean(mn, axis=0, keepdims=true)", lambda np_, mn: np_.nanmean(mn, axis=0, keepdims=True), {"mn": MN}),
    ("nanmean(mn)", lambda np_, mn: np_.nanmean(mn), {"mn": MN}),
    ("polyval(fp, q)", lambda np_, fp, q: np_.polyval(fp, q), {"fp": FP, "q": XQ}),
    ("polyval(fp, m)", lambda np_, fp, m: np_.polyval(fp, m), {"fp": FP, "m": M}),
]
IDS = [c[0] for c in CASES]


def _interp(args, backend="numpy"):
    """An interpreter with the arguments set."""
    interp = dsl.Interpreter(seed=0, backend=backend)
    for name, v in args.items():
        interp.set(name, v)
    return interp


@pytest.mark.parametrize("expr, ref, args", CASES, ids=IDS)
def test_values_are_numpys(expr, ref, args):
    got = _interp(args).eval(expr)
    np.testing.assert_allclose(got, ref(np, *args.values()), rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("expr, ref, args", CASES, ids=IDS)
def test_gradients_agree_with_central_differences(expr, ref, args):
    check(expr, rtol=1e-6, atol=1e-7, **args)


@pytest.mark.parametrize("expr, ref, args", CASES, ids=IDS)
def test_values_gradients_and_tangents_agree_with_jax(expr, ref, args):
    check_against_jax(expr, ref, args)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_jit_and_vmap_give_the_eager_values(backend):
    if backend == "xla":
        jax_or_skip()
    interp = _interp({"m": M, "v": V3, "w": W3, "q": XQ, "xp": XP, "fp": FP, "y": Y, "t": T}, backend)
    interp.run("fn f(m, v, w, q, fp, y) {\n"
               "  return (median(m, axis=1), cross(v, w), interp(q, xp, fp), trapezoid(y, x=t),\n"
               "          quantile(m, 0.3), any(m > 1.0), all(m > -3.0, axis=0), isclose(m, m + 1e-9),\n"
               "          moveaxis(broadcast_to(m, (2, 3, 4)), 0, -1) * sum(m), swapaxes(v, 0, 1), ravel(w),\n"
               "          full_like(m, sum(m)), isinf(m / (m - m[0, 0])))\n}\n"
               "let eager = f(m, v, w, q, fp, y)\n"
               "let jitted = jit(f)(m, v, w, q, fp, y)\nlet again = jit(f)(m, v, w, q + 0.25, fp, y)\n"
               "let mapped = vmap(fn(r) => (median(r), interp(r, xp, fp), any(r > 1.0), quantile(r, 0.3)))(m)\n"
               "let g = jit(grad(fn(q, fp) => sum(interp(q, xp, fp) * q), argnums=(0, 1)))(q, fp)")
    eager, jitted = interp.get("eager"), interp.get("jitted")
    for a, b in zip(eager, jitted):
        np.testing.assert_allclose(np.asarray(b, dtype=float), np.asarray(a, dtype=float), rtol=1e-12)
    # a second call with the points moved to other segments: no stale segment from the first
    np.testing.assert_allclose(interp.get("again")[2], np.interp(XQ + 0.25, XP, FP), rtol=1e-12)
    med, inter, anys, quant = interp.get("mapped")
    np.testing.assert_allclose(med, np.median(M, axis=1), rtol=1e-13)
    np.testing.assert_allclose(inter, np.interp(M, XP, FP), rtol=1e-13)
    assert list(anys) == list((M > 1.0).any(axis=1))
    np.testing.assert_allclose(quant, np.quantile(M, 0.3, axis=1), rtol=1e-13)
    gq, gfp = interp.get("g")
    slope = np.diff(FP) / np.diff(XP)
    seg = np.clip(np.searchsorted(XP, XQ, side="right") - 1, 0, len(XP) - 2)
    inside = (XQ > XP[0]) & (XQ < XP[-1])
    np.testing.assert_allclose(gq, np.interp(XQ, XP, FP) + XQ * np.where(inside, slope[seg], 0.0), rtol=1e-12)
    assert gfp.shape == FP.shape


def test_any_all_and_isclose_are_numpys():
    interp = _interp({"m": M})
    assert type(interp.eval("any(m > 1.0)")) is bool and interp.eval("any(m > 1.0)") == bool((M > 1.0).any())
    assert interp.eval("any(m > 9.0)") is False
    assert type(interp.eval("all(m > -9.0)")) is bool and interp.eval("all(m > -9.0)")
    assert list(interp.eval("all(m > 0.0, axis=1)")) == list((M > 0.0).all(axis=1))
    assert list(interp.eval("any([0.0, nan, 0.0] != 0.0, axis=0, keepdims=true)")) == [True]
    assert interp.eval("any(zeros((0,)))") is False and interp.eval("all(zeros((0,)))") is True
    a = np.array([1.0, np.inf, np.nan, 1e-9, 1.0])
    b = np.array([1.0 + 1e-9, np.inf, np.nan, 0.0, 1.1])
    interp.set("a", a)
    interp.set("b", b)
    assert list(interp.eval("isclose(a, b)")) == list(np.isclose(a, b))
    assert list(interp.eval("isclose(a, b, atol=0.2, rtol=0.0)")) == list(np.isclose(a, b, atol=0.2, rtol=0.0))


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_logical_functions_are_numpys_and_work_under_every_transformation(backend):
    if backend == "xla":
        jax_or_skip()
    a, b = M > 0.0, M < 0.5
    interp = _interp({"m": M}, backend)
    for name in ("logical_and", "logical_or", "logical_xor"):
        got = interp.eval(f"{name}(m > 0.0, m < 0.5)")
        assert got.dtype == np.bool_ and list(got.ravel()) == list(getattr(np, name)(a, b).ravel())
        jitted = interp.eval(f"jit(fn(m) => {name}(m > 0.0, m < 0.5))(m)")
        assert list(jitted.ravel()) == list(got.ravel())
        mapped = interp.eval(f"vmap(fn(r) => {name}(r > 0.0, r < 0.5))(m)")
        assert list(mapped.ravel()) == list(got.ravel())
    assert list(interp.eval("logical_not(m > 0.0)").ravel()) == list(np.logical_not(a).ravel())
    # numbers are true where not zero, as numpy's; two bools give a bool
    assert list(interp.eval("logical_and([2.0, 0.0, -1.0], 1.0)")) == [True, False, True]
    assert interp.eval("logical_or(false, false)") is False and interp.eval("logical_not(0.0)") is True
    # a mask inside a differentiated where passes the gradient of the branch it picks
    g = interp.eval("jit(grad(fn(m) => sum(where(logical_and(m > 0.0, m < 0.5), m * m, -m))))(m)")
    np.testing.assert_allclose(g, np.where(a & b, 2.0 * M, -1.0))


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_searchsorted_and_digitize_are_numpys_under_jit_and_vmap(backend):
    if backend == "xla":
        jax_or_skip()
    a = np.array([1.0, 2.0, 2.0, 3.0, np.nan])
    v = np.array([[2.0, 0.5, np.nan], [3.0, 2.0, 9.0]])
    interp = _interp({"a": a, "v": v, "b": np.stack([a, a - 1.0])}, backend)
    for side in ("left", "right"):
        want = np.searchsorted(a, v, side=side)
        for expr in (f"searchsorted(a, v, side=\"{side}\")", f"jit(fn(a, v) => searchsorted(a, v, side=\"{side}\"))(a, v)",
                     f"vmap(fn(r) => searchsorted(a, r, side=\"{side}\"))(v)"):
            np.testing.assert_array_equal(interp.eval(expr), want)
        # a batch of sorted vectors: each row searched in its own (nan after every number)
        per_row = np.stack([np.searchsorted(a, v[0], side=side), np.searchsorted(a - 1.0, v[1], side=side)])
        np.testing.assert_array_equal(interp.eval(f"jit(vmap(fn(s, r) => searchsorted(s, r, side=\"{side}\")))(b, v)"),
                                      per_row)
    assert interp.eval("searchsorted(a, 2.0)") == 1 and type(interp.eval("searchsorted(a, 2.0)")) is int
    for right in (False, True):
        got = interp.eval(f"digitize(v, [1.0, 2.0, 3.0], right={str(right).lower()})")
        np.testing.assert_array_equal(got, np.digitize(v, [1.0, 2.0, 3.0], right=right))


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_histogram_is_numpys_and_differentiable_in_its_weights(backend):
    if backend == "xla":
        jax_or_skip()
    x = np.random.default_rng(3).normal(size=200)
    x[5] = x.max()      # the largest entry twice: the last bin holds its upper edge
    w = np.random.default_rng(4).uniform(size=200)
    interp = _interp({"x": x, "w": w}, backend)
    cases = [("histogram(x)", {}), ("histogram(x, bins=5, range=(-1.0, 1.0))", dict(bins=5, range=(-1, 1))),
             ("histogram(x, bins=[-3.0, -1.0, 0.0, 0.5, 3.0])", dict(bins=[-3.0, -1.0, 0.0, 0.5, 3.0])),
             ("histogram(x, weights=w, density=true)", dict(weights=w, density=True)),
             ("jit(fn(x) => histogram(x, bins=7))(x)", dict(bins=7)), ("histogram(ones(4) * 2.0, bins=4)", None)]
    for expr, kw in cases:
        counts, edges = interp.eval(expr)
        want = np.histogram(np.ones(4) * 2.0, 4) if kw is None else np.histogram(x, **kw)
        np.testing.assert_allclose(counts, want[0], rtol=1e-13)
        np.testing.assert_allclose(edges, want[1], rtol=1e-13)
    mapped = interp.eval("vmap(fn(r) => histogram(r, bins=3, range=(-2.0, 2.0))[0])(reshape(x, (4, 50)))")
    np.testing.assert_array_equal(mapped, [np.histogram(r, 3, range=(-2, 2))[0] for r in x.reshape(4, 50)])
    g = interp.eval("grad(fn(w) => sum(histogram(x, bins=4, weights=w)[0] * [1.0, 2.0, 3.0, 4.0]))(w)")
    bin_of = np.clip(np.searchsorted(np.histogram(x, 4)[1], x, "right") - 1, 0, 3)
    np.testing.assert_array_equal(g, bin_of + 1.0)


def test_isinf_and_full_likes_types_are_numpys():
    interp = _interp({"a": np.array([1.0, np.inf, -np.inf, np.nan])})
    assert list(interp.eval("isinf(a)")) == [False, True, True, False]
    assert interp.eval("isinf(-inf)") is True and interp.eval("isinf(10 ** 400)") is False
    assert interp.eval("dtype(full_like(astype(a, \"float32\"), 2))") == "float32"
    got = interp.eval("full_like(a, 2, dtype=\"int64\")")
    assert got.dtype == np.int64 and list(got) == [2, 2, 2, 2]


def test_interp_through_one_knot_is_its_value_and_left_right_outside():
    interp = _interp({"q": np.array([0.5, 1.0, 2.0])})
    assert list(interp.eval("interp(q, [1.0], [3.0])")) == list(np.interp([0.5, 1.0, 2.0], [1.0], [3.0]))
    got = interp.eval("interp(q, [1.0], [3.0], left=-1.0, right=9.0)")
    assert list(got) == list(np.interp([0.5, 1.0, 2.0], [1.0], [3.0], left=-1.0, right=9.0))


def test_quantile_of_a_tensor_of_q_has_qs_axes_first_as_numpys():
    got = _interp({"m": M}).eval("quantile(m, [[0.25], [0.75]], axis=1)")
    np.testing.assert_allclose(got, np.quantile(M, np.array([[0.25], [0.75]]), axis=1), rtol=1e-14)


def test_median_and_quantile_are_nan_where_a_nan_is_among_the_entries():
    interp = _interp({"m": np.array([[1.0, np.nan, 2.0], [3.0, 1.0, 2.0]])})
    got = interp.eval("median(m, axis=1)")
    assert np.isnan(got[0]) and got[1] == 2.0
    assert np.isnan(interp.eval("quantile(m, 0.5)"))


@pytest.mark.parametrize("expr, kind, words", [
    ("squeeze(zeros((2, 1)), 0)", "shape", "axis 0"),
    ("squeeze(zeros((2, 1)), 2)", "index", "squeeze"),
    ("expand_dims(zeros((2,)), 3)", "index", "expand_dims"),
    ("cross(zeros((2,)), zeros((2,)))", "shape", "length 3"),
    ("interp(0.5, [0.0, 1.0], [1.0, 2.0, 3.0])", "shape", "one same length"),
    ("quantile(ones(3), 1.5)", "value", "[0, 1]"),
    ("trapezoid(ones(3), x=ones(4))", "shape", "4 points"),
    ("trapezoid(ones(3), 0.5)", "type", "the sample points"),
    ("isclose(ones(2), ones(2), rtol=\"a\")", "type", "rtol"),
    ("broadcast_to(ones(3), (2, 4))", "shape", "does not broadcast to (2, 4)"),
    ("moveaxis(zeros((2, 3)), (0, 1), 0)", "value", "as many axes"),
    ("swapaxes(zeros((2, 3)), 0, 2)", "index", "swapaxes"),
    ("swapaxes(zeros((2, 3)), none, 1)", "type", "an axis must be an int"),
    ("moveaxis(zeros((2, 3)), 0, none)", "type", "an axis must be an int"),
    ("searchsorted(ones((2, 2)), 1.0)", "shape", "a sorted vector"),
    ("histogram(ones(3), bins=0)", "value", "at least 1"),
    ("histogram(ones(3), range=1.0)", "type", "(lo, hi) pair"),
    ("histogram(ones(3), bins=[1.0])", "type", "two edges"),
    ("histogram(ones(3), bins=[2.0, 1.0, 3.0])", "value", "must increase"),
    ("histogram(ones(3), density=1)", "type", "density"),
    ("histogram(zeros((0,)))", "value", "its range"),
    ("histogram(ones(3), weights=ones(2))", "shape", "weights"),
    ("searchsorted(ones(2), 1.0, side=\"middle\")", "value", "side"),
    ("digitize(1.0, ones(2), right=1)", "type", "right"),
    ("logical_and(ones(2), ones(3) > 0.0)", "shape", "cannot and the masks of tensors of shapes (2,) and (3,)"),
    ("full_like(ones(2), (1,))", "type", "full_like needs a number"),
    ("tensor(((true, false), (true,)))", "shape", "cannot stack tensors of different shapes (2,) and (1,)"),
    # these ended in Python exceptions: a tuple of tuples reaching numpy's dtype, an array compared
    # with strings, an axis of none counted past
    ("diag(((1.0, 2.0), (3.0, 4.0)))", "type", "expected a tensor for diag, got tuple"),
    ("grad(fn(t) => trace(t))(((1.0, 2.0), (3.0, 4.0)))", "type", "expected a tensor for trace, got tuple"),
    ("jit(fn(t) => tril(t))(((1.0, 2.0), (3.0, 4.0)))", "type", "expected a tensor for tril, got tuple"),
    ('searchsorted([1.0, 2.0], 1.5, [1.0, 2.0])', "value", 'side must be "left" or "right"'),
    ('meshgrid([1.0], [2.0], indexing=[1.0])', "value", 'indexing must be "xy" or "ij"'),
    ("expand_dims(ones(2), none)", "type", "an axis must be an int, got none"),
    ("grad(fn(x) => sum(expand_dims(x, (0, none))))(ones(2))", "type", "an axis must be an int, got none"),
    ("take_along_axis(ones((2, 2)), none, none)", "type", "indices must be a tensor of whole numbers"),
    ("diff(ones(3), axis=none)", "type", "diff: an axis must be an int, got none"),
    ("grad(fn(x) => trapezoid(x, axis=none))(ones(3))", "type", "trapezoid: an axis must be an int, got none"),
    ("median(ones(3), keepdims=[0.0, 1.0])", "type", "median's keepdims must be true or false, got tensor"),
    ("quantile(ones(3), 0.5, keepdims=1)", "type", "quantile's keepdims must be true or false, got int"),
    ("norm(ones(3), ord=[0.0, 1.0])", "type", "norm: ord must be a number"),
    ("cov(ones((2, 2, 2)))", "shape", "cov: x must be a vector or a matrix"),
    ("cov(ones((2, 3)), ones((2, 4)))", "shape", "cov: x and y need as many observations, got 3 and 4"),
    ("cov(ones((2, 3)), rowvar=1)", "type", "cov: rowvar must be true or false"),
    ("cov(ones((2, 3)), ddof=1.5)", "type", "cov: ddof must be an int"),
    ("cov(ones((2, 3)), bias=ones(2))", "type", "cov: bias must be true or false, got tensor"),
    ("corrcoef(ones((2, 3)), rowvar=ones(2))", "type", "corrcoef: rowvar must be true or false, got tensor"),
    ("corrcoef((1.0, 2.0))", "type", "corrcoef needs a tensor, got tuple"),
    ("polyval(ones((2, 2)), 1.0)", "shape", "polyval: p must be a vector of coefficients"),
    ("kron(\"a\", ones(2))", "type", "kron needs a tensor, got string"),
    ("matrix_power(ones((2, 3)), 2)", "shape", "matrix_power needs a square matrix"),
    ("matrix_power(ones((2, 2)), 2.0)", "type", "matrix_power: the power must be an int"),
    ("nanmean(ones((2, 2)), axis=(0, 0))", "value", "repeats an axis"),
    ("log_ndtr((1.0,))", "type", "log_ndtr needs a number or a tensor, got tuple"),
    # every bool option is checked alike (arrays.flag): 1 is not true
    ("histogram(ones(3), density=1)", "type", "histogram: density must be true or false, got int"),
    ("digitize(ones(3), [0.0, 2.0], right=1)", "type", "digitize: right must be true or false, got int"),
    ("choice(3, (2,), replace=1)", "type", "choice: replace must be true or false, got int"),
    ("svd(eye(2), compute_uv=1)", "type", "svd: compute_uv must be true or false, got int"),
    ("jit(fn(x) => x, explain=1)", "type", "jit: explain must be true or false, got int"),
    ("vmap(fn(x) => x, explain=\"yes\")", "type", "vmap: explain must be true or false, got string"),
    # ints past float's range as indices, counts and sizes (Python's OverflowError had escaped)
    ("take_along_axis([1.0, 2.0], [10 ** 400], 0)", "index", "index inf is out of range"),
    ("gather(ones(3), 10 ** 400)", "type", "must hold whole numbers"),
    ("choice(10 ** 400)", "value", "below 2^64, got an int of 1,329 bits"),
    ("split(rng(0), 10 ** 400)", "value", "below 2^64"),
    ("split(rng(0), 10 ** 12)", "limit", "split's keys"),
    ("diag(ones(3), 10 ** 400)", "limit", "diag's matrix"),
    ("full_like(3, 10 ** 400)", "value", "an int of 1,329 bits does not fit in int64"),
    ("fold_in(rng(0), 10 ** 400)", "value", "fold_in needs a whole number in [0, 2^64)"),
])
def test_bad_arguments_are_dg_errors(expr, kind, words):
    with pytest.raises(DgError) as e:
        dsl.Interpreter().eval(expr)
    assert e.value.kind == kind and words in e.value.message


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_axis_none_flattens_under_every_transformation(backend):
    # the primitives' rules take an int axis: none reached them and failed in Python
    if backend == "xla":
        jax_or_skip()
    stack = np.stack([M, M[::-1] * 2.0])
    interp = _interp({"m": M, "s": stack}, backend)
    for expr, one in (("sort(r, none)", lambda r: np.sort(r, axis=None)),
                      ("argsort(r, none)", lambda r: np.argsort(r, axis=None, kind="stable").astype(float)),
                      ("softmax(r, none)", lambda r: np.exp(r) / np.exp(r).sum()),
                      ("log_softmax(r, none)", lambda r: r - np.log(np.exp(r).sum()))):
        want = np.stack([one(r) for r in stack])
        np.testing.assert_allclose(interp.eval(f"vmap(fn(r) => {expr})(s)"), want, rtol=1e-12)
        np.testing.assert_allclose(interp.eval(f"jit(vmap(fn(r) => {expr}))(s)"), want, rtol=1e-12)
    weights = np.arange(12.0).reshape(3, 4)
    interp.set("wt", weights)
    got = interp.eval("jit(grad(fn(m) => sum(sort(m, none) * ravel(wt))))(m)")
    want = np.zeros(12)
    want[np.argsort(M, axis=None, kind="stable")] = np.arange(12.0)
    np.testing.assert_allclose(got, want.reshape(3, 4), rtol=0)


def test_cross_with_axis_none_uses_the_last_axis_as_numpy_does():
    interp = _interp({"v": V3, "w": W3})
    np.testing.assert_allclose(interp.eval("cross(v, w, axis=none)"), np.cross(V3, W3, axis=None), rtol=1e-15)


@pytest.mark.parametrize("backend", ["numpy", "xla"])
def test_statistics_batch_without_a_loop_and_jit(backend, capfd):
    if backend == "xla":
        jax_or_skip()
    stack = np.stack([MN, MN * 2.0 + 1.0])
    interp = _interp({"s": stack, "fp": FP, "mm": M}, backend)
    interp.run("fn f(m) { return (cov(m), corrcoef(transpose(m), rowvar=false), nansum(m, axis=1), nanmean(m),\n"
               "                    polyval(fp, m)) }\n"
               "let mapped = vmap(f, explain=true)(s)\nlet jitted = jit(vmap(f))(s)\n"
               "fn h(m) { return sum(cov(m)) + sum(polyval(fp, m)) }\nfn hn(m) { return nanmean(m) + nansum(m * m) }\n"
               "let g = jit(grad(h))(mm)\nlet ge = grad(h)(mm)\n"
               "let gn = jit(grad(hn))(s[1])\nlet gne = grad(hn)(s[1])")
    assert "once per example" not in capfd.readouterr().err
    for k in range(2):
        m = stack[k]
        with np.errstate(all="ignore"):
            want = (np.cov(m), np.corrcoef(m), np.nansum(m, axis=1), np.nanmean(m), np.polyval(FP, m))
        for got in (interp.get("mapped"), interp.get("jitted")):
            for a, b in zip(got, want):
                np.testing.assert_allclose(np.asarray(a)[k], b, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(interp.get("g"), interp.get("ge"), rtol=1e-12, atol=1e-13)
    gn = interp.get("gn")
    np.testing.assert_allclose(gn, interp.get("gne"), rtol=1e-12, atol=1e-13)
    m = stack[1]
    np.testing.assert_allclose(gn, np.where(np.isnan(m), 0.0, 1.0 / np.sum(~np.isnan(m)) + 2.0 * m), rtol=1e-13)


def test_var_with_more_ddof_than_entries_is_inf_as_numpys_never_negative():
    # n - ddof went below 0: var([1.0, 2.0], ddof=3) was -0.5, a negative variance
    i = dsl.Interpreter()
    for ddof in ("2", "3", "10 ** 400"):
        assert i.eval(f"var([1.0, 2.0], ddof={ddof})") == np.inf
        assert i.eval(f"std([1.0, 2.0], ddof={ddof})") == np.inf
    assert i.eval("var([1.0, 2.0, 4.0], ddof=1)") == np.var([1.0, 2.0, 4.0], ddof=1)
    assert i.eval("var([1.0, 2.0, 4.0], ddof=-(10 ** 400))") == 0.0


@pytest.mark.parametrize("expr, want", [
    # ints past float's range (the fuzzer's kind of input) met Python's OverflowError
    ("round(1.5, 400)", np.nan),                 # numpy's: its scale overflows to inf
    ("round(1.5, 10 ** 400)", np.nan),
    ("round(123.456, -(10 ** 400))", np.nan),
    ("sum(tril(ones((2, 3)), 10 ** 400))", 6.0),
    ("sum(triu(ones((2, 3)), 10 ** 400))", 0.0),
    ("sum(pad(ones(1), 1, constant_values=10 ** 400))", np.inf),
    ("cov(ones((2, 3)), ddof=-(10 ** 400))[0, 0]", 0.0),
    ("cbrt(10 ** 400)", np.inf),
    ("searchsorted([0.0, 1.0], 10 ** 400)", 2),
    ("digitize(10 ** 400, [0.0, 1.0])", 2),
    ("sum(scatter_add(zeros(3), [0, 2], 10 ** 400))", np.inf),
])
def test_ints_past_floats_range_as_options_give_numbers_not_pythons_errors(expr, want):
    got = dsl.Interpreter().eval(expr)
    assert (np.isnan(got) if np.isnan(want) else got == want), (expr, got)


def test_vmap_of_linspace_and_histogram_gives_each_examples_own_numbers_to_the_bit():
    # the batched linspace computed a (1 - t) + b t where numpy computes a + i (b - a) / (n - 1):
    # a histogram's edges moved by a rounding, and a value on an edge fell into another bin
    i = dsl.Interpreter()
    i.run("let a = [0.1, -3.7, 1e-3, 5.0]\nlet b = [0.7, 2.2, 1e3, 5.0]\n"
          "let batched = vmap(fn(p, q) => linspace(p, q, 7))(a, b)\n"
          "let one_by_one = stack((linspace(0.1, 0.7, 7), linspace(-3.7, 2.2, 7), linspace(1e-3, 1e3, 7), "
          "linspace(5.0, 5.0, 7)))\n"
          "let x = reshape(linspace(-1.0, 2.0, 24), (4, 3, 2))\nlet counts = vmap(histogram)(x)[0]\n"
          "let each = stack((histogram(x[0])[0], histogram(x[1])[0], histogram(x[2])[0], histogram(x[3])[0]))")
    assert np.array_equal(i.get("batched"), i.get("one_by_one"))
    assert np.array_equal(i.get("counts"), i.get("each"))


def test_bools_count_as_zero_and_one_in_float_functions_and_norms():
    # numpy's arctan2 of two bools is a float16 (0.78515625); global_norm counted a bool tensor,
    # where a bool leaf is not counted (and vmap's batched bools were not)
    i = dsl.Interpreter()
    i.run("let r = (atan2(true, true), hypot(true, true), logaddexp(true, false), maximum(true, false))\n"
          "let n = (global_norm(tensor((true, false))), global_norm(true), global_norm({\"w\": [3.0, 4.0], \"on\": [true]}))")
    assert i.get("r") == (np.arctan2(1.0, 1.0), np.hypot(1.0, 1.0), np.logaddexp(1.0, 0.0), True)
    assert i.get("n") == (0.0, 0.0, 5.0)
