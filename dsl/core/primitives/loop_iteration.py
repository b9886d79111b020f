"""One iteration of a rolled loop, pulled back: the body replayed on a fresh reverse tape from
the state it started from, through the primitives (so an outer trace records it). The loop's
rules (loops.py) and their second reverse level (loop_twice.py) run it."""

from .. import reverse_pass, stage as S
from ..reverse_pass import as_parameters, reached
from ..tape import Box, Trace


def pullback(body, item, state, cts, staging=None):
    """The body's pullback at one iteration, through the primitives (so outer traces record it;
    `staging`: traces that perform and record the body's effects, as S.run's)."""
    trace, params, seeds = _iteration_tape(body, item, state, cts, False, staging)
    reverse_pass.backward_from(trace, seeds)
    grads = _cotangents(body, trace, params, state)
    trace.release()
    return grads


def _iteration_tape(body, item, state, cts, check, staging=None):
    """One iteration replayed on a fresh reverse tape from `state` (its float leaves as Parameters):
    the tape, the arguments given, and (output, cotangent) seeds for its reverse pass."""
    trace = Trace(check)
    params = as_parameters(trace, state, body.diff)
    outs = S.run(body.forward, [item, *params], staging)
    diff_outs = [o for o, d in zip(outs, body.diff) if d]
    seeds = [(o, c) for o, c in zip(diff_outs, cts) if type(o) is Box and o.trace is trace and c is not None]
    return trace, params, seeds


def _cotangents(body, trace, params, state):
    """The cotangents a reverse pass left on an iteration's Parameters (zeros where none reached)."""
    return [reached(p, x, trace) for p, x, d in zip(params, state, body.diff) if d]
