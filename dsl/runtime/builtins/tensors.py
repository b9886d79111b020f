"""Tensor builtins: creation, random numbers, shapes, and the math of reference section 5."""

import math

import numpy as np

from ...core import ops
from ...core.ops.core import (brief_int, check_shape_arg, check_size, fmt_shape, ndarray, range_values, to_float,
                             to_tensor)
from ...core.ops.linalg import implicit_output
from ...core.stage import Draw, perform
from ...core.tape import Box, peek, raw, record
from ...core.values import a_type_name, type_name
from ...errors import error


def make(interp):
    """The tensor builtins; random ones draw from the interpreter's seeded generator."""

    def seed(n):
        """seed(n): restart the random generator, so runs repeat exactly."""
        return perform(interp.staging, interp.reseed, (_count(n, "seed needs a non-negative int"),))

    def rand(shape, dtype=None):
        """rand(shape): uniform numbers in [0, 1)."""
        kind = _float_dtype(dtype, "rand")
        return perform(interp.staging, Draw(lambda s: interp.rng.random(s).astype(kind, copy=False)),
                       (_shape(shape),))

    def randn(shape, dtype=None):
        """randn(shape): standard normal numbers."""
        kind = _float_dtype(dtype, "randn")
        return perform(interp.staging, Draw(lambda s: interp.rng.standard_normal(s).astype(kind, copy=False)),
                       (_shape(shape),))

    return {
        "tensor": tensor, "zeros": zeros, "ones": ones, "full": full, "eye": eye, "arange": arange,
        "linspace": linspace, "rand": rand, "randn": randn, "seed": seed, "zeros_like": zeros_like,
        "ones_like": ones_like, "shape": shape, "ndim": ndim, "size": size,
        "reshape": ops.reshape, "transpose": ops.transpose, "cat": ops.cat, "stack": ops.stack,
        "gather": ops.gather, "where": ops.where, "clamp": ops.clamp,
        "neg": neg, "exp": ops.exp, "ln": ops.ln, "log": ops.ln, "log2": ops.log2, "log10": ops.log10, "sin": ops.sin,
        "cos": ops.cos, "sqrt": ops.sqrt, "abs": ops.abs_, "pow": pow_, "sigmoid": ops.sigmoid,
        "relu": ops.relu, "tanh": ops.tanh, "sign": ops.sign, "floor": ops.floor, "silu": ops.silu, "gelu": ops.gelu, "erf": ops.erf,
        "softmax": ops.softmax, "log_softmax": ops.log_softmax, "logsumexp": ops.logsumexp,
        "cross_entropy": ops.cross_entropy, "layer_norm": ops.layer_norm, "batch_norm": ops.batch_norm,
        "sum": ops.sum_, "mean": ops.mean, "max": ops.max_, "min": ops.min_, "maximum": ops.maximum,
        "minimum": ops.minimum, "matmul": matmul, "ssm_scan": ops.ssm_scan,
        "argmax": ops.argmax, "argmin": ops.argmin, "sort": ops.sort, "argsort": ops.argsort,
        "ceil": ops.ceil, "round": round_, "log1p": ops.log1p, "expm1": ops.expm1,
        "softplus": ops.softplus, "tan": ops.tan, "asin": ops.asin, "acos": ops.acos, "atan": ops.atan,
        "sinh": ops.sinh, "cosh": ops.cosh, "asinh": ops.asinh, "acosh": ops.acosh, "atanh": ops.atanh,
        "log_sigmoid": ops.log_sigmoid, "logit": logit, "atan2": atan2, "logaddexp": ops.logaddexp,
        "hypot": hypot, "cbrt": ops.cbrt, "erfc": ops.erfc,
        "erfinv": ops.erfinv, "erfcinv": ops.erfcinv, "lgamma": ops.lgamma, "digamma": ops.digamma, "xlogy": xlogy,
        "gammainc": gammainc, "gammaincc": gammaincc,
        "var": var, "std": std, "prod": ops.prod, "cumsum": ops.cumsum, "einsum": einsum,
        "astype": astype, "dtype": dtype,
    }


def round_(x, decimals=0):
    """round(x, decimals=0): numpy's round: x times 10^decimals, rounded halves to even, divided back."""
    d = raw(decimals)
    if type(d) is not int:
        raise error("type", f"round's decimals must be an int, got {type_name(d)}")
    if d == 0:
        return ops.round_(x)
    if d > 0:       # as numpy computes it, so the same floats come out
        scale = 10.0 ** d if d <= 308 else math.inf        # (past float's range numpy's scale is inf: nan)
        return ops.div(ops.round_(ops.mul(x, scale)), scale)
    scale = 10.0 ** -d if d >= -308 else math.inf
    return ops.mul(ops.round_(ops.div(x, scale)), scale)


