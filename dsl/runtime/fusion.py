"""Fusion: a hot run of simple statements (or a function body of them) written out as one Python
function.

The closure compiler (compiler.py, statements.py) makes one closure per node, so a loop
body of arithmetic pays a Python call per operator, per name and per statement: two thirds
of the calls of a scalar simulation's loop are the interpreter's, not the operations'. Once
a run of `let`s and assignments to plain locals has run HOT times, `fused_run` compiles it
again into one generated function in which the closures of its expressions are written out
inline: the same operations, called in the same order, with the same try blocks, spans and
error handling (`fused_body` does the same for a function body made of such statements and a
`return`, or a lambda's expression); a node it does not write out (a lambda, a map literal, a comparison) is
called as its closure. The closures stay the definition: each writer below mirrors the body
of the closure of its node kind, named beside it, and a change to one is a change to both.
"""

import numpy as np

from ..core import ops, tape
from ..core.ops import elision
from ..core.ops.elision import UFUNCS as REUSE_OPS, reuse_left
from ..core.tape import Box
from ..core.values import Function
from ..errors import DgError, located
from ..frontend import ast as A
from .compiler import call_failed, compile_expr, field_failed, local_slot, stored_slot

HOT = 8             # runs of a statement run by closures before it is compiled into one function
_MAX_NESTING = 12   # try blocks one expression may nest (Python allows 20 blocks in a function)


def fusable(stmt, ctx):
    """Whether statement `stmt` is a `let` or an assignment of one plain local (what a fused run
    holds: statements that give no control signal and store into the frame directly)."""
    if type(stmt) is A.Let:
        return type(stmt.value) is not A.Lambda and stored_slot(stmt, ctx) is not None
    return type(stmt) is A.Assign and stored_slot(stmt, ctx) is not None


def body_fuses(stmts, value, ctx):
    """Whether a function body of `stmts` then `return value` (a lambda's: no statements) is
    worth a fused_body: its statements are fusable, and it does more than read a name or a
    constant (which one closure does already)."""
    return all(fusable(s, ctx) for s in stmts) and (stmts or type(value) not in (A.Name, A.Const))


def fused_run(stmts, closures, ctx):
    """A statement closure running the fusable statements `stmts` (their closures: `closures`):
    by the closures for its first HOT runs, then by one generated function (which returns None,
    as the statements do)."""
    return fused_body(stmts, closures, None, _returns_none, ctx)


def _returns_none(f):
    """The value of a run of statements: none (they give no control signal)."""
    return None


def fused_body(stmts, closures, value, final, ctx):
    """A function body of fusable statements `stmts` (their closures: `closures`) then `return
    value` (`final`: its closure; value None: a run of statements alone), or a lambda's
    expression alone: by its closures for its first HOT calls, then by one generated function
    returning the value."""
    state = [0, None]

    def body(f):
        fused = state[1]
        if fused is None:
            state[0] += 1
            if state[0] <= HOT:
                for s in closures:
                    s(f)
                return final(f)
            fused = state[1] = _Writer(ctx).function(stmts, value)
        return fused(f)
    return body


