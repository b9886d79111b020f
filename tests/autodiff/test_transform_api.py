"""The transformation API a JAX user expects: has_aux, Jacobians and Hessians of and with respect
to structs, maps and tuples (nested as JAX nests pytrees), custom_jvp, linearize and
jit's static_argnums. Each checked against a closed form, and against JAX itself where it is
installed (the values it gives are the contract)."""

import numpy as np
import pytest

import dsl
from dsl.errors import DgError


def run(src):
    """Run dg source; return the interpreter."""
    interp = dsl.Interpreter(seed=0)
    interp.run(src, "t.dg")
    return interp


def val(src, name="r"):
    """The value of `name` after running src."""
    return run(src).lookup(name)


def fails(src):
    """The DgError src raises."""
    with pytest.raises(DgError) as info:
        run(src)
    return info.value


def plain(v):
    """A dg value as nested Python tuples, dicts and numpy arrays (a struct as a dict of its fields)."""
    if isinstance(v, dsl.core.values.Struct):
        return {name: plain(x) for name, x in zip(v.sdef.fields, v.vals)}
    if type(v) is tuple:
        return tuple(plain(x) for x in v)
    if type(v) is dict:
        return {k: plain(x) for k, x in v.items()}
    return np.asarray(v, dtype=float)


def close(a, b, tol=1e-12):
    """Two nested results agree: the same structure, each leaf within tol."""
    a, b = plain(a) if not isinstance(a, (tuple, dict, np.ndarray)) else a, b
    if isinstance(a, dict):
        assert isinstance(b, dict) and sorted(a) == sorted(b), (a, b)     # JAX sorts a dict's keys
        for k in a:
            close(a[k], b[k], tol)
    elif isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            close(x, y, tol)
    else:
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        assert a.shape == b.shape, (a.shape, b.shape)
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def jax_or_skip():
    """jax with float64, or skip (JAX is not among what the tests need)."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    return jax


# ---------------------------------------------------------------- has_aux
def test_grad_and_value_and_grad_with_has_aux():
    i = run("fn f(x) { return (sum(x * x), {\"mean\": mean(x), \"n\": 2}) }\n"
            "let g, aux = grad(f, has_aux=true)([1.0, 2.0])\n"
            "let both = value_and_grad(f, has_aux=true)([1.0, 2.0])\n"
            "let gs = grad(fn(a, b) => (a * b, a), argnums=(0, 1), has_aux=true)(2.0, 3.0)\n"
            "let j = jit(grad(f, has_aux=true))([3.0, 4.0])")
    close(plain(i.lookup("g")), np.array([2.0, 4.0]))
    assert i.lookup("aux") == {"mean": 1.5, "n": 2}
    (value, aux), g = i.lookup("both")
    assert value == 5.0 and aux == {"mean": 1.5, "n": 2} and list(g) == [2.0, 4.0]
    assert i.lookup("gs") == ((3.0, 2.0), 2.0)
    close(plain(i.lookup("j")), ((6.0, 8.0), {"mean": 3.5, "n": 2.0}))


def test_has_aux_returns_aux_undifferentiated_by_this_grad_but_seen_by_an_outer_one():
    # the inner grad's aux x * y still carries the outer derivative: d/dy of (x * y) at x = 2 is 2
    i = run("fn inner(x, y) { return grad(fn(x) => (x * x * y, x * y), has_aux=true)(x) }\n"
            "let r = grad(fn(y) => inner(2.0, y)[0] + inner(2.0, y)[1])(3.0)")
    assert i.lookup("r") == 4.0 + 2.0       # d/dy (2 x y) + d/dy (x y) at x = 2


def test_jacobian_with_has_aux():
    r = val("let r = jacobian(fn(x) => (x * 2.0, \"label\"), has_aux=true)([1.0, 2.0])")
    close(plain(r[0]), np.eye(2) * 2.0)
    assert r[1] == "label"


def test_has_aux_needs_a_pair():
    err = fails("grad(fn(x) => x * x, has_aux=true)(1.0)")
    assert err.kind == "type" and "returns a pair (value, aux)" in err.message
    err = fails("grad(fn(x) => (x, x), has_aux=1)(1.0)")
    assert "has_aux must be true or false" in err.message


# ---------------------------------------------------------------- Jacobians of trees
def test_jacobian_of_a_tree_result_with_respect_to_a_struct_is_nested_out_tree_then_in_tree():
    for how in ("jacobian", "jacrev", "jacfwd"):
        r = val("struct P { a, b }\n"
                f"let r = {how}(fn(p) => (p.a * p.b, {{\"s\": sum(p.b)}}))(P(2.0, [3.0, 4.0]))")
        first, second = r
        close(plain(first), {"a": np.array([3.0, 4.0]), "b": np.eye(2) * 2.0})
        close(plain(second["s"]), {"a": np.array(0.0), "b": np.array([1.0, 1.0])})


def test_a_numbers_jacobian_by_a_number_is_a_number_in_every_mode():
    """jacrev and jacobian as jacfwd and hessian: a float, not a 0-dimensional tensor (reference
    section 3: dg has none), also where the output does not depend on the argument, and the same
    under grad and jit."""
    src = ("fn g(x, y) { return (x * y, {\"s\": x + y}) }\n"
           "let r = (jacrev(fn(x) => x * x)(2.0), jacobian(g, (0, 1))(2.0, 3.0), jacfwd(g, (0, 1))(2.0, 3.0),\n"
           "         jacrev(fn(x) => 3.0)(2.0), jit(jacrev(fn(x) => x ** 3))(2.0),\n"
           "         grad(fn(x) => jacrev(fn(y) => y ** 3 * x)(x))(2.0), jacrev(jacrev(fn(x) => x ** 3))(2.0))")
    r = val(src)
    assert r[0] == 4.0 and r[1] == r[2] == ((3.0, 2.0), {"s": (1.0, 1.0)})
    assert r[3] == 0.0 and r[4] == 12.0 and r[5] == 36.0 and r[6] == 12.0
    for leaf in (r[0], *r[1][0], *r[1][1]["s"], r[3], r[4], r[5], r[6]):
        assert type(leaf) is float
    vec = val("let r = jacrev(fn(x) => x * x)([1.0, 2.0])")
    assert isinstance(vec, np.ndarray) and vec.shape == (2, 2)


def test_jacobians_of_tree_results_agree_with_jax():
    jax = jax_or_skip()
    jnp = jax.numpy

    def f(t, m):
        return {"u": jnp.sin(t[0]) * m["w"], "v": (t[0] * t[1], jnp.sum(m["w"] ** 2) * t[1])}

    t, m = (0.3, np.array([1.0, -2.0])), {"w": np.array([0.5, 1.5, -1.0])}
    src = ("fn f(t, m) { return {\"u\": sin(t[0]) * m[\"w\"], \"v\": (t[0] * t[1], sum(m[\"w\"] ** 2) * t[1])} }\n"
           "let t = (0.3, [1.0, -2.0])\nlet m = {\"w\": [0.5, 1.5, -1.0]}\n")
    for how, jax_how in (("jacrev", jax.jacrev), ("jacfwd", jax.jacfwd)):
        want = jax_how(f, argnums=(0, 1))(t, m)
        got = val(src + f"let r = {how}(f, argnums=(0, 1))(t, m)")
        close(plain(got), jax.tree_util.tree_map(np.asarray, want))


# ---------------------------------------------------------------- Hessians of trees
def test_hessian_with_respect_to_a_map_a_tuple_and_several_arguments_agrees_with_jax():
    jax = jax_or_skip()
    jnp = jax.numpy

    def f(m, t):
        return jnp.sum(m["a"] ** 2 * t[0]) + jnp.sin(m["b"]) * t[1] * t[0]

    m, t = {"a": np.array([1.0, 2.0]), "b": 0.7}, (1.5, np.array(-0.5))
    src = ("fn f(m, t) { return sum(m[\"a\"] ** 2 * t[0]) + sin(m[\"b\"]) * t[1] * t[0] }\n"
           "let m = {\"a\": [1.0, 2.0], \"b\": 0.7}\nlet t = (1.5, -0.5)\n")
    for argnums in ("0", "1", "(0, 1)"):
        nums = eval(argnums)
        want = jax.tree_util.tree_map(np.asarray, jax.hessian(f, argnums=nums)(m, t))
        got = val(src + f"let r = hessian(f, argnums={argnums})(m, t)")
        close(plain(got), want)


def test_hessian_of_a_struct_in_closed_form():
    r = val("struct P { w, b }\n"
            "let r = hessian(fn(p) => sum(p.w * p.w) * p.b)(P([1.0, 2.0], 3.0))")
    h = plain(r)
    # d2/dw2 = 2b I, d2/dw db = 2w, d2/db2 = 0
    close(h, {"w": {"w": 6.0 * np.eye(2), "b": np.array([2.0, 4.0])},
              "b": {"w": np.array([2.0, 4.0]), "b": np.array(0.0)}})


# ---------------------------------------------------------------- custom_jvp
LOG1PEXP = ("let f = custom_jvp(fn(x) => ln(1.0 + exp(x)),\n"
            "                   fn(p, t) => (ln(1.0 + exp(p[0])), t[0] * (1.0 - 1.0 / (1.0 + exp(p[0])))))\n")


def test_custom_jvp_gives_its_rule_in_every_mode():
    # JAX's example: the rule is stable where the function's own derivative is nan (x = 1000)
    i = run(LOG1PEXP +
            "let r = (grad(f)(3.0), jvp(f, (3.0,), (2.0,))[1], grad(f)(1000.0), grad(grad(f))(0.0),\n"
            "         hessian(f)(0.0), vmap(grad(f))([0.0, 1.0]), jit(grad(f))(1.0), grad(jit(f))(1.0),\n"
            "         jacfwd(f)(2.0), jacrev(f)(2.0))")
    s = lambda x: 1.0 / (1.0 + np.exp(-x))      # noqa: E731
    want = (s(3.0), 2.0 * s(3.0), 1.0, 0.25, 0.25, np.array([0.5, s(1.0)]), s(1.0), s(1.0), s(2.0), s(2.0))
    close(plain(i.lookup("r")), tuple(np.asarray(w) for w in want), 1e-15)


def test_custom_jvp_uses_the_rule_not_the_functions_own_derivative():
    i = run("let g = custom_jvp(fn(x, y) => x * y, fn(p, t) => (p[0] * p[1], 10.0 * t[0] + 100.0 * t[1]))\n"
            "let r = (grad(g, argnums=(0, 1))(2.0, 3.0), jvp(g, (2.0, 3.0), (1.0, 0.0))[1],\n"
            "         grad(fn(x) => g(x, x * x))(2.0), jacobian(fn(v) => g(v, v))([1.0, 2.0]))")
    close(plain(i.lookup("r")), ((10.0, 100.0), 10.0, 410.0, 110.0 * np.eye(2)))


def test_custom_jvp_through_loops_agrees_in_every_composition():
    i = run("let f = custom_jvp(fn(x) => x * x, fn(p, t) => (p[0] * p[0], 3.0 * p[0] * t[0]))\n"
            "fn loop(x) { let s = x\n for i in range(5) { s = f(s) * 0.5 }\n return s }\n"
            "let r = (grad(loop)(1.1), jit(grad(loop))(1.1), grad(jit(loop))(1.1),\n"
            "         jvp(jit(loop), (1.1,), (1.0,))[1], grad(fn(v) => sum(vmap(loop)(v)))([1.1, 1.1])[0])\n"
            "let h = (grad(grad(loop))(1.1), jit(grad(grad(loop)))(1.1), hessian(jit(loop))(1.1))")
    # the rule's derivative 3x (not 2x): d s5 / dx is the product of 1.5 s_k over the steps
    s, d = 1.1, 1.0
    for _ in range(5):
        s, d = 0.5 * s * s, d * 1.5 * s
    r = i.lookup("r")
    assert all(abs(x - d) <= 1e-15 * abs(d) for x in r), (r, d)
    h = i.lookup("h")
    assert abs(h[0] - h[1]) <= 1e-15 * abs(h[0]) and abs(h[0] - h[2]) <= 1e-15 * abs(h[0])


def test_custom_jvp_agrees_with_jax():
    jax = jax_or_skip()
    jnp = jax.numpy

    @jax.custom_jvp
    def f(x, y):
        return jnp.sin(x) * y

    @f.defjvp
    def f_jvp(primals, tangents):
        x, y = primals
        tx, ty = tangents
        return f(x, y), 2.0 * jnp.cos(x) * y * tx + jnp.sin(x) * ty

    def loss(x, y):
        return jnp.sum(f(x, y) ** 2)

    x, y = np.array([0.3, 1.2]), np.array([2.0, -1.0])
    src = ("let f = custom_jvp(fn(x, y) => sin(x) * y,\n"
           "                   fn(p, t) => (sin(p[0]) * p[1], 2.0 * cos(p[0]) * p[1] * t[0] + sin(p[0]) * t[1]))\n"
           "fn loss(x, y) { return sum(f(x, y) ** 2) }\nlet x = [0.3, 1.2]\nlet y = [2.0, -1.0]\n"
           "let r = (grad(loss, argnums=(0, 1))(x, y), hessian(loss)(x, y), jacfwd(f)(x, y))")
    want = (jax.grad(loss, argnums=(0, 1))(x, y), jax.hessian(loss)(x, y), jax.jacfwd(f)(x, y))
    close(plain(val(src)), jax.tree_util.tree_map(np.asarray, want))


def test_custom_jvp_errors_speak_of_the_rule():
    err = fails("grad(custom_jvp(fn(x) => x, fn(p, t) => t[0]))(1.0)")
    assert "must return a pair (value, tangent)" in err.message
    err = fails("grad(custom_jvp(fn(x) => x * 1.0, fn(p, t) => (p[0], [1.0, 2.0])))(1.0)")
    assert "as the tangent of a float" in err.message
    # a differentiated value read through the closure, while the rule is in use: it would get no tangent
    err = fails("fn outer(y) { return custom_jvp(fn(x) => x * y, fn(p, t) => (p[0] * y, t[0] * y))(y) }\n"
                "grad(outer)(2.0)")
    assert "through its closure" in err.message


# ---------------------------------------------------------------- linearize
def test_linearize_gives_the_value_and_the_jvp_as_a_function():
    i = run("struct P { w, b }\nfn f(p, x) { return tanh(x @ p.w + p.b) }\n"
            "let p = P([[1.0, 2.0], [3.0, 4.0]], [0.1, 0.2])\nlet x = [0.5, -0.3]\n"
            "let out, lin = linearize(f, p, x)\n"
            "let tp = P([[0.1, 0.0], [0.0, 0.2]], [1.0, 0.0])\nlet tx = [0.3, 0.7]\n"
            "let r = (out, lin(tp, tx), lin(tp, none), lin(none, tx))\n"
            "let want = (f(p, x), jvp(f, (p, x), (tp, tx))[1], jvp(f, (p, x), (tp, zeros(2)))[1],\n"
            "            jvp(f, (p, x), (P(zeros((2, 2)), zeros(2)), tx))[1])")
    close(plain(i.lookup("r")), plain(i.lookup("want")), 1e-15)


def test_linearize_keeps_the_random_draws_of_its_one_run():
    i = run("fn noisy(x) { return x * randn(()) }\n"
            "let out, lin = linearize(noisy, 2.0)\nlet r = (out / 2.0, lin(1.0), lin(1.0))")
    a, b, c = i.lookup("r")
    assert a == b == c      # the draw of the one run, in the value and in each tangent


def test_linearize_prints_once(capsys):
    run("fn noisy(x) { print(\"ran\")\n return x * 2.0 }\nlet out, lin = linearize(noisy, 2.0)\n"
        "print(lin(1.0), lin(3.0))")
    assert capsys.readouterr().out == "ran\n2.0 6.0\n"


def test_linearize_through_a_step_without_a_forward_rule_reruns_f_with_the_same_draws():
    # checkpoint's step has no forward rule of its own: the linear function is jvp of f, run again
    # from the random generator's state of the first run
    i = run("fn f(x) { return checkpoint(fn(y) => sin(y) * randn(()))(x) }\n"
            "let out, lin = linearize(f, 0.4)\nlet r = (out / sin(0.4), lin(1.0) / cos(0.4), lin(2.0) / cos(0.4))")
    a, b, c = i.lookup("r")
    assert abs(a - b) < 1e-15 and abs(2.0 * a - c) < 1e-15


def test_linearize_agrees_with_jax_and_differentiates():
    i = run("let out, lin = linearize(fn(x, y) => x * sin(y), 2.0, 0.5)\n"
            "let r = (out, lin(1.0, 0.0), lin(0.0, 1.0),\n"
            "         grad(fn(s) => linearize(fn(x) => sin(x) * s, 1.0)[1](1.0))(2.0))")
    close(plain(i.lookup("r")), tuple(np.asarray(v) for v in (2.0 * np.sin(0.5), np.sin(0.5), 2.0 * np.cos(0.5),
                                                              np.cos(1.0))), 1e-15)
    err = fails("let out, lin = linearize(fn(x) => x * 2.0, 1.0)\nlin(1.0, 2.0)")
    assert "takes 1 tangent, one per primal, but got 2" in err.message


# ---------------------------------------------------------------- jit's static_argnums
def test_static_argnums_compiles_once_per_value(capfd):
    i = run("fn f(x, n, mode) {\n let s = x\n for i in range(n) { s = s * 1.1 }\n"
            " if mode == \"double\" { return s * 2.0 }\n return s\n}\n"
            "let g = jit(f, static_argnums=(1, 2), explain=true)\n"
            "let r = (g(1.0, 3, \"double\"), g(2.0, 3, \"double\"), g(2.0, 4, \"x\"), g(3.0, 4, \"x\"))\n"
            "let want = (f(1.0, 3, \"double\"), f(2.0, 3, \"double\"), f(2.0, 4, \"x\"), f(3.0, 4, \"x\"))")
    assert i.lookup("r") == i.lookup("want")
    assert capfd.readouterr().err.count("staging it") == 2     # once per value of (n, mode)


def test_static_arguments_are_constants_of_the_compiled_code():
    # a float static argument is a constant: the function is compiled again for each value, and
    # may use it where only constants go (a shape)
    i = run("let hj = jit(fn(x, scale, k) => x * scale + zeros(k), static_argnums=(1, -1))\n"
            "let r = (hj([1.0, 2.0], 3.0, 2), hj([1.0, 2.0], 4.0, 2), grad(fn(x) => sum(hj(x, 3.0, 2)))([1.0, 2.0]))")
    a, b, g = i.lookup("r")
    assert list(a) == [3.0, 6.0] and list(b) == [4.0, 8.0] and list(g) == [3.0, 3.0]


def test_static_argnums_errors():
    err = fails("let hj = jit(fn(x, s) => x * s, static_argnums=1)\ngrad(fn(s) => hj(2.0, s))(3.0)")
    assert err.kind == "grad" and "argument 1 is static" in err.message
    err = fails("jit(fn(x) => x, static_argnums=\"a\")")
    assert "static_argnums must be an int or a tuple of ints" in err.message
    err = fails("jit(fn(x) => x, static_argnums=2)(1.0)")
    assert "static_argnums names argument 2" in err.message


def test_has_aux_in_jacfwd_hessian_and_vjp_agrees_with_jax():
    jax = jax_or_skip()
    jnp = jax.numpy

    def f(x):
        return jnp.sum(x ** 3) * x[1], {"first": x[0] * 2.0}

    x = np.array([1.0, 2.0, 0.5])
    want_h, want_aux = jax.hessian(f, has_aux=True)(x)
    want_j, _ = jax.jacfwd(lambda v: (v * v[0], v[1]), has_aux=True)(x)
    out, back, aux = jax.vjp(f, x, has_aux=True)
    src = ("fn f(x) { return (sum(x ** 3) * x[1], {\"first\": x[0] * 2.0}) }\nlet x = [1.0, 2.0, 0.5]\n"
           "let r = (hessian(f, has_aux=true)(x), jacfwd(fn(v) => (v * v[0], v[1]), has_aux=true)(x),\n"
           "         jit(hessian(f, has_aux=true))(x))\n"
           "let v, back, aux = vjp(f, x, has_aux=true)\nlet pulled = back(2.0)")
    i = run(src)
    h, j, hj = i.lookup("r")
    close(plain(h), (np.asarray(want_h), {"first": np.asarray(want_aux["first"])}))
    close(plain(hj), plain(h))
    close(plain(j[0]), np.asarray(want_j))
    assert j[1] == 2.0
    close(plain((i.lookup("v"), i.lookup("aux"), i.lookup("pulled"))),
          (np.asarray(out), {"first": np.asarray(aux["first"])}, (np.asarray(back(2.0)[0]),)))


def test_aux_of_jacfwd_is_still_differentiated_by_an_outer_grad():
    r = val("let r = grad(fn(y) => jacfwd(fn(x) => (x * y, x * y * y), has_aux=true)(2.0)[1])(3.0)")
    assert r == 12.0        # d/dy of x y^2 at x = 2, y = 3


# ---------------------------------------------------------------- vmap's axes as trees
def test_vmap_in_axes_and_out_axes_may_be_trees_as_in_jax():
    jax = jax_or_skip()
    jnp = jax.numpy

    def f(p, x):
        return {"y": p["w"] * x + p["b"], "pair": (x, p["b"] * 2.0)}

    p, x = {"w": np.array([[1.0, 2.0], [3.0, 4.0]]), "b": 0.5}, np.array([10.0, 20.0])
    in_axes, out_axes = ({"b": None, "w": 0}, 0), {"y": 1, "pair": (0, None)}
    want = jax.vmap(f, in_axes=in_axes, out_axes=out_axes)(p, x)
    got = val("fn f(p, x) { return {\"y\": p[\"w\"] * x + p[\"b\"], \"pair\": (x, p[\"b\"] * 2.0)} }\n"
              "let r = vmap(f, in_axes=({\"b\": none, \"w\": 0}, 0), out_axes={\"y\": 1, \"pair\": (0, none)})"
              "({\"w\": [[1.0, 2.0], [3.0, 4.0]], \"b\": 0.5}, [10.0, 20.0])")
    close(plain(got), jax.tree_util.tree_map(np.asarray, want))


def test_vmap_axes_for_a_struct_and_under_grad():
    i = run("struct P { w, b }\n"
            "let r = vmap(fn(p, x) => p.w * x + p.b, in_axes=(P(0, none), 0))(P([[1.0, 2.0], [3.0, 4.0]], 0.5), [10.0, 20.0])\n"
            "let g = grad(fn(w) => sum(vmap(fn(p, x) => p.w * x, in_axes=(P(0, none), 0))(P(w, 1.0), [1.0, 2.0])))"
            "([[1.0, 2.0], [3.0, 4.0]])\n"
            "let o = vmap(fn(x) => ((x, x * 2.0), x * 3.0), out_axes=((0, 0), 1))([[1.0, 2.0], [3.0, 4.0]])")
    close(plain(i.lookup("r")), np.array([[10.5, 20.5], [60.5, 80.5]]))
    close(plain(i.lookup("g")), np.array([[1.0, 1.0], [2.0, 2.0]]))
    close(plain(i.lookup("o")), ((np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[2.0, 4.0], [6.0, 8.0]])),
                                 np.array([[3.0, 9.0], [6.0, 12.0]])))
    err = fails("vmap(fn(p) => p[\"a\"], in_axes=({\"b\": 0},))({\"a\": [1.0]})")
    assert "in_axes for argument 0 (counting from 0) is {\"b\": 0}, which does not match" in err.message
    assert "a map with keys \"a\"" in err.message
