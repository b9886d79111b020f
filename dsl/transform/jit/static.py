"""jit(f, static_argnums=...): arguments that are constants of the compiled code, as JAX's.

A static argument is not staged: f is compiled for each value of it (compared by value, a
tensor by its entries), and that value is a constant of what is compiled, so f may use it for
anything (a shape, a loop's length, a flag, a function to call). Each value has its own jit
state (`Jitted`) of f with the static arguments filled in, the least recently called dropped
past MAX_SIGNATURES, as jit drops signatures.
"""

from collections import OrderedDict

import numpy as np

from ...core import tape
from ...core.tape import Box, peek
from ...core.trees import children, is_container, rebuild
from ...core.values import Struct
from ...errors import error
from ..transformed import Transformed, describe, fname
from .jit import Jitted, MAX_SIGNATURES


def static_argnums_of(nums, who):
    """static_argnums as a tuple of ints (an int, or a tuple of them)."""
    nums = tape.concrete(nums)
    single = type(nums) is int
    nums = (nums,) if single else nums
    if type(nums) is not tuple or any(type(i) is not int for i in nums):
        raise error("type", f"{who}: static_argnums must be an int or a tuple of ints, got {describe(nums)}")
    return nums


class StaticJitted:
    """One jit state per value of the static arguments."""

    def __init__(self, f, nums, interp, explain, backend="numpy"):
        self.f = f
        self.nums = nums
        self.interp = interp
        self.backend = backend
        self.explain = explain
        self.by_value = OrderedDict()       # the static arguments' key -> Jitted

    def __call__(self, *args, **kwargs):
        who = f"jit({fname(self.f)})"
        n = len(args)
        picked = []
        for i in self.nums:
            if not -n <= i < n:
                raise error("type", f"{who}: static_argnums names argument {i} (counting from 0), but the "
                                    f"function was called with {n} positional argument{'s' * (n != 1)}")
            picked.append(i % n)
        values = {i: _constant(args[i], i, who) for i in sorted(set(picked))}
        key = tuple((i, _key(v)) for i, v in values.items())
        state = self.by_value.get(key)
        if state is None:
            state = self.by_value[key] = Jitted(_filled(self.f, values, n), self.interp, self.explain, self.backend)
            if len(self.by_value) > MAX_SIGNATURES:
                self.by_value.popitem(last=False)
        else:
            self.by_value.move_to_end(key)
        return state(*[a for i, a in enumerate(args) if i not in values], **kwargs)


def _filled(f, values, n):
    """f of the other arguments, the static ones put back in their places."""
    def call(*rest, **kwargs):
        it = iter(rest)
        full = [values[i] if i in values else next(it) for i in range(n)]
        return f(*full, **kwargs)
    # the static values are among what jit checks is unchanged (a function's captured variables)
    return Transformed(fname(f), call, (f,) + tuple(values.values()), frame=False)


def _constant(v, i, who):
    """A static argument's value; one being differentiated or batched cannot be a constant."""
    if type(v) is Box:
        if v.trace.kind is not tape.STAGE:
            raise error("grad", f"{who}: argument {i} is static (static_argnums), but it is being "
                                f"differentiated: a static argument is a constant of the compiled code",
                        hint="leave it out of static_argnums, or out of what is differentiated")
        return _constant(tape.raw(v), i, who)       # jit inside jit: guarded as the outer one's constant
    if is_container(v):
        return rebuild(v, [_constant(c, i, who) for c in children(v)])
    return v


def _key(v):
    """A static value's key: equal values, equal keys (a tensor by its shape, dtype and entries)."""
    t = type(v)
    if t is float or t is np.float64:
        return ("f", float(v).hex())        # -0.0 and 0.0 differ, as their results may; nan is nan
    if t is np.ndarray:
        return ("t", v.shape, v.dtype.str, v.tobytes())
    if t in (int, bool, str) or v is None:
        return (t.__name__, v)
    if t is tuple:
        return ("tuple",) + tuple(_key(x) for x in v)
    if t is dict:
        return ("map",) + tuple((type(k).__name__, k, _key(x)) for k, x in v.items())
    if t is Struct:
        return ("struct", id(v.sdef), v.sdef) + tuple(_key(x) for x in v.vals)
    return ("object", id(peek(v)), v)       # functions, modules, struct types: by identity


def jit_static(f, nums, explain, interp, backend="numpy"):
    """jit(f, static_argnums=nums)."""
    return Transformed(f"jit({fname(f)})", StaticJitted(f, nums, interp, explain, backend), (f,))


__all__ = ["jit_static", "static_argnums_of"]
