"""SPEC section 2 (lexical structure) and the precedence table of section 4."""

import pytest

import dsl
from dsl.frontend.parser import parse, is_complete
from dsl.frontend import ast as A


# ---------------------------------------------------------------- comments and termination
def test_comment_runs_to_end_of_line(run):
    assert run("print(1) # print(2)\n# print(3)\nprint(4)") == "1\n4\n"


def test_semicolon_ends_statement(run):
    assert run("let a = 1; let b = 2; print(a + b)") == "3\n"


def test_statement_ends_before_closing_brace(run):
    assert run("fn f(c) { if c { return 1 } return 2 }\nprint(f(true), f(false))") == "1 2\n"


def test_one_line_block_with_semicolons(run):
    assert run("fn f() { let a = 1; let b = 2; return a + b }\nprint(f())") == "3\n"


def test_line_break_inside_parentheses_continues(run):
    assert run("print(1,\n  2\n  )") == "1 2\n"


def test_line_break_inside_brackets_continues(run):
    assert run("let t = [\n 1.0,\n 2.0\n]\nprint(t)") == "[1.0, 2.0]\n"


def test_line_break_inside_map_literal_continues(run):
    assert run('let m = {\n  "a": 1,\n  "b": 2\n}\nprint(m)') == '{"a": 1, "b": 2}\n'


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "**", "==", "<", "and", "or", "%", "//"])
def test_line_break_after_binary_operator_continues(run, op):
    left, right = ("true", "false") if op in ("and", "or") else ("6", "3")
    src = f"let x = {left} {op}\n   {right}\nprint(x)"
    expected = run(f"print({left} {op} {right})")
    assert run(src) == expected


def test_line_break_after_at_continues(run):
    assert run("let a = [[1.0, 2.0]]\nlet b = a @\n [[1.0], [1.0]]\nprint(b)") == "[[3.0]]\n"


def test_line_break_after_assign_continues(run):
    assert run("let x =\n  5\nprint(x)") == "5\n"


def test_line_break_after_comma_continues(run):
    assert run("let a, b =\n 1,\n 2\nprint(a, b)") == "1 2\n"


def test_line_break_after_arrow_continues(run):
    assert run("let f = fn(x) =>\n  x * 2\nprint(f(4))") == "8\n"


def test_line_break_ends_statement_otherwise(run):
    # `- 1` on its own line is a new expression statement, not a continuation
    assert run("let x = 5\n-1\nprint(x)") == "5\n"


def test_line_break_before_else(run):
    src = "if false {\n print(1)\n}\nelse {\n print(2)\n}"
    assert run(src) == "2\n"


def test_else_if_chain_on_separate_lines(run):
    src = ("fn f(x) {\n if x < 0 { return \"neg\" }\n else if x == 0 { return \"zero\" }\n"
           " else { return \"pos\" }\n}\nprint(f(-1), f(0), f(1))")
    assert run(src) == "neg zero pos\n"


def test_compound_statement_followed_on_same_line(run):
    assert run("if true { print(1) } print(2)") == "1\n2\n"


def test_blank_lines_and_trailing_comments(run):
    assert run("\n\n  # only a comment\n\nprint(1)   # done\n\n") == "1\n"


def test_empty_program(run):
    assert run("") == ""
    assert run("# nothing\n") == ""


def test_crlf_line_endings(run):
    assert run("let a = 1\r\nprint(a)\r\n") == "1\n"


# ---------------------------------------------------------------- identifiers and reserved words
def test_identifiers_with_underscores_and_digits(run):
    assert run("let _a1 = 1; let B_2 = 2; let __ = 3; print(_a1 + B_2 + __)") == "6\n"


RESERVED = ["let", "fn", "return", "if", "else", "while", "for", "in", "struct", "import", "as",
            "true", "false", "none", "and", "or", "not", "break", "continue"]


@pytest.mark.parametrize("word", RESERVED)
def test_reserved_word_cannot_be_let_name(run_error, word):
    err = run_error(f"let {word} = 3")
    assert err.kind == "syntax"
    assert err.line == 1 and err.column == 5


@pytest.mark.parametrize("word", ["in", "as", "struct", "import"])
def test_reserved_word_cannot_be_function_or_parameter_name(run_error, word):
    assert run_error(f"fn {word}(x) {{ return x }}").kind == "syntax"
    assert run_error(f"fn f({word}) {{ return 1 }}").kind == "syntax"


