"""Primitives that run dg code: CustomVjp (custom_vjp's user rule), Checkpoint
(recomputed in backward) and HostCall (a Python function given to dg).

Under jit and vmap, Checkpoint is not recorded, nor is CustomVjp where no
derivative will be taken through the recording: the function they wrap is
staged like any other code (dsl/autodiff/transforms.py). Where one will be
(grad or jvp of jit, a rolled loop under grad: StageTrace.keeps_rules), a
CustomVjp step is recorded, whose kernel calls the function, so that the
derivative taken later uses the user's rule. Under forward mode Checkpoint just
runs its function.
"""

from .. import ops as O
from ..autodiff import reverse_pass, tape
from ..autodiff.tape import Box, Trace, peek
from ..autodiff.trees import children, cotangent_value, flatten_like, is_container, is_differentiable_leaf, unflatten
from ..errors import error
from ..autodiff.stage import _effect_kernel, layout
from ..autodiff.trees import flatten
from .batching import batch_size
from .registry import define


# ---------------------------------------------------------------- custom_vjp
def _custom_vjp_kernel(*leaves, spec=None, kwargs=None, bwd=None, fn=None, call=None):
    """The function itself, through custom_vjp's call again (so outer levels record their own node)."""
    return call(*unflatten(spec, leaves), **kwargs)


