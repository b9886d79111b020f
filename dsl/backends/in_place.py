"""Which steps of generated code write into a tensor's memory instead of making a new tensor.

dg's values are immutable: `x[i] = v` makes a copy of x with row i changed, and the cotangent of
reading x[i] is a tensor of zeros with one row set, added to x's cotangent. Written as such, a loop
that writes or reads one entry per iteration copies its whole tensor each time: its time grows with
the square of its length. The generated code may write in place where nothing else can see the
tensor it writes:

* a tensor a loop carries (its own copy, made once) written at rows and entries, or added a row's
  cotangent, by the steps of an iteration one after another (`rows_in_place`), with what they
  wrote put back when an iteration stops partway;
* a tensor the step itself reads for the last time, when the running program holds it in one
  name only (`put`, `add_into`): no other name, list or view refers to it, which
  `sys.getrefcount` and `base` tell while the code runs. A write `x[key] = v` is then made into x,
  and x + (zeros with g at key) becomes x[key] += g.
"""

import sys

import numpy as np

from ..core import stage as S
from ..core.stage import is_array_kind
from ..core.tape import REFCOUNTS_EXACT
from .optimize import Plan, resolve


# ---------------------------------------------------------------- the loop's own tensor
def rows_in_place(program, p, carry, extra):
    """(the plan, {id of a step: slot}, ids of Row and Index steps to copy, {id of an Add step:
    the RowAdd or IndexAdd step it adds}) for the steps of a loop's body that may write into a
    carried tensor x itself: a SetRow of x (x[i] = v, `traj[i] = state`; in the pass back
    g[i] = 0 beside a read of g[i]) or a SetIndex at whole numbers (u[2, j] = v in a loop over
    j), or x plus a RowAdd (or an IndexAdd at whole numbers) read nowhere else (the pass back
    adding a row's cotangent into that of a tensor the loop reads row by row: x[i] += g, the
    RowAdd left out). x is also what such a step gives, so that the writes of one iteration go
    on into it. x (`carry`: their slots) is no output, the result of x's kind, (with `extra`) no
    other output holds it or a view of it (`_escapes`), and every other step that reads x gives
    a number or is a Row or Index (then written as a copy) whose other inputs are there before
    the write: such a step after the write runs before it (the plan's steps in that order).
    Written as a new tensor, each iteration copies x whole: the loop's time in the square of its
    length."""
    kinds, steps = program.kinds, list(p.steps)
    readers, made_by = _uses(steps)
    out_refs = [resolve(p.alias, r) if r >= 0 else r for r in program.out_refs]
    outs = {r for r in out_refs if r >= 0}
    extras = {resolve(p.alias, r) for r in program.out_refs[len(carry):] if r >= 0} if extra else set()
    found, copied, added = {}, set(), {}
    own = {c: c for c in carry}     # slot -> the carried tensor that holds it (written in place)
    for step in list(steps):
        kind, op, refs, consts, kw, span, out = step
        if kind == "op" and (op == "SetRow" or op == "SetIndex" and _at_numbers(step)):
            x, row_add = refs[0], None
        elif kind == "op" and op == "Add":
            x, row_add = _row_added(step, own, readers, made_by, kinds, outs | extras)
        else:
            continue
        if x not in own or x in outs or x in p.checked or out in extras or out in p.known \
                or kinds[out] != kinds[x] or not is_array_kind(kinds[x]):
            continue
        kept = [r for j, r in enumerate(out_refs[:len(carry)]) if carry[j] != own[x]]
        if _escapes(readers, kinds, x, out, kept + (out_refs[len(carry):] if extra else [])):
            continue
        others = [s for s in readers[x] if s is not step]
        at = _at(steps, step)
        made = {s[6] for s in steps[:at]} | set(program.inputs)
        if all(s[0] == "op" and (not is_array_kind(kinds[s[6]]) or s[1] in ("Row", "Index"))
               and all(r < 0 or r == x or r in made for r in s[2]) for s in others):
            for s in others:        # each reads x as it was: before the write
                if _at(steps, s) > at:
                    _move(steps, s, step)
            copied |= {id(s) for s in others if s[1] in ("Row", "Index") and is_array_kind(kinds[s[6]])}
            found[id(step)] = own[out] = own[x]
            if row_add is not None:     # computed in the Add's place (its g and i live until then), not written
                _move(steps, row_add, step)
                added[id(step)] = row_add
    # x must be what the iteration passes on to the next: where it passes on another value (a
    # constant zero, the cotangent of a carry the body overwrites), the next iteration would write
    # into that value itself
    passed_on = {c for j, c in enumerate(carry) if own.get(out_refs[j]) == c}
    found = {k: c for k, c in found.items() if c in passed_on}
    added = {k: a for k, a in added.items() if k in found}
    if not found:
        return p, {}, set(), {}
    return Plan(steps, p.alias, p.checked, p.known, p.inexact, p.implied), found, copied, added