def _ellipsis(s, xs):
    """A spec with `...` written out in letters of its own (numpy's rule: each operand's `...`
    stands for the axes its letters leave, aligned at the right and broadcast, as they are in
    the result: first where the output is implicit), and the operands broadcast where their
    `...` axes differ. `...` left out of an explicit output sums those axes, as JAX does."""
    s = s.replace(" ", "")
    ins, arrow, out = s.partition("->")
    subs = ins.split(",")
    if len(subs) != len(xs):
        return s, xs            # einsum's own error
    if any(p.count("...") > 1 for p in subs + [out]):
        raise error("value", f"einsum: '...' may stand once in each operand and the output, got {s!r}")
    shapes = [np.shape(peek(x)) for x in xs]
    lead = [len(shape) - len(p.replace("...", "")) if "..." in p else 0 for p, shape in zip(subs, shapes)]
    for p, shape, k in zip(subs, shapes, lead):
        if k < 0:
            raise error("shape", f"einsum: {p!r} names {len(p) - 3} axes and '...', but its operand has shape "
                                 f"{fmt_shape(shape)}")
    try:
        batch = np.broadcast_shapes(*(shape[p.index("..."):p.index("...") + k]
                                      for p, shape, k in zip(subs, shapes, lead) if "..." in p))
    except ValueError:
        raise error("shape", f"einsum: the axes '...' stands for do not broadcast: "
                             f"{' and '.join(fmt_shape(sh) for sh in shapes)}") from None
    free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in s]
    names = "".join(free[:len(batch)])
    xs = list(xs)
    for i, (p, shape, k) in enumerate(zip(subs, shapes, lead)):
        if "..." in p:
            at = p.index("...")
            full = shape[:at] + batch[len(batch) - k:] + shape[at + k:]
            if full != shape:
                xs[i] = ops.broadcast_to(xs[i], full)
            subs[i] = p.replace("...", names[len(names) - k:])
    if not arrow:       # implicit output: the `...` axes, then numpy's letters
        out = "..." + implicit_output(ins)
    return ",".join(subs) + "->" + out.replace("...", names), xs


def einsum(spec, *xs):
    """einsum(spec, *xs): numpy's einsum, e.g. einsum("ij,jk->ik", a, b) is a @ b (differentiable)."""
    s = raw(spec)
    if type(s) is str and "..." in s:
        s, xs = _ellipsis(s, xs)
    if type(s) is str and "->" not in s.replace(" ", "") and any(len(set(p)) < len(p) for p in s.split(",")):
        s = s + "->" + implicit_output(s)      # numpy's, before diagonals are taken
    if type(s) is not str or len(xs) != s.count(",") + 1:
        return ops.einsum(spec, *xs)
    ins, arrow, out = s.replace(" ", "").partition("->")
    subs = ins.split(",")
    xs = list(xs)
    for i, sub in enumerate(subs):
        while len(set(sub)) < len(sub):      # a letter twice in one operand: its diagonal
            c = next(c for c in sub if sub.count(c) > 1)
            first, second = sub.index(c), sub.index(c, sub.index(c) + 1)
            shape = np.shape(peek(xs[i]))
            if len(shape) != len(sub):
                return ops.einsum(spec, *xs)        # the spec does not fit: einsum's own error
            if shape[first] != shape[second]:
                raise error("shape", f"einsum: the axis {c!r} has sizes {shape[first]} and {shape[second]}")
            mask = np.eye(shape[first], dtype=bool).reshape(tuple(shape[first] if k in (first, second) else 1
                                                      for k in range(len(shape))))
            xs[i] = ops.sum_(ops.keep_where(mask, xs[i]), second)
            sub = sub[:second] + sub[second + 1:]
        subs[i] = sub
    return ops.einsum(",".join(subs) + arrow + out, *xs)


def var(x, axis=None, keepdims=False, ddof=0):
    """var(x, axis=none, keepdims=false, ddof=0): the squared deviations from the mean, summed and
    divided by n - ddof (numpy's: ddof=1 is the sample variance)."""
    out = ops.var(x, axis, keepdims)
    d = raw(ddof)
    if type(d) is not int:
        raise error("type", f"var's ddof must be an int, got {type_name(d)}")
    if d == 0:
        return out
    # the entries each result was taken over (var reads a tuple as its stacked tensor)
    n = (len(peek(x)) if type(peek(x)) is tuple else int(np.size(peek(x)))) // int(np.size(peek(out)))
    dof = degrees_of_freedom(n, d)
    return ops.mul(out, n / dof if dof else math.inf)      # inf where n <= ddof, as numpy's


