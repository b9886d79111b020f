"""Convolution, pooling and padding, laid out as PyTorch's conv1d/2d/3d and lax.conv's default:
x is (N, C, *spatial), a kernel is (C_out, C_in / groups, *kernel). Each is composed of dg's
operations around one primitive, windows (dsl/core/primitives/windows.py): a convolution is the
windows times the weights as one matrix product, a pooling a reduction over each window, padding
a concatenation (or a gather, for numpy's other modes); so their derivatives of every order,
their batching and their staging are those operations'."""

import math

import numpy as np

from ...base.suggest import tuple_hint
from ...core import ops
from ...core.ops.core import check_size, float_type, fmt_shape, to_float
from ...core.primitives.windows import out_sizes, windows, windows_t
from ...core.tape import peek, raw
from ...core.values import brief, type_name
from ...errors import error


# ---------------------------------------------------------------- arguments
def _shape(x, who, name):
    """The shape of a tensor argument, or dg's type error."""
    v = peek(x)
    if type(v) not in (np.ndarray, float, int):
        raise error("type", f"{who}: {name} must be a tensor, got {type_name(v)}")
    return np.shape(v)


def _ints(v, n, who, name, least):
    """An option given as one int or one per spatial axis (n of them), each at least `least`."""
    v = raw(v)
    items = v if type(v) is tuple else (v,) * n
    if len(items) != n or any(type(raw(i)) not in (int, float) or isinstance(raw(i), bool)
                              or raw(i) != int(raw(i)) or raw(i) < least for i in items):
        raise error("value", f"{who}: {name} must be an int of at least {least} or a tuple of {n} of them "
                             f"(one per spatial axis), got {brief(v)}", hint=tuple_hint(v))
    return tuple(int(raw(i)) for i in items)


