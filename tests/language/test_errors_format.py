"""SPEC section 7: error kinds, exact locations, the caret, the dg call stack, no Python traceback."""

import io
import sys

import pytest

import dsl
from dsl import cli
from dsl.errors import DgError

# The SPEC's example: an error at model.dg:12:13 inside `loss`, called at model.dg:30:9.
MODEL = "\n".join(
    ["# model.dg"] + ["#"] * 9 +
    ["fn loss(x, w, b) {",                       # line 11
     "    let h = x @ w + b",                     # line 12
     "    return sum(h)",
     "}"] + ["#"] * 15 +
    ["let l = loss(ones((2, 3)), ones((3, 4)), ones((5,)))"]   # line 30
) + "\n"

SPEC_EXAMPLE = """\
error[shape]: cannot add tensors of shapes (2, 4) and (5,)
  --> model.dg:12:13
   |
12 |     let h = x @ w + b
   |             ^^^^^^^^^
   = in loss, called at model.dg:30:9"""


def test_spec_example_format_exactly(run_error):
    assert MODEL.splitlines()[29].startswith("let l = loss(")
    err = run_error(MODEL, "model.dg")
    assert str(err) == SPEC_EXAMPLE


def test_spec_example_from_the_command_line(dg, tmp_path):
    (tmp_path / "model.dg").write_text(MODEL)
    result = dg("run", "model.dg", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.strip() == SPEC_EXAMPLE
    assert "Traceback" not in result.stderr


def test_error_attributes(run_error):
    err = run_error(MODEL, "model.dg")
    assert isinstance(err, DgError)
    assert (err.kind, err.filename, err.line, err.column) == ("shape", "model.dg", 12, 13)
    assert err.message == "cannot add tensors of shapes (2, 4) and (5,)"


def test_single_digit_line_gutter(run_error):
    err = run_error("let x = 1\nlet y = x - \"s\"", "a.dg")
    assert str(err) == ('error[type]: cannot subtract int and string\n'
                        ' --> a.dg:2:9\n'
                        '  |\n'
                        '2 | let y = x - "s"\n'
                        '  |         ^^^^^^^')


def test_caret_spans_the_whole_call(run_error):
    err = run_error("let v = sqrt(\"x\")", "a.dg")
    lines = str(err).splitlines()
    assert lines[3] == "1 | let v = sqrt(\"x\")"
    assert lines[4] == "  |         " + "^" * len('sqrt("x")')


def test_multiline_span_underlines_to_end_of_first_line(run_error):
    err = run_error('let x = (1 +\n   "a")', "a.dg")
    assert (err.line, err.column) == (1, 10)
    assert str(err).splitlines()[4] == "  |          ^^^"


def test_hint_line(run_error):
    err = run_error("y = 1", "a.dg")
    assert str(err).splitlines()[-1] == "  = help: declare it first: let y = ..."


def test_stack_lists_every_call_innermost_first(run_error):
    src = ("fn h(v) {\n    return v - \"a\"\n}\n"
           "fn g(v) { return h(v) * 2 }\n"
           "fn f(v) {\n    let r = g(v)\n    return r\n}\n"
           "f(1.0)\n")
    lines = str(run_error(src, "s.dg")).splitlines()
    assert lines[0] == "error[type]: cannot subtract float and string"
    assert lines[1] == " --> s.dg:2:12"
    assert lines[5:] == ["  = in h, called at s.dg:4:18",
                         "  = in g, called at s.dg:6:13",
                         "  = in f, called at s.dg:9:1"]


def test_stack_through_lambda_and_builtin(run_error):
    src = "let f = fn(x) => x + \"a\"\nlet t = tree_map(f, (1.0,))"
    err = run_error(src, "l.dg")
    assert (err.line, err.column) == (1, 18)
    assert "= in <lambda>, called at l.dg:2:9" in str(err)


def test_error_in_imported_module_points_into_module(tmp_path):
    (tmp_path / "helper.dg").write_text("fn bad(x) {\n  return x[5]\n}\n")
    main = tmp_path / "main.dg"
    main.write_text("import helper\nhelper.bad((1, 2))\n")
    with pytest.raises(DgError) as info:
        dsl.Interpreter(stdout=io.StringIO()).run_file(main)
    err = info.value
    assert err.kind == "index"
    assert err.filename.endswith("helper.dg") and (err.line, err.column) == (2, 10)
    assert f"= in bad, called at {main}:2:1" in str(err)


# ---------------------------------------------------------------- one test per kind, with location
KIND_CASES = [
    ("syntax", "let a = 1 + * 2", 1, 13),
    ("name", "let a = 1\nprint(b)", 2, 7),
    ("name", "let a = 1\nc = 2", 2, 1),
    ("type", 'let a = 1\nlet b = a - "s"', 2, 9),
    ("type", "fn f(a) { return a }\nf(1, 2, 3)", 2, 1),
    ("type", "let n = 5\nn(1)", 2, 1),
    ("shape", "let a = zeros((2, 3))\nlet b = a @ zeros((2, 3))", 2, 9),
    ("shape", "let a = [1.0, 2.0] + [1.0, 2.0, 3.0]", 1, 9),
    ("key", 'let m = {"a": 1}\nprint(m["zz"])', 2, 7),
    ("key", "struct P { x }\nlet p = P(1)\nprint(p.q)", 3, 7),
    ("index", "let t = (1, 2)\nprint(t[2])", 2, 7),
    ("index", "let x = zeros((2, 2))\nprint(x[0, -3])", 2, 7),
    ("value", "let a = 1\nlet b = a // 0", 2, 9),
    ("value", "let a, b = (1, 2, 3)", 1, 1),
    ("grad", "let g = grad(fn(x) => [x, x])\nlet v = g(1.0)", 2, 9),
    ("grad", "let g = grad(fn(x) => x * 2.0)\nlet v = g(3)", 2, 9),
    ("numerics", "let g = grad(fn(x) => sqrt(x))\nlet v = g(0.0)", 1, 23),
    ("limit", "fn f(n) { return f(n) }\nf(1)", 1, 18),
    ("import", "let a = 1\nimport no_such_module_here", 2, 1),
    ("user", 'let a = 1\nerror("stop here")', 2, 1),
    ("user", 'let a = 1\nassert(a > 1, "a is too small")', 2, 1),
]


@pytest.mark.parametrize("kind, src, line, column", KIND_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(KIND_CASES)])
def test_error_kind_and_location(run_error, kind, src, line, column):
    err = run_error(src, "k.dg")
    assert err.kind == kind, str(err)
    assert (err.filename, err.line, err.column) == ("k.dg", line, column), str(err)
    text = str(err)
    assert text.startswith(f"error[{kind}]: ")
    assert f" --> k.dg:{line}:{column}" in text
    assert "Traceback" not in text


