"""linearize(f, *primals): f's value and its derivative as a linear function (reference section 6).

f runs once, on a reverse tape, as for vjp. The returned f_jvp(*tangents) is forward mode over
that recording: each step's tangent by its primitive's forward rule, from the values the run
kept, so f's code, its prints and its random draws do not happen again (JAX's linearize is jvp
with the primal computation done once, the same). Where a step has no forward rule of its own
(a checkpoint, a host function, a compiled loop), f_jvp is jvp of f, run again from the random
generator's state of the first run.
"""

from ..core import tape
from ..core.tape import Trace, peek
from ..core.trees import flatten, flatten_like, is_container, is_differentiable_leaf, unflatten, zero_of
from ..errors import error
from .forward import _check_tangent, push
from .transformed import Transformed, describe, fname
from .transforms import _enter


def linearize(f, primals, opts=None, generator=None):
    """(f(*primals), f_jvp), f_jvp(*tangents) giving the output's tangent. `generator()` gives
    the interpreter's random generator, whose state a rerun of f starts from."""
    who = f"linearize({fname(f)})"
    trace = Trace(False)
    state = generator().bit_generator.state if generator else None
    nums = tuple(i for i, v in enumerate(primals) if is_differentiable_leaf(v) or is_container(peek(v)))
    boxed, params = _enter(trace, primals, nums, who)
    out = f(*boxed)
    leaves, spec = flatten(out)
    ours = [type(v) is tape.Box and v.trace is trace for v in leaves]
    value = unflatten(spec, [v.v if mine else v for v, mine in zip(leaves, ours)])
    nodes = trace.nodes
    trace.release()
    by_arg = dict(zip(nums, params))
    replay = any(node.op not in tape.PUSHFORWARDS and node.op not in ("Parameter", "Input") for node in nodes)

    def f_jvp(*tangents):
        tangents = _checked(primals, tangents, who)
        if replay:
            return _rerun(f, primals, tangents, who, generator, state)
        known = {id(by_arg[i]): t for i, t in enumerate(tangents) if i in by_arg and t is not None}
        for node in nodes:
            if node.op == "Parameter" or node.op == "Input":
                continue
            ts = tuple(None if p is None else known.get(id(p)) for p in node.parents)
            if all(t is None for t in ts):
                continue
            t = tape.PUSHFORWARDS[node.op](tape._ns(node.v, node.args, ts), ts, node.v, node.args, node.kw)
            if t is not None:
                known[id(node)] = tape.tangent_like(t, node.v)
        return unflatten(spec, [_tangent_of(leaf, mine, known) for leaf, mine in zip(leaves, ours)])

    return value, Transformed(f"the linear function of {who}", f_jvp, (f,))


def _checked(primals, tangents, who):
    """One tangent tree per primal, each leaf fitting its primal's (None where it is zero)."""
    if len(tangents) != len(primals):
        raise error("type", f"the linear function of {who} takes {len(primals)} tangent"
                            f"{'s' * (len(primals) != 1)}, one per primal, but got {len(tangents)}")
    out = []
    for i, (p, t) in enumerate(zip(primals, tangents)):
        pleaves, pspec = flatten(p)
        try:
            tleaves = flatten_like(pspec, t)
        except ValueError:
            raise error("type", f"the linear function of {who}: the tangent of argument {i} must have "
                                f"the structure of the primal, got {describe(t)}") from None
        tleaves = [_check_tangent(a, b, who, f"a leaf of argument {i}") for a, b in zip(pleaves, tleaves)]
        out.append(unflatten(pspec, tleaves) if any(x is not None for x in tleaves) else None)
    return out


def _tangent_of(leaf, mine, known):
    """The tangent of one leaf of f's result: zeros where no tangent reached it."""
    if mine:
        t = known.get(id(leaf))
        return t if t is not None else zero_of(leaf.v)
    return zero_of(leaf)


def _rerun(f, primals, tangents, who, generator, state):
    """jvp of f again, from the random generator's state of linearize's run."""
    if state is None:
        return push(f, tuple(primals), tuple(tangents), who)[1]
    gen = generator()
    now = gen.bit_generator.state
    gen.bit_generator.state = state
    try:
        return push(f, tuple(primals), tuple(tangents), who)[1]
    finally:
        gen.bit_generator.state = now


__all__ = ["linearize"]
