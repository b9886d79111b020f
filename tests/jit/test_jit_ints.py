"""jit and ints: the ints among a jitted function's arguments are values of its recording, not
parts of its signature, so a step counter or an epoch does not stage the function again. Where
the function decides something by an int (a shape, an index, an axis, a loop's length, a branch,
argnums), that decision is guarded and a call with another int is staged again; where code that
is not arithmetic would take an int's value without a guard, jit keeps ints as constants of the
signature for that function (docs/reference.md, jit).

Each case below is called, jitted and not, with a sequence of ints (repeats included, so compiled
code runs); every result must be the interpreter's.
"""

import io

import pytest

import dsl
from dsl.errors import DgError

CASES = {
    "arithmetic": "return x * n + n ** 2",
    "axis": "return sum(m, axis=n % 2)",
    "shape": "return zeros((n,)) + 1.0",
    "index": "return x[n % 3]",
    "for": "let s = 0.0\n for i in range(n) { s = s + x[0] * i }\n return s",
    "rolled for": "let s = 0.0\n for i in range(n * 10) { s = s * 0.9 + x[0] }\n return s",
    "while": "let s = 0.0\n let k = 0\n while k < n { s = s + x[1]\n k += 1 }\n return s",
    "argnums": "return grad(fn(a, b) => sum(a * b * b), argnums=n % 2)(x, x + 1.0)",
    "vmap": "return vmap(fn(v) => v * n)(m)",
    "vmap unbatched": "return vmap(fn(v, q) { let s = v\n let k = 0\n while k < q { s = s * 1.1\n k += 1 }\n"
                      " return s }, in_axes=(0, none))(x, n)",
    "vmap in_axes": "return vmap(fn(v) => v * 2.0, in_axes=n % 2)(m)",
    "hessian": "return hessian(fn(v) => sum(v ** 3) * n)(x)",
    "jacfwd": "return jacfwd(fn(v) => v * n)(x)",
    "reshape": "return reshape(m, (-1, n % 2 + 1))",
    "one_hot": "return one_hot([0, 1], n + 2)",
    "tuple index": "return (x, x * 2.0, x * 3.0)[n % 3]",
    "map key": "return {0: x, 1: x * 5.0}[n % 2]",
    "branch": "if n > 2 { return x } else { return x * 2.0 }",
    "f-string": 'return f"{n}"',
    "int result": "return n * 3 + 1",
    "float()": "return float(n) * x",
    "clamp": "return clamp(x * 10.0, -n, n)",
    "linspace": "return linspace(0.0, 1.0, n + 2)",
    "arange": "return arange(n) * 1.0",
    "eye": "return eye(n + 1)",
    "int power": "return x ** n",
    "cumsum axis": "return cumsum(m, n % 2)",
    "checkpoint": "return checkpoint(fn(v) => v * n)(x)",
    "custom_vjp": "return custom_vjp(fn(v) => v * n, fn(v, o, g) => (g * n,))(x)",
    "jit inside": "return jit(fn(v, k) => v * k + k)(x, n)",
    "jit closure": "return jit(fn(v) => v * n)(x)",
    "print": "print(n)\n return x",
    "seed": "seed(n)\n return rand((2,))",
    "rand shape": "return rand((n + 1,)) * 0.0 + 1.0",
    "grad": "return grad(fn(v) => sum(v ** 2) * n)(x)",
    "grad of a loop": "return grad(fn(v) { let s = 0.0\n for i in range(n + 20) { s = s * 0.9 + sum(v) }\n return s })(x)",
    "// % /": "return (n // 2, n % 3, n / 4)",
    "tuple repeat": "return len((1, 2) * n)",
    "string repeat": 'return "ab" * n',
    "slice": "return x[0:n % 3 + 1]",
    "step slice": "return x[::n % 2 + 1]",
    "where": "return where(x > n * 0.1, x, 0.0)",
    "tree_map": 'return tree_map(fn(a) => a * n, {"a": x})',
    "argmax": "return argmax(x * n) + n",
    "in a map": 'let d = {"k": n}\n return d["k"] + 1',
    "in a struct": "return S(n, x).a * 2",
    "adam's counter": 'let st = {"step": n, "m": x}\n let t = st["step"] + 1\n'
                      ' return x / (1.0 - 0.9 ** t), {"step": t, "m": x}',
    "unpacked": "let a, b = (n, n + 1)\n return a * b",
    "and/or": "return n > 1 and n < 5",
    "batches": 'let t = 0.0\n for xb, yb in batches(m, x[0:2], n % 2 + 1, shuffle=false) { t = t + sum(xb) }\n return t',
    "range step": "let s = 0\n for i in range(0, 10, n % 3 + 1) { s = s + i }\n return s",
    "softmax axis": "return softmax(m, axis=n % 2)",
    "cross_entropy": "return cross_entropy(m, [n % 2, 0])",
    "gather": "return gather(x, [n % 3, 0])",
    "nested loops": "let s = 0.0\n for i in range(20) { for j in range(n) { s = s + x[2] } }\n return s",
    "size": "return size(zeros((n, 2)))",
    "type": "return type(n)",
}
# functions h(...) jitted (JH), called from f, for ints passed by keyword or inside structures
CALLED = {
    "keyword": "fn h(x, k=1) { return x * k + k }\nfn f(x, m, n) { return JH(x, k=n) }",
    "struct argument": "fn h(s) { return s.b * s.a + s.a }\nfn f(x, m, n) { return JH(S(n, x)) }",
    "map argument": 'fn h(d) { return d["x"] / (1.0 - 0.9 ** d["t"]) }\nfn f(x, m, n) { return JH({"t": n, "x": x}) }',
    "grad of jit": "fn h(v, k) { return v ** 2 * k }\nfn f(x, m, n) { return grad(fn(v) => sum(JH(v, n)))(x) }",
    "jit of grad": "fn h(v, k) { return grad(fn(w) => sum(w ** 3) * k)(v) }\nfn f(x, m, n) { return JH(x, n) }",
    "axis argument": "fn h(v, k) { return sum(v, axis=k) }\nfn f(x, m, n) { return JH(m, n % 2) }",
    "shape argument": "fn h(k) { return ones((k, 2)) }\nfn f(x, m, n) { return JH(n) }",
    "vmap of jit": "fn h(v, k) { return v * k }\nfn f(x, m, n) { return vmap(fn(v) => JH(v, n))(m) }",
    # a vmap made once keeps its program between calls: an int shared by the examples is part of it
    "kept vmap": "fn h(v, q) { let s = v\n let k = 0\n while k < q { s = s * 1.1\n k += 1 }\n return s }\n"
                 "let VF = vmap(h, in_axes=(0, none))\nfn f(x, m, n) { return VF(x, n) }",
    "kept jacfwd": "fn h(v, q) { return v * q + v ** 2 }\nlet JF = jacfwd(h)\nfn f(x, m, n) { return JF(x, n) }",
}
INTS = [1, 3, 2, 5, 4, 3, 7, 1]


