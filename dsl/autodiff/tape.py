"""The tape: boxes with trace levels, recording, and the reverse pass.

A differentiation opens a `Trace` with a fresh level. Its arguments become
`Box`es on that trace. A primitive that sees a box of the highest level
among its arguments unboxes that level only, computes (the values may still
be boxes of outer traces, which record there), and boxes the result. The box
is also the tape node: it keeps the op name, its parents on the same trace,
the unboxed arguments the rule needs, and the source span. A trace's node
list is in creation order, which is a topological order; `backward` walks it
in reverse with a table of rules and never recurses.
"""

import itertools
import math
import sys

import numpy as np

from ..errors import error

_levels = itertools.count(1)

# The span of the dg expression being evaluated, for nodes recorded by
# builtins (operators pass their own span). Set by the compiled call sites.
current_span = None

# The cotangent the running rule may overwrite in place (see `cmul` in rules.py), or None:
# set only when nothing else refers to it, so no other node or value can see the change.
owned = None

# Whether sys.getrefcount proves that nothing else holds an object (used by `owned` and by
# ops/elision.py). Python 3.14 may pass borrowed references on its value stack, which makes
# the counts too low to prove anything: there, nothing is reused.
REFCOUNTS_EXACT = sys.version_info < (3, 14)


class Trace:
    """One differentiation in progress: its level and its node list."""

    __slots__ = ("level", "nodes", "check")

    def __init__(self, check=True):
        self.level = next(_levels)
        self.nodes = []
        self.check = check


class Box:
    """A value on a trace, and the tape node that produced it."""

    __slots__ = ("v", "trace", "op", "parents", "args", "kw", "span", "g")

    def __init__(self, v, trace, op, parents, args, kw, span):
        self.v = v
        self.trace = trace
        self.op = op
        self.parents = parents
        self.args = args
        self.kw = kw
        self.span = span
        self.g = None

    def __repr__(self):
        return f"Box({self.op}, level={self.trace.level}, {type(self.v).__name__})"


def raw(x):
    """Strip every level of boxing from a value (not from containers)."""
    while type(x) is Box:
        x = x.v
    return x


def top_trace(args):
    """The trace of highest level among boxed arguments, or None."""
    top = None
    for a in args:
        if type(a) is Box and (top is None or a.trace.level > top.level):
            top = a.trace
    return top


def record(op, fn, args, kw=None, span=None):
    """Apply primitive `fn` to `args`, recording node `op` if any argument is boxed.

    `fn` is called with the arguments of the top trace unboxed, so it may
    record again on outer traces. Nodes whose parents are all `Input`s are not
    recorded: nothing they compute can reach a gradient.
    """
    top = top_trace(args)
    if top is None:
        return fn(*args, **kw) if kw else fn(*args)
    unboxed = []
    parents = []
    needed = False
    for a in args:
        if type(a) is Box and a.trace is top:
            unboxed.append(a.v)
            parents.append(a)
            if a.op != "Input":
                needed = True
        else:
            unboxed.append(a)
            parents.append(None)
    out = fn(*unboxed, **kw) if kw else fn(*unboxed)
    if not needed:
        return out
    box = Box(out, top, op, tuple(parents), tuple(unboxed), kw, span or current_span)
    top.nodes.append(box)
    return box


def record2(op, fn, a, b, span):
    """`record` for the binary arithmetic operators, without the generality."""
    ta = a.trace if type(a) is Box else None
    tb = b.trace if type(b) is Box else None
    if ta is not None and (tb is None or ta.level >= tb.level):
        top = ta
    else:
        top = tb
    if ta is top:
        av, pa = a.v, a
    else:
        av, pa = a, None
    if tb is top:
        bv, pb = b.v, b
    else:
        bv, pb = b, None
    out = fn(av, bv, span)
    if (pa is None or pa.op == "Input") and (pb is None or pb.op == "Input"):
        return out
    box = Box(out, top, op, (pa, pb), (av, bv), None, span or current_span)
    top.nodes.append(box)
    return box


