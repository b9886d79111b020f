"""Syntax errors say in words what was expected, at the right place (SPEC sections 2 and 7)."""

import re

import pytest

# grammar internals that must never reach a user
INTERNAL = re.compile(r"__ANON|\$END|\b_NL\b|\bRPAR\b|\bLPAR\b|\bRSQB\b|\bLBRACE\b|\bRBRACE\b|"
                      r"\bNAME\b|\bINT\b|\bFLOAT\b|\bSTRING\b|\bCOMMA\b|\bMUL_OP\b|\bCOMP_OP\b|"
                      r"\bDSTAR\b|\bAUG_OP\b|\bSEMI\b|Token\(|Tree\(|UnexpectedToken|lark")


def syntax(run_error, src):
    """The syntax error of `src`, checked to be free of grammar symbols."""
    err = run_error(src, "bad.dg")
    assert err.kind == "syntax", str(err)
    text = str(err)
    assert not INTERNAL.search(text), text
    return err


def test_expected_expression_after_plus(run_error):
    err = syntax(run_error, "let a = 1 + * 2")
    assert err.message == "expected an expression after '+', found '*'"
    assert (err.line, err.column) == (1, 13)


def test_expected_expression_after_plus_at_end(run_error):
    err = syntax(run_error, "let a = 1 +")
    assert err.message.startswith("expected an expression after '+'")
    assert err.line == 1


def test_missing_name_after_let(run_error):
    err = syntax(run_error, "let = 3")
    assert err.message == "expected a name after 'let', found '='"
    assert err.column == 5


def test_keyword_as_name_says_reserved(run_error):
    err = syntax(run_error, "let fn = 3")
    assert "reserved word" in err.message and "'fn'" in err.message
    assert (err.line, err.column) == (1, 5)


def test_missing_equals_in_let(run_error):
    err = syntax(run_error, "let x 3")
    assert err.message == "expected ',' or '=' after 'x', found '3'"


def test_unclosed_paren_at_end(run_error):
    err = syntax(run_error, "let x = (1, 2")
    assert err.message == "expected ')' or ',' after '2', found the end of the input"
    assert "never closed" in err.hint


def test_unclosed_paren_reported_with_its_position(run_error):
    err = syntax(run_error, "let x = (1, 2\nprint(x)")
    assert "expected ')' or ','" in err.message
    assert "line 1, column 9" in err.hint


def test_unclosed_block(run_error):
    err = syntax(run_error, "fn f(x) {\n  return x\n")
    assert "'}'" in err.message
    assert "line 1" in err.hint


def test_extra_closing_paren(run_error):
    err = syntax(run_error, "print(1))")
    assert err.column == 9
    assert "found ')'" in err.message


def test_stray_closing_brace(run_error):
    err = syntax(run_error, "}")
    assert err.message == "expected a statement, found '}'"


def test_else_without_if(run_error):
    err = syntax(run_error, "else { }")
    assert "'else'" in err.message


def test_missing_block_after_if_condition(run_error):
    err = syntax(run_error, "let x = true\nif x print(1)")
    assert err.message == "expected '{' after 'x', found 'print'"
    assert (err.line, err.column) == (2, 6)


def test_two_expressions_on_a_line(run_error):
    err = syntax(run_error, "let x = 1 2")
    assert "end of the statement" in err.message
    assert err.column == 11


def test_missing_in_of_for(run_error):
    err = syntax(run_error, "for x xs { }")
    assert err.message == "expected ',' or 'in' after 'x', found 'xs'"


def test_map_entry_without_colon(run_error):
    err = syntax(run_error, "let m = {1: 2, 3}")
    assert err.message == "expected ':' after '3', found '}'"


def test_empty_subscript(run_error):
    err = syntax(run_error, "let x = (1, 2)\nprint(x[])")
    assert "expected an expression after '['" in err.message


def test_double_comma(run_error):
    err = syntax(run_error, "print(1,,2)")
    assert err.message == "expected an expression after ',', found ','"


def test_else_at_end(run_error):
    err = syntax(run_error, "if true { } else")
    assert err.message == "expected 'if' or '{' after 'else', found the end of the input"


def test_import_needs_a_name(run_error):
    err = syntax(run_error, "import 3")
    assert err.message == "expected a name after 'import', found '3'"


def test_unclosed_string(run_error):
    err = syntax(run_error, 'print("abc)')
    assert "not closed" in err.message
    assert err.column == 7


def test_single_quoted_string_has_hint(run_error):
    err = syntax(run_error, "print('abc')")
    assert "double quotes" in err.hint