def test_every_kind_has_a_subclass():
    from dsl.errors import BY_KIND, error
    for kind in ("syntax", "name", "type", "shape", "key", "index", "value", "grad", "numerics",
                 "limit", "import", "user"):
        e = error(kind, "m")
        assert isinstance(e, DgError) and e.kind == kind and type(e) is BY_KIND[kind]


def test_user_error_message_is_the_string(run_error):
    assert run_error('error("exact words")').message == "exact words"


def test_assert_default_message(run_error):
    err = run_error("assert(false)")
    assert err.kind == "user" and err.message


def test_step_limit_is_limit_error_with_location(run_error):
    err = run_error("let i = 0\nwhile true { i += 1 }", "l.dg", max_steps=5000)
    assert err.kind == "limit"
    assert (err.line, err.column) == (2, 7)


def test_timeout_is_limit_error(run_error):
    err = run_error("let i = 0\nwhile true { i += 1 }", "l.dg", timeout=0.2)
    assert err.kind == "limit" and err.line == 2


def test_deep_recursion_stack_is_folded(run_error):
    err = run_error("fn f(n) { return f(n + 1) }\nf(0)", "r.dg", max_depth=100)
    text = str(err)
    assert err.kind == "limit"
    assert len(text.splitlines()) < 30
    assert "= in f, called at r.dg:2:1" in text


def test_error_inside_fstring_field_points_at_field(run_error):
    err = run_error('let t = (1, 2)\nprint(f"value {t[7]}")', "f.dg")
    assert err.kind == "index"
    assert (err.line, err.column) == (2, 16)


def test_errors_from_python_are_settled_and_printable():
    interp = dsl.Interpreter(stdout=io.StringIO())
    interp.run("fn f(x) { return x + \"s\" }")
    with pytest.raises(DgError) as info:
        interp.run("f(1)", "call.dg")
    assert "= in f, called at call.dg:1:1" in str(info.value)


# ---------------------------------------------------------------- the CLI prints errors, never tracebacks
def test_cli_reports_error_on_stderr_with_exit_1(dg, tmp_path):
    (tmp_path / "bad.dg").write_text('print("before")\nlet m = {"a": 1}\nprint(m["b"])\nprint("after")\n')
    result = dg("run", "bad.dg", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == "before\n"
    assert result.stderr.startswith('error[key]: the map has no key "b"\n --> bad.dg:3:7\n')
    assert "Traceback" not in result.stderr


def test_internal_error_prints_traceback_for_reporting(capsys):
    try:
        raise ZeroDivisionError("a bug in dg")
    except ZeroDivisionError as exc:
        code = cli._report(exc)
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("internal error")
    assert "Traceback" in err and "ZeroDivisionError: a bug in dg" in err


def test_dg_error_report_has_no_traceback(capsys):
    code = cli._report(dsl.errors.error("user", "boom"))
    err = capsys.readouterr().err
    assert code == 1 and err == "error[user]: boom\n"


def test_python_recursion_never_escapes(run_error):
    # deeply nested data structures and expressions end as dg errors, not Python crashes
    err = run_error("fn f(n) { return (f(n + 1),) }\nf(0)", max_depth=3000)
    assert err.kind == "limit"
    assert sys.getrecursionlimit() >= 1000


@pytest.mark.parametrize("src, hint", [
    # a vector meant to scale the rows of a matrix: numpy lines up the last axes
    ("let m = ones((3, 4))\nlet x = ones(3)\nlet y = m * x", "reshape the (3,) tensor to (3, 1)"),
    ("let y = ones((2, 3)) + ones((2, 3, 5))", "reshape the (2, 3) tensor to (2, 3, 1)"),
    ("let y = ones(3) + ones(4)", None),        # nothing lines up: nothing to suggest
])
def test_a_shape_mismatch_of_the_first_axes_says_how_to_line_them_up(run_error, src, hint):
    err = run_error(src)
    assert err.kind == "shape" and (err.hint is None if hint is None else hint in err.hint)


def test_arithmetic_on_a_tuple_says_a_tensor_computes(run_error):
    err = run_error("fn f(x) { return sum(x * x) }\nlet g = grad(f)((1.0, 2.0))")
    assert err.message == "cannot multiply tuple and tuple" and "tensor(t) makes one of t" in err.hint
