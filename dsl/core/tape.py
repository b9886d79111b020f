"""The tape: boxes with trace levels and recording (the reverse pass over it: reverse_pass.py).

A differentiation opens a `Trace` with a fresh level. Its arguments become
`Box`es on that trace. A primitive that sees a box of the highest level
among its arguments unboxes that level only, computes (the values may still
be boxes of outer traces, which record there), and boxes the result. The box
is also the tape node: it keeps the op name, its parents on the same trace,
the unboxed arguments the rule needs, and the source span. A trace's node
list is in creation order, which is a topological order; reverse_pass.backward
walks it in reverse with a table of rules and never recurses.
"""

import contextvars
import itertools
import sys

import numpy as np


_levels = itertools.count(1)

# Kinds of trace. REVERSE records a tape for grad's backward pass; FORWARD computes
# each value's tangent as it goes (jvp); STAGE records every operation, with the
# guards that decided control flow, for jit and vmap to replay (dsl/core/stage.py).
REVERSE, FORWARD, STAGE = "reverse", "forward", "stage"

# The span of the dg expression being evaluated, for nodes recorded by builtins (operators
# pass their own span), set by the compiled call sites; and the cotangent the running rule may
# overwrite in place (see `cmul` in namespaces.py), set only when nothing else refers to it.
# Context variables: each thread (and task) has its own, so interpreters in two threads never
# see each other's.
_span = contextvars.ContextVar("dg_span", default=None)
get_span, set_span = _span.get, _span.set
_owned = contextvars.ContextVar("dg_owned", default=None)
get_owned, set_owned = _owned.get, _owned.set

# Whether sys.getrefcount proves that nothing else holds an object (used by `owned` and by
# core/ops/elision.py). Python 3.14 may pass borrowed references on its value stack, which makes
# the counts too low to prove anything: there, nothing is reused.
REFCOUNTS_EXACT = sys.version_info < (3, 14)


class Trace:
    """One transformation in progress: its level, its kind and its node list."""

    __slots__ = ("level", "nodes", "check", "kind", "reads", "user_code")

    def __init__(self, check=True, kind=REVERSE):
        self.level = next(_levels)
        self.nodes = []
        self.check = check
        self.kind = kind
        self.reads = {}     # (structure box, slot) -> its read: a value read twice is one node
        self.user_code = False      # whether a node's reverse rule runs the user's code (USER_CODE)

    def rewind(self, mark):
        """Drop the nodes recorded since there were `mark` of them, and the structural reads
        among them: a later read of the same slot must record a node again, not find one that
        no longer is on the tape (its cotangent would be lost)."""
        dropped = {id(b) for b in self.nodes[mark:]}
        del self.nodes[mark:]
        if dropped and self.reads:
            self.reads = {k: b for k, b in self.reads.items() if id(b) not in dropped}

    def release(self):
        """Let go of the nodes (the differentiation is over)."""
        self.nodes = []
        self.reads = {}

    def process(self, op, args, unboxed, parents, kw, span):
        """Apply primitive `op` on a trace that is not a reverse tape (see ForwardTrace, stage.py)."""
        raise NotImplementedError


class Box:
    """A value on a trace, and the tape node that produced it (`t`: its tangent, in forward mode)."""

    __slots__ = ("v", "trace", "op", "parents", "args", "kw", "span", "g", "t")

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
    """Strip every level of boxing from a value (not from containers), to use the value itself.

    A staged box stripped here ties the staged program to this value: its trace records a
    guard (dsl/core/stage.py). Code that reads only a type or a shape uses `peek`."""
    while type(x) is Box:
        trace = x.trace
        if trace.kind is STAGE:
            trace.concretize(x)
        x = x.v
    return x


def concrete(x):
    """An option's value (argnums, axes), its staged boxes guarded and stripped as `raw` does,
    inside a tuple too: a jitted function given its axis as an argument is staged again for
    another one."""
    x = raw(x)
    return tuple(concrete(e) for e in x) if type(x) is tuple else x


def peek(x):
    """A value's type, shape and dtype as seen under its boxes, for checks that read nothing
    else (so that, unlike `raw`, it never ties a staged trace to this value: dsl/core/stage.py)."""
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