def record_const(op, fn, x, c, span):
    """`record` for a recorded value x and a constant number c, e.g. ScalarMul."""
    xv = x.v
    out = fn(xv, c, span)
    if x.op == "Input":
        return out
    box = Box(out, x.trace, op, (x, None), (xv, c), None, span or current_span)
    x.trace.nodes.append(box)
    return box


def record_read(op, x, out, kw):
    """`record` for a structural read (StructField, MapLookup): `out` was read from box x's value."""
    if x.op == "Input":
        return out
    box = Box(out, x.trace, op, (x,), (x.v,), kw, current_span)
    x.trace.nodes.append(box)
    return box


# ---------------------------------------------------------------- rules
VJPS = {}


def defvjp(op, *rules):
    """Register one rule per argument of `op`: rule(g, ans, *args, **kw) -> cotangent."""
    VJPS[op] = ("each", rules)


def defvjp_all(op, rule):
    """Register one rule for all arguments: rule(g, ans, args, kw, wanted) -> tuple."""
    VJPS[op] = ("all", rule)


class SlotGrad:
    """The cotangent of a struct, map or tuple: one slot per field, filled where read."""

    __slots__ = ("slots",)

    def __init__(self, n):
        self.slots = [None] * n


_add = None     # ops.add, bound on first use (ops imports this module)


def accumulate(old, new):
    """Sum two cotangents of one value (fan-out), including structured ones."""
    global _add
    if old is None:
        return new
    if new is None:
        return old
    if type(old) is float and type(new) is float:
        return old + new
    if type(old) is SlotGrad or type(new) is SlotGrad:
        from .trees import to_slotgrad
        old, new = to_slotgrad(old), to_slotgrad(new)
        merged = SlotGrad(len(old.slots))
        merged.slots = [accumulate(x, y) for x, y in zip(old.slots, new.slots)]
        return merged
    if _add is None:
        from ..ops.arith import add as _add
    return _add(old, new)


def backward(trace, out, seed):
    """Run reverse mode over `trace` from box `out` with cotangent `seed`."""
    backward_from(trace, [(out, seed)])


def backward_from(trace, seeds):
    """Run reverse mode over `trace` from several (box, cotangent) seeds.

    Afterwards each Parameter that the seeds reach holds its cotangent in
    `.g`; every other node's cotangent is released as soon as it is used.

    The numerics check (SPEC 6.8) looks at the Parameters' cotangents once at
    the end; only if one is not finite does the pass run again checking every
    rule's output, to name the operation that produced it.
    """
    _reverse(trace.nodes, seeds, False)
    if trace.check and not all(_finite(p.g) for p in trace.nodes if p.op == "Parameter"):
        _reverse(trace.nodes, seeds, True)
        bad = next(p for p in trace.nodes if p.op == "Parameter" and not _finite(p.g))
        raise error("numerics", "a gradient is not finite (NaN or infinity)", bad.span)


