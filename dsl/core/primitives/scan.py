"""Scan: a loop over a staged body, whose reverse rule is a Scan again, so that derivatives of
any order through a loop stay loops (JAX's scan_p and its transpose; reference 6).

`Scan(xs..., carry..., consts...; body, items, reverse)` runs the body's program once per item
(backwards over the items where `reverse`):

    (item, x_k..., c_k..., consts...) -> (c_{k+1}..., y_k...)

Each of `xs` is a tensor holding one row per item (stacked on axis 0). The result is the final
carry, then the ys stacked the same way, then the history: the carry each iteration started
from, stacked, which the reverse rule reads. `items` None: one iteration per row of the xs
(item k is k), or, without xs, a while loop's: iterations until one fails a guard of the body
(its condition turned false, a `break` taken), whose starting carry is the final one; the Scans
its rules make run once per row of its history.

The reverse rule is a Scan over the same items in the other direction, of the body's pullback
staged once (`_back_body`): its carry the cotangents of the carry and the sums of the consts'
cotangents, its xs the history, the xs and the cotangents that reached the ys and the history,
its ys the xs' cotangents. That Scan is differentiated by the same rule, at any depth: each
level stages its body's pullback once and adds one loop to the staged program, instead of
writing the loop out.

Forward mode is a Scan of the body's jvp, staged once (`_jvp_body`), carrying each float
leaf's tangent beside it. The kernel takes that path itself where the top trace is a forward
one: dg's forward rules give the tangent of a result the kernel computed first, and the loop of
the jvp computes the primal values too (the loop would run twice). vmap is a Scan of the body's
batched form (`_scan_batch`).

The body is an object of the layer that compiles it (dsl/transform/jit/scan_body.py): it holds
the program and its `counts` (xs, carry, consts, ys), runs the loop on plain values (`run`),
runs one iteration through the primitives (`apply`, which an outer trace records), and keeps the
bodies derived from it (`derive`). jit uses Scan for a `for` loop under three or more reverse
levels, or two and a forward one (dsl/transform/jit/rolling.py).
"""

from itertools import chain

import numpy as np

from .. import reverse_pass, stage as S, tape
from ..row_log import LoggedRows, StateLog
from ..ops.arith import add
from ..ops.shape import transpose
from ..ops.slots import unpack
from ..ops.finite import finite
from ..reverse_pass import as_parameters, reached
from ..tape import Box, FORWARD, ForwardTrace, REVERSE, STAGE, SlotGrad, Trace, boxed_by, peek
from ..trees import cotangent_value, is_differentiable_leaf, zero_of
from .batching import Lanes, Unbatchable, batch_size, spread_where
from .loops import split_tangents, with_tangents
from .registry import define


def scan(*args, body=None, items=(), reverse=False, reads=None, check=False, culprit=None, log=None):
    """Run the loop: recorded by the traces of any boxes among the arguments (each level's kernel
    call records it on the next), on plain values by the body's compiled loop. `reads`: which of
    its outputs the program it is a step of reads (the others are none: `outputs_read`); `check`
    and `culprit`, the reverse rule's notes in the recorded step's options, which a kernel call
    on the next level receives with them. `log`: whether the history may be kept as a log
    (dsl/core/row_log.py), decided where a loop of the program (not one a rule made: those pass
    False) is recorded for a reverse pass (`_only_staged`)."""
    top = tape.top_trace(args)
    if top is None:
        return _run(args, body, items, reverse, reads, log)
    if top.kind is FORWARD:
        return _scan_jvp(top, args, body, items, reverse)
    kw = {"body": body, "items": items, "reverse": reverse}     # every output (no `reads`)
    if top.kind is REVERSE:
        kw["check"] = top.check     # the rule names the body's operation where the check fails
        kw["log"] = log is None and _only_staged(args, top)
    elif top.kind is STAGE:
        if reads is None and log is None and _only_staged(args, top):
            # a loop of the program that no derivative boxes: no rule will read its history
            reads = frozenset(range(body.counts[1] + body.counts[3]))
        if reads is not None:
            kw["reads"] = reads     # a pullback no reverse level differentiates: its history is not kept
        if log is not None:
            kw["log"] = log
    return tape.record("Scan", args, kw)


