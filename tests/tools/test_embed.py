"""Using dg from Python: a training loop driven from numpy, conversions both ways, errors with
locations, host functions, tapes, and independent interpreters."""

import io
import subprocess
import sys

import numpy as np
import pytest

import dsl
from dsl.errors import DgError

TRAIN = """\
fn predict(params, x) { return x @ params["w"] + params["b"] }

fn loss(params, x, y) { return mean((predict(params, x) - y) ** 2) }

fn train(params, x, y, steps, lr) {
    let first = loss(params, x, y)
    for step in range(steps) {
        let l, g = value_and_grad(loss)(params, x, y)
        params = tree_map(fn(p, d) => p - lr * d, params, g)
    }
    return params, first, loss(params, x, y)
}
"""


@pytest.fixture
def data():
    """A linear regression problem made in numpy."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3))
    w_true = np.array([[1.5], [-2.0], [0.5]])
    y = x @ w_true + 0.25
    return x, y, w_true


def test_python_data_dg_training_loop_params_back_as_dicts_of_arrays(data):
    x, y, w_true = data
    interp = dsl.Interpreter()
    interp.run(TRAIN, "train.dg")
    interp.set("x", x)
    interp.set("y", y)
    interp.set("init", {"w": np.zeros((3, 1)), "b": np.zeros(1)})
    interp.run("let trained, before, after = train(init, x, y, 200, 0.1)")
    params = interp.get("trained")
    assert isinstance(params, dict) and list(params) == ["w", "b"]
    assert all(type(v) is np.ndarray and v.dtype == np.float64 for v in params.values())
    assert params["w"].shape == (3, 1) and params["b"].shape == (1,)
    np.testing.assert_allclose(params["w"], w_true, atol=1e-3)
    np.testing.assert_allclose(params["b"], [0.25], atol=1e-3)
    assert interp.get("after") < 1e-6 < interp.get("before")
    # the same loop through .function: Python values in, Python values out
    trained, before, after = interp.function("train")({"w": np.zeros((3, 1)), "b": np.zeros(1)}, x, y, 200, 0.1)
    np.testing.assert_allclose(trained["w"], params["w"])


def test_grad_and_value_and_grad_are_shaped_like_the_arguments(data):
    x, y, _ = data
    interp = dsl.Interpreter()
    interp.run(TRAIN)
    params = {"w": np.full((3, 1), 0.1), "b": np.array([0.3])}
    value, g = interp.value_and_grad("loss")(params, x, y)
    residual = x @ params["w"] + params["b"] - y
    assert value == pytest.approx(np.mean(residual ** 2))
    assert set(g) == {"w", "b"} and all(type(v) is np.ndarray for v in g.values())
    np.testing.assert_allclose(g["w"], 2 * x.T @ residual / len(x), rtol=1e-10)
    np.testing.assert_allclose(g["b"], [2 * residual.mean()], rtol=1e-10)
    gx, gp = interp.grad("loss", argnums=[1, 0])(params, x, y)     # a list of argnums works too
    assert gx.shape == x.shape
    np.testing.assert_allclose(gp["w"], g["w"])


def test_a_bad_script_raises_dgerror_with_its_location(tmp_path):
    script = tmp_path / "model.dg"
    script.write_text("let w = zeros((3, 4))\nlet b = zeros((5,))\n\nlet h = ones((2, 3)) @ w + b\n")
    interp = dsl.Interpreter()
    with pytest.raises(DgError) as info:
        interp.run_file(script)
    err = info.value
    assert err.kind == "shape" and type(err).__name__ == "ShapeError"
    assert (err.filename, err.line, err.column) == (str(script), 4, 9)
    assert str(err).splitlines()[:2] == ["error[shape]: cannot add tensors of shapes (2, 4) and (5,)",
                                         f" --> {script}:4:9"]
    with pytest.raises(DgError) as info:
        interp.run("let a = 1\nlet b = (a +\n", "broken.dg")
    assert (info.value.kind, info.value.filename, info.value.line, info.value.column) == ("syntax", "broken.dg", 2, 13)


def test_an_error_inside_a_function_called_from_python_shows_the_dg_stack():
    interp = dsl.Interpreter()
    interp.run('fn inner(m) { return m["missing"] }\nfn outer(m) { return inner(m) + 1 }', "lib.dg")
    with pytest.raises(DgError) as info:
        interp.function("outer")({"present": 1.0})
    err = info.value
    assert (err.kind, err.line, err.column) == ("key", 1, 22)
    text = str(err)
    assert "= in inner, called at lib.dg:2:22" in text and "= in outer" in text
    with pytest.raises(DgError) as info:
        interp.function("outer")(1, 2)
    assert info.value.kind == "type"


@pytest.mark.parametrize("value, dg_type", [
    (1.5, "float"), (3, "int"), (True, "bool"), ("text", "string"), (None, "none"),
    (np.float32(2.5), "float"), (np.int64(7), "int"), (np.bool_(False), "bool"),
    (np.arange(6).reshape(2, 3), "tensor"), (np.array([True, False]), "tensor"),
    ((1, 2.0), "tuple"), ([1, [2.0, "x"]], "tuple"), ({"a": 1.0, 2: "b", True: None}, "map"),
    (dsl.make_struct("Linear", w=np.ones(2), b=0.0), "Linear"),
])
def test_values_convert_from_python_to_the_dg_kind(value, dg_type):
    interp = dsl.Interpreter()
    interp.set("v", value)
    assert interp.eval("type(v)") == dg_type


def test_other_libraries_arrays_convert_as_numpys():
    # a JAX user passes jax arrays, a PyTorch user CPU tensors: what numpy.asarray reads
    class Column:       # any object with __array__ (a pandas column, an xarray)
        def __array__(self, dtype=None, copy=None):
            return np.array([1.0, 2.0, 3.0])
    interp = dsl.Interpreter()
    interp.run("fn f(x) { return sum(x * x) }")
    assert interp.function("f")(Column()) == 14.0
    assert interp.grad("f")(Column()).tolist() == [2.0, 4.0, 6.0]
    interp.set("c", Column())
    assert interp.eval("type(c)") == "tensor"
    jnp = pytest.importorskip("jax.numpy")
    assert interp.function("f")(jnp.array([1.0, 2.0])) == 5.0
    interp.set("s", jnp.asarray(2.5))
    assert interp.eval("type(s)") == "float"


def test_conversions_round_trip_and_normalise():
    interp = dsl.Interpreter()
    interp.set("ints", np.arange(3, dtype=np.int32))
    back = interp.get("ints")
    assert back.dtype == np.float64 and back.tolist() == [0.0, 1.0, 2.0]
    interp.set("mask", np.array([True, False]))
    assert interp.get("mask").dtype == bool
    interp.set("nested", [1, (2.0, [3])])
    assert interp.get("nested") == (1, (2.0, (3,)))
    interp.set("m", {"w": np.ones(2), "n": {"k": 1}})
    m = interp.get("m")
    assert list(m) == ["w", "n"] and m["n"] == {"k": 1} and m["w"].tolist() == [1.0, 1.0]
    assert type(interp.get("m")["w"]) is np.ndarray
    assert interp.eval('{"a": (1, 2.0, "s", none, true)}') == {"a": (1, 2.0, "s", None, True)}
    assert type(interp.eval("sum([1.0, 2.0])")) is float


def test_structs_cross_both_ways():
    interp = dsl.Interpreter()
    interp.run("struct Linear { w, b }\nfn scale(l, k) { return Linear(w=l.w * k, b=l.b * k) }")
    made = interp.eval("Linear(w=[1.0, 2.0], b=0.5)")
    assert isinstance(made, dsl.Struct)
    assert made._name == "Linear" and made._fields == ("w", "b")
    assert made.w.tolist() == [1.0, 2.0] and made.b == 0.5
    assert repr(made) == "Linear(w=[1.0, 2.0], b=0.5)"
    from_python = dsl.make_struct("Linear", w=np.array([1.0, 2.0]), b=0.5)
    assert made == from_python
    doubled = interp.function("scale")(from_python, 2.0)
    assert doubled == dsl.make_struct("Linear", w=np.array([2.0, 4.0]), b=1.0)
    assert doubled != made
    # a dg struct type is callable from Python
    assert interp.get("Linear")(w=1.0, b=2.0)._asdict() == {"w": 1.0, "b": 2.0}


def test_arrays_are_copied_in_and_out():
    interp = dsl.Interpreter()
    a = np.zeros(3)
    interp.set("a", a)
    a[0] = 99.0                                   # changing the Python array afterwards...
    assert interp.eval("a[0]") == 0.0             # ...does not change the dg value
    out = interp.get("a")
    out[1] = 42.0
    assert interp.eval("a[1]") == 0.0


def test_bad_values_and_names_are_dgerrors():
    interp = dsl.Interpreter()
    for bad in ({1, 2}, object(), np.array([1j]), {1.5: "float key"}):
        with pytest.raises(DgError) as info:
            interp.set("v", bad)
        assert info.value.kind == "type"
    for name in ("let", "2x", "a-b", ""):
        with pytest.raises(DgError) as info:
            interp.set(name, 1)
        assert info.value.kind == "name"
    with pytest.raises(DgError) as info:
        interp.get("undefined_thing")
    assert info.value.kind == "name"
    with pytest.raises(DgError) as info:
        interp.eval("let x = 1")
    assert info.value.kind == "syntax"
    interp.set("k", 2.0)
    with pytest.raises(DgError) as info:
        interp.function("k")
    assert info.value.kind == "type"


def test_set_values_are_seen_by_functions_defined_earlier():
    interp = dsl.Interpreter()
    interp.run("fn scaled(x) { return x * factor }\nlet factor = 1.0")
    interp.set("factor", 3.0)
    assert interp.function("scaled")(2.0) == 6.0


# ---------------------------------------------------------------- host functions
def test_host_functions_are_called_with_python_values():
    interp = dsl.Interpreter()
    seen = []

    def describe(arr, label="x"):
        """A host function taking an array and a keyword."""
        seen.append((type(arr), label))
        return {"label": label, "total": float(np.sum(arr)), "shape": arr.shape}

    interp.define("describe", describe)
    assert interp.eval('describe([1.0, 2.0], label="v")') == {"label": "v", "total": 3.0, "shape": (2,)}
    assert seen == [(np.ndarray, "v")]


def test_host_function_errors_become_dgerrors_at_the_call_site():
    interp = dsl.Interpreter()

    def explode(x):
        """A host function that fails."""
        raise ValueError("no good")

    interp.define("explode", explode)
    with pytest.raises(DgError) as info:
        interp.run("let a = 1\nlet b = explode(a)", "host.dg")
    err = info.value
    assert err.kind == "user" and (err.line, err.column) == (2, 9)
    assert "the host function 'explode' raised ValueError: no good" in str(err)
    with pytest.raises(DgError) as info:
        interp.define("not_callable", 3)
    assert info.value.kind == "type"


def test_a_host_function_without_a_rule_is_not_differentiable():
    interp = dsl.Interpreter()
    interp.define("square", lambda a: a * a)
    assert interp.eval("square(3.0)") == 9.0
    with pytest.raises(DgError) as info:
        interp.eval("grad(fn(t) => square(t) + t)(3.0)")
    assert info.value.kind == "grad" and "'square' has no gradient rule" in str(info.value)
    # constants through it are fine: only the gradient path needs a rule
    assert interp.eval("grad(fn(t) => t * square(stop_gradient(t)))(3.0)") == 9.0


def test_a_host_function_with_a_vjp_is_differentiable():
    interp = dsl.Interpreter(keep_tape=True)
    calls = []

    def weighted(a, w):
        """a * w, broadcasting w over the rows of a."""
        return a * w

    def weighted_vjp(a, w, out, g):
        """The gradient of weighted for each argument."""
        calls.append(out.shape)
        return g * w, np.sum(g * a, axis=0)

    interp.define("weighted", weighted, vjp=weighted_vjp)
    interp.run("fn f(a, w) { return sum(weighted(a, w) ** 2) }")
    a, w = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([0.5, -1.0])
    ga, gw = interp.grad("f", argnums=(0, 1))(a, w)
    np.testing.assert_allclose(ga, 2 * a * w * w)
    np.testing.assert_allclose(gw, np.sum(2 * a * a * w, axis=0))
    assert calls == [(2, 2)]
    assert [row.op for row in interp.tape()].count("HostCall") == 1
    host_row = next(r for r in interp.tape() if r.op == "HostCall")
    assert host_row.detail == "host function weighted" and host_row.shape == (2, 2)


def test_a_vjp_with_a_wrong_shape_or_second_derivatives_are_grad_errors():
    interp = dsl.Interpreter()
    interp.define("sq", lambda a: a * a, vjp=lambda a, out, g: np.ones(5))
    with pytest.raises(DgError) as info:
        interp.eval("grad(fn(t) => sum(sq(t)))([1.0, 2.0])")
    assert info.value.kind == "grad" and "shape (5,)" in str(info.value)
    interp.define("sq2", lambda a: a * a, vjp=lambda a, out, g: 2 * a * g)
    assert interp.eval("grad(fn(t) => sq2(t))(3.0)") == 6.0
    with pytest.raises(DgError) as info:
        interp.eval("grad(grad(fn(t) => sq2(t)))(3.0)")
    assert info.value.kind == "grad" and "second derivative" in str(info.value)


def test_a_host_vjp_serves_jit_and_vmap_of_a_gradient():
    # jit(grad(f)) stages the reverse pass: the vjp is a step of the compiled program (it was a
    # "second derivative" error), called in Python on each run, and once per example under vmap
    interp = dsl.Interpreter(stdout=io.StringIO())
    calls = []

    def weighted_vjp(a, w, out, g):
        calls.append(1)
        return g * w, np.sum(g * a, axis=0)

    interp.define("weighted", lambda a, w: a * w, vjp=weighted_vjp)
    interp.define("sq", lambda x: x * x, vjp=lambda x, out, g: 2.0 * x * g)
    interp.define("pair", lambda x: (x * 2.0, {"s": x * x}),
                  vjp=lambda x, out, g: 2.0 * g[0] + 2.0 * x * g[1]["s"])
    interp.run("fn f(a, w) { return sum(weighted(a, w) ** 2) }\nstruct P { a, b }\n"
               "let jf = jit(grad(f, argnums=(0, 1)))")
    a, w = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([0.5, -1.0])
    for scale in (1.0, 2.0):        # the second call runs the compiled program
        ga, gw = interp.function("jf")(scale * a, w)
        np.testing.assert_allclose(ga, 2 * scale * a * w * w)
        np.testing.assert_allclose(gw, np.sum(2 * (scale * a) ** 2 * w, axis=0))
    assert len(calls) == 2
    assert interp.eval("jit(grad(fn(x) => sq(x) * 3.0))(2.0)") == 12.0
    got = interp.eval('jit(grad(fn(x) => sum(sq(x))))(astype([1.0, 2.0], "float32"))')
    assert got.dtype == np.float32 and got.tolist() == [2.0, 4.0]
    np.testing.assert_allclose(interp.eval("jit(vmap(grad(fn(x) => sq(x) * 3.0)))([1.0, 2.0])"), [6.0, 12.0])
    assert interp.eval('jit(value_and_grad(fn(x) => pair(x)[1]["s"] + pair(x)[0]))(3.0)') == (15.0, 8.0)
    assert interp.eval("jit(grad(fn(p) => sq(p.a) * p.b))(P(3.0, 2.0))") == interp.eval("P(12.0, 9.0)")
    # a vjp that gives none for an argument: a zero gradient there, a number's as a tensor's
    interp.define("first", lambda x, y: x * y, vjp=lambda x, y, out, g: (g * y, None))
    assert interp.eval("jit(grad(fn(x, y) => first(x, y), argnums=(0, 1)))(2.0, 3.0)") == (3.0, 0.0)
    assert interp.eval("jit(grad(fn(x, y) => sum(first(x, y)), argnums=(0, 1)))([2.0], [3.0])")[1].tolist() == [0.0]
    # an outer derivative that does not flow through the rule needs none of its derivative
    assert interp.eval("grad(fn(c) => grad(fn(t) => sq(t))(3.0) * c)(2.0)") == 6.0
    for second in ("jit(grad(grad(fn(t) => sq(t))))(3.0)", "grad(grad(fn(t) => sq(t)))(3.0)"):
        with pytest.raises(DgError) as info:
            interp.eval(second)
        assert info.value.kind == "grad" and "second derivative through the host function 'sq'" in str(info.value)
    for forward in ("hessian(fn(t) => sq(t))(3.0)", "jvp(fn(t) => sq(t), (3.0,), (1.0,))"):
        with pytest.raises(DgError) as info:
            interp.eval(forward)
        assert info.value.kind == "grad" and "forward mode" in info.value.message and "'sq'" in info.value.message


# ---------------------------------------------------------------- tapes and independence
def test_tape_rows_describe_the_last_gradient():
    interp = dsl.Interpreter(keep_tape=True)
    interp.run('fn f(m) { return sum(m["w"] * m["w"]) }')
    assert interp.tape() == []
    interp.grad("f")({"w": np.ones(3), "unused": 1.0})
    rows = interp.tape()
    assert [r.op for r in rows[:2]] == ["Parameter", "MapLookup"]
    lookup = rows[1]
    assert lookup.inputs == (0,) and lookup.shape == (3,) and lookup.detail == 'key "w" (0 of 2)'
    assert lookup.location == "<input>:1:22"
    assert rows == dsl.tape_rows(interp.last_tape)


def test_interpreters_are_independent():
    one, two = dsl.Interpreter(seed=7, keep_tape=True), dsl.Interpreter(seed=7, keep_tape=True)
    one.set("x", 1.0)
    two.set("x", 2.0)
    assert (one.get("x"), two.get("x")) == (1.0, 2.0)
    first = one.eval("rand((3,))")
    one.eval("rand((100,))")                       # drawing more in one...
    np.testing.assert_array_equal(two.eval("rand((3,))"), first)    # ...does not move the other
    one.run("fn f(t) { return t * t }")
    with pytest.raises(DgError):
        two.function("f")
    one.grad("f")(3.0)
    assert one.tape() and two.tape() == [] and two.last_tape is None
    two.run("struct Linear { w }")
    assert "Linear" not in one.names()


def test_importing_dsl_loads_no_ui_or_notebook_packages():
    code = "import sys, dsl; print(sorted(m for m in ('IPython', 'prompt_toolkit') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "[]", result.stderr


@pytest.mark.parametrize("given, words", [
    (lambda x, out, g: "abc", "returned a string as a gradient of argument 0"),
    (lambda x, out, g: 10 ** 400, "an int too large for a float"),
    (lambda x, out, g: True, "returned a bool as a gradient"),
])
def test_a_host_vjp_returning_what_is_no_gradient_is_a_grad_error(given, words):
    interp = dsl.Interpreter()
    interp.define("h", lambda x: x * 2.0, vjp=given)
    with pytest.raises(DgError) as info:
        interp.run("print(grad(fn(x) => h(x))(1.0))")
    assert info.value.kind == "grad" and "'h'" in info.value.message and words in info.value.message


def test_a_host_vjp_may_return_an_int_for_a_float():
    interp = dsl.Interpreter()
    interp.define("h", lambda x: x * 2.0, vjp=lambda x, out, g: 2)
    assert interp.eval("grad(fn(x) => h(x))(1.0)") == 2.0


@pytest.mark.parametrize("how", ["set", "host", "eval_arg"])
def test_ints_past_dgs_bound_do_not_get_in_from_python(how):
    # ints of more than 4,300 digits would make // and % run for any time, past every limit
    interp = dsl.Interpreter(timeout=2)
    with pytest.raises(DgError) as info:
        if how == "set":
            interp.set("n", 10 ** 5000)
        elif how == "host":
            interp.define("big", lambda: 10 ** 5000)
            interp.run("let n = big()\nprint(n % 7)")
        else:
            interp.run("fn f(n) { return n // 3 }")
            interp.function("f")(-(10 ** 4301))
    assert info.value.kind == "limit" and "4,300 digits" in info.value.message
    interp.set("n", 10 ** 4299)      # the longest ones dg makes itself get in
    assert interp.eval("n % 7") == 10 ** 4299 % 7


@pytest.mark.parametrize("seed, kind", [("abc", TypeError), (1.5, TypeError), (True, TypeError),
                                        (-1, ValueError)])
def test_a_bad_seed_is_refused_when_the_interpreter_is_made(seed, kind):
    with pytest.raises(kind, match="seed must be an int of at least 0"):
        dsl.Interpreter(seed=seed)
    assert dsl.Interpreter(seed=2 ** 70).eval("rand((1,))").shape == (1,)


@pytest.mark.parametrize("call", [lambda i: i.run("1", filename=123), lambda i: i.run(b"1"),
                                  lambda i: i.check("1", filename=3.5), lambda i: i.eval(7)])
def test_source_and_file_names_that_are_not_strings_are_type_errors(call):
    with pytest.raises(TypeError, match="must be a str"):
        call(dsl.Interpreter())


def test_a_plain_interpreter_keeps_no_tape_as_dg_run_does_while_the_repl_keeps_the_tapes_it_shows(monkeypatch):
    interp = dsl.Interpreter()          # as fast as `dg run`: nothing kept after a gradient
    interp.run("fn f(x) { return x * x }")
    assert interp.grad("f")(3.0) == 6.0
    assert interp.last_tape is None and interp.tape() == []
    from dsl import cli
    assert cli.make_interpreter({}).grad_options.keep_tape is False
    repl = pytest.importorskip("dsl.repl")
    opened = []
    monkeypatch.setattr(repl, "run_repl", lambda i: opened.append(i) or 0)
    assert cli._repl({}, []) == 0 and opened[0].grad_options.keep_tape is True
