"""Compilation of statements, blocks, functions and whole programs into closures (where a
statement stores its values is targets.py).

A statement closure returns None to go on, BREAK or CONTINUE inside loops,
or a 1-tuple holding a function's return value. No exception is raised for
ordinary control flow.
"""

from ..base.cells import Cell, UNBOUND
from ..core import ops, tape
from ..core.tape import Box
from ..core.values import Function, StructDef
from ..errors import DgError, error, located, source_text
from ..frontend import ast as A
from ..transform.jit.both_ways import BothWays
from ..transform.jit.frames import declared, exits, snapshot
from ..transform.jit.rolling import ENDED, Roller
from ..transform.jit.row_loops import row_roller, rows_of, walked_call
from .compiler import call_at, compile_expr, compile_read, stored_slot
from .fusion import body_fuses, fusable, fused_body, fused_run
from .targets import Target, compile_assign_one, compile_declare, compile_store, iterate, unpacker

BREAK = object()
CONTINUE = object()
_MISSING = object()
_NONE_RETURN = (None,)


class Ctx:
    """What compiling one function needs: its frame layout and the interpreter's services."""

    def __init__(self, fn, services, top_names=()):
        self.fn = fn                  # resolver.FunctionScope
        self.services = services      # the interpreter (limits, imports, echo)
        self.limits = services.limits
        self.top_names = top_names
        self.globals_read = set()     # the module-level Cells this code (and code nested in it) reads

    def slot_of(self, b):
        """The frame slot holding local or captured binding b in this function."""
        if b.owner is self.fn:
            return b.slot
        return self.fn.free_slot[b]

    def declared(self, name):
        """Whether `name` is declared at the top level of the program being compiled."""
        return name in self.top_names

    def inner(self, fn):
        """A context for a nested function."""
        return Ctx(fn, self.services, self.top_names)

    def function(self, e):
        """A function written inside an expression (a lambda), compiled in this context."""
        return compile_function(e, self)


# ---------------------------------------------------------------- statements
def compile_stmt(s, ctx):
    """Compile one statement into a closure."""
    return _STMT[type(s)](s, ctx)


def _expr_stmt(s, ctx):
    ev = compile_expr(s.expr, ctx)

    def ex(f):
        ev(f)
    return ex


def _declarer(s, span, ctx):
    """A closure store(f, value) for the names a `let` or `for` declares, taking the value apart
    as they are nested (`let (l, aux), g = ...`)."""
    binders = [compile_declare(b, ctx) for b in s.bindings]
    if s.pattern is None:
        return _unpacker(binders, span)

    def parts(pattern):
        return [binders[i] if type(i) is int else taken_apart(i) for i in pattern.items]

    def taken_apart(pattern):       # in parentheses a tuple is taken apart, `(a,)`'s too
        return unpacker(parts(pattern), pattern.span)
    return _unpacker(parts(s.pattern), span)


def _unpacker(binders, span):
    """A closure store(f, value) through one binder, or taking a tuple apart through several."""
    return binders[0] if len(binders) == 1 else unpacker(binders, span)


def _let(s, ctx):
    value = compile_expr(s.value, ctx)
    b = s.bindings[0]
    if type(s.value) is A.Lambda and b.kind == "local" and b.captured and s.pattern is None:
        slot = b.slot

        def let_recursive(f):
            cell = f[slot] = Cell(None)   # the function may call itself through this cell
            cell.v = value(f)
        return let_recursive
    slot = stored_slot(s, ctx)
    if slot is not None:        # the common case, without the call through a store closure
        def let_local(f):
            f[slot] = value(f)
        return let_local
    store = _declarer(s, s.span, ctx)

    def let(f):
        store(f, value(f))
    return let


def _assign(s, ctx):
    value = compile_expr(s.value, ctx)
    slot = stored_slot(s, ctx)
    if slot is not None:
        def assign_local(f):
            f[slot] = value(f)
        return assign_local
    store = _unpacker([compile_assign_one(t, ctx) for t in s.targets], s.span)

    def assign(f):
        store(f, value(f))
    return assign


