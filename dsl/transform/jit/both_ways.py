"""An `if` run both ways in a loop body looked ahead at (dsl/transform/jit/rolling.py): both branches
computed and what they set selected by a `where` of the condition, instead of a guard on it;
and `and`/`or` with a staged left operand computed on both sides the same way."""

import numpy as np

from ...base.cells import Cell
from ...core import stage as S
from ...core.ops.arith import add, mul, sub
from ...core.ops.compare import logical_and, logical_not, logical_or
from ...core.ops.elementwise import where
from ...core.ops.shape import row, set_row
from ...core.primitives.registry import PRIMS
from ...core.tape import Box, peek
from ...core.trees import flatten_open, unflatten
from .frames import restore, same_spec, same_static, set_slot, snapshot
from .signatures import _key
from .lookahead import Lookahead


def _may_fail(node, look):
    """Whether a step a branch not taken holds could fail on a later iteration, raising in the
    compiled loop what the interpreter never runs: a guard (the branch decides by a value), a
    primitive declared `can_fail` (an effect, a user's or Python's code, ints divided, class
    indices), or one declared `indexed` whose index (its second argument) is a staged int, which
    may fall out of range, unless it is a row that is there on every iteration (`_in_rows`).
    Other indexing keeps its key among its options, checked when it was staged and the same on
    every iteration."""
    if node.op == "Guard":
        return node.g not in look.conditioned
    prim = PRIMS.get(node.op)
    return prim is not None and (prim.can_fail or (prim.indexed and node.parents[1] is not None
                                                  and not _in_rows(node, look)))


def _in_rows(node, look):
    """Whether a Row or SetRow step reads or writes a row that every iteration of the loop has:
    its position the loop's variable, plus or minus an int, over a range (look.walk) whose every
    value is a row of the tensor, counted from the end where negative as numpy does (`ys[i + 1]`
    in `for i in range(n - 1)` over a tensor of n rows)."""
    if node.op not in ("Row", "SetRow") or look.walk is None:
        return False
    span = _span(node.parents[1], *look.walk)
    x = node.parents[0]
    kind = S.kind_of(x.v) if type(x) is Box else x.v
    if span is None or not S.is_array_kind(kind) or not kind[3]:
        return False
    n = kind[3][0]
    return -n <= span[0] and span[1] < n


def _span(p, item, items):
    """(least, greatest) value of the int p over the loop's items (p the loop's variable, or it
    plus or minus an int), or None where it is something else."""
    if p is item:
        return (min(items[0], items[-1]), max(items[0], items[-1])) if len(items) else None
    if type(p) is Box or p is None or p.op not in ("Add", "Sub") or len(p.parents) != 2:
        return None
    (a, b), (ca, cb) = p.parents, p.args
    if b is None and type(cb) is int and a is not None:
        inner, shift = _span(a, item, items), (cb if p.op == "Add" else -cb)
    elif a is None and type(ca) is int and p.op == "Add":
        inner, shift = _span(b, item, items), ca
    else:
        return None
    return None if inner is None else (inner[0] + shift, inner[1] + shift)


class BothWays:
    """An `if` whose condition is staged, met while a loop body is run ahead: both branches run
    and every variable they set is a `where` of the condition between the two, instead of a
    guard on the condition (and so is the value they return, where both return one). The body
    then stages once for iterations that go either way (a ball that bounces on some of them, a
    schedule by a counter, a piecewise function) and the loop is rolled, where a guard would
    write it out (its branch flips on a later iteration) and stage it again on every call whose
    flips fall elsewhere. Both branches must finish alike (both fall through, or both return;
    no break or continue), do nothing but compute (no effect, no guard of their own: a value
    they decide by), raise nothing when run ahead, use no primitive that can fail on a value on
    a later iteration (`_may_fail`), and leave each variable the same kind of value either
    way (numbers and tensors of one shape; anything else the same). Otherwise the condition is
    guarded as before (what the branches recorded is cut). The results are the branches' own:
    a where selects, and the branch not taken receives a zero cotangent (reference 6.7)."""

    __slots__ = ("then", "orelse", "interp", "local", "signal", "running")

    def __init__(self, then, orelse, interp, local):
        self.then = then
        self.orelse = orelse
        self.interp = interp
        self.local = local      # the frame slots declared inside the branches (dead after the if)
        self.signal = None      # what the if gives after both ways ran: None, or both's return
        # whether this if is running both ways already: the same if met again inside one of its
        # branches (a recursive function) is guarded there, or the branch that recurses would go
        # on to the depth limit
        self.running = False

    def __call__(self, f, c):
        """Run both branches and select between what they set by c (the if then gives `signal`);
        False where not, f as it was."""
        look = looking_ahead(self.interp, c)
        if look is None or self.running:
            return False
        self.running = True
        try:
            return self._both(f, c, look)
        finally:
            self.running = False

    def _both(self, f, c, look):
        """See __call__ (look: the look ahead's trace)."""
        start = len(look.nodes)
        saved = snapshot(f)
        outer = look.taken      # an if run both ways inside a branch of another: taken where both are
        staged = type(c) is Box
        try:
            if staged:
                look.taken = c if outer is None else logical_and(outer, c)
            then = self._branch(f, self.then, look, start)
            restore(f, saved)
            if then is not None and staged:
                look.taken = logical_not(c) if outer is None else logical_and(outer, logical_not(c))
            orelse = self._branch(f, self.orelse, look, len(look.nodes)) if then is not None else None
        finally:
            look.taken = outer
        restore(f, saved)
        merged = self._merged(c, saved[0], then, orelse, look) if orelse is not None else None
        if merged is None:
            look.cut(start)
            return False
        for j, v in merged.items():
            set_slot(f, j, v)
        return True

    def _branch(self, f, run, look, start):
        """(the frame's values after one branch, a Cell's contents for a Cell; what the branch
        gave: None or a return), or None where the branch cannot be selected."""
        signal = None
        if run is not None:
            try:
                signal = run(f)
            except Exception:       # noqa: BLE001 (an effect's NotRollable too: the branch runs as written)
                return None
            if signal is not None and type(signal) is not tuple:        # a break or continue
                return None
            if not computes_only(look, start):
                return None
        return [x.v if type(x) is Cell else x for x in f], signal

    def _merged(self, c, saved, then, orelse, look):
        """{slot: its value after the if} for the slots a branch changed (none where both
        returned: the frame goes), setting `signal`; or None."""
        (then, returned), (orelse, other) = then, orelse
        if (returned is None) != (other is None):
            return None
        if returned is not None:
            value = _select(c, returned[0], other[0], look)
            self.signal = None if value is _DIFFERENT else (value,)
            return None if value is _DIFFERENT else {}
        self.signal = None
        merged = {}
        for j, (before, a, b) in enumerate(zip(saved, then, orelse)):
            if j in self.local:
                continue
            before = before.v if type(before) is Cell else before
            if a is before and b is before:
                continue
            value = _select(c, a, b, look)
            if value is _DIFFERENT:
                return None
            merged[j] = value
        return merged