def record(op, args, kw=None, span=None):
    """Apply primitive `op` (see dsl/primitives) to `args`, recording a node if any argument is boxed.

    The primitive's kernel is called with the arguments of the top trace unboxed, so
    it may record again on outer traces. On a reverse tape, nodes whose parents are
    all `Input`s are not recorded: nothing they compute can reach a gradient.
    """
    fn = IMPLS[op]
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
    if top.kind is not REVERSE:
        return top.process(op, args, tuple(unboxed), tuple(parents), kw, span or get_span())
    out = fn(*unboxed, **kw) if kw else fn(*unboxed)
    if not needed:
        return out
    if op in USER_CODE:
        top.user_code = True
    box = Box(out, top, op, tuple(parents), tuple(unboxed), kw, span or get_span())
    top.nodes.append(box)
    return box


def record2(op, a, b, span, fn=None):
    """`record` for the binary arithmetic operators, without the generality.

    `fn(av, bv, span)` computes the result (by default the primitive's kernel)."""
    if type(a) is Box:
        top = a.trace
        if type(b) is Box and b.trace is not top:
            if b.trace.level > top.level:
                return _record2_on(b.trace, op, a, None, a, b.v, b, b, span, fn)
            return _record2_on(top, op, a.v, a, a, b, None, b, span, fn)
        if type(b) is Box:      # the common case, both on one trace, written out
            if top.kind is not REVERSE:
                return top.process(op, (a, b), (a.v, b.v), (a, b), None, span or get_span())
            av, bv = a.v, b.v
            out = (fn or IMPLS[op])(av, bv, span)
            if a.op == "Input" and b.op == "Input":
                return out
            box = Box(out, top, op, (a, b), (av, bv), None, span or get_span())
            top.nodes.append(box)
            return box
        return _record2_on(top, op, a.v, a, a, b, None, b, span, fn)
    return _record2_on(b.trace, op, a, None, a, b.v, b, b, span, fn)


def record_floats(op, a, b, span, fn):
    """record2 for two boxes that hold floats on one reverse tape (the hot path of scalar code:
    no kernel, whose checks floats need not pass), or None when they are not that.

    `fn(av, bv)` is the float operation (operator.mul, ...), which cannot fail on floats."""
    av = a.v
    bv = b.v
    trace = a.trace
    if type(av) is not float or type(bv) is not float or b.trace is not trace or trace.kind is not REVERSE:
        return None
    out = fn(av, bv)
    if a.op == "Input" and b.op == "Input":
        return out
    box = Box(out, trace, op, (a, b), (av, bv), None, span or get_span())
    trace.nodes.append(box)
    return box


def _record2_on(top, op, av, pa, a, bv, pb, b, span, fn):
    """record2 with the top trace found: av and bv are the operands under its boxes, pa and pb
    the boxes themselves (None for an operand that is not on it)."""
    if top.kind is not REVERSE:
        return top.process(op, (a, b), (av, bv), (pa, pb), None, span or get_span())
    out = (fn or IMPLS[op])(av, bv, span)
    if (pa is None or pa.op == "Input") and (pb is None or pb.op == "Input"):
        return out
    box = Box(out, top, op, (pa, pb), (av, bv), None, span or get_span())
    top.nodes.append(box)
    return box


def record1(op, x, span):
    """`record` for a primitive of one boxed argument and no keywords (unary minus, sin, ...)."""
    trace = x.trace
    xv = x.v
    if trace.kind is not REVERSE:
        return trace.process(op, (x,), (xv,), (x,), None, span or get_span())
    out = IMPLS[op](xv)
    if x.op == "Input":
        return out
    box = Box(out, trace, op, (x,), (xv,), None, span or get_span())
    trace.nodes.append(box)
    return box


