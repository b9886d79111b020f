"""SPEC section 4: every statement form, control flow, calls, structs and indexing."""

import pytest


# ---------------------------------------------------------------- let and assignment
def test_let_and_reassign(run):
    assert run("let x = 1\nx = x + 1\nprint(x)") == "2\n"


def test_assign_without_let_is_name_error(run_error):
    err = run_error("print(1)\ny = 2")
    assert err.kind == "name"
    assert (err.line, err.column) == (2, 1)
    assert "let" in err.message or "let" in (err.hint or "")


def test_assign_to_name_declared_in_inner_block_is_error(run_error):
    err = run_error("if true { let z = 1 }\nz = 2")
    assert err.kind == "name" and err.line == 2


def test_let_is_block_scoped(run_error):
    err = run_error("if true { let inner = 1 }\nprint(inner)")
    assert err.kind == "name" and "inner" in err.message


def test_let_shadows_in_inner_block(run):
    assert run("let x = 1\nif true { let x = 2\n print(x) }\nprint(x)") == "2\n1\n"


def test_assignment_in_block_reaches_outer_binding(run):
    assert run("let x = 1\nif true { x = 5 }\nprint(x)") == "5\n"


def test_let_redeclare_at_top_level(run):
    assert run("let x = 1\nlet x = x + 10\nprint(x)") == "11\n"


@pytest.mark.parametrize("op, out", [("+=", "7"), ("-=", "3"), ("*=", "10"), ("/=", "2.5")])
def test_compound_assignment_on_names(run, op, out):
    assert run(f"let x = 5\nx {op} 2\nprint(x)") == out + "\n"


def test_compound_assignment_on_field(run):
    assert run("struct P { w }\nlet p = P(1.0)\np.w += 2.0\np.w *= 3.0\nprint(p)") == "P(w=9.0)\n"


def test_compound_assignment_on_map_key(run):
    assert run('let m = {"n": 1}\nm["n"] -= 5\nprint(m)') == '{"n": -4}\n'


def test_compound_assignment_on_tensor_element(run):
    assert run("let t = [1.0, 2.0]\nt[1] /= 4.0\nprint(t)") == "[1.0, 0.5]\n"


def test_compound_assignment_on_nested_target(run):
    src = 'struct L { w }\nlet m = {"l": L([1.0, 2.0])}\nm["l"].w[0] += 10.0\nprint(m)'
    assert run(src) == '{"l": L(w=[11.0, 2.0])}\n'


def test_compound_assignment_on_tensor(run):
    assert run("let t = [1.0, 2.0]\nt *= 2.0\nt += [1.0, 1.0]\nprint(t)") == "[3.0, 5.0]\n"


def test_compound_assignment_on_string(run):
    assert run('let s = "a"\ns += "b"\nprint(s)') == "ab\n"


def test_compound_assignment_without_let_is_name_error(run_error):
    assert run_error("q += 1").kind == "name"


# ---------------------------------------------------------------- destructuring
def test_let_destructure_tuple(run):
    assert run("let pair = (1, \"b\")\nlet a, b = pair\nprint(a, b)") == "1 b\n"


def test_destructure_assign_swaps(run):
    assert run("let a = 1\nlet b = 2\na, b = b, a\nprint(a, b)") == "2 1\n"


def test_destructure_from_function_result(run):
    assert run("fn two() { return 3, 4 }\nlet a, b = two()\nprint(a + b)") == "7\n"


def test_destructure_into_targets(run):
    src = 'struct P { x, y }\nlet p = P(0, 0)\nlet m = {"k": 0}\np.x, m["k"] = (5, 6)\nprint(p, m)'
    assert run(src) == 'P(x=5, y=0) {"k": 6}\n'


def test_destructure_tensor_rows(run):
    assert run("let a, b = [[1.0, 2.0], [3.0, 4.0]]\nprint(a, b)") == "[1.0, 2.0] [3.0, 4.0]\n"


def test_destructure_wrong_count_is_error(run_error):
    err = run_error("let a, b = (1, 2, 3)")
    assert err.kind == "value"
    assert "3" in err.message and "2" in err.message


def test_destructure_non_tuple_is_type_error(run_error):
    assert run_error("let a, b = 5").kind == "type"


