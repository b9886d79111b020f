"""Lark rule callbacks that build dsl/frontend/ast.py nodes with spans.

Run inline by the LALR parser (no parse tree is kept). Positions come from
lark's propagated metadata, shifted when parsing an f-string's fragment.
"""

from lark import Token, Transformer

from ..errors import Span, error
from . import ast as A
from .fstrings import split_fstring, unescape


def _nodes(children, kind):
    """Keep the children of a given node class (drops punctuation tokens and None)."""
    return [c for c in children if isinstance(c, kind)]


ASSIGNABLE = (A.Name, A.Field, A.Index)


class ToAst(Transformer):
    """Callbacks named after grammar rules and aliases; each returns an AST node."""

    def __init__(self, parse_fragment):
        super().__init__(visit_tokens=False)
        self.parse_fragment = parse_fragment
        self.source = None
        self.line_offset = 0
        self.col_offset = 0

    # ---------------------------------------------------------- positions
    def span(self, ch):
        """The span covering a rule's children (tokens and already-built nodes)."""
        start = end = None
        for c in ch:
            start = self._edge(c, True)
            if start is not None:
                break
        for c in reversed(ch):
            end = self._edge(c, False)
            if end is not None:
                break
        if start is None:
            return Span(self.source, 1 + self.line_offset, 1 + self.col_offset)
        return Span(self.source, start[0], start[1], end[0], end[1])

    def _edge(self, c, first):
        """(line, column) where child `c` starts, or (end_line, end_column) where it ends."""
        if type(c) is Token:
            if c.line is None:
                return None
            if first:
                line, col = c.line, c.column
            else:
                line, col = c.end_line, c.end_column
            return (line + self.line_offset, col + self.col_offset if line == 1 else col)
        span = getattr(c, "span", None)
        if type(span) is Span:
            return (span.line, span.column) if first else (span.end_line, span.end_column)
        if isinstance(c, (list, tuple)):
            for item in (c if first else reversed(c)):
                s = self._edge(item, first)
                if s is not None:
                    return s
        return None

    def tspan(self, tok):
        """The span of a single token."""
        return self._shift(tok.line, tok.column, tok.end_line, tok.end_column)

    def _shift(self, line, col, end_line, end_col):
        """Move fragment-relative positions into the enclosing source."""
        if line == 1:
            col += self.col_offset
        if end_line == 1:
            end_col += self.col_offset
        return Span(self.source, line + self.line_offset, col, end_line + self.line_offset, end_col)

    def fail(self, message, span):
        """Raise a syntax error at `span`."""
        raise error("syntax", message, span)

    # ---------------------------------------------------------- programs
    def start(self, ch):
        return A.Program(_nodes(ch, A.Stmt), self.source)

    def block(self, ch):
        return A.Block(_nodes(ch, A.Stmt), self.span(ch))

    # ---------------------------------------------------------- statements
    def let_stmt(self, ch):
        names, pattern = self._names(ch[1])
        return A.Let(self.span(ch), [t.value for t in names], ch[3],
                     name_spans=[self.tspan(t) for t in names], pattern=pattern)

    def let_one(self, ch):
        """`let a, = t`: Python's `a, = t`, a tuple of one taken apart."""
        return self.let_stmt([ch[0], [A.Pattern(self.span(ch[1:3]), [ch[1]])], ch[2], ch[4]])

    def name_list(self, ch):
        return [c for c in ch if not (type(c) is Token and c.type == "COMMA")]

    def pattern(self, ch):
        if len(ch) == 1:
            return ch[0]        # a name
        if len(ch) == 4:        # `(a,)` takes a tuple of one apart, as in Python
            return A.Pattern(self.span(ch), [ch[1]])
        items = ch[1]
        return items[0] if len(items) == 1 else A.Pattern(self.span(ch), items)    # `(a)` is `a`

    def _names(self, items):
        """The name tokens of a name list, in order, and the Pattern that nests them (None where
        the list is flat). `let (a, b) = t` is `let a, b = t`, as in Python; `let (a,) = t` takes a
        tuple of one apart."""
        if len(items) == 1 and type(items[0]) is A.Pattern and len(items[0].items) > 1:
            items = items[0].items
        toks, seen = [], set()

        def indexed(items):
            out = []
            for item in items:
                if type(item) is A.Pattern:
                    out.append(A.Pattern(item.span, indexed(item.items)))
                    continue
                if item.value in seen:
                    self.fail(f"the name '{item.value}' appears twice", self.tspan(item))
                seen.add(item.value)
                out.append(len(toks))
                toks.append(item)
            return out
        top = indexed(items)
        nested = any(type(item) is A.Pattern for item in top)
        return toks, (A.Pattern(self.span(items), top) if nested else None)

    def assign(self, ch):
        left, value = ch[0], ch[2]
        # `(x,) = t` takes a tuple of one apart, as in Python: the one target is the tuple itself
        targets = left.items if isinstance(left, A.TupleLit) and len(left.items) != 1 else [left]
        for t in targets:
            self._check_target(t)
        return A.Assign(self.span(ch), targets, value)

    def aug_assign(self, ch):
        target, op, value = ch[0], ch[1], ch[2]
        if type(target) is A.TupleLit:
            self.fail(f"'{op.value}' updates one target, not a tuple of them", target.span)
        self._check_target(target)
        return A.AugAssign(self.span(ch), target, op.value[:-1], value)

    def _check_target(self, t):
        """Only a name, or fields and indices of a name, can be assigned to, or a tuple of
        them, taken apart: `(l, aux), g = value_and_grad(f, has_aux=true)(x)`."""
        if type(t) is A.TupleLit and t.items:
            for item in t.items:
                self._check_target(item)
            return
        root = t
        while isinstance(root, (A.Field, A.Index)):
            root = root.obj
        if not isinstance(root, A.Name) or not isinstance(t, ASSIGNABLE):
            self.fail("cannot assign to this expression (expected a name, a field "
                      "'p.w', or an index 'm[k]')", t.span)

    def expr_stmt(self, ch):
        return A.ExprStmt(self.span(ch), ch[0])

    def fn_decl(self, ch):
        name = ch[1]
        params = ch[3] or []
        fn = A.Lambda(self.span(ch), params, ch[5], name=name.value)
        return A.FnDecl(self.span(ch), name.value, fn)

    def params(self, ch):
        params = _nodes(ch, A.Param)
        seen, defaulted = set(), False
        for p in params:
            if p.name in seen:
                self.fail(f"the parameter '{p.name}' appears twice", p.span)
            seen.add(p.name)
            if p.default is not None:
                defaulted = True
            elif defaulted:
                self.fail(f"the parameter '{p.name}' needs a default, because an earlier one has one", p.span)
        return params

    def param(self, ch):
        return A.Param(ch[0].value, ch[2], self.tspan(ch[0]))

    def return_stmt(self, ch):
        return A.Return(self.span(ch), ch[1])

    def if_stmt(self, ch):
        return A.If(self.span(ch), ch[1], ch[2], ch[4])

    def while_stmt(self, ch):
        return A.While(self.span(ch), ch[1], ch[2])

    def for_stmt(self, ch):
        names, pattern = self._names(ch[1])
        return A.For(self.span(ch), [t.value for t in names], ch[3], ch[4], pattern=pattern)

    def struct_decl(self, ch):
        names = [t for t in ch if isinstance(t, Token) and t.type == "NAME"]
        fields, seen = [], set()
        for t in names[1:]:
            if t.value in seen:
                self.fail(f"the field '{t.value}' appears twice", self.tspan(t))
            seen.add(t.value)
            fields.append(t.value)
        return A.StructDecl(self.span(ch), names[0].value, fields)

    def import_stmt(self, ch):
        module = ch[1].value
        alias = ch[3].value if ch[3] is not None else module
        return A.Import(self.span(ch), module, alias)

    def break_stmt(self, ch):
        return A.Break(self.span(ch))

    def continue_stmt(self, ch):
        return A.Continue(self.span(ch))

    # ---------------------------------------------------------- operators
    def bare_tuple(self, ch):
        return A.TupleLit(self.span(ch), _nodes(ch, A.Expr))

    def or_op(self, ch):
        return A.BoolOp(self.span(ch), "or", ch[0], ch[2])

    def and_op(self, ch):
        return A.BoolOp(self.span(ch), "and", ch[0], ch[2])

    def not_op(self, ch):
        return A.Not(self.span(ch), ch[1])

    def compare(self, ch):
        return A.Compare(self.span(ch), ch[1::2], ch[0::2])

    def comp_op(self, ch):
        return " ".join(t.value for t in ch)      # "not in" is two tokens

    def binop(self, ch):
        return A.BinOp(self.span(ch), ch[1].value, ch[0], ch[2])

    def neg(self, ch):
        operand = ch[1]
        if isinstance(operand, A.Const) and type(operand.value) in (int, float):
            return A.Const(self.span(ch), -operand.value)
        return A.Unary(self.span(ch), "-", operand)

    def pos(self, ch):
        return A.Unary(self.span(ch), "+", ch[1])

    # ---------------------------------------------------------- postfix
    def call(self, ch):
        args, kwargs = [], []
        for a in ch[2] or []:
            if isinstance(a, tuple):
                name, value, span = a
                if any(k == name for k, _ in kwargs):
                    self.fail(f"the keyword argument '{name}' is given twice", span)
                kwargs.append((name, value))
            elif kwargs:
                self.fail("a positional argument cannot follow keyword arguments", a.span)
            else:
                args.append(a)
        return A.Call(self.span(ch), ch[0], args, kwargs)

    def arguments(self, ch):
        return [c for c in ch if isinstance(c, (A.Expr, tuple))]

    def kwarg(self, ch):
        return (ch[0].value, ch[2], self.tspan(ch[0]))

    def index(self, ch):
        return A.Index(self.span(ch), ch[0], ch[2])

    def subscripts(self, ch):
        return [c for c in ch if isinstance(c, (A.Expr, A.Slice))]

    def slice(self, ch):
        parts, current = [], None
        for c in ch:
            if isinstance(c, Token) and c.type == "COLON":
                parts.append(current)
                current = None
            elif isinstance(c, A.Expr):
                current = c
        parts.append(current)
        parts += [None] * (3 - len(parts))
        return A.Slice(parts[0], parts[1], parts[2], self.span(ch))

    def ellipsis(self, ch):
        return A.Slice(None, None, None, self.span(ch), ellipsis=True)

    def field(self, ch):
        return A.Field(self.span(ch), ch[0], ch[2].value)

    # ---------------------------------------------------------- atoms
    def int(self, ch):
        text = ch[0].value.replace("_", "")     # 1_000_000, as Python writes it
        if len(text) > 4300:        # Python's limit on int <-> decimal text (sys.get_int_max_str_digits)
            raise error("limit", f"an int literal may have at most 4300 digits, this one has {len(text)}",
                        self.span(ch))
        return A.Const(self.span(ch), int(text))

    def float(self, ch):
        return A.Const(self.span(ch), float(ch[0].value))

    def string(self, ch):
        tok = ch[0]
        return A.Const(self.span(ch), self._unescape(tok.value[1:-1], tok, 1))

    def _unescape(self, body, tok, skip):
        """Decode escapes, reporting a bad one at its own column."""
        try:
            return unescape(body)
        except ValueError as exc:
            offset = exc.args[0]
            span = self._shift(tok.line, tok.column + skip + offset, tok.line,
                               tok.column + skip + offset + 2)
            self.fail("unknown escape sequence (dg knows \\n \\t \\\" and \\\\)", span)

    def fstring(self, ch):
        tok = ch[0]
        return A.FString(self.span(ch), self._fparts(tok, tok.value[2:-1], 2))

    def _fparts(self, tok, body, skip):
        """The parts of an f-string's body (or of a field's format spec) that starts `skip`
        characters into the token."""
        parts = []
        for kind, text, offset in split_fstring(body, lambda msg, off: self.fail(
                msg, self._shift(tok.line, tok.column + skip + off, tok.line, tok.column + skip + 1 + off))):
            if kind == "text":
                parts.append(self._unescape(text, tok, skip + offset))
            else:
                expr_text, spec, spec_at = text
                expr = self.parse_fragment(self.source, expr_text,
                                           tok.line + self.line_offset,
                                           tok.column + skip + offset + (self.col_offset if tok.line == 1 else 0))
                if spec and "{" in spec:        # Python's fields inside a spec: f"{x:>{width}.2f}"
                    at = tok.column + skip + spec_at
                    spec = A.FString(self._shift(tok.line, at, tok.line, at + len(spec)),
                                     self._fparts(tok, spec, skip + spec_at))
                parts.append(A.FPart(expr, spec))
        return parts

    def name(self, ch):
        return A.Name(self.span(ch), ch[0].value)

    def true(self, ch):
        return A.Const(self.span(ch), True)

    def false(self, ch):
        return A.Const(self.span(ch), False)

    def none(self, ch):
        return A.Const(self.span(ch), None)

    def tuple(self, ch):
        return A.TupleLit(self.span(ch), _nodes(ch, A.Expr))

    def paren(self, ch):
        return ch[1]

    def tensor(self, ch):
        return A.TensorLit(self.span(ch), _nodes(ch, A.Expr))

    def map(self, ch):
        return A.MapLit(self.span(ch), [c for c in ch if isinstance(c, tuple)])

    def entry(self, ch):
        return (ch[0], ch[2])

    def lambda_expr(self, ch):
        return A.Lambda(self.span(ch), ch[2] or [], ch[5])

    def lambda_block(self, ch):
        return A.Lambda(self.span(ch), ch[2] or [], ch[4])
