"""The dg syntax tree: typed dataclass nodes, each with the span it came from.

The parser builds these from lark trees; the resolver annotates Name nodes
and declarations with their bindings; the compiler turns them into closures.
"""

from dataclasses import dataclass, field
from typing import Any, Optional

from ..errors import Span


# ---------------------------------------------------------------- expressions
@dataclass(eq=False)
class Expr:
    """Base of every expression node."""
    span: Span


@dataclass(eq=False)
class Const(Expr):
    """A literal number, string, bool or none."""
    value: Any


@dataclass(eq=False)
class FString(Expr):
    """An f-string: literal text and formatted expression parts, in order."""
    parts: list          # str, or FPart

    def fields(self):
        """The expressions inside, in order: each field's, and a spec's own f-string after it."""
        for p in self.parts:
            if isinstance(p, FPart):
                yield p.expr
                if isinstance(p.spec, FString):
                    yield p.spec


@dataclass(eq=False)
class FPart:
    """One `{expr:spec}` piece of an f-string."""
    expr: Expr
    spec: Optional[object]  # a str; None: the value as shown inside a container (f"{x=}" quotes a
                            # string); an FString: a spec with fields of its own (f"{x:>{width}}")


@dataclass(eq=False)
class Name(Expr):
    """A variable read; `binding` is set by the resolver."""
    id: str
    binding: Any = None


@dataclass(eq=False)
class TupleLit(Expr):
    """`(a, b)`."""
    items: list


@dataclass(eq=False)
class TensorLit(Expr):
    """`[a, b]`: stacks numbers or tensors of one shape on a new axis."""
    items: list


@dataclass(eq=False)
class MapLit(Expr):
    """`{k: v, ...}`."""
    pairs: list          # (key Expr, value Expr)


@dataclass(eq=False)
class Param:
    """A function parameter with an optional default."""
    name: str
    default: Optional[Expr]
    span: Span
    binding: Any = None


@dataclass(eq=False)
class Lambda(Expr):
    """`fn(a) => e`, `fn(a) { ... }`, and the value of a named `fn` declaration."""
    params: list
    body: Any            # Block or Expr
    name: str = "<lambda>"
    scope: Any = None    # FunctionScope, set by the resolver


@dataclass(eq=False)
class Call(Expr):
    """`f(a, b, k=v)`."""
    fn: Expr
    args: list
    kwargs: list         # (name, Expr)


@dataclass(eq=False)
class Slice:
    """`a:b:c` inside an index; parts may be None. `...` (every axis not named) is a Slice with
    ellipsis set and no parts."""
    lo: Optional[Expr]
    hi: Optional[Expr]
    step: Optional[Expr]
    span: Span
    ellipsis: bool = False


@dataclass(eq=False)
class Index(Expr):
    """`x[i, a:b]`."""
    obj: Expr
    subs: list           # Expr or Slice


@dataclass(eq=False)
class Field(Expr):
    """`x.name`."""
    obj: Expr
    name: str
    call: Any = None     # the Call `x.name(...)` whose function this is (set by the resolver): for hints


@dataclass(eq=False)
class BinOp(Expr):
    """An arithmetic operator: + - * / // % @ **."""
    op: str
    left: Expr
    right: Expr


@dataclass(eq=False)
class Unary(Expr):
    """Unary `-` or `+`."""
    op: str
    operand: Expr


@dataclass(eq=False)
class Compare(Expr):
    """`a < b` or a chain `a < b <= c` (each operand evaluated once)."""
    ops: list
    operands: list


@dataclass(eq=False)
class BoolOp(Expr):
    """`a and b`, `a or b`: short-circuiting, both sides conditions."""
    op: str
    left: Expr
    right: Expr


@dataclass(eq=False)
class Not(Expr):
    """`not a`."""
    operand: Expr


# ---------------------------------------------------------------- statements
@dataclass(eq=False)
class Stmt:
    """Base of every statement node."""
    span: Span


@dataclass(eq=False)
class Block:
    """A braced list of statements with its own scope."""
    stmts: list
    span: Span


@dataclass(eq=False)
class Let(Stmt):
    """`let a = e`, `let a, b = e` or `let (a, b), c = e`."""
    names: list          # str, every name the statement declares, in order
    value: Expr
    bindings: list = field(default_factory=list)
    name_spans: list = field(default_factory=list)
    pattern: Optional["Pattern"] = None     # where names are nested in tuples: how


@dataclass(eq=False)
class Assign(Stmt):
    """`target = e`, or `t1, t2 = e` when there are several targets."""
    targets: list        # Name, Field or Index chains rooted at a Name
    value: Expr


@dataclass(eq=False)
class AugAssign(Stmt):
    """`target op= e`."""
    target: Expr
    op: str              # the arithmetic operator, e.g. '+'
    value: Expr


@dataclass(eq=False)
class FnDecl(Stmt):
    """`fn name(params) { body }`."""
    name: str
    fn: Lambda
    binding: Any = None


@dataclass(eq=False)
class Return(Stmt):
    """`return` or `return e`."""
    value: Optional[Expr]


@dataclass(eq=False)
class If(Stmt):
    """`if c { } else ...`; `orelse` is a Block, an If, or None."""
    cond: Expr
    then: Block
    orelse: Any


@dataclass(eq=False)
class While(Stmt):
    """`while c { }`."""
    cond: Expr
    body: Block


@dataclass(eq=False)
class For(Stmt):
    """`for a in xs { }`, `for a, b in pairs { }` or `for i, (a, b) in enumerate(pairs) { }`."""
    names: list
    iterable: Expr
    body: Block
    bindings: list = field(default_factory=list)
    pattern: Optional["Pattern"] = None     # as Let's
    # frame slots of no name: the tensors a loop walks and the position in them, for jit to stage
    # `for x in xs`, `for i, x in enumerate(xs)` and `for a, b in zip(xs, ys)` as loops over
    # positions (dsl/transform/jit/row_loops.py)
    row_slots: tuple = ()


@dataclass(eq=False)
class Pattern:
    """How a value is taken apart into nested names: `(a, b), c`. Each item is the index of a
    name (in the statement's `names`) or a Pattern, a tuple inside the tuple."""
    span: Span
    items: list


@dataclass(eq=False)
class StructDecl(Stmt):
    """`struct Name { f1, f2 }`."""
    name: str
    fields: list
    binding: Any = None


@dataclass(eq=False)
class Import(Stmt):
    """`import name` or `import name as alias`."""
    module: str
    alias: str
    binding: Any = None


@dataclass(eq=False)
class Break(Stmt):
    """`break`."""


@dataclass(eq=False)
class Continue(Stmt):
    """`continue`."""


@dataclass(eq=False)
class ExprStmt(Stmt):
    """An expression evaluated for its effect (and echoed by the REPL)."""
    expr: Expr


@dataclass(eq=False)
class Program:
    """A parsed source: its statements, its Source, and the resolver's scope."""
    stmts: list
    source: Any
    scope: Any = None
