"""What the loops of dg code need to know at run time, shared by jit's rolling (rolling.py) and
the eager loops outside any jit (eager_loops.py): under which derivatives a loop's state is, and
how a rolled loop's final state goes back into the frame."""

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
