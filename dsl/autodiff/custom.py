"""User-given derivative rules: custom_vjp(f, bwd) and custom_jvp(f, jvp) (reference section 6).

Each records one step (CustomVjp, CustomJvp: dsl/primitives/control.py) whose kernel calls the
function again, so that an outer differentiation records its own step and the user's rule gives
the derivative at every level. The other mode follows from the rule: forward mode through
custom_vjp is the gradient of u -> <bwd(u), t>, reverse mode through custom_jvp the gradient of
t -> <jvp(primals, t), g>, both exact where the user's rule is linear in u or t, as it must be.
"""

import numpy as np

from ..errors import error
from . import tape
from .tape import Box, peek, record
from .trees import children, flatten, is_container
from .transforms import Transformed, _describe, _fname, _reads_trace


# ---------------------------------------------------------------- custom_vjp
def custom_vjp(f, bwd):
    """custom_vjp(f, bwd): f, whose gradient is bwd(args..., out, g)."""
    return _custom(f, bwd, "CustomVjp", "custom_vjp", "bwd", "backward function", "gradients")


def _custom(f, rule, op, who, key, rule_words, what):
    """f with a user's derivative rule (kept under `key` in the recorded step `op`)."""

    def call(*args, **kwargs):
        args, kwargs = _as_positional(f, args, kwargs)
        leaves, spec = flatten(args)
        if not any(type(x) is Box for x in leaves):
            if any(type(x) is Box for x in flatten(kwargs)[0]):
                raise _keyword_error(f, who, rule_words)
            return f(*args, **kwargs)
        top = tape.top_trace(leaves)
        if top.kind is tape.STAGE and not top.keeps_rules(leaves):
            # jit and vmap see what f does; the rule matters only to a derivative taken through
            # the recording, where the step is recorded (its kernel calls f)
            return f(*args, **kwargs)
        # the kernel calls `call` again: an outer differentiation records its own step, so the
        # rule gives the derivative at every level (grad of grad, hessian), as in JAX
        out = record(op, tuple(leaves), {"spec": spec, "kwargs": kwargs, key: rule, "fn": f, "call": call})
        if type(out) is Box and out.op == op and _reads_trace(out.v, top):
            # the rule gives derivatives for the arguments only: a differentiated value that f
            # reads through its closure would silently get none (JAX refuses this too)
            raise error("grad", f"{who}({_fname(f)}) reads a value that is being differentiated through its "
                                f"closure or a keyword argument, but its {rule_words} only gives {what} for "
                                f"its positional arguments",
                        hint="pass that value to the function as a positional argument")
        return out

    return Transformed(f"{who}({_fname(f)})", call, (f, rule))


def _as_positional(f, args, kwargs):
    """Move keyword arguments of a dg function to their positions, as bwd takes them (JAX does the same)."""
    code = getattr(f, "code", None)
    if not kwargs or code is None:
        return args, kwargs
    frame = code.bind(f, args, kwargs)      # a type error here is the one the call would raise
    last = max([len(args) - 1] + [code.index[k] for k in kwargs])
    captured = code.captured_params
    return tuple(frame[i].v if i in captured else frame[i] for i in range(last + 1)), {}


def _keyword_error(f, who, rule):
    """A differentiated value passed by keyword to a custom_vjp or custom_jvp function that is not a
    dg function."""
    return error("grad", f"{who}({_fname(f)}) got a value that is being differentiated as a keyword "
                         f"argument, but its {rule} only gives derivatives for positional ones",
                 hint="pass that value to the function as a positional argument")


def _check_like(primal, grad_tree, fn, rule="backward function", what="gradient"):
    """A gradient from custom_vjp's bwd (a tangent from custom_jvp's rule) must match its argument
    (its output): same containers, same shapes.

    A structured argument on the tape is one leaf here, so its insides are checked recursively."""
    rp, rg = peek(primal), peek(grad_tree)
    if rg is None:
        return
    who = f"the {rule} of {'custom_vjp' if what == 'gradient' else 'custom_jvp'}({_fname(fn)})"
    whose = "its argument" if what == "gradient" else "the function's result"
    if is_container(rp):
        same = type(rg) is type(rp) and len(children(rg)) == len(children(rp)) and (
            type(rp) is not dict or list(rg) == list(rp)) and (
            type(rp) is tuple or type(rp) is dict or rg.sdef is rp.sdef)
        if not same:
            raise error("grad", f"{who} returned a {what} whose structure does not match {whose}")
        for p, g in zip(children(rp), children(rg)):
            _check_like(p, g, fn, rule, what)
    elif _numeric(rp) and (not _numeric(rg) or np.shape(rg) != np.shape(rp)):
        raise error("grad", f"{who} returned {_describe(rg)} as the {what} of {_describe(rp)}")


def _one_tuple(v):
    """Whether a (possibly recorded) value is a tuple of one element."""
    return type(peek(v)) is tuple and len(peek(v)) == 1


def _numeric(v):
    """Whether a gradient value is a number or a tensor."""
    return type(v) in (int, float, np.float64, np.ndarray)


# ---------------------------------------------------------------- custom_jvp
def custom_jvp(f, rule):
    """custom_jvp(f, jvp): f, whose derivatives come from jvp(primals, tangents), which returns
    (f's value, the output's tangent) as JAX's defjvp rule does."""
    return _custom(f, rule, "CustomJvp", "custom_jvp", "rule", "derivative rule", "tangents")


__all__ = ["custom_vjp", "custom_jvp"]