def _aug_assign(s, ctx):
    value = compile_expr(s.value, ctx)
    fn = ops.BINARY[s.op]
    span = s.span
    t = s.target
    if isinstance(t, A.Name):
        read = (compile_read(t.binding, t.span, ctx) if not isinstance(t.binding, DgError)
                else compile_store(t.binding, ctx, t.span))
        store = compile_store(t.binding, ctx, t.span)

        def aug_name(f):
            old = read(f)
            try:
                new = fn(old, value(f), span)
            except DgError as exc:
                raise located(exc, span)
            store(f, new)
        return aug_name
    target = Target(t, ctx)

    def aug_path(f):
        objs, keys = target.locate(f)
        old = target.read_last(objs, keys)
        try:
            new = fn(old, value(f), span)
        except DgError as exc:
            raise located(exc, span)
        target.rebuild(f, objs, keys, new)
    return aug_path


def _fn_decl(s, ctx):
    make = compile_function(s.fn, ctx)
    b = s.binding
    if b.kind == "local" and b.captured:
        slot = b.slot

        def define_captured(f):
            cell = f[slot] = Cell(None)   # the function may call itself through this cell
            cell.v = make(f)
        return define_captured
    store = compile_store(b, ctx, s.span)

    def define(f):
        store(f, make(f))
    return define


def _return(s, ctx):
    if s.value is None:
        return lambda f: _NONE_RETURN
    value = compile_expr(s.value, ctx)
    return lambda f: (value(f),)


def _condition(e, ctx, both=None):
    """A closure evaluating an expression as a condition (reference section 3). `both` (an if's
    BothWays): where it takes a staged condition, running both branches, the closure gives BOTH."""
    ev = compile_expr(e, ctx)
    span = e.span
    truth = ops.truth

    def cond(f):
        v = ev(f)
        if v is True or v is False:
            return v
        try:
            if type(v) is Box:      # a staged condition's guard points here
                if both is not None and both(f, v):
                    return BOTH
                tape.set_span(span)
            return truth(v)
        except DgError as exc:
            raise located(exc, span)
    return cond


BOTH = object()     # a condition whose if ran both branches (dsl/transform/jit/both_ways.py)


def _if(s, ctx):
    then = compile_block(s.then, ctx)
    orelse = None if s.orelse is None else \
        compile_block(s.orelse, ctx) if isinstance(s.orelse, A.Block) else compile_stmt(s.orelse, ctx)
    both = BothWays(then, orelse, ctx.services, declared([s.then, s.orelse]))
    cond = _condition(s.cond, ctx, both)
    if orelse is None:
        def if_only(f):
            c = cond(f)
            if c is True:
                return then(f)
            if c is not False:
                return both.signal
        return if_only

    def if_else(f):
        c = cond(f)
        if c is True:
            return then(f)
        if c is False:
            return orelse(f)
        return both.signal
    return if_else


def _while(s, ctx):
    cond = _condition(s.cond, ctx)
    body = compile_block(s.body, ctx)
    limits = ctx.limits
    span = s.cond.span

    def iteration(f):
        """One iteration as jit looks ahead at it (dsl/transform/jit/rolling.py): ENDED where the condition is false."""
        return body(f) if cond(f) else ENDED
    roller = Roller(iteration, None, ctx.services, span.where(), ctx.fn, span, reads=ctx.globals_read,
                    body_locals=declared([s.body]), parts=(cond, body))

    def loop(f):
        roll = roller.wanted()      # while jit stages: after the first iteration, the rest as one step
        start, mark = (snapshot(f), roller.mark()) if roll else (None, None)    # (mark: roll_untaken)
        while cond(f) or (mark is not None and roller.roll_untaken(f, mark) and cond(f)):
            steps = limits.steps + 1        # one step per iteration, in the run's one counter
            limits.steps = steps
            if steps >= limits.next_check:
                limits.check(span)
            r = body(f)
            if r is not None:
                if r is BREAK:
                    break
                if r is not CONTINUE:
                    return r
            if roll:
                roll = roller.roll_while(f, start)     # True: once more, after the next iteration
                start, mark = snapshot(f) if roll else None, None
    return loop