def degrees_of_freedom(n, ddof):
    """n - ddof as numpy divides by it: never below 0 (a variance is never negative), a float (an
    int past float's range is inf)."""
    return to_float(max(n - ddof, 0))


def std(x, axis=None, keepdims=False, ddof=0):
    """std(x, axis=none, keepdims=false, ddof=0): the standard deviation, sqrt(var(x, ddof=ddof))."""
    return ops.sqrt(var(x, axis, keepdims, ddof))


def _shape(shape):
    """A checked shape argument."""
    return check_size(check_shape_arg(shape))


def _count(v, need):
    """A non-negative int argument (int-valued floats accepted): not an int is a `type` error,
    a negative int a `value` error (its kind is right, only its value is not)."""
    v = raw(v)
    if type(v) is float and v.is_integer():
        v = int(v)
    if type(v) is not int:
        raise error("type", f"{need}, got {type_name(v)}")
    if v < 0:
        raise error("value", f"{need}, got {v}")
    if v >= 2 ** 64:        # no count, size, population or seed goes past 64 bits
        raise error("value", f"{need} below 2^64, got {brief_int(v)}")
    return v


# builtins whose parameters have the names the reference gives them (numpy's and scipy's), so
# that a call by keyword works as documented, over primitives whose own names differ
def neg(x):
    """neg(x): -x."""
    return ops.neg(x)


def pow_(x, y):
    """pow(x, y): x ** y."""
    return ops.pow(x, y)


def matmul(a, b):
    """matmul(a, b): a @ b."""
    return ops.matmul(a, b)


def logit(p):
    """logit(p): ln(p / (1 - p))."""
    return ops.logit(p)


def hypot(x, y):
    """hypot(x, y): sqrt(x^2 + y^2), without overflow in the squares."""
    return ops.hypot(x, y)


def atan2(y, x):
    """atan2(y, x): the angle of the point (x, y)."""
    return ops.atan2(y, x)


def gammainc(a, x):
    """gammainc(a, x): the regularized lower incomplete gamma function P(a, x)."""
    return ops.gammainc(a, x)


def gammaincc(a, x):
    """gammaincc(a, x): the regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return ops.gammaincc(a, x)


def xlogy(x, y):
    """xlogy(x, y): x * ln(y), 0 where x is 0."""
    return ops.xlogy(x, y)


def _float_dtype(dtype, who):
    """A dtype argument that must name a float type."""
    kind = ops.dtype_arg(dtype, who)
    if kind.kind != "f":
        raise error("value", f"{who} draws floats: its dtype is \"float16\", \"float32\" or \"float64\", "
                             f"not \"{kind.name}\"")
    return kind


def astype(x, dtype):
    """astype(x, dtype): x as a tensor of another element type."""
    return ops.astype(x, ops.dtype_arg(dtype, "astype"))


def dtype(x):
    """dtype(x): the name of x's element type."""
    return ops.dtype_name(x)


def _as(v, dtype, who):
    """A new tensor `v` in the type a dtype argument names (none: as it is)."""
    if dtype is None:
        return v
    return v.astype(ops.dtype_arg(dtype, who), copy=False)


def tensor(x, dtype=None):
    """tensor(x): a float tensor from a number, a tensor, a range, or nested tuples of them."""
    if dtype is not None:
        return ops.astype(tensor(x), ops.dtype_arg(dtype, "tensor"))
    v = peek(x)
    t = type(v)
    if t is ndarray:
        return x
    if t is range:      # numpy's array(range(3))
        return range_values(v)
    if t is tuple:
        if not v:
            return np.zeros((0,))
        items = ops.unpack(x) if type(x) is Box else v
        # ops.stack keeps bools bool and checks the shapes, staged items among them too
        return ops.stack(tuple(tensor(i) for i in items))
    if t in (int, float, bool) or isinstance(v, np.generic):
        if type(x) is Box:      # a staged number: reshape makes a float of a bool, as of any number
            r = ops.reshape(x, ())
            return ops.astype(r, ops.dtype_arg("bool", "tensor")) if t is bool else r
        return np.asarray(v if t is bool else to_float(v), dtype=bool if t is bool else np.float64)
    raise error("type", f"tensor() takes numbers, tensors or tuples of them, not {a_type_name(v)}")


