"""Linear algebra: values as numpy's, derivatives by the matrix rules checked against central
differences (always) and against JAX (where it is installed), in reverse, forward and second
order, batched by vmap without a loop over examples, jitted, and dg's errors for bad input."""

import numpy as np
import pytest

import dsl
from dsl.errors import DgError
from gradcheck import check, check_against_jax, jax_or_skip

RNG = np.random.default_rng(7)
A = RNG.normal(size=(3, 3)) + 3.0 * np.eye(3)           # well conditioned, not symmetric
SPD = A @ A.T + np.eye(3)
L = np.linalg.cholesky(SPD)
B = RNG.normal(size=(3, 2))
V = RNG.normal(size=3)
TALL = RNG.normal(size=(4, 3))
V4 = RNG.normal(size=4)

# (dg expression of the arguments, the same in jax.numpy, the arguments)
CASES = [
    ("solve(a, b)", lambda jnp, a, b: jnp.linalg.solve(a, b), {"a": A, "b": B}),
    ("solve(a, v)", lambda jnp, a, v: jnp.linalg.solve(a, v), {"a": A, "v": V}),
    ("cholesky(s)", lambda jnp, s: jnp.linalg.cholesky(s), {"s": SPD}),
    ("triangular_solve(l, b, lower=true)",
     lambda jnp, l, b: __import__("jax").scipy.linalg.solve_triangular(l, b, lower=True), {"l": L, "b": B}),
    ("triangular_solve(u, v)", lambda jnp, u, v: __import__("jax").scipy.linalg.solve_triangular(u, v),
     {"u": L.T.copy(), "v": V}),
    ("cho_solve(l, b)", lambda jnp, l, b: __import__("jax").scipy.linalg.cho_solve((l, True), b), {"l": L, "b": B}),
    ("inv(a)", lambda jnp, a: jnp.linalg.inv(a), {"a": A}),
    ("det(a)", lambda jnp, a: jnp.linalg.det(a), {"a": A}),
    ("slogdet(a)[1]", lambda jnp, a: jnp.linalg.slogdet(a)[1], {"a": A}),
    ("trace(a)", lambda jnp, a: jnp.trace(a), {"a": A}),
    ("diagonal(b)", lambda jnp, b: jnp.diagonal(b), {"b": B}),
    ("diag(v)", lambda jnp, v: jnp.diag(v), {"v": V}),
    ("diag(v, 2) + diag(v, -2)", lambda jnp, v: jnp.diag(v, 2) + jnp.diag(v, -2), {"v": V}),
    ("diag(t, -1)[:2] * diagonal(t, 1)", lambda jnp, t: jnp.diag(t, -1)[:2] * jnp.diagonal(t, 1), {"t": TALL}),
    ("trace(t, offset=-2)", lambda jnp, t: jnp.trace(t, offset=-2), {"t": TALL}),
    ("outer(v, b)", lambda jnp, v, b: jnp.outer(v, b), {"v": V, "b": B}),
    ("tril(a, -1) + triu(a, 1)", lambda jnp, a: jnp.tril(a, -1) + jnp.triu(a, 1), {"a": A}),
    # eigenvectors and singular vectors are unique up to sign: their squares are not
    ("eigvalsh(a)", lambda jnp, a: jnp.linalg.eigvalsh(a, symmetrize_input=True), {"a": A}),
    ("eigh(s)[1] ** 2", lambda jnp, s: jnp.linalg.eigh(s)[1] ** 2, {"s": SPD}),
    ("svd(b, compute_uv=false)", lambda jnp, b: jnp.linalg.svd(b, compute_uv=False), {"b": B}),
    ("svd(b, full_matrices=false)[0] ** 2", lambda jnp, b: jnp.linalg.svd(b, full_matrices=False)[0] ** 2,
     {"b": B}),
    ("svd(b, full_matrices=false)[2] ** 2", lambda jnp, b: jnp.linalg.svd(b, full_matrices=False)[2] ** 2,
     {"b": B}),
    ("svd(w, full_matrices=false)[0] ** 2", lambda jnp, w: jnp.linalg.svd(w, full_matrices=False)[0] ** 2,
     {"w": B.T.copy()}),
    ("svd(w, full_matrices=false)[2] ** 2", lambda jnp, w: jnp.linalg.svd(w, full_matrices=False)[2] ** 2,
     {"w": B.T.copy()}),
    ("qr(b)[0] ** 2", lambda jnp, b: jnp.linalg.qr(b)[0] ** 2, {"b": B}),
    ("qr(a)[1] ** 2", lambda jnp, a: jnp.linalg.qr(a)[1] ** 2, {"a": A}),
    ("pinv(b)", lambda jnp, b: jnp.linalg.pinv(b), {"b": B}),
    ("pinv(w)", lambda jnp, w: jnp.linalg.pinv(w), {"w": B.T.copy()}),
    ("lstsq(t, v)[0]", lambda jnp, t, v: jnp.linalg.lstsq(t, v)[0], {"t": TALL, "v": V4}),
    ("norm(v, ord=3)", lambda jnp, v: jnp.linalg.norm(v, ord=3), {"v": V}),
    ("norm(v, ord=1e400)", lambda jnp, v: jnp.linalg.norm(v, ord=jnp.inf), {"v": V}),
    ("norm(a, ord=\"nuc\")", lambda jnp, a: jnp.linalg.norm(a, ord="nuc"), {"a": A}),
    ("norm(a, ord=-2)", lambda jnp, a: jnp.linalg.norm(a, ord=-2), {"a": A}),
    ("norm(a, ord=1)", lambda jnp, a: jnp.linalg.norm(a, ord=1), {"a": A}),
    ("norm(t, axis=(1, 0), ord=-1e400)", lambda jnp, t: jnp.linalg.norm(t, axis=(1, 0), ord=-jnp.inf), {"t": TALL}),
    ("lstsq(w, b[0])[0]", lambda jnp, w, b: jnp.linalg.lstsq(w, b[0])[0], {"w": B.T.copy(), "b": B}),
    # A's 1-norm needs one squaring; 0.1 * A's none
    ("expm(a)", lambda jnp, a: __import__("jax").scipy.linalg.expm(a), {"a": A}),
    ("expm(0.1 * a)", lambda jnp, a: __import__("jax").scipy.linalg.expm(0.1 * a), {"a": A}),
    ("matrix_power(a, 5)", lambda jnp, a: jnp.linalg.matrix_power(a, 5), {"a": A}),
    ("matrix_power(a, -3)", lambda jnp, a: jnp.linalg.matrix_power(a, -3), {"a": A}),
    ("matrix_power(a, 0) * a", lambda jnp, a: jnp.linalg.matrix_power(a, 0) * a, {"a": A}),
    ("kron(a, b)", lambda jnp, a, b: jnp.kron(a, b), {"a": A, "b": B}),
    ("kron(v, t)", lambda jnp, v, t: jnp.kron(v, t), {"v": V, "t": TALL}),
]
IDS = [c[0] for c in CASES]


