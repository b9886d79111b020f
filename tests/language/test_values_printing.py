"""SPEC section 3: the kinds of values, how they print, equality, conditions and value semantics."""

import pytest


# ---------------------------------------------------------------- print formats
@pytest.mark.parametrize("expr, shown", [
    ("0.1", "0.1"), ("2.0", "2.0"), ("1e-05", "1e-05"), ("0.00001", "1e-05"), ("1.0 / 3.0", "0.3333333333333333"),
    ("0.1 + 0.2", "0.30000000000000004"), ("1e16", "1e+16"), ("-0.0", "-0.0"), ("1.0 / 0.0", "inf"),
    ("-1.0 / 0.0", "-inf"), ("0.0 / 0.0", "nan"), ("3", "3"), ("-7", "-7"), ("true", "true"),
    ("false", "false"), ("none", "none"), ("(1, 2.0)", "(1, 2.0)"), ("(1,)", "(1,)"), ("()", "()"),
    ('{"w": 1.0}', '{"w": 1.0}'), ("{}", "{}"), ("{1: 2, true: 3}", "{1: 3}"),
    ("[1.0, 2.0]", "[1.0, 2.0]"), ("[[1.0, 2.0], [3.0, 4.0]]", "[[1.0, 2.0], [3.0, 4.0]]"),
    ("[1, 2]", "[1.0, 2.0]"), ("[]", "[]"), ("[true, false]", "[true, false]"),
    ("[1.0, 2.0] > 1.5", "[false, true]"), ("(none, true, (false,))", "(none, true, (false,))"),
])
def test_print_format(run, expr, shown):
    assert run(f"print({expr})") == shown + "\n"


def test_strings_bare_at_top_level_quoted_inside_containers(run):
    src = 'print("w", ("w", 1), {"k": "v"}, ["x"] == ["x"])'
    # a bracket literal of strings is an error, so the last item uses a tuple comparison
    assert run('print("w", ("w", 1), {"k": "v"})') == 'w ("w", 1) {"k": "v"}\n'
    del src


def test_string_escapes_shown_inside_containers(run):
    assert run(r'print(("a\"b", "c\nd", "e\\f"))') == r'("a\"b", "c\nd", "e\\f")' + "\n"


def test_struct_prints_with_field_names(run):
    src = "struct Linear { w, b }\nprint(Linear(w=2.0, b=1.0), Linear(1, \"s\"))"
    assert run(src) == 'Linear(w=2.0, b=1.0) Linear(w=1, b="s")\n'


def test_nested_struct_in_map_prints(run):
    src = "struct P { x }\nprint({\"p\": P((1, 2))})"
    assert run(src) == '{"p": P(x=(1, 2))}\n'


def test_print_separates_with_spaces_and_ends_line(run):
    assert run('print(1, "a", 2.5)\nprint()') == "1 a 2.5\n\n"


def test_functions_modules_and_types_print(run):
    out = run("fn f(x) { return x }\nstruct S { a }\nprint(f)\nprint(S)\nprint(fn(x) => x)")
    assert out.splitlines() == ["<fn f>", "<struct S>", "<fn <lambda>>"]


def test_builtin_prints_as_function(run):
    assert run("print(sum)").startswith("<fn")


def test_wide_matrix_prints_rows_on_separate_lines(run):
    out = run("print(ones((3, 12)))")
    row = "[" + ", ".join(["1.0"] * 12) + "]"
    assert out == "[" + row + ",\n " + row + ",\n " + row + "]\n"


def test_narrow_matrix_prints_on_one_line(run):
    assert run("print(eye(2))") == "[[1.0, 0.0], [0.0, 1.0]]\n"


def test_3d_tensor_prints_like_nested_literal(run):
    assert run("print(zeros((2, 1, 2)))") == "[[[0.0, 0.0]], [[0.0, 0.0]]]\n"


def test_large_vector_is_elided(run):
    assert run("print(arange(1001))") == "[0.0, 1.0, 2.0, ..., 998.0, 999.0, 1000.0]\n"


