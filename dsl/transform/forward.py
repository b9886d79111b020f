"""Forward mode: jvp, jacfwd, and hessian as forward over reverse (reference section 6).

`jvp(f, primals, tangents)` opens a forward trace with a fresh level: each float
or tensor leaf of the primals becomes a Box carrying its tangent in `.t`, and
every primitive applied to it computes its result's tangent at once by its
forward rule (tape.ForwardTrace). Nothing is kept, so forward mode needs no tape.
Levels keep nested transformations apart exactly as for grad: a jvp inside a
grad, or a grad inside a jvp (Hessian-vector products), confuse no perturbations.
"""

import numpy as np

from ..core import ops as O
from ..core.tape import Box, ForwardTrace, as_float, get_span, peek
from ..core.trees import flatten, flatten_like, is_differentiable_leaf, opened, unflatten, zero_of
from ..errors import error
from .jit.signatures import signature
from .transformed import Transformed, describe, fname
from .transforms import _argnums, _has_aux, Options, check_differentiable, grad, jacobian, output_leaves
from .vmap import vmap


def _check_tangent(primal, tangent, who, where):
    """A tangent leaf must fit its primal leaf: a number for a float, a tensor of its shape for a tensor."""
    p, t = peek(primal), peek(tangent)
    if t is None:
        return None
    if not is_differentiable_leaf(p):
        if type(p) is int and type(t) in (int, float) and t == 0:
            return None
        raise error("grad", f"{who}: {where} is {describe(p)}, which has no tangent (got {describe(t)})",
                    hint=f"write it as a float literal, e.g. {O.to_float(p)!r}" if type(p) is int else
                    "give none as its tangent")
    if type(p) is np.ndarray:
        if type(t) not in (np.ndarray, float, int) or np.shape(t) != p.shape:
            raise error("shape", f"{who}: the tangent of {where} must be a tensor of shape "
                                 f"{O.fmt_shape(p.shape)}, got {describe(t)}")
        return tangent if type(t) is np.ndarray else np.full(p.shape, O.to_float(t))
    if type(t) not in (float, int):
        raise error("type", f"{who}: the tangent of {where} (a float) must be a number, got {describe(t)}")
    return tangent if type(t) is float else float(t)


def push(f, primals, tangents, who, kwargs=None):
    """Run f on primals carrying tangents; return (output, output's tangent tree)."""
    trace = ForwardTrace()
    span = get_span()
    # a struct an outer grad differentiates is one boxed value: its leaves take the tangents
    leaves, spec = flatten(opened(primals))
    try:
        tleaves = flatten_like(spec, tangents)
    except ValueError:
        raise error("type", f"{who}: the tangents must have the structure of the primals") from None
    boxed = []
    for i, (p, t) in enumerate(zip(leaves, tleaves)):
        t = _check_tangent(p, t, who, f"a leaf of argument {_argument_of(spec, i) + 1}")
        if t is None:
            boxed.append(p)
            continue
        b = Box(p, trace, "Tangent", (), (), None, span)
        b.t = t
        boxed.append(b)
    out = f(*unflatten(spec, boxed), **(kwargs or {}))
    return _split(out, trace)


def _argument_of(spec, leaf):
    """Which argument (of the tuple `spec` describes) holds leaf number `leaf`."""
    counts = [len(flatten_like(kid, None)) for kid in spec[1]]
    for i, n in enumerate(counts):
        if leaf < n:
            return i
        leaf -= n
    return len(counts) - 1


def _split(out, trace):
    """An output tree as (its values, its tangents): a zero tangent for every leaf the trace never touched."""
    leaves, spec = flatten(out)
    values, tangents = [], []
    for leaf in leaves:
        if type(leaf) is Box and leaf.trace is trace:
            values.append(leaf.v)
            t = leaf.t
            tangents.append(as_float(t) if type(peek(leaf.v)) is float and type(t) is not float else t)
        else:
            values.append(leaf)
            tangents.append(zero_of(leaf))
    return unflatten(spec, values), unflatten(spec, tangents)


