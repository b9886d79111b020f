"""What Python and numpy habits meet in dg: each gets a one-line hint of dg's way, and the list-append
idiom (`a = a + [x]`, which on tensors adds rather than appends) is an error instead of a silent
wrong answer. numpy's new axis is `none` in an index (numpy's None)."""

import numpy as np
import pytest

import dsl


@pytest.mark.parametrize("src, hint", [
    ("print(True)", "did you mean true?"),
    ("let x = False", "did you mean false?"),
    ("let x = None", "did you mean none?"),
    ("let x = ones((3,))\nprint(x[:, None])", "did you mean none?"),
])
def test_pythons_constants_get_their_dg_spelling(run_error, src, hint):
    err = run_error(src)
    assert err.kind == "name" and hint in err.hint


@pytest.mark.parametrize("src, hint", [
    ("def f(x):\n    return x", "fn f(x) { return x * 2.0 }"),
    ("if 1 > 0 { print(1) } elif 2 > 1 { print(2) }", "dg writes else if"),
    ("let f = lambda x: x + 1", "fn(x) => x + 1"),
    ("if 1 > 0:\n    print(1)", "blocks are in braces"),
    ("for i in range(3):\n    print(i)", "blocks are in braces"),
    ("fn f(x):\n    return x", "blocks are in braces"),
    ("class Point:\n    pass", "struct Point { x, y }"),
    ("let y = 1.0 if 2 > 1 else 2.0", "where(c, a, b)"),
    ("let y = [x * 2.0 for x in range(3)]", "no comprehensions"),
    ("try {\n    print(1)\n}", "no exceptions to catch"),
    ("raise ValueError(\"bad\")", "error(\"message\")"),
    ("assert 1 > 0, \"msg\"", "assert(x > 0, \"message\")"),
    ("fn f(x) {\n    \"\"\"doc\"\"\"\n    return x\n}", "a comment (# ...) right above a fn"),
    ("let t = (1, 2, 3)\nlet a, *rest = t", "t[1:] is the rest of a tuple"),
    ("fn f(*args) { return args }", "dg has no *args or **kwargs"),
    ("fn f(**opts) { return opts }", "pass a tuple or a map"),
    ("fn f(x, **opts) { return opts }", "pass a map for named values"),
    ("fn f(a, b) { return a }\nlet t = (1, 2)\nprint(f(*t))", "dg has no *args"),
    ("from nn import mlp", "import nn (or import nn as n), then nn.mlp"),
    ("let c = 0\nfn bump() {\n    global c\n    c += 1\n}", "cannot assign to a variable outside it"),
    ("fn outer() {\n    let c = 0\n    fn inner() {\n        nonlocal c\n    }\n}", "return the new value"),
    ("let x = 1\ndel x", "dg has no del"),
    ("with open(\"f.txt\") as f {\n}", "load(path) and save(path, value)"),
    ("fn count() {\n    yield 1\n}", "dg has no generators"),
    # C's and JavaScript's step by one: read as the operator twice, it took the next statement
    # as its operand (x + +print(x)), after running it
    ("let x = 3\nx++\nprint(x)", "x += 1 steps x by one"),
    ("let x = 3\nfor i in range(2) {\n    x--\n}", "x -= 1 steps x by one"),
    ("let x = 3\nx++", "x += 1 steps x by one"),
    ("let x = 1\nif x = 1 { print(x) }", "== compares"),
    ("let x = 1\nwhile x = 1 { x = 2 }", "== compares"),
    ("let a = 0\nlet b = 0\na = b = 5", "one assignment per statement"),
    ("// a comment\nprint(1)", "a comment starts with #"),
    ("print(1)\n// a comment", "a comment starts with #"),
    ("struct P { x, y }\nlet p = P { x: 1.0, y: 2.0 }", "P(x=1.0, y=2.0) or P(1.0, 2.0)"),
    ("struct P { x, y }\nfn f() { return P{x: 1.0, y: 2.0} }", "a struct is made by calling its name"),
    # habits of other languages
    ("let x: float = 1.0", "dg has no type annotations"),
    ("fn f(x: float) { return x }", "dg has no type annotations"),
    ("fn f(x) -> float { return x }", "dg has no return types"),
    ("let f = (x) => x + 1.0", "an anonymous function starts with fn: fn(x) => x + 1.0"),
    ("fn f(x) => x * 2.0", "a named function's body is a block: fn f(x) { return x * 2.0 }"),
    ("let f = |x| x + 1.0", "an anonymous function is fn(x) => x + 1.0"),
    ("function f(x) { return x }", "dg declares a function with fn"),
    ("var x = 1", "dg has no var, const or mut"),
    ("const x = 1", "dg has no var, const or mut"),
    ("let mut x = 1", "dg has no var, const or mut"),
    ("let x = 1\nswitch x { }", "dg has no match or switch"),
    ("let x = 1\nmatch x { }", "dg has no match or switch"),
    ("for i in 0..10 { print(i) }", "for i in range(0, 10)"),
    ("/* a comment */\nprint(1)", "a comment starts with # and runs to the end of its line"),
    ("let x = 1\nif (x > 0) print(x)", "a block is in braces, even one of a single statement"),
    ("let x = 1\nprint(x > 0 ? 1 : 2)", "where(c, a, b)"),
])
def test_pythons_syntax_gets_a_hint_of_dgs(run_error, src, hint):
    err = run_error(src)
    assert err.kind == "syntax" and hint in err.hint


