"""Rewrites of a staged program before code is generated from it.

- Common subexpressions: a step that computes what an earlier one computed (the
  same primitive on the same values with the same options) reuses its result.
- reference 6.7 without its cost: each derivative product r = a * b is followed by an
  Nz step that makes r 0 where a factor is 0 and r is not finite. Where r can
  only flow, by operations that keep a NaN a NaN, into the program's results
  (or into guards and the numerics check, which notice one), the Nz step is
  dropped: had it mattered, a result would hold a NaN or an infinity, and the
  generated code checks those results and then runs the exact program instead.
  Products that reach a comparison, a condition or an effect keep their Nz.
"""

import numpy as np

# Operations through which a NaN in any argument stays a NaN (or is dropped whole, as an
# index drops entries): a NaN that reached the result through them shows there.
PROPAGATING = frozenset({
    "Add", "Sub", "Mul", "ScalarMul", "Div", "Neg", "Pow", "Exp", "Ln", "Log2", "Sin", "Cos", "Sqrt", "Abs",
    "Relu", "Sigmoid", "TanhAct", "Erf", "Silu", "Gelu", "Maximum", "Minimum", "Clamp", "Sum", "Mean", "Max",
    "Min", "LogSumExp", "Reshape", "TransposeOp", "BroadcastTo", "Index", "GatherOp", "IndexAdd", "SetIndex",
    "CatOp", "Stack", "MatMul", "Softmax", "LogSoftmax", "LayerNorm", "BatchNorm", "SsmScan", "Nz",
    "AllFinite",
})


class Plan:
    """The steps to generate code for, and what the rewrites decided."""

    __slots__ = ("steps", "alias", "checked")

    def __init__(self, steps, alias, checked):
        self.steps = steps          # the program's steps, in order, without the dropped ones
        self.alias = alias          # slot -> the slot holding its value instead
        self.checked = checked      # output slots that must be finite (else: run exactly)


def plan(program):
    """Apply the rewrites to a program (see the module docstring)."""
    alias = {}
    steps = _common(program.steps, alias)
    steps, dropped = _drop_nz(steps, alias, program.out_refs)
    checked = _tainted_outputs(steps, alias, dropped, program.out_refs)
    return Plan(steps, alias, checked)


def resolve(alias, r):
    """The slot holding slot r's value (aliases are kept one level deep)."""
    return alias.get(r, r)


def _key(op, refs, consts, kw):
    """What a step computes, as a hashable key (constants by type and value; others by identity)."""
    key = (op, refs, consts, tuple(map(type, consts)), tuple(kw.items()) if kw else ())
    try:
        hash(key)
        return key
    except TypeError:       # an array among the constants or options: the same object only
        return (op, refs, tuple(map(id, consts)), tuple(map(type, consts)),
                tuple((k, id(v)) for k, v in kw.items()) if kw else ())


def _common(steps, alias):
    """Drop steps that repeat an earlier computation; their slots alias the earlier one's."""
    seen = {}
    out = []
    get = alias.get
    for step in steps:
        kind, op, refs, consts, kw, span, slot = step
        if alias:
            resolved = tuple([get(r, r) for r in refs])
            if resolved != refs:
                refs = resolved
                step = (kind, op, refs, consts, kw, span, slot)
        if kind == "op":
            key = _key(op, refs, consts, kw)
            first = seen.get(key)
            if first is not None:
                alias[slot] = first
                continue
            seen[key] = slot
        out.append(step)
    return out


def _drop_nz(steps, alias, out_refs):
    """Drop the Nz steps whose result can only reach results and checks (see the docstring)."""
    unsafe = set()          # slots a NaN must not reach unnoticed
    propagating = PROPAGATING
    for i in range(len(steps) - 1, -1, -1):
        kind, op, refs, consts, kw, span, slot = steps[i]
        if kind == "guard":
            continue
        if kind == "effect" or op not in propagating:
            unsafe.update(refs)
        elif op == "Where":
            unsafe.add(refs[0])
            if slot in unsafe:
                unsafe.update(refs[1:])
        elif slot in unsafe:
            unsafe.update(refs)
    out, dropped = [], set()
    get = alias.get
    for step in steps:
        kind, op, refs, consts, kw, span, slot = step
        if op == "Nz" and kind == "op" and slot not in unsafe and refs[2] >= 0:
            alias[slot] = get(refs[2], refs[2])
            dropped.add(slot)
            continue
        if dropped:
            resolved = tuple([get(r, r) for r in refs])
            if resolved != refs:
                step = (kind, op, resolved, consts, kw, span, slot)
        out.append(step)
    return out, dropped


def _tainted_outputs(steps, alias, dropped, out_refs):
    """The output slots a dropped Nz's product may reach: they are checked for NaN and infinity."""
    tainted = {resolve(alias, s) for s in dropped}
    for kind, op, refs, consts, kw, span, slot in steps:
        if kind == "op" and any(r in tainted for r in refs):
            tainted.add(slot)
    return tuple(sorted({resolve(alias, r) for r in out_refs if r >= 0 and resolve(alias, r) in tainted}))


__all__ = ["plan", "resolve", "Plan", "np"]
