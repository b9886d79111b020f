"""Sliding windows over the trailing axes: the one primitive convolution and pooling are made of,
and its transpose.

`windows(x, kernel, stride, dilation)` gives every window of x's last len(kernel) axes, laid out
as x's leading axes, then the window positions, then the offsets within a window:
(*lead, *out, *kernel). A convolution is then a matrix product of the windows with the weights,
and a pooling a reduction over the offsets, so both inherit their derivatives, batching and
staging from dg's other operations. `windows_t` adds every window back onto its place (the
adjoint, used by windows' reverse rule and by conv_transpose); each is the other's transpose, so
derivatives of every order stay exact. The work is one strided copy, or one add per kernel
offset (nine for a 3x3 kernel): never a loop over positions.
"""

import itertools

import numpy as np

from ...errors import error
from ..ops.core import check_size, fmt_shape, shape_of, to_tensor
from ..tape import Box
from .registry import define


def out_sizes(sizes, kernel, stride, dilation):
    """The number of window positions along each axis (0 where the window does not fit)."""
    return tuple(max((n - d * (k - 1) - 1) // s + 1, 0) for n, k, s, d in zip(sizes, kernel, stride, dilation))


def windows(x, kernel=(), stride=(), dilation=()):
    """Every window of x's trailing len(kernel) axes: shape (*lead, *positions, *kernel)."""
    if type(x) is Box:
        return WINDOWS.bind(x, kernel=kernel, stride=stride, dilation=dilation)
    x = to_tensor(x, "a tensor to take windows of")
    n = len(kernel)
    sizes = x.shape[x.ndim - n:]
    out = out_sizes(sizes, kernel, stride, dilation)
    if x.ndim < n or 0 in out:
        raise error("shape", f"a window of {fmt_shape(tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation)))} "
                             f"(kernel {fmt_shape(kernel)}, dilation {fmt_shape(dilation)}) does not fit in "
                             f"a tensor of shape {fmt_shape(x.shape)}")
    shape = x.shape[:x.ndim - n] + out + tuple(kernel)
    check_size(shape, "windows")
    st = x.strides[x.ndim - n:]
    strides = (x.strides[:x.ndim - n] + tuple(a * s for a, s in zip(st, stride))
               + tuple(a * d for a, d in zip(st, dilation)))
    return np.lib.stride_tricks.as_strided(x, shape, strides, writeable=False).copy()


def windows_t(g, sizes=(), kernel=(), stride=(), dilation=()):
    """The transpose of windows: each window of g (*lead, *positions, *kernel) added back onto its
    place in a tensor whose trailing axes have `sizes`."""
    if type(g) is Box:
        return WINDOWS_T.bind(g, sizes=sizes, kernel=kernel, stride=stride, dilation=dilation)
    g = to_tensor(g, "windows to add back")
    n = len(kernel)
    lead = g.shape[:g.ndim - 2 * n]
    out = g.shape[g.ndim - 2 * n:g.ndim - n]
    x = np.zeros(lead + tuple(sizes), g.dtype)
    every = (slice(None),) * len(lead)
    for offset in itertools.product(*(range(k) for k in kernel)):
        place = tuple(slice(j * d, j * d + s * (o - 1) + 1, s) for j, d, s, o in zip(offset, dilation, stride, out))
        x[every + place] += g[every + (slice(None),) * n + offset]
    return x


def _sizes(x, kernel):
    """The trailing axes a window was taken over."""
    shape = shape_of(x)
    return tuple(shape[len(shape) - len(kernel):])


def _same_batch(kernel_fn):
    """Both work on trailing axes: a batch on axis 0 is one more leading axis."""
    def rule(ns, args, batched, kw):
        return kernel_fn(args[0], **kw)
    return rule


WINDOWS = define(
    "Windows", windows, linear=True, batch=_same_batch(windows),
    vjp=(lambda ns, g, ans, x, kernel, stride, dilation:
         windows_t(g, sizes=_sizes(x, kernel), kernel=kernel, stride=stride, dilation=dilation),),
    jvp=lambda ns, tangents, ans, args, kw: windows(tangents[0], **kw))
WINDOWS_T = define(
    "WindowsT", windows_t, linear=True, batch=_same_batch(windows_t),
    vjp=(lambda ns, g, ans, x, sizes, kernel, stride, dilation:
         windows(g, kernel=kernel, stride=stride, dilation=dilation),),
    jvp=lambda ns, tangents, ans, args, kw: windows_t(tangents[0], **kw))