def test_a_minus_sign_before_a_negative_number_is_not_a_decrement(run):
    assert run("let x = 3\nprint(x--1)\nprint(x -\n    -2)\nprint(x - -1)\n").split() == ["4", "5", "4"]


@pytest.mark.parametrize("src, kind, hint", [
    ("let x = np.zeros(3)", "name", "called without a module: zeros(...), not np.zeros(...)"),
    # the hint names dg's builtin, through a submodule too, and a constant without a call
    ("let x = np.random.normal(0.0, 1.0, (3,))", "name", "normal(...), not np.random.normal(...)"),
    ("let x = jnp.linalg.solve(eye(2), ones(2))", "name", "solve(...), not jnp.linalg.solve(...)"),
    ("let x = math.pi / 2.0", "name", "pi is a dg builtin: write pi, not math.pi"),
    ("let x = np.arcsin(0.5)", "name", "did you mean asin?"),
    ("let x = np.concatenate(([1.0], [2.0]))", "name", "dg's is cat((a, b), axis=0)"),
    ("print(exp(range(3)))", "type", "arange(a, b) is the tensor of its values"),
    # Python's type test was false whatever x was: type(x) is a name in dg
    ("let x = 1.5\nif type(x) == float { print(1) }", "type", 'type(x) gives a name: type(x) == "float"'),
    ("print(type(\"s\") in (str, int))", "type", 'type(x) == "string"'),
    ("let m = {lr: 0.1, steps: 10}", "name", '{"lr": 1.0} has a string key'),       # JavaScript's object
    ("let x = jnp.sum(ones(3))", "name", "called without a module"),
    ("import numpy as np", "import", "no import is needed"),
    ("print(list(range(3)))", "name", "a tuple (1.0, \"a\") holds anything"),
    ("let x = [1.0, 2.0]\nx.append(3.0)", "type", "cat((a, [x]))"),
    ("let m = ones((2, 3))\nprint(m.T)", "type", "did you mean transpose(m)?"),
    ("let m = ones(3)\nprint(sum(m * m).item())", "type", "sum(m * m) is a number already"),
    # numpy's methods: the builtin called with the method's arguments, or dg's spelling
    ("let x = ones(6)\nprint(x.reshape((2, 3)))", "type", "did you mean reshape(x, (2, 3))?"),
    # a shape or axes one by one, where dg's builtin takes a tuple (numpy's and PyTorch's habit)
    ("let x = ones(6)\nprint(x.reshape(2, 3))", "type", "did you mean reshape(x, (2, 3))?"),
    ("let x = ones((2, 3))\nprint(x.transpose(1, 0))", "type", "did you mean transpose(x, (1, 0))?"),
    ("let x = ones((2, 3))\nprint(x.permute(1, 0))", "type", "did you mean transpose(x, (1, 0))?"),
    ("let x = ones(6)\nprint(x.view(3, 2))", "type", "did you mean reshape(x, (3, 2))?"),
    ("let x = ones(6)\nprint(x.unsqueeze(0))", "type", "did you mean expand_dims(x, 0)?"),
    ("let x = ones(6)\nprint(x.detach())", "type", "did you mean stop_gradient(x)?"),
    # PyTorch's autograd: a value carries no gradient (x.grad was told "did you mean grad(x)?")
    ("let x = ones(6)\nprint(x.grad)", "type", "grad(loss)(params) is the gradient of the function loss"),
    ("let w = 2.0\nlet loss = w * w\nloss.backward()", "type", "dg's values carry no gradient"),
    ("let w = ones(2)\nprint(w.requires_grad)", "type", "dg's values carry no gradient"),
    ("let x = ones(6)\nprint(x.tolist())", "type", "dg has no lists"),
    ("let x = ones(6)\nprint(x.real)", "type", "no complex type"),
    ("let x = ones((2, 3))\nprint(x.mean(axis=0, keepdims=true))", "type",
     "did you mean mean(x, axis=0, keepdims=true)?"),
    ("let x = ones((2, 3))\nprint(x.sum(\n    axis=0))", "type", "did you mean sum(x, axis=0)?"),
    ("let m = {\"a\": 1}\nprint(m.get(\"a\", 0))", "type", "did you mean get(m, \"a\", 0)?"),
    ("let x = ones(3)\nprint(x.size)", "type", "did you mean size(x)?"),
    ("let a = ones((2, 2))\nprint(a.dot(a))", "type", "did you mean a @ a?"),
    ("let a = ones((2, 2))\nprint(a.clip(0.0, 1.0))", "type", "did you mean clamp(a, 0.0, 1.0)?"),
    ("let a = ones(4)\nprint(a.take(tensor((0, 2), dtype=\"int64\")))", "type", "gather(a, "),
    ("let a = ones((2, 2))\nprint(a.flatten())", "type", "did you mean ravel(a)?"),
    ("let a = ones(2)\nlet b = a.copy()", "type", "a itself is a copy"),
    ("let x = zeros(3)\nx = x.at[0].set(2.0)", "type", "x[i] = v in dg"),
    ("print(max(1.0, 2.0))", "type", "maximum(a, b)"),
    ("print(min(3, 4))", "index", "minimum(a, b)"),
    ("print(max([1.0, 3.0], [2.0, 1.0]))", "type", "maximum(a, b)"),
    ("print(max([1.0, 3.0], 0.5))", "type", "maximum(a, b)"),       # a float axis: a value was meant
    # a whole float is an axis only where written as axis=: positionally, Python's two values
    # (max(x, 0.0) would otherwise be the max along axis 0), or sum's start value
    ("print(max([1.0, 3.0], 0.0))", "type", "maximum(a, b)"),
    ("print(min(ones((2, 2)), 1.0))", "type", "minimum(a, b)"),
    ("print(sum([1.0, 3.0], 0.0))", "type", "a + b adds two values"),
    ("print(grad(fn(x) => max(x, 0.0))([1.0, 3.0]))", "type", "maximum(a, b)"),
    ("print(jit(fn(x) => max(x, 2.0))(1.0))", "type", "maximum(a, b)"),
    ("print(sum(1.0, 2.0))", "type", "a + b adds two values"),
    ("print(concatenate(([1.0], [2.0])))", "name", "cat((a, b), axis=0)"),
    ("print(clip([1.0], 0.0, 1.0))", "name", "clamp(x, lo, hi)"),
    ("print(dot([1.0], [2.0]))", "name", "a @ b"),
    ("print(max(1.0, 2.0, 3.0))", "type", "maximum(a, b)"),
    ("print(\"%.3f\" % 1.5)", "type", "f\"{x:.3f}\""),
    ("print(\"{}\".format(1.5))", "type", "an f-string formats values"),
    # a string method: not dg's builtin of the same name (split(key) splits a random key)
    ("print(\"a,b\".split(\",\"))", "type", "dg's strings have no methods"),
    ("print(\", \".join((\"a\", \"b\")))", "type", "+ joins two strings"),
    ("pass", "name", "an empty block is {}"),
    # numpy's and PyTorch's ways of calling what dg has
    ("print(zeros(3, 4))", "type", "the shape is one tuple"),
    ("print(eye(3, 4))", "type", "eye(n) is the n by n identity"),
    ("print(reshape(ones(6), 2, 3))", "type", "reshape(x, (2, 3))"),
    ("print(transpose(ones((2, 3)), 1, 0))", "type", "transpose(x, (1, 0))"),
    ("print(cat(ones(2), ones(2)))", "type", "cat((a, b))"),
    ("print(stack(ones(2), ones(2)))", "type", "stack((a, b))"),
    ("print(mean(ones((2, 3)), dim=0))", "type", "dg names it axis="),
    ("print(max(ones((2, 3)), axis=1, keepdim=true))", "type", "keepdims="),
    ("print(clamp([1.0], min=0.0))", "type", "lo="),
    ("print(normal(size=(2,)))", "type", "shape="),
    ("print(train_test_split(ones((4, 2)), ones(4), test_size=0.25))", "type", "fraction="),
    ("print(mean(ones((2, 3)), axis=[0, 1]))", "type", "several axes are a tuple: axis=(0, 1)"),
    ("print(split(arange(6.0), 3))", "type", "a tensor's parts are slices"),
    ("print(reversed((1, 2)))", "name", "t[::-1] reverses a tuple"),
    # numpy's and JAX's lists as shapes, windows and pad widths: dg's bracket literal is a tensor
    ("print(zeros([2, 3]))", "type", "write it as a tuple, (2, 3)"),
    ("print(reshape(arange(6.0), [3, 2]))", "type", "write it as a tuple, (3, 2)"),
    ("print(transpose(ones((2, 3)), [1, 0]))", "type", "write it as a tuple, (1, 0)"),
    ("print(tile(arange(3.0), [2]))", "value", "write it as a tuple, (2,)"),
    ("print(max_pool(ones((1, 1, 4, 4)), [2, 2]))", "value", "write it as a tuple, (2, 2)"),
    ("print(pad(arange(3.0), [[1, 2]]))", "value", "write it as a tuple, ((1, 2),)"),
    ("print(conv(ones((1, 1, 4, 4)), ones((1, 1, 2, 2)), padding=[(1, 0), (0, 1)]))", "type",
     "in a tuple: ((a, b), (c, d))"),
    ("print(zeros([2.5]))", "type", None),
    ("print(normal((2, 3)))", "type", "a shape goes by name: normal(..., shape=(2, 3))"),
    ("print(expit(1.0))", "name", "sigmoid(x)"),
    ("print(map(fn(x) => x * 2.0, (1.0, 2.0)))", "name", "tree_map(f, t)"),
    ("print(divmod(7, 2))", "name", "(a // b, a % b)"),
    ("print(tuple(range(3)))", "name", "a for loop builds a tuple"),
    ("print(heaviside(0.5))", "name", "where(x > 0.0, 1.0, 0.0)"),
    ("fn f(x) { let y = x * 2.0 }\nprint(grad(f)(1.0))", "grad", "ends without `return` gives none"),
    # a last line that computes the result without `return` (Rust's and Julia's habit)
    ("fn f(x) { x ** 2 }\nprint(f(2.0) + 1.0)", "type", "ends without `return` gives none"),
    ("fn f(x) { x ** 2 }\nprint(jit(fn(x) => 2.0 * f(x))(3.0))", "type", "ends without `return` gives none"),
    ("print(grad(fn(x) => x * [1.0, 2.0])(1.0))", "grad", "reduce the result with sum(...)"),
    ("let x = ones(3)\nprint((x > 0.0) & (x < 2.0))", "syntax", "logical_and(a, b)"),
    ("let x = ones(3)\nprint((x > 0.0) | (x < 2.0))", "syntax", "logical_or(a, b)"),
    ("let x = ones(3)\nprint(~(x > 0.0))", "syntax", "logical_not(m)"),
    ("print(2 ^ 3)", "syntax", "x ** y"),
    ("let x = ones(3)\nprint((x > 0.0) and (x < 2.0))", "shape", "logical_and"),
    ("print(tensordot(ones(2), ones(2)))", "name", "einsum"),
    ("print(flatten(ones((2, 2))))", "name", "ravel(x)"),
    ("print(leaky_relu(ones(2)))", "name", "where(x > 0.0, x, 0.01 * x)"),
    ("print(logspace(0.0, 2.0, 3))", "name", "10.0 ** linspace(a, b, n)"),
    ("print(take(ones(3), tensor((0, 1), dtype=\"int64\")))", "name", "gather(x, idx, axis)"),
    ("print(linalg.solve(eye(2), ones(2)))", "name", "called without a module"),
    ("print(fori_loop(0, 3, fn(i, x) => x + 1.0, 0.0))", "name", "for i in range(lo, hi) { ... }"),
    ("print(scan(fn(c, x) => (c + x, c), 0.0, ones(3)))", "name", "for x in xs { ... }"),
    ("print(while_loop(fn(x) => x < 3.0, fn(x) => x + 1.0, 0.0))", "name", "while cond { ... }"),
    ("print(cond(true, fn() => 1.0, fn() => 2.0))", "name", "if c { ... } else { ... }"),
    ("print(PRNGKey(0))", "name", "rng(seed) makes a random key"),
    ("let x = ones(3, dtype=float32)", "name", 'dtype="float32"'),
    ("print(astype(ones(3), int64))", "name", 'astype(x, "int64")'),
    ("print(random.normal(shape=(2,)))", "name", "called without a module"),
    ("print(gamma(2.0, (3,)))", "type", "gamma(..., shape=(3,))"),
    ("print(normal(rng(0), 0.0, 1.0, (3,)))", "type", "normal(..., key=k)"),     # JAX's key first
    ('print("n = " + 3)', "type", 'str(x) makes a string'),
    ("for i, v in ones(3) { print(i) }", "type", "enumerate(xs)"),
    ("let a, b = 3.0", "type", "enumerate(xs)"),
    ("let a, b, c = 3.0", "type", None),
    # numpy's norm(x, ord): dg's second argument is the axis
    ('print(norm(ones((2, 2)), "nuc"))', "type", 'norm(x, ord="nuc")'),
    ("print(norm(ones((2, 2)), 2))", "index", "norm(x, ord=2)"),
    ("print(norm(ones(2), inf))", "type", "norm(x, ord=inf)"),
    ("print(trapz([1.0, 2.0]))", "name", "trapezoid(y, x=none"),
    ('print(split("a,b", ","))', "type", "dg's strings have no split"),
    ("print(repr(1.5))", "name", "str(x) is the text print shows"),
    ('print(format(1.5, ".2f"))', "name", 'f"{x:.2f}"'),
    ('print(join(("a", "b"), ","))', "name", "+ joins two strings"),
    ("print(correlate([1.0, 2.0], [1.0]))", "name", "reshape(v, (1, 1, m)))[0, 0]"),
])
def test_pythons_and_numpys_calls_get_a_hint_of_dgs(run_error, src, kind, hint):
    err = run_error(src)
    assert err.kind == kind and (err.hint == hint if hint is None else hint in err.hint)


