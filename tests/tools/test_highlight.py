"""The Pygments lexer: registered as `dgl`/`dg-lang`, chosen for *.dg, and sensible tokens."""

import subprocess
import sys
from pathlib import Path

import pygments.lexers
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, String

import dsl
from dsl.highlight import BUILTINS, DgLexer

ROOT = Path(__file__).resolve().parents[2]
HELLO = ROOT / "examples" / "hello.dg"


def pygmentize(*args):
    """Run the `pygmentize` command of this Python environment (or `python -m pygments`)."""
    script = Path(sys.executable).parent / "pygmentize"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "pygments"]
    return subprocess.run(command + list(args), capture_output=True, text=True, timeout=60)


def tokens(text, lexer=None):
    """(token type, text) pairs, whitespace dropped."""
    lexer = lexer or DgLexer()
    return [(t, v) for t, v in lexer.get_tokens(text) if v.strip()]


def test_pygmentize_highlights_an_example_with_the_dgl_alias():
    result = pygmentize("-l", "dgl", "-f", "terminal", str(HELLO))
    assert result.returncode == 0, result.stderr
    assert "\x1b[" in result.stdout                    # colored
    assert "struct" in result.stdout and "norm2" in result.stdout
    raw = pygmentize("-l", "dg-lang", "-f", "raw", str(HELLO))
    assert raw.returncode == 0
    assert "Token.Keyword.Declaration\t'struct'" in raw.stdout
    assert "Token.Name.Builtin\t'grad'" in raw.stdout


def test_dg_files_pick_this_lexer_but_the_builtin_dg_alias_stays_pygments_own():
    assert pygmentize("-N", str(HELLO)).stdout.strip() == "dgl"
    assert type(pygments.lexers.get_lexer_for_filename("model.dg")) is DgLexer
    assert type(pygments.lexers.get_lexer_for_filename("model.dg", HELLO.read_text())) is DgLexer
    assert type(pygments.lexers.get_lexer_by_name("dgl")) is DgLexer
    assert type(pygments.lexers.get_lexer_by_name("dg-lang")) is DgLexer
    assert type(pygments.lexers.get_lexer_by_name("dg")) is not DgLexer     # the unrelated "dg" language


def test_token_types_are_sensible():
    src = ('import nn as n\nstruct Point { x, y }\nfn norm2(p) { return p.x ** 2 + 1e-3 }  # squared\n'
           'let ok = true and not false\nlet s = f"loss {l:.4f} {{x}}" + "a\\n"\nlet g = grad(norm2)(none)\n')
    toks = tokens(src)
    assert (Keyword.Namespace, "import") in toks and (Name.Namespace, "nn") in toks
    assert (Keyword.Declaration, "struct") in toks and (Name.Class, "Point") in toks
    assert (Keyword.Declaration, "fn") in toks and (Name.Function, "norm2") in toks
    assert (Keyword, "return") in toks
    assert (Name.Attribute, "x") in toks
    assert (Operator, "**") in toks and (Number.Integer, "2") in toks and (Number.Float, "1e-3") in toks
    assert (Comment.Single, "# squared") in toks
    assert (Keyword.Constant, "true") in toks and (Keyword.Constant, "none") in toks
    assert (Operator.Word, "and") in toks and (Operator.Word, "not") in toks
    assert (String.Interpol, "{") in toks and (Name, "l") in toks and (String.Interpol, ":.4f") in toks
    assert (String.Double, "{{") in toks                    # a literal brace, not an interpolation
    assert (String.Escape, "\\n") in toks
    assert (Name.Builtin, "grad") in toks
    assert (Name.Variable, "ok") in toks


def test_every_example_and_stdlib_file_lexes_without_error_tokens():
    files = sorted((ROOT / "examples").glob("*.dg")) + sorted((ROOT / "stdlib").glob("*.dg"))
    assert files
    for path in files:
        bad = [v for t, v in DgLexer().get_tokens(path.read_text()) if t in Error]
        assert bad == [], f"{path.name}: {bad}"


def test_builtin_names_match_the_interpreter():
    """The lexer's list is the builtins' documentation's (one declaration): exactly the live names."""
    assert BUILTINS == set(dsl.Interpreter().builtins)
    for name in ("grad", "value_and_grad", "softmax", "tree_map", "print", "ssm_scan"):
        assert name in BUILTINS


def test_pygmentize_lexer_loads_no_numpy():
    """The lexer reads the builtins' names from their documentation, which is plain data."""
    code = "import sys, dsl.highlight; print(len(dsl.highlight.BUILTINS), 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    count, numpy_loaded = out.stdout.split()
    assert int(count) > 150 and numpy_loaded == "False", out.stderr


def test_with_builtins_marks_exactly_the_names_given():
    lexer = DgLexer.with_builtins({"my_builtin"})()
    toks = tokens("my_builtin(grad)", lexer)
    assert toks[0] == (Name.Builtin, "my_builtin")
    assert (Name, "grad") in toks
