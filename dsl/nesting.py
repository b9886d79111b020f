"""How deeply a program may nest: a `limit` error instead of a crash.

The resolver, the compiler and the compiled closures recurse once per level
of the syntax tree, so a program nested thousands of levels deep (10,000
unary minus signs, a 50,000-term sum written out, lambdas in lambdas)
would exhaust Python's stack. The parser checks every tree once, without
recursion, and refuses one deeper than MAX_NESTING with the location of the
deepest node. (Brackets are counted as they are read, in dsl/lexing.py.)
"""

from .errors import error

MAX_NESTING = 2000      # levels of the syntax tree; far beyond any program written by hand


def _children(node):
    """The syntax-tree nodes directly inside `node` (dataclass fields, lists, pairs)."""
    for value in vars(node).values():
        if type(value) is list or type(value) is tuple:
            for item in value:
                if type(item) is tuple:
                    yield from (x for x in item if hasattr(x, "__dataclass_fields__"))
                elif hasattr(item, "__dataclass_fields__"):
                    yield item
        elif hasattr(value, "__dataclass_fields__"):
            yield value


def check_nesting(program, limit=MAX_NESTING):
    """Raise a `limit` error at the first node nested more than `limit` levels deep."""
    stack = [(program, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            raise error("limit", f"the program nests more than {limit:,} levels deep "
                                 "(expressions inside expressions, or blocks inside blocks)",
                        getattr(node, "span", None),
                        hint="split the expression into steps with `let`")
        stack.extend((child, depth + 1) for child in _children(node))