def run(src):
    """An interpreter that has run src."""
    interp = dsl.Interpreter(seed=0)
    interp.run(src, "t.dg")
    return interp


@pytest.mark.parametrize("expr, ref, args", CASES, ids=IDS)
def test_gradients_agree_with_central_differences(expr, ref, args):
    check(expr, rtol=1e-6, atol=1e-7, **args)


@pytest.mark.parametrize("expr, ref, args", CASES, ids=IDS)
def test_values_gradients_and_tangents_agree_with_jax(expr, ref, args):
    check_against_jax(expr, ref, args)


def test_second_derivatives_agree_with_jax():
    jax = jax_or_skip()
    jnp = jax.numpy
    want = jax.hessian(lambda a: jnp.linalg.slogdet(a)[1] + jnp.sum(jnp.linalg.cholesky(a @ a.T + jnp.eye(3))))(A)
    interp = dsl.Interpreter(seed=0)
    interp.set("a", A)
    interp.run("fn f(a) { return slogdet(a)[1] + sum(cholesky(a @ transpose(a) + eye(3))) }\n"
               "let h = hessian(f)(a)\nlet hr = jacrev(grad(f))(a)\nlet hj = jit(hessian(f))(a)")
    for name in ("h", "hr", "hj"):
        np.testing.assert_allclose(interp.get(name), np.asarray(want), rtol=1e-9, atol=1e-11)


