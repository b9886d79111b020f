"""jit(f, backend="xla"): staged programs compiled by XLA through JAX (docs/xla.md).

The tests that need JAX are skipped where it is not installed; the table of rules and the
error for a missing JAX are tested everywhere."""

import io
import os
import subprocess
import sys

import numpy as np
import pytest

import dsl
from dsl.core.primitives.registry import PRIMS
from dsl.backends.xla.rules import FALLBACK, LOWER, ON_HOST
from dsl.errors import DgError

from test_primitive_rules import CASES, DEFS, IDS

try:
    import jax
except ImportError:
    jax = None
needs_jax = pytest.mark.skipif(jax is None, reason="JAX is not installed (the xla extra)")

RNG = np.random.default_rng(20261127)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ---------------------------------------------------------------- the table
def test_every_primitive_has_a_lowering_rule_or_a_reason_to_stay_on_numpy():
    missing = sorted(set(PRIMS) - set(LOWER) - ON_HOST - set(FALLBACK))
    assert not missing, f"primitives with neither an XLA rule nor a reason in FALLBACK: {missing}"
    assert not set(LOWER) & set(FALLBACK) and not ON_HOST & (set(LOWER) | set(FALLBACK))
    assert all(type(why) is str and len(why) > 20 for why in FALLBACK.values())


def test_without_jax_asking_for_xla_is_an_error_naming_the_extra():
    code = ("import sys; sys.modules['jax'] = None\n"
            "import dsl\n"
            "i = dsl.Interpreter()\n"
            "print(i.run('fn f(x) { return x * 2.0 }\\njit(f)(1.5)'))\n"
            "try:\n"
            "    i.run('jit(f, backend=\"xla\")')\n"
            "except dsl.DgError as e:\n"
            "    print(str(e).splitlines()[0])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "3.0"
    assert "dg-lang[xla]" in lines[1] and "JAX" in lines[1]


def test_a_backend_other_than_numpy_or_xla_is_an_error():
    i = dsl.Interpreter()
    with pytest.raises(DgError, match="numpy.*xla"):
        i.run('jit(fn(x) => x, backend="gpu")')
    with pytest.raises(DgError, match="backend must be"):
        i.run('jit(fn(x) => x, backend=1.0)')
    with pytest.raises(ValueError):
        dsl.Interpreter(backend="tpu")


# ---------------------------------------------------------------- agreement, case by case
def _both(source, name, backend_kw='backend="xla"'):
    """(jit on numpy, jit on XLA) of the function `name` defined by `source`."""
    i = dsl.Interpreter()
    i.run(source + f"\nlet __n = jit({name})\nlet __x = jit({name}, {backend_kw})")
    return i, i.lookup("__n"), i.lookup("__x")


def _entry(jitted):
    """The one recording of a jitted function."""
    (entries,) = jitted.call.entries.values()
    return entries[0]


def _close(got, want, rtol=1e-12, atol=1e-12):
    """Results (numbers, tensors, tuples, structs) equal to 1e-12 relative."""
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w, rtol, atol)
    elif isinstance(want, dsl.Struct):
        for k in want._fields:
            _close(getattr(got, k), getattr(want, k), rtol, atol)
    else:
        assert type(got) is type(want), (got, want)
        if isinstance(want, np.ndarray):
            assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@needs_jax
def test_an_int_a_guard_holds_is_a_constant_of_the_compiled_program_not_an_input():
    # a loop's length: compiled in, compared in Python on each call (a transfer to XLA cost more)
    i, _, fast = _both("fn f(x, n) {\n let s = x\n for k in range(n) { s = s * 1.5 + 1.0 }\n return s * n\n}", "f")
    assert fast(2.0, 3) == 34.5
    xla = _entry(fast).xla
    program = xla.program
    assert [program.kinds[s] for s in program.inputs] == ["float", "int"]
    assert xla([2.0, 3]) == [34.5]
    exe = xla._fn.__closure__[xla._fn.__code__.co_freevars.index("target")].cell_contents[0]
    from dsl.backends.xla import runtime      # (the xla extra: imported where it is there)
    with runtime.x64():
        assert exe(2.0) is not None                      # takes x alone
    assert xla([2.0, 4]) is None and xla([2.0, 3.0]) is None     # another n: the guard fails
    assert fast(2.0, 4) == 4 * (2.0 * 1.5 ** 4 + 2 * (1.5 ** 4 - 1)) and fast(2.0, 3) == 34.5