def jvp(f, primals, tangents, opts=None):
    """jvp(f, primals, tangents): (f(*primals), tangent of the output), by forward mode."""
    who = f"jvp({fname(f)})"
    p, t = peek(primals), peek(tangents)
    if type(p) is not tuple or type(t) is not tuple:
        bad = "primals" if type(p) is not tuple else "tangents"
        raise error("type", f"{who}: {bad} must be a tuple with one entry per argument, got "
                            f"{describe(p if bad == 'primals' else t)}",
                    hint="write jvp(f, (x,), (v,)) for a function of one argument")
    if len(p) != len(t):
        raise error("type", f"{who}: {len(p)} primal{'s' * (len(p) != 1)} but {len(t)} "
                            f"tangent{'s' * (len(t) != 1)}")
    kept = opts.kept if opts is not None else 0
    out, tangent = push(f, p, t, who)
    if opts is not None and opts.kept == kept:      # nothing inside recorded a tape of its own
        opts.keep((), f"{who}, which keeps no tape: forward mode computes each tangent as it goes")
    return out, tangent


# ---------------------------------------------------------------- Jacobians by forward mode
def jacfwd(f, argnums=0, opts=None, name="jacfwd", who=None, interp=None, has_aux=False):
    """jacfwd(f, argnums): the Jacobian by forward mode: for each input leaf, the jvp along every one
    of its unit directions at once (vmap over the basis). A result that is a tree gives a tree like
    it, each leaf holding that leaf's Jacobian (out_shape + in_shape), as jacrev does. With the
    interpreter, f's effects (print, random draws) are recorded as it is staged, and happen on each call."""
    who = who or f"{name}({fname(f)})"
    has_aux = _has_aux(has_aux, who)
    caches = {}         # (argument, leaf) -> the staged column function's programs, kept between calls

    def call(*args, **kwargs):
        args = opened(args)     # a struct an outer grad differentiates: its own leaves, each a block
        nums, single = _argnums(argnums, len(args), who)
        for i in nums:
            check_differentiable(args[i], i, who)
        blocks, shapes, aux = {}, None, None
        for i in nums:
            leaves, _ = flatten(args[i])
            for k, leaf in enumerate(leaves):
                if is_differentiable_leaf(leaf) and np.size(peek(leaf)):
                    blocks[i, k], shapes, aux = _columns(f, args, kwargs, i, k, who, caches.setdefault((i, k), {}),
                                                         interp, has_aux)
        if shapes is None:      # nothing to differentiate: the result's leaves give the shapes
            value = f(*args, **kwargs)
            value, aux = _aux_split(value, who) if has_aux else (value, None)
            shapes = output_leaves(value, who)[1:]
        out_spec, out_shapes = shapes
        jac = []
        for j, out_shape in enumerate(out_shapes):
            result = [_assemble(args[i], i, blocks, j, out_shape) for i in nums]
            jac.append(result[0] if single else tuple(result))
        jac = unflatten(out_spec, jac)
        return (jac, aux) if has_aux else jac

    return Transformed(who, call, (f,))


