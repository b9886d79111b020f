"""General builtins: printing, conversions, type, len, range, maps, sequences, assert."""

import math
import time as _time

import numpy as np

from ...core import ops
from ...core.ops.core import ndarray
from ...core.printing import show
from ...core.stage import perform
from ...core.tape import Box, nondiff, peek, raw
from ...core.values import Struct, a_type_name, type_name
from ...errors import error, write_output
from ..targets import iterate
from . import progress


# numbers a program may name, as numpy's: values, not functions (documented in docs_math.py)
CONSTANTS = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan, "newaxis": None}


def make(interp):
    """The general builtins, bound to one interpreter (for its output stream)."""

    def write(*args, sep=" ", end="\n"):
        """Write the values to the interpreter's output."""
        out = interp.stdout
        text = show(sep).join(show(a) for a in args) + show(end)
        progress.around_print(lambda: write_output(out, text), out)
        return None

    def print_(*args, sep=" ", end="\n"):
        """print(a, b, ...): the values separated by spaces, then a line break."""
        return perform(interp.staging, write, args, {"sep": sep, "end": end})

    def time_():
        """time(): seconds since the epoch, as a float."""
        return perform(interp.staging, _time.time, ())

    return {
        "print": print_, "str": str_, "int": int_, "float": float_, "bool": bool_, "type": type_,
        "len": len_, "range": range_, "keys": keys, "values": values, "items": items, "has": has,
        "get": get, "remove": remove, "enumerate": enumerate_, "zip": zip_, "assert": assert_,
        "error": error_, "time": time_,
    }


def str_(x):
    """str(x): the text print would show."""
    if type(x) is Box:      # a staged value is shown when the program runs, not when it is staged
        return nondiff("Str", (x,))
    return show(x)


def int_(x):
    """int(x): truncates floats toward zero; parses strings."""
    v = raw(x)
    t = type(v)
    if t is int:
        return v
    if t is bool:
        return int(v)
    if t is float or isinstance(v, np.generic):
        f = float(v)
        if not math.isfinite(f):
            raise error("value", f"cannot convert {show(f)} to an int")
        return int(f)
    if t is str:
        try:
            return int(v.strip())
        except ValueError:
            raise error("value", f"cannot convert the string {show(v, True)} to an int") from None
    if t is ndarray and v.size == 1:
        return int_(float(v.reshape(())))
    raise error("type", f"cannot convert {a_type_name(v)} to an int"
                        + (f" (it has shape {ops.fmt_shape(v.shape)})" if t is ndarray else ""))


def float_(x):
    """float(x): numbers, numeric strings, and one-element tensors (differentiably)."""
    v = peek(x)
    t = type(v)
    if t is float:
        return x
    if t is int and type(x) is Box:      # an int jit stages as a value: converted as one
        return ops.mul(x, 1.0)
    if t is bool and type(x) is Box:     # ... and a condition
        return ops.where(x, 1.0, 0.0)
    if type(x) is Box and (t is str or isinstance(v, np.generic)):     # read, and guarded
        v = raw(x)
    if t is int or t is bool:
        try:
            return float(v)
        except OverflowError:
            return math.inf if v > 0 else -math.inf
    if isinstance(v, np.generic):
        return float(v)
    if t is str:
        try:
            return float(v.strip())
        except ValueError:
            raise error("value", f"cannot convert the string {show(v, True)} to a float") from None
    if t is ndarray and v.size == 1:
        if v.dtype.kind == "b":
            return float(v.reshape(()))
        if v.ndim == 0:
            x = ops.reshape(x, (1,))
        return ops.item(x, (0,) * max(v.ndim, 1))
    raise error("type", f"cannot convert {a_type_name(v)} to a float"
                        + (f" (it has shape {ops.fmt_shape(v.shape)})" if t is ndarray else ""))


def bool_(x):
    """bool(x): nonzero numbers, non-empty strings and containers; one-element tensors."""
    v = raw(x)
    t = type(v)
    if t is ndarray:
        return ops.truth(v, "bool()'s argument")
    if t in (bool, int, float, str, tuple, dict) or v is None or isinstance(v, np.generic):
        return bool(v)
    return True


def type_(x):
    """type(x): the name of the value's kind, or the struct's own name."""
    return type_name(x)


