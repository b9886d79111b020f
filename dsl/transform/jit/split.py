"""A rolled loop's pullback split in two: what the forward pass can keep, and the reverse pass.

The pullback Q of a loop body (dsl/core/primitives/loops.py) starts from an
iteration's starting state: it replays the body's forward program P, then runs
its reverse pass. Run once per iteration on the way back, that computes every
iteration's forward a second time. Here Q's steps are parted by what they read:

- F, the steps that read only the loop variable and the state (the replayed
  forward, and the parts of the rules that read only forward values, such as
  1 - tanh(h)**2), and
- B, the steps that read a cotangent.

F's steps are appended to P's, renumbered onto P's slots (jit's common
subexpression pass, optimize.py, then folds the replayed forward into P's own),
and P' = P + F also returns the residuals: F's values that B reads. B is a
program from (residuals, cotangents) to the cotangents of the starting state.
The forward loop runs P' and keeps each iteration's residuals; the reverse loop
runs B on them. B computes only the cotangents its caller reads, and those of
the leaves the body changes (`needed_only`); where a NaN made on any iteration
would reach the final cotangents, B's NaN checks wait for the end of the loop
(`checks_can_wait`), and a NaN there runs the loop again with them. In both
halves, what reads only values that are the same on every iteration (the
weights' transposes, the cotangent of a sum's unchanged total) runs once per
loop (`hoisted`).

F's guards are those of P, replayed (a while loop's condition, a branch of the body), which
P' checks already. There is no split (None) where F holds another guard: a rule that looked
at a forward value keeps the exact pullback, which may fall back per iteration.
"""

from ...backends.optimize import keeps_nan, step_key
from ...core.stage import Draw, Program, same
from ...core.trees import flatten


def split(forward, pullback):
    """(P', B) from a body's forward program and its staged pullback, or None."""
    n_state = len(forward.inputs) - 1
    q_inputs = pullback.inputs
    cts = set(q_inputs[1 + n_state:])
    backward = set(cts)
    drawn = _drawn_as(forward, pullback)
    if drawn is None:
        return None
    f_steps, b_steps, f_guards = [], [], []
    for step in pullback.steps:
        kind, refs, slot = step[0], step[2], step[6]
        if kind == "effect":
            continue        # a draw Q replays is P's own: its value is P's (drawn)
        if any(r in backward for r in refs):
            if kind == "op":
                backward.add(slot)
            b_steps.append(step)
        elif kind == "guard":
            f_guards.append(step)
        else:
            f_steps.append(step)
    if f_guards and not _replayed_guards(forward, pullback, f_guards):
        return None
    residuals = _read_by(b_steps, pullback.out_refs, backward)
    f_steps = _needed(f_steps, residuals)
    # F's slots onto P's: Q's inputs are P's inputs; its own slots follow P's
    where = dict(zip(q_inputs[:1 + n_state], forward.inputs))
    where.update(drawn)
    base = forward.nslots
    for step in f_steps:
        where[step[6]] = base + step[6]
    kinds = list(forward.kinds) + [None] * pullback.nslots
    spans = list(forward.spans)
    steps = list(forward.steps)
    for kind, op, refs, consts, kw, span, slot in f_steps:
        kinds[where[slot]] = pullback.kinds[slot]
        steps.append((kind, op, tuple(where[r] if r >= 0 else r for r in refs), consts, kw,
                      len(spans) + span if span >= 0 else -1, where[slot]))
    spans += pullback.spans
    res_refs = tuple(where[r] for r in residuals)
    out_refs = tuple(forward.out_refs) + res_refs
    out_consts = tuple(forward.out_consts) + (None,) * len(res_refs)
    kept = Program(base + pullback.nslots, forward.inputs, steps, flatten(out_consts)[1], out_refs, out_consts,
                   kinds, spans)
    back = Program(pullback.nslots, tuple(residuals) + q_inputs[1 + n_state:], b_steps, pullback.out_spec,
                   pullback.out_refs, pullback.out_consts, pullback.kinds, pullback.spans)
    return kept, back


