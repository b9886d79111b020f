"""How the transformations call a primitive's rules, whatever form they were declared in.

`pullback(prim)` and `pushforward(prim)` turn a primitive's declaration into
one function each, with one signature:

    pullback(ns, g, ans, args, kw, wanted) -> one cotangent (or None) per argument
    pushforward(ns, tangents, ans, args, kw) -> the output's tangent, or None for zero

For an elementwise primitive (declared by its `partials`, the local derivative
d_i with respect to each argument) they are

    cotangent_i = unbroadcast(g * d_i, shape of argument i)
    tangent     = sum_i t_i * d_i, broadcast to the output's shape

where every product of a derivative with a zero is zero, even when the other
factor is infinite or undefined: reference 6.7's "a zero cotangent times an infinite
local derivative is 0", and in forward mode its mirror, an infinite tangent times
a zero local derivative (`times`, applied here and nowhere else). A partial of
`ONE` or `MINUS_ONE` multiplies by nothing, and a piecewise constant partial (a
mask, a sign) by cmul, so that a masked-out entry is 0.0 rather than -0.0.
"""

import sys

import numpy as np

from .. import ops as O
from ..ops.core import shape_of
from ..reverse_pass import accumulate, plain_finite, pull_back
from ..tape import Box, OneSlot, REFCOUNTS_EXACT, as_float, same_float_dtype, set_owned
from ..trees import cotangent_value, zero_of
from .namespaces import EAGER

ONE = "one"             # a partial derivative of exactly 1 (Add, Sub's first argument)
MINUS_ONE = "minus one"  # exactly -1 (Sub's second argument, Neg)


def _is_mask(d):
    """Whether a partial derivative is a constant mask (bools)."""
    return type(d) is bool or (type(d) is np.ndarray and d.dtype.kind == "b")


def times(ns, g, d, piecewise=False):
    """g times the partial d, with reference 6.7's zero rule."""
    if d is ONE:
        return g
    if d is MINUS_ONE:
        return ns.negate(g)
    if type(g) is float and type(d) is float:
        r = g * d + 0.0 if piecewise else g * d        # + 0.0: a masked-out -0.0 is 0.0
        return 0.0 if r - r != 0.0 and (g == 0.0 or d == 0.0) else r     # 0 * inf is 0, not nan
    return ns.nz(g, d, ns.cmul(g, d) if piecewise or _is_mask(d) else ns.mul(g, d))


def _partial(d, ns, ans, args):
    """The value of one declared partial derivative."""
    return d if d is ONE or d is MINUS_ONE else d(ns, ans, *args)


def _product_lines(prim, i, d, env, pad):
    """Lines computing `r`, the cotangent g times partial i (not yet summed back to the argument's
    shape), from the namespace `ns`, the cotangent `g`, `ans` and the arguments x0, x1, ..."""
    if d is ONE:
        return [pad + "r = g"]
    if d is MINUS_ONE:
        return [pad + "r = ns.negate(g)"]
    env[f"D{i}"] = d
    xs = ", ".join(f"x{j}" for j in range(len(prim.partials)))
    product = "g * d + 0.0" if prim.piecewise else "g * d"       # + 0.0: a masked-out -0.0 is 0.0
    mul = "ns.cmul(g, d)" if prim.piecewise else "ns.cmul(g, d) if is_mask(d) else ns.mul(g, d)"
    return [pad + line for line in (
        f"d = D{i}(ns, ans, {xs})",
        "if type(g) is float and type(d) is float:",
        f"    r = {product}",
        "    if r - r != 0.0 and (g == 0.0 or d == 0.0):   # 0 * inf is 0 (reference 6.7)",
        "        r = 0.0",
        "else:",
        f"    r = ns.nz(g, d, {mul})")]


def _summed_back_lines(i, pad):
    """Lines summing `r` back to argument i's shape, where broadcasting made it bigger."""
    return [pad + line for line in (
        "tr = type(r)",
        f"if not (tr is type(x{i}) and (tr is float or tr is np.ndarray and r.shape == x{i}.shape)):",
        f"    r = ns.unbroadcast(r, shape_of(x{i}))     # (the common case needs no call)")]