def record_const(op, x, c, span):
    """`record` for a recorded value x and a constant number c, e.g. ScalarMul."""
    xv = x.v
    trace = x.trace
    if trace.kind is not REVERSE:
        return trace.process(op, (x, c), (xv, c), (x, None), None, span or get_span())
    # a float times a float needs none of the kernel's checks (ints, overflow): the hot path of scalar code
    out = xv * c if type(xv) is float and type(c) is float and op == "ScalarMul" else IMPLS[op](xv, c, span)
    if x.op == "Input":
        return out
    box = Box(out, trace, op, (x, None), (xv, c), None, span or get_span())
    trace.nodes.append(box)
    return box


def record_read(op, x, out, kw, slot):
    """`record` for a structural read (StructField, MapLookup): `out` was read from slot `slot`
    of box x's value. Structures are values, so a second read of a slot on a reverse tape is
    the first read's node: one node, and one cotangent added into the structure's."""
    trace = x.trace
    if trace.kind is not REVERSE:
        return trace.process(op, (x,), (x.v,), (x,), kw, get_span())
    if x.op == "Input" or not _may_carry_gradient(peek(out)):
        # an int, bool, string or function has no cotangent: a node for it would hand an index's
        # rule (none) a cotangent to take
        return out
    box = Box(out, trace, op, (x,), (x.v,), kw, get_span())
    trace.nodes.append(box)
    trace.reads[x, slot] = box
    return box


def float_leaf(v):
    """Whether a (raw) value takes a gradient: a float or a float tensor (trees.is_differentiable_leaf)."""
    t = type(v)
    return t is float or t is np.float64 or (t is np.ndarray and v.dtype.kind == "f")


def _may_carry_gradient(v):
    """Whether a value read from a structure can take a cotangent: a float, a float tensor, a
    structure (which may hold them), or a rolled loop's history (dsl/core/primitives/loop_twice.py)."""
    t = type(v)
    return t is tuple or t is dict or hasattr(v, "sdef") or float_leaf(v) or getattr(t, "takes_cotangent", False)


def boxed_by(x, kind):
    """Whether a trace of `kind` (STAGE, REVERSE, FORWARD) boxes x, under any other boxes."""
    while type(x) is Box:
        if x.trace.kind is kind:
            return True
        x = x.v
    return False


def staged(x):
    """Whether x is a value a staging trace (jit, vmap) records, under any other boxes."""
    return boxed_by(x, STAGE)


def strip_unstaged(x):
    """x without its reverse and forward boxes: what jit and vmap see of a non-differentiated value."""
    while type(x) is Box and x.trace.kind is not STAGE:
        x = x.v
    return x


def nondiff(op, args, kw=None, span=None):
    """A primitive without derivatives (comparisons, floor, argmax): computed on the values
    under any reverse or forward box, recorded only on a trace that stages every operation."""
    plain = [strip_unstaged(a) for a in args]
    staged = any(type(a) is Box for a in plain)
    if staged:
        return record(op, plain, kw, span)
    fn = IMPLS[op]
    return fn(*plain, **kw) if kw else fn(*plain)


def apply(op, args, kw=None):
    """A recorded step run again (a replay): the primitive on its arguments, recorded by the traces
    of any boxes among them. The kernels of derivative-free primitives read plain values, so a box
    goes through `nondiff`, which records it where a stage must see it (an outer jit's guard)."""
    if op in PLAIN:
        for a in args:
            if type(a) is Box:
                return nondiff(op, args, kw)
    fn = IMPLS[op]
    return fn(*args, **kw) if kw else fn(*args)


# ---------------------------------------------------------------- forward mode
class ForwardTrace(Trace):
    """jvp: every value on it carries its tangent in `t`; nothing is kept."""

    __slots__ = ()

    def __init__(self):
        super().__init__(False, FORWARD)

    def process(self, op, args, unboxed, parents, kw, span):
        """Compute the primitive and its output's tangent by the primitive's forward rule."""
        fn = IMPLS[op]
        out = fn(*unboxed, **kw) if kw else fn(*unboxed)
        tangents = tuple([None if p is None else p.t for p in parents])
        rule = PUSHFORWARDS.get(op) or _missing(op, "jvp", span)
        t = rule(_ns(out, unboxed, tangents), tangents, out, unboxed, kw)
        if t is None:
            return out
        box = Box(out, self, op, (), (), None, span)
        box.t = tangent_like(t, out)
        return box