@pytest.mark.parametrize("word", ["in", "as", "if"])
def test_reserved_word_cannot_be_struct_field_or_keyword_argument(run_error, word):
    assert run_error(f"struct S {{ {word} }}").kind == "syntax"
    assert run_error(f"print({word}=1)").kind == "syntax"


def test_reserved_word_cannot_be_field_access(run_error):
    assert run_error("struct S { a }\nlet s = S(1)\nprint(s.in)").kind == "syntax"


def test_reserved_word_message_says_reserved(run_error):
    err = run_error("let as = 1")
    assert "reserved" in err.message


def test_keyword_prefix_is_an_ordinary_name(run):
    assert run("let format = 1; let iffy = 2; let nonempty = 3; let letter = 4\n"
               "print(format + iffy + nonempty + letter)") == "10\n"


# ---------------------------------------------------------------- numbers
@pytest.mark.parametrize("text, shown", [("42", "42"), ("1.5", "1.5"), ("1e-3", "0.001"), ("2.", "2.0"),
                                          ("1E3", "1000.0"), ("2.5e+2", "250.0"), ("0", "0"),
                                          ("007", "7"), ("1_000_000", "1000000"), ("2_5.0_1", "25.01"),
                                          ("1e1_0", "10000000000.0"), (".5_5", "0.55")])
def test_number_literals(run, text, shown):
    assert run(f"print({text})") == shown + "\n"


@pytest.mark.parametrize("text", ["1__0", "1_", "1_.5"])
def test_an_underscore_between_digits_only(run_error, text):
    assert run_error(f"print({text})").kind == "syntax"


def test_int_and_float_literal_types(run):
    assert run('print(type(42), type(1.5), type(1e-3), type(2.))') == "int float float float\n"


def test_big_int_literal_is_python_int(run):
    assert run("print(123456789012345678901234567890 + 1)") == "123456789012345678901234567891\n"


# ---------------------------------------------------------------- strings
def test_string_escapes(run):
    assert run(r'print("a\nb\tc\"d\\e")') == 'a\nb\tc"d\\e\n'


def test_string_hash_is_not_a_comment(run):
    assert run('print("a # b")') == "a # b\n"


def test_empty_string(run):
    assert run('print("", len(""))') == " 0\n"


# ---------------------------------------------------------------- f-strings
def test_fstring_plain_field(run):
    assert run('let step = 3\nprint(f"at {step}")') == "at 3\n"


def test_fstring_format_spec(run):
    assert run('let l = 0.123456\nlet step = 7\nprint(f"loss {l:.4f} at {step}")') == "loss 0.1235 at 7\n"


@pytest.mark.parametrize("spec, value, out", [
    (".2f", "3.14159", "3.14"), ("8.3f", "3.14159", "   3.142"), ("<6", "12", "12    "),
    (">6", "12", "    12"), ("^7", "12", "  12   "), ("05d", "42", "00042"), ("+d", "5", "+5"),
    (",", "1234567", "1,234,567"), (".3e", "12345.678", "1.235e+04"), (".1%", "0.256", "25.6%"),
    ("x", "255", "ff"), ("b", "5", "101"), (".3g", "0.00012345", "0.000123"), ("*>5", "1", "****1"),
])
def test_fstring_python_format_mini_language(run, spec, value, out):
    assert run(f'print(f"{{{value}:{spec}}}")') == out + "\n"


def test_fstring_literal_braces(run):
    assert run('print(f"{{x}} = {1 + 1} }}{{")') == "{x} = 2 }{\n"


def test_fstring_expression_with_calls_and_indexing(run):
    assert run('let t = (1, 2, 3)\nprint(f"{len(t)} {t[1] * 10} {max([1.0, 5.0])}")') == "3 20 5.0\n"


def test_fstring_field_without_spec_prints_like_str(run):
    assert run('print(f"{(1, 2.0)} {none} {true} {[1.0, 2.0]}")') == "(1, 2.0) none true [1.0, 2.0]\n"


def test_fstring_string_field_is_bare(run):
    assert run('let s = "hi"\nprint(f"<{s}>")') == "<hi>\n"