def elementwise_pullback(prim):
    """The pullback of an elementwise primitive, from its partials: generated as straight-line code
    (it is the hot path of tensor code), one block per differentiated argument:

        r = g * d_i (by `times`' rule), summed back to argument i's shape
    """
    partials, n = prim.partials, len(prim.partials)
    xs = ", ".join(f"x{i}" for i in range(n))
    lines = ["def pullback(ns, g, ans, args, kw, wanted):", f"    {xs}, = args",
             f"    {', '.join(f'w{i}' for i in range(n))}, = wanted",
             f"    {', '.join(f'r{i}' for i in range(n))} = {(None,) * n}"]
    env = {"np": np, "shape_of": shape_of, "is_mask": _is_mask}
    for i, d in enumerate(partials):
        if d is None:       # that argument is not differentiated
            continue
        lines.append(f"    if w{i}:")
        lines += _product_lines(prim, i, d, env, " " * 8) + _summed_back_lines(i, " " * 8)
        lines.append(f"        r{i} = r")
    lines.append(f"    return ({', '.join(f'r{i}' for i in range(n))},)")
    exec("\n".join(lines), env)        # noqa: S102 (source built above from the declaration alone)
    return env["pullback"]


def elementwise_pushforward(prim):
    """The pushforward of an elementwise primitive, from its partials."""
    partials, piecewise = prim.partials, prim.piecewise

    def pushforward(ns, tangents, ans, args, kw):
        total = None
        for i, t in enumerate(tangents):
            if t is None or partials[i] is None:
                continue
            term = times(ns, t, _partial(partials[i], ns, ans, args), piecewise)
            total = term if total is None else ns.add(total, term)
        if total is None:
            return None
        out_shape = shape_of(ans)
        return total if shape_of(total) == out_shape else ns.broadcast_to(total, out_shape)
    return pushforward


def per_argument_pullback(rules):
    """A pullback from one rule per argument, rule(ns, g, ans, *args, **kw)."""

    if len(rules) == 2:
        ra, rb = rules

        def pullback2(ns, g, ans, args, kw, wanted):     # the common binary case, written out
            wa, wb = wanted
            if kw:
                return (ra(ns, g, ans, *args, **kw) if wa else None, rb(ns, g, ans, *args, **kw) if wb else None)
            return (ra(ns, g, ans, *args) if wa else None, rb(ns, g, ans, *args) if wb else None)
        return pullback2

    def pullback(ns, g, ans, args, kw, wanted):
        if kw:
            return [rule(ns, g, ans, *args, **kw) if want else None for rule, want in zip(rules, wanted)]
        return [rule(ns, g, ans, *args) if want else None for rule, want in zip(rules, wanted)]
    return pullback


def all_arguments_pullback(rule):
    """A pullback from one rule for all arguments, rule(ns, g, ans, args, kw, wanted)."""
    return lambda ns, g, ans, args, kw, wanted: rule(ns, g, ans, args, kw or {}, wanted)


def pullback(prim):
    """The uniform pullback of a primitive, or None when it has no reverse-mode rule."""
    if prim.partials is not None:
        return elementwise_pullback(prim)
    if prim.vjp is not None:
        return per_argument_pullback(prim.vjp)
    if prim.vjp_all is not None:
        return all_arguments_pullback(prim.vjp_all)
    return None


