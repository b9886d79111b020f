"""The differentiation builtins: grad, value_and_grad, jacobian, hessian,
stop_gradient, custom_vjp and checkpoint (reference section 6)."""

import sys

import numpy as np

from ..base.cycles import gc_paused
from ..core import ops as O, reverse_pass, tape
from ..core import primitives  # noqa: F401  (fills the rule tables)
from ..core.printing import show
from ..core.reverse_pass import backward
from ..core.tape import Box, Trace, peek, record
from ..core.trees import (children, contains_box, cotangent_value, flatten, flatten_like, flatten_open,
                          is_container, is_differentiable_leaf, opened, rebuild, strip, unflatten)
from ..errors import error
from .transformed import Transformed, describe, fname
from .vmap import vmap


class Options:
    """Per-interpreter settings of differentiation: the numerics check and the last tape."""

    __slots__ = ("check_numerics", "keep_tape", "last_tape", "last_label", "kept")

    def __init__(self, check_numerics=True, keep_tape=True):
        self.check_numerics = check_numerics
        self.keep_tape = keep_tape
        self.last_tape = None
        self.last_label = None      # what made last_tape, e.g. "value_and_grad(loss)"
        self.kept = 0               # how many tapes or recordings have been kept

    def keep(self, nodes, label, owned=False):
        """Keep a node list (a tape, or a staged recording) for :tape and Interpreter.last_tape;
        a copy of it, unless nothing else will change it (`owned`)."""
        if self.keep_tape:
            self.last_tape = nodes if owned else list(nodes)
            self.last_label = label
            self.kept += 1

    def finished(self, trace, label=None):
        """A differentiation ended: keep its node list for inspection, or let it go. One stopped
        part way (Ctrl-C, memory running out) is let go: its tape is partial, and may be huge."""
        nodes = trace.nodes
        trace.release()     # the trace lets go of the list: it is ours to keep as it is
        stopped = sys.exc_info()[0]
        if stopped is not None and issubclass(stopped, (KeyboardInterrupt, MemoryError)):
            return
        self.keep(nodes, label, owned=True)


def _argnums(argnums, nargs, who):
    """Normalise argnums (an int or a tuple of ints) against the number of arguments."""
    argnums = tape.concrete(argnums)
    single = type(argnums) is int
    nums = (argnums,) if single else argnums
    if type(nums) is not tuple or not nums or any(type(i) is not int for i in nums):
        raise error("type", f"{who}: argnums must be an int or a tuple of ints, got {show(argnums, nested=True)}")
    out = []
    for i in nums:
        if not -nargs <= i < nargs:
            raise error("type", f"{who}: argnums={O.brief_int(i)} but the function was called with "
                                f"{nargs} argument{'s' * (nargs != 1)}")
        if i % nargs in out:        # one Parameter per argument: a repeat would get no gradient
            raise error("type", f"{who}: argnums={tuple(nums)} names argument {i % nargs} twice (counting from 0, as argnums does)")
        out.append(i % nargs)
    return tuple(out), single


def check_differentiable(v, i, who):
    """Argument i may be differentiated: a float, a tensor or a structure of them, never an int
    or a bool (grad, jacfwd and the rest say so alike)."""
    rv = peek(v)
    if type(rv) is int or type(rv) is bool:
        raise error("grad", f"{who}: cannot differentiate with respect to argnums={i}, "
                            f"which is {describe(rv)} ({O.brief_int(rv) if type(rv) is int else str(rv).lower()})",
                    hint=f"write it as a float literal, e.g. {O.to_float(rv)!r}" if type(rv) is int else None)
    if not (is_differentiable_leaf(rv) or is_container(rv)):
        ints = type(rv) is np.ndarray and rv.dtype.kind in "iu"
        raise error("grad", f"{who}: cannot differentiate with respect to argnums={i}, "
                            f"which is {describe(rv)}" + (f" of {rv.dtype.name}s" if ints else ""),
                    hint='cast it first: astype(x, "float64")' if ints else None)


def _enter(trace, args, nums, who):
    """Box the differentiated arguments as Parameters and float inputs as Inputs."""
    boxed = list(args)
    params = []
    span = tape.get_span()
    for i in nums:
        v = args[i]
        check_differentiable(v, i, who)
        b = Box(v, trace, "Parameter", (), (), {"argnum": i}, span)
        trace.nodes.append(b)
        boxed[i] = b
        params.append(b)
    for i, v in enumerate(args):
        if i not in nums and is_differentiable_leaf(v):
            b = Box(v, trace, "Input", (), (), {"argnum": i}, span)
            trace.nodes.append(b)
            boxed[i] = b
    return boxed, params


