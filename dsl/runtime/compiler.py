"""Compilation of expressions: each AST node becomes a Python closure `ev(frame)`.

Variables were resolved to frame slots or Cells beforehand, so a read is an
index, not a lookup. Each closure attaches its span to an error that has
none yet (try blocks cost nothing in CPython 3.11 until something raises).
Statements and functions are compiled in dsl/runtime/statements.py.
"""

import inspect

import numpy as np

from ..base.cells import UNBOUND
from ..base.suggest import call_hint
from ..core import ops, tape
from ..core.format_spec import fstring_text
from ..core.ops import elision
from ..core.ops.core import ndarray
from ..core.ops.elision import UFUNCS as reuse_ops, reuse_left
from ..core.printing import show
from ..core.tape import Box, peek, raw
from ..core.values import Function, StructDef, a_type_name, is_callable_value, type_name
from ..errors import DgError, error, located, source_text
from ..frontend import ast as A
from .field_hints import field_hint
from ..transform.jit.both_ways import both_operands, looking_ahead


# ---------------------------------------------------------------- variables
def compile_read(b, span, ctx):
    """A closure reading binding b in the current function's frame."""
    kind = b.kind
    if kind == "builtin":
        value = b.value
        return lambda f: value
    if kind == "global":
        cell, name, builtin, hint = b.cell, b.name, b.value, b.hint
        ctx.globals_read.add(cell)

        def read_global(f):
            v = cell.v
            if v is UNBOUND:
                if builtin is not None:
                    return builtin
                if ctx.declared(name):
                    raise error("name", f"'{name}' is used before its definition runs", span)
                raise error("name", f"'{name}' is not defined", span, hint=hint)
            return v
        return read_global
    slot = ctx.slot_of(b)
    if b.captured:
        return lambda f: f[slot].v
    return lambda f: f[slot]


# ---------------------------------------------------------------- expressions
def compile_expr(e, ctx):
    """Compile an expression node into a closure."""
    return _EXPR[type(e)](e, ctx)


def _const(e, ctx):
    value = e.value
    return lambda f: value


def _name(e, ctx):
    return compile_read(e.binding, e.span, ctx)


def local_slot(b, ctx):
    """The frame slot of binding b when it is a local that no closure captures (then code reads
    and writes it in the frame directly), else None."""
    if isinstance(b, DgError) or b.kind != "local" or b.captured:
        return None
    return ctx.slot_of(b)


def stored_slot(stmt, ctx):
    """The frame slot a `let` or an assignment of one plain local stores into (then it stores
    there directly), else None."""
    if type(stmt) is A.Let:
        return local_slot(stmt.bindings[0], ctx) if len(stmt.bindings) == 1 and stmt.pattern is None else None
    t = stmt.targets[0]
    return local_slot(t.binding, ctx) if len(stmt.targets) == 1 and type(t) is A.Name else None


def _joined_literal(e, ctx):
    """`a + [x]` or `a + []`: a tensor plus a literal of one entry or none, which broadcasts
    (adding x to every entry, or making an empty tensor) where a Python user means to append.
    Where the other side is a vector of another length, it is an error that says so."""
    lhs, rhs, span = compile_expr(e.left, ctx), compile_expr(e.right, ctx), e.span
    literal_left = type(e.left) is A.TensorLit and len(e.left.items) <= 1

    def ev(f):
        a, b = lhs(f), rhs(f)
        lit, other = (a, b) if literal_left else (b, a)
        lv, ov = peek(lit), peek(other)
        if (type(lv) is ndarray and lv.ndim == 1 and type(ov) is ndarray and ov.ndim == 1
                and ov.shape[0] != lv.shape[0]):
            shown = "[]" if lv.shape[0] == 0 else "[x]"
            what = "a + " + shown if not literal_left else shown + " + a"
            does = ("is an empty tensor" if ov.shape[0] == 0 else "adds x to each of its entries"
                    if lv.shape[0] == 1 else "does not broadcast")
            raise error("shape", f"{what}, with a tensor a of shape {ops.fmt_shape(ov.shape)}, {does}: "
                                 f"+ on tensors adds entry by entry, it does not append", span,
                        hint="to build a sequence, use a tuple (a = a + (x,)) or join tensors "
                             "(cat((a, [x]))); write a + x to add a number to every entry")
        try:
            return ops.add(a, b, span)
        except DgError as exc:
            raise located(exc, span)
    return ev