def test_bang_has_hint(run_error):
    err = syntax(run_error, "print(!true)")
    assert "not" in err.hint


def test_unknown_character(run_error):
    err = syntax(run_error, "let x = $")
    assert err.message == "unexpected character '$'"
    assert err.column == 9


def test_unknown_escape(run_error):
    err = syntax(run_error, r'print("a\qb")')
    assert "escape" in err.message
    assert err.column == 9


def test_assign_to_literal(run_error):
    err = syntax(run_error, "1 = 2")
    assert "cannot assign" in err.message


def test_assign_to_call(run_error):
    err = syntax(run_error, "fn f() { return 1 }\nf() = 3")
    assert "cannot assign" in err.message and err.line == 2


def test_assign_to_sum(run_error):
    assert "cannot assign" in syntax(run_error, "let a = 1\na + 1 = 3").message


def test_positional_after_keyword(run_error):
    err = syntax(run_error, "print(end=\"\", 2)")
    assert "positional" in err.message


def test_keyword_given_twice(run_error):
    assert "twice" in syntax(run_error, "fn f(a) { return a }\nf(a=1, a=2)").message


def test_duplicate_parameter(run_error):
    assert "'a' appears twice" in syntax(run_error, "fn f(a, a) { }").message


def test_duplicate_let_names(run_error):
    assert "twice" in syntax(run_error, "let a, a = (1, 2)").message


def test_duplicate_struct_field(run_error):
    assert "twice" in syntax(run_error, "struct S { a, a }").message


def test_default_before_non_default(run_error):
    assert "default" in syntax(run_error, "fn f(a=1, b) { }").message


def test_return_outside_function(run_error):
    err = syntax(run_error, "print(1)\nreturn 1")
    assert err.message == "'return' outside a function"
    assert err.line == 2


def test_break_outside_loop(run_error):
    err = syntax(run_error, "break")
    assert err.message == "'break' outside a loop"


def test_continue_outside_loop(run_error):
    assert syntax(run_error, "if true { continue }").message == "'continue' outside a loop"


def test_break_in_function_inside_loop_is_outside_loop(run_error):
    err = syntax(run_error, "for i in range(3) {\n  let f = fn() { break }\n}")
    assert err.message == "'break' outside a loop"
    assert err.line == 2


def test_syntax_error_stops_before_anything_runs(run_error):
    # a program with a syntax error prints nothing, even from lines above it
    import io
    import dsl
    out = io.StringIO()
    with pytest.raises(dsl.DgError):
        dsl.Interpreter(stdout=out).run("print(1)\nlet = 2")
    assert out.getvalue() == ""


def test_fstring_unclosed_field(run_error):
    err = syntax(run_error, 'let x = 1\nprint(f"{x")')
    assert "never closed" in err.message
    assert err.line == 2


def test_fstring_single_close_brace(run_error):
    assert "}}" in syntax(run_error, 'print(f"a } b")').message


def test_fstring_empty_field(run_error):
    assert "empty" in syntax(run_error, 'print(f"{}")').message


def test_fstring_bad_expression_points_into_string(run_error):
    err = syntax(run_error, 'let a = 1\nprint(f"value {a +}")')
    assert err.line == 2
    assert err.column == 19          # the '}' after '+', inside the f-string
    assert "after '+'" in err.message


@pytest.mark.parametrize("src", [
    "let", "fn", "fn f(", "fn f(a", "fn f(a)", "struct S {", "if", "while true", "for x in",
    "let x = [1, 2", "let m = {\"a\": 1", "let y = f(", "x.", "(", "[", "{", "let t = (1,",
    "import nn as", "return", "fn(x) =>", "a[1:", "let x = not", "x +=", "print(1 +\n",
])
def test_incomplete_inputs_are_syntax_errors_in_words(run_error, src):
    syntax(run_error, src)


@pytest.mark.parametrize("src", [
    "let 3 = 4", "fn 3() {}", "struct 3 {}", "for 3 in x {}", "x = = 1", "print(1 2)", ") (",
    "let x = 1 +* 2", "let x = @", "let x = [1, 2,, 3]", "if { }", "while { }", "a b c",
    "let x = fn(1) => 2", "let x = {:}", "print(x=)", "1..2", "let x = 1 ++",
])
def test_malformed_inputs_are_syntax_errors_in_words(run_error, src):
    syntax(run_error, src)


def test_brace_on_next_line_says_where_it_goes(run_error):
    err = syntax(run_error, "let x = 1\nif x > 0\n{\n  print(1)\n}")
    assert err.message == "expected '{' after '0', found a line break"
    assert (err.line, err.column) == (2, 9)
    assert "same line" in err.hint