def _seed(value, who):
    """The cotangent 1 for a scalar result; an error naming the shape otherwise (reference 6.5)."""
    v = peek(value)
    t = type(v)
    if t is float or t is int or t is np.float64:
        return 1.0
    if t is np.ndarray and v.size == 1 and v.dtype.kind == "f":
        return np.ones(v.shape)
    hint = ("a function that ends without `return` gives none: return the number to differentiate"
            if v is None else
            "reduce the result with sum(...) or mean(...), or use jacobian(f) for every derivative")
    raise error("grad", f"{who} needs a function that returns a single number, but it returned "
                        f"{describe(v)}", hint=hint)


def _run(f, args, kwargs, nums, opts, who, has_aux=False):
    """Call f on boxed arguments; return (trace, params, out, value, aux)."""
    trace = Trace(opts.check_numerics)
    boxed, params = _enter(trace, args, nums, who)
    out = f(*boxed, **kwargs)
    aux = None
    if has_aux:
        out, aux = _take_aux(out, trace, who)
    # an Input returned as is has no rule to run: its cotangent stops there, like a constant's
    ours = type(out) is Box and out.trace is trace and out.op != "Input"
    return trace, params, (out if ours else None), (out.v if ours else out), aux


def _take_aux(result, trace, who):
    """f's (value, aux) with has_aux=true: aux comes back as computed, not differentiated by this
    transformation (an outer one still sees it), as JAX's has_aux."""
    v = peek(result)
    if type(v) is not tuple or len(v) != 2:
        raise error("type", f"{who} with has_aux=true needs a function that returns a pair (value, aux), "
                            f"but it returned {describe(v)}")
    value, aux = opened(result) if type(result) is Box else result
    leaves, spec = flatten_open(aux)
    return value, unflatten(spec, [_below(x, trace) for x in leaves])


def _below(x, trace):
    """A leaf without the boxes of `trace` (and of any deeper one)."""
    while type(x) is Box and x.trace.level >= trace.level:
        x = x.v
    return x


def _has_aux(v, who):
    """The has_aux option: true or false."""
    v = tape.concrete(v)
    if type(v) is not bool:
        raise error("type", f"{who}: has_aux must be true or false, got {describe(v)}")
    return v


def _take(params):
    """Read and clear the Parameters' cotangents as values shaped like the arguments."""
    grads = [cotangent_value(p.g, p.v) for p in params]
    for p in params:
        p.g = None
    return grads


def value_and_grad(f, argnums=0, opts=None, name="value_and_grad", has_aux=False):
    """value_and_grad(f, argnums): a function returning (f(...), gradient); with has_aux, f returns
    (value, aux) and the function ((value, aux), gradient)."""
    opts = opts or Options()
    who = f"{name}({fname(f)})"
    has_aux = _has_aux(has_aux, who)

    def call(*args, **kwargs):
        nums, single = _argnums(argnums, len(args), who)
        with gc_paused():       # a tape has no cycles for the collector to look for
            trace, params, out, value, aux = _run(f, args, kwargs, nums, opts, who, has_aux)
            try:
                seed = _seed(value, who)
                if out is not None:
                    backward(trace, out, seed)
                grads = _take(params)
            finally:
                opts.finished(trace, f"the tape of {who}")
        return ((value, aux) if has_aux else value), (grads[0] if single else tuple(grads))

    return Transformed(who, call, (f,))


def vjp(f, primals, opts=None, has_aux=False):
    """vjp(f, *primals): (f(*primals), pullback); pullback(cotangent) gives one gradient per primal;
    with has_aux, f returns (value, aux) and vjp (value, pullback, aux).

    The tape stays with the pullback, which may be called any number of times."""
    opts = opts or Options()
    who = f"vjp({fname(f)})"
    has_aux = _has_aux(has_aux, who)
    trace = Trace(opts.check_numerics)
    nums = tuple(i for i, v in enumerate(primals)
                 if is_differentiable_leaf(v) or is_container(peek(v)))    # others get none back
    boxed, params = _enter(trace, primals, nums, who)
    out = f(*boxed)
    if has_aux:
        out, aux = _take_aux(out, trace, who)
    leaves, spec = flatten(out)
    ours = [type(v) is Box and v.trace is trace for v in leaves]
    value = unflatten(spec, [v.v if mine else v for v, mine in zip(leaves, ours)])
    opts.keep(trace.nodes, f"the tape of {who}")
    by_arg = dict(zip(nums, params))

    def pullback(cotangent):
        try:
            cots = flatten_like(spec, cotangent)
        except ValueError:
            raise error("type", f"the pullback of {who} needs a cotangent with the structure of the "
                                f"function's result") from None
        seeds = []
        for leaf, mine, c in zip(leaves, ours, cots):
            if c is None:
                continue
            misfit = _misfit(c, leaf)
            if misfit == "structure":
                raise error("type", f"the pullback of {who} needs a cotangent with the structure of the "
                                    f"function's result")
            if misfit is not None:
                raise error("shape", f"the pullback of {who} got a cotangent of shape "
                                     f"{O.fmt_shape(misfit[0])} for a result of shape {O.fmt_shape(misfit[1])}")
            if mine and leaf.op != "Input":
                seeds.append((leaf, float(c) if type(peek(leaf.v)) is float and type(c) is int else c))
        if seeds:
            reverse_pass.backward_from(trace, seeds)
        grads = _take(params)
        got = dict(zip(nums, grads))
        return tuple(got[i] if i in by_arg else None for i in range(len(primals)))

    back = Transformed(f"pullback of {who}", pullback, (f,))
    return (value, back, aux) if has_aux else (value, back)