def _binop(e, ctx):
    fn = ops.BINARY[e.op]
    span = e.span
    left, right = e.left, e.right
    if e.op == "+" and any(type(s) is A.TensorLit and len(s.items) <= 1 for s in (left, right)):
        return _joined_literal(e, ctx)
    r = compile_expr(right, ctx)
    i = local_slot(left.binding, ctx) if type(left) is A.Name else None
    if i is not None:
        j = local_slot(right.binding, ctx) if type(right) is A.Name else None
        if j is not None:
            def ev(f):
                try:
                    return fn(f[i], f[j], span)
                except DgError as exc:
                    raise located(exc, span)
            return ev
        if type(right) is A.Const:
            c = right.value

            def ev(f):
                try:
                    return fn(f[i], c, span)
                except DgError as exc:
                    raise located(exc, span)
            return ev

        def ev(f):
            try:
                return fn(f[i], r(f), span)
            except DgError as exc:
                raise located(exc, span)
        return ev
    lhs = compile_expr(left, ctx)
    if e.op in reuse_ops and type(left) is not A.Name and type(left) is not A.Const:
        op = e.op
        reuse_size = elision.MIN_SIZE

        def ev(f):
            a = lhs(f)      # this local is the only reference to a fresh result: see core/ops/elision.py
            b = r(f)
            try:
                ta = type(a)
                if (ta is ndarray and a.size >= reuse_size) or (ta is Box and type(a.v) is ndarray and
                                                                a.v.size >= reuse_size):
                    out = reuse_left(op, a, b, span)
                    if out is not None:
                        return out
                return fn(a, b, span)
            except DgError as exc:
                raise located(exc, span)
        return ev

    def ev(f):
        try:
            return fn(lhs(f), r(f), span)
        except DgError as exc:
            raise located(exc, span)
    return ev


def _unary(e, ctx):
    fn = ops.neg if e.op == "-" else ops.pos
    x = compile_expr(e.operand, ctx)
    span = e.span

    def ev(f):
        try:
            return fn(x(f), span)
        except DgError as exc:
            raise located(exc, span)
    return ev


def _compare(e, ctx):
    fns = [ops.COMPARE[o] for o in e.ops]
    operands = [compile_expr(o, ctx) for o in e.operands]
    span = e.span
    if len(fns) == 1:
        fn, a, b = fns[0], operands[0], operands[1]

        def ev(f):
            try:
                return fn(a(f), b(f))
            except DgError as exc:
                raise located(exc, span)
            except RecursionError:      # == on values nested deeper than the stack
                raise ctx.limits.too_nested(span) from None
        return ev

    def chain(f):
        try:
            left = operands[0](f)
            for fn, right_ev in zip(fns, operands[1:]):
                right = right_ev(f)
                if not ops.truth(fn(left, right), "a chained comparison"):
                    return False
                left = right
            return True
        except DgError as exc:
            raise located(exc, span)
    return chain