def test_batched_calls_map_over_leading_axes_and_vmap_needs_no_loop(capfd):
    interp = dsl.Interpreter(seed=0)
    stack = np.stack([A, A.T, A + np.eye(3)])
    spd = np.stack([SPD, SPD + np.eye(3), 2.0 * SPD])
    interp.set("stack", stack)
    interp.set("spd", spd)
    interp.set("v", V)
    interp.run("let direct = (solve(stack, stack @ v), det(stack), inv(stack), cholesky(spd))\n"
               "let mapped = (vmap(solve, in_axes=(0, none), explain=true)(stack, v),\n"
               "              vmap(det, explain=true)(stack), vmap(fn(s) => cholesky(s), explain=true)(spd),\n"
               "              vmap(fn(b) => solve(stack[0], b), explain=true)(stack[:, 0, :]))\n"
               "let per_example = vmap(grad(fn(a) => slogdet(a)[1]), explain=true)(stack)")
    direct, mapped = interp.get("direct"), interp.get("mapped")
    np.testing.assert_allclose(direct[0], np.broadcast_to(V, (3, 3)), rtol=1e-12)
    np.testing.assert_allclose(direct[1], np.linalg.det(stack), rtol=1e-12)
    np.testing.assert_allclose(direct[3], np.linalg.cholesky(spd), rtol=1e-12)
    np.testing.assert_allclose(mapped[0], np.linalg.solve(stack, np.broadcast_to(V, (3, 3))[..., None])[..., 0],
                               rtol=1e-12)
    np.testing.assert_allclose(mapped[1], direct[1], rtol=1e-12)
    np.testing.assert_allclose(mapped[2], direct[3], rtol=1e-12)
    np.testing.assert_allclose(mapped[3], np.linalg.solve(A, stack[:, 0, :].T).T, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(interp.get("per_example"), np.linalg.inv(stack).transpose(0, 2, 1), rtol=1e-12)
    assert "once per example" not in capfd.readouterr().err


def with_a_and_b():
    """An interpreter with the matrix A and the vector B set as a and b."""
    interp = dsl.Interpreter(seed=0)
    interp.set("a", A)
    interp.set("b", B)
    return interp


def test_jit_gives_the_interpreters_values():
    interp = with_a_and_b()
    interp.run("fn f(a, b) { return sum(cho_solve(cholesky(a @ transpose(a)), b)) + det(a) * trace(inv(a)) }\n"
               "let eager = value_and_grad(f, argnums=(0, 1))(a, b)\n"
               "let jitted = jit(value_and_grad(f, argnums=(0, 1)))(a, b)")
    (v1, (ga1, gb1)), (v2, (ga2, gb2)) = interp.get("eager"), interp.get("jitted")
    assert abs(v1 - v2) <= 1e-12 * abs(v1)
    np.testing.assert_allclose(ga1, ga2, rtol=1e-12)
    np.testing.assert_allclose(gb1, gb2, rtol=1e-12)


def test_cho_solve_takes_a_factor_and_flag_pair_being_differentiated():
    # the pair is then one recorded value: reading its parts was a Python TypeError
    interp = with_a_and_b()
    interp.run("let l = cholesky(a @ transpose(a))\n"
               "let by_pair = grad(fn(p) => sum(cho_solve(p, b)))((l, true))\n"
               "let by_factor = grad(fn(f) => sum(cho_solve(f, b)))(l)")
    by_pair, by_factor = interp.get("by_pair"), interp.get("by_factor")
    assert by_pair[1] is None
    np.testing.assert_allclose(by_pair[0], by_factor, rtol=1e-12)
    with pytest.raises(DgError) as err:
        interp.run("grad(fn(x) => sum(tensor(cho_solve(x, 0))))((1.0, 2.0))")
    assert err.value.kind == "type" and "lower must be true or false" in str(err.value)


@pytest.mark.parametrize("src, kind, words", [
    ("cholesky([[1.0, 2.0], [2.0, 1.0]])", "value", "not positive definite"),
    ("solve([[1.0, 2.0], [2.0, 4.0]], [1.0, 1.0])", "value", "solve: the matrix is singular"),
    ("inv([[1.0, 2.0], [2.0, 4.0]])", "value", "inv: the matrix is singular"),
    ("det([[1.0, 2.0, 3.0]])", "shape", "det needs a square matrix"),
    ("solve(eye(2), [1.0, 2.0, 3.0])", "shape", "it needs 2 rows"),
    ("diag(zeros((2, 2, 2)))", "shape", "diag needs a vector or a matrix"),
    ("triangular_solve(eye(2), [1.0, 2.0], lower=1)", "type", "lower must be true or false"),
    ("tril(eye(2), 0.5)", "type", "k must be an int"),
    ("diag([1.0, 2.0], 1.0)", "type", "diag: the offset must be an int"),
    ("trace(eye(2), offset=true)", "type", "trace: the offset must be an int"),
    ("grad(fn(w) => sum(qr(w)[1]))([[1.0, 2.0, 3.0]])", "grad", "qr of a wide matrix (1 x 3) has no derivative"),
    ("qr(eye(2), mode=\"complete\")", "value", "mode must be"),
    ("lstsq(eye(2), [1.0, 2.0, 3.0])", "shape", "it needs 2 rows"),
    # numpy's (LAPACK's) linear algebra has no float16: numpy said so with a Python TypeError
    ("solve(astype(eye(2), \"float16\"), ones(2))", "type", "solve: linear algebra takes float32 or float64"),
    ("solve(eye(2), astype(ones(2), \"float16\"))", "type", "not float16"),
    ("inv(astype(eye(2), \"float16\"))", "type", "inv: linear algebra takes float32 or float64"),
    ("det(astype(eye(2), \"float16\"))", "type", "det: linear algebra takes"),
    ("expm(astype(eye(2), \"float16\"))", "type", "expm: linear algebra takes"),
    ("qr(astype(eye(2), \"float16\"))", "type", "qr: linear algebra takes"),
    ("svd(astype(eye(2), \"float16\"))", "type", "svd: linear algebra takes"),
    ("cholesky(astype(eye(2), \"float16\"))", "type", "cholesky: linear algebra takes"),
])
def test_bad_input_is_a_dg_error(src, kind, words):
    with pytest.raises(DgError) as info:
        run(f"let r = {src}")
    assert info.value.kind == kind and words in info.value.message


def test_diagonals_off_the_main_one_are_numpys_for_every_offset_and_shape():
    interp = run("let iv = astype([1.0, 2.0], \"int64\")")
    interp.set("v", V)
    for a in (TALL, TALL.T.copy(), A, np.ones((2, 0, 3))):
        interp.set("a", a)
        for k in range(-5, 6):
            assert np.array_equal(interp.eval(f"diagonal(a, {k})"), np.linalg.diagonal(a, offset=k))
            assert np.allclose(interp.eval(f"trace(a, offset={k})"), np.linalg.trace(a, offset=k))
            if a.ndim == 2:
                assert np.array_equal(interp.eval(f"diag(a, {k})"), np.diag(a, k))
    for k in range(-4, 5):
        assert np.array_equal(interp.eval(f"diag(v, k={k})"), np.diag(V, k))
        got = interp.eval(f"diag(iv, {k})")
        assert got.dtype == np.int64 and np.array_equal(got, np.diag([1, 2], k))


def test_the_gradient_of_det_at_a_singular_matrix_is_its_cofactor_matrix():
    singular = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    want = np.array([[4.0, 4.0, -4.0], [-2.0, -2.0, 2.0], [0.0, 0.0, 0.0]])    # the cofactors, by hand
    interp = dsl.Interpreter(seed=0)
    interp.set("m", singular)
    interp.run("let g = grad(det)(m)\nlet batched = vmap(grad(det))(stack((m, eye(3))))\n"
               "let t = jvp(det, (m,), (eye(3),))[1]")
    np.testing.assert_allclose(interp.get("g"), want, atol=1e-12)
    np.testing.assert_allclose(interp.get("batched")[0], want, atol=1e-12)
    np.testing.assert_allclose(interp.get("batched")[1], np.eye(3), atol=1e-12)
    assert abs(interp.get("t") - np.trace(want.T)) < 1e-12
    with pytest.raises(DgError) as info:
        interp.run("hessian(det)(m)")
    assert "second derivatives are not computed" in info.value.message
    with pytest.raises(DgError) as info:
        interp.run("grad(fn(a) => slogdet(a)[1])(m)")
    assert "ln |det| is -inf there and has no derivative" in info.value.message


def test_a_jitted_derivative_at_a_singular_matrix_names_what_the_program_called(backend):
    # the inverse and the solve of these rules are steps of the compiled derivative, whose own
    # errors named inv and solve, functions the program never called
    interp = dsl.Interpreter(backend=backend)
    interp.run("let g = jit(grad(fn(a) => slogdet(a)[1]))\nlet t = jit(fn(a, d) => jvp(fn(a) => slogdet(a)[1], (a,), (d,))[1])\n"
               "let h = jit(hessian(det))\nlet ok = (g(eye(2)), g(eye(2)), t(eye(2), eye(2)), t(eye(2), eye(2)), h(eye(2)), h(eye(2)))")
    for src, words in [("g(zeros((2, 2)))", "slogdet: the matrix is singular: ln |det| is -inf there and has no derivative"),
                       ("t(zeros((2, 2)), eye(2))", "slogdet: the matrix is singular: ln |det| is -inf there"),
                       ("h(zeros((2, 2)))", "det: the matrix is singular, where det's second derivatives are not computed")]:
        with pytest.raises(DgError) as info:
            interp.eval(src)
        assert info.value.message == words or info.value.message.startswith(words), src
    np.testing.assert_allclose(interp.eval("g(2.0 * eye(2))"), 0.5 * np.eye(2), rtol=1e-15)


def test_cholesky_reads_the_symmetric_part_as_jax_does():
    r = run("let r = (cholesky([[4.0, 0.0], [2.0, 3.0]]), cholesky([[4.0, 1.0], [1.0, 3.0]]))").lookup("r")
    np.testing.assert_allclose(r[0], r[1], rtol=1e-15)


@pytest.mark.parametrize("how", ["eager", "numpy", "xla"])
def test_entries_a_function_does_not_read_may_be_inf_or_nan(how):
    # the other triangle of triangular_solve, the entries off the diagonal of diagonal, trace and
    # einsum's "ii", the zeros diag writes: as numpy and scipy read them, not a product with a mask
    # (0 * inf is nan)
    nan, inf = np.nan, np.inf
    m = np.array([[2.0, nan], [inf, 3.0]])
    up = np.array([[2.0, 1.0], [nan, 4.0]])
    b = np.array([1.0, 1.0])
    cases = [("triangular_solve(transpose(u), b, lower=true)", np.linalg.solve(np.tril(up.T), b)),
             ("triangular_solve(u, b, lower=false)", np.linalg.solve(np.triu(up), b)),
             ("diagonal(m)", np.array([2.0, 3.0])), ("trace(m)", 5.0), ("einsum(\"ii\", m)", 5.0),
             ("einsum(\"ii->i\", m)", np.array([2.0, 3.0])), ("diag(m)", np.array([2.0, 3.0])),
             ("diag([inf, 1.0])", np.diag([inf, 1.0])), ("cho_solve(u, b)", None)]
    if how == "xla":
        jax_or_skip()
    interp = run(f"let j = jit(fn(f, m, u, b) => f(m, u, b), backend=\"{'numpy' if how == 'eager' else how}\")")
    for expr, want in cases:
        src = f"fn(m, u, b) => {expr}"
        got = ((lambda f, *a: f(*a)) if how == "eager" else interp.lookup("j"))(interp.run(src), m, up, b)
        if want is None:        # the factor's lower triangle only: the nan above it is not read
            want = np.linalg.solve(np.tril(up) @ np.tril(up).T, b)
        np.testing.assert_allclose(got, want, rtol=1e-14, err_msg=expr)
    assert interp.run("dtype(diag(astype([1.0, 2.0], \"int64\")))") == "int64"
    assert interp.run("dtype(diagonal(astype(ones((2, 2)), \"float32\")))") == "float32"
    # tril and triu keep an int or bool matrix's dtype, as numpy's and jax.numpy's
    ints = np.array([[1, 2], [3, 4]])
    for expr, want in [("tril(a)", np.tril(ints)), ("triu(a, 1)", np.triu(ints, 1)),
                       ("tril(a > 1, -1)", np.tril(ints > 1, -1))]:
        f = interp.run(f"fn(a, u, b) => {expr}")
        got = (f if how == "eager" else (lambda *a: interp.lookup("j")(f, *a)))(ints, up, b)
        assert got.dtype == want.dtype and (got == want).all(), expr


def test_decompositions_second_order_batched_and_jitted_agree_with_jax(capfd):
    jax = jax_or_skip()
    jnp = jax.numpy
    c = np.array([1.0, -2.0, 0.5])

    def f(a):
        return jnp.sum(jnp.linalg.eigvalsh(a, symmetrize_input=True) * c) + jnp.sum(
            jnp.linalg.svd(a, compute_uv=False) ** 3)
    want = jax.hessian(f)(A)
    stack = np.stack([A, SPD])
    want_batched = jax.vmap(jax.grad(f))(stack)
    interp = dsl.Interpreter(seed=0)
    interp.set("a", A)
    interp.set("c", c)
    interp.set("stack", stack)
    interp.run("fn f(a) { return sum(eigvalsh(a) * c) + sum(svd(a, compute_uv=false) ** 3) }\n"
               "let h = hessian(f)(a)\nlet hj = jit(hessian(f))(a)\n"
               "let batched = vmap(grad(f), explain=true)(stack)")
    np.testing.assert_allclose(interp.get("h"), np.asarray(want), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(interp.get("hj"), np.asarray(want), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(interp.get("batched"), np.asarray(want_batched), rtol=1e-10, atol=1e-12)
    assert "once per example" not in capfd.readouterr().err


def test_lstsq_gives_jaxs_results():
    interp = dsl.Interpreter(seed=0)
    interp.set("t", TALL)
    interp.set("v", V4)
    interp.set("w", TALL.T.copy())
    interp.run("let x, res, rank, s = lstsq(t, v)\nlet wide = lstsq(w, v[:3])")
    want = np.linalg.lstsq(TALL, V4)
    np.testing.assert_allclose(interp.get("x"), want[0], rtol=1e-12)
    np.testing.assert_allclose(interp.get("res"), want[1], rtol=1e-10)
    assert interp.get("rank") == want[2] == 3
    np.testing.assert_allclose(interp.get("s"), want[3], rtol=1e-12)
    x, res, rank, s = interp.get("wide")       # underdetermined: the least-norm x, a residual of ~0
    np.testing.assert_allclose(x, np.linalg.lstsq(TALL.T, V4[:3])[0], rtol=1e-12)
    assert res.shape == (1,) and res[0] < 1e-20 and rank == 3


def test_full_svd_of_a_non_square_matrix_has_values_but_no_derivative():
    interp = run("let u, s, vh = svd([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]])")
    assert np.shape(interp.lookup("u")) == (3, 3) and np.shape(interp.lookup("vh")) == (2, 2)
    with pytest.raises(DgError) as info:
        run("grad(fn(b) => sum(svd(b)[1]))([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]])")
    assert "full_matrices=true) of a non-square matrix has no derivative" in info.value.message


@pytest.mark.parametrize("expr, ref, args", CASES, ids=IDS)
def test_every_function_batches_without_a_loop_and_jits(expr, ref, args, capfd):
    names = list(args)
    values = [np.asarray(v) for v in args.values()]
    stacks = [np.stack([v, v + 0.01 * np.random.default_rng(3).normal(size=v.shape)]) for v in values]
    interp = dsl.Interpreter(seed=0)
    for name, s in zip(names, stacks):
        interp.set(name + "_stack", s)
    params = ", ".join(names)
    stacked = ", ".join(name + "_stack" for name in names)
    cot = f"sum(f({params}) * f({params}))"
    interp.run(f"fn f({params}) {{ return {expr} }}\n"
               f"let mapped = vmap(f, explain=true)({stacked})\n"
               f"let mapped_grads = vmap(grad(fn({params}) => {cot}, argnums={tuple(range(len(names)))}), "
               f"explain=true)({stacked})\n"
               f"let jitted = jit(f)({', '.join(n + '_stack[0]' for n in names)})")
    assert "once per example" not in capfd.readouterr().err
    for k in range(2):
        one = dsl.Interpreter(seed=0)
        for name, s in zip(names, stacks):
            one.set(name, s[k])
        one.run(f"fn f({params}) {{ return {expr} }}\nlet value = f({params})\n"
                f"let grads = grad(fn({params}) => {cot}, argnums={tuple(range(len(names)))})({params})")
        np.testing.assert_allclose(np.asarray(interp.get("mapped"))[k], one.get("value"), rtol=1e-12, atol=1e-13)
        for got, want in zip(interp.get("mapped_grads"), one.get("grads")):
            np.testing.assert_allclose(np.asarray(got)[k], want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(interp.get("jitted"), np.asarray(interp.get("mapped"))[0], rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lapacks_triangular_kernels_and_numpys_general_ones_agree(monkeypatch, dtype):
    # cholesky and triangular_solve call LAPACK's potrf and trtrs (through scipy, when installed)
    # on one matrix, and solve its gesv on one float64 matrix and vector; numpy's cholesky and
    # general solve otherwise: same values, dtypes and errors
    pytest.importorskip("scipy")
    from dsl.core.primitives import matrix
    tri = np.tril(A).astype(dtype)
    tri[0, 2] = np.nan                                     # the other triangle is not read

    def results():
        lower = matrix.triangular_solve(tri, B.astype(dtype), lower=True)
        upper = matrix.triangular_solve(tri.T, V, lower=False)       # float64 right side promotes
        stack = matrix.triangular_solve(np.stack([tri, tri]), np.stack([V, 2.0 * V]), lower=True)
        fac = matrix.cholesky(SPD.astype(dtype))
        general = matrix.solve(A.astype(dtype), V.astype(dtype))
        errors = []
        for bad in (lambda: matrix.cholesky(np.array([[1.0, 2.0], [2.0, 1.0]], dtype)),
                    lambda: matrix.triangular_solve(np.array([[1.0, 0.0], [3.0, 0.0]], dtype), V[:2], lower=True),
                    lambda: matrix.solve(np.array([[1.0, 2.0], [2.0, 4.0]], dtype), V[:2].astype(dtype))):
            with pytest.raises(DgError) as info:
                bad()
            errors.append(info.value.message)
        return (lower, upper, stack, fac, general), errors
    fast, fast_errors = results()
    monkeypatch.setattr(matrix, "_lapack", lambda: None)
    slow, slow_errors = results()
    assert fast_errors == slow_errors == ["cholesky: the matrix is not positive definite",
                                          "triangular_solve: the matrix is singular", "solve: the matrix is singular"]
    tol = 1e-5 if dtype == np.float32 else 1e-13
    for f, s in zip(fast, slow):
        assert f.dtype == s.dtype and f.shape == s.shape
        np.testing.assert_allclose(f, s, rtol=tol, atol=tol)
    assert fast[0].dtype == dtype and fast[1].dtype == np.float64 and np.all(np.triu(fast[3], 1) == 0)


# ---------------------------------------------------------------- stacks against one right side
SOLVE_SHAPES = [((5, 3, 4, 4), (4, 2)), ((5, 3, 4, 4), (3, 4, 2)), ((4, 4), (5, 4, 2)), ((3, 4, 4), (1, 4)),
                ((1, 4, 4), (3, 4)), ((3, 4, 4), (3, 4)), ((3, 4, 4), (4,)), ((2, 3, 4, 4), (4,)), ((4, 4), (4,))]


def _numpy_reading(a, b):
    """a and b broadcast to one batch, b as a stack of one-column matrices where it is a vector
    (dg's reading, numpy 2's for a b of one axis), and whether it was one."""
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape[-1] == a.shape[-1])
    bm = b[..., None] if vector else b
    batch = np.broadcast_shapes(a.shape[:-2], bm.shape[:-2])
    return np.broadcast_to(a, batch + a.shape[-2:]), np.broadcast_to(bm, batch + bm.shape[-2:]), vector


@pytest.mark.parametrize("a_shape, b_shape", SOLVE_SHAPES, ids=[f"{a}-{b}" for a, b in SOLVE_SHAPES])
def test_solves_broadcast_a_stack_against_one_right_side_and_give_gradients_in_their_operands_shapes(a_shape, b_shape):
    # the gradient of a right side (or matrix) that met a stack came back in the stack's shape, and
    # LAPACK's triangular solve of one matrix against a stack of right sides solved something else
    jax = jax_or_skip()
    jnp = jax.numpy
    a = np.tril(RNG.normal(size=a_shape)) + 4.0 * np.eye(4)
    b = RNG.normal(size=b_shape)

    def ref(a, b, lower_only):
        am, bm, vector = _numpy_reading(np.zeros(a.shape), np.zeros(b.shape))
        am = jnp.broadcast_to(jnp.tril(a) if lower_only else a, am.shape)
        bm = jnp.broadcast_to(b[..., None] if vector else b, bm.shape)
        x = jnp.linalg.solve(am, bm)
        return x[..., 0] if vector else x
    interp = dsl.Interpreter()
    interp.set("a", a)
    interp.set("b", b)
    for name, lower_only in (("solve(a, b)", False), ("triangular_solve(a, b, lower=true)", True),
                             ("cho_solve(a, b)", None)):
        if lower_only is None:      # the factor's lower triangle, twice
            want = ref(jnp.tril(a) @ jnp.swapaxes(jnp.tril(a), -1, -2), b, False)
            loss = lambda a, b: jnp.sum(ref(jnp.tril(a) @ jnp.swapaxes(jnp.tril(a), -1, -2), b, False) ** 3)   # noqa: E731
        else:
            want = ref(a, b, lower_only)
            loss = lambda a, b, lo=lower_only: jnp.sum(ref(a, b, lo) ** 3)     # noqa: E731
        interp.run(f"fn f(a, b) {{ return {name} }}\nlet r = (f(a, b), grad(fn(a, b) => sum(f(a, b) ** 3), "
                   f"argnums=(0, 1))(a, b), jit(f)(a, b), jit(f)(a, b))")
        value, (ga, gb), jitted, _ = interp.get("r")
        np.testing.assert_allclose(value, np.asarray(want), rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(jitted, value, rtol=1e-14, atol=1e-15)
        wa, wb = jax.grad(loss, argnums=(0, 1))(a, b)
        assert ga.shape == a.shape and gb.shape == b.shape, name
        np.testing.assert_allclose(gb, np.asarray(wb), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(ga, np.asarray(wa), rtol=1e-10, atol=1e-12)


def test_an_int_past_floats_range_is_inf_as_norms_order_and_pinvs_cutoff():
    # the fuzzer's pinv(0, 10 ** 400) met Python's OverflowError: such an int is inf, as dg's
    # floats take it everywhere (the largest entry is the limit of the vector norms)
    i = dsl.Interpreter()
    assert i.eval("norm([1.0, -2.0], ord=10 ** 400)") == 2.0
    assert i.eval("norm([1.0, -2.0], ord=-(10 ** 400))") == 1.0
    np.testing.assert_array_equal(i.eval("pinv([[1.0, 0.0], [0.0, 2.0]], 10 ** 400)"), np.zeros((2, 2)))
