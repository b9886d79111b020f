"""Which values of a program its results need: the checks the lowering adds (lower.py) are
given only for those, since a check keeps alive what it reads, and JAX's dead-code elimination
would otherwise drop a loop's unread outputs and the work of computing them (grad(grad) of a
scalar loop ran 4-6x slower with every checked value kept).

A value nothing live reads cannot change a result: a NaN in it (where a left-out zero rule
would have made a 0) goes nowhere. A loop's variable is live where the loop's final value or
its history is read, or where the body reads it (on the next iteration) to compute a live one.
"""

ALL = None      # every field of a tuple value is read


def live(steps, out_refs, wanted=ALL):
    """(the live slots, {slot of a loop's tuple: the positions of its outputs read, or ALL}) of
    a program's steps whose outputs are `out_refs`, `wanted` the positions among them read (ALL:
    every one). Guards and effects are live; a StructField reads one field of its tuple."""
    slots = {r for j, r in enumerate(out_refs) if r >= 0 and (wanted is ALL or j in wanted)}
    fields = {}
    for kind, op, refs, consts, kw, span, out in reversed(steps):
        if op == "StructField" and kind == "op":
            if out in slots and refs[0] >= 0:
                read = fields.setdefault(refs[0], set())
                if read is not ALL:
                    read.add(kw["field_index"])
            continue
        if kind == "guard" or kind == "effect" or out in slots or out in fields:
            body = (kw or {}).get("body") if op == "Scan" else None
            read = scan_reads(body.program, body.counts[0]) if body is not None else ()
            for j, r in enumerate(refs):
                if r >= 0 and (j >= len(read) or read[j]):
                    slots.add(r)
                    fields[r] = ALL     # read whole
    return slots, fields


def scan_reads(program, nx):
    """Whether a Scan's body reads each of its `nx` xs (a step or an output of its program takes
    it): the reverse Scan of a loop that writes rows of a tensor takes that tensor's history, one
    state per iteration, and reads none of it."""
    used = {r for step in program.steps for r in step[2]} | set(program.out_refs)
    return [s in used for s in program.inputs[1:1 + nx]]


def body_outputs(program, counts, read):
    """The positions among a Scan body's outputs (carry, then ys) that are live when the Scan's
    outputs `read` are (positions among final carry, ys, history; ALL: every one)."""
    nx, nc, nk, ny = counts
    if read is ALL:
        return set(range(nc + ny))
    want = {j for j in range(nc) if j in read or nc + ny + j in read} | {nc + j for j in range(ny) if nc + j in read}
    carry_in = program.inputs[1 + nx:1 + nx + nc]
    while True:
        slots, _ = live(program.steps, program.out_refs, want)
        more = {j for j, s in enumerate(carry_in) if s in slots} - want
        if not more:
            return want
        want |= more