def test_the_compositions_the_hints_spell_compute_what_numpy_does():
    interp = dsl.Interpreter()
    x = np.random.default_rng(0).normal(size=(3, 5))
    interp.set("x", x)
    interp.run("let s = sum(where(isnan(x), 0.0, x))\nlet l = 10.0 ** linspace(0.0, 2.0, 5)\n"
               "let v = max(x, 1) - min(x, 1)\nlet q = quantile(x, 30.0 / 100.0)")
    for name, want in (("s", np.nansum(x)), ("l", np.logspace(0, 2, 5)), ("v", np.ptp(x, axis=1)),
                       ("q", np.percentile(x, 30.0))):
        np.testing.assert_allclose(interp.get(name), want, rtol=1e-13, err_msg=name)
    rng = np.random.default_rng(1)
    a, v, p, q = rng.normal(size=7), rng.normal(size=3), rng.uniform(0.1, 2.0, 5), rng.uniform(0.1, 2.0, 5)
    for name, value in (("a", a), ("v", v), ("p", p), ("q", q)):
        interp.set(name, value)
    for src, want in (
            ("conv(reshape(a, (1, 1, 7)), reshape(flip(v), (1, 1, 3)), padding=3 - 1)[0, 0]", np.convolve(a, v)),
            ("conv(reshape(a, (1, 1, 7)), reshape(flip(v), (1, 1, 3)), padding=\"same\")[0, 0]",
             np.convolve(a, v, mode="same")),
            ("conv(reshape(a, (1, 1, 7)), reshape(flip(v), (1, 1, 3)))[0, 0]", np.convolve(a, v, mode="valid")),
            ("conv(reshape(a, (1, 1, 7)), reshape(v, (1, 1, 3)))[0, 0]", np.correlate(a, v)),
            ("conv(reshape(a, (1, 1, 7)), reshape(v, (1, 1, 3)), padding=3 - 1)[0, 0]", np.correlate(a, v, "full")),
            ("conv(reshape(a, (1, 1, 7)), reshape(v, (1, 1, 3)), padding=\"same\")[0, 0]", np.correlate(a, v, "same")),
            ("flip(transpose(x), 0)", np.rot90(x)), ("exp(linspace(ln(2.0), ln(50.0), 5))", np.geomspace(2.0, 50.0, 5)),
            ("lstsq(p[:, none] ** arange(2.0, -1.0, -1.0), q)[0]", np.polyfit(p, q, 2)),
            ("sum(x != 0.0)", np.count_nonzero(x)),
            ("let s = sort(tensor((3.0, 1.0, 3.0, 2.0, 1.0)))\ns[cat(([true], diff(s) != 0.0))]", np.unique([3.0, 1, 3, 2, 1])),
            ("abs(x) * where(v[0] < 0.0, -1.0, 1.0)", np.copysign(x, v[0])),
            ("sign(x) * (abs(x) % abs(-0.7))", np.fmod(x, -0.7)),
            ("-xlogy(p, p)", -p * np.log(p)), ("xlogy(p, p) - xlogy(p, q)", p * np.log(p / q)),
            ("xlogy(p, p) - xlogy(p, q) - p + q", p * np.log(p / q) - p + q), ("p * log1p(q)", p * np.log1p(q)),
            ("sum(svd(x, compute_uv=false) > 1e-10)", np.linalg.matrix_rank(x)),
            ("segment_sum(ones(4), [0.0, 2.0, 2.0, 3.0], 5)", np.bincount([0, 2, 2, 3], minlength=5)),
            ("reshape(a, (1, -1))", np.atleast_2d(a)), ("shape(x) == shape(x) and all(x == x)", np.array_equal(x, x))):
        np.testing.assert_allclose(interp.run(src), want, rtol=1e-12, err_msg=src)