def test_fstring_self_documenting_field_as_pythons(run):
    # f"{x=}": the expression as written, its whitespace kept, then the value (a string quoted);
    # a format spec after the = formats it; ==, !=, <= and >= are comparisons, not this
    src = ('let x = [1.0, 2.0]\nlet s = "hi"\n'
           'print(f"{x=}|{x = }|{sum(x)=:.3f}|{s=}|{1 == 1}|{x[0] >= 1.0}|{x[1] != 2.0}")\n'
           'print(jit(fn(v) => f"{v=}")(2.5))')
    assert run(src) == 'x=[1.0, 2.0]|x = [1.0, 2.0]|sum(x)=3.000|s="hi"|true|true|false\nv=2.5\n'


def test_fstring_conversions_as_pythons(run):
    # !s is the value as print shows it (a spec may follow), !r as inside a container (a string
    # quoted); != stays a comparison
    src = ('let s = "hi"\nlet x = [1.5, 2.0]\n'
           'print(f"{s!r}|{s!s}|{x!r}|{s!s:>4}|{1.5!s:>5}|{ {"k": s}!r }|{(s, 1)!s}|{1!=2}|{x[0] != 1.5}")\n'
           'print(jit(fn(v) => f"{v!r}")("a"))')
    assert run(src) == '"hi"|hi|[1.5, 2.0]|  hi|  1.5|{"k": "hi"}|("hi", 1)|true|false\n"a"\n'


@pytest.mark.parametrize("field", ["{1.5!a}", "{1.5!r:>6}"])
def test_fstring_conversions_dg_does_not_take_are_syntax_errors(field):
    with pytest.raises(dsl.DgError) as info:
        dsl.Interpreter().run(f'print(f"{field}")')
    assert info.value.kind == "syntax" and "!s (a format spec may follow) and !r" in info.value.message


def test_fstring_string_field_with_width(run):
    assert run('let s = "hi"\nprint(f"<{s:>5}>")') == "<   hi>\n"


def test_fstring_escapes_in_text(run):
    assert run(r'print(f"a\tb\n{1}")') == "a\tb\n1\n"


def test_fstring_slice_inside_field_is_not_a_spec(run):
    assert run('let t = (1, 2, 3)\nprint(f"{t[1:]}")') == "(2, 3)\n"


def test_fstring_map_literal_inside_field(run):
    assert run('print(f"{len({1: 2})}")') == "1\n"


def test_fstring_bool_format_width(run):
    assert run('print(f"[{true:>6}]")') == "[  true]\n"


def test_fstring_tensor_spec_formats_each_element(run):
    assert run('print(f"{[1.0, 2.5]:.2f}")') == "[1.00, 2.50]\n"


def test_fstring_spec_with_fields_of_its_own_as_pythons(run):
    # Python's nested fields, f"{x:>{width}.{digits}f}": the spec is made on each call
    src = ('let rows = (("a", 1.5), ("bcd", 22.25))\nlet w = 5\nfor r in rows {\n'
           '    print(f"{r[0]:<{w}}|{r[1]:>{w + 2}.{1 + 1}f}|{r[0]!s:{"*"}^{w}}|{{}}")\n}')
    assert run(src) == "a    |   1.50|**a**|{}\nbcd  |  22.25|*bcd*|{}\n"


def test_fstring_spec_with_a_staged_field_is_guarded_under_jit(run):
    src = ('fn show(x, p) { return f"{x:.{p}f}" }\nlet j = jit(show)\n'
           'print(j(3.14159, 3), j(2.0, 3), j(2.0, 1), grad(fn(x) => x * float(len(f"{x:.{2}f}")))(1.0))')
    assert run(src) == "3.142 2.000 2.0 4.0\n"


@pytest.mark.parametrize("src, column", [('print(f"{1.5:{}>3}")', 14), ('print(f"{1.5:>{w}}")', 16)])
def test_fstring_spec_fields_report_errors_at_their_column(run_error, src, column):
    err = run_error(src)
    assert err.kind in ("syntax", "name") and err.line == 1 and err.column == column


def test_fstring_bad_spec_is_value_error(run_error):
    err = run_error('let x = 1.5\nprint(f"{x:q}")')
    assert err.kind == "value"
    assert err.line == 2


