"""The reverse pass over a tape (dsl/core/tape.py records it): each node's rule from the
last node to the first, cotangents added up where a value fans out, and the numerics check of
reference 6.8 (the first operation whose rule gave a NaN or an infinity)."""

import math
import sys

import numpy as np

from ..errors import error
from . import tape
from .ops.arith import add
from .ops.compare import truth
from .ops.finite import all_finite
from .tape import (_missing, _same_float_dtype_recorded, Box, OneSlot, REFCOUNTS_EXACT, SlotGrad, as_float,
                   get_span, nondiff, peek, same_float_dtype, set_owned, set_span, strip_unstaged)
from .trees import children, cotangent_value, is_container, opened, to_slotgrad, zero_of
from .values import Struct


def accumulate(old, new):
    """Sum two cotangents of one value (fan-out), including structured ones."""
    if type(new) is OneSlot:        # one read of a structure: add into that slot
        sg = SlotGrad(new.total) if old is None else old if type(old) is SlotGrad else _to_slots(old)
        slot = sg.slots[new.index]
        sg.slots[new.index] = new.g if slot is None else accumulate(slot, new.g)
        return sg
    if old is None:
        return new
    if new is None:
        return old
    if type(old) is float and type(new) is float:
        return old + new
    if type(old) is np.ndarray and type(new) is np.ndarray and old.shape == new.shape:
        return old + new    # two cotangents of one tensor: nothing to check or broadcast
    if type(old) is SlotGrad or type(new) is SlotGrad or _structured(old) or _structured(new):
        # leaf by leaf: a structure's cotangents given whole (a pullback's seeds) add up by slot
        old, new = _to_slots(old), _to_slots(new)
        merged = SlotGrad(len(old.slots))
        merged.slots = [accumulate(x, y) for x, y in zip(old.slots, new.slots)]
        return merged
    return add(old, new)


def _structured(g):
    """Whether a cotangent is a struct, map or tuple value (recorded as one by an outer trace, or not)."""
    t = type(peek(g))
    return t is tuple or t is dict or t is Struct


def _to_slots(g):
    """A structured cotangent as a SlotGrad (a recorded one opened: its leaves read on the outer trace)."""
    return to_slotgrad(opened(g) if type(g) is Box else g)


def pull_back(fn, leaves, wanted, cot, check):
    """The cotangents of the `wanted` leaves for the cotangent `cot` of fn(*leaves): reverse mode
    run on a trace of its own, nested in any outer one (the rules that call a function again:
    Checkpoint, a reverse rule transposed from a forward one)."""
    trace = tape.Trace(check)
    boxed = as_parameters(trace, leaves, wanted, get_span())
    try:
        out = fn(*boxed)
        seeds = [(box, c) for box, c in _pair_leaves(out, cot)
                 if type(box) is Box and box.trace is trace and c is not None]
        backward_from(trace, seeds)
        return [cotangent_value(b.g, b.v) if type(b) is Box and b.trace is trace else None for b in boxed]
    finally:
        trace.release()


def as_parameters(trace, values, wanted, span=None):
    """The values, those `wanted` marks boxed as Parameters of reverse trace `trace`."""
    out = []
    for x, w in zip(values, wanted):
        if w:
            x = Box(x, trace, "Parameter", (), (), None, span)
            trace.nodes.append(x)
        out.append(x)
    return out


def reached(p, x, trace):
    """What a reverse pass over `trace` left on its Parameter p for value x (x's zero where nothing
    reached it, or where p is not a Parameter of that trace)."""
    if type(p) is Box and p.trace is trace and p.g is not None:
        return cotangent_value(p.g, x)
    return zero_of(x)


def _pair_leaves(out, cot):
    """Pair the leaves of an output tree with the leaves of its cotangent tree."""
    if type(out) is not Box and is_container(out):
        pairs = []
        for o, c in zip(children(out), children(cot)):
            pairs += _pair_leaves(o, c)
        return pairs
    return [(out, cot)]