def test_destructure_nested_as_python(run):
    src = ('fn f(x) { return sum(x * x), {"m": mean(x)} }\n'
           'let (l, aux), g = value_and_grad(f, has_aux=true)([1.0, 2.0])\n'
           'print(l, aux, g)\n'
           'let (p, q) = (1, 2)\nlet (r) = 3\nprint(p, q, r)\n'
           'let m = {"k": 0}\n(m["k"], p), q = ((10, 11), 12)\nprint(m, p, q)\n'
           'for i, (a, (b, c)) in enumerate(((1, (2, 3)), (4, (5, 6)))) { print(i, a + b + c) }')
    assert run(src) == '5.0 {"m": 1.5} [2.0, 4.0]\n1 2 3\n{"k": 10} 11 12\n0 6\n1 15\n'


def test_destructure_nested_under_grad_and_jit(run):
    body = "{ let (a, b), c = ((x, 2.0 * x), x * x); return a * b * c }"
    src = (f"fn f(x) {body}\n"
           "fn loop(xs) { let t = 0.0\n for k, (u, v) in enumerate(xs) { t += k * u * v }\n return t }\n"
           "print(grad(f)(3.0), jit(grad(f))(3.0), jit(f)(3.0))\n"
           "print(grad(fn(x) => loop(((x, x), (x, 2.0), (3.0, x))))(2.0))")
    # 2x^4 -> 8x^3; loop: 0 + 1 * 2x + 2 * 3x -> 8
    assert run(src) == "216.0 216.0 162.0\n8.0\n"


def test_a_tuple_of_one_is_taken_apart_as_in_python(run, run_error):
    # (x,) = t binds x to t's one item; without the comma (x) is x itself
    src = ("let (a,) = (5,)\nlet ((b, c),), (d,) = ((1, 2),), ((3,),)\nlet (e) = (6,)\nlet x = 0\n"
           "(x,) = (7,)\nprint(a, b, c, d, e, x)\nfor (i,) in ((1,), (2,)) { print(i) }\n"
           "fn f(t) { let (u,) = t\n return u * u }\n"
           "fn g(t) { let s = 0.0\n for (k,) in t { s = s + k * k }\n return s }\n"
           "print(grad(f)((3.0,)), jit(f)((2.0,)), grad(g)(((1.0,), (2.0,))), jit(grad(g))(((1.0,), (2.0,))))")
    assert run(src) == "5 1 2 (3,) (6,) 7\n1\n2\n(6.0,) 4.0 ((2.0,), (4.0,)) ((2.0,), (4.0,))\n"
    # Python's bare forms: `a, = t` (JAX's `g, = pullback(ct)`) and `return x,`
    src = ("let a, = (5,)\nlet (b, c), = ((1, 2),)\nlet x = 0\nx, = (7,)\n"
           "fn f() { return 1, }\nprint(a, b, c, x, f())")
    assert run(src) == "5 1 2 7 (1,)\n"
    err = run_error("let (a,) = (1, 2)")
    assert err.kind == "value" and err.message == "cannot unpack 2 values into 1 name"
    assert run_error("let x = 0\n(x,) = 5").kind == "type"


def test_destructure_nested_errors_point_at_the_inner_tuple(run_error):
    err = run_error("let (u, v), w = (1, 2)")
    assert err.kind == "type" and (err.line, err.column) == (1, 5) and "2 names" in err.message
    assert run_error("let (u, v), w = (1, 2, 3)").kind == "value"
    err = run_error("let (a, (b, a)) = 1")
    assert err.kind == "syntax" and "'a' appears twice" in err.message and err.column == 13
    err = run_error("let x = 1\n(x, x) += 1")
    assert err.kind == "syntax" and "one target" in err.message


# ---------------------------------------------------------------- if / while / for
def test_if_else_if_else(run):
    src = ('fn sign(x) {\n if x < 0 { return -1 } else if x == 0 { return 0 } else { return 1 }\n}\n'
           'print(sign(-5), sign(0), sign(3))')
    assert run(src) == "-1 0 1\n"


def test_if_without_else_does_nothing_when_false(run):
    assert run("if false { print(1) }\nprint(2)") == "2\n"


def test_long_else_if_chain(run):
    src = "let n = 3\n" + "".join(f"if n == {i} {{ print({i}) }} else " for i in range(5)) + "{ print(99) }"
    assert run(src) == "3\n"


def test_while_loop(run):
    assert run("let i = 0\nlet s = 0\nwhile i < 5 { s += i; i += 1 }\nprint(s)") == "10\n"