def _misfit(c, primal):
    """None where cotangent `c` has the shapes of `primal`, leaf by leaf inside a structure the
    function returned whole; else "structure", or the first (shape given, shape wanted)."""
    if c is None:       # none stands for zeros, of a part of a structure too
        return None
    cv, pv = peek(c), peek(primal)
    if not is_container(pv):
        return None if np.shape(cv) == np.shape(pv) else (np.shape(cv), np.shape(pv))
    if type(cv) is not type(pv) or len(children(cv)) != len(children(pv)) or (
            type(pv) is dict and list(cv) != list(pv)):
        return "structure"
    for a, b in zip(children(cv), children(pv)):
        found = _misfit(a, b)
        if found is not None:
            return found
    return None


def grad(f, argnums=0, opts=None, name="grad", has_aux=False):
    """grad(f, argnums): a function returning the gradient of scalar f; with has_aux, f returns
    (value, aux) and the function (gradient, aux)."""
    vg = value_and_grad(f, argnums, opts, name=name, has_aux=has_aux)
    if tape.concrete(has_aux) is True:
        def call(*a, **k):
            (_, aux), g = vg.call(*a, **k)
            return g, aux
        return Transformed(vg.name, call, (f,))
    return Transformed(vg.name, lambda *a, **k: vg.call(*a, **k)[1], (f,))


def jacobian(f, argnums=0, opts=None, name="jacobian", who=None, has_aux=False):
    """jacobian(f): every derivative, by reverse mode: one forward pass, then the backward pass from
    every output's unit cotangent at once (vmap over the seeds). A result that is a tree gives a tree
    like it, each leaf holding the Jacobian of that leaf (shaped out_shape + in_shape, a tree like
    the argument for a structured one), as JAX nests them."""
    opts = opts or Options()
    who = who or f"{name}({fname(f)})"
    has_aux = _has_aux(has_aux, who)

    def call(*args, **kwargs):
        nums, single = _argnums(argnums, len(args), who)
        trace, params, out, value, aux = _run(f, args, kwargs, nums, opts, who, has_aux)
        try:
            leaves, spec, shapes = output_leaves(out if out is not None else value, who)
            for shape in (s for s in shapes if s is not None):     # refuse one over the size limit first
                for p in params:
                    for leaf in flatten(strip(p.v))[0]:       # a structured argument: one block per leaf
                        if is_differentiable_leaf(leaf):
                            O.check_size(shape + np.shape(peek(leaf)), "Jacobian")
            blocks = []
            for leaf, shape in zip(leaves, shapes):
                if shape is None:       # a leaf with no derivative (none, a string, a bool)
                    blocks.append(None)
                    continue
                mine = type(leaf) is Box and leaf.trace is trace and leaf.op != "Input"
                rows = _rows(trace, params, leaf if mine else None, shape)
                result = [_shaped(rows[j], shape, params[j].v) for j in range(len(params))]
                blocks.append(result[0] if single else tuple(result))
        finally:
            opts.finished(trace, f"the tape of {who}")
        jac = unflatten(spec, blocks)
        return (jac, aux) if has_aux else jac

    return Transformed(who, call, (f,))


def output_leaves(value, who):
    """The leaves of a result whose Jacobian is taken (its recorded containers opened), its tree,
    and each leaf's shape (output_shape: None for a leaf of a structure with no derivative)."""
    leaves, spec = flatten_open(value)
    inside = is_container(peek(value))
    return leaves, spec, [output_shape(leaf, who, inside) for leaf in leaves]