def backward(trace, out, seed):
    """Run reverse mode over `trace` from box `out` with cotangent `seed`."""
    backward_from(trace, [(out, seed)])


def backward_from(trace, seeds):
    """Run reverse mode over `trace` from several (box, cotangent) seeds.

    Afterwards each Parameter that the seeds reach holds its cotangent in
    `.g`; every other node's cotangent is released as soon as it is used.

    The numerics check (reference 6.8): the pass notes the first operation (from the
    output back) whose rule gave a NaN or infinity; if a Parameter's cotangent
    is not finite at the end, the error names that operation. Rules are
    deterministic, so where no rule runs the user's code (a custom_vjp backward
    or a host function, whose effects would repeat) the pass checks nothing as
    it goes: only a gradient that is not finite at the end makes a second pass
    look for that operation (checking each rule's output cost a tenth of an
    RNN's backward pass, for an error that is rare).
    """
    culprit = _reverse(trace.nodes, seeds, trace.check and trace.user_code)
    if trace.check and not all(_finite(p.g) for p in _parameters(trace.nodes)):
        if culprit is None:
            # the pass did not check (above), or the cotangents were boxed (a derivative of a derivative,
            # or jit recording it), which it does not look into: a second pass looks, recording its checks
            culprit = _reverse(trace.nodes, seeds, _BOXED)
        if culprit is not None:
            raise numerics_error(culprit)
        bad = next(p for p in _parameters(trace.nodes) if not _finite(p.g))
        raise error("numerics", "a gradient is not finite (NaN or infinity)", bad.span)


_BOXED = "boxed"    # _reverse's check that looks into boxed cotangents too


def _parameters(nodes):
    """A tape's Parameters. A transformation boxes its arguments (Parameters, then Inputs)
    before anything runs on its trace, so they open the node list: the search stops at the
    first other node instead of walking a tape of 18,000 nodes (3% of a scalar loop's call)."""
    out = []
    for p in nodes:
        if p.op == "Parameter":
            out.append(p)
        elif p.op != "Input":
            break
    return out


