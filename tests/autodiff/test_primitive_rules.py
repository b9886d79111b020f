"""Every registered primitive's rules, checked against each other and against finite differences.

For each case (a dg expression exercising some primitives):
- reverse mode: grad of sum(expr * c), c a random cotangent, against central differences;
- forward mode: jvp against central differences in a random direction v, and against the
  pullback: <jvp(f)(x; v), u> == <v, vjp(f)(x)(u)> for random u, v;
- batching: vmap over a batch of 3 against stacking the expression on each example,
  with the batch on axis 0 or 1 of the mapped arguments and some arguments shared;
- reverse over reverse: grad of <grad(f)(x), v> against central differences of grad(f) in
  direction v (a kernel must record again on the outer trace when its argument is still boxed).

The last test fails when a registered primitive is exercised by no case here.
"""

import numpy as np
import pytest

import dsl
from dsl.core.stage import stage
from dsl.core.primitives.registry import PRIMS
from dsl.errors import GradError

from gradcheck import assert_close, check

RNG = np.random.default_rng(20261123)
H = 1e-6


def r(*shape, low=None):
    """Random inputs (positive ones with low=)."""
    if low is not None:
        return RNG.uniform(low, low + 1.5, shape) if shape else float(RNG.uniform(low, low + 1.5))
    return RNG.standard_normal(shape) if shape else float(RNG.standard_normal())


