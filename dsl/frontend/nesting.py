"""How deeply a program may nest: a `limit` error instead of a crash.

The resolver, the compiler and the compiled closures recurse once per level
of the syntax tree, so a program nested thousands of levels deep (10,000
unary minus signs, a 50,000-term sum written out, lambdas in lambdas)
would exhaust Python's stack. The parser checks every tree once, without
recursion, and refuses one deeper than MAX_NESTING with the location of the
deepest node. (Brackets are counted as they are read, in dsl/frontend/lexing.py.)
"""

from dataclasses import is_dataclass

from ..errors import error
from . import ast

MAX_NESTING = 2000      # levels of the syntax tree; far beyond any program written by hand

NODE_TYPES = frozenset(c for c in vars(ast).values() if isinstance(c, type) and is_dataclass(c))


def check_nesting(program, limit=MAX_NESTING):
    """Raise a `limit` error at the first node nested more than `limit` levels deep."""
    nodes = NODE_TYPES
    stack = [(program, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        if depth > limit:
            raise error("limit", f"the program nests more than {limit:,} levels deep "
                                 "(expressions inside expressions, or blocks inside blocks)",
                        getattr(node, "span", None),
                        hint="split the expression into steps with `let`")
        depth += 1
        # A node's children sit in its fields: directly, in lists, or in pairs inside lists.
        for value in vars(node).values():
            kind = type(value)
            if kind in nodes:
                push((value, depth))
            elif kind is list or kind is tuple:
                for item in value:
                    if type(item) in nodes:
                        push((item, depth))
                    elif type(item) is tuple:
                        for x in item:
                            if type(x) in nodes:
                                push((x, depth))