def _boolop(e, ctx):
    a, b = compile_expr(e.left, ctx), compile_expr(e.right, ctx)
    lspan, rspan = e.left.span, e.right.span
    truth, op, services = ops.truth, e.op, ctx.services
    what = f"the operand of '{op}'"

    def operand(ev, f, span):
        try:
            x = ev(f)
            if type(x) is Box:      # a staged operand's guard points at it
                tape.set_span(span)
            return truth(x, what)
        except DgError as exc:
            raise located(exc, span)

    def left(f):
        """The left operand as a bool, or both combined where jit looks ahead at a loop body (a
        staged bool on the left: dsl/transform/jit/both_ways.py)."""
        x = a(f)
        if type(x) is Box:
            both = both_operands(services, op, x, lambda: b(f))
            if both is not None:
                return both
            tape.set_span(lspan)
        try:
            return truth(x, what)
        except DgError as exc:
            raise located(exc, lspan)

    if op == "and":
        def and_(f):
            x = left(f)
            return x if type(x) is Box or not x else operand(b, f, rspan)
        return and_

    def or_(f):
        x = left(f)
        return x if type(x) is Box or x else operand(b, f, rspan)
    return or_


def _not(e, ctx):
    x = compile_expr(e.operand, ctx)
    span = e.operand.span       # a bad operand is pointed at, as for `and` and `or`
    services = ctx.services

    def ev(f):
        v = x(f)
        if type(v) is Box:
            if looking_ahead(services, v) is not None:
                return ops.logical_not(v)       # no guard where jit looks ahead at a loop body
            tape.set_span(span)     # its guard points at the operand
        try:
            return ops.not_(v)
        except DgError as exc:
            raise located(exc, span)
    return ev


def _tuple(e, ctx):
    items = [compile_expr(i, ctx) for i in e.items]
    return lambda f: tuple([i(f) for i in items])


_SHORT = 64         # a bracket literal of at most this many numbers is made directly
_EXACT = 2 ** 53    # ints up to this size are floats exactly


def _tensor(e, ctx):
    items = [compile_expr(i, ctx) for i in e.items]
    spans = [i.span for i in e.items]
    span = e.span

    def ev(f):
        values = [i(f) for i in items]
        if 0 < len(values) <= _SHORT:
            for v in values:
                if type(v) is not float and (type(v) is not int or not -_EXACT <= v <= _EXACT):
                    break
            else:       # numbers only, such as [0.0, 8.0]: what stacking them gives, without its checks
                return np.array(values, dtype=float)
        for v, s in zip(values, spans):
            rv = peek(v)
            t = type(rv)
            if not (t is float or t is int or t is bool or t is ndarray or isinstance(rv, np.generic)):
                # numpy and JAX take a list of pairs ([(1, 0), (0, 1)]) where dg's brackets make tensors
                hint = "use a tuple (a, b, ...) to group values of different kinds"
                if t is tuple:
                    hint = ("rows of a tensor are written [[a, b], [c, d]]; pairs (as conv's padding) "
                            "in a tuple: ((a, b), (c, d))")
                raise error("type", f"a bracket literal [...] holds numbers or tensors, not {a_type_name(rv)}",
                            s, hint=hint)
        if not values:
            return np.zeros((0,))
        try:
            return ops.stack(tuple(values), 0, span)      # stacking only bools keeps them bool
        except DgError as exc:
            if exc.kind == "shape":
                exc.message = "the elements of a bracket literal must all have one shape: " + exc.message
                exc.args = (exc.message,)
                if exc.hint is None:      # reference 3: a ragged literal is an error that suggests a tuple
                    exc.hint = "use a tuple (a, b, ...) to group values of different shapes"
            raise located(exc, span)
    return ev


def _map(e, ctx):
    pairs = [(compile_expr(k, ctx), compile_expr(v, ctx), k.span) for k, v in e.pairs]

    def ev(f):
        out = {}
        for k_ev, v_ev, kspan in pairs:
            k = raw(k_ev(f))
            if type(k) not in (str, int, bool):
                raise error("type", f"map keys are strings, ints or bools, not {type_name(k)}", kspan)
            out[k] = v_ev(f)
        return out
    return ev