# (expression, arguments): every differentiable argument is a float or float tensor
CASES = [
    ("x + y", dict(x=r(3, 2), y=r(2))), ("x - y", dict(x=r(2), y=r(3, 2))), ("x * y", dict(x=r(3, 1), y=r(2))),
    ("x * 3.0", dict(x=r(4))), ("x / y", dict(x=r(3), y=r(3, low=0.5))), ("-x", dict(x=r(2, 2))),
    ("x % y", dict(x=r(4, low=0.2), y=r(4, low=2.0))), ("x ** y", dict(x=r(3, low=0.5), y=r(3))),
    ("x ** 2", dict(x=r(3))), ("x // 0.3 + x", dict(x=r(3))),
    ("x @ y", dict(x=r(3, 4), y=r(4, 2))), ("x @ y", dict(x=r(4), y=r(4, 2))), ("x @ y", dict(x=r(3, 4), y=r(4))),
    ("x @ y", dict(x=r(4), y=r(4))), ("x @ y", dict(x=r(2, 3, 4), y=r(4, 2))), ("x @ y", dict(x=r(2, 2, 3, 4), y=r(4, 2))),
    ("exp(x)", dict(x=r(3))), ("ln(x)", dict(x=r(3, low=0.5))), ("log2(x)", dict(x=r(2, low=0.5))), ("log10(x)", dict(x=r(2, low=0.5))),
    ("sin(x)", dict(x=r(3))), ("cos(x)", dict(x=r(3))), ("sqrt(x)", dict(x=r(3, low=0.5))),
    ("abs(x)", dict(x=r(4, low=0.3) * np.array([1, -1, 1, -1]))), ("relu(x)", dict(x=np.array([-1.2, 0.7, 2.1]))),
    ("sigmoid(x)", dict(x=r(3))), ("tanh(x)", dict(x=r(3))), ("erf(x)", dict(x=r(3))), ("erfc(x)", dict(x=r(3))), ("silu(x)", dict(x=r(3))),
    ("gelu(x)", dict(x=r(3))), ("maximum(x, y)", dict(x=r(4), y=r(4))), ("minimum(x, y)", dict(x=r(4), y=r(1))),
    ("where(x > 0.0, x * y, y)", dict(x=r(4), y=r(4))), ("clamp(x, -0.5, 0.5)", dict(x=np.array([-1.0, 0.1, 0.9]))),
    ("clamp(x, y, y + 1.0)", dict(x=np.array([-1.0, 0.3, 3.0]), y=np.array([0.0, 0.0, 0.5]))),
    ("sum(x)", dict(x=r(3, 2))), ("sum(x, axis=0)", dict(x=r(3, 2))), ("sum(x, axis=(0, 2), keepdims=true)", dict(x=r(2, 3, 2))),
    ("mean(x, axis=1)", dict(x=r(3, 2))), ("max(x, axis=0)", dict(x=r(3, 2))), ("min(x)", dict(x=r(4))),
    ("max(x, axis=1, keepdims=true)", dict(x=r(2, 3))), ("logsumexp(x)", dict(x=r(3))),
    ("logsumexp(x, axis=0)", dict(x=r(3, 2))), ("logsumexp(x, axis=(0, 1))", dict(x=r(2, 3, 2))),
    # reduced axes that are not the leading ones: their result does not broadcast back by itself
    ("logsumexp(x, axis=(1, 2))", dict(x=r(2, 3, 4))), ("logsumexp(x, axis=(0, 2), keepdims=true)", dict(x=r(2, 3, 4))),
    ("max(x, keepdims=true) * y", dict(x=r(2, 3), y=r(2, 3))), ("min(x, axis=0, keepdims=true) * y", dict(x=r(3, 2), y=r(4, 1, 2))),
    ("max(x, axis=(0, 2)) * y", dict(x=r(2, 3, 2), y=r(3))),
    ("reshape(x, (3, 2))", dict(x=r(6))), ("transpose(x)", dict(x=r(2, 3))), ("transpose(x) * x", dict(x=r())), ("transpose(x, (1, 2, 0))", dict(x=r(2, 3, 2))),
    ("x[1:3, 0]", dict(x=r(4, 2))), ("x[[0.0, 2.0, 2.0]]", dict(x=r(3, 2))), ("x[:, [1.0, 0.0]] * y", dict(x=r(2, 3), y=r(2))),
    ("gather(x, [1.0, 1.0], axis=1)", dict(x=r(2, 3))), ("cat((x, y), axis=1)", dict(x=r(2, 2), y=r(2, 3))),
    ("stack((x, y))", dict(x=r(3), y=r(3))), ("[x, y * 2.0]", dict(x=r(2), y=r(2))),
    ("softmax(x)", dict(x=r(2, 3))), ("softmax(x, axis=0)", dict(x=r(3, 2))), ("log_softmax(x)", dict(x=r(2, 3))),
    ("cross_entropy(x, softmax(y))", dict(x=r(2, 3), y=r(2, 3))), ("cross_entropy(x, [0.0, 2.0])", dict(x=r(2, 3))),
    ("layer_norm(x, y, z)", dict(x=r(2, 4), y=r(4), z=r(4))), ("batch_norm(x)", dict(x=r(4, 2))),
    ("ssm_scan(x, y, z)", dict(x=RNG.uniform(-0.8, 0.8, (4, 2)), y=r(4, 2), z=r(2))),
    ("linspace(x, y, 4) * z", dict(x=0.3, y=1.7, z=r(4))),
    ("custom_vjp(fn(t) => t * t, fn(t, out, g) => g * 2.0 * t)(x)", dict(x=r(3))),
    ("checkpoint(fn(t) => sin(t) * t)(x)", dict(x=r(3))),
    ("sum(grad(fn(t) => sum(sqrt(t) * x))(y))", dict(x=r(3), y=r(3, low=0.5))),        # Nz, BroadcastTo: rules on
    ("sum(grad(fn(t) => sum(t[[0.0, 0.0, 1.0]] * x))(y))", dict(x=r(3), y=r(2))),       # recorded values (IndexAdd)
    ("set_first(x, y)", dict(x=r(3, 2), y=r(2))),
    ("sum(grad(fn(t) => sum(clamp(t, -0.5, 0.5) * x))(y))", dict(x=r(3), y=np.array([-1.0, 0.2, 0.8]))),  # masks
    ("sum(grad(fn(t) => sum(t ** y))(x))", dict(x=r(3, low=0.5), y=r(3))),                   # pow's zero tests
    ("sum(grad(fn(t) => sum(t * t * x) * sum(t))(y))", dict(x=r(3), y=r(3))),                # BroadcastTo
    ("log1p(x)", dict(x=r(3, low=0.1))), ("expm1(x)", dict(x=r(3))),
    ("softplus(x)", dict(x=r(3) * 4.0)), ("softplus(x) * y", dict(x=r(), y=r(3))),
    ("var(x)", dict(x=r(5))), ("var(x, axis=0, keepdims=true)", dict(x=r(3, 2))), ("std(x, axis=1)", dict(x=r(2, 4))),
    ("prod(x)", dict(x=r(4))), ("prod(x) * x", dict(x=r())), ("prod(x, axis=0)", dict(x=r(0, 2))), ("prod(x, axis=1)", dict(x=r(2, 0))), ("prod(x, axis=1)", dict(x=r(2, 3))), ("prod(x * y, axis=0)", dict(x=np.array([[0.0, 1.5], [2.0, 0.0], [0.7, 3.0]]), y=r(3, 2))),
    ("cumsum(x)", dict(x=r(2, 3))), ("cumsum(x, 0) * x", dict(x=r())), ("cumsum(x, axis=0)", dict(x=r(3, 2))), ("cumsum(x, axis=-1) * y", dict(x=r(2, 3), y=r(3))),
    ("sort(x)", dict(x=r(5))), ("sort(x, axis=0) * y", dict(x=r(4, 3), y=r(3))), ("norm(x)", dict(x=r(4))),
    ("norm(x, axis=1)", dict(x=r(2, 3))),
    ("einsum(\"ij,jk->ik\", x, y)", dict(x=r(2, 3), y=r(3, 4))), ("einsum(\"ij->\", x)", dict(x=r(2, 3))),
    ("einsum(\"i,j->ij\", x, y)", dict(x=r(3), y=r(2))), ("einsum(\"bij,bjk->bik\", x, y)", dict(x=r(2, 2, 3), y=r(2, 3, 2))),
    ("einsum(\"ij,j->\", x, y)", dict(x=r(2, 3), y=r(3))),
    ("sum(grad(fn(t) => sum(sort(t) * x))(y))", dict(x=r(4), y=r(4))),                 # PutAlong, TakeAlong
    ("sum(grad(fn(t) => prod(t * x))(y))", dict(x=np.array([0.0, 1.5, 0.7]), y=r(3))),   # CumProd at a zero
    ("jvp(fn(t) => sort(t) * x, (x,), (y,))[1]", dict(x=r(4), y=r(4))),                   # TakeAlong
    ("tan(x)", dict(x=r(3) * 0.5)), ("asin(x)", dict(x=RNG.uniform(-0.8, 0.8, 3))),
    ("acos(x)", dict(x=RNG.uniform(-0.8, 0.8, 3))), ("atan(x)", dict(x=r(3))), ("sinh(x)", dict(x=r(3))),
    ("cosh(x)", dict(x=r(3))), ("asinh(x)", dict(x=r(3))), ("acosh(x)", dict(x=r(3, low=1.2))),
    ("atanh(x)", dict(x=RNG.uniform(-0.8, 0.8, 3))), ("log_sigmoid(x)", dict(x=r(3) * 3.0)),
    ("logit(x)", dict(x=RNG.uniform(0.1, 0.9, 3))), ("atan2(x, y)", dict(x=r(3), y=r(2, 3))),
    ("hypot(x, y)", dict(x=r(3), y=r(2, 3))), ("cbrt(x)", dict(x=r(3, low=0.5))),
    ("logaddexp(x, y)", dict(x=r(3), y=r(3, 1))), ("xlogy(x, y)", dict(x=r(3), y=r(2, 3, low=0.5))),
    ("erfinv(x)", dict(x=RNG.uniform(-0.9, 0.9, 3))),
    ("erfcinv(x)", dict(x=RNG.uniform(0.1, 1.9, 3))), ("lgamma(x)", dict(x=r(3, low=0.5))),
    ("digamma(x)", dict(x=r(3, low=0.5))),
    ("normal(x, y, (3, 2), key=rng(1)) + uniform(y, x, (3, 2), key=fold_in(split(rng(2))[1], 3))",
     dict(x=r(3, 2), y=r(2, low=0.5))),
    ("custom_jvp(fn(t) => t * t, fn(p, t) => (p[0] * p[0], 2.0 * p[0] * t[0]))(x)", dict(x=r(3))),
    # linear algebra on well-conditioned matrices (a stack of two where the rules batch)
    ("solve(x, y)", dict(x=r(3, 3) + 3.0 * np.eye(3), y=r(3))), ("solve(x, y)", dict(x=r(2, 3, 3) + 3.0 * np.eye(3), y=r(2, 3, 2))),
    ("inv(x)", dict(x=r(3, 3) + 3.0 * np.eye(3))), ("det(x)", dict(x=r(2, 3, 3) + 3.0 * np.eye(3))),
    ("slogdet(x)[1] + slogdet(x)[0]", dict(x=r(3, 3) + 3.0 * np.eye(3))),
    ("sum(grad(fn(t) => det(t))(x) * y)", dict(x=r(3, 3) + 3.0 * np.eye(3), y=r(3, 3))),    # Cofactors
    ("conv(x, y, stride=2, padding=1, dilation=(1, 2))", dict(x=r(2, 2, 5, 6), y=r(3, 2, 2, 2))),
    ("conv_transpose(x, y, stride=(2, 1), padding=1)", dict(x=r(1, 2, 3, 4), y=r(2, 3, 3, 2))),
    ("max_pool(x, 2) + avg_pool(x, 2)", dict(x=r(1, 2, 4, 4))),
    ("cholesky(x @ transpose(x) + 3.0 * eye(3))", dict(x=r(3, 3))),
    ("triangular_solve(x, y, lower=true)", dict(x=r(3, 3) + 3.0 * np.eye(3), y=r(3, 2))),
    ("eigvalsh(x)", dict(x=r(3, 3))), ("eigh(x + transpose(x))[1] ** 2", dict(x=r(3, 3))),
    ("svd(x, compute_uv=false)", dict(x=r(3, 2))), ("svd(x, full_matrices=false)[0] ** 2", dict(x=r(3, 2))),
    ("svd(x, full_matrices=false)[2] ** 2", dict(x=r(2, 3))), ("qr(x)[0] ** 2", dict(x=r(3, 2))),
    ("qr(x)[1] ** 2", dict(x=r(3, 2))), ("pinv(x)", dict(x=r(3, 2))),
    ("expm(x)", dict(x=r(3, 3))), ("expm(3.0 * x)", dict(x=r(2, 3, 3))),
    # in x only: the second derivative in a is refused (tests/library/test_incomplete_gamma.py)
    ("gammainc(2.5, x) * gammaincc(0.7, 2.0 * x)", dict(x=r(3, low=0.2))),
    # a cast (float64 to float64 here: central differences in float64; tests/library/test_dtypes.py
    # checks the casts between float types)
    ("astype(x, \"float64\") * y", dict(x=r(3), y=r(2, 3))), ("sum(astype(x * y, \"float64\"), axis=0)", dict(x=r(3, 2), y=r(2))),
]

