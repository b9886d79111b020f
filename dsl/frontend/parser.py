"""Parsing: source text to the typed syntax tree of dsl/frontend/ast.py.

Lark builds the LALR tables (cached) and the inline transformer, so no parse
tree is built and deep nesting costs no recursion. Correct input runs through
the lean loop of dsl/frontend/lalr_driver.py over those same tables; input it rejects
is parsed again by lark itself, whose exceptions are translated into `syntax`
errors in words.
"""


import threading

from lark import Lark
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken, VisitError

from ..base.cycles import gc_paused
from ..base.resources import grammar_path
from ..errors import DgError, Source, Span, error
from .lexing import BracketsTooDeep, Increment, MAX_BRACKETS, StatementBreaks
from .nesting import check_nesting
from .syntax_errors import CONDITIONAL_EXPRESSION, describe_unexpected_token, python_habit_hint
from .transformer import ToAst

_lock = threading.RLock()
_parser = None
_breaks = None
_builder = None
_driver = None


class Reject(Exception):
    """The fast path cannot parse this input (see dsl/frontend/lalr_driver.py): lark's own parser will."""


try:
    from .lalr_driver import Reject as DriverReject     # optional: lark's internals as the driver reads them
except Exception:       # noqa: BLE001 (a lark without the internals the driver reads: no fast path)
    DriverReject = Reject


def _get_parser():
    """Build (once) the cached LALR parser with its post-lexer and transformer."""
    global _parser, _breaks, _builder, _driver
    if _parser is None:
        _breaks = StatementBreaks()
        _builder = ToAst(parse_fragment)
        _parser = Lark(grammar_path().read_text(), parser="lalr", lexer="basic",
                       propagate_positions=False, maybe_placeholders=True,
                       start=["start", "expr"], postlex=_breaks, transformer=_builder,
                       cache=True)
        _driver = make_driver(_parser)
    return _parser


def make_driver(lark):
    """The fast path over `lark`'s tables, or None where this lark's internals are not the ones
    dsl/frontend/lalr_driver.py reads (then lark's own parser does all the work, with the same results)."""
    try:
        from . import lalr_driver      # optional: lark's internals as the driver reads them
        driver = lalr_driver.Driver(lark)
    except Exception:       # noqa: BLE001 (any way the internals differ: an import, an attribute, a shape)
        return None
    return driver


def parse(text, filename="<input>"):
    """Parse a whole program; raise a `syntax` DgError on bad input."""
    source = text if isinstance(text, Source) else Source(filename, text)
    with gc_paused():
        program = _run(source, source.text, "start", 0, 0)
        program.source = source
        check_nesting(program)
    return program


def parse_fragment(source, text, line, column):
    """Parse an expression found inside an f-string at (line, column) of `source`."""
    return _run(source, text, "expr", line - 1, column - 1)


def _run(source, text, start, line_offset, col_offset):
    """Parse `text` from rule `start`, placing spans at the given offsets."""
    with _lock:
        parser = _get_parser()
        saved = (_builder.source, _builder.line_offset, _builder.col_offset)
        # an f-string's fragment is parsed while its program is being parsed: what the post-lexer
        # knows of the program (open brackets, the last tokens) must survive it, for the errors
        saved_breaks = (_breaks.last, _breaks.before, _breaks.stack)
        _builder.source, _builder.line_offset, _builder.col_offset = source, line_offset, col_offset
        try:
            try:
                if _driver is None:
                    raise Reject()
                return _driver.parse(_breaks.process(_driver.tokens(text)), start)
            except (Reject, DriverReject):
                return parser.parse(text, start=start)     # again, for lark's detailed error
        except VisitError as exc:
            raise _unwrap(exc) from None
        except UnexpectedToken as exc:
            raise _token_error(exc, source, text, line_offset, col_offset) from None
        except UnexpectedCharacters as exc:
            raise _char_error(exc, source, text, line_offset, col_offset) from None
        except UnexpectedEOF:
            span = _end_span(source, text, line_offset, col_offset)
            raise error("syntax", "unexpected end of input", span) from None
        except BracketsTooDeep as exc:
            span = _place(source, exc.token.line, exc.token.column, line_offset, col_offset)
            raise error("limit", f"{exc.what} more than {MAX_BRACKETS:,} deep here", span,
                        hint="split the expression into steps with `let`") from None
        except Increment as exc:
            span = _place(source, exc.token.line, exc.token.column, line_offset, col_offset)
            op = exc.token.value
            raise error("syntax", f"dg has no {op}{op} operator", span,
                        hint=f"x {op}= 1 steps x by one") from None
        except RecursionError:
            span = Span(source, 1 + line_offset, 1 + col_offset)
            raise error("limit", "the program is nested too deeply to parse", span) from None
        finally:
            _builder.source, _builder.line_offset, _builder.col_offset = saved
            if line_offset or col_offset or start == "expr":
                _breaks.last, _breaks.before, _breaks.stack = saved_breaks