def _for(s, ctx):
    iterable = compile_expr(s.iterable, ctx)
    body = compile_block(s.body, ctx)
    limits = ctx.limits
    span = s.iterable.span
    bind = _declarer(s, span, ctx)
    roller = None if exits(s.body) else Roller(body, bind, ctx.services, span.where(), ctx.fn, span,
                                               reads=ctx.globals_read, body_locals=declared([s.body]))
    call = walked_call(s)       # enumerate(xs), zip(xs, ys): its function and arguments
    form, fn, args = (call[0], compile_expr(call[1], ctx), [compile_expr(a, ctx) for a in call[2]]) if call else (None,) * 3
    rows = None if roller is None or not s.row_slots else row_roller(
        s, body, bind, ctx.services, ctx.fn, ctx.globals_read, form)

    def loop(f):
        if form is not None and rows is not None and roller.interp.staging:
            fv, xs = fn(f), tuple([a(f) for a in args])     # each once: walked by position, or called
            n = min(rows_of(x) for x in xs) if fv is ctx.services.builtins[form] else 0
            if n and rows.wanted(range(n)):
                return rows(f, *xs)
            items = call_at(fv, xs, None, span, limits)
        else:
            items = iterable(f)
        if roller is not None and type(items) is range and roller.wanted(items):
            return roller(f, items)     # it counts each iteration as a step, as below
        if rows is not None and form is None and roller.interp.staging and (n := rows_of(items)) \
                and rows.wanted(range(n)):
            return rows(f, items)
        for item in iterate(items, span):
            steps = limits.steps + 1        # one step per iteration, in the run's one counter
            limits.steps = steps
            if steps >= limits.next_check:
                limits.check(span)
            bind(f, item)
            r = body(f)
            if r is not None:
                if r is BREAK:
                    break
                if r is not CONTINUE:
                    return r
    return loop


def _struct_decl(s, ctx):
    sdef = StructDef(s.name, s.fields, s.span)
    store = compile_store(s.binding, ctx, s.span)

    def define(f):
        store(f, sdef)
    return define


def _import(s, ctx):
    store = compile_store(s.binding, ctx, s.span)
    services, name, span = ctx.services, s.module, s.span
    origin = s.span.source

    def do_import(f):
        store(f, services.import_module(name, span, origin))
    return do_import


def _break(s, ctx):
    return lambda f: BREAK


def _continue(s, ctx):
    return lambda f: CONTINUE


_STMT = {
    A.ExprStmt: _expr_stmt, A.Let: _let, A.Assign: _assign, A.AugAssign: _aug_assign,
    A.FnDecl: _fn_decl, A.Return: _return, A.If: _if, A.While: _while, A.For: _for,
    A.StructDecl: _struct_decl, A.Import: _import, A.Break: _break, A.Continue: _continue,
}


def compile_stmts(stmts, ctx):
    """Compile statements into closures; each run of `let`s and assignments of plain locals
    becomes one, which compiles itself into one Python function once it is hot (dsl/runtime/fusion.py)."""
    out = []
    run, run_closures = [], []
    for s in list(stmts) + [None]:
        if s is not None and fusable(s, ctx):
            run.append(s)
            run_closures.append(compile_stmt(s, ctx))
            continue
        if run:
            out.append(fused_run(run, run_closures, ctx))
            run, run_closures = [], []
        if s is not None:
            out.append(compile_stmt(s, ctx))
    return out


def compile_block(block, ctx):
    """Compile a block; the closure returns the first control signal its statements give."""
    stmts = compile_stmts(block.stmts, ctx)
    if not stmts:
        return lambda f: None
    if len(stmts) == 1:
        return stmts[0]

    def run(f):
        for s in stmts:
            r = s(f)
            if r is not None:
                return r
    return run