def _at_numbers(step):
    """Whether a SetIndex's or IndexAdd's key is whole numbers only (a row or an entry at fixed
    positions)."""
    return all(type(k) is int for k in _key(step))


def _row_added(step, own, readers, made_by, kinds, kept):
    """(x, the RowAdd step) for an Add of a carried tensor x (a slot of `own`) and a RowAdd (or
    an IndexAdd at whole numbers) of x's kind that nothing else reads or keeps; else (-1, None)."""
    a, b = step[2]
    x, r = (a, b) if a in own else (b, a)
    maker = made_by.get(r)
    if x not in own or maker is None or maker[0] != "op" or len(readers.get(r, ())) != 1 \
            or not (maker[1] == "RowAdd" or maker[1] == "IndexAdd" and _at_numbers(maker)) \
            or r in kept or kinds[r] != kinds[x]:
        return -1, None
    return x, maker


def _uses(steps):
    """({slot: the steps that read it, once per read}, {slot: the step that makes it})."""
    readers, made_by = {}, {}
    for step in steps:
        made_by[step[6]] = step
        for r in step[2]:
            readers.setdefault(r, []).append(step)
    return readers, made_by


def _outputs(program, p):
    """The slots holding the program's outputs."""
    return {resolve(p.alias, r) for r in program.out_refs if r >= 0}


def _at(steps, step):
    """The position of this very step in the list (steps are tuples that may hold tensors, which
    `==` would compare entry by entry)."""
    return next(j for j, s in enumerate(steps) if s is step)


def _move(steps, step, before):
    """Move `step` to just before the step `before` (a later one)."""
    del steps[_at(steps, step)]
    steps.insert(_at(steps, before), step)


def _moved_before(steps, before):
    """`steps` with each step of `before` ({id of a step: the step to go just before it}) taken
    from its place and put there, in one pass (a move at a time looks each step up in the list:
    the square of a long program's length, minutes for a derivative through an ODE solver)."""
    moving = {id(s) for s in before.values()}
    out = []
    for s in steps:
        if id(s) in moving:
            continue
        first = before.get(id(s))
        if first is not None:
            out.append(first)
        out.append(s)
    return out


# primitives whose generated code always makes a new tensor (numpy's arithmetic and ufuncs, a
# product, a reduction along an axis, zeros with a row added): never a view of an argument
FRESH = frozenset({"Abs", "Add", "Cos", "Div", "Equal", "Exp", "Expm1", "Greater", "GreaterEqual", "IsFinite",
                   "Less", "LessEqual", "Ln", "Log10", "Log1p", "Log2", "LogicalAnd", "LogicalNot", "LogicalOr",
                   "Maximum", "Minimum", "Mul", "Neg", "NotEqual", "Pow", "Relu", "ScalarMul", "Sin", "Softplus",
                   "Sqrt", "Sub", "Sum", "TanhAct", "Where", "MatMul", "RowAdd", "Stack", "CatOp"})


def _escapes(readers, kinds, x, out, kept):
    """Whether a tensor that may be a view of the tensor written in place (x, its row written
    `out`, and what steps other than FRESH ones make of them: traj[0:3] read after the write) is
    one of `kept`, the outputs that outlive the iteration other than as the next value of the
    carried tensor holding x: the other carried values, and the outputs kept per iteration (the
    residuals of a split pullback). A later write in place would change it. A Row or Index of x
    itself is a copy where x is written in place."""
    derived, todo = {x, out}, [x, out]
    while todo:
        for step in readers.get(todo.pop(), ()):
            op, refs, made = step[1], step[2], step[6]
            if op in FRESH or (op in ("Row", "Index") and refs[0] == x) or made in derived:
                continue
            derived.add(made)
            todo.append(made)
    return any(r in derived and is_array_kind(kinds[r]) for r in kept if r >= 0)