DEFS = "fn set_first(t, v) { let u = t\n u[0] = v\n return u }\n"


def _interp(expr, names):
    """An interpreter with f(args...) = expr."""
    interp = dsl.Interpreter(seed=0, keep_tape=True)
    interp.run(DEFS + f"fn f({', '.join(names)}) {{ return {expr} }}")
    return interp


IDS = [f"{i}:{e}" for i, (e, _) in enumerate(CASES)]


@pytest.mark.parametrize("expr,args", CASES, ids=IDS)
def test_reverse_mode_against_finite_differences(expr, args):
    check(expr, prelude=DEFS, **{k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()})


def _flat_call(interp, names, args):
    """f as a Python function of one flat float64 vector of all the arguments, returning a flat vector."""
    f = interp.lookup("f")
    shapes = [np.shape(args[n]) for n in names]
    sizes = [int(np.prod(s)) for s in shapes]

    def unpack(v):
        out, k = [], 0
        for s, n in zip(shapes, sizes):
            out.append(float(v[k]) if s == () else v[k:k + n].reshape(s).copy())
            k += n
        return out

    def call(v):
        return np.atleast_1d(np.asarray(f(*unpack(v)), dtype=float)).reshape(-1)
    x0 = np.concatenate([np.atleast_1d(np.asarray(args[n], dtype=float)).reshape(-1) for n in names])
    return call, unpack, x0


