"""Rewrites of a staged program before code is generated from it.

- Common subexpressions: a step that computes what an earlier one computed (the
  same primitive on the same values with the same options; small constant tensors
  compared by value) reuses its result.
- reference 6.7 without its cost: each derivative product r = a * b is followed by an
  Nz step that makes r 0 where a factor is 0 and r is not finite (a matrix product r = a @ b
  by an NzMatMul step, the same for the terms of its sums). Where r can
  only flow, by operations that keep a NaN a NaN, into the program's results
  (or into guards and the numerics check, which notice one), the Nz step is
  dropped: had it mattered, a result would hold a NaN or an infinity, and the
  generated code checks those results and then runs the exact program instead.
  Products that reach a comparison, a condition or an effect keep their Nz.
- The same for the Nz rule's derivative (under a second derivative): NzKept(a, b, r)
  is a mask, false only where r is NaN (0 times an infinity). The mask is taken as
  the constant true where r reaches a checked result (or a guard) by such operations,
  or else is checked itself; a product with a true mask (or with 1.0) is its other
  factor. Masks whose value or r reaches a comparison or an effect are kept.
- Exact everywhere: a zero rule with a constant factor that is finite and never 0 is its
  product (it zeroes nothing), and a product with a constant tensor of one number reads the
  number (a mean's cotangent broadcast to its input's shape).
"""

import numpy as np

from ..core import tape
from ..core.primitives.registry import PRIMS
from ..core.primitives.shape import permutation
from ..core.stage import is_array_kind


def keeps_nan(op):
    """Whether a NaN in any argument of primitive `op` stays a NaN (or is dropped whole, as an
    index drops entries): a NaN that reached the result through such steps shows there."""
    prim = PRIMS.get(op)
    return prim is not None and prim.keeps_nan


class Plan:
    """The steps to generate code for, and what the rewrites decided."""

    __slots__ = ("steps", "alias", "checked", "implied", "known", "inexact")

    def __init__(self, steps, alias, checked, known, inexact, implied=()):
        self.steps = steps          # the program's steps, in order, without the dropped ones
        self.alias = alias          # slot -> the slot holding its value instead
        self.checked = checked      # slots that must end finite (else: run exactly): results, and the
        #                             products of left-out masks that reach none
        self.implied = implied      # products of left-out masks that the checks above cover (not
        #                             computed): a factor NaN or infinite makes a checked value so
        self.known = known          # slot -> its value, where a rewrite made it a constant
        self.inexact = inexact      # whether a guard may fail where the exact program's passes


def plan(program, exact=False):
    """Apply the rewrites to a program (see the module docstring); with `exact`, only those that
    change no result (common subexpressions, products with 1): nothing is left to check."""
    alias = {}
    kinds = program.kinds
    steps = _common(program.steps, alias, kinds)
    if exact:
        known = {}
        steps = _live(_fold(steps, alias, known, kinds), alias, program.out_refs, ())
        return Plan(steps, alias, (), known, False)
    masks, unsafe = _true_masks(steps, kinds)
    steps, dropped = _drop_nz(steps, alias, unsafe)
    known = dict.fromkeys(masks, True)
    steps = _fold(steps, alias, known, kinds)
    # a dropped Nz(a, b, r) whose r is one of its factors (the other was 1, or a true mask) zeroes
    # nothing: r is 0 only where that factor is, and then finite (a true mask's own r is checked)
    identity = {s for s, (a, b, r) in dropped.items()
                if resolve(alias, r) in (resolve(alias, a), resolve(alias, b))}
    sources = (dropped.keys() - identity) | set(masks.values())
    checked = _tainted_outputs(steps, alias, sources, program.out_refs)
    # a mask's r that reaches no result is checked itself
    reach = _reaching(steps, [resolve(alias, r) for r in program.out_refs if r >= 0])
    tested = {resolve(alias, r) for r in masks.values()}
    alone = sorted(r for r in tested if r not in reach and r not in known and r not in checked)
    proven = _proven_finite(steps, alias)
    checked = tuple(r for r in checked if r not in proven)
    implied = _implied(steps, alone, checked, kinds)
    inexact = bool(sources) and bool(checked or alone or program.guards)
    checked += tuple(r for r in alone if r not in proven and r not in implied)
    # (the products only their checks read are not computed)
    steps = _live(steps, alias, program.out_refs, checked)
    return Plan(steps, alias, checked, known, inexact, tuple(implied))


