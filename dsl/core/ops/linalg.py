"""einsum: sums of products over named axes, numpy's einsum."""

import re

import numpy as np

from ..tape import record
from .core import Box, check_size, error, fmt_shape, peek, to_tensor, type_name

_SPEC = re.compile(r"^[a-zA-Z]*(,[a-zA-Z]*)*(->[a-zA-Z]*)?$")


def implicit_output(letters):
    """numpy's output for a spec without '->': the letters used once among `letters`, in
    alphabetical order (commas and dots in `letters` are not letters)."""
    return "".join(sorted(c for c in set(letters) if c.isalpha() and letters.count(c) == 1))


def parse_spec(spec, n):
    """An einsum spec as (input subscripts, output subscripts), the output made explicit."""
    if type(spec) is not str:
        raise error("type", f"einsum's first argument is its spec, a string such as \"ij,jk->ik\", "
                            f"got {type_name(spec)}")
    s = spec.replace(" ", "")
    if not _SPEC.match(s):
        raise error("value", f"einsum's spec is letters, commas, '...' and '->', got {spec!r}")
    ins, _, out = s.partition("->")
    inputs = ins.split(",")
    if len(inputs) != n:
        raise error("type", f"einsum's spec {spec!r} names {len(inputs)} operand{'s' * (len(inputs) != 1)} "
                            f"but {n} {'were' if n != 1 else 'was'} given")
    if "->" not in s:
        out = implicit_output(ins)
    for sub in inputs:
        if len(set(sub)) != len(sub):
            raise error("value", f"einsum: a letter repeated within one operand ({sub!r}, a diagonal) "
                                 f"is not supported")
    if len(set(out)) != len(out) or any(c not in "".join(inputs) for c in out):
        raise error("value", f"einsum: the output {out!r} must name each letter once, from the inputs")
    return tuple(inputs), out


def einsum(spec, *xs, span=None):
    """einsum(spec, *xs): numpy's einsum, e.g. einsum("ij,jk->ik", a, b) is a @ b."""
    inputs, out = parse_spec(peek(spec), len(xs))
    full = ",".join(inputs) + "->" + out
    if any(type(x) is Box for x in xs):
        return record("Einsum", xs, {"spec": full}, span)
    return einsum_kernel(*xs, spec=full)


def einsum_kernel(*xs, spec=None):
    """The Einsum primitive on values (spec explicit: "ij,jk->ik")."""
    if any(type(x) is Box for x in xs):
        return record("Einsum", xs, {"spec": spec})
    vals = [to_tensor(x, "tensors for einsum") for x in xs]
    inputs, out = spec.split("->")
    sizes = {}
    for sub, v in zip(inputs.split(","), vals):
        if len(sub) != v.ndim:
            raise error("shape", f"einsum: {sub!r} names {len(sub)} axes but its operand has shape "
                                 f"{fmt_shape(v.shape)}")
        for c, n in zip(sub, v.shape):
            if sizes.setdefault(c, n) != n:
                raise error("shape", f"einsum: the axis {c!r} has sizes {sizes[c]} and {n}")
    check_size(tuple(sizes[c] for c in out), "einsum result")
    r = np.einsum(spec, *vals)
    return float(r) if np.ndim(r) == 0 else r
