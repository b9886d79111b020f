"""A function made by a transformation (grad, jit, vmap, ...), and how messages name functions
and describe values."""

import numpy as np

from ..core.ops.core import fmt_shape
from ..core.tape import peek
from ..core.values import a_type_name
from ..errors import DgError


class Transformed:
    """A function made by grad & co: callable from dg and Python alike."""

    __slots__ = ("name", "call", "wraps", "frame")

    def __init__(self, name, call, wraps=(), frame=True):
        self.name = name
        self.call = call
        self.wraps = wraps      # the functions it calls (jit guards what they read)
        self.frame = frame      # whether errors show a frame for it (an internal helper shows none)

    def __call__(self, *args, **kwargs):
        if not self.frame:
            return self.call(*args, **kwargs)
        try:
            return self.call(*args, **kwargs)
        except DgError as exc:
            # the error report then shows where the gradient was asked for, even
            # when it comes from the backward pass, after f has returned
            exc.exit_function(self.name)
            raise

    def __repr__(self):
        return f"<fn {self.name}>"


def fname(f):
    """A function's name for messages (a builtin's Python name `len_` is dg's `len`)."""
    name = getattr(f, "name", None)
    if name:
        return name
    name = getattr(f, "__name__", "f")
    return name.rstrip("_") or name


def describe(v):
    """Say what kind of value v is, with the shape for tensors."""
    v = peek(v)
    if type(v) is np.ndarray:
        return f"a {'bool ' if v.dtype.kind == 'b' else ''}tensor of shape {fmt_shape(v.shape)}"
    return a_type_name(v)