# ---------------------------------------------------------------- functions
class FunctionCode:
    """A compiled function body and how to bind arguments into a new frame."""

    __slots__ = ("name", "nparams", "names", "index", "defaults", "pad", "captured_params",
                 "body", "limits", "global_cells", "signature", "span")

    def __init__(self, name, params, defaults, nlocals, captured_params, body, limits, global_cells=(),
                 signature=None, span=None):
        self.name = name
        self.nparams = len(params)
        self.names = [p.name for p in params]
        self.index = {p.name: i for i, p in enumerate(params)}
        self.defaults = defaults
        self.pad = [None] * (nlocals - len(params))
        self.captured_params = captured_params
        self.body = body
        self.limits = limits
        self.global_cells = global_cells    # what jit guards: module-level names the body reads
        self.signature = signature or f"{name}({', '.join(self.names)})"    # as written, for help()
        self.span = span                    # where it is defined (help() shows the comment above)

    def invoke1(self, fn, x):
        """Call with one positional argument (the common case, kept short)."""
        if self.nparams != 1 or self.captured_params:
            return self.invoke(fn, (x,), None)
        frame = [x, *self.pad, *fn.cells]
        limits = self.limits
        limits.depth += 1
        if limits.depth > limits.max_depth:
            limits.depth -= 1
            raise limits.too_deep(None)
        steps = limits.steps + 1    # a call is a step too
        limits.steps = steps
        if steps >= limits.next_check:
            limits.check(None)
        try:
            return self.body(frame)
        except DgError as exc:
            exc.exit_function(self.name)
            raise
        finally:
            limits.depth -= 1

    def invoke(self, fn, args, kwargs):
        """Call with any arguments: bind, make the frame, run the body."""
        if kwargs or len(args) != self.nparams:
            frame = self.bind(fn, args, kwargs)
        else:
            frame = [*args, *self.pad, *fn.cells]
            for i in self.captured_params:
                frame[i] = Cell(frame[i])
        limits = self.limits
        limits.depth += 1
        if limits.depth > limits.max_depth:
            limits.depth -= 1
            raise limits.too_deep(None)
        steps = limits.steps + 1    # a call is a step too
        limits.steps = steps
        if steps >= limits.next_check:
            limits.check(None)
        try:
            return self.body(frame)
        except DgError as exc:
            exc.exit_function(self.name)
            raise
        finally:
            limits.depth -= 1

    def bind(self, fn, args, kwargs):
        """Match positional and keyword arguments to parameters; fill defaults in order."""
        n = self.nparams
        if len(args) > n:
            raise error("type", f"{self.name} takes {n} argument{'s' * (n != 1)} "
                                f"but {len(args)} were given")
        vals = list(args) + [_MISSING] * (n - len(args))
        for key, value in (kwargs or {}).items():
            i = self.index.get(key)
            if i is None:
                raise error("type", f"{self.name} has no parameter named '{key}' "
                                    f"(its parameters are {', '.join(self.names) or 'none'})")
            if vals[i] is not _MISSING:
                raise error("type", f"{self.name} got two values for the parameter '{key}'")
            vals[i] = value
        frame = vals + self.pad + list(fn.cells)
        captured = self.captured_params
        for i in range(n):
            if frame[i] is _MISSING:
                default = self.defaults[i]
                if default is None:
                    missing = [self.names[j] for j in range(n)      # not those a default fills
                               if frame[j] is _MISSING and self.defaults[j] is None]
                    raise error("type", f"{self.name} is missing a value for "
                                        f"{', '.join(repr(m) for m in missing)}")
                try:
                    frame[i] = default(frame)
                except DgError as exc:     # a default runs inside the callee: show its frame
                    exc.exit_function(self.name)
                    raise
            if i in captured:
                frame[i] = Cell(frame[i])
        return frame