@needs_jax
@pytest.mark.parametrize("expr,args", CASES, ids=IDS)
def test_value_and_gradient_of_every_rule_case_agree_with_numpy(expr, args):
    names = sorted(args)
    params = ", ".join(names)
    i, jn, jx = _both(DEFS + f"fn f({params}) {{ return {expr} }}\n"
                      f"fn h({params}, c) {{ return sum(f({params}) * c) }}\n"
                      f"let vg = value_and_grad(h, argnums=({', '.join(str(k) for k in range(len(names)))},))", "vg")
    c0 = np.asarray(i.lookup("f")(*[args[n] for n in names]), float)
    for call in range(3):       # the first call stages; the later ones run the compiled code
        vals = [args[n] + 0.01 * call * (RNG.standard_normal(np.shape(args[n])) if np.ndim(args[n]) else 1.0)
                for n in names]
        c = RNG.standard_normal(c0.shape) if c0.ndim else float(RNG.standard_normal())
        _close(jx(*vals, c), jn(*vals, c))
    why = _entry(jx).xla.why
    assert why is None or why.split(":")[0] in FALLBACK, why


@needs_jax
def test_the_gradient_of_det_on_xla_is_the_cofactor_matrix_at_singular_matrices_too():
    # numpy's kernel goes through the SVD where inv fails (an exact zero pivot); XLA's rule
    # takes the same way for a stack holding such a matrix
    singular = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    cofactors = np.array([[4.0, 4.0, -4.0], [-2.0, -2.0, 2.0], [0.0, 0.0, 0.0]])     # by hand
    i, jn, jx = _both("let g = vmap(grad(det))", "g")
    for stack in (np.stack([singular, np.eye(3)]), np.stack([np.eye(3) * 2.0, RNG.standard_normal((3, 3))])):
        for _ in range(2):
            _close(jx(stack), jn(stack))
    got = jx(np.stack([singular, np.eye(3)]))
    np.testing.assert_allclose(got[0], cofactors, atol=1e-12)
    assert _entry(jx).xla.why is None


# ---------------------------------------------------------------- loops, guards, errors
PROJECTILE = open(os.path.join(ROOT, "bench", "programs", "projectile.dg")).read()


@needs_jax
@pytest.mark.parametrize("composition", [
    "step", "fn(p, n) => grad(fn(q, m) => grad(loss)(q, m).speed)(p, n)",
    "fn(p, n) => grad(fn(q, m) => grad(fn(r, k) => grad(loss)(r, k).speed)(q, m).angle)(p, n)",
    "fn(p, n) => hvp(p, Launch(1.0, 0.5, 0.1), n)"])
def test_a_loop_is_one_scan_on_xla_at_every_derivative_order(composition):
    i, jn, jx = _both(PROJECTILE + f"\nlet g = {composition}", "g")
    Launch = i.lookup("Launch")
    for k in range(3):
        p = Launch(20.0 + k, 0.8 - 0.05 * k, 0.01)
        _close(jx(p, 200), jn(p, 200), rtol=1e-10)
    entry = _entry(jx)
    assert entry.xla.why is None
    assert "Scan" in [s[1] for s in entry.program.steps]
    assert entry._code is None      # the numpy backend's code was never needed


@needs_jax
def test_a_number_stored_into_an_int_or_bool_tensor_promotes_it_as_on_numpy():
    # XLA's scatter casts the value to the tensor's type (2.5 into an int tensor: 2); numpy's
    # kernel promotes the tensor, and so must the rule, for an index and for a loop's row alike
    i = dsl.Interpreter(stdout=io.StringIO(), backend="xla")
    i.run("fn f(h, v) {\n  h[1] = v\n  return h\n}\n"
          "fn g(h, v) {\n  for k in range(shape(h)[0]) { h[k] = v * k }\n  return h\n}\n"
          "let jf = jit(f)\nlet jg = jit(g)")
    for h in (np.array([1, 2, 3]), np.array([True, False, True])):      # int64 and bool tensors
        for _ in range(2):      # staged, then compiled by XLA
            got = i.lookup("jf")(h, 2.5)
            assert got.dtype == np.float64 and list(got) == [float(h[0]), 2.5, float(h[2])]
            np.testing.assert_array_equal(i.lookup("jg")(h, 2.5), [0.0, 2.5, 5.0])


@needs_jax
def test_a_branch_that_goes_another_way_stages_again_and_both_paths_agree(capfd):
    src = ("fn f(x, w) {\n  if x > 0.0 { return sum(w * x) ** 2 }\n  return sum(exp(w) * x)\n}\n"
           "let g = value_and_grad(f, argnums=(0, 1))")
    i, jn, jx = _both(src, "g", 'backend="xla", explain=true')
    w = RNG.standard_normal(4)
    for x in (1.5, -0.5, 2.5, -1.5, 0.3):
        _close(jx(x, w), jn(x, w))
    assert len(next(iter(jx.call.entries.values()))) == 2       # one recording per path
    err = capfd.readouterr().err
    assert "staging it" in err and "numpy backend" not in err


@needs_jax
def test_a_branch_inside_a_loop_that_changes_on_a_later_call_gives_the_right_answer():
    src = ("fn f(x, n) {\n  let s = 0.0\n  for i in range(n) {\n    if s > x { s = s - 0.5 } else { s = s + sin(x) }\n"
           "  }\n  return s\n}\nlet g = value_and_grad(f)")
    i, jn, jx = _both(src, "g")
    for x in (2.0, 0.1, -0.3, 3.0):
        _close(jx(x, 30), jn(x, 30))