def len_(x):
    """len(x): tuples, maps, strings, ranges, tensors (the size of axis 0) and batches."""
    v = peek(x)
    t = type(v)
    if t is str:
        return len(raw(x))      # raw: the text of an f-string jit stages is read, and guarded
    if t in (tuple, dict, range):
        return len(v)
    if t is ndarray:
        if v.ndim == 0:
            raise error("type", "len of a tensor with no axes (use size(x))")
        return v.shape[0]
    if t is Struct:
        raise error("type", f"len of a struct {v.sdef.name} (structs have no length)")
    if getattr(v, "dg_iterable", False) and hasattr(t, "__len__"):
        return len(v)       # batches(...) knows its count, like len() of a PyTorch DataLoader
    raise error("type", f"{a_type_name(v)} has no length")


def _int_arg(v, what):
    """An int argument (int-valued floats accepted)."""
    v = raw(v)
    if type(v) is float and v.is_integer():
        return int(v)
    if type(v) is not int:
        raise error("type", f"{what} must be an int, got {type_name(v)}")
    return v


def range_(*args):
    """range(n), range(a, b), range(a, b, step): ints, as in Python."""
    if not 1 <= len(args) <= 3:
        raise error("type", f"range takes 1 to 3 arguments, got {len(args)}")
    ints = [_int_arg(a, "range's arguments") for a in args]
    if len(ints) == 3 and ints[2] == 0:
        raise error("value", "range's step cannot be zero")
    r = range(*ints)
    try:
        len(r)
    except OverflowError:       # len() and indexing would fail later, far from the cause
        raise error("value", "a range may hold at most 2**63 - 1 numbers") from None
    return r


def _map(m, who):
    """Check that a value is a map."""
    v = peek(m)
    if type(v) is not dict:
        raise error("type", f"{who} needs a map, got {type_name(v)}")
    return v


def keys(m):
    """keys(m): the keys in insertion order, as a tuple."""
    return tuple(_map(m, "keys"))


def values(m):
    """values(m): the values in insertion order, as a tuple."""
    _map(m, "values")
    return tuple(ops.unpack(m).values()) if type(m) is Box else tuple(m.values())


def items(m):
    """items(m): (key, value) pairs in insertion order, as a tuple."""
    _map(m, "items")
    return tuple((ops.unpack(m) if type(m) is Box else m).items())


def has(m, k):
    """has(m, k): whether map m has key k (`k in m`)."""
    return ops.contains(k, _map(m, "has"))


def get(m, k, default=None):
    """get(m, k, default): m[k], or default when the key is missing."""
    v = _map(m, "get")
    if has(v, k):
        return ops.item(m, (k,))
    return default


def remove(m, k):
    """remove(m, k): a new map without key k (an error if it is missing)."""
    v = _map(m, "remove")
    k = raw(k)
    if not has(v, k):
        ops.item(v, (k,))
    out = dict(ops.unpack(m)) if type(m) is Box else dict(v)
    del out[k]
    return out


def _sequence(x, who):
    """A builtin's iterable argument as a list."""
    items = iterate(x, None)
    v = peek(x)
    n = len(items) if hasattr(items, "__len__") else v.shape[0] if type(v) is ndarray else 0
    if n > ops.MAX_SEQUENCE:        # enumerate(range(10 ** 9)) would fill the memory with ints
        raise error("limit", f"{who} of more than {ops.MAX_SEQUENCE:,} items")
    return list(items)


def enumerate_(xs, start=0):
    """enumerate(xs): a tuple of (index, element) pairs."""
    start = _int_arg(start, "enumerate's start")
    return tuple((i + start, x) for i, x in enumerate(_sequence(xs, "enumerate")))


_UNSET = object()     # zip's a and b may be left out, as Python's zip allows


def zip_(a=_UNSET, b=_UNSET, *more):
    """zip(a, b, ...): a tuple of tuples, as long as the shortest argument (the reference names a and b)."""
    seqs = tuple(s for s in (a, b) if s is not _UNSET) + more
    return tuple(zip(*[_sequence(s, "zip") for s in seqs]))


def assert_(cond, message="assertion failed"):
    """assert(cond, message): a `user` error with the message when cond is false."""
    if not ops.truth(cond, "assert's condition"):
        raise error("user", show(message))
    return None


def error_(message):
    """error(message): stop with a `user` error."""
    raise error("user", show(message))