# ---------------------------------------------------------------- a tensor read for the last time
WRITES = frozenset({"SetIndex", "SetRow", "SetRows"})      # x[key] = v: a copy of x
ADDED = frozenset({"IndexAdd", "RowAdd", "RowsAdd"})        # zeros with g at key: a cotangent's part


def owned_writes(program, p, taken=()):
    """(the plan, {id of an Add step: the IndexAdd, RowAdd or RowsAdd step it adds}, ids of Row
    and Index steps to copy) for the steps whose code may write into a tensor the step reads for
    the last time, but those in `taken` (ids rows_in_place writes):
    - an Add of a float tensor and zeros with g at a key that nothing else reads (the pass back
      adding the cotangent of a read x[key] into x's): the second step moved to just before the
      Add, whose code may add g at key into the tensor (`add_into`);
    - a write x[key] = v (`put`) after which x is only read at a row or entry (the pass back's
      g[i] = 0 beside a read of g[i]): those reads moved before it, a tensor they give copied.
    Without REFCOUNTS_EXACT, none."""
    if not REFCOUNTS_EXACT:
        return p, {}, set()
    kinds, steps = program.kinds, list(p.steps)
    readers, made_by = _uses(steps)
    kept = _outputs(program, p) | set(p.checked)
    fused, copied, moved = {}, set(), False
    for step in steps[:]:
        if step[0] != "op" or id(step) in taken:
            continue
        if step[1] == "Add" and _float_array(kinds[step[6]]):
            for r in step[2]:
                maker = made_by.get(r)
                if maker is not None and maker[0] == "op" and maker[1] in ADDED and _addable(maker) \
                        and len(readers[r]) == 1 and r not in kept and r not in p.known and kinds[r] == kinds[step[6]]:
                    fused[id(step)] = maker
                    break
        elif step[1] in WRITES and step[2][0] >= 0 and step[2][0] not in kept and step[2][0] not in program.inputs:
            first = _read_first(steps, step, readers[step[2][0]], kinds, program.inputs)
            if first is not None:
                copied, moved = copied | first, True
    steps = _moved_before(steps, fused)
    if not fused and not moved:
        return p, {}, set()
    return Plan(steps, p.alias, p.checked, p.known, p.inexact, p.implied), fused, copied


def _read_first(steps, write, readers, kinds, inputs):
    """Ids of the Row and Index steps to copy when the steps that read x after `write` (x[key] =
    v) move before it, so that the write is x's last use; None, and nothing moved, unless each is
    such a read (or one giving a number) whose other inputs are made before the write."""
    x, at = write[2][0], _at(steps, write)
    later = [s for s in readers if s is not write and _at(steps, s) > at]
    made = {s[6] for s in steps[:at]} | set(inputs)
    if not later or not all(s[0] == "op" and (s[1] in ("Row", "Index") or not is_array_kind(kinds[s[6]]))
                            and all(r < 0 or r == x or r in made for r in s[2]) for s in later):
        return None
    for s in later:
        _move(steps, s, write)
    return {id(s) for s in later if is_array_kind(kinds[s[6]])}


def _addable(step):
    """Whether x[key] += g adds what zeros with g at key would (no new axes in the key)."""
    return step[1] != "IndexAdd" or not any(k is None for k in _key(step))


def _float_array(kind):
    """Whether a value of this kind is a float tensor."""
    return is_array_kind(kind) and kind[2] == "f"