def _run_both(src, result, seed=3):
    """(what `result` holds, what was printed) with jit compiling for numpy, then for XLA."""
    out = {}
    for backend in ("numpy", "xla"):
        text = io.StringIO()
        i = dsl.Interpreter(seed=seed, stdout=text, backend=backend)
        i.run(src)
        out[backend] = (i.lookup(result), text.getvalue(), i)
    return out


def _same_on_both(src, result, name):
    """Run src with jit on each backend: `result` and the output agree; the recordings XLA made
    of the jitted function `name`, and the output."""
    got = _run_both(src, result)
    (want, printed, _), (have, shown, i) = got["numpy"], got["xla"]
    _close(have, want)
    assert shown == printed
    return next(iter(i.lookup(name).call.entries.values())), printed


@needs_jax
def test_prints_and_draws_happen_in_order_on_xla_and_a_failed_guard_undoes_them():
    src = ("fn f(x) {\n  let z = randn((3,))\n  print(\"x is\", x, z[0] > 0.0)\n"
           "  if x > 2.5 { print(\"big\") }\n  return sum(x * z) + normal()\n}\n"
           "let jf = jit(f)\nlet r = (jf(1.0), jf(2.0), jf(3.0), jf(1.5), jf(4.0), randn(()))")
    entries, printed = _same_on_both(src, "r", "jf")
    assert printed.count("big") == 2      # call 3 went the other way: printed once
    assert len(entries) == 2 and all(e.xla.why is None for e in entries)


@needs_jax
def test_keyed_draws_on_xla_are_numpys_numbers_in_a_loop_and_under_vmap():
    src = ("fn walk(x, key, n) {\n  let s = x\n  for i in range(n) {\n"
           "    s = s + 0.1 * normal(key=fold_in(key, i)) * s\n  }\n  return s\n}\n"
           "let g = jit(value_and_grad(walk))\nlet v = jit(fn(k) => uniform(0.0, 2.0, (3,), key=k))\n"
           "let keys = split(rng(5), 4)\n"
           "let r = (g(1.0, rng(1), 50), g(2.0, rng(2), 50), g(0.5, rng(3), 50), v(keys[0]), v(keys[1]), "
           "vmap(v)(keys), vmap(v)(keys))")
    got = _run_both(src, "r")
    _close(got["xla"][0], got["numpy"][0])
    entry = _entry(got["xla"][2].lookup("g"))
    assert entry.xla.why is None and "Scan" in [s[1] for s in entry.program.steps]


@needs_jax
def test_a_while_loop_that_draws_stays_on_numpy_and_draws_what_the_interpreter_draws():
    # XLA would run the whole of the iteration that ends the loop, its draw included: the
    # generator one number further on after each call (the third call gave 3.87 for 2.12)
    src = ("let h = jit(fn(x, n) {\n  let s = x\n  let c = 0\n  while s < 2.0 and c < n {\n"
           "    s = s + abs(randn(()))\n    c += 1\n  }\n  print(c)\n  return s\n})\n"
           "let r = (h(0.0, 30), h(0.1, 30), h(1.5, 30), h(0.0, 30), randn(()))")
    entries, _ = _same_on_both(src, "r", "h")
    looped = [e for e in entries if "Loop" in [s[1] for s in e.program.steps]]
    assert looped and all("a while loop whose body prints, draws without a key" in e.xla.why for e in looped)


@needs_jax
def test_a_draw_xla_calls_back_for_from_a_thread_of_its_own_keeps_its_float64_numbers():
    # here XLA calls the draw made before the loop (its numbers, the loop's data) from one of its
    # own threads, where JAX's 64-bit mode is off: the float64 result arrived narrowed (an error)
    src = ("fn walk(x, n) {\n  let s = x\n  for k in range(n) {\n"
           "    s = s + 0.1 * sin(s) * x + 0.01 * randn(()) + 0.001 * sum(rand((2,)))\n  }\n  return s\n}\n"
           "let g = jit(grad(grad(walk)))\nlet r = (g(0.3, 40), g(0.5, 40), g(0.7, 40), randn(()))")
    got = _run_both(src, "r", seed=3)
    _close(got["xla"][0], got["numpy"][0], rtol=1e-10)
    entry = _entry(got["xla"][2].lookup("g"))
    assert entry.xla.why is None and "Scan" in [s[1] for s in entry.program.steps]


