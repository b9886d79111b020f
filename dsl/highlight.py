"""A Pygments lexer for dg, used by the REPL and by `pygmentize -l dgl`.

Pygments ships an unrelated lexer for the "dg" language with the alias `dg`
and the pattern `*.dg`; built-in lexers win alias lookups, so ours is
registered (entry point `pygments.lexers`) under the aliases `dgl` and
`dg-lang`, and its priority and `analyse_text` make `*.dg` files pick it.
"""

import re

from pygments import format as render
from pygments.formatters import Terminal256Formatter
from pygments.lexer import RegexLexer, bygroups, include, words
from pygments.token import (Comment, Generic, Keyword, Name, Number, Operator, Punctuation, String, Text,
                            Whitespace)

from .runtime.builtins.docs import SECTIONS

KEYWORDS = ("let", "fn", "return", "if", "else", "while", "for", "in", "struct", "import", "as",
            "break", "continue")
CONSTANTS = ("true", "false", "none")
WORD_OPERATORS = ("and", "or", "not")

# The builtins, as their documentation lists them (docs.py: plain data, so pygmentize loads no
# numpy); the REPL passes the live interpreter's names instead (DgLexer.with_builtins).
BUILTINS = frozenset(name for _, names in SECTIONS for name in names)


class DgLexer(RegexLexer):
    """Tokens of the dg language (reference section 2)."""

    name = "dg (differentiable)"
    aliases = ["dgl", "dg-lang"]
    filenames = ["*.dg"]
    mimetypes = ["text/x-dg-lang"]
    priority = 0.5          # above the built-in `dg` lexer's 0, for `*.dg` without content
    builtin_names = BUILTINS

    flags = re.MULTILINE

    tokens = {
        "root": [
            (r"[ \t\r\f]+", Whitespace),
            (r"\n", Whitespace),
            (r"#.*$", Comment.Single),
            (r"(fn)(\s+)([A-Za-z_]\w*)", bygroups(Keyword.Declaration, Whitespace, Name.Function)),
            (r"(struct)(\s+)([A-Za-z_]\w*)", bygroups(Keyword.Declaration, Whitespace, Name.Class)),
            (r"(import)(\s+)([A-Za-z_]\w*)", bygroups(Keyword.Namespace, Whitespace, Name.Namespace)),
            (r"(as)(\s+)([A-Za-z_]\w*)", bygroups(Keyword.Namespace, Whitespace, Name.Namespace)),
            (r"(\.)(\s*)([A-Za-z_]\w*)", bygroups(Punctuation, Whitespace, Name.Attribute)),
            (words(("let", "fn", "struct"), suffix=r"\b"), Keyword.Declaration),
            (words(KEYWORDS, suffix=r"\b"), Keyword),
            (words(CONSTANTS, suffix=r"\b"), Keyword.Constant),
            (words(WORD_OPERATORS, suffix=r"\b"), Operator.Word),
            (r'f"', String.Affix, "fstring"),
            (r'"', String.Double, "string"),
            include("numbers"),
            (r"([A-Za-z_]\w*)(\s*)(=)(?!=)", bygroups(Name.Variable, Whitespace, Operator)),
            (r"[A-Za-z_]\w*", Name),
            (r"\*\*|//|==|!=|<=|>=|=>|[-+*/]=|[-+*/%@<>=]", Operator),
            (r"\.\.\.|[()\[\]{},;:]", Punctuation),
            (r".", Text),
        ],
        "numbers": [
            (r"(\d+(_\d+)*\.(\d+(_\d+)*)?|\.\d+(_\d+)*)([eE][-+]?\d+(_\d+)*)?", Number.Float),
            (r"\d+(_\d+)*[eE][-+]?\d+(_\d+)*", Number.Float),
            (r"\d+(_\d+)*", Number.Integer),
        ],
        "escapes": [
            (r'\\[nt"\\r0]', String.Escape),
            (r"\\.", String.Escape),
        ],
        "string": [
            include("escapes"),
            (r'"', String.Double, "#pop"),
            (r'[^"\\\n]+', String.Double),
            (r"\n", String.Double, "#pop"),     # an unclosed string ends at the line break
        ],
        "fstring": [
            include("escapes"),
            (r"\{\{|\}\}", String.Double),
            (r"\{", String.Interpol, "interpolation"),
            (r'"', String.Affix, "#pop"),
            (r'[^"\\\n{}]+', String.Double),
            (r"\}", String.Double),
            (r"\n", String.Double, "#pop"),
        ],
        "interpolation": [
            (r"\}", String.Interpol, "#pop"),
            (r":[^}\"]*", String.Interpol),     # the format spec, e.g. {l:.4f}
            (r'"', String.Double, "string"),
            include("numbers"),
            (words(CONSTANTS, suffix=r"\b"), Keyword.Constant),
            (words(WORD_OPERATORS, suffix=r"\b"), Operator.Word),
            (r"[A-Za-z_]\w*", Name),
            (r"\*\*|//|==|!=|<=|>=|[-+*/%@<>]", Operator),
            (r"[()\[\],.]", Punctuation),
            (r"[ \t]+", Whitespace),
            (r"\n", Text, "#pop:2"),
            (r".", Text),
        ],
    }

    def get_tokens_unprocessed(self, text, stack=("root",)):
        """Tokens as RegexLexer finds them, with builtin names marked Name.Builtin."""
        builtins = self.builtin_names
        for index, token, value in super().get_tokens_unprocessed(text, stack):
            if token is Name and value in builtins:
                token = Name.Builtin
            yield index, token, value

    @classmethod
    def with_builtins(cls, names):
        """A subclass that marks exactly `names` as builtins (the REPL's live interpreter)."""
        return type(cls.__name__, (cls,), {"builtin_names": frozenset(names)})

    def analyse_text(text):
        """How likely `text` is dg: `fn name(...) {`, `let x =`, `struct Name {` or a grad call."""
        score = 0.0
        if re.search(r"^\s*fn\s+\w+\s*\([^)]*\)\s*\{", text, re.MULTILINE):
            score += 0.4
        if re.search(r"^\s*let\s+\w+(\s*,\s*\w+)*\s*=", text, re.MULTILINE):
            score += 0.3
        if re.search(r"^\s*struct\s+\w+\s*\{", text, re.MULTILINE):
            score += 0.2
        if re.search(r"\b(value_and_grad|grad)\s*\(", text):
            score += 0.1
        return min(score, 1.0)