def test_thousand_elements_are_not_elided(run):
    out = run("print(zeros((1000,)))")
    assert "..." not in out and out.count("0.0") == 1000


def test_large_matrix_is_elided_on_both_axes(run):
    lines = run("print(zeros((40, 40)))").splitlines()
    assert len(lines) == 7
    assert lines[3].strip() == "...,"
    assert lines[0] == "[[0.0, 0.0, 0.0, ..., 0.0, 0.0, 0.0],"


def test_str_matches_print(run):
    assert run('print(str(1.5) + str("s") + str((1, "s")) + str([1.0]) + str(none))') == \
        '1.5s(1, "s")[1.0]none\n'


def test_zero_dim_tensor_prints_as_number(run):
    assert run("print(tensor(2.5))") == "2.5\n"


def test_zero_dim_tensor_prints_its_entry_as_its_type_does(run):
    # an int one printed as a float (2.0), where its one-entry vector prints [2]
    assert run('print(astype(tensor(2.7), "int64"), astype([2.7], "int64"), tensor(true), '
               'astype(tensor(0.1), "float32"))') == "2 [2] true 0.1\n"


# ---------------------------------------------------------------- type()
@pytest.mark.parametrize("expr, name", [
    ("3", "int"), ("3.0", "float"), ("true", "bool"), ('"w"', "string"), ("none", "none"),
    ("[1.0, 2.0]", "tensor"), ("zeros((2, 3))", "tensor"), ("(1, 2)", "tuple"), ("()", "tuple"),
    ('{"w": 1}', "map"), ("fn(a) => a", "function"), ("print", "function"), ("sum", "function"),
    ("[1.0] > 0.0", "tensor"), ("1 / 2", "float"), ("7 // 2", "int"), ("2 ** 3", "int"),
    ("2 ** -1", "float"),
])
def test_type_names(run, expr, name):
    assert run(f"print(type({expr}))") == name + "\n"


def test_type_of_struct_is_its_name(run):
    assert run("struct Linear { w, b }\nprint(type(Linear(1, 2)))") == "Linear\n"


def test_type_of_named_function(run):
    assert run("fn f() { }\nprint(type(f))") == "function\n"


def test_type_of_module(run, tmp_path):
    (tmp_path / "m.dg").write_text("let a = 1\n")
    main = tmp_path / "main.dg"
    main.write_text("import m\nprint(type(m))\n")
    import io
    import dsl
    out = io.StringIO()
    dsl.Interpreter(stdout=out).run_file(main)
    assert out.getvalue() == "module\n"


# ---------------------------------------------------------------- single elements are floats
@pytest.mark.parametrize("expr", ["sum([1.0, 2.0])", "[[1.0, 2.0], [3.0, 4.0]][1, 0]", "mean([1.0, 3.0])",
                                  "max([1.0, 5.0])", "min([[1.0], [2.0]])", "[1.0, 2.0] @ [3.0, 4.0]",
                                  "[5.0, 6.0][-1]", "logsumexp([0.0, 0.0])"])
def test_single_element_results_are_floats(run, expr):
    assert run(f"print(type({expr}))") == "float\n"


def test_indexing_every_axis_gives_float_value(run):
    assert run("let x = [[1.0, 2.0], [3.0, 4.0]]\nprint(x[1, 0], x[0][1])") == "3.0 2.0\n"


def test_partial_index_gives_tensor(run):
    assert run("let x = [[1.0, 2.0], [3.0, 4.0]]\nprint(x[1], type(x[1]))") == "[3.0, 4.0] tensor\n"


# ---------------------------------------------------------------- bracket literals
def test_bracket_literal_of_ints_is_float_tensor(run):
    assert run("let t = [1, 2]\nprint(t / 2, type(t))") == "[0.5, 1.0] tensor\n"


def test_bracket_literal_stacks_tensors(run):
    assert run("let a = [1.0, 2.0]\nprint([a, a * 2])") == "[[1.0, 2.0], [2.0, 4.0]]\n"