def _live(steps, alias, out_refs, checked):
    """The steps without the operations whose value nothing reads any more (a rewrite above made
    a step read an earlier value, or made its value a constant), the checked values counted as read:
    the rule stage.program_of keeps steps by (a rolled loop checks its guards, so it stays)."""
    read = {resolve(alias, r) for r in out_refs if r >= 0} | set(checked)
    kept = []
    for step in reversed(steps):
        kind, op, refs, consts, kw, span, slot = step
        if kind == "op" and slot not in read and op not in tape.GUARDED:
            continue
        read.update(refs)
        kept.append(step)
    kept.reverse()
    return kept


# Float operations whose result is NaN or infinite wherever an argument is (0 * inf is NaN;
# a division, exp(-inf) or a maximum can make one finite)
KEEPS_NONFINITE = frozenset({"Add", "Sub", "Mul", "ScalarMul", "Neg", "Sin", "Cos", "Abs", "Sqrt"})


def _implied(steps, products, checked, kinds):
    """The float products r = a * b among `products` (masks' r that reach no result) that need no
    check of their own: r is NaN only where a or b is NaN or infinite, and each of a and b reaches
    a `checked` value through float operations that keep such a value so (KEEPS_NONFINITE)."""
    if not products:
        return set()
    keeps = set(checked)
    for kind, op, refs, consts, kw, span, slot in reversed(steps):
        if slot in keeps and kind == "op" and op in KEEPS_NONFINITE and kinds[slot] == "float":
            keeps.update(r for r in refs if r >= 0)
    made = {s[6]: s for s in steps if s[0] == "op"}
    implied = set()
    for r in products:
        step = made.get(r)
        if step is None or step[1] not in ("Mul", "ScalarMul") or kinds[r] != "float":
            continue
        if all(f in keeps if f >= 0 else _finite_number(c) for f, c in zip(step[2], step[3])):
            implied.add(r)
    return implied


def _finite_number(c):
    """Whether a constant is a finite Python or numpy number (not a tensor)."""
    return type(c) in (int, bool) or isinstance(c, float) and c - c == 0.0


def _proven_finite(steps, alias):
    """The slots a guard proves finite: the numerics check's AllFinite of them, guarded to be
    true (or true for every row, under vmap). Checking them again at the end read a tensor twice
    (the per-example gradients of vmap(grad): 411 MB each time)."""
    tested = {s[6]: resolve(alias, s[2][0]) for s in steps if s[0] == "op" and s[1] == "AllFinite" and s[2][0] >= 0}
    proven = set()
    for kind, op, refs, consts, kw, span, slot in steps:
        if kind == "guard" and refs[0] in tested and (consts[0] is True or (
                type(consts[0]) is np.ndarray and consts[0].dtype == bool and consts[0].all())):
            proven.add(tested[refs[0]])
    return proven


def resolve(alias, r):
    """The slot holding slot r's value (following aliases of aliases)."""
    while r in alias:
        r = alias[r]
    return r


def step_key(op, refs, consts, kw):
    """What a step computes, as a hashable key (constants by type and value; others by identity)."""
    key = (op, refs, consts, tuple(map(type, consts)), tuple(kw.items()) if kw else ())
    try:
        hash(key)
        return key
    except TypeError:       # an array among the constants or options
        return (op, refs, tuple(map(_const_key, consts)), tuple(map(type, consts)),
                tuple((k, id(v)) for k, v in kw.items()) if kw else ())


VALUE_KEYED = 1 << 14       # constant tensors up to this size are told apart by value