@needs_jax
def test_a_key_xla_passes_to_a_draw_from_a_thread_of_its_own_keeps_its_float64_words():
    # a key's words are whole numbers up to 2^32 held as float64; XLA calls this loop's splits and
    # draws back from a thread of its own, where JAX's 64-bit mode is off: the keys arrived
    # narrowed to float32 and drew other numbers than numpy's (the loss off by 0.1 at step two)
    src = ("import nn\nfn loss(p, x, y, key) {\n  let h = relu(nn.dense(p[0], x))\n"
           "  let out = nn.dense(p[1], h * bernoulli(0.8, shape(h), key=key))\n"
           "  return mean((out[:, 0] - y) ** 2)\n}\n"
           "fn train(p, x, y, steps) {\n  let m = tree_map(zeros_like, p)\n  let v = tree_map(zeros_like, p)\n"
           "  let key = rng(7)\n  let losses = zeros((steps,))\n  for i in range(steps) {\n"
           "    let ks = split(key)\n    key = ks[0]\n    let (l, g) = value_and_grad(loss)(p, x, y, ks[1])\n"
           "    m = tree_map(fn(m, g) => 0.9 * m + 0.1 * g, m, g)\n"
           "    v = tree_map(fn(v, g) => 0.999 * v + 0.001 * g * g, v, g)\n"
           "    p = tree_map(fn(p, m, v) => p - 0.01 * m / (sqrt(v) + 1e-8), p, m, v)\n    losses[i] = l\n  }\n"
           "  return (p, losses, key)\n}\n"
           "let p = (nn.linear(3, 16), nn.linear(16, 1))\nlet x = randn((5, 3))\nlet y = sum(x, axis=1) ** 2\n"
           "let jt = jit(train)\nlet r = (jt(p, x, y, 4), jt(p, x, y, 4), train(p, x, y, 4))")
    got = _run_both(src, "r", seed=0)
    _close(got["xla"][0], got["numpy"][0], rtol=1e-10)
    _close(got["xla"][0][1], got["numpy"][0][2], rtol=1e-10)       # the interpreter's, unjitted
    assert _entry(got["xla"][2].lookup("jt")).xla.why is None


@needs_jax
def test_a_draw_xla_calls_back_for_that_refuses_its_key_is_dgs_error(capfd):
    # the kernel's error inside XLA's callback came out as XLA's INTERNAL error, with JAX's
    # traceback on standard error; the call now goes to numpy, which raises it in dg's words
    # (gamma's sampler still calls back; keys and uniform draws are XLA's own: test_xla_keyed_draws.py)
    src = "let f = jit(fn(p, k) => sum(gamma(p, shape=(3,), key=k)))\nlet a = (f(0.5, rng(1)), f(0.5, rng(2)))"
    got = {}
    for backend in ("numpy", "xla"):
        i = dsl.Interpreter(backend=backend)
        i.run(src)
        with pytest.raises(DgError) as info:
            i.run("let bad = f(0.5, [1.0, 2.5])")
        got[backend] = str(info.value)
        i.run("let b = f(0.3, rng(5))")
        got[backend + " after"] = i.lookup("b")
    assert got["xla"] == got["numpy"] and "a random key is a tensor of two whole numbers" in got["xla"]
    assert "gamma" in got["xla"] and got["xla after"] == got["numpy after"]
    assert _entry(i.lookup("f")).xla.why is None
    assert "callback" not in capfd.readouterr().err


@needs_jax
def test_what_cannot_be_lowered_runs_on_numpy_and_explain_says_why(capfd):
    src = ("fn f(x) {\n  print(f\"{x}\")\n  return x * 2.0\n}\n"
           "fn w(x) {\n  let k = 0\n  while x < 10.0 { x = x * 2.0\n k = k + 1 }\n  return x\n}")
    i = dsl.Interpreter()
    i.run(src + '\nlet jf = jit(f, backend="xla", explain=true)\nlet jw = jit(grad(w), backend="xla", explain=true)')
    jf, jw = i.lookup("jf"), i.lookup("jw")
    assert [jf(1.0), jf(2.0)] == [2.0, 4.0]
    assert [jw(1.0), jw(3.0), jw(0.7)] == [16.0, 4.0, 16.0]
    out = capfd.readouterr()
    assert out.out == "1.0\n2.0\n"
    assert "runs on the numpy backend for this recording: FString: it runs Python" in out.err
    assert "numpy backend for this recording: Loop: a while loop under a derivative" in out.err


@needs_jax
def test_a_program_longer_than_xla_compiles_in_reasonable_time_runs_on_numpy(capfd):
    # a loop written out step by step (here a recursion jit inlines): XLA's compile time grows
    # faster than the program (4,000 steps: over a minute), numpy's code is ready at once
    from dsl.backends.xla.lower import MAX_STEPS, longest_computation
    src = ("fn chain(x, w, n) { if n == 0 { return sum(x) }\n return chain(tanh(x * w + sum(x) * 0.01), w, n - 1) }\n"
           "fn long(x, w) { return chain(x, w, 150) }\nfn short(x, w) { return chain(x, w, 3) }")
    i = dsl.Interpreter()
    i.run(src + '\nlet jl = jit(grad(long, argnums=(0, 1)), backend="xla", explain=true)'
                '\nlet js = jit(grad(short, argnums=(0, 1)), backend="xla")')
    x = np.linspace(0.1, 0.4, 4)
    for name, fn in (("jl", "long"), ("js", "short")):
        want = i.lookup("grad")(i.lookup(fn), (0, 1))(x, 0.7)
        for _ in range(2):
            got = i.lookup(name)(x, 0.7)
            _close(got[0], want[0])
            _close(got[1], want[1])
    long_entry, short_entry = _entry(i.lookup("jl")), _entry(i.lookup("js"))
    size = longest_computation(long_entry.program)
    assert size > MAX_STEPS and long_entry.xla.why.startswith(f"{size:,} steps in one computation, more than")
    assert short_entry.xla.why is None
    assert "runs on the numpy backend for this recording: " in capfd.readouterr().err


