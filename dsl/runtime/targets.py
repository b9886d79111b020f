"""Where a statement puts values: stores into locals, captured variables and module globals,
`let` declarations, destructuring, iteration, and assignment targets (`p.w[i] = v`), each
compiled into a closure."""

from ..base.cells import Cell
from ..core import ops, tape
from ..core.ops.core import ndarray
from ..core.tape import Box, peek
from ..core.values import a_type_name
from ..errors import DgError, error, located
from ..frontend import ast as A
from .compiler import compile_read, compile_sub


# ---------------------------------------------------------------- stores
def compile_store(b, ctx, span):
    """A closure store(f, value) binding or assigning the binding b."""
    if isinstance(b, DgError):
        problem = b

        def fail(f, value=None):     # also stands in for the read of `x += 1`
            raise error(problem.kind, problem.message, problem.span, problem.hint)
        return fail
    if b.kind == "global":
        cell = b.cell

        def store_global(f, value):
            cell.v = value
        return store_global
    slot = ctx.slot_of(b)
    if b.captured:
        def store_cell(f, value):
            f[slot].v = value
        return store_cell

    def store_local(f, value):
        f[slot] = value
    return store_local


def compile_declare(b, ctx):
    """A closure that introduces binding b (a `let`): a fresh Cell when it is captured."""
    if b.kind == "local" and b.captured:
        slot = b.slot

        def declare_cell(f, value):
            f[slot] = Cell(value)
        return declare_cell
    return compile_store(b, ctx, None)


def unpacker(binders, span):
    """A closure store(f, value) taking a tuple (or a tensor's rows) apart through the binders,
    one store(f, item) each."""
    n = len(binders)

    def store_each(f, value):
        for bind, v in zip(binders, destructure(value, n, span)):
            bind(f, v)
    return store_each


def destructure(value, n, span):
    """Split a tuple (or the rows of a tensor) into exactly n values."""
    v = peek(value)
    if type(v) is tuple:
        items = ops.unpack(value) if type(value) is Box else v
    elif type(v) is ndarray and v.ndim > 0:
        items = [ops.item(value, (i,)) for i in range(v.shape[0])]
    else:   # most often `for i, v in xs` over a vector, where Python's habit is enumerate
        hint = ("a loop over a vector gives one number at a time; for i, v in enumerate(xs) gives each "
                "position with its entry") if n == 2 and type(v) in (float, int) else None
        raise error("type", f"cannot unpack {a_type_name(v)} into {n} name{'s' * (n != 1)}", span, hint=hint)
    if len(items) != n:
        raise error("value", f"cannot unpack {len(items)} value{'s' * (len(items) != 1)} "
                             f"into {n} name{'s' * (n != 1)}", span)
    return items


def iterate(value, span):
    """The sequence a `for` loop walks: range, tuple, map keys, tensor rows, string characters."""
    v = peek(value)
    t = type(v)
    if t is str:
        return tape.raw(value)      # an f-string jit stages: its text is read, and guarded
    if t is range or t is tuple:
        return ops.unpack(value) if type(value) is Box and t is tuple else v
    if t is dict:
        return list(v)
    if t is ndarray:
        if v.ndim == 0:
            raise error("type", "cannot iterate over a tensor with no axes", span)
        if type(value) is Box:
            return (ops.item(value, (i,)) for i in range(v.shape[0]))
        if v.shape[0] > 65536:      # lazily: a list of a big tensor's rows would take several times its memory
            return iter(v) if v.ndim > 1 else map(ndarray.item, v.reshape(-1, 1))
        return list(v) if v.ndim > 1 else v.tolist()
    if hasattr(v, "__next__") and getattr(v, "dg_iterable", False):
        return v
    raise error("type", f"cannot iterate over {a_type_name(v)}", span)


# ---------------------------------------------------------------- targets
class Target:
    """An assignment target `root.a[k].b`: evaluates its keys, reads and rebuilds."""

    def __init__(self, t, ctx):
        path = []
        while isinstance(t, (A.Field, A.Index)):
            if isinstance(t, A.Field):
                path.append(("field", t.name, t.span))
            else:
                path.append(("index", [compile_sub(s, ctx) for s in t.subs], t.span))
            t = t.obj
        path.reverse()
        self.path = path
        self.root = t
        b = t.binding
        self.read_root = (compile_read(b, t.span, ctx) if not isinstance(b, DgError)
                          else compile_store(b, ctx, t.span))
        self.write_root = compile_store(b, ctx, t.span)
        self.problem = b if isinstance(b, DgError) else None

    def locate(self, f):
        """Evaluate the path: the objects along it and the key at each step."""
        if self.problem is not None:
            self.write_root(f, None)
        obj = self.read_root(f)
        objs, keys = [obj], []
        for i, (kind, what, span) in enumerate(self.path):
            key = what if kind == "field" else tuple(s(f) for s in what)
            keys.append(key)
            if i < len(self.path) - 1:
                obj = _get(obj, kind, key, span)
                objs.append(obj)
        return objs, keys

    def read_last(self, objs, keys):
        """The current value at the end of the path."""
        kind, _, span = self.path[-1]
        return _get(objs[-1], kind, keys[-1], span)

    def rebuild(self, f, objs, keys, value):
        """Store `value` at the end of the path, copying each container on the way (value semantics)."""
        for obj, key, (kind, _, span) in zip(reversed(objs), reversed(keys), reversed(self.path)):
            try:
                tape.set_span(span)     # a SetIndex/SetRow node points at this write (a compiled loop's error)
                value = ops.set_field(obj, key, value) if kind == "field" else ops.set_item(obj, key, value)
            except DgError as exc:
                raise located(exc, span)
        self.write_root(f, value)


def _get(obj, kind, key, span):
    """One step of reading along a target path."""
    try:
        return ops.field(obj, key) if kind == "field" else ops.item(obj, key)
    except DgError as exc:
        raise located(exc, span)


def compile_assign_one(t, ctx):
    """A closure assign(f, value) for one target."""
    if isinstance(t, A.Name):
        return compile_store(t.binding, ctx, t.span)
    if type(t) is A.TupleLit:       # `(a, b), c = ...`: taken apart into each
        return unpacker([compile_assign_one(item, ctx) for item in t.items], t.span)
    target = Target(t, ctx)

    def assign(f, value):
        objs, keys = target.locate(f)
        target.rebuild(f, objs, keys, value)
    return assign
