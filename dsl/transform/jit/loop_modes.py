"""What the loops of dg code need to know at run time, shared by jit's rolling (rolling.py) and
the eager loops outside any jit (eager_loops.py): under which derivatives a loop's state is, and
how a rolled loop's final state goes back into the frame; and what jit and vmap change before
they stage again where a rolled loop's body went another way on a later iteration (`retry`)."""

from ...core.ops.slots import unpack
from ...core.tape import Box, FORWARD, REVERSE, STAGE
from .frames import write_frame


def mixes_custom_rules(body, forward, reverse):
    """Whether the body runs a custom_vjp under reverse mode inside forward mode: the reverse pass
    would read the forward loop's history (see core/primitives/loops.py, _loop_jvp), so jit makes
    it a Scan (rolling.py) and the interpreter writes it out (eager_loops.py)."""
    return body.user_rules and any(r.level > t.level for r in reverse for t in forward)


def write_back(f, layout, skip, state, out, body):
    """Put the final state of a Loop step over the body (`out`) into the frame's variables."""
    final = unpack(out) if type(out) is Box else out
    changed = body.changed
    write_frame(f, layout, skip, [x if c else old for x, old, c in zip(final, state, changed)], changed)


def modes(state, top=None):
    """The forward and the reverse traces of the state's values, or None where the loop is not
    rolled: a batched value; while jit or vmap stages (`top`, its trace),
    a state it does not stage; outside them (eager_loops.py), a state no derivative is taken of,
    or any staging trace."""
    reverse, forward, staged = set(), set(), False
    for x in state:
        while type(x) is Box:
            trace = x.trace
            kind = trace.kind
            if trace is top:
                staged = True
            elif kind is FORWARD:
                forward.add(trace)
            elif kind is REVERSE:
                reverse.add(trace)
            elif kind is not STAGE or top is None:
                return None
            x = x.v
    # more than one reverse level only while jit stages (dsl/core/primitives/loop_twice.py, scan.py)
    if (top is None and len(reverse) > 1) or not (staged if top is not None else forward or reverse):
        return None
    return forward, reverse


def retry(failed, interp):
    """What jit (or vmap's look at a function) changes before it stages again, where a guard of a
    rolled loop's body failed on a later iteration (LoopGuardFailed): where it is the condition
    of a while loop written out in that body (its count differs from one iteration of the outer
    loop to the next: Newton's method in a time step), that while loop is rolled in the body;
    else the loop is written out. A note for jit's explain, or None where that was done already
    (the failure is the program's to raise)."""
    inner = roll_inner(failed, interp)
    if inner is not None:
        return (f"the while loop at {inner.where} rolled in the body of the loop around it: it ran another "
                f"number of times on a later iteration")
    if failed.loop in interp.unrolled_loops:
        return None
    interp.unrolled_loops.add(failed.loop)
    return f"a loop written out: {failed.why}"


def roll_inner(failed, interp):
    """The while loop written out in a rolled loop's body whose condition the guard `failed` (a
    LoopGuardFailed) checked: from now on rolled in that body (interp.nested_whiles). None where
    the guard is no such loop's, or that loop is rolled there already."""
    span = failed.span
    for inner in failed.inner_whiles:
        if inner not in interp.nested_whiles and span is not None and _within(span, inner.span):
            interp.nested_whiles.add(inner)
            return inner
    return None


def _within(span, outer):
    """Whether a source span lies inside another."""
    return (outer is not None and span.source is outer.source
            and (outer.line, outer.column) <= (span.line, span.column)
            and (span.end_line, span.end_column) <= (outer.end_line, outer.end_column))