@pytest.mark.parametrize("expr,args", CASES, ids=IDS)
def test_reverse_over_reverse_against_central_differences_of_the_gradient(expr, args):
    names, n = list(args), len(args)
    params = ", ".join(names)
    argnums = "(" + ", ".join(str(k) for k in range(n)) + ("," if n == 1 else "") + ")"
    dirs = ", ".join(f"v{k}" for k in range(n))
    interp = dsl.Interpreter(seed=0)
    interp.run(DEFS + f"fn f({params}) {{ return {expr} }}\n"
               f"fn g({params}, u) {{ return grad(fn({params}) => sum(f({params}) * u), argnums={argnums})({params}) }}\n"
               f"fn lin({params}, u, {dirs}) {{ let gs = g({params}, u)\n return "
               + " + ".join(f"sum(gs[{k}] * v{k})" for k in range(n)) + f" }}\nlet hv = grad(lin, argnums={argnums})")
    x = [args[k].copy() if isinstance(args[k], np.ndarray) else args[k] for k in names]
    shape = np.shape(interp.lookup("f")(*x))
    u = RNG.standard_normal(shape) if shape else float(RNG.standard_normal())
    v = [RNG.standard_normal(np.shape(a)) if np.shape(a) else float(RNG.standard_normal()) for a in x]
    got = interp.lookup("hv")(*x, u, *v)
    g, h = interp.lookup("g"), 1e-5
    plus, minus = g(*[a + h * b for a, b in zip(x, v)], u), g(*[a - h * b for a, b in zip(x, v)], u)
    for k in range(n):
        numeric = (np.asarray(plus[k], float) - np.asarray(minus[k], float)) / (2 * h)
        exact = np.zeros_like(numeric) if got[k] is None else np.asarray(got[k], float)
        assert_close(exact, numeric, f"reverse over reverse of {expr}, argument {k}", rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("expr,args", CASES, ids=IDS)
def test_forward_mode_against_finite_differences_and_the_pullback(expr, args):
    names = list(args)
    interp = _interp(expr, names)
    call, unpack, x0 = _flat_call(interp, names, args)
    v = RNG.standard_normal(x0.shape)
    interp.run("fn fj(p, t) { return jvp(f, p, t) }")
    value, tangent = interp.lookup("fj")(tuple(unpack(x0)), tuple(unpack(v)))
    numeric = (call(x0 + H * v) - call(x0 - H * v)) / (2 * H)
    assert_close(np.atleast_1d(tangent).reshape(-1), numeric, f"jvp of {expr}", rtol=1e-5, atol=1e-6)
    # <jvp(v), u> = <v, vjp(u)>
    u = RNG.standard_normal(np.shape(value)) if np.shape(value) else float(RNG.standard_normal())
    interp.set("primals", tuple(unpack(x0)))
    interp.set("u", u)
    interp.run("let out, pullback = vjp(f, ..)\nlet back = pullback(u)".replace(
        "..", ", ".join(f"primals[{i}]" for i in range(len(names)))))
    back = interp.get("back")
    lhs = float(np.sum(np.asarray(tangent) * u))
    rhs = sum(float(np.sum(np.asarray(b) * np.asarray(t))) for b, t in zip(back, unpack(v)) if b is not None)
    assert lhs == pytest.approx(rhs, rel=1e-9, abs=1e-9), f"<jvp, u> != <v, vjp> for {expr}"


@pytest.mark.parametrize("expr,args", CASES, ids=IDS)
@pytest.mark.parametrize("layout", ["axis0", "axis1", "shared"])
def test_batching_against_a_loop(expr, args, layout, capfd):
    names = list(args)
    interp = _interp(expr, names)
    f = interp.lookup("f")
    batch = [{n: _perturbed(v) for n, v in args.items()} for _ in range(3)]
    shared = names[-1] if layout == "shared" and len(names) > 1 else None
    for b in batch[1:]:
        if shared:
            b[shared] = batch[0][shared]
    want = [f(*[b[n] for n in names]) for b in batch]
    mapped = []
    axes = []
    for n in names:
        if n == shared:
            mapped.append(batch[0][n])
            axes.append("none")
            continue
        stacked = np.stack([np.asarray(b[n], dtype=float) for b in batch])
        if layout == "axis1" and stacked.ndim >= 2:
            mapped.append(np.moveaxis(stacked, 0, 1).copy())
            axes.append("1")
        else:
            mapped.append(stacked)
            axes.append("0")
    for i, m in enumerate(mapped):
        interp.set(f"a{i}", m)
    got = interp.eval(f"vmap(f, in_axes=({', '.join(axes)},), explain=true)"
                      f"({', '.join(f'a{i}' for i in range(len(names)))})")
    np.testing.assert_allclose(np.asarray(got), np.stack([np.asarray(w) for w in want]), rtol=1e-12, atol=1e-12,
                               err_msg=f"vmap of {expr} ({layout})")
    assert "once per example" not in capfd.readouterr().err, "the batching rules were not used"


def _perturbed(v):
    """Another example near this one (small moves keep kinks and branches where they are)."""
    if isinstance(v, np.ndarray):
        return v + 0.01 * RNG.standard_normal(v.shape)
    return v + 0.01 * float(RNG.standard_normal())


# Operations without derivatives: batching only (their results are constants to grad).
NONDIFF = ["x > y", "x < y", "x >= y", "x <= y", "x == y", "x != y", "floor(x)", "sign(x)", "x // y",
           "where(x > y, x, y)", "cross_entropy(reshape(x, (2, 2)), [0.0, 1.0]) + y", "ceil(x) + round(y)",
           "argsort(x) + y", "argmax(reshape(x, (2, 2)), axis=1)[1] + argmin(y) + y",
           "argmax(x) + y", "stop_gradient(x) * y", "slogdet(reshape(x, (2, 2)))[0] + y",
           "astype(x * 3.0, \"int64\") + y", "searchsorted(sort(x), y) + y",
           "searchsorted(sort(x), y, side=\"right\") + searchsorted([0.0], y[0])"]


@pytest.mark.parametrize("expr", NONDIFF)
def test_operations_without_derivatives_batch(expr, capfd):
    interp = _interp(expr, ["x", "y"])
    xs, ys = r(3, 4), r(3, 4)
    xs[0, 0] = ys[0, 0]        # a tie
    f = interp.lookup("f")
    interp.set("xs", xs)
    interp.set("ys", ys)
    got = interp.eval("vmap(f, explain=true)(xs, ys)")
    want = np.stack([np.asarray(f(xs[i], ys[i])) for i in range(3)])
    np.testing.assert_array_equal(np.asarray(got), want)
    assert "once per example" not in capfd.readouterr().err, "the batching rules were not used"


STRUCTS = ("struct P { a, b }\n"
           "fn f(p, m) { return p.a * sin(p.b) + m[\"w\"] * sum(m[\"v\"] * p.b) }\n"
           "fn loss(p, m) { return sum(f(p, m)) }\n")


def _structs(interp):
    """A struct and a map of random leaves."""
    P = interp.lookup("P")
    return P(r(3), r(3)), {"w": r(), "v": r(3)}


def test_reads_of_structures_in_every_mode():
    interp = dsl.Interpreter(seed=0, keep_tape=True)
    interp.run(STRUCTS)
    p, m = _structs(interp)
    f, loss = interp.lookup("f"), interp.lookup("loss")
    gp, gm = interp.lookup("grad")(loss, (0, 1))(p, m)
    assert {"MapLookup", "StructField"} <= {n.op for n in interp.last_tape}
    # reverse mode against central differences, leaf by leaf
    for leaf, (holder, key) in [(p.a, (p, "a")), (p.b, (p, "b"))]:
        numeric = np.zeros_like(leaf)
        for k in range(leaf.size):
            plus, minus = leaf.copy(), leaf.copy()
            plus.flat[k] += H
            minus.flat[k] -= H
            P = interp.lookup("P")
            args = lambda v: (P(v, p.b), m) if key == "a" else (P(p.a, v), m)
            numeric.flat[k] = (loss(*args(plus)) - loss(*args(minus))) / (2 * H)
        assert_close(getattr(gp, key), numeric, f"d/d{key}")
    numeric_w = (loss(p, dict(m, w=m["w"] + H)) - loss(p, dict(m, w=m["w"] - H))) / (2 * H)
    assert gm["w"] == pytest.approx(numeric_w, rel=1e-6)
    # forward mode: the tangent of a struct and a map
    interp.set("p0", p)
    interp.set("m0", m)
    tp, tm = _structs(interp)
    interp.set("tp", tp)
    interp.set("tm", tm)
    _, tangent = interp.eval("jvp(f, (p0, m0), (tp, tm))")
    P = interp.lookup("P")
    step = lambda e: f(P(p.a + e * tp.a, p.b + e * tp.b), {"w": m["w"] + e * tm["w"], "v": m["v"] + e * tm["v"]})
    assert_close(tangent, (step(H) - step(-H)) / (2 * H), "jvp through struct and map reads", 1e-5, 1e-6)
    # vmap over the leaves of a struct (axis 0) with the map shared
    pa, pb = r(4, 3), r(4, 3)
    interp.set("ps", P(pa, pb))
    got = interp.eval("vmap(f, in_axes=(0, none), explain=true)(ps, m0)")
    want = np.stack([f(P(pa[i], pb[i]), m) for i in range(4)])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # grad of a function reading a struct, mapped over a batch of structs
    got = interp.eval("vmap(grad(loss), in_axes=(0, none))(ps, m0)")
    for i in range(4):
        one = interp.lookup("grad")(loss)(P(pa[i], pb[i]), m)
        np.testing.assert_allclose(got.a[i], one.a, rtol=1e-12)
        np.testing.assert_allclose(got.b[i], one.b, rtol=1e-12)


def test_every_registered_primitive_is_exercised():
    seen = {"StructField", "MapLookup"} if _struct_reads_recorded() else set()
    for expr, args in CASES + [(e, dict(x=r(4), y=r(4))) for e in NONDIFF]:
        names = list(args)
        interp = _interp(expr, names)
        program, _ = stage(interp.lookup("f"), tuple(args[n] for n in names))
        seen |= {step[1] for step in program.steps}
        interp.run(f"fn g({', '.join(names)}) {{ return sum(({expr}) * 1.0) }}")
        try:
            interp.lookup("grad")(interp.lookup("g"), tuple(range(len(names))))(*args.values())
        except dsl.DgError:
            pass
        seen |= {n.op for n in interp.last_tape or ()}
    # NzKept, the derivative of reference 6.7's zero rule, is staged by the rules at second order
    interp = _interp("where(x > 0.0, sqrt(x), 0.0) * sin(x)", ["x"])
    program, _ = stage(interp.lookup("grad")(interp.lookup("grad")(interp.lookup("f"))), (4.0,))
    seen |= {step[1] for step in program.steps}
    # exercised by their own tests: HostCall (tests/tools/test_embed.py), effects (tests/test_jit_effects.py;
    # EffectLayout and EffectLeaf, a structured effect's parts: tests/jit/test_jit.py's load tests),
    # Str and FString (tests/test_vmap.py), Loop, LoopBack, Row and RowAdd (staged only for a rolled
    # loop: tests/jit/test_jit_loops.py), SetRow (tests/jit/test_jit_row_writes.py), Rows, RowsAdd and
    # SetRows (tests/jit/test_jit_row_slices.py), Take, TakeAdd and LastWriter (staged positions only:
    # tests/jit/test_jit_staged_indices.py), Any, IsFinite and ClassIndices (staged by rules and
    # cross_entropy)
    elsewhere = {"HostCall", "HostVjp", "Effect", "EffectLayout", "EffectLeaf", "Str", "FString", "Loop", "LoopBack", "Row", "RowAdd",
                 "SetRow", "Rows", "RowsAdd", "SetRows", "Take", "TakeAdd", "LastWriter", "LoopBackT",
                 "LoopBackAdd", "Scan",
                 # tests/library/test_more_math.py (digamma's derivatives, of every order) and
                 # tests/library/test_random.py (functions of keys, batched over keys and parameters) and
                 # tests/library/test_gamma_draws.py (gamma draws' derivatives, against their quantile
                 # function, which finite differences of the sampler, a rejection method, do not give)
                 "Trigamma", "Polygamma", "RandomUniform", "RandomNormal", "RandomSplit", "RandomFoldIn", "RandomGamma",
                 "RandomPoisson", "GammaDraw", "GammaDrawGrad", "GammaDrawGrad2",
                 # a matrix product's rules with reference 6.7's zero: tests/autodiff/test_nz_matmul.py and
                 # test_grad_special_values.py (recorded where a product is not finite, or staged)
                 "NzMatMul",
                 # the incomplete gamma function's derivative in a: tests/library/test_incomplete_gamma.py
                 "GammaincDa"}
    missing = sorted(set(PRIMS) - seen - elsewhere - {"Any", "IsFinite", "ClassIndices"})
    assert missing == [], f"no case exercises {missing}"


def _struct_reads_recorded():
    """Whether grad of STRUCTS records StructField and MapLookup (test_reads_of_structures_in_every_mode)."""
    interp = dsl.Interpreter(seed=0, keep_tape=True)
    interp.run(STRUCTS)
    interp.lookup("grad")(interp.lookup("loss"), (0, 1))(*_structs(interp))
    return {"StructField", "MapLookup"} <= {n.op for n in interp.last_tape}


# ---------------------------------------------------------------- the float fast path
SPECIAL = [0.0, -0.0, 1.0, -1.5, 2.0, 0.5, 1e308, -1e308, float("inf"), float("-inf"), float("nan"), 3]


@pytest.mark.parametrize("name", sorted(n for n, p in PRIMS.items() if p.partials is not None))
def test_float_pullback_agrees_with_the_general_rule(name):
    """The generated float step adds bit for bit the general pullback's cotangents into the
    arguments' nodes (SPEC 6.7's zeros, masked -0.0 as 0.0, the infinities) wherever it answers,
    answers for ordinary floats, and says whether one of them is not finite."""
    from dsl.core import tape
    trace = tape.Trace()

    def fast(g, ans, args, kinds):
        """The step on a node of `args` whose parents are of `kinds` ("Parameter", "Input" or None
        for a constant), its arguments' cotangents read back (None: not answered)."""
        parents = tuple(None if k is None else tape.Box(a, trace, k, (), (), None, None) for a, k in zip(args, kinds))
        node = tape.Box(ans, trace, name, parents, args, None, None)
        bad = fast_step(g, node)
        if bad is None:
            assert all(p is None or p.g is None for p in parents), name     # it added nothing
            return None
        got = [p.g if p is not None and p.op == "Parameter" else None for p in parents]
        assert all(p is None or p.op == "Parameter" or p.g is None for p in parents), name  # no Input's
        assert bad == any(x is not None and x - x != 0.0 for x in got), (name, args, g, got)
        return got
    prim = PRIMS[name]
    fast_step, general, impl = tape.FLOAT_PULLBACKS[name], tape.PULLBACKS[name], tape.IMPLS[name]
    n = len(prim.partials)
    answered = 0
    rng = np.random.default_rng(7)
    for _ in range(400):
        args = tuple(SPECIAL[i] for i in rng.integers(0, len(SPECIAL), n))
        try:
            ans = impl(*args)
        except dsl.DgError:
            continue
        if type(ans) is not float:
            continue
        kinds = tuple(rng.choice(["Parameter", "Parameter", "Input", None], n))
        kinds = (("Parameter",) + kinds[1:]) if all(k != "Parameter" for k in kinds) else kinds
        for g in (1.0, 0.0, -2.5, float("inf")):
            try:
                got = fast(g, ans, args, kinds)
            except GradError:       # a partial that refuses (GammaincDa's in a): so does the rule
                with pytest.raises(GradError):
                    general(tape.EAGER, g, ans, args, None, tuple(k == "Parameter" for k in kinds))
                continue
            if got is None:
                continue
            answered += 1
            want = general(tape.EAGER, g, ans, args, None, tuple(k == "Parameter" for k in kinds))
            for a, b in zip(got, want):
                assert (a is None) == (b is None), (name, args, g)
                if a is not None:
                    b = float(b)
                    assert type(a) is float, (name, args, g, a)
                    assert (a == b and np.signbit(a) == np.signbit(b)) or (a != a and b != b), (name, args, g, a, b)
    assert answered > 100, f"{name}: the float rule answered only {answered} times"


# ---------------------------------------------------------------- the plain-array fast path
class _Counted(dict):
    """A table of steps that counts, per primitive, the nodes its steps took."""

    def __init__(self, table):
        super().__init__(table)
        self.took = {}

    def __getitem__(self, name):
        step = super().__getitem__(name)

        def counted(g, node, check):
            bad = step(g, node, check)
            if bad is not None:
                self.took[name] = self.took.get(name, 0) + 1
            return bad
        return counted


def _same_bits(a, b):
    """Whether two gradients (numbers, tensors, tuples) are equal bit for bit (NaN equal to NaN)."""
    if isinstance(a, tuple):
        return type(b) is tuple and len(a) == len(b) and all(_same_bits(x, y) for x, y in zip(a, b))
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True) and \
        np.array_equal(np.signbit(a), np.signbit(b))