@needs_jax
def test_a_while_loop_is_one_xla_while_loop_whatever_its_trip_count():
    src = ("fn newton(a) {\n  let x = a\n  let k = 0\n  while abs(x * x - a) > 1e-10 * a {\n"
           "    x = 0.5 * (x + a / x)\n    k = k + 1\n    if k > 50 { break }\n  }\n  return x * 2.0\n}")
    i, jn, jx = _both(src, "newton")
    for a in (2.0, 9.0, 1e6, 3.0, 1e-4, 0.5):
        _close(jx(a), jn(a))
    entry = _entry(jx)
    assert entry.xla.why is None and "Loop" in [s[1] for s in entry.program.steps]
    assert entry._code is None


@needs_jax
def test_errors_numpy_raises_are_raised_on_xla_too():
    i = dsl.Interpreter()
    i.run('fn f(a) { return sum(cholesky(a)) }\nlet jf = jit(f, backend="xla")\n'
          'fn r(x, k) { return x[k] }\nlet jr = jit(r, backend="xla")')
    jf, jr = i.lookup("jf"), i.lookup("jr")
    good = np.array([[2.0, 0.5], [0.5, 1.0]])
    assert jf(good) == pytest.approx(float(np.linalg.cholesky(good).sum()), rel=1e-12)
    assert jf(good * 2.0) == pytest.approx(float(np.linalg.cholesky(good * 2.0).sum()), rel=1e-12)
    with pytest.raises(DgError, match="positive definite"):
        jf(np.array([[1.0, 2.0], [2.0, 1.0]]))
    x = np.arange(4.0)
    assert [jr(x, 1), jr(x, 3)] == [1.0, 3.0]


@needs_jax
def test_the_interpreters_backend_is_the_default_of_its_jits():
    i = dsl.Interpreter(backend="xla")
    i.run("fn f(x) { return sum(tanh(x) * x) }\nlet jf = jit(f)\nlet jn = jit(f, backend=\"numpy\")")
    jf, jn = i.lookup("jf"), i.lookup("jn")
    x = RNG.standard_normal(5)
    for _ in range(2):
        _close(jf(x), jn(x))
    assert _entry(jf).xla is not None and _entry(jn).xla is None


@needs_jax
def test_float32_stays_float32_and_jaxs_own_x64_flag_is_left_as_it_was():
    before = jax.config.jax_enable_x64
    i = dsl.Interpreter()
    i.run('fn f(w, x) { return tanh(x @ w) * 2.0 }\nlet jf = jit(f, backend="xla")')
    w, x = RNG.standard_normal((3, 2)).astype(np.float32), RNG.standard_normal((4, 3)).astype(np.float32)
    for _ in range(2):
        out = i.lookup("jf")(w, x)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, np.tanh(x @ w) * 2.0, rtol=1e-5)
    assert jax.config.jax_enable_x64 == before


@needs_jax
@pytest.mark.parametrize("body", [
    "x * sum(x)",                                               # a float the program computed
    "x / max(x)",
    "where(x > 0.0, x, 0.0) + mean(x)",
    "cumsum(x) + x[0] * 2",
    "x * (1.0 - 0.9 ** n)",                                      # an int input, staged
    "optim.adam({'w': x}, {'w': x}, optim.adam_init({'w': x}), 0.01)[0]['w']",
])
def test_a_number_the_program_computes_keeps_a_float32_tensor_float32(body):
    # numpy takes a Python number as weakly typed (NEP 50); XLA's program must as well, or
    # x / max(x) computes in float64 on XLA and an adam step trains float32 parameters in float64
    i = dsl.Interpreter()
    i.run(f'import optim\nlet jf = jit(fn(x, n) => {body.replace(chr(39), chr(34))}, backend="xla")\n'
          f'let jn = jit(fn(x, n) => {body.replace(chr(39), chr(34))})')
    x = RNG.standard_normal(4).astype(np.float32)
    for n in (1, 2, 3):
        got, want = i.lookup("jf")(x, n), i.lookup("jn")(x, n)
        assert got.dtype == want.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-6)
    assert _entry(i.lookup("jf")).xla is not None and not _entry(i.lookup("jf")).xla.why