def zeros(shape, dtype=None):
    """zeros(shape)."""
    return np.zeros(_shape(shape), ops.dtype_arg(dtype, "zeros"))


def ones(shape, dtype=None):
    """ones(shape)."""
    return np.ones(_shape(shape), ops.dtype_arg(dtype, "ones"))


def full(shape, v, dtype=None):
    """full(shape, v): a tensor filled with v."""
    fill = peek(v)
    if type(fill) not in (int, float, bool):
        raise error("type", f"full needs a number to fill with, got {type_name(fill)}")
    kind = ops.dtype_arg(dtype, "full")
    if type(v) is Box:      # a recorded fill value keeps its gradient, as jnp.full's does
        dims = _shape(shape)
        if dims == ():      # a 0-d tensor, as tensor(v) makes (zeros(()) + v is a number)
            filled = ops.reshape(v, ())
            return filled if kind == np.float64 else ops.astype(filled, kind)
        filled = ops.add(np.zeros(dims, kind), v)
        # int zeros plus a float fill is a float: cast back, as np.full truncates into the type
        return filled if kind.kind == "f" else ops.astype(filled, kind)
    if kind.kind == "i" and type(fill) is int:
        fill = ops.cast(fill, kind.name)        # an int the type cannot hold: astype's error
    return np.full(_shape(shape), fill if kind.kind in "ib" else to_float(fill), kind)


def eye(n, dtype=None):
    """eye(n): the n-by-n identity."""
    n = check_shape_arg(n, "size")
    if len(n) != 1:
        raise error("type", "eye takes one int")
    check_size((n[0], n[0]))
    return np.eye(n[0], dtype=ops.dtype_arg(dtype, "eye"))


def _number(v, who):
    """A numeric argument as a float."""
    v = raw(v)
    if type(v) not in (int, float, bool) and not isinstance(v, np.generic):
        raise error("type", f"{who} needs numbers, got {type_name(v)}")
    return to_float(v)


def arange(*args, dtype=None):
    """arange(stop), arange(start, stop), arange(start, stop, step), like numpy."""
    if not 1 <= len(args) <= 3:
        raise error("type", f"arange takes 1 to 3 numbers, got {len(args)}")
    nums = [_number(a, "arange") for a in args]
    if len(nums) == 3 and nums[2] == 0:
        raise error("value", "arange's step cannot be zero")
    start, stop, step = (0.0, nums[0], 1.0) if len(nums) == 1 else (nums + [1.0])[:3]
    n = max(0, int(np.ceil((stop - start) / step))) if np.isfinite((stop - start) / step) else -1
    if n < 0:
        raise error("value", "arange needs finite bounds")
    check_size((n,))
    kind = ops.dtype_arg(dtype, "arange")
    if n == 0:              # numpy refuses some empty ranges with huge bounds
        return np.zeros((0,), kind)
    return _as(np.arange(start, stop, step, dtype=np.float64), dtype, "arange")


def linspace(a, b, n, dtype=None):
    """linspace(a, b, n): n evenly spaced numbers from a to b inclusive."""
    count = _count(n, "linspace needs a non-negative int count")
    check_size((count,))
    if type(a) is Box or type(b) is Box:     # the points move with the bounds: differentiable in both
        for bound in (a, b):
            _number(peek(bound) if type(bound) is Box else bound, "linspace")   # the type only: peek reads no value
        out = record("Linspace", (a, b, count))
        return out if dtype is None else ops.astype(out, ops.dtype_arg(dtype, "linspace"))
    return _as(np.linspace(_number(a, "linspace"), _number(b, "linspace"), count), dtype, "linspace")


def zeros_like(x, dtype=None):
    """zeros_like(x): zeros with x's shape."""
    like = to_tensor(peek(x))
    return np.zeros(like.shape, like.dtype if dtype is None else ops.dtype_arg(dtype, "zeros_like"))


def ones_like(x, dtype=None):
    """ones_like(x): ones with x's shape."""
    like = to_tensor(peek(x))
    return np.ones(like.shape, like.dtype if dtype is None else ops.dtype_arg(dtype, "ones_like"))


def shape(x):
    """shape(x): a tuple of ints (() for numbers)."""
    v = peek(x)
    if type(v) is ndarray:
        return tuple(int(s) for s in v.shape)
    if type(v) in (int, float, bool) or isinstance(v, np.generic):
        return ()
    raise error("type", f"{a_type_name(v)} has no shape")


def ndim(x):
    """ndim(x): the number of axes."""
    return len(shape(x))


def size(x):
    """size(x): the number of elements."""
    return int(np.prod(shape(x))) if shape(x) else 1