def _only_staged(args, top):
    """Whether no trace but stages boxes the arguments under `top`. Under a stage, nothing will
    read the history of a loop of the program. Under a reverse trace, only the pullback this
    trace's rule runs on plain values, row by row: it may be a log. A trace of another kind below
    would record that pullback and read the history with its rules (a third-order derivative).
    Rules pass `log` False: what they make goes on to other rules (a jvp's loop to a reverse
    level above it); so does a step replayed on `top` (its `log` given), whose pullback comes
    with it."""
    for a in args:
        x = a.v if type(a) is Box and a.trace is top else a
        while type(x) is Box:
            if x.trace.kind is not STAGE:
                return False
            x = x.v
    return True


def _run(args, body, items, reverse, reads=None, log=None):
    """The loop on plain values: (final carry..., ys stacked..., history stacked...), those
    `reads` leaves out None; with `log`, the history's large tensors as logs (LoggedRows)."""
    nx, nc, nk, ny = body.counts
    xs, carry, consts = args[:nx], args[nx:nx + nc], args[nx + nc:]
    read = [True] * (2 * nc + ny) if reads is None else [j in reads for j in range(2 * nc + ny)]
    keep = (any(read[nc:nc + ny]), any(read[nc + ny:]))
    items = iterations(items, xs)
    if items is None:
        final, ys, hist = body.run_while(carry, consts, *keep, log=bool(log))
    else:
        if reverse:
            items, xs = items[::-1], [x[::-1] for x in xs]
        final, ys, hist = body.run(items, xs, carry, consts, *keep, log=bool(log))
    if reverse:
        ys.reverse()
        hist.reverse()
    out_kinds = output_kinds(body)
    return (*final, *_columns(ys, out_kinds[nc:], read[nc:nc + ny]),
            *_columns(hist, [S.kind_of(c) for c in carry], read[nc + ny:]))


def _columns(rows, kinds, read):
    """Rows of leaves (one row per item) as one stacked tensor per leaf (None where not `read`);
    a history kept as a StateLog gives its logged leaves as LoggedRows."""
    if not any(read):
        return [None] * len(kinds)
    if type(rows) is StateLog:
        return rows.columns(read, lambda values, j: _stacked(values, kinds[j]))
    if rows and all(k == "float" for k in kinds):
        # every number of every row in one call (half of np.array's time on a list of tuples)
        table = np.fromiter(chain.from_iterable(rows), np.float64, len(rows) * len(kinds)).reshape(len(rows), -1)
        return [table[:, j] if r else None for j, r in enumerate(read)]
    return [_stacked([row[j] for row in rows], kind) if r else None for j, (kind, r) in enumerate(zip(kinds, read))]


def outputs_read(program):
    """Mark each Scan step of a program with the outputs the program reads (through StructField):
    the loop keeps and stacks only those. A replay through a transformation records the Scan
    without the mark (`scan`), since its rules read every output."""
    steps = program.steps
    found = {s[6]: set() for s in steps if s[1] == "Scan"}
    if not found:
        return
    for kind, op, refs, consts, kw, span, out in steps:
        for r in refs:
            if r in found:
                if op == "StructField":
                    found[r].add(kw["field_index"])
                else:
                    found[r] = None     # read whole
    for r in program.out_refs:
        if r in found:
            found[r] = None
    for i, step in enumerate(steps):
        read = found.get(step[6]) if step[1] == "Scan" else None
        if read is not None:
            steps[i] = (*step[:4], {**step[4], "reads": frozenset(read)}, *step[5:])


def iterations(items, xs):
    """The items a Scan runs over: its own, or one per row of its xs (None: a while loop's)."""
    if items is not None or not xs:
        return items
    return range(len(peek(xs[0])))


def input_kinds(body):
    """What each input of the body's program was when staged (stage.kind_of)."""
    program = body.program
    return [program.kinds[s] for s in program.inputs]