def test_while_with_break_and_continue(run):
    src = ("let i = 0\nwhile true {\n i += 1\n if i % 2 == 0 { continue }\n if i > 6 { break }\n"
           " print(i)\n}")
    assert run(src) == "1\n3\n5\n"


def test_for_over_range_forms(run):
    src = "for i in range(3) { print(i) }\nfor i in range(2, 4) { print(i) }\nfor i in range(10, 0, -4) { print(i) }"
    assert run(src) == "0\n1\n2\n2\n3\n10\n6\n2\n"


def test_for_over_tuple(run):
    assert run('for x in (1, "a", none) { print(x) }') == "1\na\nnone\n"


def test_for_over_map_keys_in_order(run):
    assert run('for k in {"z": 1, "a": 2, "m": 3} { print(k) }') == "z\na\nm\n"


def test_for_over_tensor_rows(run):
    assert run("for r in [[1.0, 2.0], [3.0, 4.0]] { print(r, type(r)) }") == \
        "[1.0, 2.0] tensor\n[3.0, 4.0] tensor\n"


def test_for_over_vector_gives_floats(run):
    assert run("for v in [1.0, 2.5] { print(v, type(v)) }") == "1.0 float\n2.5 float\n"


def test_for_over_items(run):
    assert run('for k, v in items({"a": 1, "b": 2}) { print(k, v) }') == "a 1\nb 2\n"


def test_for_over_enumerate(run):
    assert run('for i, x in enumerate(("p", "q")) { print(i, x) }') == "0 p\n1 q\n"


def test_for_over_enumerate_tensor(run):
    assert run("for i, x in enumerate([5.0, 6.0]) { print(i, x) }") == "0 5.0\n1 6.0\n"


def test_for_over_zip_stops_at_shortest(run):
    assert run("for a, b in zip((1, 2, 3), (4, 5)) { print(a, b) }") == "1 4\n2 5\n"


def test_for_over_zip_of_tensor_and_tuple(run):
    assert run('for x, n in zip([1.0, 2.0], ("a", "b")) { print(x, n) }') == "1.0 a\n2.0 b\n"


def test_for_over_empty(run):
    assert run("for x in () { print(x) }\nfor x in range(0) { print(x) }\nprint(\"done\")") == "done\n"


def test_for_break_and_continue(run):
    src = "for i in range(10) {\n if i == 1 { continue }\n if i == 4 { break }\n print(i)\n}"
    assert run(src) == "0\n2\n3\n"


def test_break_leaves_only_inner_loop(run):
    src = "for i in range(3) {\n for j in range(3) {\n  if j == 1 { break }\n  print(i, j)\n }\n}"
    assert run(src) == "0 0\n1 0\n2 0\n"


def test_return_from_inside_loop(run):
    src = "fn first_big(xs) {\n for x in xs { if x > 2 { return x } }\n return none\n}\nprint(first_big((1, 5, 7)), first_big((1,)))"
    assert run(src) == "5 none\n"


def test_return_from_nested_loops(run):
    src = ("fn find() {\n for i in range(5) {\n  let j = 0\n  while j < 5 {\n   if i * j == 6 { return (i, j) }\n"
           "   j += 1\n  }\n }\n}\nprint(find())")
    assert run(src) == "(2, 3)\n"


def test_for_over_number_is_type_error(run_error):
    err = run_error("for x in 5 { }")
    assert err.kind == "type"
    assert err.column == 10


def test_for_over_struct_is_type_error(run_error):
    assert run_error("struct S { a }\nfor x in S(1) { }").kind == "type"


def test_loop_variable_is_not_visible_after_loop(run_error):
    assert run_error("for i in range(2) { }\nprint(i)").kind == "name"


def test_for_loop_variable_can_be_reassigned_in_body(run):
    assert run("for i in range(3) { i = i * 10\n print(i) }") == "0\n10\n20\n"


# ---------------------------------------------------------------- functions and calls
def test_return_without_value_is_none(run):
    assert run("fn f() { return }\nfn g() { }\nprint(f(), g())") == "none none\n"


def test_function_defaults(run):
    src = "fn adam(p, g, lr, b1=0.9, b2=0.999) { return (p, g, lr, b1, b2) }\nprint(adam(1, 2, 3), adam(1, 2, 3, b2=0.5))"
    assert run(src) == "(1, 2, 3, 0.9, 0.999) (1, 2, 3, 0.9, 0.5)\n"


