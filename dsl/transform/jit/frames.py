"""A function's frame as a loop's state (dsl/transform/jit/rolling.py): the numbers and tensors its
variables hold, as leaves, and a description of the rest to put new leaves back by; the frame
saved and restored around a look ahead; and which slots a block declares or whether it leaves
the loop."""

from ...base.cells import Cell
from ...core import stage as S
from ...core.tape import Box
from ...core.trees import flatten_open, unflatten
from ...frontend.ast import Block, Break, Continue, For, If, Return, While

LEAF = object()        # where a state leaf goes in a slot's description


def frame_leaves(f, skip, counters=frozenset()):
    """The numbers and tensors held by a frame's variables (boxed structures opened), and how to
    put new ones back: per slot, None (skipped) or (is a Cell, flatten description, statics).
    `counters`: the positions (slot, part) of ints the loop changes, which are state leaves too."""
    leaves, layout = [], []
    for j, v in enumerate(f):
        if j in skip:
            layout.append(None)
            continue
        cell = type(v) is Cell
        parts, spec = flatten_open(v.v if cell else v)
        statics = []
        for k, x in enumerate(parts):
            if S.is_staged_leaf(x) or (j, k) in counters:
                leaves.append(x)
                statics.append(LEAF)
            else:
                statics.append(x)
        layout.append((cell, spec, statics))
    return leaves, layout


def foreign_slots(f, trace):
    """The slots of a frame holding a value of a trace older than `trace` (a look ahead's): in
    the look ahead of an outer loop, the variables its body sets after this point still hold the
    values of the iteration before it (boxes of the trace jit stages); nothing in scope here
    reads them (a body that reached one would not be staged: Lookahead.process). A box of a
    newer trace (a derivative's, begun in the outer loop's body: grad of an ODE solve in each
    iteration) is a value of this iteration, which the loop may read (its parameters)."""
    found = set()
    for j, v in enumerate(f):
        parts, _ = flatten_open(v.v if type(v) is Cell else v)
        if any(type(x) is Box and x.trace is not trace and x.trace.level < trace.level for x in parts):
            found.add(j)
    return found


def write_frame(f, layout, skip, leaves, changed):
    """Put state leaves back into a frame's variables (only the slots with a changed leaf, if given)."""
    it = iter(zip(leaves, changed or [True] * len(leaves)))
    for j, entry in enumerate(layout):
        if entry is None:
            continue
        _, spec, statics = entry
        parts, touched = [], False
        for s in statics:
            if s is LEAF:
                x, c = next(it)
                parts.append(x)
                touched = touched or c
            else:
                parts.append(s)
        if not touched:
            continue
        set_slot(f, j, unflatten(spec, parts))


def changed_ints(before, after):
    """The positions (slot, part) of the ints that differ between two frame layouts, where
    nothing else does (the same structures, strings and bools), else None. An int that became
    a staged value counts: a while loop rolled in the body made it a counter of its own."""
    if len(before) != len(after):
        return None
    changed = set()
    for j, (x, y) in enumerate(zip(before, after)):
        if x is None or y is None:
            if x is not y:
                return None
            continue
        if not same_slot(x, y):
            return None
        for k, (s, t) in enumerate(zip(x[2], y[2])):
            if not same_static(s, t):
                if type(s) is not int or (type(t) is not int and t is not LEAF):
                    return None
                changed.add((j, k))
    return frozenset(changed) or None


def same_layout(a, b, same_part=None):
    """Whether two frames' descriptions agree: the same structures and the non-state values
    that `same_part` says agree (by default: the same values, same_static)."""
    same_part = same_part or same_static
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x is None or y is None:
            if x is not y:
                return False
            continue
        if not same_slot(x, y) or not all(map(same_part, x[2], y[2])):
            return False
    return True


def same_slot(x, y):
    """Whether two slots' descriptions hold the same structure (both a Cell or not, the same
    flatten description, as many parts)."""
    return x[0] == y[0] and same_spec(x[1], y[1]) and len(x[2]) == len(y[2])


def same_static(s, t):
    """Whether two parts of a slot agree: both state leaves, or the same non-state value."""
    if (s is LEAF) != (t is LEAF):
        return False
    return s is t or (type(s) is type(t) and type(s) in (int, str, bool) and s == t)


def same_spec(a, b):
    """Whether two flatten descriptions describe the same structure."""
    if a is None or b is None:
        return a is b
    (ta, ka), (tb, kb) = a, b
    if type(ta) is not type(tb) or len(ka) != len(kb):
        return False
    if type(ta) is dict and list(ta) != list(tb):
        return False
    if hasattr(ta, "sdef") and ta.sdef is not tb.sdef:
        return False
    return all(same_spec(x, y) for x, y in zip(ka, kb))




def snapshot(f):
    """A frame's slots and what the Cells among them hold, for restore."""
    return list(f), [(c, c.v) for c in f if type(c) is Cell]


def restore(f, saved):
    """Put a frame and the Cells it held back as a snapshot has them."""
    slots, cells = saved
    f[:] = slots
    for cell, v in cells:
        cell.v = v


def set_slot(f, j, value):
    """Give frame slot j a value (the Cell's contents, where the slot holds a Cell)."""
    if type(f[j]) is Cell:
        f[j].v = value
    else:
        f[j] = value


def exits(block):
    """Whether a loop body holds a break, continue or return of its own (not of a nested function)."""
    return any(type(s) in (Break, Continue, Return) for s in _statements(block.stmts))


def _statements(stmts):
    """These statements and those of the blocks nested in them (statements sit only in blocks of
    statements, and in functions, which are not searched)."""
    stack = list(stmts)
    while stack:
        s = stack.pop()
        yield s
        t = type(s)
        if t is If:
            stack += s.then.stmts
            if s.orelse is not None:
                stack += s.orelse.stmts if type(s.orelse) is Block else [s.orelse]
        elif t is While or t is For:
            stack += s.body.stmts



def declared(blocks):
    """The frame slots of the names declared in these blocks (an if's branches: a Block, an If
    for `else if`, or None) and in blocks nested in them: the branches' own variables, gone
    after the if."""
    stmts = [s for b in blocks if b is not None for s in (b.stmts if type(b) is Block else [b])]
    return {b.slot for s in _statements(stmts) for b in getattr(s, "bindings", None) or ()
            if getattr(b, "kind", None) == "local"}

