"""The cast between element types (Astype). A float-to-float cast moves cotangents and tangents
back and forth in the same way; a cast to ints or bools is constant in its argument."""

from .. import ops as O
from ..ops.dtypes import DTYPES, FLOATS, dtype_name
from .registry import define


def _astype_vjp(ns, g, ans, x, dtype=None):
    """The cotangent of a float cast, in the argument's own type; none through ints or bools."""
    if DTYPES[dtype] not in FLOATS:
        return None
    return ns.astype(g, dtype_name(x))


def _astype_jvp(ns, tangents, ans, args, kw):
    """The tangent cast as the value is (zero through ints or bools)."""
    t = tangents[0]
    if t is None or DTYPES[kw["dtype"]] not in FLOATS:
        return None
    return ns.astype(t, kw["dtype"])


# not keeps_nan: a NaN cast to an int type is not a NaN
define("Astype", O.cast, linear=True,
       vjp=(_astype_vjp,), jvp=_astype_jvp,
       batch=lambda ns, args, batched, kw: ns.astype(args[0], kw["dtype"]))