def outputs(src, jitted):
    """What f prints for each int of INTS (or its error's message)."""
    out = io.StringIO()
    i = dsl.Interpreter(stdout=out, seed=0)
    i.run("struct S { a, b }\n" + src.replace("JH", "JIT_H") + f"\nlet JIT_H = {'jit(h)' if jitted else 'h'}\n"
          f"let g = {'jit(f)' if jitted else 'f'}")
    got = []
    for n in INTS:
        try:
            i.run(f"print(g([0.5, -1.5, 2.0], [[1.0, 2.0], [3.0, -4.0]], {n}))")
            got.append(out.getvalue().split("\n")[-2])
        except DgError as err:
            got.append("error: " + err.message)
    return got


@pytest.mark.parametrize("name", list(CASES) + list(CALLED))
def test_a_jitted_function_gives_the_interpreters_results_for_every_int(name):
    src = f"fn f(x, m, n) {{\n {CASES[name]}\n}}\nfn h() {{ return 0 }}" if name in CASES else CALLED[name]
    assert outputs(src, True) == outputs(src, False)


TRAIN = """import nn
import optim
seed(0)
let x = randn((64, 2))
let y = where(x[:, 0] * x[:, 1] > 0.0, 1.0, 0.0)
let params = nn.mlp((2, 16, 1))
fn loss(p) { return nn.bce_with_logits(nn.mlp_apply(p, x)[:, 0], y) }
let state = optim.adam_init(params)
fn train_step(p, s) {
    let l, g = value_and_grad(loss)(p)
    let p2, s2 = optim.adam(p, g, s, 0.01)
    return p2, s2, l
}
let step = STEP
for i in range(300) {
    let p2, s2, l = step(params, state)
    params = p2
    state = s2
}
print(loss(params), state["step"])
"""