def output_kinds(body):
    """What each output of the body's program was when staged (stage.kind_of)."""
    program = body.program
    return [program.kinds[r] if r >= 0 else S.kind_of(c) for r, c in zip(program.out_refs, program.out_consts)]


def rows(x, kind):
    """The rows of a stacked tensor, each as the body's input of that `kind` takes it: a number,
    or a tensor."""
    if kind in ("float", "int", "bool"):
        return x.tolist()
    if type(x) is LoggedRows:       # its rows one at a time, not all of them at once
        return x
    return [np.asarray(r) for r in x] if x.ndim == 1 else list(x)


def _row(x, k, kind):
    """Row k of a stacked tensor, as `rows` gives it."""
    r = x[k]
    return r.item() if kind in ("float", "int", "bool") else np.asarray(r)


def _stacked(rows, kind):
    """Values of one leaf, one per item, as one tensor with a row each."""
    if kind == "float":
        return np.array(rows, dtype=np.float64)
    if kind in ("int", "bool"):
        return np.array(rows, dtype=np.int64 if kind == "int" else np.bool_)
    if S.is_array_kind(kind):
        if not rows:
            return np.zeros((0, *kind[3]), kind[4])
        return np.stack(rows)
    raise TypeError(f"a Scan leaf of kind {kind!r}")     # the roller stages numbers and tensors only


# ---------------------------------------------------------------- forward mode
def _scan_jvp(top, args, body, items, reverse):
    """The loop in forward mode: a Scan of the body's jvp (staged once, `_jvp_body`), carrying each
    float leaf's tangent beside it, as the jvp of JAX's scan is a scan."""
    nx, nc, nk, ny = body.counts
    diff = _diff(args)
    dx, dc, dk = diff[:nx], diff[nx:nx + nc], diff[nx + nc:]
    dy = tuple(_float_kind(k) for k in output_kinds(body)[nc:])
    primal, tangents = split_tangents(args, diff, top)
    groups = [(primal[:nx], dx), (primal[nx:nx + nc], dc), (primal[nx + nc:], dk)]
    dots, flat = iter(tangents), []
    for values, d in groups:
        flat += [*values, *[next(dots) for x in d if x]]
    its = iterations(items, primal[:nx])
    if its is not None and not len(its):      # the carry goes through with its tangents; the stacks are empty
        out = scan(*primal, body=body, items=items, reverse=reverse, log=False)     # on the traces below (jit)
        out = list(unpack(out) if type(out) is Box else out)
        tc = flat[nx + sum(dx) + nc:nx + sum(dx) + nc + sum(dc)]
        return (*with_tangents(out[:nc], dc, tc, top, "Scan"), *out[nc:])
    kinds = input_kinds(body)
    first = 0 if its is None or not reverse else len(its) - 1
    xs_kinds = [*kinds[1:1 + nx], *[k for k, d in zip(kinds[1:1 + nx], dx) if d]]
    m = nx + sum(dx)
    example = [first if its is None else its[first],
               *[_row(peek(x), first, kind) for x, kind in zip(flat[:m], xs_kinds)], *[peek(v) for v in flat[m:]]]
    jbody = body.derive(("jvp", diff), lambda: _jvp_body(body, (dx, dc, dk, dy), example))
    out = scan(*flat, body=jbody, items=items, reverse=reverse, log=False)
    parts = list(unpack(out) if type(out) is Box else out)
    final, parts = _with_dots(parts, nc, dc, top)
    ys, parts = _with_dots(parts, ny, dy, top)
    hist, _ = _with_dots(parts, nc, dc, top)
    return (*final, *ys, *hist)


def _with_dots(parts, n, diff, top):
    """The first n values of `parts`, those `diff` marks boxed on forward trace `top` with their
    tangents (the values right after them), and the values after those."""
    m = sum(diff)
    return with_tangents(parts[:n], diff, parts[n:n + m], top, "Scan"), parts[n + m:]


def _float_kind(kind):
    """Whether a stage.kind_of is a float's or a float tensor's (a leaf that takes a tangent)."""
    return kind == "float" or (S.is_array_kind(kind) and kind[2] == "f")


