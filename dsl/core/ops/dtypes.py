"""Element types of tensors (reference section 3): their names, and the cast between them.

A tensor holds float64 numbers unless a program asks for another type by name: "float16",
"float32", "float64", "int32", "int64" or "bool", as numpy names them. Numbers (dg's ints and
floats) have no element type of their own: beside a tensor they take the tensor's, as Python
scalars do in numpy 2 (NEP 50) and weakly typed values in JAX, so `x32 * 2.0` stays float32.
"""

import numpy as np

from ...errors import error
from ..tape import Box, FLOAT_DTYPES as FLOATS, peek, record
from ..values import type_name
from .core import brief_int, ndarray, norm, to_float

NAMES = ("float16", "float32", "float64", "int32", "int64", "bool")
DTYPES = {name: np.dtype(name) for name in NAMES}


def dtype_arg(name, who):
    """A dtype argument (a name, or none for float64) as a numpy dtype, or a dg error."""
    name = peek(name)
    if name is None:
        return DTYPES["float64"]
    if type(name) is not str:
        # zeros(3, 4): the shape is one argument, as in numpy
        hint = None
        if type(name) is int:
            hint = "eye(n) is the n by n identity" if who == "eye" else f"the shape is one tuple: {who}((n, m))"
        raise error("type", f"{who}'s dtype is a name such as \"float32\", got {type_name(name)}", hint=hint)
    if name in DTYPES:
        return DTYPES[name]
    if name == "bfloat16":
        raise error("value", f"{who}: bfloat16 is not a numpy type, and dg computes with numpy",
                    hint="use \"float32\" or \"float16\"")
    raise error("value", f"{who}: unknown dtype \"{name}\"", hint="dtypes are " + ", ".join(
        f'"{n}"' for n in NAMES))


def dtype_name(x):
    """The element type's name of a value: a tensor's own, float64 for a float, int64 for an int
    and bool for a bool (what numpy makes of them alone)."""
    v = peek(x)
    t = type(v)
    if t is ndarray:
        return v.dtype.name
    if t is bool:
        return "bool"
    if t is int:
        return "int64"
    if t is float:
        return "float64"
    if isinstance(v, np.generic):
        return v.dtype.name
    raise error("type", f"dtype takes a number or a tensor, got {type_name(v)}")


def astype(x, dtype, span=None):
    """x as a tensor of element type `dtype` (a numpy dtype): numpy's cast (floats to ints
    round toward zero; a NaN, an infinity or a float past the int type's range is an error, where
    numpy's answer depends on the machine and XLA's differs). A float-to-float
    cast is differentiable; a cast to ints or bools passes no gradient back, as in JAX."""
    if type(x) is Box:
        return record("Astype", (x,), {"dtype": dtype.name}, span)
    return cast(x, dtype.name)


def cast(v, dtype):
    """The kernel of Astype: a plain number or array as a tensor of the type named `dtype`; a value
    an outer transformation still boxes (grad of grad) is recorded there too."""
    t = type(v)
    if t is Box:
        return record("Astype", (v,), {"dtype": dtype})
    if t is not ndarray and t not in (int, float, bool) and not isinstance(v, np.generic):
        raise error("type", f"astype needs a number or tensor, got {type_name(v)}")
    if t is int:
        if dtype not in ("int32", "int64"):
            v = to_float(v)     # numpy holds an int past int64 as a Python object (inf beyond floats)
        elif not np.iinfo(DTYPES[dtype]).min <= v <= np.iinfo(DTYPES[dtype]).max:
            raise error("value", f"{brief_int(v)} does not fit in {dtype}")     # numpy would wrap it, or refuse in Python's words
    a = np.asarray(v)
    if a.dtype.kind == "f" and dtype in ("int32", "int64"):
        _check_int_range(a, dtype)
    with np.errstate(all="ignore"):
        return a.astype(DTYPES[dtype])


def int_range(dtype):
    """The floats whose whole part an int type holds: [lo, hi) (both exact as float64)."""
    info = np.iinfo(DTYPES[dtype])
    return float(info.min), -float(info.min)


def _check_int_range(a, dtype):
    """A dg error where a float (an entry of a) has no value of the int type: NaN, infinite, or
    out of its range once rounded toward zero."""
    lo, hi = int_range(dtype)
    with np.errstate(invalid="ignore"):
        whole = np.trunc(a)
        bad = ~((whole >= lo) & (whole < hi))
    if bad.any():
        v = a[bad].flat[0] if a.ndim else a
        what = f"{float(v)} does not fit in {dtype}" if np.isfinite(v) else f"{float(v)} has no {dtype} value"
        raise error("value", f"astype: {what}" + (" (an entry of the tensor)" if a.ndim else ""),
                    hint="clamp(x, lo, hi) first keeps a float within the type's range; where(isnan(x), 0.0, x) "
                         "replaces NaN")


def result_like(r, x):
    """A kernel's array result `r` for a float argument `x` in x's float type (kernels written in
    float64, or through Python's math, give float64)."""
    if type(r) is ndarray and type(x) is ndarray and r.dtype is not x.dtype and x.dtype in FLOATS \
            and x.dtype != r.dtype and r.dtype.kind == "f":
        return r.astype(x.dtype)
    return norm(r)