def test_bracket_literal_of_scalars_and_bools_mixed(run):
    assert run("print([1, 2.5, true])") == "[1.0, 2.5, 1.0]\n"


def test_bracket_literal_with_string_suggests_tuple(run_error):
    err = run_error('let t = [1, "a"]')
    assert err.kind == "type"
    assert "tuple" in err.hint
    assert err.column == 13          # points at the bad element


def test_bracket_literal_with_tuple_element_is_an_error(run_error):
    err = run_error("let t = [(1, 2), (3, 4)]")
    assert err.kind == "type" and "tuple" in err.hint


def test_bracket_literal_ragged_is_shape_error(run_error):
    err = run_error("let t = [[1.0], [1.0, 2.0]]")
    assert err.kind == "shape"
    assert "(1,)" in err.message and "(2,)" in err.message


def test_bracket_literal_of_struct_is_error(run_error):
    err = run_error("struct S { a }\nlet t = [S(1)]")
    assert err.kind == "type" and err.line == 2


# ---------------------------------------------------------------- equality
@pytest.mark.parametrize("expr, result", [
    ("1 == 1.0", "true"), ('"a" == "a"', "true"), ('"a" != "b"', "true"), ("none == none", "true"),
    ("none == 0", "false"), ("true == true", "true"), ("(1, 2) == (1, 2)", "true"),
    ("(1, 2) == (1, 2, 3)", "false"), ("(1, (2, 3)) != (1, (2, 4))", "true"),
    ('{"a": 1, "b": 2} == {"a": 1, "b": 2}', "true"), ('{"a": 1} == {"a": 2}', "false"),
    ('{"a": 1} == {"b": 1}', "false"), ("(1, [1.0, 2.0]) == (1, [1.0, 2.0])", "true"),
    ("(1, [1.0, 2.0]) == (1, [1.0, 3.0])", "false"), ('{"t": [1.0]} == {"t": [1.0, 1.0]}', "false"),
    ('"1" == 1', "false"), ("() == ()", "true"), ("(1,) == 1", "false"),
])
def test_structural_equality_yields_bool(run, expr, result):
    assert run(f"print({expr})") == result + "\n"


def test_struct_equality(run):
    src = ("struct P { x, y }\nstruct Q { x, y }\n"
           "print(P(1, [1.0]) == P(1, [1.0]), P(1, 2) == P(x=1, y=3), P(1, 2) == Q(1, 2), P(1, 2) != P(1, 2))")
    assert run(src) == "true false false false\n"


def test_tensor_equality_is_elementwise(run):
    assert run("print([1.0, 2.0] == [1.0, 3.0], [1.0, 2.0] != [1.0, 3.0])") == "[true, false] [false, true]\n"


@pytest.mark.parametrize("op, out", [("<", "[true, false, false]"), ("<=", "[true, true, false]"),
                                     (">", "[false, false, true]"), (">=", "[false, true, true]")])
def test_tensor_ordering_is_elementwise(run, op, out):
    assert run(f"print([1.0, 2.0, 3.0] {op} 2.0)") == out + "\n"


def test_tensor_comparison_broadcasts(run):
    assert run("print([[1.0], [3.0]] > [0.0, 2.0])") == "[[true, false], [true, true]]\n"


def test_tensor_comparison_shape_mismatch(run_error):
    assert run_error("print([1.0, 2.0] == [1.0, 2.0, 3.0])").kind == "shape"


def test_string_and_tuple_ordering(run):
    assert run('print("a" < "b", (1, 2) < (1, 3))') == "true true\n"


def test_ordering_incompatible_types_is_type_error(run_error):
    err = run_error('print(1 < "a")')
    assert err.kind == "type"


# ---------------------------------------------------------------- conditions
def test_condition_one_element_tensor(run):
    assert run("if [1.0] > 0.0 { print(1) }\nif sum([1.0, 2.0]) > 2.0 { print(2) }") == "1\n2\n"


def test_condition_must_be_bool_not_int(run_error):
    err = run_error("if 1 { print(1) }")
    assert err.kind == "type"
    assert "int" in err.message