def _const_key(c):
    """A constant as a hashable key: a small tensor by dtype, shape and bytes (derivatives make
    many equal ones: each reduction's vjp broadcasts its cotangent anew), others by identity."""
    if type(c) is np.ndarray and c.size <= VALUE_KEYED:
        return (c.dtype.str, c.shape, c.tobytes())
    try:
        hash(c)
        return c
    except TypeError:
        return id(c)


def _common(steps, alias, kinds):
    """Drop steps that repeat an earlier computation (or guard), their slots aliasing the earlier
    one's, and fold reshapes and transposes of reshapes and transposes (`_view_folded`)."""
    seen = {}
    views = {}          # see _view_folded
    out = []
    get = alias.get
    for step in steps:
        kind, op, refs, consts, kw, span, slot = step
        if alias:
            resolved = tuple([get(r, r) for r in refs])
            if resolved != refs:
                refs = resolved
                step = (kind, op, refs, consts, kw, span, slot)
        if op in VIEWS and kind == "op" and refs[0] >= 0 and is_array_kind(kinds[slot]):
            step = _view_folded(step, views, alias, kinds)
            if step is None:
                continue
            refs, kw = step[2], step[4]
        if kind == "op" or kind == "guard":
            key = step_key(op, refs, consts, kw)
            first = seen.get(key)
            if first is not None:
                if kind == "op":
                    alias[slot] = first
                continue
            seen[key] = slot
        out.append(step)
    return out


# steps that only rearrange a tensor's entries: a chain of them is one, or none
VIEWS = frozenset({"Reshape", "TransposeOp"})


def _view_folded(step, views, alias, kinds):
    """A reshape of a reshape as one reshape of the first one's tensor, a transpose of a transpose
    as one permutation of it (a vjp under vmap reshapes a batch of vectors to columns and back, a
    matrix's rule transposes it twice); None where the result is that tensor itself (its slot then
    aliases it). `views` notes each such step: slot -> (op, the tensor it reads, the permutation)."""
    kind, op, refs, consts, kw, span, slot = step
    source, axes = refs[0], None
    if op == "TransposeOp":
        axes = permutation(kw.get("axes"), kinds[slot][1])
    earlier = views.get(source)
    if earlier is not None and earlier[0] == op:
        source = earlier[1]
        if op == "TransposeOp":
            axes = tuple(earlier[2][a] for a in axes)
            kw = {**kw, "axes": axes}
        step = (kind, op, (source,), consts, kw, span, slot)
    if kinds[source] == kinds[slot] and (op == "Reshape" or axes == tuple(range(len(axes)))):
        alias[slot] = source
        return None
    views[slot] = (op, source, axes)
    return step


def _unsafe(steps, skipped):
    """The slots a NaN must not reach unnoticed: those read by an operation that does not keep a
    NaN a NaN (a comparison, an effect), and what flows into them. Steps in `skipped` read nothing."""
    unsafe = set()          # slots a NaN must not reach unnoticed
    for i in range(len(steps) - 1, -1, -1):
        kind, op, refs, consts, kw, span, slot = steps[i]
        if kind == "guard" or slot in skipped:
            continue
        if kind == "effect" or not keeps_nan(op):
            unsafe.update(refs)
        elif op == "Where":
            unsafe.add(refs[0])
            if slot in unsafe:
                unsafe.update(refs[1:])
        elif slot in unsafe:
            unsafe.update(refs)
    return unsafe


def _reaching(steps, outs):
    """The slots whose value reaches a result or a guard through operations that keep a NaN a NaN."""
    reach = set(outs)
    for i in range(len(steps) - 1, -1, -1):
        kind, op, refs, consts, kw, span, slot = steps[i]
        if kind == "guard":
            reach.update(refs)
        elif slot in reach and kind == "op" and keeps_nan(op):
            reach.update(refs[1:] if op == "Where" else refs)
    return reach