# 6.7's zeros, infinities and NaNs through the steps (a zero cotangent times an infinite derivative)
PLAIN_CASES = CASES + [
    ("sqrt(x) * y", dict(x=np.array([0.0, 1.0, 4.0]), y=np.array([0.0, 2.0, 0.0]))),
    ("ln(x) * y + x * x", dict(x=np.array([0.0, 2.0]), y=np.array([0.0, 1.0]))),
    ("relu(x) * y", dict(x=np.array([-1.0, 0.0, 2.0]), y=np.array([np.inf, 1.0, -0.0]))),
    ("x ** y", dict(x=np.array([0.0, 2.0, 0.0]), y=np.array([0.5, 2.0, 2.0]))),
    ("x * x + x", dict(x=2.5)), ("x @ y + x @ y", dict(x=r(3, 4), y=r(4, 2))),
]


def _both_ways(grad, args, monkeypatch):
    """grad(*args) by the plain steps and by the general pullbacks, and what the steps took."""
    from dsl.core import tape
    counted = _Counted(tape.PLAIN_PULLBACKS)
    with np.errstate(all="ignore"):
        monkeypatch.setattr(tape, "PLAIN_PULLBACKS", counted)
        fast = grad(*args)
        monkeypatch.setattr(tape, "PLAIN_PULLBACKS", {})
        general = grad(*args)
    return fast, general, counted.took


