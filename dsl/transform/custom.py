"""User-given derivative rules: custom_vjp(f, bwd) and custom_jvp(f, jvp) (reference section 6).

Each records one step (CustomVjp, CustomJvp, declared below with their rules) whose kernel calls the
function again, so that an outer differentiation records its own step and the user's rule gives
the derivative at every level. The other mode follows from the rule: forward mode through
custom_vjp is the gradient of u -> <bwd(u), t>, reverse mode through custom_jvp the gradient of
t -> <jvp(primals, t), g>, both exact where the user's rule is linear in u or t, as it must be.
"""

import numpy as np

from ..core import ops as O, tape
from ..core.primitives.registry import define
from ..core.tape import Box, peek, record
from ..core.trees import (children, cotangent_value, flatten, flatten_like, is_container,
                          is_differentiable_leaf, opened, unflatten, zero_like_tree, zero_of)
from ..errors import error
from .transformed import Transformed, describe, fname
from .transforms import _reads_trace, grad


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
            raise error("grad", f"{who}({fname(f)}) reads a value that is being differentiated through its "
                                f"closure or a keyword argument, but its {rule_words} only gives {what} for "
                                f"its positional arguments",
                        hint="pass that value to the function as a positional argument")
        return out

    return Transformed(f"{who}({fname(f)})", call, (f, rule))


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
    return error("grad", f"{who}({fname(f)}) got a value that is being differentiated as a keyword "
                         f"argument, but its {rule} only gives derivatives for positional ones",
                 hint="pass that value to the function as a positional argument")


def _check_like(primal, grad_tree, fn, rule="backward function", what="gradient"):
    """A gradient from custom_vjp's bwd (a tangent from custom_jvp's rule) must match its argument
    (its output): same containers, same shapes.

    A structured argument on the tape is one leaf here, so its insides are checked recursively."""
    rp, rg = peek(primal), peek(grad_tree)
    if rg is None:
        return
    who = f"the {rule} of {'custom_vjp' if what == 'gradient' else 'custom_jvp'}({fname(fn)})"
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
        raise error("grad", f"{who} returned {describe(rg)} as the {what} of {describe(rp)}")


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


# ---------------------------------------------------------------- the CustomVjp step and its rules
def _custom_vjp_kernel(*leaves, spec=None, kwargs=None, bwd=None, fn=None, call=None):
    """The function itself, through custom_vjp's call again (so outer levels record their own node)."""
    return call(*unflatten(spec, leaves), **kwargs)


def _custom_vjp_rule(ns, g, ans, leaves, kw, wanted):
    """Call the user's backward function and split its answer over the argument leaves."""
    spec, bwd = kw["spec"], kw["bwd"]
    args = unflatten(spec, leaves)
    result = bwd(*args, ans, cotangent_value(g, ans))
    if len(args) == 1:
        # JAX's bwd always returns a tuple: accept its 1-tuple too, unless the argument is itself
        # a 1-tuple (then (g,) is that tuple's own gradient)
        if _one_tuple(result) and not _one_tuple(args[0]):
            result = peek(result)[0]
        result = (result,)
    elif type(peek(result)) is not tuple or len(peek(result)) != len(args):
        raise error("grad", f"the backward function of custom_vjp({fname(kw['fn'])}) must return a tuple "
                            f"of {len(args)} gradients, one per argument, but returned {describe(result)}")
    out = []
    for arg_spec, grad_tree in zip(spec[1], peek(result)):
        try:
            out += flatten_like(arg_spec, grad_tree)
        except ValueError:
            raise error("grad", f"the backward function of custom_vjp({fname(kw['fn'])}) returned a gradient "
                                f"whose structure does not match its argument") from None
    for i, (o, leaf, w) in enumerate(zip(out, leaves, wanted)):     # a number or tensor: same shape back
        if w:
            _check_like(leaf, o, kw["fn"])
            if type(o) is int and type(peek(leaf)) is float:
                out[i] = O.to_float(o)    # the gradient of a float is a float (inf past float's range)
    return [o if w else None for o, w in zip(out, wanted)]