def test_a_reduction_over_a_wrong_axis_of_a_tensor_gets_no_two_values_hint(run_error):
    err = run_error("print(max(ones(3), 1))")      # a real axis mistake, not Python's max(a, b)
    assert err.kind == "index" and err.hint is None


def test_a_whole_float_axis_written_as_axis_is_still_an_axis(run):
    assert run("print(max([[1.0, 3.0], [4.0, 2.0]], axis=1.0), sum([1.0, 3.0], 0))") == "[3.0, 4.0] 4.0\n"


@pytest.mark.parametrize("src, words", [
    ("let a = []\na = a + [1.0]", "a + [x], with a tensor a of shape (0,), is an empty tensor"),
    ("let a = [1.0, 2.0]\na = a + [3.0]", "a + [x], with a tensor a of shape (2,), adds x to each of its entries"),
    ("let a = [1.0, 2.0]\na = [] + a", "[] + a, with a tensor a of shape (2,), does not broadcast"),
])
def test_appending_to_a_tensor_with_plus_is_an_error_with_the_fix(run_error, src, words):
    err = run_error(src)
    assert err.kind == "shape" and words in err.message and "a + (x,)" in err.hint and "cat(" in err.hint
    assert err.line == 2


@pytest.mark.parametrize("src, out", [
    ("let a = ()\nfor i in range(3) { a = a + (i * 1.0,) }\nprint(tensor(a))", "[0.0, 1.0, 2.0]\n"),
    ("print([1.0] + [2.0])", "[3.0]\n"),                         # the same length: adds
    ("print(ones((2,)) + [1.0, 2.0])", "[2.0, 3.0]\n"),
    ("print(ones((2, 2)) + [1.0])", "[[2.0, 2.0], [2.0, 2.0]]\n"),      # not a vector: broadcasts
])
def test_plus_still_adds_where_it_is_not_the_append_idiom(run, src, out):
    assert run(src) == out