def _gradient_both_ways(expr, args, monkeypatch):
    """The gradient of sum(expr * c), c random, by the plain steps and by the general pullbacks."""
    names = list(args)
    interp = dsl.Interpreter(seed=0, check_numerics=False)     # infinities reach the gradient
    interp.run(DEFS + f"fn f({', '.join(names)}) {{ return {expr} }}")
    out = interp.lookup("f")(*args.values())
    interp.set("c", RNG.standard_normal(np.shape(out)) if np.shape(out) else 0.7)
    interp.run(f"fn g({', '.join(names)}) {{ return sum(({expr}) * c) }}")
    grad = interp.lookup("grad")(interp.lookup("g"), tuple(range(len(names))))
    return _both_ways(grad, tuple(args.values()), monkeypatch)


@pytest.mark.parametrize("expr,args", PLAIN_CASES, ids=[f"{i}:{e}" for i, (e, _) in enumerate(PLAIN_CASES)])
def test_plain_steps_give_the_general_pullbacks_gradient_bit_for_bit(expr, args, monkeypatch):
    fast, general, _ = _gradient_both_ways(expr, args, monkeypatch)
    assert _same_bits(fast, general), (expr, fast, general)


def test_plain_steps_read_structures_as_the_general_pullbacks_do(monkeypatch):
    interp = dsl.Interpreter(seed=0, keep_tape=True)
    interp.run(STRUCTS)
    p, m = _structs(interp)
    (gp, gm), (hp, hm), took = _both_ways(interp.lookup("grad")(interp.lookup("loss"), (0, 1)), (p, m), monkeypatch)
    assert {"StructField", "MapLookup"} <= set(took)
    assert _same_bits((gp.a, gp.b, gm["w"], gm["v"]), (hp.a, hp.b, hm["w"], hm["v"]))


