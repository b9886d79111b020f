"""help(x) and :doc, "did you mean ...", and REPL errors coloured like the input."""

import io

import pytest

import dsl
from dsl.highlight import DgLexer, error_tokens, paint_error
from dsl.repl import Repl
from pygments.token import Comment, Generic, Keyword, Name


def run(src):
    """What a program prints."""
    out = io.StringIO()
    dsl.Interpreter(stdout=out).run(src)
    return out.getvalue()


def failure(src):
    """The error a program stops with."""
    with pytest.raises(dsl.DgError) as info:
        dsl.Interpreter(stdout=io.StringIO()).run(src)
    return info.value


# ---------------------------------------------------------------- help
def test_help_of_a_builtin_prints_its_docstring_with_examples_indented():
    text = run("help(softmax)")
    assert text.startswith("softmax(x, axis=-1): ")
    assert "Differentiable: yes" in text
    assert "\n    >>> softmax(" in text


def test_help_of_a_user_function_shows_its_signature_and_the_comment_above_it():
    text = run('# The squared distance between a and b.\n# Works on tensors too.\nfn dist2(a, b=0.0) {\n'
               '    return sum((a - b) ** 2)\n}\nhelp(dist2)')
    assert text == "fn dist2(a, b=0.0)\nThe squared distance between a and b.\nWorks on tensors too.\n"


def test_help_of_a_struct_lists_its_fields_and_comment():
    assert run("# A dense layer.\nstruct Linear { w, b }\nhelp(Linear)") == "struct Linear { w, b }\nA dense layer.\n"
    assert run("struct P { x, y }\nhelp(P(1, 2))") == "struct P { x, y }\n"


def test_help_of_a_stdlib_function_and_module():
    text = run("import nn\nhelp(nn.linear)")
    assert text.startswith('fn linear(n_in, n_out, init="he", dtype="float64")\nA Linear layer')
    module = run("import optim\nhelp(optim)")
    assert module.startswith("module optim\noptim: gradient-descent optimizers")
    assert "adam_init" in module


def test_help_alone_lists_every_builtin_by_section():
    text = run("help()")
    for name in dsl.Interpreter().builtins:
        assert f" {name}," in text or f" {name}\n" in text, name


def test_help_of_a_plain_value_says_what_help_is_for():
    assert "help describes builtins" in run("help(3)")
    assert failure("help(1, 2)").kind == "type"


def test_the_doc_command_prints_what_help_prints():
    out, err = io.StringIO(), io.StringIO()
    repl = Repl(dsl.Interpreter(stdout=out), out=out, err=err)
    repl.execute(":doc grad")
    repl.execute("# Twice x.\nfn double(x) { return 2 * x }")
    repl.execute(":doc double")
    repl.execute(":doc")
    text = out.getvalue()
    assert text.startswith("grad(f, argnums=0, has_aux=false): ")
    assert "fn double(x)\nTwice x.\n" in text
    assert "usage: :doc NAME" in err.getvalue()


# ---------------------------------------------------------------- did you mean
@pytest.mark.parametrize("src,hint", [
    ("print(sofmax([1.0, 2.0]))", "did you mean 'softmax'?"),
    ("let learning_rate = 0.1\nprint(learning_rat)", "did you mean 'learning_rate'?"),
    ("fn f(alpha) { return alpah }\nf(1.0)", "did you mean 'alpha'?"),
    ("let t = zeros((2, 3))\nprint(t.shape)", "did you mean shape(t)?"),
    ("let m = {\"a\": ones(2)}\nprint(m[\"a\"].size)", 'did you mean size(m["a"])?'),
    ("struct L { weight, b }\nlet l = L(1.0, 2.0)\nprint(l.wieght)", "did you mean '.weight'?"),
    ("import nn\nnn.lineer(2, 3)", "did you mean 'linear'?"),
])
def test_a_misspelled_name_or_field_gets_a_suggestion(src, hint):
    err = failure(src)
    assert err.hint == hint
    assert f"= help: {hint}" in str(err)


def test_no_suggestion_when_nothing_is_close():
    assert failure("print(qqqqzzzz)").hint is None
    assert failure("struct L { w }\nprint(L(1.0).zzzzzz)").hint is None


def test_dg_check_suggests_too():
    [err] = dsl.Interpreter().check("fn f(momentum) { return momentun * 2 }", "<check>")
    assert err.hint == "did you mean 'momentum'?"


# ---------------------------------------------------------------- coloured errors
def test_error_source_lines_are_lexed_as_the_input_is():
    err = str(failure("let x = 1\nlet y = x + \"a\""))
    tokens = list(error_tokens(err, DgLexer()))
    assert tokens[0] == (Generic.Error, "error[type]: ")
    code = [(t, v) for t, v in DgLexer().get_tokens('let y = x + "a"') if v != "\n"]
    start = next(i for i, tv in enumerate(tokens) if tv == code[0])
    assert tokens[start:start + len(code)] == code
    assert (Keyword.Declaration, "let") in tokens
    assert any(t is Generic.Error and v.startswith("^") for t, v in tokens)
    assert "".join(v for _, v in tokens) == err + "\n"


def test_painted_errors_carry_terminal_colours_and_the_same_text():
    err = str(failure("print(sofmax(1.0))"))
    painted = paint_error(err)
    assert "\x1b[" in painted
    import re
    assert re.sub(r"\x1b\[[0-9;]*m", "", painted) == err


def test_the_repl_paints_errors_only_when_asked():
    out, err = io.StringIO(), io.StringIO()
    repl = Repl(dsl.Interpreter(stdout=out), out=out, err=err)
    repl.execute("1 + \"a\"")
    assert "\x1b[" not in err.getvalue()
    repl.paint = paint_error
    repl.execute("1 + \"a\"")
    assert err.getvalue().count("error[type]") == 2 and "\x1b[" in err.getvalue()


def test_colour_follows_the_terminal_and_no_color(monkeypatch):
    from dsl.repl import wants_colour

    class Tty(io.StringIO):
        def isatty(self):
            return True
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert wants_colour(Tty()) and not wants_colour(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not wants_colour(Tty())


def test_builtin_names_in_error_lines_are_marked_builtin():
    tokens = list(error_tokens(str(failure("print(sum(\"a\"))")), DgLexer()))
    assert (Name.Builtin, "sum") in tokens
    assert all(t is not Comment or "|" in v or "-->" in v or "=" in v or not v.strip() for t, v in tokens)
