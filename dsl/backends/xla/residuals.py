"""Residuals: a reverse loop reads what its forward loop computed instead of computing it again
(what JAX's partial evaluation does to a scan's body).

A Scan's reverse rule (dsl/core/primitives/scan.py) is a Scan B of the body's pullback over the
forward Scan A's history: each iteration of B runs A's body again from the carry that iteration
started from, then passes the cotangents back. The steps of B's body that depend only on what
A's iteration had (its item, its row of A's xs, the carry it started from, A's consts) are A's
work done a second time: an RNN's pass back multiplied its matrices again. `hoist` gives A's
body those steps too, the tensors among them becoming extra ys of A (the residuals), which B
reads row by row instead of computing them; XLA merges the added steps with A's own (common
subexpressions). B still computes the numbers among them: a number costs less to compute again
than to store and read back (a scalar loop's pass back ran 1.7x slower reading them), but for a
number read out of a tensor A carries (y[i - 1] of a loop that writes y[i]): computed again, it
kept A's history of that tensor, a copy per iteration. The values are the same, computed once:
the results are those of the program as staged.

Only what XLA runs is rewritten: jit's recording, which other transformations replay, stays
as staged.
"""

import numpy as np

from ...core import stage as S
from .rules import ON_HOST

STAYS = frozenset(ON_HOST) | {"Scan", "Loop"}     # effects stay in order; nested loops where they are


class Body:
    """A Scan body as the lowering reads it: its program, counts (xs, carry, consts, ys), and the
    function it was derived from (None: a loop's own body)."""

    __slots__ = ("program", "counts", "exact")

    def __init__(self, program, counts, exact):
        self.program = program
        self.counts = counts
        self.exact = exact


def hoist(program):
    """The program with every pair of a forward Scan and its reverse Scan rewritten as the module
    docstring says, inside Scan bodies too; the program itself where there is none."""
    steps, kinds, nslots = [], list(program.kinds), program.nslots
    where = {}          # a Scan's slot -> its position in `steps`
    fields = {}         # a StructField's slot -> (the Scan's slot, its position in `steps`)
    renumbered = {}     # a Scan's slot -> (its first history field as staged, fields added before it)
    # vmap's rule swaps a batched Scan's history to put the batch first and the reverse Scan's
    # rule swaps it back: the reverse Scan reads the forward one's history through the two
    swapped = {}        # a TransposeOp's slot -> (its operand, its axes)
    alias = {}          # the slot of a transpose undoing the one before it -> that one's operand
    changed = False
    for step in program.steps:
        kind, op, refs, consts, kw, span, out = step
        before = []
        if alias and any(r in alias for r in refs):
            refs = tuple(alias.get(r, r) for r in refs)
            step = (kind, op, refs, consts, kw, span, out)
            changed = True
        if op == "TransposeOp" and kw.get("axes") is not None:
            first = swapped.get(refs[0])
            if first is not None and all(first[1][b] == j for j, b in enumerate(kw["axes"])):
                alias[out] = first[0]
            swapped[out] = (refs[0], kw["axes"])
        if op == "StructField" and refs[0] in renumbered:      # a field numbered as staged
            first, n = renumbered[refs[0]]
            f = kw["field_index"] + (n if kw["field_index"] >= first else 0)
            step = (kind, op, refs, consts, {**kw, "field_index": f, "total_fields": kw["total_fields"] + n,
                                             "name": f}, span, out)
        if op == "Scan":
            body = kw["body"]
            inner = hoist(body.program)
            if inner is not body.program:
                step = (kind, op, refs, consts, {**kw, "body": Body(inner, body.counts, body.exact)}, span, out)
                changed = True
            paired = _pair(step, steps, where, fields, kinds, nslots, renumbered)
            if paired is not None:
                step, before = paired
                nslots += len(before)
                changed = True
        for s in (*before, step):
            if s[1] == "Scan":
                where[s[6]] = len(steps)
            elif s[1] == "StructField" and s[2][0] in where:
                fields[s[6]] = (s[2][0], len(steps))
            steps.append(s)
    if not changed:
        return program
    return S.Program(nslots, program.inputs, tuple(steps), program.out_spec,
                     tuple(alias.get(r, r) for r in program.out_refs), program.out_consts, kinds, program.spans)