def _true_masks(steps, kinds):
    """The NzKept masks that are true whenever the values they test are finite (mask slot -> r), and
    the slots a NaN must not reach unnoticed once those masks read nothing (`_unsafe`).

    A mask only matters where r is NaN (0 times an infinity): then a result r reaches shows it, and
    an r that reaches none is checked itself (`plan`). Masks whose r, or whose own value, reaches
    a comparison or an effect are kept. A mask read as true reads neither its factors nor r, so
    which masks qualify and which slots are unsafe depend on each other: start from every mask
    and give up the ones that fail, until none does."""
    masks = {s[6]: s[2][2] for s in steps if s[1] == "NzKept" and s[0] == "op" and s[2][2] >= 0
             and (kinds[s[6]] == "bool" or is_array_kind(kinds[s[6]]))}
    _only_factors(steps, masks, kinds)
    while True:
        unsafe = _unsafe(steps, masks)
        failed = [m for m, r in masks.items() if r in unsafe or m in unsafe]
        if not failed:
            return masks, unsafe
        for m in failed:
            del masks[m]


def _only_factors(steps, masks, kinds):
    """Keep only the tensor masks read as a factor beside a tensor of the product's own shape (a value
    or a constant): a true mask stands for a tensor of ones, which the product may then leave out
    (scalar masks: any reader)."""
    for kind, op, refs, consts, kw, span, slot in steps:
        for i, r in enumerate(refs):
            if r in masks and is_array_kind(kinds[r]):
                if op == "Nz" and i < 2 and refs[2] >= 0 and kinds[refs[2]] == kinds[slot]:
                    continue        # a factor of a zero rule: Nz(x, 1, r) is r
                if op not in ("Mul", "ScalarMul") or len(refs) != 2:
                    del masks[r]
                    continue
                other = refs[1 - i]
                if other == r or (kinds[other] != kinds[slot] if other >= 0
                                  else not _of_kind(consts[1 - i], kinds[slot])):
                    del masks[r]


# the zero rules of reference 6.7: (a, b, r) -> r, but 0 for a product of 0 and an infinity (Nz), or
# a @ b with such terms of its sums 0 (NzMatMul)
ZERO_RULES = frozenset({"Nz", "NzMatMul"})


def _drop_nz(steps, alias, unsafe):
    """Drop the Nz steps whose result can only reach results and checks (see the docstring); the
    steps kept, and the dropped ones' slots -> their arguments."""
    out, dropped = [], {}
    get = alias.get
    for step in steps:
        kind, op, refs, consts, kw, span, slot = step
        if op in ZERO_RULES and kind == "op" and slot not in unsafe and refs[2] >= 0:
            alias[slot] = get(refs[2], refs[2])
            dropped[slot] = refs
            continue
        if dropped:
            resolved = tuple([get(r, r) for r in refs])
            if resolved != refs:
                step = (kind, op, resolved, consts, kw, span, slot)
        out.append(step)
    return out, dropped


def _fold(steps, alias, known, kinds):
    """Put the constants `known` in where their slots are read; a product with a factor 1 (1.0 or
    true) is its other factor (exactly, NaN and -0.0 too), or a constant if both are known."""
    out = []
    for step in steps:
        kind, op, refs, consts, kw, span, slot = step
        if slot in known:
            continue
        if any(r in known or r in alias for r in refs):
            refs = tuple([resolve(alias, r) for r in refs])
            consts = tuple([known[r] if r in known else c for r, c in zip(refs, consts)])
            refs = tuple([-1 if r in known else r for r in refs])
            step = (kind, op, refs, consts, kw, span, slot)
        if kind == "op":
            how, what = _simplified(op, refs, consts, slot, kinds)
            if how == "known":
                known[slot] = what
                continue
            if how == "alias":
                alias[slot] = what
                continue
            if how == "consts":
                step = (kind, op, refs, what, kw, span, slot)
        out.append(step)
    return out