def _padding(padding, n, sizes, kernel, stride, dilation, who):
    """Padding as a (before, after) pair per spatial axis: "valid" (none), "same" (the output has
    ceil(size / stride) positions, the odd one after, as lax.conv and TensorFlow), an int or one
    per axis (both sides, as PyTorch), or a pair per axis (as lax.conv)."""
    p = raw(padding)
    if type(p) is str:
        if p == "valid":
            return ((0, 0),) * n
        if p == "same":
            pads = []
            for size, k, s, d in zip(sizes, kernel, stride, dilation):
                total = max((-(-size // s) - 1) * s + d * (k - 1) + 1 - size, 0)
                pads.append((total // 2, total - total // 2))
            return tuple(pads)
        raise error("value", f"{who}: padding must be \"valid\", \"same\", an int or pairs, got {brief(p)}")
    if type(p) is tuple and p and all(type(raw(q)) is tuple for q in p):
        if len(p) != n or any(len(q) != 2 for q in p):
            raise error("value", f"{who}: padding as pairs needs one (before, after) pair per spatial axis "
                                 f"({n}), got {brief(p)}")
        return tuple(_ints(tuple(q), 2, who, "each padding pair", 0) for q in p)
    return tuple((q, q) for q in _ints(p, n, who, "padding", 0))


def _pad_trailing(x, pads, value):
    """x with `pads` (a pair per trailing axis) of constant `value` around its trailing axes."""
    v = peek(x)
    nd = np.ndim(v)
    kind = float_type(v)        # float32 stays float32
    if np.result_type(v).kind in "biu" and np.isfinite(value) and value == int(value):
        kind = np.result_type(v)    # an int (bool) tensor padded with a whole number keeps its type, as numpy.pad
    for i, (lo, hi) in enumerate(pads):
        axis = nd - len(pads) + i
        if lo or hi:
            parts = []
            for width in (lo, hi):
                side = list(np.shape(peek(x)))
                side[axis] = width
                parts.append(np.full(check_size(tuple(side), "padding"), value, kind))
            x = ops.cat((parts[0], x, parts[1]), axis)
    return x


# ---------------------------------------------------------------- convolution
def _operands(x, w, groups, who, layout):
    """The shapes of a convolution's input and kernel, x with a batch axis (and whether it had
    none), the number of spatial axes and the groups, after the checks both convolutions share."""
    ws = _shape(w, who, "the kernel w")
    n = len(ws) - 2
    if not 1 <= n <= 3:
        raise error("shape", f"{who}: the kernel w is {layout} over 1, 2 or 3 spatial axes, got a tensor of "
                             f"shape {fmt_shape(ws)}")
    xs = tuple(_shape(x, who, "the input x"))
    unbatched = len(xs) == n + 1
    if unbatched:
        x, xs = ops.reshape(x, (1,) + xs), (1,) + xs
    return x, xs, ws, n, unbatched, _ints(groups, 1, who, "groups", 1)[0]


def conv(x, w, stride=1, padding="valid", dilation=1, groups=1):
    """conv(x, w, stride=1, padding="valid", dilation=1, groups=1): the convolution (cross-correlation)
    of x (N, C_in, *spatial) with w (C_out, C_in / groups, *kernel), as PyTorch's conv1d/2d/3d."""
    x, xs, ws, n, unbatched, g = _operands(x, w, groups, "conv", "(C_out, C_in / groups, *kernel)")
    if len(xs) != n + 2 or xs[1] != ws[1] * g or ws[0] % g:
        raise error("shape", f"conv: an input of shape {fmt_shape(xs)} against a kernel of shape {fmt_shape(ws)}"
                             f"{f' in {g} groups' if g > 1 else ''}: the input must be (N, {ws[1] * g}, "
                             f"{', '.join(['...'] * n)}) and C_out a multiple of groups")
    kernel, stride, dilation = tuple(ws[2:]), _ints(stride, n, "conv", "stride", 1), _ints(dilation, n, "conv",
                                                                                          "dilation", 1)
    pads = _padding(padding, n, xs[2:], kernel, stride, dilation, "conv")
    sizes = tuple(s + lo + hi for s, (lo, hi) in zip(xs[2:], pads))
    out = out_sizes(sizes, kernel, stride, dilation)
    if 0 in out:
        raise error("shape", f"conv: a kernel of {fmt_shape(kernel)} with dilation {fmt_shape(dilation)} does not "
                             f"fit in an input of spatial shape {fmt_shape(sizes)} (padding included)")
    n_b, c_g, o_g = xs[0], ws[1], ws[0] // g
    k_all, o_all = math.prod(kernel), math.prod(out)
    win = windows(_pad_trailing(x, pads, 0.0), kernel=kernel, stride=stride, dilation=dilation)
    # (N, G, C/G, *out, *k) -> (N, G, out, C/G * k): one matrix product per group
    win = ops.reshape(win, (n_b, g, c_g, o_all, k_all))
    win = ops.reshape(ops.transpose(win, (0, 1, 3, 2, 4)), (n_b, g, o_all, c_g * k_all))
    wm = ops.transpose(ops.reshape(w, (g, o_g, c_g * k_all)), (0, 2, 1))
    y = ops.transpose(ops.matmul(win, wm), (0, 1, 3, 2))
    y = ops.reshape(y, (n_b, ws[0]) + out)
    return ops.reshape(y, (ws[0],) + out) if unbatched else y


def conv_transpose(x, w, stride=1, padding=0, output_padding=0, dilation=1, groups=1):
    """conv_transpose(x, w, stride=1, padding=0, output_padding=0, dilation=1, groups=1): the transposed
    convolution of x (N, C_in, *spatial) with w (C_in, C_out / groups, *kernel), as PyTorch's."""
    x, xs, ws, n, unbatched, g = _operands(x, w, groups, "conv_transpose", "(C_in, C_out / groups, *kernel)")
    if len(xs) != n + 2 or xs[1] != ws[0] or ws[0] % g:
        raise error("shape", f"conv_transpose: an input of shape {fmt_shape(xs)} against a kernel of shape "
                             f"{fmt_shape(ws)}: the input must be (N, {ws[0]}, {', '.join(['...'] * n)}) and "
                             f"C_in a multiple of groups")
    kernel = tuple(ws[2:])
    stride = _ints(stride, n, "conv_transpose", "stride", 1)
    dilation = _ints(dilation, n, "conv_transpose", "dilation", 1)
    p = raw(padding)
    if type(p) is str and p != "valid":
        raise error("value", f"conv_transpose: padding must be \"valid\", an int or pairs (PyTorch's), "
                             f"got {brief(p)}")
    pads = ((0, 0),) * n if type(p) is str else _padding(padding, n, (), (), (), (), "conv_transpose")
    extra = _ints(output_padding, n, "conv_transpose", "output_padding", 0)
    if any(e >= max(s, d) for e, s, d in zip(extra, stride, dilation)):
        raise error("value", f"conv_transpose: output_padding {extra} must be smaller than the stride or the "
                             f"dilation {stride}, {dilation}")
    n_b, c_g, o_g = xs[0], ws[0] // g, ws[1]
    k_all, i_all = math.prod(kernel), math.prod(xs[2:])
    # every input position spreads its kernel-weighted values over one window: the windows, added back
    cols = ops.transpose(ops.reshape(x, (n_b, g, c_g, i_all)), (0, 1, 3, 2))
    cols = ops.matmul(cols, ops.reshape(w, (g, c_g, o_g * k_all)))           # (N, G, in, C_out/G * k)
    cols = ops.transpose(ops.reshape(cols, (n_b, g, i_all, o_g, k_all)), (0, 1, 3, 2, 4))
    cols = ops.reshape(cols, (n_b, g * o_g) + tuple(xs[2:]) + kernel)
    full = tuple((i - 1) * s + d * (k - 1) + 1 for i, s, d, k in zip(xs[2:], stride, dilation, kernel))
    y = windows_t(cols, sizes=full, kernel=kernel, stride=stride, dilation=dilation)
    want = tuple(f - lo - hi + e for f, (lo, hi), e in zip(full, pads, extra))
    if any(s <= 0 for s in want):
        raise error("shape", f"conv_transpose: padding {pads} leaves no output from an input of spatial shape "
                             f"{fmt_shape(xs[2:])}")
    y = _pad_trailing(y, tuple((0, max(lo + s - f, 0)) for f, (lo, _), s in zip(full, pads, want)), 0.0)
    y = ops.index(y, (slice(None), slice(None)) + tuple(slice(lo, lo + s) for (lo, _), s in zip(pads, want)))
    return ops.reshape(y, tuple(np.shape(peek(y)))[1:]) if unbatched else y


# ---------------------------------------------------------------- pooling
def _pool(x, window, stride, padding, who, value):
    """The windows of a pooling (and the number of spatial axes): x padded with `value`."""
    xs = _shape(x, who, "the input x")
    win = raw(window)
    n = len(win) if type(win) is tuple else len(xs) - 2
    if n < 1 or len(xs) < n + 1:
        raise error("shape", f"{who}: an input of shape {fmt_shape(xs)} has no spatial axes for a window "
                             f"{brief(win)} (x is (N, C, *spatial); a window per spatial axis, or one int for all)")
    kernel = _ints(window, n, who, "window", 1)
    stride = kernel if raw(stride) is None else _ints(stride, n, who, "stride", 1)
    dilation = (1,) * n
    pads = _padding(padding, n, xs[len(xs) - n:], kernel, stride, dilation, who)
    if any(lo >= k or hi >= k for (lo, hi), k in zip(pads, kernel)):
        raise error("value", f"{who}: padding {pads} must be smaller than the window {kernel}")
    sizes = tuple(s + lo + hi for s, (lo, hi) in zip(xs[len(xs) - n:], pads))
    if 0 in out_sizes(sizes, kernel, stride, dilation):
        raise error("shape", f"{who}: a window of {fmt_shape(kernel)} does not fit in spatial axes of "
                             f"{fmt_shape(sizes)}")
    w = windows(_pad_trailing(x, pads, value), kernel=kernel, stride=stride, dilation=dilation)
    return w, tuple(range(-n, 0))


def max_pool(x, window, stride=None, padding="valid"):
    """max_pool(x, window, stride=window, padding="valid"): the largest entry of each window over the
    trailing spatial axes."""
    w, axes = _pool(x, window, stride, padding, "max_pool", -np.inf)
    return ops.max_(w, axes)


def avg_pool(x, window, stride=None, padding="valid"):
    """avg_pool(x, window, stride=window, padding="valid"): the mean of each window over the trailing
    spatial axes (padding counted as zeros, as PyTorch's count_include_pad and flax)."""
    w, axes = _pool(x, window, stride, padding, "avg_pool", 0.0)
    return ops.mean(w, axes)


# ---------------------------------------------------------------- padding
_MODES = ("constant", "edge", "reflect", "symmetric", "wrap")


def pad(x, pad_width, mode="constant", constant_values=0.0):
    """pad(x, pad_width, mode="constant", constant_values=0): x padded as numpy.pad: pad_width an int,
    a (before, after) pair for every axis, or one pair per axis."""
    shape = _shape(x, "pad", "x")
    nd = len(shape)
    m = raw(mode)
    if type(m) is not str or m not in _MODES:
        raise error("value", f"pad: mode must be one of {', '.join(_MODES)}, got {brief(m)}")
    p = raw(pad_width)
    if type(p) is tuple and len(p) == nd and nd and all(type(raw(q)) is tuple for q in p):
        pads = tuple(_ints(tuple(q), 2, "pad", "each pair of pad_width", 0) for q in p)
    elif type(p) is tuple and len(p) == 2 and all(type(raw(q)) is not tuple for q in p):
        pads = (_ints(p, 2, "pad", "pad_width", 0),) * nd
    elif type(p) in (int, float) and p == int(p) >= 0:
        pads = ((int(p),) * 2,) * nd
    else:
        raise error("value", f"pad: pad_width must be an int of at least 0, a (before, after) pair or one "
                             f"pair per axis ({nd}), got {brief(p)}", hint=tuple_hint(p))
    if m == "constant":
        c = raw(constant_values)
        if type(c) not in (int, float) or isinstance(c, bool):
            raise error("type", f"pad: constant_values must be a number, got {type_name(c)}")
        return _pad_trailing(x, pads, to_float(c))
    for axis, (lo, hi) in enumerate(pads):
        if lo or hi:
            size = shape[axis]
            if size == 0 or m in ("reflect",) and size == 1 and (lo or hi):
                raise error("value", f"pad: mode {m!r} needs entries along axis {axis} to copy")
            where = np.pad(np.arange(size, dtype=float), (lo, hi), mode=m)
            x = ops.gather(x, where, axis)
    return x


BUILTINS = {"conv": conv, "conv_transpose": conv_transpose, "max_pool": max_pool, "avg_pool": avg_pool, "pad": pad}