@needs_jax
def test_ints_stay_exact_past_int64_as_dgs_ints_are():
    # XLA's ints are int64 and wrap around; dg's are Python's: a call whose int arithmetic
    # leaves int64's safe range, or whose int argument is past int64, is computed by numpy
    i = dsl.Interpreter(stdout=io.StringIO())
    i.run('let g = jit(fn(n, x) => (n * n * n * n, n + 9223372036854775000, x * n, n - 3), backend="xla")')
    g = i.lookup("g")
    for n in (10, 100000, 3000000000, 2 ** 70, -(2 ** 65), 7):
        assert g(n, 1.5) == (n ** 4, n + 9223372036854775000, 1.5 * n, n - 3)
    assert _entry(g).xla is not None and not _entry(g).xla.why      # small ints still run on XLA


@needs_jax
def test_a_value_check_in_a_while_loop_is_not_the_loops_end():
    # k * 3 leaves int64 on the 40th iteration: on XLA that check must send the call to numpy,
    # not end the loop there as its condition turning false would (a silently short loop)
    i = dsl.Interpreter(stdout=io.StringIO())
    i.run('fn f(x) { let k = 1\n while x > 1.0 { x = x / 2.0\n k = k * 3 }\n return k }\n'
          'let g = jit(f, backend="xla")\n'
          'fn h(x) { let k = 1\n for i in range(60) { if x > 1.0 { x = x / 2.0\n k = k * 3 } }\n return k }\n'
          'let gh = jit(h, backend="xla")')
    g, gh = i.lookup("g"), i.lookup("gh")
    for x in (5.0, 2.0 ** 20, 2.0 ** 50, 2.0 ** 20):
        n = int(np.ceil(np.log2(x)))
        assert g(x) == 3 ** n and gh(x) == 3 ** n
    assert not _entry(g).xla.why and not _entry(gh).xla.why