class _Writer:
    """Writes one fused function: `lines` of source, and `env`, the values its names stand for."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.lines = []
        self.env = {"DgError": DgError, "located": located, "Box": Box, "ndarray": np.ndarray,
                    "Function": Function, "set_span": tape.set_span, "reuse_left": reuse_left,
                    "field_failed": field_failed, "call_failed": call_failed,
                    "LIMITS": ctx.limits, "BUILTINS": ctx.services.builtins}
        self.count = 0

    def function(self, stmts, value=None):
        """The generated function running `stmts` in frame f, and returning `value` if given."""
        self.lines.append("def run(f):")
        for s in stmts:
            self.lines.append(f"    f[{stored_slot(s, self.ctx)}] = {self.expr(s.value, '    ', 0)}")
        if value is not None:
            self.lines.append(f"    return {self.expr(value, '    ', 0)}")
        exec("\n".join(self.lines), self.env)      # noqa: S102 (source built above from the syntax tree)
        return self.env["run"]

    def bind(self, value, prefix):
        """A name in the generated code for `value` (a span, a function, a constant)."""
        self.count += 1
        name = f"{prefix}{self.count}"
        self.env[name] = value
        return name

    def temp(self):
        """A fresh local of the generated function."""
        self.count += 1
        return f"_v{self.count}"

    def expr(self, e, pad, depth):
        """Write the lines computing e; return an expression for its value that reads nothing a
        later line could change (a local, a frame slot no closure captures, a constant)."""
        writer = _WRITERS.get(type(e))
        if writer is not None and depth < _MAX_NESTING:
            out = writer(self, e, pad, depth)
            if out is not None:
                return out
        t = self.temp()     # what is not written out is called as its closure
        self.lines.append(f"{pad}{t} = {self.bind(compile_expr(e, self.ctx), 'C')}(f)")
        return t

    def located_try(self, pad, span, body):
        """Lines: try the lines `body` writes at pad + 4; a dg error without a place gets `span`."""
        self.lines.append(f"{pad}try:")
        body(pad + "    ")
        self.lines += [f"{pad}except DgError as exc:", f"{pad}    raise located(exc, {span})"]


# ---------------------------------------------------------------- one writer per node kind
def _const(w, e, pad, depth):
    """compiler._const: the value."""
    return w.bind(e.value, "K")


def _name(w, e, pad, depth):
    """compiler.compile_read: a frame slot no closure captures, read where it is used (nothing
    but this function's own statements writes it), or a builtin; others by their closure."""
    b = e.binding
    if isinstance(b, DgError):
        return None
    if b.kind == "builtin":
        return w.bind(b.value, "K")
    slot = local_slot(b, w.ctx)
    return None if slot is None else f"f[{slot}]"


def _binop(w, e, pad, depth):
    """compiler._binop: the operator's function inside a located try; the reusing variant when
    the left operand is a fresh value (held by one local, as elision.reuse_left counts)."""
    fn, span = w.bind(ops.BINARY[e.op], "F"), w.bind(e.span, "S")
    out = w.temp()
    left_plain = type(e.left) is A.Name or type(e.left) is A.Const
    if e.op in REUSE_OPS and not left_plain:
        a = w.expr(e.left, pad, depth + 1)
        b = w.expr(e.right, pad, depth + 1)
        size, op = elision.MIN_SIZE, repr(e.op)

        def body(p):
            w.lines += [f"{p}_ta = type({a})",
                        f"{p}if (_ta is ndarray and {a}.size >= {size}) or (_ta is Box and type({a}.v) is ndarray "
                        f"and {a}.v.size >= {size}):",
                        f"{p}    {out} = reuse_left({op}, {a}, {b}, {span})",
                        f"{p}    if {out} is None:",
                        f"{p}        {out} = {fn}({a}, {b}, {span})",
                        f"{p}else:",
                        f"{p}    {out} = {fn}({a}, {b}, {span})"]
        w.located_try(pad, span, body)
        _drop(w, pad, a, b)
        return out

    def body(p):
        a = w.expr(e.left, p, depth + 1)
        b = w.expr(e.right, p, depth + 1)
        w.lines.append(f"{p}{out} = {fn}({a}, {b}, {span})")
        _drop(w, p, a, b)
    w.located_try(pad, span, body)
    return out


def _unary(w, e, pad, depth):
    """compiler._unary: -x or +x inside a located try."""
    fn, span = w.bind(ops.neg if e.op == "-" else ops.pos, "F"), w.bind(e.span, "S")
    out = w.temp()

    def body(p):
        x = w.expr(e.operand, p, depth + 1)
        w.lines.append(f"{p}{out} = {fn}({x}, {span})")
        _drop(w, p, x)
    w.located_try(pad, span, body)
    return out


def _field(w, e, pad, depth):
    """compiler._field: read the object, point the span at this read, read the field; an error
    gets field_failed's hint."""
    span, node, name = w.bind(e.span, "S"), w.bind(e, "E"), w.bind(e.name, "K")
    o, out = w.temp(), w.temp()
    w.lines += [f"{pad}{o} = None", f"{pad}try:"]
    value = w.expr(e.obj, pad + "    ", depth + 1)
    w.lines += [f"{pad}    {o} = {value}", f"{pad}    set_span({span})",
                f"{pad}    {out} = {w.bind(ops.field, 'F')}({o}, {name})",
                f"{pad}except DgError as exc:", f"{pad}    raise field_failed(exc, {o}, {node}, BUILTINS)",
                f"{pad}{o} = None"]
    return out


def _index(w, e, pad, depth):
    """compiler._index with one subscript that is not a slice: object, subscript, span, item."""
    if len(e.subs) != 1 or isinstance(e.subs[0], A.Slice):
        return None
    span, out = w.bind(e.span, "S"), w.temp()

    def body(p):
        o = w.expr(e.obj, p, depth + 1)
        k = w.expr(e.subs[0], p, depth + 1)
        w.lines += [f"{p}set_span({span})", f"{p}{out} = {w.bind(ops.item, 'F')}({o}, ({k},))"]
        _drop(w, p, o, k)
    w.located_try(pad, span, body)
    return out


def _call(w, e, pad, depth):
    """compiler._call without keywords: the function and the arguments first, then the call, a
    dg function by its code, anything else with the span pointing here; errors by call_failed."""
    if e.kwargs:
        return None
    span = w.bind(e.span, "S")
    fn = w.expr(e.fn, pad, depth + 1)
    args = [w.expr(a, pad, depth + 1) for a in e.args]
    out = w.temp()
    listed = "(" + "".join(f"{a}, " for a in args) + ")"
    plain = ", ".join(args)
    invoke = (f"{fn}.code.invoke1({fn}, {args[0]})" if len(args) == 1 else f"{fn}.code.invoke({fn}, {listed}, None)")
    w.lines += [f"{pad}try:",
                f"{pad}    if type({fn}) is Function:",
                f"{pad}        {out} = {invoke}",
                f"{pad}    else:",
                f"{pad}        set_span({span})",
                f"{pad}        {out} = {fn}({plain})",
                f"{pad}except (DgError, TypeError, RecursionError) as exc:",
                f"{pad}    raise call_failed(exc, {fn}, {listed}, {{}}, {span}, LIMITS) from None"]
    _drop(w, pad, fn, *args)
    return out


def _drop(w, pad, *values):
    """Let go of the temporaries among `values` once used, as a closure's frame would."""
    temps = [v for v in values if v.startswith("_v")]
    if temps:
        w.lines.append(f"{pad}{' = '.join(temps)} = None")


_WRITERS = {A.Const: _const, A.Name: _name, A.BinOp: _binop, A.Unary: _unary, A.Field: _field,
            A.Index: _index, A.Call: _call}