def output_shape(value, who, inside=False):
    """The shape of one leaf of a result whose Jacobian is taken: a number or a float tensor. Inside a
    struct, map or tuple (`inside`), a leaf with no derivative (none, a string, a bool, an int, an
    int or bool tensor, a function) gives None: its Jacobian is none, as grad gives none for such
    an argument (so that hessian's inner gradient may hold them); a whole result of that kind is
    an error, except an int (a number whose derivative is zero)."""
    v = peek(value)
    if inside and not is_differentiable_leaf(v):
        return None
    if type(v) not in (float, int, np.ndarray) or (type(v) is np.ndarray and v.dtype.kind != "f"):
        raise error("grad", f"{who} needs a function that returns a number, a tensor or a structure of them, "
                            f"but it returned {describe(v)}")
    return np.shape(v)


def _rows(trace, params, out, out_shape):
    """Per parameter, its cotangent leaves with a leading axis of one row per output."""
    m = int(np.prod(out_shape)) if out_shape else 1

    def row(seed):
        backward(trace, out, seed)
        return tuple(tuple(flatten(g)[0]) for g in _take(params))

    if m == 0 or out is None:       # no entries, or an output no parameter reached
        return [[None] * len(flatten(strip(p.v))[0]) for p in params]
    if not out_shape:
        return [[_with_row(leaf) for leaf in leaves] for leaves in row(1.0)]
    seeds = np.eye(m).reshape((m,) + tuple(out_shape))
    return vmap(row).call(seeds)     # .call: an internal vmap adds no frame to error reports


def _with_row(leaf):
    """A scalar output's gradient leaf with a row axis of one."""
    return None if leaf is None else O.reshape(leaf, (1,) + np.shape(peek(leaf)))


def _shaped(rows, out_shape, primal):
    """One parameter's Jacobian: rows (one per output) reshaped to out_shape + leaf_shape."""
    leaves, spec = flatten(strip(primal))
    out = []
    for leaf, r in zip(leaves, rows):
        if not is_differentiable_leaf(leaf):
            out.append(None)
        elif r is None or type(r) is tuple:     # no output reached it
            lv = peek(leaf)
            out.append(0.0 if not out_shape and type(lv) is float else
                       np.zeros(tuple(out_shape) + np.shape(lv), O.float_type(lv)))
        elif not out_shape and type(peek(leaf)) is float:
            out.append(tape.as_float(r))     # a number's derivative by a number is a number, as jacfwd's is
        else:
            out.append(O.reshape(r, tuple(out_shape) + np.shape(peek(leaf))))
    return unflatten(spec, out)


def stop_gradient(x):
    """stop_gradient(x): x, with no gradient flowing through it at any level.

    A value jit or vmap is staging goes through a StopGradient step (an identity without
    derivatives), so that a derivative later taken through the recording (grad of jit, a rolled
    loop's pullback) stops there too."""
    v = tape.strip_unstaged(x)
    if type(v) is Box:
        return tape.nondiff("StopGradient", (v,))
    if is_container(v):
        return rebuild(v, [stop_gradient(c) for c in children(v)])
    return v


def _reads_trace(tree, trace):
    """Whether a function's result, computed on unboxed arguments, still holds boxes of `trace`
    (or of a deeper one): then the function read recorded values through its closure."""
    for leaf in flatten(tree)[0]:
        while type(leaf) is Box:
            if leaf.trace.level >= trace.level:
                return True
            leaf = leaf.v
    return False


# ---------------------------------------------------------------- checkpoint
def checkpoint(f, opts=None, generator=None):
    """checkpoint(f): f, whose intermediates are recomputed during backward instead of kept.

    `generator()` gives the interpreter's random generator: its state is kept with the node so
    that the recomputation draws the same numbers as the forward pass (dropout masks)."""
    opts = opts or Options()

    def call(*args, **kwargs):
        leaves, spec = flatten(args)
        if not any(type(x) is Box for x in leaves):
            return f(*args, **kwargs)
        top = tape.top_trace(leaves)
        if top.kind is not tape.REVERSE:        # saving memory is reverse mode's concern only
            return f(*args, **kwargs)
        mark = len(top.nodes)
        state = generator().bit_generator.state if generator else None
        out = record("Checkpoint", tuple(leaves),
                     {"spec": spec, "kwargs": kwargs, "fn": f, "check": opts.check_numerics,
                      "generator": generator, "state": state})
        if _reads_trace(out.v if type(out) is Box and out.trace is top else out, top):
            # f read recorded values through its closure, which the recomputation cannot reach
            # as arguments: drop this attempt and record f as usual (correct, without the saving)
            top.rewind(mark)
            if state is not None:
                generator().bit_generator.state = state
            return f(*args, **kwargs)
        return out

    return Transformed(f"checkpoint({fname(f)})", call, (f,))




__all__ = ["Options", "Transformed", "grad", "value_and_grad", "vjp", "jacobian", "stop_gradient",
           "checkpoint", "contains_box"]