def _reverse(nodes, seeds, check):
    """The reverse pass: each node's rule, from the last node to the first, never recursing.
    With `check`, returns the first node whose rule gave a NaN or an infinity (or None)."""
    culprit = None
    for node in nodes:
        node.g = None
    for box, g in seeds:
        box.g = accumulate(box.g, g)
    saved_span = get_span()
    pullbacks = tape.PULLBACKS      # the tables read from tape on each pass (a test may swap them)
    # the float rules check their own results as they go (below), so the numerics check keeps them;
    # only the second pass, which looks into boxed cotangents, takes every rule the general way
    floats, plain = ({}, {}) if check is _BOXED else (tape.FLOAT_PULLBACKS, tape.PLAIN_PULLBACKS)
    eager, traced = tape.EAGER, tape.TRACED      # bound when dsl.core.primitives is imported
    try:
        for node in reversed(nodes):
            g = node.g
            if g is None:
                continue
            parents = node.parents
            if not parents:         # Parameters and Inputs: where the cotangents end up
                continue
            node.g = None
            if type(g) is float and type(node.v) is float:
                # a float result's arguments are numbers: the float step, if there is one, needs
                # no namespace, no span (it records nothing and cannot fail) and no conversions
                step = floats.get(node.op)
                if step is not None:
                    bad = step(g, node)     # adds into the parents' cotangents; None: it could not
                    if bad is not None:
                        if bad and check and culprit is None:
                            culprit = node
                        continue
            if type(node.v) is not Box and type(g) is not Box and node.op in plain:
                # plain values (no outer trace): the step needs no namespace and no span
                # (it records nothing), and adds into the parents' cotangents itself
                bad = plain[node.op](g, node, check)
                if bad is not None:
                    if bad and culprit is None:
                        culprit = node
                    continue
            set_span(node.span)
            rule = pullbacks.get(node.op) or _missing(node.op, "vjp", node.span)
            args = node.args
            ns = eager
            if type(g) is Box or type(node.v) is Box:
                ns = traced
            else:
                for a in args:
                    if type(a) is Box:
                        ns = traced
                        break
            n = len(parents)
            owning = False
            if n == 1:
                wanted = _ONE
                if REFCOUNTS_EXACT and type(g) is np.ndarray and g.base is None and sys.getrefcount(g) == 2:
                    set_owned(g)    # only `g` here refers to it: the one rule may reuse its memory
                    owning = True
            elif n == 2:
                pa, pb = parents
                wanted = (pa is not None and pa.op != "Input", pb is not None and pb.op != "Input")
            else:
                wanted = tuple([p is not None and p.op != "Input" for p in parents])
            grads = rule(ns, g, node.v, args, node.kw, wanted)
            if owning:
                set_owned(None)
            for p, pg in zip(parents, grads):
                if pg is None or p is None or p.op == "Input":
                    continue
                pv = p.v
                if type(pg) is not float and (type(pv) is float or type(pv) is Box and type(peek(pv)) is float):
                    pg = as_float(pg)
                elif type(pg) is np.ndarray and type(pv) is np.ndarray and pg.dtype is not pv.dtype:
                    pg = same_float_dtype(pg, pv)
                elif type(pg) is Box or type(pv) is Box:
                    pg = _same_float_dtype_recorded(pg, pv)
                # a cotangent passed through unchanged (Add, a reshape of nothing) was not made by this
                # rule: whoever made it was checked
                if check and culprit is None and (pg is not g or owning) and not (
                        _finite(pg) if check is _BOXED else plain_finite(pg)):
                    culprit = node
                    if check is _BOXED:
                        return culprit
                q = p.g
                if q is None and type(pg) is not OneSlot:
                    p.g = pg
                elif type(q) is np.ndarray and type(pg) is np.ndarray and q.shape == pg.shape:
                    p.g = q + pg    # two cotangents of one tensor (accumulate's common case, without the call)
                else:
                    p.g = accumulate(q, pg)
            pg = grads = q = None   # drop our references, so the next rule's `owned` test can pass
    finally:
        set_span(saved_span)
        set_owned(None)
    return culprit


_ONE = (True,)


def plain_finite(g):
    """Whether a rule's output has no NaN or infinity, as far as can be seen without recording:
    boxed cotangents (higher order, jit) are left to the check of the Parameters at the end."""
    t = type(g)
    if t is float:
        return g - g == 0.0
    if t is np.ndarray:
        return g.dtype.kind != "f" or not g.size or all_finite(g)
    if t is OneSlot:
        return plain_finite(g.g)
    return True


def _finite(g):
    """Whether a cotangent (possibly structured, possibly boxed) has only finite numbers."""
    stack = [g]
    while stack:
        g = stack.pop()
        if type(g) is SlotGrad:
            stack.extend(g.slots)
            continue
        if type(g) is OneSlot:
            stack.append(g.g)
            continue
        v = strip_unstaged(g)
        if type(v) is Box:      # staged: the check runs with the program, its outcome a guard
            if not truth(nondiff("AllFinite", (v,))):
                return False
            continue
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


def numerics_error(node):
    """The `numerics` error naming `node`'s operation, whose rule gave a NaN or infinity, or the node
    its rule named as the one inside it that did (`kw["culprit"]`: a staged loop's body operation,
    dsl/core/primitives/loops.py)."""
    inner = node.kw.get("culprit") if node.kw else None
    if inner is not None:
        node = inner
    where = f" at {node.span.where()}" if node.span is not None else ""
    return error("numerics", f"the gradient of {node.op}{where} is not finite (NaN or infinity)", node.span,
                 hint="turn this check off with --no-check-numerics or Interpreter(check_numerics=False)")
