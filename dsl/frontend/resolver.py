"""Name resolution: every name in a program is tied to the binding it means.

Locals get a slot in their function's frame; a local that an inner function
reads is marked captured (the compiler keeps it in a Cell, made afresh by
each `let` and each loop iteration). Top-level names are module globals
(Cells in the module's dict, shared with the REPL and importers). Unknown
names are noted for `dg check` and fail only when they run, as in Python.
"""

from ..base.cells import Cell, UNBOUND
from ..base.suggest import module_attr_hint, name_hint
from ..errors import error
from . import ast as A


class Binding:
    """What a name refers to: a local slot, a module global (Cell), or a builtin."""

    __slots__ = ("name", "kind", "owner", "slot", "captured", "cell", "value", "span", "hint")

    def __init__(self, name, kind, owner=None, slot=None, cell=None, value=None, span=None):
        self.name = name
        self.kind = kind          # "local", "global" or "builtin"
        self.owner = owner        # the FunctionScope of a local
        self.slot = slot
        self.captured = False
        self.cell = cell
        self.value = value
        self.span = span
        self.hint = None          # "did you mean ...", for a name not defined where it was read

    def __repr__(self):
        return f"Binding({self.name}, {self.kind}, slot={self.slot})"


class FunctionScope:
    """The frame layout of one function (or of a module's top-level code)."""

    def __init__(self, parent, name):
        self.parent = parent
        self.name = name
        self.nslots = 0
        self.free = []            # outer bindings this function reads, in order
        self.free_slot = {}       # binding -> slot of its Cell in this frame
        self.params = []
        self.local_names = []     # slot -> the name of its local (for messages)

    def new_local(self, name, span):
        """Allocate a slot for a new local binding."""
        b = Binding(name, "local", owner=self, slot=self.nslots, span=span)
        self.nslots += 1
        self.local_names.append(name)
        return b

    def slot_name(self, j):
        """The name of the variable in frame slot j (a local, or a captured one after them)."""
        if j < len(self.local_names):
            return self.local_names[j]
        return self.free[j - self.nslots].name

    def add_free(self, b):
        """Note that this function reads the outer binding b (through a Cell)."""
        if b not in self.free_slot:
            self.free.append(b)
            self.free_slot[b] = None

    def layout(self):
        """Give the free variables their slots, after the locals."""
        for i, b in enumerate(self.free):
            self.free_slot[b] = self.nslots + i
        return self.nslots + len(self.free)