def _jvp_body(body, flags, example):
    """The body's jvp staged on `example`: (program, the function it was staged from, counts).
    Inputs: item; xs and their tangents; carry and its tangents; consts and their tangents
    (tangents of the float leaves only). Outputs: carry and its tangents; ys and theirs."""
    dx, dc, dk, dy = flags
    nx, nc, nk, ny = body.counts

    def jvp(values):
        forward = ForwardTrace()        # the level above anything the values are boxed by
        item, at, inputs = values[0], 1, []
        for n, d in ((nx, dx), (nc, dc), (nk, dk)):
            primal, at = values[at:at + n], at + n
            dots, at = values[at:at + sum(d)], at + sum(d)
            inputs += with_tangents(primal, d, dots, forward, "Tangent")
        outs = body.apply([item, *inputs])
        c, tc = split_tangents(outs[:nc], dc, forward)
        y, ty = split_tangents(outs[nc:], dy, forward)
        return [*c, *tc, *y, *ty]

    trace = S.StageTrace(derived=True)
    args = [trace.box(v, "Arg", (), (), None, None) for v in example]
    program = S.program_of(trace, args, tuple(jvp(args)))
    return program, jvp, (nx + sum(dx), nc + sum(dc), nk + sum(dk), ny + sum(dy))


# ---------------------------------------------------------------- reverse mode
def _scan_rule(ns, g, ans, args, kw, wanted):
    """The pullback of a Scan: a Scan of the body's pullback, the other way over the items."""
    body, items, reverse = kw["body"], kw["items"], kw["reverse"]
    nx, nc, nk, ny = body.counts
    outs = unpack(ans) if type(ans) is Box else ans
    slots = g.slots if type(g) is SlotGrad else [g] + [None] * (len(outs) - 1)
    xs, carry, consts = args[:nx], args[nx:nx + nc], args[nx + nc:]
    ys, hist = outs[nc:nc + ny], outs[nc + ny:]
    dx, dc, dk, dy = _diff(xs), _diff(carry), _diff(consts), _diff(ys)
    # the xs and consts whose cotangents nothing asks for (a loop's data, not a parameter) take
    # none: each iteration would add its part into a sum of the tensor's full size. The carry's
    # cotangents flow through every iteration, asked for or not.
    dx = tuple(d and w for d, w in zip(dx, wanted[:nx]))
    dk = tuple(d and w for d, w in zip(dk, wanted[nx + nc:]))
    # the cotangents that reached the ys and the history (the pullback's body is staged for those)
    py = tuple(dy[j] and slots[nc + j] is not None for j in range(ny))
    ph = tuple(dc[j] and slots[nc + ny + j] is not None for j in range(nc))
    flags = (dx, dc, dk, py, ph)
    ct_final = [_cotangent(slots[j], carry[j]) for j in range(nc) if dc[j]]
    ct_ys = [cotangent_value(slots[nc + j], ys[j]) for j in range(ny) if py[j]]
    ct_hist = [cotangent_value(slots[nc + ny + j], hist[j]) for j in range(nc) if ph[j]]
    zeros = [zero_of(k) for k, d in zip(consts, dk) if d]
    # a while loop's pullback runs once per iteration it made: per row of its history
    its = items if items is not None else range(len(peek(hist[0]))) if hist else range(0)
    if len(its):
        xs_back = [*hist, *xs, *ct_ys, *ct_hist]
        kinds, out_kinds = input_kinds(body), output_kinds(body)
        row_kinds = [*kinds[1 + nx:1 + nx + nc], *kinds[1:1 + nx], *[out_kinds[nc + j] for j in range(ny) if py[j]],
                     *[kinds[1 + nx + j] for j in range(nc) if ph[j]]]
        last = 0 if reverse else len(its) - 1       # the pullback's first iteration, on which it is staged

        def row(k):
            return [its[k], *[_row(peek(x), k, kind) for x, kind in zip(xs_back, row_kinds)]]

        back_body = body.derive(("back", flags), lambda: _back_body(
            body, flags, [*row(last), *[peek(c) for c in (*ct_final, *zeros, *consts)]]))
        pulled = (*xs_back, *ct_final, *zeros, *consts)
        # the pullback's history (the carry of every iteration: the cotangents of the consts summed
        # so far, each the const's size) serves only a reverse level that differentiates the
        # pullback in turn, which boxes its arguments; without one it is not kept
        _, bc, _, by = back_body.counts
        reads = None if any(boxed_by(v, REVERSE) for v in pulled) else frozenset(range(bc + by))
        out = scan(*pulled, body=back_body, items=items, reverse=not reverse, reads=reads, log=False)
        back = unpack(out) if type(out) is Box else out
        if kw.get("check") and not all(finite(peek(c)) for c in back):
            order = range(len(its)) if reverse else range(len(its) - 1, -1, -1)
            kw["culprit"] = _culprit(body, flags, order, row, [peek(c) for c in (*ct_final, *zeros, *consts)])
    else:
        back = [*ct_final, *zeros, *[zero_of(x) for x, d in zip(xs, dx) if d]]
    it = iter(back)
    ct_c0 = [next(it) if d else None for d in dc]
    ct_k = [next(it) if d else None for d in dk]
    ct_x = [next(it) if d else None for d in dx]
    return [c if w else None for c, w in zip((*ct_x, *ct_c0, *ct_k), wanted)]