def test_condition_tensor_names_its_shape(run_error):
    err = run_error("let x = [1.0, 2.0]\nif x > 0.0 { print(1) }")
    assert err.kind == "shape"
    assert "(2,)" in err.message
    assert (err.line, err.column) == (2, 4)


@pytest.mark.parametrize("src", ["while 1 { }", "print(1 and true)", "print(false or 0)",
                                  'print(not "s")', "print(none and true)"])
def test_non_bool_conditions_are_errors(run_error, src):
    assert run_error(src).kind == "type"


@pytest.mark.parametrize("src", ["print([1.0, 0.0] and true)", "print(not zeros((2, 2)))",
                                  "while zeros((3,)) == 0.0 { }"])
def test_multi_element_tensor_conditions_are_shape_errors(run_error, src):
    err = run_error(src)
    assert err.kind == "shape"
    assert "(" in err.message


def test_and_or_short_circuit(run):
    src = "fn boom() { error(\"evaluated\") }\nprint(false and boom(), true or boom())"
    assert run(src) == "false true\n"


def test_and_or_not_give_bools_for_tensor_conditions(run):
    assert run("print([1.0] > 0.0 and true, not ([1.0] > 0.0))") == "true false\n"


# ---------------------------------------------------------------- value semantics
def test_map_update_rebinds_a_copy(run):
    src = 'let m = {"k": 1}\nlet m2 = m\nm2["k"] = 2\nm2["new"] = 3\nprint(m, m2)'
    assert run(src) == '{"k": 1} {"k": 2, "new": 3}\n'


def test_struct_field_update_rebinds_a_copy(run):
    src = "struct P { w, b }\nlet p = P(1.0, 2.0)\nlet q = p\nq.w = 9.0\nprint(p, q)"
    assert run(src) == "P(w=1.0, b=2.0) P(w=9.0, b=2.0)\n"


def test_tuple_element_update_rebinds_a_copy(run):
    src = "let xs = (1, 2, 3)\nlet ys = xs\nys[0] = 10\nprint(xs, ys)"
    assert run(src) == "(1, 2, 3) (10, 2, 3)\n"


def test_tensor_element_update_rebinds_a_copy(run):
    src = "let a = zeros((3,))\nlet b = a\nb[1] = 5.0\nprint(a, b)"
    assert run(src) == "[0.0, 0.0, 0.0] [0.0, 5.0, 0.0]\n"


def test_tensor_slice_update(run):
    src = "let a = zeros((2, 3))\na[:, 1] = [7.0, 8.0]\na[0, 2:] = 1.0\nprint(a)"
    assert run(src) == "[[0.0, 7.0, 1.0], [0.0, 8.0, 0.0]]\n"


def test_nested_update_copies_every_level(run):
    src = ("struct L { w, b }\nlet params = {\"h\": L([1.0, 2.0], 0.0)}\nlet old = params\n"
           "let h = params[\"h\"]\nparams[\"h\"].w[0] = 5.0\nprint(old)\nprint(h)\nprint(params)")
    assert run(src) == ('{"h": L(w=[1.0, 2.0], b=0.0)}\nL(w=[1.0, 2.0], b=0.0)\n'
                        '{"h": L(w=[5.0, 2.0], b=0.0)}\n')


def test_argument_updates_do_not_reach_the_caller(run):
    src = ('fn bump(m) { m["n"] += 1; return m["n"] }\nlet m = {"n": 1}\n'
           'print(bump(m), m["n"])')
    assert run(src) == "2 1\n"


def test_closure_sees_rebinding_not_mutation_of_a_copy(run):
    src = 'let m = {"a": 1}\nlet keep = m\nm["a"] = 2\nprint(keep["a"], m["a"])'
    assert run(src) == "1 2\n"


def test_tuple_in_map_in_tuple_update(run):
    src = 'let t = ({"xs": (1, 2)}, 0)\nlet u = t\nt[0]["xs"][1] = 9\nprint(t, u)'
    assert run(src) == '({"xs": (1, 9)}, 0) ({"xs": (1, 2)}, 0)\n'