def inner_adds(program, p, row_adds):
    """(the plan, {id of a RowAdd step: the IndexAdd step that makes its g}) for the RowAdd steps
    of `row_adds` (those an Add writes into a tensor) whose row is zeros with g at a key of whole
    numbers and slices that nothing else reads (the cotangent of u[i, j] in a loop over i): the
    IndexAdd moved to just before the RowAdd, and both written as one x[i][key] += g."""
    kinds, steps = program.kinds, list(p.steps)
    readers, made_by = _uses(steps)
    kept = _outputs(program, p) | set(p.checked) | set(p.known)
    inner = {}
    for r in row_adds:
        q = made_by.get(r[2][0]) if r[1] == "RowAdd" and r[2][0] >= 0 else None
        if q is None or q[0] != "op" or q[1] != "IndexAdd" or len(readers[q[6]]) != 1 or q[6] in kept \
                or len(kinds[r[6]][3]) < 2 or not all(type(k) in (int, slice) for k in _key(q)):
            continue
        inner[id(r)] = q
    if not inner:
        return p, {}
    steps = _moved_before(steps, inner)
    return Plan(steps, p.alias, p.checked, p.known, p.inexact, p.implied), inner


def _key(step):
    """The key of an IndexAdd or SetIndex step, as a tuple."""
    key = step[4]["key"]
    return key if type(key) is tuple else (key,)


def carried_write(w, step, args, kinds):
    """The lines of a step rows_in_place writes into the loop's own tensor x: x[at] = v (SetRow,
    SetIndex at whole numbers) or x[at] += g (an Add of a RowAdd, x[at][key] += g where an
    IndexAdd makes the row; of an IndexAdd at whole numbers), the row at `at` kept first for an
    iteration that stops partway."""
    out = step[6]
    x = f"v{w.in_place[id(step)]}"
    row_add = w.added.get(id(step))
    if row_add is not None and row_add[1] == "IndexAdd":
        at, v, write = w.const(row_add[4]["key"]), w.names(row_add)[0], "+="
        target = f"{x}[{at}]"
    elif row_add is not None:
        (v, at), write = w.names(row_add), "+="
        inner = w.inner.get(id(row_add))
        target = f"{x}[{at}]" if inner is None else f"{x}[{at}][{w.const(_key(inner))}]"
        if inner is not None:
            v = w.names(inner)[0]
    else:
        at, v, write = (w.const(step[4]["key"]), args[1], "=") if step[1] == "SetIndex" else (args[1], args[2], "=")
        target = f"{x}[{at}]"
    old = f"{x}[{at}]" + (".copy()" if len(kinds[out][3]) > 1 else "")     # a number: a copy already
    # the first write at a position keeps what was there (the rows are put back in reverse)
    return [f"if ({x[1:]}, {at}) not in _undo: _undo[{x[1:]}, {at}] = ({x}, {old})",
            f"{target} {write} {v}", f"v{out} = {x}"]


def fused_add(w, step, dead, kinds, expression):
    """The right-hand side of x + (zeros with g at key) for an Add and the step it adds
    (owned_writes; its row made by an IndexAdd: inner_adds): g added into x itself where x is
    read for the last time and the code holds it in one name only, else the sum as written.
    `expression(w, op, args, refs, consts, kw, out_kind, kinds)` writes one step (codegen's)."""
    added = w.fused[id(step)]
    inner = w.inner.get(id(added))
    a_args = w.names(added)
    if inner is not None:       # the RowAdd's row computed in its place
        a_args[0] = f"({expression(w, 'IndexAdd', w.names(inner), inner[2], inner[3], inner[4], kinds[inner[6]], kinds)})"
    part = expression(w, added[1], a_args, added[2], added[3], added[4], kinds[added[6]], kinds)
    x = next(r for r in step[2] if r != added[6])
    if x < 0:
        return f"({w.const(step[3][step[2].index(x)])} + {part})"
    whole = f"(v{x} + {part})"
    if x not in dead or kinds[x] != kinds[step[6]]:
        return whole
    if inner is not None:
        w.consts["_add_in"] = _add_in
        into = f"_add_in(v{x}, {a_args[1]}, {w.const(_key(inner))}, {w.names(inner)[0]})"
    else:
        into = add_into(f"v{x}", added, a_args, w)
    return f"{into} if {owned(f'v{x}', w)} else {whole}"


def owned(x, w):
    """The generated code's test that tensor x is held by its name only (no view of it, no list)."""
    w.consts["_rc"] = sys.getrefcount
    return f"_rc({x}) == 2 and {x}.base is None and {x}.flags.writeable"