class Resolver:
    """Walks a Program, filling in bindings; collects static problems for `dg check`."""

    def __init__(self, module_cells, builtins):
        self.cells = module_cells
        self.builtins = builtins
        self.problems = []        # DgErrors found statically
        self.blocks = []          # stack of (dict name -> Binding, FunctionScope)
        self.fn = None
        self.loops = 0
        self.imports = []         # the Import statements seen, for `dg check` to look the modules up
        self.pending = set()      # top-level let/import names whose statement has not been walked yet

    # -- entry ------------------------------------------------------------
    def resolve_program(self, program):
        """Resolve a whole program: hoist its top-level names as globals, then walk it."""
        module_fn = FunctionScope(None, "<module>")
        top = {}
        for stmt in program.stmts:
            for name, span in _declared(stmt):
                top[name] = self._global(name, span)
                if type(stmt) in (A.Let, A.Import):       # fn and struct are hoisted; these run in order
                    self.pending.add(name)
        self.pending -= {n for s in program.stmts if type(s) in (A.FnDecl, A.StructDecl) for n, _ in _declared(s)}
        self.fn = module_fn
        self.blocks = [(top, module_fn)]
        for stmt in program.stmts:
            self.stmt(stmt, top_level=True)
        program.scope = module_fn
        module_fn.layout()
        return program

    def _global(self, name, span=None):
        """The binding of a module-level name (its Cell is created if new)."""
        cell = self.cells.get(name)
        if cell is None:
            cell = self.cells[name] = Cell(UNBOUND)
        # until its `let` runs, a global named like a builtin reads the builtin, as in Python
        return Binding(name, "global", cell=cell, value=self.builtins.get(name), span=span)

    # -- lookups ----------------------------------------------------------
    def lookup(self, name, span, map_key=False, field=None):
        """Find the binding a name refers to at this point (`map_key`: it is a key of a map
        literal, where an undefined name is most likely JavaScript's unquoted key; `field`: the
        attributes read of it and whether the last is called, where an undefined name is most
        likely a Python module's: np.random.normal(...))."""
        for scope, fn in reversed(self.blocks):
            b = scope.get(name)
            if b is not None:
                if b.kind == "local" and b.owner is not self.fn:
                    self._capture(b)
                elif name in self.pending and scope is self.blocks[0][0] and self.fn.parent is None \
                        and b.cell.v is UNBOUND and b.value is None:   # read before its `let` runs
                    self.problems.append(error("name", f"'{name}' is used before its definition runs", span))
                return b
        if name in self.cells and self.cells[name].v is not UNBOUND:
            return Binding(name, "global", cell=self.cells[name])
        if name in self.builtins:
            return Binding(name, "builtin", value=self.builtins[name])
        hint = module_attr_hint(name, *field, self.builtins) if field is not None else None
        hint = hint or self._suggest(name)
        if hint is None and map_key:
            hint = f'a map\'s keys are values: {{"{name}": 1.0}} has a string key (a struct has named fields)'
        self.problems.append(error("name", f"'{name}' is not defined", span, hint=hint))
        b = self._global(name, span)
        b.hint = hint
        return b

    def _suggest(self, name):
        """"did you mean ..." with the names visible here."""
        # a cell a failed statement left unbound (`arcsin` read at the REPL) is no name to suggest
        seen = set(self.builtins) | {n for n, c in self.cells.items() if c.v is not UNBOUND} | set(self.pending)
        for scope, _ in self.blocks:
            seen.update(scope)
        return name_hint(name, seen)

    def _capture(self, b):
        """Route an outer local into every function between here and its owner."""
        b.captured = True
        fn = self.fn
        while fn is not b.owner and fn is not None:
            fn.add_free(b)
            fn = fn.parent

    def declare(self, name, span, top_level=False):
        """Introduce a name in the innermost block."""
        scope, fn = self.blocks[-1]
        if top_level and len(self.blocks) == 1:
            b = scope.get(name) or self._global(name, span)
            self.pending.discard(name)
        else:
            b = fn.new_local(name, span)
        scope[name] = b
        return b

    # -- statements ---------------------------------------------------------
    def block(self, block):
        """Resolve a braced block in a new scope."""
        self.blocks.append(({}, self.fn))
        for s in block.stmts:
            self.stmt(s)
        self.blocks.pop()

    def stmt(self, s, top_level=False):
        """Resolve one statement."""
        t = type(s)
        if t is A.Let and len(s.names) == 1 and type(s.value) is A.Lambda:
            # `let f = fn(n) { ... f(n - 1) }` may recurse, as at the top level and in Python
            s.bindings = [self.declare(s.names[0], s.name_spans[0], top_level)]
            self.expr(s.value)
        elif t is A.Let:
            self.expr(s.value)
            s.bindings = [self.declare(n, sp, top_level) for n, sp in zip(s.names, s.name_spans)]
        elif t is A.Assign:
            self.expr(s.value)
            for target in s.targets:
                self.target(target)
        elif t is A.AugAssign:
            self.expr(s.value)
            self.target(s.target)
        elif t is A.ExprStmt:
            self.expr(s.expr)
        elif t is A.FnDecl:
            s.binding = self.declare(s.name, s.span, top_level)
            self.function(s.fn)
        elif t is A.Return:
            if self.fn.parent is None and self.fn.name == "<module>":
                self.problems.append(error("syntax", "'return' outside a function", s.span))
            if s.value is not None:
                self.expr(s.value)
        elif t is A.If:
            self.expr(s.cond)
            self.block(s.then)
            if isinstance(s.orelse, A.Block):
                self.block(s.orelse)
            elif s.orelse is not None:
                self.stmt(s.orelse)
        elif t is A.While:
            self.expr(s.cond)
            self.loop_body(s.body, [])
        elif t is A.For:
            self.expr(s.iterable)
            walked = _walked(s)     # `for x in xs`, `for i, x in enumerate(xs)`, `for a, b in zip(xs, ys)`
            if walked:
                where = f"(the rows the loop at {s.span.where()} walks)"
                s.row_slots = tuple(self.fn.new_local(where, s.span).slot for _ in range(walked + 1))
            s.bindings = self.loop_body(s.body, s.names, s.span)
        elif t is A.StructDecl:
            s.binding = self.declare(s.name, s.span, top_level)
        elif t is A.Import:
            s.binding = self.declare(s.alias, s.span, top_level)
            self.imports.append(s)
        elif t in (A.Break, A.Continue):
            if self.loops == 0:
                word = "break" if t is A.Break else "continue"
                self.problems.append(error("syntax", f"'{word}' outside a loop", s.span))
        else:
            raise TypeError(f"unknown statement {t.__name__}")

    def loop_body(self, body, names, span=None):
        """Resolve a loop body, declaring the loop variables inside its scope."""
        self.blocks.append(({}, self.fn))
        bindings = [self.declare(n, span) for n in names]
        self.loops += 1
        for s in body.stmts:
            self.stmt(s)
        self.loops -= 1
        self.blocks.pop()
        return bindings

    def target(self, t):
        """Resolve an assignment target: the root name must be assignable from here."""
        if type(t) is A.TupleLit:       # `(a, b), c = ...`: each of them
            for item in t.items:
                self.target(item)
            return
        while isinstance(t, (A.Field, A.Index)):
            if isinstance(t, A.Index):
                for sub in t.subs:
                    self.sub(sub)
            t = t.obj
        b = None
        for scope, fn in reversed(self.blocks):
            b = scope.get(t.id)
            if b is not None:
                break
        if b is None and t.id in self.cells and self.cells[t.id].v is not UNBOUND:
            b = Binding(t.id, "global", cell=self.cells[t.id])
        if b is None:
            msg = f"cannot assign to '{t.id}': it has no 'let'"
            problem = error("name", msg, t.span, hint=f"declare it first: let {t.id} = ...")
        elif b.kind == "global" and self.fn.parent is not None:
            problem = error("name", f"cannot assign to '{t.id}' inside a function: it belongs to the module",
                            t.span, hint="return the new value instead, or pass it in and out")
        elif b.kind == "local" and b.owner is not self.fn:
            problem = error("name", f"cannot assign to '{t.id}': it belongs to an enclosing function",
                            t.span, hint="functions may read outer variables but not rebind them")
        else:
            problem = None
        if problem is not None:
            self.problems.append(problem)
            t.binding = problem
        else:
            t.binding = b

    # -- expressions --------------------------------------------------------
    def function(self, lam):
        """Resolve a function body in a new FunctionScope."""
        outer_fn, outer_blocks, outer_loops = self.fn, self.blocks, self.loops
        fn = FunctionScope(outer_fn, lam.name)
        self.fn, self.loops = fn, 0
        self.blocks = outer_blocks + [({}, fn)]
        for p in lam.params:
            if p.default is not None:
                self.expr(p.default)
            p.binding = self.declare(p.name, p.span)
            fn.params.append(p.binding)
        if isinstance(lam.body, A.Block):
            for s in lam.body.stmts:
                self.stmt(s)
        else:
            self.expr(lam.body)
        lam.scope = fn
        self.fn, self.blocks, self.loops = outer_fn, outer_blocks, outer_loops

    def sub(self, s):
        """Resolve a subscript (an expression or a slice)."""
        if isinstance(s, A.Slice):
            for part in (s.lo, s.hi, s.step):
                if part is not None:
                    self.expr(part)
        else:
            self.expr(s)

    def expr(self, e):
        """Resolve the names inside an expression (iteratively over operator chains)."""
        stack = [e]
        while stack:
            e = stack.pop()
            t = type(e)
            if t is A.Name:
                e.binding = self.lookup(e.id, e.span)
            elif t is A.Const:
                pass
            elif t is A.BinOp or t is A.BoolOp:
                stack.append(e.right)
                stack.append(e.left)
            elif t is A.Unary or t is A.Not:
                stack.append(e.operand)
            elif t is A.Compare:
                stack.extend(reversed(e.operands))
            elif t is A.Call:
                stack.extend(v for _, v in reversed(e.kwargs))
                stack.extend(reversed(e.args))
                stack.append(e.fn)
                if type(e.fn) is A.Field:       # x.reshape((2, 3)): its hint spells the call dg's way
                    e.fn.call = e
            elif t is A.Field:
                base, path = e.obj, [e.name]
                while type(base) is A.Field:
                    base, path = base.obj, [base.name, *path]
                if type(base) is A.Name:        # np.pi, np.random.normal(...): the hint says dg's name
                    base.binding = self.lookup(base.id, base.span, field=(path, e.call is not None))
                else:       # (the fields between hold no names)
                    stack.append(base)
            elif t is A.Index:
                for s in e.subs:
                    self.sub(s)
                stack.append(e.obj)
            elif t is A.TupleLit or t is A.TensorLit:
                stack.extend(reversed(e.items))
            elif t is A.MapLit:
                for k, v in reversed(e.pairs):
                    stack.append(v)
                    if type(k) is A.Name:
                        k.binding = self.lookup(k.id, k.span, map_key=True)
                    else:
                        stack.append(k)
            elif t is A.FString:
                stack.extend(reversed(list(e.fields())))
            elif t is A.Lambda:
                self.function(e)
            else:
                raise TypeError(f"unknown expression {t.__name__}")


def _walked(s):
    """How many tensors a `for` may walk the rows of, by position, as jit stages it: one for `for
    x in xs` and `for i, x in enumerate(xs)`, k for `for a, b in zip(xs, ys)` with k names; else 0."""
    if s.pattern is not None:
        return 0
    if len(s.names) == 1:
        return 1
    it = s.iterable
    if type(it) is A.Call and type(it.fn) is A.Name and not it.kwargs:
        if it.fn.id == "enumerate" and len(s.names) == 2 and len(it.args) == 1:
            return 1
        if it.fn.id == "zip" and len(s.names) == len(it.args) >= 2:
            return len(it.args)
    return 0


def _declared(stmt):
    """Names a top-level statement declares, with spans (hoisted as globals)."""
    t = type(stmt)
    if t is A.Let:
        return list(zip(stmt.names, stmt.name_spans))
    if t is A.FnDecl or t is A.StructDecl:
        return [(stmt.name, stmt.span)]
    if t is A.Import:
        return [(stmt.alias, stmt.span)]
    return []