def test_map_preserves_insertion_order_on_update(run):
    assert run('let m = {"b": 1, "a": 2}\nm["b"] = 3\nm["c"] = 4\nprint(keys(m))') == '("b", "a", "c")\n'


# ---------------------------------------------------------------- map keys
def test_map_keys_int_bool_string(run):
    assert run('let m = {1: "one", "two": 2, false: 0}\nprint(m[1], m["two"], m[false])') == "one 2 0\n"


def test_map_key_float_is_error(run_error):
    assert run_error("let m = {1.5: 1}").kind == "type"


def test_map_key_tuple_is_error(run_error):
    assert run_error("let m = {}\nm[(1, 2)] = 3").kind == "type"


def test_missing_key_is_key_error(run_error):
    err = run_error('let m = {"a": 1}\nprint(m["b"])')
    assert err.kind == "key"
    assert '"b"' in err.message
    assert '"a"' in err.hint


def test_missing_field_is_key_error(run_error):
    err = run_error("struct P { x }\nlet p = P(1)\nprint(p.y)")
    assert err.kind == "key"
    assert "'y'" in err.message and (err.line, err.column) == (3, 7)


def test_setting_missing_field_is_key_error(run_error):
    assert run_error("struct P { x }\nlet p = P(1)\np.z = 2").kind == "key"


# ---------------------------------------------------------------- numbers
def test_int_semantics_are_pythons(run):
    assert run("print(7 // 2, -7 // 2, 7 % 3, -7 % 3, 2 ** 100)") == \
        "3 -4 1 2 1267650600228229401496703205376\n"


def test_true_division_of_ints_is_float(run):
    assert run("print(6 / 3, 7 / 2)") == "2.0 3.5\n"


def test_int_division_by_zero_is_value_error(run_error):
    for src in ("print(1 / 0)", "print(1 // 0)", "print(1 % 0)"):
        assert run_error(src).kind == "value"


def test_float_division_by_zero_is_ieee(run):
    assert run("print(1.0 / 0, -1 / 0.0, 0.0 / 0)") == "inf -inf nan\n"


def test_float_overflow_is_inf(run):
    assert run("print(1e300 * 1e300, exp(1000.0))") == "inf inf\n"


def test_string_concatenation_and_repeat(run):
    assert run('print("ab" + "cd", "ab" * 3, (1,) + (2,), (0,) * 3)') == "abcd ababab (1, 2) (0, 0, 0)\n"


def test_adding_string_and_number_is_type_error(run_error):
    err = run_error('let s = "a" + 1')
    assert err.kind == "type"
    assert "string" in err.message and "int" in err.message


def test_builtins_print_with_their_dg_names(run):
    assert run("print(len, print, int, sum, abs)") == "<fn len> <fn print> <fn int> <fn sum> <fn abs>\n"


@pytest.mark.parametrize("expr, shown", [
    ("true + true", "2"), ("true * 3", "3"), ("true - false", "1"), ("-true", "-1"), ("true / 2", "0.5"),
    ("true ** 2", "1"), ("2 ** true", "2"), ("1.5 + true", "2.5"), ("[true, false] + 1.0", "[2.0, 1.0]"),
    ("[true] * [true]", "[1.0]"), ("true % 2", "1"), ("true // 1", "1"),
])
def test_bools_count_as_one_and_zero_in_arithmetic(run, expr, shown):
    assert run(f"print({expr})") == shown + "\n"


def test_tensor_equality_with_huge_int(run):
    assert run("print([1.0, 2.0] == 2 ** 70, ([true] != [true]) == 2 ** 70, [1.0] != 2 ** 2000)") == \
        "[false, false] [false] [true]\n"


def test_repeating_empty_sequences_by_huge_counts(run):
    assert run('print("" * 2 ** 70, () * 2 ** 70, "ab" * -1, "ab" * true, (1,) * 2)') == " ()  ab (1, 1)\n"
