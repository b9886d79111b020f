"""Value semantics, assignment targets, scoping and iteration against reference sections 3-4.

Each test names the reference sentence (or the decision) it holds dg to.
"""


def test_setting_bools_into_a_bool_tensor_keeps_it_bool(run):
    # SPEC 3 (bool tensors come from comparisons) and docs/decisions.md (bool tensors stay bool,
    # as in numpy): `b[0:2] = [false, true]` and `c[0] = x > 0` turned the whole tensor into
    # floats, though `b[0] = true` kept it bool.
    src = """
let b = [true, false, true]
b[0:2] = [false, true]
print(b)
let c = [[true, false], [false, false]]
c[0] = [1.0, 0.0] > 0.5
c[1, 1] = ([1.0] > 0)[0]
print(c)
c[1] = 2.5
print(c)
"""
    assert run(src) == "[false, true, true]\n[[true, false], [false, true]]\n[[1.0, 0.0], [2.5, 2.5]]\n"


def test_a_function_made_by_let_may_call_itself_inside_a_function(run):
    # SPEC 3: closures capture their defining scope lexically. `let fact = fn(n) {... fact(n - 1)}`
    # recursed at the top level but inside a function (or block) said 'fact' is not defined.
    src = """
fn f() {
    let fact = fn(n) { if n < 2 { return 1 } return n * fact(n - 1) }
    return fact(5)
}
print(f())
if true { let fib = fn(n) { if n < 2 { return n } return fib(n - 1) + fib(n - 2) }; print(fib(10)) }
fn g() {
    let fs = ()
    for i in range(3) { let h = fn(n) { if n == 0 { return i } return h(n - 1) }; fs = fs + (h,) }
    return (fs[0](3), fs[2](2))
}
print(g())
"""
    assert run(src) == "120\n55\n(0, 2)\n"


def test_a_top_level_let_may_shadow_the_builtin_it_calls(run, tmp_path):
    # SPEC 4: `let` introduces a name; where silent, Python: `mean = mean(x)` at module level reads
    # the builtin. dg said "'mean' is used before its definition runs" at the top level, though the
    # same line worked inside a function.
    src = """
let x = [1.0, 2.0]
let mean = mean(x)
let shape = shape(x)
print(mean, shape)
print(sum(x))
let sum = 5
print(sum)
"""
    assert run(src) == "1.5 (2,)\n3.0\n5\n"
    import subprocess, sys, pathlib
    f = tmp_path / "m.dg"
    f.write_text(src)
    dg = pathlib.Path(sys.executable).with_name("dg")
    out = subprocess.run([str(dg), "check", str(f)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