def _drawn_as(forward, pullback):
    """Q's effects as P's: {Q's slot: P's slot} where each is a keyless draw Q replays, the i-th
    of Q's being P's i-th (Q replays P in order), so that P' draws once per iteration and B reads
    what it drew; None where Q has another effect (then there is no split)."""
    q_effects = pullback.effects
    if len(q_effects) != len(forward.effects):
        return None
    slots = {}
    for q, p in zip(q_effects, forward.effects):
        if type(q[4].get("fn")) is not Draw or q[4].get("fn") is not p[4].get("fn"):
            return None
        slots[q[6]] = p[6]
    return slots


def _same_as(forward, program):
    """The slots of `program` (whose first inputs are `forward`'s: the item and the state) that
    compute what one of `forward`'s does, matched by what they compute from the inputs on:
    slot -> forward's slot; and forward's slots -> the first of them computing the same (P'
    repeats some of P's steps: the common subexpression pass, optimize.py, folds them later)."""
    same_as = dict(zip(program.inputs[:len(forward.inputs)], forward.inputs))
    computed, first = {}, {}
    for kind, op, refs, consts, kw, span, slot in forward.steps:
        if kind == "op":
            first[slot] = computed.setdefault(step_key(op, tuple(first.get(r, r) for r in refs), consts, kw), slot)
    for kind, op, refs, consts, kw, span, slot in program.steps:
        if kind != "op" or any(r >= 0 and r not in same_as for r in refs):
            continue
        found = computed.get(step_key(op, tuple(same_as.get(r, r) for r in refs), consts, kw))
        if found is not None:
            same_as[slot] = found
    return same_as, first


def _replayed_guards(forward, pullback, guards):
    """Whether each of Q's guards (in `guards`) is one of P's, checking the same value of P's
    replayed forward."""
    same_as, first = _same_as(forward, pullback)
    p_guards = {}
    for step in forward.guards:
        p_guards.setdefault(first.get(step[2][0], step[2][0]), []).append(step[3][0])
    for kind, op, refs, consts, kw, span, slot in guards:
        r = same_as.get(refs[0]) if refs[0] >= 0 else None
        if r is None or not any(same(consts[0], e) for e in p_guards.get(r, ())):
            return False
    return True


def on_residuals(kept, count, program):
    """`program`, whose first inputs are the forward's (the item and the state), reading the
    residuals P' (`kept`) keeps, its last `count` outputs, instead of computing them again: a
    program over (the residuals..., its other inputs...), or None where it reads a value of the
    forward that is not among them (or a guard or an effect reads one)."""
    n = len(kept.inputs)
    same_as, first = _same_as(kept, program)
    res_refs = kept.out_refs[len(kept.out_refs) - count:]
    position = {}
    for j, r in enumerate(res_refs):
        position.setdefault(first.get(r, r), j)
    base = program.nslots
    kept_as = {s: base + position[f] for s, f in same_as.items() if f in position}
    missing = set(program.inputs[:n]) - kept_as.keys()      # forward values it cannot read
    steps = []
    for step in program.steps:
        kind, op, refs, consts, kw, span, slot = step
        if kind == "op" and slot in kept_as:
            continue
        if any(r in missing for r in refs):
            if kind != "op":
                return None
            missing.add(slot)
            continue
        if any(r in kept_as for r in refs):
            step = (kind, op, tuple(kept_as.get(r, r) for r in refs), consts, kw, span, slot)
        steps.append(step)
    if any(r in missing for r in program.out_refs):
        return None
    inputs = tuple(range(base, base + count)) + tuple(program.inputs[n:])
    out_refs = tuple(kept_as.get(r, r) for r in program.out_refs)
    kinds = list(program.kinds) + [kept.kinds[r] for r in res_refs]
    return Program(base + count, inputs, steps, program.out_spec, out_refs, program.out_consts, kinds,
                   program.spans)