def test_every_plain_step_is_exercised_by_a_case(monkeypatch):
    from dsl.core import tape
    took = {"StructField", "MapLookup"}       # test_plain_steps_read_structures_as_the_general_pullbacks_do
    for expr, args in PLAIN_CASES:
        took.update(_gradient_both_ways(expr, args, monkeypatch)[2])
    # Nz is recorded only on recorded values (second order: the general pullbacks), Row and RowAdd
    # only for a rolled loop (tests/jit/test_jit_loops.py), as are Rows and RowsAdd
    # (tests/jit/test_jit_row_slices.py), and Take and TakeAdd only for staged positions
    untaken = {"Nz", "Row", "RowAdd", "Rows", "RowsAdd", "Take", "TakeAdd"}
    missing = sorted(set(tape.PLAIN_PULLBACKS) - set(took) - untaken)
    assert missing == [], f"no case takes the plain step of {missing}"


def test_plain_steps_name_the_operation_whose_gradient_is_not_finite():
    # a custom_vjp on the tape makes the pass check each rule's output as it goes
    program = ("fn f(x) { let y = custom_vjp(fn(t) => t * 1.0, fn(t, out, g) => g)(x)\n"
               "  return sum(sqrt(y) * 2.0) }\nlet g = grad(f)(tensor([0.0, 1.0]))")
    with pytest.raises(dsl.DgError) as info:
        dsl.Interpreter().run(program)
    assert info.value.kind == "numerics" and info.value.span.line == 2 and "Sqrt" in info.value.message