def _reverse(nodes, seeds, check):
    """The reverse pass: each node's rule, from the last node to the first, never recursing."""
    global current_span, owned
    for node in nodes:
        node.g = None
    for box, g in seeds:
        box.g = g if box.g is None else accumulate(box.g, g)
    saved_span = current_span
    vjps = VJPS
    try:
        for node in reversed(nodes):
            g = node.g
            if g is None:
                continue
            op = node.op
            if op == "Parameter":
                continue
            node.g = None
            if op == "StructField" or op == "MapLookup":
                _scatter(node, g)
                continue
            current_span = node.span
            kind, rule = vjps.get(op, (None, None))
            if kind is None:
                raise error("grad", f"no gradient rule for the operation {op}", node.span)
            parents = node.parents
            if kind == "each":
                args, kw = node.args, node.kw
                if REFCOUNTS_EXACT and len(parents) == 1 and type(g) is np.ndarray and g.base is None and sys.getrefcount(g) == 2:
                    owned = g   # only `g` here refers to it: the one rule may reuse its memory
                for i, p in enumerate(parents):
                    if p is None or p.op == "Input":
                        continue
                    pg = rule[i](g, node.v, *args, **kw) if kw else rule[i](g, node.v, *args)
                    if type(pg) is not float and type(raw(p.v)) is float:
                        pg = as_float(pg)
                    if check:
                        check_finite(pg, node)
                    p.g = pg if p.g is None else accumulate(p.g, pg)
                owned = None
            else:
                wanted = tuple(p is not None and p.op != "Input" for p in parents)
                grads = rule(g, node.v, node.args, node.kw or {}, wanted)
                for p, pg in zip(parents, grads):
                    if pg is None or p is None or p.op == "Input":
                        continue
                    if type(pg) is not float and type(raw(p.v)) is float:
                        pg = as_float(pg)
                    if check:
                        check_finite(pg, node)
                    p.g = pg if p.g is None else accumulate(p.g, pg)
            pg = grads = None   # drop our references, so the next rule's `owned` test can pass
    finally:
        current_span = saved_span
        owned = None


def as_float(g):
    """The cotangent of a float as a float: a rule may give a numpy scalar or a one-element
    tensor (a broadcast sum, a reshape back to ()), which must not reach the next rule."""
    if type(g) is Box:
        if type(raw(g)) is not np.ndarray:
            return g
        from ..ops import index, reshape     # recorded at the outer level: a read of the one element
        return index(reshape(g, (1,)), (0,))
    return float(g.reshape(())) if type(g) is np.ndarray else float(g)


def _finite(g):
    """Whether a cotangent (possibly structured, possibly boxed) has only finite numbers."""
    stack = [g]
    while stack:
        g = stack.pop()
        if type(g) is SlotGrad:
            stack.extend(g.slots)
            continue
        v = raw(g)
        t = type(v)
        if t is float:
            if not math.isfinite(v):
                return False
        elif t is np.ndarray:
            if v.dtype.kind == "f" and v.size and not all_finite(v):
                return False
        elif t is tuple or t is dict:
            stack.extend(v.values() if t is dict else v)
        elif hasattr(v, "sdef"):
            stack.extend(v.vals)
    return True


def all_finite(v):
    """Whether a tensor has no NaN or infinity; fast when it has none (the common case)."""
    # A sum of squares is finite exactly when every entry is, unless it overflows (entries
    # past 1e154): only a non-finite sum needs the exact test. BLAS's dot is about 3x faster
    # than a numpy sum, and this runs on every gradient of every step (SPEC 6.8).
    flat = v.reshape(-1) if v.flags.c_contiguous else v.ravel()
    return math.isfinite(float(np.dot(flat, flat))) or bool(np.isfinite(v).all())


def _scatter(node, g):
    """StructField/MapLookup: put `g` into one slot of the parent's structured cotangent."""
    parent = node.parents[0]
    kw = node.kw
    if node.op == "StructField":
        index, total = kw["field_index"], kw["total_fields"]
    else:
        index, total = kw["key_index"], kw["total_keys"]
    pg = parent.g
    if pg is None:
        pg = parent.g = SlotGrad(total)
    elif type(pg) is not SlotGrad:
        from .trees import to_slotgrad
        pg = parent.g = to_slotgrad(pg)
    old = pg.slots[index]
    pg.slots[index] = g if old is None else accumulate(old, g)


def check_finite(g, node):
    """Raise a `numerics` error naming `node`'s operation if `g` has a NaN or infinity."""
    if _finite(g):
        return
    where = f" at {node.span.where()}" if node.span is not None else ""
    raise error("numerics",
                f"the gradient of {node.op}{where} is not finite (NaN or infinity)",
                node.span,
                hint="turn this check off with --no-check-numerics or Interpreter(check_numerics=False)")