def test_a_jitted_adam_step_stages_once_and_trains_as_without_jit(capsys):
    out = io.StringIO()
    i = dsl.Interpreter(stdout=out)
    i.run(TRAIN.replace("STEP", "jit(train_step, explain=true)"))
    stagings = capsys.readouterr().err.count("staging it")
    assert stagings <= 2
    plain = io.StringIO()
    dsl.Interpreter(stdout=plain).run(TRAIN.replace("STEP", "train_step"))
    assert out.getvalue() == plain.getvalue() and out.getvalue().endswith(" 300\n")


def test_explain_names_the_leaf_whose_change_made_a_new_signature(capsys):
    i = dsl.Interpreter(stdout=io.StringIO())
    i.run('let f = jit(fn(x, cfg) => x * len(cfg["mode"]), explain=true)\n'
          'f(1.0, {"mode": "ab"})\nf(1.0, {"mode": "abc"})\nf([1.0, 2.0], {"mode": "abc"})\n'
          'let g = jit(fn(x, s) => x + s, explain=true)\ng(1.0, 1)\ng(1.0, 2)\ng(1.0, true)')
    said = capsys.readouterr().err.splitlines()
    assert said == ['jit(<lambda>): staging it: a new signature',
                    'jit(<lambda>): staging it: a new signature: arg 1 ["mode"]: string "ab" -> string "abc"',
                    'jit(<lambda>): staging it: a new signature: arg 0: a float -> a tensor of shape (2,)',
                    'jit(<lambda>): staging it: a new signature',
                    'jit(<lambda>): staging it: a new signature: arg 1: an int -> true']


def test_a_new_signature_of_another_structure_is_said_in_words(capsys):
    # a map of another key set, a struct of another type, a tuple of another length: the words
    # were built for every kind at once, and a map's entries are not a struct's type
    i = dsl.Interpreter(stdout=io.StringIO())
    i.run('struct P { a, b }\nstruct Q { a }\n'
          'let f = jit(fn(m) => m["x"] * 2.0, explain=true)\n'
          'f({"x": 1.0, "a": 2.0, "b": 3.0})\nf({"x": 1.0})\nf({"x": 1.0, 2: 2.0, true: 1.0})\n'
          'let g = jit(fn(p) => 2.0, explain=true)\ng(P(1.0, 2.0))\ng(Q(1.0))\ng((1.0, 2.0))\n'
          'g((1.0,))')
    said = [line.split("new signature")[1] for line in capsys.readouterr().err.splitlines()]
    assert said == ['', ': arg 0: a map of "x", "a", "b" -> a map of "x"',
                    ': arg 0: a map of "x" -> a map of "x", 2, true',
                    '', ': arg 0: a P -> a Q', ': arg 0: a Q -> a tuple of 2',
                    ': arg 0: a tuple of 2 -> a tuple of 1']
    i.run('fn f(x, cfg=none, scale=1.0, mode="a") { return x * scale }\nlet j = jit(f, explain=true)\n'
          'j(1.0)\nj(1.0, scale=2.0)\nj(1.0, mode="b", scale=2.0)\nj(1.0, mode="c", scale=2.0)\n'
          'j(1.0, {true: 1}, mode="c", scale=2.0)\nj(1.0, {true: [1.0]}, mode="c", scale=2.0)\nj(x=1.0)')
    said = [line.split("new signature")[1] for line in capsys.readouterr().err.splitlines()]
    assert said == ['', ': the keyword arguments: none -> scale', ': the keyword arguments: scale -> mode, scale',
                    ': keyword mode: string "b" -> string "c"', ': the number of positional arguments: 1 -> 2',
                    ': arg 1 [true]: an int -> a tensor of shape (1,)', ': the number of positional arguments: 2 -> 0']