def _fstring(e, ctx):
    parts, specs = [], []
    for p in e.parts:
        if isinstance(p, str):
            parts.append((None, p, None))
        else:
            if isinstance(p.spec, A.FString):     # a spec with fields of its own, made on each call
                specs.append((len(parts), _fstring(p.spec, ctx)))
            parts.append((compile_expr(p.expr, ctx), p.spec, p.expr.span))
    span = e.span

    def ev(f):
        now = parts
        if specs:       # a staged value in a spec is read (and guarded): the spec is one string
            now = list(parts)
            for k, spec_ev in specs:
                now[k] = (now[k][0], tape.raw(spec_ev(f)), now[k][2])
        values = []
        for part_ev, text, part_span in now:
            if part_ev is not None:
                try:
                    values.append(part_ev(f))
                except DgError as exc:
                    raise located(exc, part_span)
        if any(type(v) is Box for v in values):     # staged values are formatted when the program runs
            return tape.nondiff("FString", values, {"parts": now, "span": span})
        return fstring_text(now, values, span)
    return ev


def field_failed(exc, o, e, builtins):
    """The error of reading field e.name of o (None: o itself failed), with a hint, located at e."""
    if o is not None and exc.hint is None and exc.kind in ("key", "name", "type"):
        exc.hint = field_hint(o, e.name, source_text(e.obj.span), builtins, e.call)
    return located(exc, e.span)


def _field(e, ctx):
    obj = compile_expr(e.obj, ctx)
    name, span, builtins = e.name, e.span, ctx.services.builtins
    field = ops.field

    def ev(f):
        o = None
        try:
            o = obj(f)
            tape.set_span(span)    # a StructField node recorded here points at this read
            return field(o, name)
        except DgError as exc:
            raise field_failed(exc, o, e, builtins)
    return ev


def compile_sub(s, ctx):
    """A subscript: an expression, or a slice turned into a Python slice of ints."""
    if not isinstance(s, A.Slice):
        return compile_expr(s, ctx)
    if s.ellipsis:
        return lambda f: Ellipsis
    parts = [compile_expr(p, ctx) if p is not None else None for p in (s.lo, s.hi, s.step)]
    span = s.span

    def ev(f):
        vals = [p(f) if p is not None else None for p in parts]
        lo, hi = vals[0], vals[1]
        if type(lo) is Box and type(hi) is Box and vals[2] is None and type(peek(lo)) is int and type(peek(hi)) is int:
            return slice(*vals)     # x[i:i + 3] in a staged loop: structs.item reads rows or guards them
        for k, v in enumerate(vals):
            v = vals[k] = raw(v)
            if type(v) is float and v.is_integer():
                vals[k] = int(v)
            elif v is not None and type(v) is not int:
                raise error("type", f"slice bounds must be ints or none, got {type_name(v)}", span)
        if vals[2] == 0:
            raise error("value", "a slice step cannot be zero", span)
        return slice(*vals)
    return ev


def _index(e, ctx):
    obj = compile_expr(e.obj, ctx)
    subs = [compile_sub(s, ctx) for s in e.subs]
    span = e.span
    item = ops.item
    if len(subs) == 1:
        sub = subs[0]

        def ev1(f):
            try:
                o, k = obj(f), sub(f)
                tape.set_span(span)    # MapLookup/StructField/Index nodes point at this read
                return item(o, (k,))
            except DgError as exc:
                raise located(exc, span)
        return ev1

    def ev(f):
        try:
            o, k = obj(f), tuple([s(f) for s in subs])
            tape.set_span(span)
            return item(o, k)
        except DgError as exc:
            raise located(exc, span)
    return ev


# ---------------------------------------------------------------- calls
def call_value(fn, args, kwargs, span):
    """Call any dg callable, translating a Python TypeError about arguments into words."""
    try:
        return fn(*args, **kwargs)
    except TypeError as exc:
        raise call_error(fn, args, kwargs, exc, span) from None