# ---------------------------------------------------------------- precedence (SPEC 4)
@pytest.mark.parametrize("expr, value", [
    ("-2**2", "-4"), ("2**3**2", "512"), ("(2**3)**2", "64"), ("-2**2 == -4", "true"),
    ("2**-1", "0.5"), ("-3 * -2", "6"), ("1 + 2 * 3", "7"), ("(1 + 2) * 3", "9"),
    ("10 - 4 - 3", "3"), ("2 * 3 ** 2", "18"), ("7 // 2 * 2", "6"), ("7 % 4 * 2", "6"),
    ("8 / 2 / 2", "2.0"), ("1 + 2 == 3", "true"), ("1 < 2 == true", "false"),
    ("not 1 == 2", "true"), ("not true and false", "false"), ("not (true and false)", "true"),
    ("true or true and false", "true"), ("false and true or true", "true"),
    ("false or not false", "true"), ("1 < 2 and 2 < 3", "true"), ("- - 3", "3"),
    ("-(2)**2", "-4"), ("2**2**-1", "1.4142135623730951"),
])
def test_precedence_table(run, expr, value):
    assert run(f"print({expr})") == value + "\n"


def test_unary_minus_on_name_binds_looser_than_power(run):
    assert run("let x = 3\nprint(-x**2, (-x)**2)") == "-9 9\n"


def test_not_a_equals_b(run):
    assert run("let a = 1; let b = 1; print(not a == b, not a != b)") == "false true\n"


def test_matmul_same_level_as_multiply_left_assoc(run):
    # (a @ b) * 2, not a @ (b * 2): the same here, but a @ b @ c must chain left to right
    src = "let a = [[1.0, 2.0]]\nlet b = [[1.0], [1.0]]\nprint(a @ b * 2, b @ a @ b)"
    assert run(src) == "[[6.0]] [[3.0], [3.0]]\n"


def test_calls_index_and_field_bind_tightest(run):
    src = ("struct P { f }\nlet p = P(fn(x) => (x, x * 2))\n"
           "print(-p.f(3)[1] ** 2)")
    assert run(src) == "-36\n"


def test_chained_comparison(run):
    assert run("print(1 < 2 < 3, 3 > 2 > 2, 1 <= 1 < 2)") == "true false true\n"


# ---------------------------------------------------------------- AST shape
def test_parse_gives_spans_for_expressions():
    prog = parse("let x = 1 +\n  foo(2)", "f.dg")
    let = prog.stmts[0]
    assert isinstance(let, A.Let)
    e = let.value
    assert isinstance(e, A.BinOp)
    assert (e.span.line, e.span.column, e.span.end_line, e.span.end_column) == (1, 9, 2, 9)
    assert e.span.filename == "f.dg"


def test_parse_power_is_right_associative():
    e = parse("2 ** 3 ** 2").stmts[0].expr
    assert isinstance(e, A.BinOp) and e.op == "**"
    assert isinstance(e.right, A.BinOp) and e.right.op == "**"


def test_parse_neg_binds_looser_than_power():
    e = parse("-x ** 2").stmts[0].expr
    assert isinstance(e, A.Unary) and isinstance(e.operand, A.BinOp) and e.operand.op == "**"


def test_is_complete_for_repl():
    assert is_complete("print(1)")
    assert not is_complete("fn f(x) {")
    assert not is_complete("let x = (1,")
    assert not is_complete("let x = 1 +")
    assert is_complete("let x = )")      # invalid is "complete": the error shows at once


def test_deep_nesting_parses(run):
    depth = 200
    assert run("print(" + "(" * depth + "1" + ")" * depth + ")") == "1\n"


def test_long_operator_chain(run):
    assert run("print(" + " + ".join(["1"] * 1500) + ")") == "1500\n"


# ---------------------------------------------------------------- strings inside f-string fields
def test_fstring_field_may_contain_strings(run):
    src = 'let m = {"k": 5, "a:b": 1}\nprint(f"{m["k"]} {m["a:b"]:>3} [{"left":*<6}] {get(m, "zz", 0)}")'
    assert run(src) == "5   1 [left**] 0\n"


def test_fstring_field_with_escaped_quotes(run):
    assert run('let m = {"k": 5}\nprint(f"{m[\\"k\\"]}")') == "5\n"


def test_fstring_field_with_map_literal_needs_a_space(run):
    assert run('print(f"{ {"q": 2}["q"] }")') == "2\n"


def test_fstring_followed_by_string_on_same_line(run):
    assert run('let x = 1\nprint(f"{x}" + "y", f"{"}"}")') == "1y }\n"


def test_unterminated_fstring_with_many_fields_fails_fast(run_error):
    import time
    start = time.perf_counter()
    err = run_error('print(f"' + '{x}' * 3000 + '{{}}' * 3000 + ')')
    assert err.kind == "syntax"
    assert time.perf_counter() - start < 5