def _pair(b_step, steps, where, fields, kinds, nslots, renumbered):
    """Where `b_step` is the reverse Scan of a forward Scan A earlier in `steps`: A's step
    rewritten in place (its body gives the residuals too; the fields of its history read one
    further on), and (B's step rewritten, the StructField steps that read the residuals out of
    A, to go before it), their slots from `nslots` on, their kinds added to `kinds`;
    `renumbered` notes how A's history fields further on are numbered now. None where it is not
    such a Scan, or nothing would move."""
    _, _, b_refs, b_consts, b_kw, b_span, b_out = b_step
    b_body = b_kw["body"]
    nxb, ncb, nkb, nyb = b_body.counts
    a_at = _forward_of(b_refs[:nxb], fields, steps, where)
    if a_at is None:
        return None
    a_step = steps[a_at]
    a_refs, a_kw, a_slot = a_step[2], a_step[4], a_step[6]
    a_body = a_kw["body"]
    nxa, nca, nka, nya = a_body.counts
    if (a_kw["items"] is None or b_kw["items"] is None or a_kw["reverse"] == b_kw["reverse"]
            or list(a_kw["items"]) != list(b_kw["items"])):
        return None
    ap, bp = a_body.program, b_body.program
    a_in, b_in = ap.inputs, bp.inputs
    # B's inputs that A's iteration has: the item and rows of A's history or xs (they vary from
    # one iteration to the next), and A's consts (they do not)
    varying = {b_in[0]: a_in[0]}
    rows_of_carries = set()     # B's inputs that are rows of A's history of a tensor
    for j, r in enumerate(b_refs[:nxb]):
        at = _source_in_a(r, a_step, steps, fields)
        if at is not None:
            varying[b_in[1 + j]] = a_in[at]
            if at >= 1 + nxa and S.is_array_kind(bp.kinds[b_in[1 + j]]):
                rows_of_carries.add(b_in[1 + j])
    fixed = {}
    a_consts = a_refs[nxa + nca:]
    for j, r in enumerate(b_refs[nxb + ncb:]):
        if r >= 0 and r in a_consts:
            fixed[b_in[1 + nxb + ncb + j]] = a_in[1 + nxa + nca + a_consts.index(r)]
    moved, copied = _split(bp, varying, fixed)
    # B reads the tensors instead of computing them, and computes the numbers again (docstring),
    # but for those it reads out of a tensor A carries (y[i - 1] of a loop writing y[i]): A's
    # history of that tensor, a copy per iteration, is then read by nothing, and XLA drops it
    lifted = {i for i in moved if S.is_array_kind(bp.kinds[bp.steps[i][6]])
              or any(r in rows_of_carries for r in bp.steps[i][2])}
    made = {bp.steps[i][6] for i in lifted}
    used = [r for i, s in enumerate(bp.steps) if i not in lifted for r in s[2]] + list(bp.out_refs)
    residuals = sorted({r for r in used if r in made})
    if not residuals:
        return None
    n = len(residuals)

    # A's body: its own steps, then those of B's it can compute (and the fixed ones they read)
    slot_of = {**varying, **fixed}
    taken = sorted(moved | copied)
    for k, i in enumerate(taken):
        slot_of[bp.steps[i][6]] = ap.nslots + k
    shift = len(ap.spans)
    new_steps = [*ap.steps, *[_renamed(bp.steps[i], slot_of, shift) for i in taken]]
    a_program = S.Program(ap.nslots + len(taken), a_in, tuple(new_steps), ap.out_spec,
                          (*ap.out_refs, *[slot_of[r] for r in residuals]), (*ap.out_consts, *[None] * n),
                          [*ap.kinds, *[bp.kinds[bp.steps[i][6]] for i in taken]], [*ap.spans, *bp.spans])
    total = 2 * nca + nya
    a_kw = {**a_kw, "body": Body(a_program, (nxa, nca, nka, nya + n), a_body.exact)}
    if a_kw.get("reads") is not None:
        a_kw["reads"] = frozenset([f + n if f >= nca + nya else f for f in a_kw["reads"]]
                                  + [nca + nya + k for k in range(n)])
    steps[a_at] = (*a_step[:4], a_kw, *a_step[5:])
    first, before = renumbered.get(a_slot, (nca + nya, 0))
    renumbered[a_slot] = (first, before + n)       # A's history fields read after B: numbered anew
    for scan, at in fields.values():
        if scan == a_slot:
            s = steps[at]
            f = s[4]["field_index"]
            f = f + n if f >= nca + nya else f
            steps[at] = (*s[:4], {**s[4], "field_index": f, "total_fields": total + n, "name": f}, *s[5:])

    # B reads each residual as a row of A's new ys (its first xs) instead of computing it
    length = len(list(a_kw["items"]))
    added = []
    for k, r in enumerate(residuals):
        kinds.append(_stacked(bp.kinds[r], length))
        f = nca + nya + k
        added.append(("op", "StructField", (a_slot,), (None,), {"field_index": f, "total_fields": total + n,
                                                               "name": f}, -1, nslots + k))
    b_program = S.Program(bp.nslots, (b_in[0], *residuals, *b_in[1:]),
                          tuple(s for i, s in enumerate(bp.steps) if i not in lifted), bp.out_spec,
                          bp.out_refs, bp.out_consts, bp.kinds, bp.spans)
    b_kw = {**b_kw, "body": Body(b_program, (nxb + n, ncb, nkb, nyb), b_body.exact)}
    return ("op", "Scan", (*range(nslots, nslots + n), *b_refs), (*[None] * n, *b_consts), b_kw, b_span,
            b_out), added