def test_defaults_may_use_earlier_parameters(run):
    assert run("fn f(a, b=a * 2) { return b }\nprint(f(3), f(3, 1))") == "6 1\n"


def test_keyword_arguments_in_any_order(run):
    assert run("fn f(a, b, c) { return (a, b, c) }\nprint(f(c=3, a=1, b=2), f(1, c=3, b=2))") == \
        "(1, 2, 3) (1, 2, 3)\n"


def test_builtins_take_keyword_arguments(run):
    assert run("print(sum([[1.0, 2.0], [3.0, 4.0]], axis=0), softmax([0.0, 0.0], axis=-1))") == \
        "[4.0, 6.0] [0.5, 0.5]\n"


def test_too_many_arguments_is_type_error(run_error):
    err = run_error("fn f(a) { return a }\nprint(f(1, 2))")
    assert err.kind == "type"
    assert (err.line, err.column) == (2, 7)


def test_missing_argument_is_type_error(run_error):
    err = run_error("fn f(a, b) { return a }\nf(1)")
    assert err.kind == "type" and "'b'" in err.message


def test_unknown_keyword_is_type_error(run_error):
    err = run_error("fn f(a) { return a }\nf(1, zz=2)")
    assert err.kind == "type" and "zz" in err.message


def test_argument_given_twice_is_type_error(run_error):
    assert run_error("fn f(a) { return a }\nf(1, a=2)").kind == "type"


def test_builtin_wrong_arguments_is_type_error(run_error):
    err = run_error("print(len())")
    assert err.kind == "type"
    assert err.column == 7


def test_builtin_unknown_keyword_is_type_error(run_error):
    assert run_error("print(sum([1.0], axes=0))").kind == "type"


def test_calling_a_non_function_is_type_error(run_error):
    err = run_error("let x = 3\nx(1)")
    assert err.kind == "type" and "int" in err.message


def test_lambda_forms(run):
    src = "let sq = fn(a) => a * a\nlet add = fn(a, b) { return a + b }\nprint(sq(3), add(1, 2), (fn() => 7)())"
    assert run(src) == "9 3 7\n"


def test_lambda_with_default(run):
    assert run("let f = fn(a, b=10) => a + b\nprint(f(1), f(1, 2))") == "11 3\n"


def test_functions_are_values(run):
    src = "fn twice(f, x) { return f(f(x)) }\nprint(twice(fn(v) => v + 3, 1), twice(sqrt, 16.0))"
    assert run(src) == "7 2.0\n"


def test_expression_statement_value_is_returned_by_run():
    import dsl
    assert dsl.Interpreter().run("1 + 2\n3 * 4") == 12


# ---------------------------------------------------------------- structs
def test_struct_positional_and_keyword_construction(run):
    src = "struct Linear { w, b }\nprint(Linear(1, 2), Linear(b=2, w=1), Linear(1, b=2))"
    assert run(src) == "Linear(w=1, b=2) Linear(w=1, b=2) Linear(w=1, b=2)\n"


def test_struct_field_read(run):
    assert run("struct P { x, y }\nlet p = P(3, 4)\nprint(p.x * p.y)") == "12\n"


def test_struct_declared_on_several_lines(run):
    assert run("struct P {\n  x,\n  y\n}\nprint(P(1, 2))") == "P(x=1, y=2)\n"


def test_struct_fields_separated_by_newlines(run):
    assert run("struct P {\n  x\n  y\n}\nprint(P(1, 2))") == "P(x=1, y=2)\n"


def test_struct_with_no_fields(run):
    assert run("struct Unit { }\nprint(Unit(), Unit() == Unit())") == "Unit() true\n"


def test_struct_missing_field_value_is_type_error(run_error):
    err = run_error("struct P { x, y }\nlet p = P(1)")
    assert err.kind == "type" and "'y'" in err.message
    assert err.line == 2


def test_struct_too_many_values_is_type_error(run_error):
    assert run_error("struct P { x }\nP(1, 2)").kind == "type"


def test_struct_unknown_keyword_is_key_error(run_error):
    assert run_error("struct P { x }\nP(z=1)").kind == "key"


def test_struct_can_be_used_before_declaration_in_function(run):
    assert run("fn make() { return P(1) }\nstruct P { v }\nprint(make())") == "P(v=1)\n"