def _simplified(op, refs, consts, slot, kinds):
    """What a step with constant factors is: ("known", its value), ("alias", the slot holding it),
    ("consts", the constants it reads instead), or (None, None) where it stays as it is. A factor
    of ones is left out only where the product has the other factor's kind (shape and dtype:
    float32 times float64 ones is float64)."""
    if op == "Nz":
        if refs[2] >= 0 and kinds[refs[2]] == kinds[slot] and (
                refs[0] < 0 and _finite_nonzero(consts[0]) or refs[1] < 0 and _finite_nonzero(consts[1])):
            # r = x * c, c finite and never 0 (1.0, a true mask): 0 only where x is, and finite there
            return "alias", refs[2]
        if refs[2] < 0 and type(consts[2]) is float and consts[2] - consts[2] == 0.0:
            return "known", consts[2]       # a finite product is its own value
    elif op == "Mul" or op == "ScalarMul":
        (ra, rb), (ca, cb) = refs, consts
        if ra < 0 and rb < 0 and kinds[slot] == "float" and _is_one(ca) and _is_one(cb):
            return "known", 1.0
        if rb < 0 and ra >= 0 and _is_one(cb) and kinds[ra] == kinds[slot]:
            return "alias", ra
        if ra < 0 and rb >= 0 and _is_one(ca) and kinds[rb] == kinds[slot]:
            return "alias", rb
        c = _uniform(ca, kinds[rb]) if ra < 0 and rb >= 0 and kinds[rb] == kinds[slot] else \
            _uniform(cb, kinds[ra]) if rb < 0 and ra >= 0 and kinds[ra] == kinds[slot] else None
        if c is not None:
            return "consts", (c, cb) if ra < 0 else (ca, c)
    if op in FOLDED and refs and all(r < 0 for r in refs):
        value = PRIMS[op].impl(*consts)
        if _of_kind(value, kinds[slot]):
            return "known", value
    return None, None


# Arithmetic computed once, by the plan, where every argument is a constant (masks and products
# with ones that became constants: a second derivative's tangent of 0.5 * sum(w * w))
FOLDED = frozenset({"Add", "Sub", "Neg", "Mul", "ScalarMul"})


def _of_kind(c, kind):
    """Whether a constant is a tensor of this kind (shape and dtype): the step's own value."""
    return type(c) is np.ndarray and is_array_kind(kind) and c.shape == kind[3] and c.dtype.str == kind[4]


def _finite_nonzero(c):
    """Whether a constant factor is a float or true, or a float or bool tensor, that is finite and
    not 0 (false) anywhere."""
    if type(c) is np.ndarray:
        return c.dtype.kind in "fb" and bool(np.all(np.isfinite(c) & (c != 0)))
    return c is True or type(c) is float and c - c == 0.0 and c != 0.0


def _uniform(c, other):
    """A float tensor constant whose entries are all one number, as that number, where the product
    with a tensor of kind `other` (which it does not widen) is the same with the number: a mean's
    cotangent broadcast to its input's shape is one scalar, not a tensor read from memory."""
    if type(c) is np.ndarray and c.size > 1 and c.dtype.kind == "f" and is_array_kind(other) \
            and c.dtype.str == other[4]:
        first = c.flat[0]
        # (one sign of zero too: x * -0.0 is not x * 0.0)
        if first == first and np.all(c == first) and np.all(np.signbit(c) == np.signbit(first)):
            return float(first)
    return None


def _is_one(c):
    """Whether a constant factor is 1 (1.0 or true), or a small tensor of them (a reduction's
    cotangent of 1 broadcast, a true mask)."""
    if type(c) is np.ndarray:
        return c.size <= VALUE_KEYED and c.dtype.kind in "fb" and bool(np.all(c == 1))
    return (c is True or type(c) is float) and c == 1.0


def _tainted_outputs(steps, alias, dropped, out_refs):
    """The output slots that a dropped Nz's product, or a left-out mask's, may reach: they are
    checked for NaN and infinity."""
    tainted = {resolve(alias, s) for s in dropped}
    for kind, op, refs, consts, kw, span, slot in steps:
        if kind == "op" and any(r in tainted for r in refs):
            tainted.add(slot)
    return tuple(sorted({resolve(alias, r) for r in out_refs if r >= 0 and resolve(alias, r) in tainted}))


__all__ = ["plan", "resolve", "step_key", "Plan", "np"]