def test_staging_again_and_again_is_said_once_with_the_fix(capsys):
    i = dsl.Interpreter(stdout=io.StringIO())
    i.run('let f = jit(fn(x, name) => x * len(name))\nfor k in range(30) { f(1.0, "a" * (k + 1)) }')
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1 and "staged 10 times for new signatures" in said[0]
    assert 'arg 1: string "aaaaaaaaaa" -> string "aaaaaaaaaaa"' in said[0] and "ints used in arithmetic" in said[0]


def test_an_int_used_as_a_shape_keeps_a_recording_per_value():
    # each n its own signature (as a string's value is), not eight paths of one signature
    i = dsl.Interpreter(stdout=io.StringIO())
    i.run("let f = jit(fn(x, n) => sum(zeros((n,)) + x))")
    f = i.lookup("f")
    for n in list(range(1, 20)) * 2:
        assert f(1.0, n) == float(n)
    assert f.call.pinned == (0,) and len(f.call.entries) == 19
    assert all(len(paths) == 1 for paths in f.call.entries.values())


def test_an_int_pinned_by_a_shape_makes_what_it_computes_constant():
    # llsq: t = -1 + arange(n) * 2 / (n - 1) depends on n alone: computed once, not on every call
    i = dsl.Interpreter(stdout=io.StringIO())
    i.run("let f = jit(fn(x, n) { let t = -1.0 + arange(n) * 2.0 / (n - 1)\n return sum(t * x) })")
    f = i.lookup("f")
    assert f(2.0, 5) == 0.0
    program = next(iter(f.call.entries.values()))[0].program
    assert [s[1] for s in program.steps] == ["Guard", "Mul", "Sum"]      # t is a constant of the program


@pytest.mark.parametrize("backend", ["numpy", "xla"])
@pytest.mark.parametrize("op", ["//", "%", "/"])
def test_an_int_division_by_zero_in_compiled_code_points_at_the_division(backend, op):
    # the compiled code's kernel fails without knowing its line; the error must still point at
    # `a // b`, as the interpreter's does, not at the jitted function's call
    if backend == "xla":
        pytest.importorskip("jax")
    i = dsl.Interpreter(backend=backend, stdout=io.StringIO())
    i.run(f"fn f(a, b) {{\n    return a {op} b\n}}\nlet g = jit(f)\nlet first = g(7, 2)", "d.dg")
    with pytest.raises(DgError) as info:
        i.run("let second = g(7, 0)", "call.dg")
    err = info.value
    assert err.kind == "value" and "division by zero" in err.message
    assert (err.span.source.name, err.line, err.column) == ("d.dg", 2, 12)


def test_an_int_the_loop_passes_through_untouched_keeps_the_loop_rolled(capfd):
    # a training loop over parameters that hold a count (nn.MultiHeadAttention's heads): the
    # body decides shapes by it, but never changes it, so its guard holds on every iteration;
    # the loop was written out, one copy per step (200 steps: 7x slower than not jitting)
    out = io.StringIO()
    i = dsl.Interpreter(stdout=out)
    i.run("import optim\nstruct L { w, heads }\n"
          "fn loss(p, x) { let h = reshape(x @ p.w, (-1, p.heads))\n return sum(tanh(h) ** 2) }\n"
          "fn train(p, x, steps) {\n for i in range(steps) {\n let g = grad(loss)(p, x)\n"
          " p = optim.sgd(p, g, 0.01)\n }\n return p }\n"
          "let x = reshape(arange(12.0), (3, 4)) / 10.0\n"
          "let p = L(reshape(arange(16.0), (4, 4)) / 20.0, 2)\n"
          "let jt = jit(train, explain=true)\n"
          "let a = (jt(p, x, 50), jt(p, x, 50), jt(L(p.w, 4), x, 50), jt(L(p.w, 4), x, 50))\n"
          "let b = (train(p, x, 50), train(L(p.w, 4), x, 50))")
    a, b = i.lookup("a"), i.lookup("b")
    for got, want in zip(a, (b[0], b[0], b[1], b[1])):
        assert got.heads == want.heads and (got.w == want.w).all()
    jitted = i.lookup("jt").call
    for paths in jitted.entries.values():
        assert [s[1] for s in paths[0].program.steps].count("Loop") == 1     # rolled: one Loop step
    said = capfd.readouterr().err
    assert "staging it" in said and "written out" not in said