def _diff(values):
    """Which leaves take cotangents (floats and float tensors)."""
    return tuple(is_differentiable_leaf(v) for v in values)


def _cotangent(slot, x):
    """A slot's cotangent as a value shaped like x (its zero where none reached it)."""
    return zero_of(x) if slot is None else cotangent_value(slot, x)


def _back_body(body, flags, example):
    """The body's pullback for one iteration (`_pulled_back`), staged on `example`: (program, the
    function it was staged from, which runs an iteration exactly where a guard of the program
    fails, its counts)."""
    dx, dc, dk, py, ph = flags
    nx, nc, nk, ny = body.counts

    def back(values):
        return _pulled_back(body, flags, values, Trace(False))[0]

    trace = S.StageTrace(derived=True)      # a derivative of it may be taken in turn
    args = [trace.box(v, "Arg", (), (), None, None) for v in example]
    program = S.program_of(trace, args, tuple(back(args)))
    return program, back, (nc + nx + sum(py) + sum(ph), sum(dc) + sum(dk), nk, sum(dx))


def _pulled_back(body, flags, values, trace):
    """One iteration of the pullback, on reverse tape `trace`: the body run again from the carry
    it started from, and reverse mode from the cotangents of its results. `values`: item; xs
    (the carry the iteration started from, its xs, the cotangents of its ys and of the history,
    those present); carry (the cotangents of the next carry, the consts' cotangents summed so
    far); consts. Gives (the cotangents of the carry it started from, the sums with this
    iteration's added, the cotangents of its xs) and, where `trace` checks, the operation whose
    rule first gave a NaN or an infinity (reference 6.8), or None."""
    dx, dc, dk, py, ph = flags
    nx, nc, nk, ny = body.counts
    item, at = values[0], 1
    c, at = values[at:at + nc], at + nc
    x, at = values[at:at + nx], at + nx
    cty, at = values[at:at + sum(py)], at + sum(py)
    cth, at = values[at:at + sum(ph)], at + sum(ph)
    ct_next, at = values[at:at + sum(dc)], at + sum(dc)
    acc, at = values[at:at + sum(dk)], at + sum(dk)
    k = values[at:]
    xp, cp, kp = as_parameters(trace, x, dx), as_parameters(trace, c, dc), as_parameters(trace, k, dk)
    outs = body.apply([item, *xp, *cp, *kp])
    cts, ys = iter(ct_next), iter(cty)
    seeds = [(o, next(cts)) for o, d in zip(outs[:nc], dc) if d]
    seeds += [(o, next(ys)) for o, p in zip(outs[nc:], py) if p]
    seeds = [(o, g) for o, g in seeds if type(o) is Box and o.trace is trace]
    culprit = None
    if trace.check:
        culprit = reverse_pass._reverse(trace.nodes, seeds, True)
    else:
        reverse_pass.backward_from(trace, seeds)
    hist = iter(cth)
    ct_c = [reached(p, v, trace) for p, v, d in zip(cp, c, dc) if d]
    ct_c = [add(g, next(hist)) if p else g for g, p in zip(ct_c, [p for p, d in zip(ph, dc) if d])]
    sums = [add(a, reached(p, v, trace))
            for a, p, v in zip(acc, [p for p, d in zip(kp, dk) if d], [v for v, d in zip(k, dk) if d])]
    ct_x = [reached(p, v, trace) for p, v, d in zip(xp, x, dx) if d]
    trace.release()
    return [*ct_c, *sums, *ct_x], culprit