def _columns(f, args, kwargs, i, k, who, cache, interp, has_aux=False):
    """The blocks d out_j / d (leaf k of argument i), one per leaf j of the result, each shaped
    out_shape + leaf_shape; (the result's tree, its leaves' shapes); and with has_aux, f's aux."""
    leaf = peek(flatten(args[i])[0][k])
    shape = np.shape(leaf)
    # the result's tree, and per leaf whether it has no derivative (none, a string, an int, ...):
    # its tangent, None, is no leaf of the tangents vmap stacks, which are read by this tree
    result = []

    def column(primals, options, direction):
        tangents = tuple(_along(primals, i, k, direction) if j == i else None for j in range(len(primals)))
        value, tangent = push(f, tuple(primals), tangents, who, options)
        if has_aux:     # the aux of the values, which no direction changes
            (value, aux), tangent = _aux_split(value, who), _aux_split(tangent, who)[0]
        _, spec, shapes = output_leaves(value, who)
        result[:] = [spec, [s is None for s in shapes]]
        leaves = flatten_like(spec, tangent)
        if any(t is None and s is not None for t, s in zip(leaves, shapes)):
            # an int leaf the Jacobian counts (a whole int result) has no tangent: its derivative is 0.0
            tangent = unflatten(spec, [0.0 if t is None and s is not None else t for t, s in zip(leaves, shapes)])
        return (tangent, aux) if has_aux else tangent

    if not shape:       # a float: one direction
        t = column(args, kwargs, 1.0)
        t, aux = t if has_aux else (t, None)
        spec, underived = result
        leaves = [None if u else x for x, u in zip(flatten_like(spec, t), underived)]
        return leaves, (spec, [None if u else np.shape(peek(x)) for x, u in zip(leaves, underived)]), aux
    n = int(np.prod(shape))
    O.check_size((n,) + shape, "set of directions (one per entry of the argument)")    # np.eye's n x n
    # the primals are arguments (not constants) of what is staged, so its program serves every call
    mapped = vmap(Transformed(who, column, (f,), frame=False), (None, None, 0), (0, None) if has_aux else 0,
                  interp=interp, cache=cache, shared_effects=True)
    directions = np.eye(n, dtype=O.float_type(leaf)).reshape((n,) + shape)     # float32 ones for float32
    # a program vmap kept from an earlier call of this signature runs without calling column:
    # the result's tree is kept beside it
    kept = ("the result's tree", signature(tuple(args), dict(kwargs)))
    cols = mapped.call(tuple(args), dict(kwargs), directions)   # .call: no frame
    if result:
        cache[kept] = list(result)
    spec, underived = result or cache[kept]
    cols, aux = cols if has_aux else (cols, None)
    blocks, out_shapes = [], []
    for c, u in zip(flatten_like(spec, cols), underived):
        if u:
            blocks.append(None)
            out_shapes.append(None)
            continue
        out_shape = np.shape(peek(c))[1:]
        block = O.reshape(c, shape + out_shape)
        nd, no = len(shape), len(out_shape)         # the leaf's axes behind the output's
        blocks.append(O.transpose(block, tuple(range(nd, nd + no)) + tuple(range(nd))) if no else block)
        out_shapes.append(out_shape)
    return blocks, (spec, out_shapes), aux


def _aux_split(pair, who):
    """(value, aux) of a result with has_aux."""
    v = peek(pair)
    if type(v) is not tuple or len(v) != 2:
        raise error("type", f"{who} with has_aux=true needs a function that returns a pair (value, aux), "
                            f"but it returned {describe(v)}")
    return opened(pair) if type(pair) is not tuple else pair


def _along(args, i, k, direction):
    """A tangent for argument i: `direction` at its leaf k, zero elsewhere."""
    leaves, spec = flatten(args[i])
    out = [None] * len(leaves)
    out[k] = direction
    return unflatten(spec, out)


def _assemble(arg, i, blocks, j, out_shape):
    """The Jacobian of result leaf j with respect to one argument: a tree like the argument with
    leaves of shape out_shape + leaf_shape."""
    if out_shape is None:       # a result leaf with no derivative
        return None
    leaves, spec = flatten(arg)
    out = []
    for k, leaf in enumerate(leaves):
        if not is_differentiable_leaf(leaf):
            out.append(None)
        elif (i, k) in blocks:
            out.append(blocks[i, k][j])
        else:
            out.append(np.zeros(tuple(out_shape) + np.shape(peek(leaf))))
    return unflatten(spec, out)


def jacrev(f, argnums=0, opts=None):
    """jacrev(f, argnums): the Jacobian by reverse mode (today's jacobian)."""
    return jacobian(f, argnums, opts, name="jacrev")


def hessian(f, argnums=0, opts=None, interp=None, has_aux=False):
    """hessian(f): exact second derivatives, forward mode over the gradient (reverse mode), nested
    as JAX's jacfwd(jacrev(f)): for a struct, map or tuple argument, a tree like it whose leaves
    are trees like it; for several argnums, a tuple of tuples."""
    # the inner grad speaks as hessian too (its errors are about the function given to hessian),
    # and adds no call frame of its own: the stack shows one `in hessian(f)`
    who = f"hessian({fname(f)})"
    has_aux = _has_aux(has_aux, who)
    inner = grad(f, argnums, opts or Options(), name="hessian", has_aux=has_aux)
    outer = jacfwd(inner.call, argnums, opts, who=who, interp=interp, has_aux=has_aux)
    return Transformed(who, outer.call, (f,))


__all__ = ["jvp", "jacfwd", "jacrev", "hessian", "push"]