def _field(steps, fields, r):
    """(the Scan's slot, the field index) where slot r is a field of a Scan's result, else None."""
    found = fields.get(r)
    if found is None:
        return None
    return found[0], steps[found[1]][4]["field_index"]


def _forward_of(xs_refs, fields, steps, where):
    """The position in `steps` of the Scan whose history one of these xs is (a reverse Scan's
    first xs are its forward Scan's history), or None."""
    for r in xs_refs:
        found = _field(steps, fields, r)
        if found is not None:
            scan, f = found
            nx, nc, nk, ny = steps[where[scan]][4]["body"].counts
            if f >= nc + ny:
                return where[scan]
    return None


def _source_in_a(r, a_step, steps, fields):
    """The position among A's body inputs of what slot r holds row by row, where it is a row of
    A's history (the carry an iteration started from) or one of A's xs; else None."""
    nx, nc, nk, ny = a_step[4]["body"].counts
    found = _field(steps, fields, r)
    if found is not None and found[0] == a_step[6] and found[1] >= nc + ny:
        return 1 + nx + found[1] - nc - ny
    if found is None and r >= 0 and r in a_step[2][:nx]:
        return 1 + a_step[2][:nx].index(r)
    return None


def _split(program, varying, fixed):
    """The positions of the steps of B's body that A's iteration can compute: those reading a
    varying value (`moved`) and those reading fixed ones only (`copied`: loop-invariant, B keeps
    computing them too)."""
    var, inv = set(varying), set(fixed)
    moved, copied = set(), set()
    for i, (kind, op, refs, consts, kw, span, out) in enumerate(program.steps):
        if kind != "op" or op in STAYS or not all(r < 0 or r in var or r in inv for r in refs):
            continue
        if any(r in var for r in refs):
            var.add(out)
            moved.add(i)
        else:
            inv.add(out)
            copied.add(i)
    return moved, copied


def _renamed(step, slot_of, shift):
    """A step of B's body as a step of A's: its slots A's, its span's number after A's spans."""
    kind, op, refs, consts, kw, span, out = step
    return (kind, op, tuple(slot_of[r] if r >= 0 else r for r in refs), consts, kw,
            span + shift if span >= 0 else span, slot_of[out])


def _stacked(kind, length):
    """The kind of `length` values of `kind` stacked on a new first axis."""
    if S.is_array_kind(kind):
        return ("array", kind[1] + 1, kind[2], (length, *kind[3]), kind[4])
    dtype = np.dtype({"float": np.float64, "int": np.int64, "bool": np.bool_}[kind])
    return ("array", 1, dtype.kind, (length,), dtype.str)