def is_complete(text):
    """Tell the REPL whether `text` is a whole input (True) or needs more lines (False).

    Invalid input counts as complete, so that its error shows at once.
    """
    try:
        parse(text, "<repl>")
    except DgError as exc:
        return not getattr(exc, "incomplete", False)
    return True


# ------------------------------------------------------------ error helpers
def _unwrap(exc):
    """Return the DgError inside a lark VisitError, or an internal error."""
    orig = exc.orig_exc
    if isinstance(orig, DgError):
        return orig
    return orig


def _place(source, line, column, line_offset, col_offset):
    """Shift a fragment-relative position into the enclosing source."""
    if line == 1:
        column += col_offset
    return Span(source, line + line_offset, column)


def _end_span(source, text, line_offset, col_offset):
    """A span just past the last character of `text`."""
    lines = text.split("\n")
    return _place(source, len(lines), len(lines[-1]) + 1, line_offset, col_offset)


def _token_error(exc, source, text, line_offset, col_offset):
    """Translate lark's UnexpectedToken into a syntax error in words."""
    tok = exc.token
    prev = _breaks.before if _breaks.last is tok else _breaks.last
    if tok.type == "$END":
        if prev is not None and prev.end_line is not None:
            span = _place(source, prev.end_line, prev.end_column, line_offset, col_offset)
        else:
            span = _end_span(source, text, line_offset, col_offset)
    else:
        span = _place(source, tok.line, tok.column, line_offset, col_offset)
        if tok.end_line == tok.line and tok.end_column:
            span.end_column = span.column + (tok.end_column - tok.column)
    expected = _acceptable(exc)
    message = describe_unexpected_token(tok, prev, expected)
    hint = _unclosed_hint(tok) or python_habit_hint(tok, prev, expected)
    if hint is None and tok.type == "_NL" and "LBRACE" in expected:
        hint = "a block's '{' goes on the same line as its 'if', 'while', 'for', 'else' or 'fn'"
    err = error("syntax", message, span, hint=hint)
    err.incomplete = tok.type == "$END"
    return err


def _acceptable(exc):
    """The terminals that could really come next: LALR's merged lookaheads, tried one by one."""
    parser = getattr(exc, "interactive_parser", None)
    if parser is None:
        return exc.expected
    return parser.accepts() or exc.expected


def _unclosed_hint(tok):
    """Point at a bracket left open on an earlier line, the usual cause of a later error."""
    if tok.type == "$END" and _breaks.stack:
        opened = _breaks.stack[-1][1]
        return f"the '{opened.value}' at line {opened.line}, column {opened.column} is never closed"
    opened = _breaks.open_group()
    if opened is None or tok.type == "$END" or tok.line is None or opened.line >= tok.line:
        return None
    return f"the '{opened.value}' at line {opened.line}, column {opened.column} is still open here"


def _char_error(exc, source, text, line_offset, col_offset):
    """Translate lark's UnexpectedCharacters (a character no token starts with)."""
    span = _place(source, exc.line, exc.column, line_offset, col_offset)
    char = text[exc.pos_in_stream] if exc.pos_in_stream < len(text) else ""
    err = error("syntax", "", span)
    err.incomplete = False
    if char == '"' or text[max(0, exc.pos_in_stream - 1):exc.pos_in_stream + 1] == 'f"':
        err.message = "this string is not closed before the end of the line"
        rest = text[exc.pos_in_stream:]
        err.incomplete = "\n" not in rest
    elif char in "!?$`'\\&|~^":
        hint = {"'": 'strings use double quotes: "..."', "!": "use 'not' for negation and '!=' for inequality",
                "&": "'and' joins two bools; logical_and(a, b) joins masks entry by entry",
                "|": "'or' joins two bools; logical_or(a, b) joins masks entry by entry; an anonymous "
                     "function is fn(x) => x + 1.0",
                "?": CONDITIONAL_EXPRESSION,
                "~": "'not' negates a bool; logical_not(m) negates a mask entry by entry",
                "^": "x ** y raises to a power; logical_xor(a, b) is the exclusive or of masks"}.get(char)
        err.message = f"unexpected character '{char}'"
        err.hint = hint
    else:
        err.message = f"unexpected character {char!r}"
    err.args = (err.message,)
    return err