def test_none_in_an_index_adds_an_axis_as_numpys_none(run):
    src = ("let x = [1.0, 2.0, 3.0]\nlet m = ones((2, 3))\n"
           "print(shape(x[:, none]), shape(x[none]), shape(x[none, :, none]), shape(m[:, none, :]), shape(m[0, none]))\n"
           "print(x[:, none] * x[none, :])")
    assert run(src) == "(3, 1) (1, 3) (1, 3, 1) (2, 1, 3) (1, 3)\n[[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [3.0, 6.0, 9.0]]\n"


def test_newaxis_is_numpys_name_for_none_in_an_index(run):
    src = ("let m = ones((2, 3))\n"
           "print(shape(m[:, newaxis]), shape(m[newaxis, ..., newaxis]), newaxis == none)")
    assert run(src) == "(2, 1, 3) (1, 2, 3, 1) true\n"


def test_none_indexing_is_differentiable_in_every_mode(run):
    f = "fn f(v) { return sum((v[:, none] * v[none, :]) ** 2) }\nlet x = [1.0, 2.0, 3.0]\n"
    src = f + ("print(grad(f)(x))\nprint(jit(grad(f))(x))\nprint(jvp(f, (x,), (x,))[1])\n"
               "print(hessian(f)(x))\nprint(vmap(grad(f))(stack((x, x * 2.0))))")
    x = np.array([1.0, 2.0, 3.0])
    g = 4 * (x @ x) * x                   # f = (sum v^2)^2
    h = 4 * (x @ x) * np.eye(3) + 8 * np.outer(x, x)
    lines = run(src).splitlines()
    assert lines[0] == lines[1] == str(g.tolist())
    assert float(lines[2]) == g @ x
    assert lines[3] == str(h.tolist())
    assert lines[4] == str([g.tolist(), (4 * (4 * x @ x) * 2 * x).tolist()])