def call_error(fn, args, kwargs, exc, span):
    """Explain a failed call: not callable, or a wrong number or name of arguments."""
    if not is_callable_value(fn):
        return error("type", f"{a_type_name(fn)} cannot be called", span)
    name = getattr(fn, "name", None) or getattr(fn, "__name__", "function")
    name = name.rstrip("_") or name        # the Python function len_ is dg's len
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return exc
    public = [p for p in sig.parameters.values() if p.name != "span"]
    try:
        sig.bind(*args, **kwargs)
    except TypeError as bad:
        accepted = ", ".join(p.name + ("=" + _show_default(p.default) if p.default is not p.empty else "")
                             for p in public if p.kind not in (p.VAR_KEYWORD,))
        text = str(bad).replace("'", "")
        if "span" in kwargs:
            text = "unexpected keyword argument span"
        return error("type", f"wrong arguments for {name}({accepted}): {text}", span,
                     hint=call_hint(name, [p.name for p in public], args, kwargs))
    if "span" in kwargs:
        return error("type", f"{name}() got an unexpected keyword argument 'span'", span)
    return exc


def _show_default(v):
    """A default value as dg writes it."""
    return show(v, nested=True)


def call_failed(exc, fn, a, kw, span, limits):
    """The error to raise for a call at `span` of fn(*a, **kw) that raised exc."""
    if isinstance(exc, DgError):
        exc.add_call(span)
        return exc
    if isinstance(exc, TypeError):
        return call_error(fn, a, kw, exc, span)
    if isinstance(exc, RecursionError):
        return limits.too_nested(span)
    return exc


def call_at(fn, a, kw, span, limits):
    """fn(*a, **kw) as a call written at `span` makes it: a dg function by its code, anything else
    with the span pointing at the call; its errors that call's."""
    try:
        if type(fn) is Function:
            return fn.code.invoke(fn, a, kw)
        tape.set_span(span)
        return fn(*a, **kw) if kw else fn(*a)
    except (DgError, TypeError, RecursionError) as exc:
        raise call_failed(exc, fn, a, kw or {}, span, limits) from None


def _call(e, ctx):
    fn_ev = compile_expr(e.fn, ctx)
    args = [compile_expr(a, ctx) for a in e.args]
    kwargs = [(k, compile_expr(v, ctx)) for k, v in e.kwargs]
    span = e.span
    state = ctx.limits

    if not kwargs and len(args) == 1:
        a0 = args[0]

        def ev1(f):
            fn = fn_ev(f)
            x = a0(f)
            try:
                if type(fn) is Function:
                    return fn.code.invoke1(fn, x)
                tape.set_span(span)
                return fn(x)
            except (DgError, TypeError, RecursionError) as exc:
                raise call_failed(exc, fn, (x,), {}, span, state) from None
        return ev1

    if not kwargs and len(args) == 2:
        a0, a1 = args

        def ev2(f):
            fn = fn_ev(f)
            x, y = a0(f), a1(f)
            return call_at(fn, (x, y), None, span, state)
        return ev2

    def ev(f):
        fn = fn_ev(f)
        a = tuple([x(f) for x in args])
        return call_at(fn, a, {k: v(f) for k, v in kwargs} if kwargs else None, span, state)
    return ev


def _lambda(e, ctx):
    """A lambda: compiled by the statement compiler, through the context (statements.Ctx)."""
    return ctx.function(e)


_EXPR = {
    A.Const: _const, A.Name: _name, A.BinOp: _binop, A.Unary: _unary, A.Compare: _compare,
    A.BoolOp: _boolop, A.Not: _not, A.TupleLit: _tuple, A.TensorLit: _tensor, A.MapLit: _map,
    A.FString: _fstring, A.Field: _field, A.Index: _index, A.Call: _call, A.Lambda: _lambda,
}

__all__ = ["compile_expr", "compile_read", "compile_sub", "call_value", "StructDef", "Box"]