# ---------------------------------------------------------------- the float fast path
class _Probe:
    """A stand-in argument: a partial that returns one of these unchanged is that argument itself."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


def _inline_partial(d, nargs):
    """The source of a partial that is simply `ans` or one argument, else None."""
    probes = [_Probe("ans")] + [_Probe(f"x{i}") for i in range(nargs)]
    try:
        got = d(None, *probes)
    except Exception:       # it computes something (with ns): called, not inlined
        return None
    return got.name if type(got) is _Probe else None


def float_pullback(prim):
    """The reverse step of a float result with a float cotangent, fn(g, node): it adds each
    argument's cotangent into that argument's node and returns whether one of them is not finite,
    or returns None, having added nothing, when a partial does not come out a float (the general
    pullback then takes the node). Generated as straight-line code from the partials; only the
    cotangents of arguments on the tape (not Inputs, not constants) are computed.

    The reverse pass calls it for scalar code, where the general pullback would spend most of
    its time finding out that everything is a float, and the pass's own loop over the arguments
    most of the rest."""
    partials, n = prim.partials, len(prim.partials)
    xs = ", ".join(f"x{i}" for i in range(n))
    env = {"E": EAGER, "np": np, "ACC": accumulate}
    wanted = [i for i, d in enumerate(partials) if d is not None]
    lines = ["def step(g, node):", f"    {', '.join(f'p{i}' for i in range(n))}, = node.parents"]
    lines += [f"    w{i} = p{i} is not None and p{i}.op != 'Input'" for i in wanted]
    body = []       # computes each wanted argument's cotangent r{i} (an int argument may overflow)
    outs = {}
    reads_ans = False
    for i in wanted:
        d = partials[i]
        if d is ONE:
            outs[i] = "g"
            continue
        if d is MINUS_ONE:
            outs[i] = "(0.0 - g)"     # 0.0, not -0.0, for a zero cotangent (as negate)
            continue
        body.append(f"        if w{i}:")
        src = _inline_partial(d, n)
        if src is None:
            env[f"D{i}"] = d
            body += [f"            d{i} = D{i}(E, ans, {xs})",
                     f"            if type(d{i}) is not float:",
                     f"                if type(d{i}) is not bool and type(d{i}) is not np.bool_:",
                     "                    return None",
                     f"                d{i} = 1.0 if d{i} else 0.0     # a mask"]
            src = f"d{i}"
        reads_ans = reads_ans or src == "ans" or src == f"d{i}"
        product = f"g * {src} + 0.0" if prim.piecewise else f"g * {src}"
        body += [f"            r{i} = {product}",
                 f"            if r{i} - r{i} != 0.0 and (g == 0.0 or {src} == 0.0):   # 0 * inf is 0 (reference 6.7)",
                 f"                r{i} = 0.0"]
        outs[i] = f"r{i}"
    if body:        # (Add, Sub and Neg compute nothing: no arguments to read, nothing to overflow)
        lines += ["    try:", f"        {xs}, = node.args"] + ["        ans = node.v"] * reads_ans + body + [
                  "    except OverflowError:", "        return None"]
    lines.append("    bad = False")
    for i, r in outs.items():
        lines += [f"    if w{i}:",
                  f"        r = {r}",
                  "        if r - r != 0.0:",
                  "            bad = True",
                  f"        q = p{i}.g",
                  f"        p{i}.g = r if q is None else q + r if type(q) is float else ACC(q, r)"]
    lines.append("    return bad")
    exec("\n".join(lines), env)        # noqa: S102 (source built above from the declaration alone)
    return env["step"]


# ---------------------------------------------------------------- the plain-array fast path
def _refs_of_an_argument():
    """What sys.getrefcount says of an argument inside a step whose caller holds one other
    reference to it (the pass's own `g`): a step holding the only other reference may let a
    rule reuse the memory (tape.set_owned)."""
    def step(g, node, check):
        return sys.getrefcount(g)
    g = object()
    return step(g, None, None)


def has_plain_step(prim):
    """Whether plain_pullback(prim) can be made: the primitive's rules are its partials or one
    per argument, and do not run the user's code (which needs the pass's span and checks)."""
    return not prim.user_code and (prim.partials is not None or prim.vjp is not None)


def plain_pullback(prim):
    """The reverse step of a node whose value, cotangent and arguments are plain numbers and
    arrays (no outer trace: the rules run on numpy itself), fn(g, node, check): like a float
    step, it adds each argument's cotangent into that argument's node, and returns whether one
    of them is not finite (looked at only with `check`), or returns None, having added nothing,
    when an argument is boxed (the general pullback then takes the node). Generated from the
    partials of an elementwise primitive, or from its rule per argument (see `has_plain_step`).

    It leaves out the general loop's work per node: choosing a namespace, building the tuple of
    wanted arguments and of cotangents, and looping over them (a third of an RNN's backward pass)."""
    if prim.partials is not None:
        rules, n = None, len(prim.partials)
    else:
        rules, n = prim.vjp, len(prim.vjp)
    xs = ", ".join(f"x{i}" for i in range(n))
    env = {"ns": EAGER, "np": np, "shape_of": shape_of, "is_mask": _is_mask, "Box": Box, "OneSlot": OneSlot,
           "ACC": accumulate, "AS_FLOAT": as_float, "SAME_DTYPE": same_float_dtype, "FINITE": plain_finite, "set_owned": set_owned}
    lines = ["def step(g, node, check):", "    args = node.args"]
    if rules is not None:       # a rule per argument: their number is the primitive's arity
        lines += [f"    if len(args) != {n}:", "        return None"]
    lines += [f"    {xs}, = args",
              f"    if {' or '.join(f'type(x{i}) is Box' for i in range(n))}:",
              "        return None      # an outer trace's value: the general pullback records",
              f"    {', '.join(f'p{i}' for i in range(n))}, = node.parents",
              "    ans = node.v", "    bad = False"] + ["    kw = node.kw"] * (rules is not None)
    owning = n == 1 and REFCOUNTS_EXACT
    if owning:
        env["OWN_REFS"] = _refs_of_an_argument()
        lines += ["    owning = type(g) is np.ndarray and g.base is None and sys.getrefcount(g) == OWN_REFS",
                  "    if owning:", "        set_owned(g)    # only the pass's `g` refers to it: the rule may reuse its memory"]
        env["sys"] = sys
    for i in range(n):
        if rules is None and prim.partials[i] is None:
            continue
        lines.append(f"    if p{i} is not None and p{i}.op != 'Input':")
        if rules is None:
            pad = " " * 8
            lines += _product_lines(prim, i, prim.partials[i], env, pad) + _summed_back_lines(i, pad)
        else:       # a rule may give None: nothing reaches that argument
            pad = " " * 12
            env[f"R{i}"] = rules[i]
            lines += [f"        r = R{i}(ns, g, ans, {xs}, **kw) if kw else R{i}(ns, g, ans, {xs})",
                      "        if r is not None:"]
        lines += [pad + line for line in (
            f"if type(x{i}) is float and type(r) is not float:",
            "    r = AS_FLOAT(r)",
            f"elif type(r) is np.ndarray and type(x{i}) is np.ndarray and r.dtype is not x{i}.dtype:",
            f"    r = SAME_DTYPE(r, x{i})",
            f"if check and (r is not g{' or owning' if owning else ''}) and not FINITE(r):",
            "    bad = True",
            f"q = p{i}.g",
            "if q is None and type(r) is not OneSlot:",
            f"    p{i}.g = r",
            "elif type(q) is np.ndarray and type(r) is np.ndarray and q.shape == r.shape:",
            f"    p{i}.g = q + r",
            "else:",
            f"    p{i}.g = ACC(q, r)")]
    if owning:
        lines += ["    if owning:", "        set_owned(None)"]
    lines.append("    return bad")
    exec("\n".join(lines), env)        # noqa: S102 (source built above from the declaration alone)
    return env["step"]


def pushforward(prim):
    """The uniform pushforward of a primitive, or None when it has no forward-mode rule."""
    if prim.jvp is not None:
        rule = prim.jvp
        return lambda ns, tangents, ans, args, kw: rule(ns, tangents, ans, args, kw or {})
    if prim.partials is not None:
        return elementwise_pushforward(prim)
    return None


def transposed(jvp):
    """A reverse rule from a forward rule linear in the tangents: the gradient of t -> <jvp(t), g>
    at t = 0, run by dg's own reverse mode (so an outer transformation records it too)."""
    def vjp_all(ns, g, ans, args, kw, wanted):
        g = cotangent_value(g, ans)
        idx = [i for i, w in enumerate(wanted) if w]

        def pairing(*ts):
            tangents = [None] * len(args)
            for i, t in zip(idx, ts):
                tangents[i] = t
            return O.sum_(O.mul(jvp(ns, tuple(tangents), ans, args, kw), g))

        grads = pull_back(pairing, [zero_of(args[i]) for i in idx], [True] * len(idx), 1.0, True)
        out = [None] * len(args)
        for i, d in zip(idx, grads):
            out[i] = d
        return out
    return vjp_all


__all__ = ["ONE", "MINUS_ONE", "times", "pullback", "pushforward", "float_pullback", "has_plain_step", "plain_pullback",
           "transposed"]