def test_an_ellipsis_stands_for_the_axes_the_others_leave(run):
    src = ("let x = reshape(arange(24.0), (2, 3, 4))\n"
           "print(shape(x[..., 0]), shape(x[0, ...]), shape(x[..., none]), shape(x[..., 1:3, none]), shape(x[...]))\n"
           "print(x[1, ..., 2])\nx[..., 0] = 0.0\nprint(sum(x[:, :, 0]))\n"
           "print(grad(fn(t) => sum(t[..., 1] * 2.0))(ones((2, 2)))[0])\n"
           "print(vmap(fn(r) => r[..., -1])(reshape(arange(24.0), (2, 3, 4)))[1])")
    assert run(src) == ("(2, 3) (3, 4) (2, 3, 4, 1) (2, 3, 2, 1) (2, 3, 4)\n[14.0, 18.0, 22.0]\n0.0\n[0.0, 2.0]\n"
                        "[15.0, 19.0, 23.0]\n")


def test_two_ellipses_are_an_index_error(run_error):
    err = run_error("let x = ones((3, 2))\nprint(x[..., 0, ...])")
    assert err.kind == "index" and "one ..." in err.message


def test_none_with_an_index_tensor_is_refused_with_a_hint(run_error):
    err = run_error("let x = ones((3, 2))\nprint(x[[0.0, 1.0], none])")
    assert err.kind == "index" and "x[idx][:, none]" in err.hint