def put(step, args, w):
    """The call writing v into x itself for a SetIndex, SetRow or SetRows step (x[key] = v)."""
    op, kw = step[1], step[4] or {}
    w.consts.update(_put=_put, _put_rows=_put_rows)
    if op == "SetIndex":
        return f"_put({args[0]}, {w.const(kw['key'])}, {args[1]})"
    if op == "SetRow":
        return f"_put({args[0]}, {args[1]}, {args[2]})"
    return f"_put_rows({args[0]}, {args[1]}, {args[2]}, {kw['n']})"


def add_into(x, added, args, w):
    """The call adding into tensor x what the `added` step (IndexAdd, RowAdd, RowsAdd) would make
    of its `args`: g at its key."""
    op, kw = added[1], added[4] or {}
    w.consts.update(_add_at=_add_at, _add_rows=_add_rows)
    if op == "RowAdd":
        return f"_add_at({x}, {args[1]}, {args[0]})"
    if op == "RowsAdd":
        return f"_add_rows({x}, {args[1]}, {args[0]})"
    many = any(type(k) is np.ndarray for k in _key(added))
    return f"_add_at({x}, {w.const(kw['key'])}, {args[0]}, {many})"


def _put(x, key, v):
    """x with x[key] = v, written into x."""
    x[key] = v
    return x


def _put_rows(x, i, v, n):
    """x with rows i to i + n set to v, written into x; IndexError where they are out of range
    (set_rows_plain's)."""
    if not 0 <= i <= x.shape[0] - n:
        raise IndexError("rows")
    x[i:i + n] = v
    return x


def _add_at(x, key, g, many=False):
    """x with g added at key, written into x (repeated positions of index tensors accumulate)."""
    if many:
        np.add.at(x, key, g)
    else:
        x[key] += g
    return x


def _add_in(x, i, key, g):
    """x with g added at key in row i, written into x."""
    x[i][key] += g
    return x


def _add_rows(x, i, g):
    """x with g added at rows i to i + len(g), written into x."""
    x[i:i + np.shape(g)[0]] += g
    return x


# ---------------------------------------------------------------- rows added twice
def summed_row_adds(program):
    """The program with each Add of two RowAdds at one row (the pass back of a loop that reads
    x[i] twice: zeros with g1 at row i plus zeros with g2 at row i) as one RowAdd of g1 + g2,
    where nothing else reads the two: the same numbers (0 + g1 + 0 + g2 is g1 + g2 on that row, 0
    on the others), and one RowAdd, which an Add into a carried tensor writes in place
    (rows_in_place). The program itself where there is none."""
    steps, kinds = program.steps, list(program.kinds)
    made_by = {s[6]: s for s in steps if s[0] == "op"}
    reads = {}
    for r in [r for s in steps for r in s[2]] + list(program.out_refs):
        reads[r] = reads.get(r, 0) + 1
    merged, dropped = {}, set()
    for step in steps:
        if step[0] != "op" or step[1] != "Add" or min(step[2]) < 0:
            continue
        a, b = made_by.get(step[2][0]), made_by.get(step[2][1])
        if a is None or b is None or a is b or a[1] != "RowAdd" or b[1] != "RowAdd" \
                or reads[a[6]] != 1 or reads[b[6]] != 1 or a[2][0] < 0 or b[2][0] < 0 \
                or a[2][1] != b[2][1] or (a[2][1] < 0 and a[3][1] != b[3][1]) \
                or kinds[a[2][0]] != kinds[b[2][0]] or not kinds[a[6]] == kinds[b[6]] == kinds[step[6]]:
            continue
        g = len(kinds)
        kinds.append(kinds[a[2][0]])
        merged[id(step)] = (("op", "Add", (a[2][0], b[2][0]), (None, None), None, step[5], g),
                            ("op", "RowAdd", (g, a[2][1]), (None, a[3][1]), a[4], step[5], step[6]))
        dropped |= {id(a), id(b)}
    if not merged:
        return program
    out = [t for s in steps if id(s) not in dropped for t in merged.get(id(s), (s,))]
    return S.Program(len(kinds), program.inputs, out, program.out_spec, program.out_refs, program.out_consts,
                     kinds, program.spans)