def cotangents(back):
    """B's cotangent inputs (after the residuals), one per result, in the results' order."""
    return back.inputs[len(back.inputs) - len(back.out_refs):]


def needed_only(back, keep):
    """B computing only the cotangents kept (keep[j] for the j-th cotangent); each other one is
    its input passed through, and what only it needed is left out."""
    out_refs = tuple(r if k else c for r, c, k in zip(back.out_refs, cotangents(back), keep))
    out_consts = tuple(x if k else None for x, k in zip(back.out_consts, keep))
    guards = [s for s in back.steps if s[0] == "guard"]
    wanted = [r for r in out_refs if r >= 0] + [r for g in guards for r in g[2] if r >= 0]
    steps = _needed([s for s in back.steps if s[0] != "guard"], wanted)
    order = {id(s): i for i, s in enumerate(back.steps)}
    steps = sorted(steps + guards, key=lambda s: order[id(s)])
    return Program(back.nslots, back.inputs, steps, back.out_spec, out_refs, out_consts, back.kinds, back.spans)


def checks_can_wait(back):
    """Whether B's NaN checks (optimize.py) may wait until the reverse loop is done: B has no guard
    and only operations that keep a NaN a NaN, and each cotangent it is given reaches a result it
    computes, so that a NaN made on any iteration reaches the loop's final cotangents. A `where`
    (an if run both ways) may drop a NaN the code without checks made where the exact code has a
    0 (a left-out zero rule), but only by choosing the other operand, the same in both: a
    finite result it gives is the exact code's."""
    if any(s[0] != "op" or (not keeps_nan(s[1]) and s[1] != "Where") for s in back.steps):
        return False
    cts = cotangents(back)
    live = {r for r, c in zip(back.out_refs, cts) if r >= 0 and r != c}
    for step in reversed(back.steps):
        if step[6] in live:
            live.update(r for r in step[2] if r >= 0)
    return all(c in live for r, c in zip(back.out_refs, cts) if r != c)


def hoisted(program, fixed):
    """The program's steps that read only `fixed` inputs (the same on every iteration) and
    constants, moved to a prelude run once per loop: (prelude, body, the slots moved), or None
    where none move. The prelude takes the program's inputs and gives the moved values the body
    reads; the body takes them after its own inputs."""
    invariant = set(fixed)
    moved, rest = [], []
    for step in program.steps:
        if step[0] == "op" and all(r < 0 or r in invariant for r in step[2]):
            invariant.add(step[6])
            moved.append(step)
        else:
            rest.append(step)
    if not moved:
        return None
    read = [r for r in _read_by(rest, program.out_refs, set()) if r in invariant and r not in fixed]
    consts = (None,) * len(read)
    prelude = Program(program.nslots, program.inputs, moved, flatten(consts)[1], tuple(read), consts,
                      program.kinds, program.spans)
    body = Program(program.nslots, tuple(program.inputs) + tuple(read), rest, program.out_spec,
                   program.out_refs, program.out_consts, program.kinds, program.spans)
    return prelude, body, invariant


def _read_by(steps, out_refs, backward):
    """The slots outside `backward` that the steps or the outputs read, in order of first reading."""
    seen = {}
    for step in steps:
        for r in step[2]:
            if r >= 0 and r not in backward:
                seen.setdefault(r, None)
    for r in out_refs:
        if r >= 0 and r not in backward:
            seen.setdefault(r, None)
    return list(seen)


def _needed(steps, wanted):
    """The steps that compute the wanted slots, in order."""
    live = set(wanted)
    out = []
    for step in reversed(steps):
        if step[6] in live:
            live.update(r for r in step[2] if r >= 0)
            out.append(step)
    out.reverse()
    return out


__all__ = ["split", "on_residuals", "cotangents", "needed_only", "checks_can_wait", "hoisted"]
