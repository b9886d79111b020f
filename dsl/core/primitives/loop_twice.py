"""A rolled loop under two reverse levels (grad of grad while jit stages): the outer reverse
pass through Loop and LoopBack, each a loop again, as JAX's transpose of a scan is a scan.

Under one reverse level a rolled loop is `Loop(s_0) -> (s_N, history s_0..s_{N-1})` and its
pullback `LoopBack(history, c_N) -> c_0`, which walks c_k = Q(s_k, c_{k+1}) from the last
iteration back (Q: the body's pullback, dsl/core/primitives/loops.py). Where that pullback is
itself differentiated (the inner grad of grad(f)), jit records both on the outer tape as
steps (before, each iteration was written out there), and the outer reverse pass needs:

- LoopBack's rule: from the cotangents u_0 of c_0, forward over the iterations,
  (u_{k+1}, s̄_k) = QT(s_k, c_{k+1}; u_k), QT being the pullback of Q at that iteration:
  the cotangents of c_N (u_N) and of the history (s̄_k, one per iteration). It reads
  each c_{k+1}, which LoopBack keeps (its own history) when recorded under a reverse level.
  This is the primitive `LoopBackT`.
- Loop's rule given cotangents of its history too (the s̄_k): c_k = Q(s_k, c_{k+1}) + s̄_k,
  the primitive `LoopBackAdd`.

On plain values each runs its body staged once and its loop compiled whole
(dsl/transform/jit/loop_walks.py); under any other transformation (a third level, grad of such a jit)
the kernels take each iteration through the primitives (`back_reversed`, `back_added`), so
that the transformation records every one, exactly.
"""

from .. import reverse_pass, tape
from ..ops.arith import add
from ..ops.slots import unpack
from ..reverse_pass import as_parameters, reached
from ..tape import Box, SlotGrad, STAGE, Trace
from ..trees import cotangent_value, zero_of
from .loop_iteration import pullback
from .registry import define


def over_stage(values, top):
    """Whether `top`, a reverse trace, is the only one between these values and a staging jit:
    the level at which a rolled loop's steps are recorded as steps under two reverse levels."""
    for x in values:
        if type(x) is Box and x.trace is top:
            v = x.v
            return type(v) is Box and v.trace.kind is STAGE and not v.trace.dry
    return False


# ---------------------------------------------------------------- one iteration, exactly
def back_added(body, item, state, h, cts):
    """c_k = Q(s_k, c_{k+1}) + s̄_k through the primitives."""
    return [add(c, x) for c, x in zip(pullback(body, item, state, cts), h)]


def back_reversed(body, item, state, cnext, u):
    """(u_{k+1}, s̄_k): the pullback of one iteration's pullback Q at (s_k, c_{k+1}), given the
    cotangents u_k of its result, through the primitives (an outer trace records them)."""
    trace = Trace(False)
    params = as_parameters(trace, state, body.diff)
    cparams = as_parameters(trace, cnext, (True,) * len(cnext))
    outs = pullback(body, item, params, cparams)
    seeds = [(o, g) for o, g in zip(outs, u) if type(o) is Box and o.trace is trace and g is not None]
    reverse_pass.backward_from(trace, seeds)
    unext = [reached(p, c, trace) for p, c in zip(cparams, cnext)]
    sbar = [reached(p, x, trace) for p, x, d in zip(params, state, body.diff) if d]
    trace.release()
    return unext, sbar


# ---------------------------------------------------------------- the kernels
def iterations(items, kept):
    """The items a loop ran: a while loop's (None) are counted by its history."""
    return items if items is not None else range(len(kept))


def history_top(kept, more, entries=()):
    """The top trace over a history (a box of one, or a list whose entries may hold boxes), its
    other arguments and its per-iteration `entries` (lists of tuples), or None."""
    first = []
    for seq in (kept, *entries):
        if isinstance(seq, list) and seq:
            first.extend(seq[0])
    return tape.top_trace((kept, *entries, *more, *first))


def _records(top, kept):
    """Whether the kernel is recorded as a step: by a stage, which vmap's look at a function (a dry
    one) is only for a history it staged (as LoopBack's kernel says)."""
    return top is not None and top.kind is STAGE and (not top.dry or type(kept) is Box)


