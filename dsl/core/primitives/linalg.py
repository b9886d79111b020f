"""Einsum: a sum of products over named axes; its rules are einsums too."""

import string

import numpy as np

from .. import ops as O
from ..ops.core import shape_of
from ..ops.linalg import einsum_kernel
from .registry import define


def _parts(spec):
    """An explicit spec as (input subscripts, output subscripts)."""
    ins, out = spec.split("->")
    return ins.split(","), out


def _einsum_vjp(ns, g, ans, args, kw, wanted):
    """Operand i's cotangent: the einsum of g with the other operands onto i's axes (an axis that
    only i had, summed away, comes back broadcast)."""
    ins, out = _parts(kw["spec"])
    grads = []
    for i, want in enumerate(wanted):
        if not want:
            grads.append(None)
            continue
        others = [s for j, s in enumerate(ins) if j != i]
        available = set(out).union(*others) if others else set(out)
        keep = "".join(c for c in ins[i] if c in available)
        spec = ",".join([out] + others) + "->" + keep
        r = O.einsum(spec, g, *[a for j, a in enumerate(args) if j != i])
        shape = shape_of(args[i])
        if keep != ins[i]:
            r = ns.reshape(r, tuple(shape[k] if c in available else 1 for k, c in enumerate(ins[i])))
            r = ns.broadcast_to(r, shape)
        grads.append(r)
    return grads


def _einsum_jvp(ns, tangents, ans, args, kw):
    """The sum over operands of the einsum with that operand's tangent in its place."""
    out = None
    for i, t in enumerate(tangents):
        if t is not None:
            term = O.einsum(kw["spec"], *[t if j == i else a for j, a in enumerate(args)])
            out = term if out is None else ns.add(out, term)
    return out


def _einsum_batch(ns, args, batched, kw):
    """A fresh letter for the batch, in front of every batched operand and of the result."""
    ins, out = _parts(kw["spec"])
    b = next(c for c in string.ascii_letters if c not in kw["spec"])
    subs = [b + s if is_b else s for s, is_b in zip(ins, batched)]
    return O.einsum(",".join(subs) + "->" + b + out, *args)


# keeps_nan: every entry an einsum reads is a factor of each term it is in, and a NaN factor makes
# the term and its sum NaN (numpy's loops and BLAS alike); an entry it does not read (off the
# diagonal of "ii") is dropped whole
define("Einsum", einsum_kernel, vjp_all=_einsum_vjp, jvp=_einsum_jvp, batch=_einsum_batch, keeps_nan=True)

__all__ = ["np"]
