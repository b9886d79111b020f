"""`in` and `not in` as Python has them (reference section 3): a map's keys, a tuple's elements, a
range's values, a string's substrings, and, as numpy's `in`, a tensor's entries."""

import pytest


@pytest.mark.parametrize("expr, out", [
    ('"a" in {"a": 1, "b": 2}', "true"),
    ('"z" in {"a": 1}', "false"),
    ('"z" not in {"a": 1}', "true"),
    ("2 in {1: 0.5, 2: 1.5}", "true"),
    ("[1.0] in {1: 0.5}", "false"),             # not a key type: in no map, as has(m, k)
    ("2 in (1, 2, 3)", "true"),
    ("2.0 in (1, 2, 3)", "true"),              # == decides, as in Python
    ("4 in (1, 2, 3)", "false"),
    ('"b" in ("a", "b")', "true"),
    ("(1, 2) in ((1, 2), (3,))", "true"),
    ("[1.0, 2.0] in ([1.0, 2.0], 3)", "true"),  # a tensor element: same shape and entries
    ("[1.0, 2.0] in ([1.0, 2.0, 3.0], 3)", "false"),
    ("[1.0, 2.0] in ([1.0, 5.0],)", "false"),
    ("1 in ()", "false"),
    ("2 in range(5)", "true"),
    ("5 in range(5)", "false"),
    ("4 in range(0, 10, 2)", "true"),
    ("2.5 in range(5)", "false"),
    ('"ell" in "hello"', "true"),
    ('"" in "hello"', "true"),
    ('"x" not in "hello"', "true"),
    ("2.0 in [1.0, 2.0]", "true"),
    ("3.0 in [[1.0, 2.0], [4.0, 5.0]]", "false"),
    ("5.0 in [[1.0, 2.0], [4.0, 5.0]]", "true"),
    ("nan in [nan]", "false"),                  # as numpy: nan equals nothing
    ("1 in (1, 2) in ((true,),)", "false"),     # a chain: (1 in (1, 2)) and ((1, 2) in ...)
])
def test_in_as_python_and_numpy(run, expr, out):
    assert run(f"print({expr})") == out + "\n"


def test_in_binds_as_a_comparison(run):
    # looser than +, tighter than not and and, so not k in m is not (k in m)
    assert run('let m = {"a": 1}\nprint(not "a" in m, "a" + "" in m and 1 < 2)') == "false true\n"


def test_in_inside_a_for_loops_iterable(run):
    assert run("for b in (2 in (1, 2), 3 in ()) { print(b) }") == "true\nfalse\n"


@pytest.mark.parametrize("src, words", [
    ("print(1 in 1.0)", "needs a map, tuple, range, string or tensor on its right, got float"),
    ('print(1 in "abc")', "needs a string on its left, got int"),
    ('print("a" in [1.0, 2.0])', "needs a number or tensor on its left, got string"),
    ("print(1 in none)", "got none"),
])
def test_in_on_values_it_cannot_search_is_a_type_error(run_error, src, words):
    err = run_error(src)
    assert err.kind == "type" and words in err.message
    assert err.line == 1 and err.column == 7


SEARCH = """
fn f(x, p) {
    let s = 0.0
    for k in ("a", "b", "c") {
        if k in p { s += p[k] * x }
    }
    if 0.0 in x { s = s * 2.0 }
    if 9.0 not in x { s = s + 1.0 }
    return sum(s)
}
let m = {"a": 1.0, "b": 2.0}
"""


def test_in_under_grad_jit_and_vmap(run, backend):
    out = run(SEARCH + """
print(grad(f)([1.0, 0.0], m), grad(f, argnums=1)([1.0, 0.0], m))
let jf = jit(f)
print(jf([1.0, 0.0], m), jf([1.0, 3.0], m), jf([0.0, 3.0], m), jf([9.0, 3.0], m))
print(vmap(fn(x) => f(x, m))([[1.0, 0.0], [1.0, 2.0], [9.0, 0.0]]))
""", backend=backend)
    # s = 3x; doubled where x holds a 0, plus one (each entry) where it holds no 9
    assert out == ('[6.0, 6.0] {"a": 2.0, "b": 2.0}\n'
                   "8.0 14.0 20.0 36.0\n"
                   "[8.0, 11.0, 54.0]\n")