def _culprit(body, flags, order, row, rest):
    """The operation of the body whose rule first gave a NaN or an infinity, from the iteration the
    pullback runs first on, as the interpreter's numerics check names it (reference 6.8), or None.
    `row(k)`: iteration k's item and xs; `rest`: the cotangents of the final carry, zeros for the
    consts' sums, the consts."""
    n = sum(flags[1]) + sum(flags[2])
    carry, consts = rest[:n], rest[n:]
    for k in order:
        out, found = _pulled_back(body, flags, [*row(k), *carry, *consts], Trace(True))
        if found is not None:
            return found
        carry = out[:n]
    return None


# ---------------------------------------------------------------- vmap
def _scan_batch(ns, args, batched, kw):
    """vmap of a Scan: the Scan of the body's batched form (staged once by the body's layer,
    `body.batched`). A carry leaf is batched where the batch reaches it on some iteration (a
    fixed point, as JAX's rule for scan finds it); a batched xs or ys tensor holds its rows on
    axis 1 (the batch is axis 0), so the Scan reads and stacks them with the two axes swapped."""
    body, items, reverse = kw["body"], kw["items"], kw["reverse"]
    nx, nc, nk, ny = body.counts
    its = iterations(items, args[:nx])
    if its is None or not len(its):
        raise Unbatchable(f"the loop at {body.where} is a while loop, or runs no iteration")
    size = batch_size(args, batched)
    bx, bk = tuple(batched[:nx]), tuple(batched[nx + nc:])
    flags, by = S.scan_batched(body, batched)
    xs = [_swapped(x) if b else x for x, b in zip(args[:nx], bx)]
    carry = spread_where(args[nx:nx + nc], flags, batched[nx:nx + nc], size)
    consts = args[nx + nc:]
    first = len(its) - 1 if reverse else 0
    example = [its[first], *[peek(x)[first] if b else _row(peek(x), first, kind)
                               for x, b, kind in zip(xs, bx, input_kinds(body)[1:1 + nx])],
               *[peek(v) for v in (*carry, *consts)]]
    bbody = body.derive(("batch", bx, flags, bk, size), lambda: body.batched((bx, flags, bk, by), size, example))
    # the outputs the program read of the Scan (outputs_read), which the batched one keeps alone
    out = scan(*xs, *carry, *consts, body=bbody, items=items, reverse=reverse, reads=kw.get("reads"), log=False)
    parts = list(unpack(out) if type(out) is Box else out)
    ys = [_swapped(y) if b and peek(y) is not None else y for y, b in zip(parts[nc:nc + ny], by)]
    hist = [_swapped(h) if b and peek(h) is not None else h for h, b in zip(parts[nc + ny:], flags)]
    return Lanes((*parts[:nc], *ys, *hist), (*flags, *by, *flags))


def _swapped(x):
    """A tensor with its first two axes swapped (the batch and the rows)."""
    nd = peek(x).ndim
    return transpose(x, (1, 0, *range(2, nd)))


# a body's guards decide whether a recording applies, even where nothing reads the Scan's result
define("Scan", scan, vjp_all=_scan_rule, batch=_scan_batch, guards=True)

__all__ = ["scan", "outputs_read", "rows", "input_kinds", "iterations"]
