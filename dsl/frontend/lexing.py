"""Statement termination: which line breaks end a statement.

The grammar sees a `_NL` token only where a line break ends a statement
(reference section 2). This post-lexer drops the others: breaks inside `( )`,
`[ ]` and map braces, breaks right after an operator, `=`, `,` or `=>`, and
breaks before `else`, so that `}` and `else` may sit on different lines.
"""

from lark import Token

# Tokens after which an expression must follow: a `{` here opens a map, and a
# line break here continues the statement.
EXPECTS_OPERAND = frozenset({
    "PLUS", "MINUS", "MUL_OP", "DSTAR", "COMP_OP", "AND", "OR", "NOT", "ASSIGN",
    "AUG_OP", "COMMA", "ARROW", "LPAR", "LSQB", "DOT", "COLON", "RETURN", "IN",
    "IF", "WHILE",
})

# Line breaks after these continue the statement (reference section 2: after a binary
# operator, `=`, `,` or `=>`, and inside open brackets).
CONTINUE_AFTER = EXPECTS_OPERAND - {"RETURN", "IN", "IF", "WHILE", "COLON"}

# Tokens that can end an expression, or `else`: a `{` after one opens a block.
BLOCK_BEFORE = frozenset({
    "NAME", "INT", "FLOAT", "STRING", "FSTRING", "RPAR", "RSQB", "RBRACE",
    "TRUE", "FALSE", "NONE", "ELSE",
})


# After a code block's `}`, a token that starts a statement on the same line
# begins a new statement (`if c { return 1 } return 2`), as if a line broke.
STARTS_STATEMENT = frozenset({
    "LET", "FN", "RETURN", "IF", "WHILE", "FOR", "STRUCT", "IMPORT", "BREAK", "CONTINUE",
    "NAME", "INT", "FLOAT", "STRING", "FSTRING", "TRUE", "FALSE", "NONE", "NOT",
})


MAX_BRACKETS = 1000     # ( [ { open at once, or - + not in a row; more is a `limit` error, not a crash
PREFIX = frozenset({"MINUS", "PLUS", "NOT"})


class BracketsTooDeep(Exception):
    """Too much nesting read at `token` (the parser reports it as a `limit` error)."""

    def __init__(self, token, what="brackets are nested"):
        super().__init__(token)
        self.token = token
        self.what = what


class Increment(Exception):
    """`x++` or `x--` at the end of a line (C's and JavaScript's step by one): read as the
    operator twice, it would apply to the next statement (`x + +print(x)`)."""

    def __init__(self, token):
        super().__init__(token)
        self.token = token


def _doubled(first, second):
    """Whether two tokens are `++` or `--` written together."""
    return (first is not None and second is not None and first.type == second.type
            and first.type in ("PLUS", "MINUS") and first.line == second.line
            and second.column == first.column + 1)


class StatementBreaks:
    """A lark post-lexer that keeps only the line breaks that end statements."""

    always_accept = ("_NL",)

    def __init__(self):
        self.last = None      # the most recent token handed to the parser
        self.before = None    # the one before it (what an error comes "after")
        self.stack = []       # open brackets: ("group" or "block", the opening token)

    def process(self, stream):
        """Filter the token stream; see the module docstring for the rules."""
        stack = self.stack = []   # "group" for ( [ and map braces, "block" for code braces
        prev = None           # type of the last token passed on
        pending = None        # a line break held back to see whether `else` follows
        closed_block = False  # the previous token was the `}` of a code block
        prefixes = 0          # prefix operators in a row, each nesting the next
        self.last = self.before = None
        for tok in stream:
            kind = tok.type
            if closed_block and kind in STARTS_STATEMENT:
                yield self._pass(Token.new_borrow_pos("_NL", "", tok))
                prev = "_NL"
            closed_block = False
            if kind == "_NL":
                if _doubled(self.before, self.last):
                    raise Increment(self.before)
                if stack and stack[-1][0] == "group":
                    continue
                if prev is None or prev in CONTINUE_AFTER or prev in ("_NL", "SEMI", "LBRACE"):
                    continue
                if pending is None:
                    pending = tok
                continue
            if pending is not None:
                if kind != "ELSE":
                    yield self._pass(pending)
                    prev = "_NL"
                pending = None
            if kind in ("LPAR", "LSQB", "LBRACE") and len(stack) >= MAX_BRACKETS:
                raise BracketsTooDeep(tok)
            if kind in PREFIX and (prev is None or prev in EXPECTS_OPERAND or prev in ("_NL", "SEMI", "LBRACE")):
                prefixes += 1
                if prefixes > MAX_BRACKETS:
                    raise BracketsTooDeep(tok, "prefix operators are nested")
            else:
                prefixes = 0
            if kind in ("LPAR", "LSQB"):
                stack.append(("group", tok))
            elif kind == "LBRACE":
                stack.append(("block" if prev in BLOCK_BEFORE else "group", tok))
            elif kind in ("RPAR", "RSQB", "RBRACE") and stack:
                closed_block = stack.pop()[0] == "block" and kind == "RBRACE"
            yield self._pass(tok)
            prev = kind
        if _doubled(self.before, self.last):
            raise Increment(self.before)
        if pending is not None:
            yield self._pass(pending)

    def open_group(self):
        """The opening token of the innermost `(`, `[` or map `{` still open, or None."""
        return self.stack[-1][1] if self.stack and self.stack[-1][0] == "group" else None

    def _pass(self, tok):
        """Remember `tok` as the latest token given to the parser."""
        self.before, self.last = self.last, tok
        return tok