def _custom_vjp_jvp(ns, tangents, ans, leaves, kw):
    """J t, where bwd gives the transpose of J: the gradient of u -> <bwd(u), t> (bwd is linear in u).

    So forward mode through custom_vjp uses the user's rule too, as reverse mode does."""
    wanted = tuple(t is not None for t in tangents)

    def pairing(u):
        # every recorded structure in u opened, nested ones too: bwd reads each leaf on grad's tape
        grads = _custom_vjp_rule(ns, opened(u), ans, leaves, kw, wanted)
        total = 0.0
        for d, t in zip(grads, tangents):
            if d is not None and t is not None:
                for dl, tl in zip(flatten(d)[0], flatten(t)[0]):
                    if dl is not None and tl is not None:
                        total = O.add(total, O.sum_(O.mul(dl, tl)))
        return total

    return grad(pairing)(zero_like_tree(ans))


define("CustomVjp", _custom_vjp_kernel, vjp_all=_custom_vjp_rule, jvp=_custom_vjp_jvp, user_code=True, can_fail=True)


# ---------------------------------------------------------------- the CustomJvp step and its rules
def _custom_jvp_kernel(*leaves, spec=None, kwargs=None, rule=None, fn=None, call=None):
    """The function itself, through custom_jvp's call again (so outer levels record their own node)."""
    return call(*unflatten(spec, leaves), **kwargs)


def _custom_jvp_jvp(ns, tangents, ans, leaves, kw):
    """The user's rule on (primals, tangents): a float leaf without a tangent gets zeros, as JAX
    instantiates its symbolic zeros; a leaf that has none (an int, a string) gets none."""
    full = [t if t is not None else (zero_of(x) if is_differentiable_leaf(x) else None)
            for t, x in zip(tangents, leaves)]
    return _rule_tangent(kw, leaves, full, ans)


def _rule_tangent(kw, leaves, tangents, ans):
    """The output's tangent from the user's rule, checked to be a pair whose tangent fits the output."""
    spec, fn = kw["spec"], kw["fn"]
    pair = kw["rule"](unflatten(spec, leaves), unflatten(spec, tangents))
    if type(peek(pair)) is not tuple or len(peek(pair)) != 2:
        raise error("grad", f"the derivative rule of custom_jvp({fname(fn)}) must return a pair (value, "
                            f"tangent), but returned {describe(pair)}")
    tangent = peek(pair)[1] if type(pair) is Box else pair[1]
    _check_like(ans, tangent, fn, "derivative rule", "tangent")
    return tangent


def _custom_jvp_vjp(ns, g, ans, leaves, kw, wanted):
    """The transpose of t -> rule(primals, t)'s tangent, which is linear in t: the gradient of
    t -> <that tangent, g>, at t = 0 (exact anywhere, as the map is linear)."""
    g = cotangent_value(g, ans)
    idx = [i for i, w in enumerate(wanted) if w]

    def pairing(*ts):
        tangents = [zero_of(x) if is_differentiable_leaf(x) else None for x in leaves]
        for i, t in zip(idx, ts):
            tangents[i] = t
        total = 0.0
        for tl, gl in zip(flatten(_rule_tangent(kw, leaves, tangents, ans))[0], flatten(g)[0]):
            if tl is not None and gl is not None:
                total = O.add(total, O.sum_(O.mul(tl, gl)))
        return total

    grads = grad(pairing, tuple(range(len(idx))))(*[zero_of(peek(leaves[i])) for i in idx])
    out = [None] * len(leaves)
    for i, d in zip(idx, grads):
        out[i] = d
    return out


define("CustomJvp", _custom_jvp_kernel, vjp_all=_custom_jvp_vjp, jvp=_custom_jvp_jvp, user_code=True, can_fail=True)