def test_each_hint_for_a_python_or_numpy_name_calls_only_dgs_builtins():
    # a hint that names a function dg does not have sends the user from one error to the next
    # (ldexp's used to suggest exp, gammaln's the gamma distribution)
    import re

    from dsl.base.suggest import PYTHON_NAMES
    interp = dsl.Interpreter()
    words = {"for", "if", "while", "fn", "range", "else", "in"}
    for name, hint in PYTHON_NAMES.items():
        for called in re.findall(r"\b([a-z_][a-z0-9_]*)\(", hint):
            if called not in words:
                interp.eval(called)         # a name error, if it is not dg's
        with pytest.raises(dsl.DgError) as err:
            interp.run(f"{name}")
        assert err.value.kind in ("name", "syntax") and err.value.hint == hint, name


@pytest.mark.parametrize("src, hint", [
    ("gammaln(2.0)", "lgamma(x)"), ("ldexp(1.0, 3)", "x * 2.0 ** n"), ("imag(1.0)", "no complex type"),
    ("fmax(1.0, 2.0)", "maximum(a, b)"), ("percentile(ones(3), 50)", "quantile(x, q / 100.0)"),
    ("rint(2.5)", "round(x)"), ("add(1.0, 2.0)", "a + b"),
])
def test_numpys_other_names_get_dgs(run_error, src, hint):
    err = run_error(src)
    assert err.kind == "name" and hint in err.hint