def computes_only(look, start):
    """Whether what the look ahead recorded from node `start` on may run on every iteration where
    the interpreter runs it on some: no step that may fail (`_may_fail`)."""
    return not any(_may_fail(node, look) for node in look.nodes[start:])


def looking_ahead(interp, v):
    """The look ahead's trace, where one is running and v is a bool it staged; else None."""
    staging = getattr(interp, "staging", None)
    if not staging or type(staging[-1]) is not Lookahead or type(peek(v)) not in (bool, np.bool_):
        return None
    return staging[-1]


def both_operands(interp, op, left, right):
    """`left and right` / `left or right` in a look ahead, where left is a staged bool: right()
    computed too and the two combined by a staged LogicalAnd / LogicalOr, instead of a guard on
    left (an if on the result then runs both ways: BothWays). None where right may not run
    every time (it raises when run ahead, or does what computes_only refuses, or is no bool):
    the operator then short-circuits as written, and what right recorded is cut."""
    look = looking_ahead(interp, left)
    if look is None:
        return None
    start = len(look.nodes)
    try:
        r = right()
    except Exception:       # noqa: BLE001 (right runs as written where the interpreter runs it)
        r = None
    if r is None or type(peek(r)) not in (bool, np.bool_) or not computes_only(look, start):
        look.cut(start)
        return None
    return logical_and(left, r) if op == "and" else logical_or(left, r)


_DIFFERENT = object()       # two values no where can choose between


def _select(c, a, b, look):
    """a where c, else b, leaf by leaf, or _DIFFERENT where they differ other than in numbers and
    tensors of one kind."""
    if a is b:
        return a
    pa, sa = flatten_open(a)
    pb, sb = flatten_open(b)
    if len(pa) != len(pb) or not same_spec(sa, sb):
        return _DIFFERENT
    parts = []
    for x, y in zip(pa, pb):
        if x is y or (not S.is_staged_leaf(x) and same_static(x, y)):
            parts.append(x)
        elif type(peek(x)) is int and type(peek(y)) is int and type(peek(c)) is bool:
            parts.append(_int_chosen(c, x, y))
        elif S.is_staged_leaf(x) and S.is_staged_leaf(y) and _key(x) == _key(y):
            parts.append(_row_chosen(c, x, y, look) or where(c, x, y))
        else:
            return _DIFFERENT
    return unflatten(sa, parts)


def _int_chosen(c, x, y):
    """The int x where the bool c, else y, as an int (`if hit { count += 1 }`): y + c * (x - y),
    since a where gives a float, which would change the loop state's type and write the loop
    out; the int becomes a counter of the loop (Roller stages it as state)."""
    return add(y, mul(c, sub(x, y)))


def _row_chosen(c, x, y, look):
    """x where c, else y, for two tensors that differ at most in the row at the loop's variable,
    one of them a SetRow there of the other or both of one tensor (`if x > 0 { traj[i] = x }`):
    the tensor with that row set to the value chosen, instead of a where over the whole tensor on
    every iteration, which costs the loop its length squared. None where they are not."""
    if look.walk is None or type(x) is not Box or type(y) is not Box or x.trace is not look or y.trace is not look:
        return None
    item = look.walk[0]
    sx, sy = (look.set_rows.get(v.g) for v in (x, y))
    sx, sy = (s if s is not None and s[1] is item else None for s in (sx, sy))
    if sx is not None and sy is not None and sx[0] is sy[0]:
        return set_row(sx[0], item, where(c, sx[2], sy[2]))
    if sx is not None and sx[0] is y:
        return set_row(y, item, where(c, sx[2], row(y, item)))
    if sy is not None and sy[0] is x:
        return set_row(x, item, where(c, row(x, item), sy[2]))
    return None