@needs_jax
def test_dg_run_takes_a_backend(tmp_path):
    prog = tmp_path / "p.dg"
    prog.write_text("fn f(x) { return sum(x * x) }\nlet g = jit(grad(f))\n"
                    "print(g(tensor([1.0, 2.0])))\nprint(g(tensor([3.0, 4.0])))\n")
    out = subprocess.run([sys.executable, "-m", "dsl", "run", "--backend", "xla", "--explain-jit", str(prog)],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[2.", "4.]", "[6.", "8.]"] or out.stdout.splitlines() == ["[2.0, 4.0]", "[6.0, 8.0]"]
    bad = subprocess.run([sys.executable, "-m", "dsl", "run", "--backend", "tpu", str(prog)],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert bad.returncode != 0 and "numpy" in bad.stderr and "xla" in bad.stderr


@needs_jax
def test_a_step_budget_stops_a_loop_on_xla_at_the_same_call_as_on_numpy():
    src = "fn f(x, n) {\n  let s = x\n  for i in range(n) { s = sin(s) + x }\n  return s\n}\nlet g = jit(grad(f))"
    stopped = {}
    for backend in ("numpy", "xla"):
        i = dsl.Interpreter(backend=backend, max_steps=5000)
        i.run(src)
        g = i.lookup("g")
        with pytest.raises(DgError, match="step") as raised:
            for k in range(200):        # each call's 100 iterations count: the budget runs out partway
                stopped[backend] = (k, g(0.5 + 0.001 * k, 100))
        assert "line 3" in str(raised.value) or "3 |" in str(raised.value)
    assert stopped["xla"][0] == stopped["numpy"][0] > 10
    _close(stopped["xla"][1], stopped["numpy"][1])


# ---------------------------------------------------------------- index adds
PAD_KEYS = [(slice(0, 3),), (slice(1, None, 2), 3), (2, slice(None, None, -1)), (Ellipsis, slice(1, 3)),
            (slice(-2, None), Ellipsis, -1), (slice(5, 1, -2), slice(0, 7, 3), 0), (slice(3, 3),), 1,
            (slice(None), slice(6, None, -4))]


@needs_jax
@pytest.mark.parametrize("key", PAD_KEYS, ids=[str(k) for k in PAD_KEYS])
def test_an_index_add_of_ints_and_slices_is_a_pad_not_a_scatter(key):
    # XLA's scatter runs an element at a time on CPU; a slice's transpose is a pad
    from dsl.backends.xla.rules import _index_add

    class L:
        np, lax = jax.numpy, jax.lax
    shape = (5, 7, 4)
    want = np.zeros(shape)
    g = RNG.normal(size=want[key].shape)
    np.add.at(want, key, g)
    jax.config.update("jax_enable_x64", True)
    traced = jax.make_jaxpr(lambda g: _index_add(L, g, key, shape))(g)
    assert "scatter" not in str(traced)
    np.testing.assert_array_equal(np.asarray(_index_add(L, jax.numpy.asarray(g), key, shape)), want)


@needs_jax
def test_the_gradient_of_shifted_slices_agrees_on_both_backends():
    interp = dsl.Interpreter(seed=0)
    interp.run("fn f(x) { return sum(sin(cat(([1.0], x[0:4])) * x) * cat((x[::-2], x[1::2]))) + x[2] ** 3 }\n"
               "let g_np = jit(grad(f))\nlet g_xla = jit(grad(f), backend=\"xla\")")
    x = RNG.normal(size=5)
    want = interp.lookup("g_np")(x)
    for _ in range(2):      # the first call stages, the second runs on XLA
        got = interp.lookup("g_xla")(x)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


@needs_jax
def test_the_zero_rule_is_left_out_on_xla_and_a_call_that_needs_it_runs_on_numpy(monkeypatch, tmp_path):
    # reference 6.7: where's zero cotangent times sqrt's infinite derivative at 0 is 0. XLA
    # computes the pass back without most of the rule's masks (those whose NaN can only reach a
    # result), checks that its results are finite, and leaves a call where one is not to the
    # numpy backend, which computes it exactly
    from dsl.backends.xla import runtime
    monkeypatch.setitem(runtime._loaded, "folder", str(tmp_path))     # traced here, not read back from disk
    lowered = []
    nz = LOWER["Nz"]
    monkeypatch.setitem(LOWER, "Nz", lambda L, *args: lowered.append(1) or nz(L, *args))
    i, jn, jx = _both("fn f(x) {\n let s = 0.0\n for k in range(3) { s = s + sum(where(x > 0.0, sqrt(x * (k + 1.0)), 0.0) * x) }\n"
                      " return s\n}\nlet g = grad(f)", "g")
    x = np.array([0.5, 2.0, 3.0])
    for _ in range(3):
        _close(jx(x), jn(x))
    entry = _entry(jx)
    assert entry.xla.why is None and entry._code is None
    steps = [s for s in entry.program.steps if s[1] == "Scan"]
    staged = sum(op == "Nz" for s in steps for op in [t[1] for t in s[4]["body"].program.steps])
    staged += sum(s[1] == "Nz" for s in entry.program.steps)
    assert 0 < len(lowered) < staged
    at_zero = np.array([0.5, 0.0, 3.0])
    got = jx(at_zero)
    _close(got, jn(at_zero))
    assert got[1] == 0.0 and entry._code is not None


@needs_jax
@pytest.mark.parametrize("before,env,want", [
    ("", {}, "False"),                                              # dg starts JAX: inline
    ("import jax; jax.numpy.zeros(1)\n", {}, "True"),               # the host program started it first
    ("", {"JAX_CPU_ENABLE_ASYNC_DISPATCH": "1"}, "True"),          # or said what it wants
    ("", {"JAX_CPU_ENABLE_ASYNC_DISPATCH": "false"}, "False"),     # (JAX itself does not read it)
    ("import jax; jax.numpy.zeros(1)\n", {"JAX_CPU_ENABLE_ASYNC_DISPATCH": "false"}, "True"),
])
def test_xla_runs_a_call_inline_unless_the_host_program_chose_otherwise(before, env, want):
    code = (before + "from dsl.backends.xla import runtime\n"
            "print(runtime.load().jax.config.values['jax_cpu_enable_async_dispatch'])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": ROOT, **env}, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == want


@needs_jax
def test_a_loops_finite_checks_are_added_up_elementwise_and_reduced_once():
    # a sum per iteration would be an all-reduce per iteration of a sharded loop
    from dsl.backends.xla import runtime
    from dsl.backends.xla.lower import Lowering, lower_steps
    from dsl.backends.xla.residuals import hoist
    i, jn, jx = _both("fn f(x) {\n let s = x\n for k in range(3) { s = s + sqrt(x * (k + 1.0)) * s }\n"
                      " return sum(s)\n}\nlet g = grad(f)", "g")
    x = np.array([0.5, 2.0, 3.0])
    for _ in range(2):
        _close(jx(x), jn(x))
    program = _entry(jx).program
    jxl = runtime.load()

    def lowered(v):
        L = Lowering(jxl)
        return lower_steps(L, hoist(program), [v]), L.ok()
    with runtime.x64():
        traced = jax.make_jaxpr(lowered)(x)
    bodies = [e.params["jaxpr"].jaxpr for e in traced.jaxpr.eqns if e.primitive.name == "scan"]
    assert bodies and any(e.primitive.name == "mul" for b in bodies for e in b.eqns)
    assert not [e for b in bodies for e in b.eqns if e.primitive.name.startswith("reduce")]
    assert any(e.primitive.name == "reduce_sum" for e in traced.jaxpr.eqns)     # once, after the loops


@needs_jax
def test_large_inputs_staged_in_aligned_buffers_give_each_calls_own_results():
    # XLA reads an input in place only where it is 64-byte aligned (numpy's are 16): large ones are
    # copied into buffers kept between calls; each call must see its own inputs, a result that
    # XLA hands back from an input buffer must not change with the next call, and a call made
    # while another holds the buffers passes its inputs as they are
    from dsl.backends.xla.staging import Staging, aligned_empty, large_inputs
    interp = dsl.Interpreter(seed=0)
    interp.run('fn f(x, w) { return (x, x @ w, sum(x)) }\nlet jf = jit(f, backend="xla")')
    jf = interp.lookup("jf")
    rng = np.random.default_rng(0)

    def unaligned(v):       # a copy of v whose memory starts 8 bytes past a 64-byte boundary
        out = aligned_empty((v.size + 1,), v.dtype)[1:].reshape(v.shape)
        out[...] = v
        return out
    xs = [unaligned(rng.normal(size=(300, 200))) for _ in range(3)]
    w = rng.normal(size=(200, 3))
    firsts = [jf(x, w) for x in xs for _ in range(2)][::2]
    again = jf(xs[0], w)
    for x, (same, prod, total) in zip(xs, firsts):
        np.testing.assert_array_equal(same, x)
        np.testing.assert_allclose(prod, x @ w, rtol=1e-12)
        np.testing.assert_allclose(total, x.sum(), rtol=1e-12)
    np.testing.assert_array_equal(again[0], xs[0])
    assert aligned_empty((3, 5), np.float32).ctypes.data % 64 == 0
    kinds = [("array", 2, "f", (300, 200), "<f8"), "float", ("array", 1, "f", (3,), "<f8")]
    assert large_inputs(kinds) == (0,)      # only a tensor of 64 KB or more is worth a buffer
    s = Staging((0,))
    held = s.take([xs[0], 1.0])
    assert held[0] is not xs[0] and held[0].ctypes.data % 64 == 0 and held[1] == 1.0
    np.testing.assert_array_equal(held[0], xs[0])
    assert s.take([xs[1]]) is None         # in use: the inner call goes as it is
    s.release()
    assert s.take([xs[1], 1.0])[0] is held[0]   # the same buffer, written again
    s.release()


@needs_jax
def test_an_input_passed_again_is_not_copied_again(monkeypatch):
    # the data a training loop passes to every step: its buffer already holds its bytes
    from dsl.backends.xla import staging
    rng = np.random.default_rng(1)
    xs = [staging.aligned_empty((301 * 200 + 1,), np.float64)[1:].reshape(301, 200) for _ in range(2)]
    for x in xs:
        x[...] = rng.normal(size=x.shape)
    copies = []
    real = staging.np.copyto
    monkeypatch.setattr(staging.np, "copyto", lambda dst, src: copies.append(src) or real(dst, src))
    s = staging.Staging((0,))
    for x, copied in ((xs[0], True), (xs[0], False), (xs[1], True), (xs[1], False), (xs[0], True)):
        n = len(copies)
        got = s.take([x])
        s.release()
        assert (len(copies) > n) == copied
        np.testing.assert_array_equal(got[0], x)
    interp = dsl.Interpreter(seed=0)
    interp.run('fn f(x, w) { return sum(x @ w) }\nlet jf = jit(f, backend="xla")')
    jf, w = interp.lookup("jf"), rng.normal(size=(200, 3))
    want = [float(np.sum(x @ w)) for x in xs]
    got = [jf(x, w) for x in (xs[0], xs[0], xs[1], xs[0], xs[1], xs[1])]
    np.testing.assert_allclose(got, [want[i] for i in (0, 0, 1, 0, 1, 1)], rtol=1e-12)


@needs_jax
def test_results_of_every_kind_come_back_as_on_numpy_with_small_tensors_in_one_read():
    # the guards' flag, the floats and float64 tensors of PACKED_ENTRIES entries in all travel
    # back from XLA as one vector (one read from the device); the others each on their own
    from dsl.backends.xla import code
    _, slow, fast = _both("fn f(x, big, v32, n) {\n"
                          "  return (sum(x), x * 2.0, big + 1.0, v32 * 2.0, n + 1, sum(x) > 0.0, 3.0,\n"
                          "          x[0] * x, reshape(x, (2, 2)), x[1:1], x + big[0, :4])\n}", "f")
    calls = [(RNG.standard_normal(4), RNG.standard_normal((70, 60)),
              RNG.standard_normal(3).astype(np.float32), k) for k in (2, 5)]
    results = [fast(*args) for args in calls]
    for args, got in zip(calls, results):
        _close(got, slow(*args))
        assert all(v.flags.writeable for v in got if type(v) is np.ndarray)     # dg may write into them
    _close(results[0], slow(*calls[0]))      # the first call's tensors are its own, not the next call's
    kinds = [_entry(fast).program.kinds[r] for r in _entry(fast).program.out_refs if r >= 0]
    packed, small, apart = code._packing(kinds)
    assert [t is not None for t in small] == [False, True, False, False, False, False, True, True, True, True]
    assert apart == [False, False, True, True, True, True, False, False, False, False]
    assert small[1][:2] == (2, 6) and small[-1][1] == 2 + 4 + 4 + 4 + 0 + 4