# ---------------------------------------------------------------- errors, coloured like the input
_SOURCE_LINE = re.compile(r"^( *\d+ \| )(.*)$")
_MARK_LINE = re.compile(r"^( *\| *)([\^~\-]+.*)$")


def error_tokens(text, lexer):
    """(token, text) pairs of a formatted dg error: its source lines lexed as dg input is,
    the header and the caret as errors, the location and call stack as comments."""
    for line in text.split("\n"):
        source, mark = _SOURCE_LINE.match(line), _MARK_LINE.match(line)
        if line.startswith("error["):
            head, sep, rest = line.partition(": ")
            yield Generic.Error, head + sep
            yield Generic.Strong, rest
        elif source:
            yield Comment, source.group(1)
            for token, value in lexer.get_tokens(source.group(2)):
                if value != "\n":
                    yield token, value
        elif mark:
            yield Comment, mark.group(1)
            yield Generic.Error, mark.group(2)
        elif line.lstrip().startswith("= help:"):
            yield Generic.Emph, line
        else:
            yield Comment, line
        yield Whitespace, "\n"


def paint_error(text, builtins=BUILTINS):
    """A formatted dg error with terminal colours (pygments' default style, which is the
    REPL input's), for a terminal."""
    lexer = DgLexer.with_builtins(builtins)()
    return render(error_tokens(text, lexer), Terminal256Formatter(style="default")).rstrip("\n")