def test_field_of_non_struct_is_type_error(run_error):
    err = run_error('let m = {"w": 1}\nprint(m.w)')
    assert err.kind == "type"


# ---------------------------------------------------------------- indexing and slicing
def test_tuple_indexing_negative(run):
    assert run("let t = (1, 2, 3)\nprint(t[0], t[-1], t[-3])") == "1 3 1\n"


def test_tuple_slicing(run):
    assert run("let t = (1, 2, 3, 4, 5)\nprint(t[1:3], t[:2], t[3:], t[::2], t[::-1], t[-2:], t[:-2])") == \
        "(2, 3) (1, 2) (4, 5) (1, 3, 5) (5, 4, 3, 2, 1) (4, 5) (1, 2, 3)\n"


def test_string_indexing_and_slicing(run):
    assert run('let s = "hello"\nprint(s[0], s[-1], s[1:3], len(s))') == "h o el 5\n"


def test_tensor_slices_with_negatives(run):
    src = "let t = [1.0, 2.0, 3.0, 4.0, 5.0]\nprint(t[-1], t[-3:], t[:-3], t[::-1], t[1:4:2], t[-4:-1:2])"
    assert run(src) == "5.0 [3.0, 4.0, 5.0] [1.0, 2.0] [5.0, 4.0, 3.0, 2.0, 1.0] [2.0, 4.0] [2.0, 4.0]\n"


def test_tensor_multi_axis_index_and_column(run):
    src = "let x = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]\nprint(x[1, 2], x[:, 0], x[-1, :], x[:, -2:], x[0, ::-1])"
    assert run(src) == "6.0 [1.0, 4.0] [4.0, 5.0, 6.0] [[2.0, 3.0], [5.0, 6.0]] [3.0, 2.0, 1.0]\n"


def test_tensor_gather_index(run):
    src = "let x = [10.0, 20.0, 30.0]\nprint(x[[2.0, 0.0, 0.0]])\nlet m = eye(3)\nprint(m[[1.0, 2.0]])"
    assert run(src) == "[30.0, 10.0, 10.0]\n[[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]\n"


def test_slice_bounds_from_expressions(run):
    assert run("let t = (1, 2, 3, 4)\nlet n = 1\nprint(t[n:n + 2])") == "(2, 3)\n"


def test_slice_out_of_range_clips_like_python(run):
    assert run("let t = (1, 2, 3)\nprint(t[1:100], [1.0, 2.0][5:])") == "(2, 3) []\n"


def test_index_out_of_range_tuple(run_error):
    err = run_error("let t = (1, 2, 3)\nprint(t[3])")
    assert err.kind == "index"
    assert (err.line, err.column) == (2, 7)


def test_index_out_of_range_negative(run_error):
    assert run_error("let t = (1, 2, 3)\nprint(t[-4])").kind == "index"


def test_index_out_of_range_tensor(run_error):
    err = run_error("let x = zeros((2, 3))\nprint(x[0, 3])")
    assert err.kind == "index" and "3" in err.message


def test_gather_index_out_of_range(run_error):
    assert run_error("let x = [1.0, 2.0]\nprint(x[[0.0, 2.0]])").kind == "index"


def test_too_many_indices(run_error):
    assert run_error("let x = [1.0, 2.0]\nprint(x[0, 0])").kind == "index"


def test_non_integer_index_is_type_error(run_error):
    assert run_error("let x = [1.0, 2.0]\nprint(x[0.5])").kind == "type"


def test_string_index_on_tuple_is_type_error(run_error):
    assert run_error('let t = (1, 2)\nprint(t["a"])').kind == "type"


def test_int_valued_float_index(run):
    assert run("let t = (10, 20)\nlet y = [1.0]\nprint(t[y[0]], [5.0, 6.0][1.0])") == "20 6.0\n"


def test_slice_step_zero_is_value_error(run_error):
    assert run_error("let t = (1, 2)\nprint(t[::0])").kind == "value"


def test_bool_mask_index(run):
    assert run("let x = [1.0, -2.0, 3.0]\nprint(x[x > 0.0])") == "[1.0, 3.0]\n"


def test_range_indexing(run):
    assert run("let r = range(10)\nprint(r[3], len(r))") == "3 10\n"


def test_builtin_argument_error_names_the_dg_builtin(run_error):
    err = run_error("len()")
    assert err.message.startswith("wrong arguments for len(x)")