def _back_reversed_plain(kept, cthist, *u, body=None, items=()):
    """LoopBackT's kernel on plain values (what compiled code calls)."""
    return body.walks().back_reversed(iterations(items, kept), kept, cthist, list(u))


def _back_added_plain(kept, hbar, *cts, body=None, items=()):
    """LoopBackAdd's kernel on plain values (what compiled code calls)."""
    return tuple(body.walks().back_added(iterations(items, kept), kept, hbar, list(cts)))


def _kernel(name, plain, exact, kept, history, args, body, items):
    """LoopBackT's and LoopBackAdd's kernel: recorded as a step on a stage, by the compiled walk
    (`plain`) on plain values, else iteration by iteration through the primitives (`exact`), so
    that an outer trace records each; `history`: the per-iteration cotangents it reads."""
    top = history_top(kept, args, (history,))
    if _records(top, kept):
        return tape.record(name, (kept, history, *args), {"body": body, "items": items})
    kept, history = tape.strip_unstaged(kept), tape.strip_unstaged(history)
    if top is None:
        return plain(kept, history, *args, body=body, items=items)
    return exact(body, iterations(items, kept), kept, history, list(args))


def _back_reversed_kernel(kept, cthist, *u, body=None, items=()):
    """LoopBackT: (u_N..., the history's cotangents s̄_0..s̄_{N-1}) from u_0 (see the module docstring)."""
    return _kernel("LoopBackT", _back_reversed_plain, _back_reversed_exact, kept, cthist, u, body, items)


def _back_reversed_exact(body, items, kept, cthist, u):
    """LoopBackT through the primitives, forward over the iterations."""
    sbars = []
    for k in range(len(items)):
        u, sbar = back_reversed(body, items[k], kept[k], cthist[k], u)
        sbars.append(tuple(sbar))
    return (*u, sbars)


def _back_added_kernel(kept, hbar, *cts, body=None, items=()):
    """LoopBackAdd: c_0 from c_N, adding the history's cotangents on the way (module docstring)."""
    return _kernel("LoopBackAdd", _back_added_plain, _back_added_exact, kept, hbar, cts, body, items)


def _back_added_exact(body, items, kept, hbar, ct):
    """LoopBackAdd through the primitives, back over the iterations."""
    for k in range(len(items) - 1, -1, -1):
        ct = back_added(body, items[k], kept[k], hbar[k], ct)
    return tuple(ct)


def back_with_history(body, items, kept, cts, top):
    """LoopBack keeping each iteration's incoming cotangents c_{k+1} (for LoopBackT): plain
    values by the compiled walk, else through the primitives; (c_0..., that history). `top`:
    history_top(kept, cts)."""
    if top is None:
        return body.walks().back(items, kept, list(cts))
    ct, kept_cts = list(cts), [None] * len(items)
    for k in range(len(items) - 1, -1, -1):
        kept_cts[k] = tuple(ct)
        ct = pullback(body, items[k], kept[k], ct)
    return (*ct, kept_cts)


# ---------------------------------------------------------------- the rules
def loop_back_rule(ns, g, ans, args, kw, wanted):
    """Reverse mode through LoopBack (recorded with its history of cotangents): LoopBackT."""
    kept, cts = args[0], args[1:]
    m = len(cts)
    cthist = (unpack(ans) if type(ans) is Box else ans)[m]
    slots = g.slots if type(g) is SlotGrad else [None] * (m + 1)
    u = [zero_of(c) if s is None else cotangent_value(s, c) for s, c in zip(slots, cts)]
    out = _back_reversed_kernel(kept, cthist, *u, body=kw["body"], items=kw["items"])
    parts = unpack(out) if type(out) is Box else out
    return [parts[m] if wanted[0] else None, *[x if w else None for x, w in zip(parts[:m], wanted[1:])]]


define("LoopBackT", _back_reversed_kernel, plain=_back_reversed_plain)
define("LoopBackAdd", _back_added_kernel, plain=_back_added_plain)

__all__ = ["over_stage", "history_top", "iterations", "back_with_history", "loop_back_rule"]