def _custom_vjp_rule(ns, g, ans, leaves, kw, wanted):
    """Call the user's backward function and split its answer over the argument leaves."""
    from ..autodiff.custom import _check_like, _one_tuple
    from ..autodiff.transforms import _describe, _fname
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
        raise error("grad", f"the backward function of custom_vjp({_fname(kw['fn'])}) must return a tuple "
                            f"of {len(args)} gradients, one per argument, but returned {_describe(result)}")
    out = []
    for arg_spec, grad_tree in zip(spec[1], peek(result)):
        try:
            out += flatten_like(arg_spec, grad_tree)
        except ValueError:
            raise error("grad", f"the backward function of custom_vjp({_fname(kw['fn'])}) returned a gradient "
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
    from ..autodiff.transforms import grad
    from ..autodiff.trees import flatten
    from .. import ops as O
    wanted = tuple(t is not None for t in tangents)

    def pairing(u):
        from ..autodiff.trees import opened
        # every recorded structure in u opened, nested ones too: bwd reads each leaf on grad's tape
        grads = _custom_vjp_rule(ns, opened(u), ans, leaves, kw, wanted)
        total = 0.0
        for d, t in zip(grads, tangents):
            if d is not None and t is not None:
                for dl, tl in zip(flatten(d)[0], flatten(t)[0]):
                    if dl is not None and tl is not None:
                        total = O.add(total, O.sum_(O.mul(dl, tl)))
        return total

    from ..autodiff.trees import zero_like_tree
    return grad(pairing)(zero_like_tree(ans))


define("CustomVjp", _custom_vjp_kernel, vjp_all=_custom_vjp_rule, jvp=_custom_vjp_jvp, user_code=True, can_fail=True)


# ---------------------------------------------------------------- custom_jvp
def _custom_jvp_kernel(*leaves, spec=None, kwargs=None, rule=None, fn=None, call=None):
    """The function itself, through custom_jvp's call again (so outer levels record their own node)."""
    return call(*unflatten(spec, leaves), **kwargs)


def _custom_jvp_jvp(ns, tangents, ans, leaves, kw):
    """The user's rule on (primals, tangents): a float leaf without a tangent gets zeros, as JAX
    instantiates its symbolic zeros; a leaf that has none (an int, a string) gets none."""
    from ..autodiff.trees import zero_of
    full = [t if t is not None else (zero_of(x) if is_differentiable_leaf(x) else None)
            for t, x in zip(tangents, leaves)]
    return _rule_tangent(kw, leaves, full, ans)


def _rule_tangent(kw, leaves, tangents, ans):
    """The output's tangent from the user's rule, checked to be a pair whose tangent fits the output."""
    from ..autodiff.custom import _check_like
    from ..autodiff.transforms import _describe, _fname
    spec, fn = kw["spec"], kw["fn"]
    pair = kw["rule"](unflatten(spec, leaves), unflatten(spec, tangents))
    if type(peek(pair)) is not tuple or len(peek(pair)) != 2:
        raise error("grad", f"the derivative rule of custom_jvp({_fname(fn)}) must return a pair (value, "
                            f"tangent), but returned {_describe(pair)}")
    tangent = peek(pair)[1] if type(pair) is Box else pair[1]
    _check_like(ans, tangent, fn, "derivative rule", "tangent")
    return tangent


def _custom_jvp_vjp(ns, g, ans, leaves, kw, wanted):
    """The transpose of t -> rule(primals, t)'s tangent, which is linear in t: the gradient of
    t -> <that tangent, g>, at t = 0 (exact anywhere, as the map is linear)."""
    from ..autodiff.transforms import grad
    from ..autodiff.trees import flatten, zero_of
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


# ---------------------------------------------------------------- checkpoint
def _checkpoint_kernel(*leaves, spec=None, kwargs=None, fn=None, **_):
    """The checkpointed function on its arguments."""
    return fn(*unflatten(spec, leaves), **kwargs)


def _checkpoint_rule(ns, g, ans, leaves, kw, wanted):
    """Re-run the function on a fresh trace and pull the cotangent through it."""
    trace = Trace(kw["check"])
    boxed = []
    for leaf, want in zip(leaves, wanted):
        if want:
            b = Box(leaf, trace, "Parameter", (), (), None, tape.get_span())
            trace.nodes.append(b)
            boxed.append(b)
        else:
            boxed.append(leaf)
    out = _replay(kw, boxed)
    seeds = [(box, cot) for box, cot in _pair_leaves(out, cotangent_value(g, ans))
             if type(box) is Box and box.trace is trace and cot is not None]
    reverse_pass.backward_from(trace, seeds)
    grads = [cotangent_value(b.g, b.v) if type(b) is Box and b.trace is trace else None for b in boxed]
    trace.release()
    return grads


def _replay(kw, boxed):
    """Run a checkpointed function again with the random generator as it was in the forward pass."""
    generator, state = kw.get("generator"), kw.get("state")
    if state is None:
        return kw["fn"](*unflatten(kw["spec"], boxed), **kw["kwargs"])
    gen = generator()
    now = gen.bit_generator.state
    gen.bit_generator.state = state
    try:
        return kw["fn"](*unflatten(kw["spec"], boxed), **kw["kwargs"])
    finally:
        gen.bit_generator.state = now


def _pair_leaves(out, cot):
    """Pair the leaves of an output tree with the leaves of its cotangent tree."""
    if type(out) is not Box and is_container(out):
        pairs = []
        for o, c in zip(children(out), children(cot)):
            pairs += _pair_leaves(o, c)
        return pairs
    return [(out, cot)]


define("Checkpoint", _checkpoint_kernel, vjp_all=_checkpoint_rule, user_code=True)


# ---------------------------------------------------------------- host functions
def _host_kernel(*leaves, host=None, spec=None, kwargs=None):
    """Call the host function again, which records on any outer trace."""
    return host(*unflatten(spec, leaves), **kwargs)


def _host_rule(ns, g, ans, leaves, kw, wanted):
    """The host's own vjp, in Python (see dsl/embed.py)."""
    from ..embed import host_vjp
    return host_vjp(g, ans, leaves, kw, wanted)


def _host_batch(ns, args, batched, kw):
    """A host function is Python code: called once per example, the results stacked."""
    from .. import ops as O
    size = batch_size(args, batched)
    outs = [_host_kernel(*[O.index(a, (i,)) if b else a for a, b in zip(args, batched)], **kw)
            for i in range(size)]
    return O.stack(tuple(outs))


define("HostCall", _host_kernel, vjp_all=_host_rule, batch=_host_batch, user_code=True, can_fail=True)


# ---------------------------------------------------------------- effects (jit and vmap)
# print, random draws, the clock: performed again, in order, each time a staged program runs
define("Effect", _effect_kernel, differentiable=False, effect=True, can_fail=True)
# an effect's structured result, taken apart: its layout (a guard reads it) and its leaves
define("EffectLayout", layout, differentiable=False)
define("EffectLeaf", lambda tree, i: flatten(tree)[0][i], differentiable=False)