def compile_function(lam, ctx):
    """Compile a lambda or fn body; return a closure that makes the Function (capturing cells)."""
    scope = lam.scope
    inner = ctx.inner(scope)
    nlocals = scope.nslots
    scope.layout()
    defaults = [compile_expr(p.default, inner) if p.default is not None else None for p in lam.params]
    captured_params = tuple(i for i, p in enumerate(lam.params) if p.binding.captured)
    body = _compile_body(lam.body, inner)
    ctx.globals_read |= inner.globals_read
    code = FunctionCode(lam.name, lam.params, defaults, nlocals, captured_params, body, ctx.limits,
                        tuple(inner.globals_read), _signature(lam), lam.span)
    sources = [ctx.slot_of(b) for b in scope.free]
    name = lam.name
    if not sources:
        return lambda f: Function(name, code, ())
    return lambda f: Function(name, code, tuple([f[i] for i in sources]))


def _signature(lam):
    """`name(a, b=2.0)`: the parameters with their defaults as the source writes them."""
    params = []
    for p in lam.params:
        text = p.name
        if p.default is not None:
            written = source_text(p.default.span)
            text += f"={written}" if written else "=..."
        params.append(text)
    return f"{lam.name}({', '.join(params)})"


def _compile_body(body, ctx):
    """A function body as one closure returning the function's value."""
    if not isinstance(body, A.Block):
        if body_fuses([], body, ctx):
            return fused_body([], [], body, compile_expr(body, ctx), ctx)
        return compile_expr(body, ctx)
    stmts = body.stmts
    if stmts and isinstance(stmts[-1], A.Return) and stmts[-1].value is not None:
        value = stmts[-1].value
        if body_fuses(stmts[:-1], value, ctx):
            return fused_body(stmts[:-1], [compile_stmt(s, ctx) for s in stmts[:-1]], value,
                              compile_expr(value, ctx), ctx)
        pre = compile_stmts(stmts[:-1], ctx)
        final = compile_expr(value, ctx)
        if not pre:
            return final

        def run_then_return(f):
            for s in pre:
                r = s(f)
                if r is not None:
                    return r[0]
            return final(f)
        return run_then_return
    all_stmts = compile_stmts(stmts, ctx)

    def run(f):
        for s in all_stmts:
            r = s(f)
            if r is not None:
                return r[0]
        return None
    return run


# ---------------------------------------------------------------- programs
def compile_program(program, services, echo=None):
    """Compile a resolved program into run() -> the value of its last expression statement.

    Top-level `fn` and `struct` declarations are made before anything runs,
    so top-level functions may call each other in any order.
    """
    top_names = {n for s in program.stmts for n in _names_of(s)}
    ctx = Ctx(program.scope, services, top_names)
    size = program.scope.layout()
    hoisted, rest = [], []
    last = [None]
    for s in program.stmts:
        if isinstance(s, (A.FnDecl, A.StructDecl)):
            hoisted.append(compile_stmt(s, ctx))
        elif isinstance(s, A.ExprStmt):
            rest.append(_top_expr(s, ctx, last, echo))
        else:
            rest.append(compile_stmt(s, ctx))

    def run():
        frame = [None] * size
        last[0] = None
        for s in hoisted:
            s(frame)
        for s in rest:
            s(frame)
        return last[0]
    return run


def _top_expr(s, ctx, last, echo):
    """A top-level expression statement: remembers its value, and echoes it in the REPL."""
    ev = compile_expr(s.expr, ctx)

    def ex(f):
        v = ev(f)
        last[0] = v
        if echo is not None:
            echo(v)
    return ex


def _names_of(s):
    """Names a top-level statement declares."""
    if isinstance(s, A.Let):
        return s.names
    if isinstance(s, (A.FnDecl, A.StructDecl)):
        return [s.name]
    if isinstance(s, A.Import):
        return [s.alias]
    return []


__all__ = ["compile_program", "compile_function", "compile_block", "FunctionCode", "BREAK", "CONTINUE", "UNBOUND"]