# ---------------------------------------------------------------- rules
IMPLS = {}          # primitive name -> its kernel, PULLBACKS -> its reverse rule, PUSHFORWARDS -> its
PULLBACKS = {}      # forward rule: filled from the registry when dsl.core.primitives is imported
PUSHFORWARDS = {}
BATCHES = {}        # primitive name -> its batching rule (vmap)
FLOAT_PULLBACKS = {}    # elementwise primitives: the reverse step for a float result and cotangent
PLAIN_PULLBACKS = {}    # the reverse step of a node of plain numbers and arrays (no outer trace)
PLAIN = set()       # primitives without derivatives whose kernel reads plain values only (see `apply`)
USER_CODE = set()   # primitives whose reverse rule runs the user's code (custom_vjp, hosts): see backward_from
GUARDED = set()     # primitives whose kernel checks a staged program's guards (Loop): see stage.program_of


EAGER = TRACED = None     # the namespaces rules run in (dsl/core/primitives/namespaces.py), bound with the tables
RULE_OF = None            # registry.rule_of: a primitive's rule or the loud error for a missing one, bound with them


def _missing(op, kind, span):
    """Raise the loud error for a primitive without the rule a transformation needs."""
    RULE_OF(op, kind, span)
    raise AssertionError(op)


def _ns(out, args, more):
    """The namespace a rule runs in: numpy itself when nothing it sees is boxed."""
    if type(out) is Box:
        return TRACED
    for v in args:
        if type(v) is Box:
            return TRACED
    for v in more:
        if type(v) is Box:
            return TRACED
    return EAGER


class SlotGrad:
    """The cotangent of a struct, map or tuple: one slot per field, filled where read."""

    __slots__ = ("slots",)

    def __init__(self, n):
        self.slots = [None] * n


class OneSlot:
    """The cotangent of one read of a structure: slot `index` of `total` holds `g`."""

    __slots__ = ("index", "total", "g")

    def __init__(self, index, total, g):
        self.index = index
        self.total = total
        self.g = g


FLOAT_DTYPES = frozenset(np.dtype(n) for n in ("float16", "float32", "float64"))


def same_float_dtype(g, like):
    """A cotangent or tangent array `g` in the float type of the array `like` it belongs to (a
    gradient has its value's dtype: a rule's float64 constant must not make float32 work float64)."""
    if like.dtype in FLOAT_DTYPES and g.dtype != like.dtype:
        return g.astype(like.dtype)
    return g


def _same_float_dtype_recorded(g, like):
    """same_float_dtype where the cotangent or the value is recorded by an outer trace (jit,
    a derivative of a derivative): the cast is recorded there too."""
    gv, lv = peek(g), peek(like)
    if type(gv) is np.ndarray and type(lv) is np.ndarray and lv.dtype in FLOAT_DTYPES and gv.dtype != lv.dtype:
        return record("Astype", (g,), {"dtype": lv.dtype.name})      # ops.astype, recorded
    return g


def tangent_like(t, out):
    """A rule's tangent `t` of the value `out` as the value is: a float for a float, and an array
    in the value's float type (a rule's float64 constant must not widen a float32 tangent)."""
    if type(t) is not float and type(peek(out)) is float:
        return as_float(t)
    if type(t) is np.ndarray and type(out) is np.ndarray:
        return t if t.dtype is out.dtype else same_float_dtype(t, out)
    if type(t) is Box or type(out) is Box:
        return _same_float_dtype_recorded(t, out)
    return t


def as_float(g):
    """The cotangent of a float as a float: a rule may give a numpy scalar or a one-element
    tensor (a broadcast sum, a reshape back to ()), which must not reach the next rule."""
    if type(g) is OneSlot or type(g) is SlotGrad:
        return g
    if type(g) is Box:
        if type(peek(g)) is not np.ndarray:
            return g
        # recorded at the outer level, as ops.index(ops.reshape(g, (1,)), (0,)): a read of the one element
        return record("Index", (record("Reshape", (g,), {"shape": (1,)}),), {"key": (0,), "op": "Index"})
    return float(g.reshape(())) if type(g) is np.ndarray else float(g)