def test_a_name_a_failed_statement_read_is_not_suggested_for_the_next(run_error):
    # at the REPL, `arccos` read and failed left an unbound cell, which `arccosh` was then told to
    # mean instead of acosh
    interp = dsl.Interpreter()
    for src, hint in (("arccos(1.0)", "acos"), ("arccosh(1.0)", "acosh"), ("xyzzyq", None), ("xyzzy", None)):
        with pytest.raises(dsl.DgError) as err:
            interp.run(src)
        assert err.value.hint == (hint and f"did you mean '{hint}'?"), src


def test_a_range_is_a_tensor_of_its_values_where_numpy_takes_one(run):
    # Python's sum(range(10)) and numpy's array(range(3)): a range reduced or made a tensor
    assert run('print(sum(range(10)), mean(range(4)), max(range(2, 9, 3)), cumsum(range(4)))\n'
               'print(tensor(range(2, 9, 3)), tensor(range(0)), tensor(range(3), dtype="int64"))\n'
               'print(jit(fn(n) => sum(range(n)))(5), grad(fn(x) => x * sum(range(3)))(2.0))') == \
        "45.0 1.5 8.0 [0.0, 1.0, 3.0, 6.0]\n[2.0, 5.0, 8.0] [] [0, 1, 2]\n10.0 3.0\n"


@pytest.mark.parametrize("src", ["print(sum(range(10 ** 12)))", "print(tensor(range(10 ** 12)))"])
def test_a_range_too_large_for_memory_is_the_size_limit_not_an_allocation(run_error, src):
    assert run_error(src).kind == "limit"


def test_any_all_norm_and_cumprod_take_a_tuple_as_the_other_reductions_do(run):
    # Python's any((a, b)) and numpy's norm((3.0, 4.0)): a tuple was a type error (norm's said
    # "cannot multiply tuple and tuple"), where sum((a, b)) stacks it
    assert run('print(any((1.0 > 2.0, 3.0 > 2.0)), all((true, false)), norm((3.0, 4.0)), cumprod((2.0, 3.0)))\n'
               'print(grad(fn(a) => norm((a, 2.0 * a)) + cumprod((a, a))[1])(1.5))\n'
               'let far = jit(fn(a) => any((a > 1.0, a < -1.0)))\nprint(far(0.5), far(-2.0))') == \
        "true false 5.0 [2.0, 6.0]\n" + f"{5 ** 0.5 + 3.0}\n" + "false true\n"
