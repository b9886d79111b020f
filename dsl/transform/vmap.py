"""vmap: a function of one example, run on a whole batch at once (reference section 6).

`vmap(f, in_axes, out_axes)(*args)` stages f on the first example (the batch axis
of each mapped argument moved to the front and its first entry taken), which gives
a program of primitives with the guards that decided its control flow
(dsl/core/stage.py). The program is then replayed on the whole batch, each
primitive by its batching rule (dsl/primitives): one numpy call per primitive,
no Python loop over the examples. Where that cannot be right, f runs once per
example and the results are stacked: when a guard does not hold for every
example (a batched value decided control flow), when f has an effect (print,
random numbers), or when a primitive has no batching rule. `vmap(f, explain=true)`
prints why it did.
"""

import numpy as np

from ..backends.codegen import compile_program, run_code
from ..core import ops as O, stage as S, tape
from ..core.ops.core import norm
from ..core.primitives.batching import PerExample, Unbatchable, Unbatched, spread
from ..core.primitives.loops import LoopGuardFailed
from ..core.primitives.scan import outputs_read
from ..core.primitives.namespaces import TRACED
from ..core.printing import show
from ..core.tape import Box, peek
from ..core.trees import children, flatten, flatten_open, is_container, opened, rebuild, unflatten
from ..core.values import Struct, values_equal
from ..errors import error
from .jit.jit import cells_hold, reads
from .jit.loop_modes import retry
from .jit.signatures import signature
from .transformed import Transformed, describe, fname
import sys



def vmap(f, in_axes=0, out_axes=0, explain=False, interp=None, cache=None, shared_effects=False):
    """vmap(f, in_axes=0, out_axes=0): f mapped over an axis of its arguments.

    With `cache` (a dict: the builtin's vmap and jacfwd give one) the staged program is kept per
    signature and replayed while what f reads holds, compiled from its second call; with
    `shared_effects` (jacfwd, which maps a function over the directions of its derivative) an
    effect that no batched value reaches (a print of the primal) happens once, as it would in
    one run of the function."""
    who = f"vmap({fname(f)})"

    def call(*args):
        axes = _in_axes(in_axes, args, who)
        leaves, spec, leaf_axes = _leaves_and_axes(args, axes, who)
        size = _batch_size(leaves, leaf_axes, who)
        moved = [_to_front(v, a) if a is not None else v for v, a in zip(leaves, leaf_axes)]
        batched = [a is not None for a in leaf_axes]
        if size == 0:
            return _out_axes(_no_examples(f, spec, moved, batched, interp, who), out_axes, size, who)
        try:
            if cache is None:
                program = _stage_first(f, spec, moved, batched, interp, shared_effects)
                out = _held(interp, program, lambda: _replay(program, moved, batched, size))
            else:
                out = _replay_kept(f, spec, moved, batched, size, interp, cache,
                                   (args, tuple(leaf_axes), shared_effects))
        except Unbatchable as why:
            if cache is not None:
                cache.clear()
            if explain:
                _say(interp, f"{who} runs once per example: {why}")
            out = _per_example(f, spec, moved, batched, size)
        return _out_axes(out, out_axes, size, who)

    return Transformed(who, call, (f,))


def _no_examples(f, spec, leaves, batched, interp, who):
    """The result over a batch of 0, as JAX gives it: f staged (without its effects) on an example
    of zeros, for the shapes and dtypes of its results, each with a batch axis of length 0."""
    example = [np.zeros(peek(v).shape[1:], peek(v).dtype) if b else peek(v) for v, b in zip(leaves, batched)]
    held = S.Held(interp) if interp is not None else None
    try:
        _, out = S.stage(f, unflatten(spec, example), staging=interp.staging if interp is not None else None,
                         dry=True)
    finally:
        if held is not None:
            held.discard()      # no example: nothing printed, no random numbers drawn
    leaves_out, out_spec = flatten(out)
    empty = []
    for v in leaves_out:
        v = peek(v)
        if not (type(v) is np.ndarray or type(v) in (float, int, bool) or isinstance(v, np.generic)):
            raise error("type", f"{who} over a batch of 0 examples: the function returns {describe(v)}, "
                                f"which has no empty batch")
        v = np.asarray(v)
        empty.append(np.zeros((0,) + v.shape, v.dtype))
    return unflatten(out_spec, empty)


def _held(interp, program, replay):
    """replay(), whose output and random draws are dropped if it gives up part way (a guard, an
    effect that differs per example): f then runs once per example as if it had not started."""
    if interp is None or not program.effects:
        return replay()
    held = S.Held(interp)
    try:
        out = replay()
    except Unbatchable:
        held.discard()
        raise
    except BaseException:
        held.release()
        raise
    held.release()
    return out


def _replay_kept(f, spec, leaves, batched, size, interp, cache, how):
    """The batched result by the cache's program (jacfwd's). A program kept from an earlier call
    whose control flow goes another way on this one (a guard of an unbatched value: other
    arguments) is staged again for this call before it is given up for one run per example, so
    that a call's effects do not depend on which calls came before it."""
    kept = _kept_for(f, spec, leaves, batched, interp, cache, *how)
    try:
        return _held(interp, kept.program, lambda: kept.replay(leaves, batched, size))
    except Unbatchable:
        if kept.calls <= 1:     # staged for this call: the batch itself decides (see `call`)
            raise
    cache.clear()
    kept = _kept_for(f, spec, leaves, batched, interp, cache, *how)
    return _held(interp, kept.program, lambda: kept.replay(leaves, batched, size))


def _kept_for(f, spec, leaves, batched, interp, cache, args, axes, shared_effects):
    """The cache's program for this call (staged on the first example if none applies): one per
    signature, axes, whether a derivative is taken through the call (which records custom_vjp
    as itself: _stage_dry) and whether jit is staging it (which rolls loops vmap alone writes
    out: dsl/transform/jit/rolling.py)."""
    jitting = interp is not None and any(type(t) is S.StageTrace and not t.dry for t in interp.staging)
    # an int is a constant of the kept program: its value is part of the key, and where jit stages
    # it (as a value of its own recording) a guard ties that recording to it
    ints = [tape.raw(v) for v in flatten_open(args)[0] if type(v) is Box and type(peek(v)) is int]
    key = (signature(args, {}), tuple(ints), axes, any(S.differentiated(v) for v in leaves), jitting)
    kept = cache.get(key)
    # what f reads still holds what it held when f was staged (numbers: an equal one, as for jit)
    if kept is not None and cells_hold(kept.cells):
        return kept
    kept = cache[key] = _Kept(_stage_first(f, spec, leaves, batched, interp, shared_effects), reads(f))
    return kept


class _Kept:
    """A program kept between calls (vmap's and jacfwd's), and once it is called again, its batched replay
    compiled: the batching rules run once, on a stage, and the numpy calls they made become
    straight-line code (dsl/backends/codegen.py), as jit(vmap(f)) would; the first call pays no compile."""

    __slots__ = ("program", "cells", "calls", "staged", "code")

    def __init__(self, program, cells):
        self.program = program
        self.cells = cells
        self.calls = 0
        self.staged = self.code = None

    def replay(self, leaves, batched, size):
        """The batched result: by the compiled code where it applies, else by the batching rules."""
        self.calls += 1
        if self.code is not False and not self.program.effects and not any(type(v) is Box for v in leaves):
            if self.code is None and self.calls >= 2:
                self._compile(leaves, batched, size)
            if self.code:
                values = [v for v in leaves if S.is_staged_leaf(v)]     # as _compile staged them
                try:
                    return unflatten(self.staged.out_spec, list(run_code(self.staged, self.code, values)))
                except S.GuardFailed:
                    self.code = False       # a path other than the staged one: the rules from now on
        return _replay(self.program, leaves, batched, size)

    def _compile(self, leaves, batched, size):
        """Stage the batched replay and compile it; False where its program cannot be compiled."""
        try:
            staged, _ = S.stage(lambda *ls: _replay(self.program, ls, batched, size), leaves, dry=True)
        except Unbatchable:
            self.code = False
            return
        if any(type(c) is Box or type(c) is PerExample for step in staged.steps for c in step[3]) \
                or any(type(c) is PerExample for c in staged.out_consts):
            self.code = False       # it holds a value another transformation traces, or a non-number
            return
        self.staged, self.code = staged, compile_program(staged, "vmapped")


def _first(v):
    """The first example of a batched leaf."""
    if v.ndim == 1 and v.dtype.kind in "iu":
        return v[0:1].reshape(())
    return norm(v[0])


def _stage_first(f, spec, leaves, batched, interp, shared_effects):
    """f staged on the first example; effects make it run per example instead (unless shared)."""
    # an example of a batch of numbers is a Python float, as indexing gives it (not numpy's scalar)
    # an int shared by every example is a constant of the staged program: guarded where jit stages it
    # (an example of a batch of ints stays a 0-d int tensor: a Python int would be that constant)
    example = [_first(peek(v)) if b else tape.raw(v) if type(peek(v)) is int else peek(v)
               for v, b in zip(leaves, batched)]
    program = _stage_dry(f, unflatten(spec, example), interp, any(S.differentiated(v) for v in leaves))
    if program.effects and not shared_effects:
        raise Unbatchable(f"it has an effect ({S.explain_step(program, program.steps.index(program.effects[0]))})")
    return program


# ---------------------------------------------------------------- arguments
def _in_axes(in_axes, args, who):
    """in_axes as one entry per argument: an int or none, or (as JAX allows) a tree of them
    shaped like a prefix of the argument's structure."""
    axes = tape.concrete(_concrete_tree(in_axes))
    if axes is None or type(axes) is int:
        return (axes,) * len(args)
    if type(axes) is tuple and len(axes) == len(args):
        return axes
    if type(axes) is tuple:
        raise error("type", f"{who}: in_axes has {len(axes)} entries but the function was called with "
                            f"{len(args)} argument{'s' * (len(args) != 1)}")
    raise error("type", f"{who}: in_axes must be an int, none, or a tuple of them (one per argument), "
                        f"got {describe(axes)}")


def _concrete_tree(tree):
    """An axes option with every int guarded and unboxed, inside maps and structs too."""
    tree = tape.raw(tree)
    if is_container(tree):
        return rebuild(tree, [_concrete_tree(c) for c in children(tree)])
    return tree


def _spread_axes(axes, tree, who, what):
    """One axis (an int or None) per leaf of `tree`, from an int, none, or a tree of them shaped
    like a prefix of `tree` (a map's keys, a struct's type, a tuple's length the same)."""
    if axes is None or type(axes) is int:
        return [axes] * len(flatten_open(tree)[0])
    if type(tree) is Box:
        tree = opened(tree)     # a structure being differentiated: its own leaves
    v = peek(tree)
    a = peek(axes)
    same = is_container(a) and type(v) is type(a) and len(children(v)) == len(children(a)) and (
        type(a) is not dict or set(a) == set(v)) and (type(a) is not Struct or a.sdef is v.sdef)
    if not same:
        raise error("type", f"{who}: {what} is {show(axes, nested=True)}, which does not match the structure "
                            f"of the value it maps ({describe(v)}{_keys(v)})",
                    hint="give an int or none for a whole argument, or a tuple, map or struct shaped like it")
    if type(a) is dict:     # keys are matched by name, in whatever order the axes give them
        a = {k: a[k] for k in v}
    out = []
    for sub_axes, sub in zip(children(a), children(tree)):
        out += _spread_axes(sub_axes, sub, who, what)
    return out


def _keys(v):
    """A map's keys or a tuple's length, to say how a structure differs from the axes given for it."""
    if type(v) is dict:
        return f" with keys {', '.join(repr(k) if type(k) is not str else chr(34) + k + chr(34) for k in v)}"
    if type(v) is tuple:
        return f" of {len(v)}"
    return ""


def _leaves_and_axes(args, axes, who):
    """The leaves of the arguments and the axis each is mapped over (None: not mapped)."""
    leaves, leaf_axes = [], []
    opened = []
    for i, (arg, arg_axes) in enumerate(zip(args, axes)):
        ls, arg_spec = flatten_open(arg)
        opened.append(unflatten(arg_spec, ls))
        per_leaf = _spread_axes(arg_axes, arg, who, f"in_axes for argument {i} (counting from 0)")
        for leaf, axis in zip(ls, per_leaf):
            if axis is not None:
                v = peek(leaf)
                if type(v) is not np.ndarray or v.ndim == 0:
                    raise error("type", f"{who}: in_axes maps argument {i} (counting from 0) over axis {axis}, but it holds "
                                        f"{describe(v)}",
                                hint="give none for arguments (or parts of them) shared by every example")
                if not -v.ndim <= axis < v.ndim:
                    raise error("shape", f"{who}: axis {axis} is out of range for argument {i} (counting from 0), a tensor of "
                                         f"shape {O.fmt_shape(v.shape)}")
                leaf_axes.append(axis % v.ndim)
            else:
                leaf_axes.append(None)
            leaves.append(leaf)
    _, spec = flatten(tuple(opened))
    return leaves, spec, leaf_axes


def _batch_size(leaves, axes, who):
    """The common length of the mapped axes."""
    sizes = {peek(v).shape[a] for v, a in zip(leaves, axes) if a is not None}
    if not sizes:
        raise error("type", f"{who} needs at least one argument mapped over an axis (in_axes is none for all)")
    if len(sizes) > 1:
        raise error("shape", f"{who}: the mapped axes have different sizes {sorted(sizes)}")
    return sizes.pop()


def _to_front(v, axis):
    """A tensor with axis `axis` moved to the front."""
    if axis == 0:
        return v
    nd = peek(v).ndim
    return O.transpose(v, (axis,) + tuple(i for i in range(nd) if i != axis))


# ---------------------------------------------------------------- the batched replay
def _replay(program, leaves, batched, size):
    """The program run on the whole batch, each primitive by its batching rule."""
    values, out_batched = replay_leaves(program, leaves, batched, own=True)
    return unflatten(program.out_spec, [_with_batch(v, b, size) for v, b in zip(values, out_batched)])


# what a user wrote for a step that makes a value vmap cannot stack (a string per example)
WRITTEN = {"Str": "str(...)", "FString": "an f-string"}


def _no_rule(program, step):
    """Why step `step` of the program runs once per example, in the words of what made it."""
    op, kw = program.steps[step][1], program.steps[step][4] or {}
    span = kw.get("span") or program.span(program.steps[step][5])     # an f-string keeps its own
    where = f" at {span.where()}" if span is not None else ""
    if op in WRITTEN:
        return f"{WRITTEN[op]}{where} makes a string of a batched value, one per example"
    return f"the operation {op}{where} has no batching rule"


def replay_leaves(program, leaves, batched, own=False, staging=None):
    """The program's output leaves on the whole batch and whether each is batched (an unbatched
    one is the same for every example and has no batch axis). `leaves` are the program's inputs
    and, with `own` (a program vmap staged on an example of a call's arguments), the arguments'
    other leaves too: ints among them, which that program holds as constants (guarded where jit
    stages them), are not inputs. `staging`: traces being staged, which then perform and record
    its effects (as S.run's: a loop body's batch staged with its draws)."""
    env = [None] * program.nslots
    flags = [False] * program.nslots
    if own:
        inputs = [(v, b) for v, b in zip(leaves, batched) if S.is_staged_leaf(peek(v))]
    else:
        inputs = [(v, b) for v, b in zip(leaves, batched) if S.is_staged_leaf(peek(v)) or type(v) is Box]
    for slot, (v, b) in zip(program.inputs, inputs):
        env[slot], flags[slot] = v, b
    for i, (kind, op, refs, consts, kw, span, out) in enumerate(program.steps):
        args = [env[r] if r >= 0 else c for r, c in zip(refs, consts)]
        arg_batched = [r >= 0 and flags[r] for r in refs]
        if kind == "guard":
            # raw: a stage this replay runs on (jit of vmap, jacfwd's compiled replay) keeps the guard too
            if not _holds(tape.raw(args[0]), consts[0], arg_batched[0]):
                raise Unbatchable(f"a batched value decided control flow: {S.explain_step(program, i)}")
            continue
        if kind == "effect" and any(arg_batched):       # shared effects only: this one differs per example
            raise Unbatchable(f"an effect depends on the batch ({S.explain_step(program, i)})")
        if kind == "effect" and staging is not None:
            env[out] = S.perform(staging, kw["fn"], args, kw["kw"])
            continue
        saved = tape.get_span()
        tape.set_span(program.span(span))
        try:
            if not any(arg_batched):
                env[out] = tape.apply(op, args, kw)
            else:
                rule = tape.BATCHES.get(op)
                if rule is None:
                    raise Unbatchable(_no_rule(program, i))
                result = rule(TRACED, args, arg_batched, kw or {})
                if type(result) is Unbatched:
                    env[out] = result.v
                else:
                    env[out], flags[out] = result, True
        except S.GuardFailed:
            # a staged loop's body went another way than when this program was staged (jacfwd's
            # kept program, called again): this call runs per example, and stages again after
            raise Unbatchable(f"a loop went another way than when it was staged ({S.explain_step(program, i)})") \
                from None
        finally:
            tape.set_span(saved)
    values = [env[r] if r >= 0 else c for r, c in zip(program.out_refs, program.out_consts)]
    return values, [r >= 0 and flags[r] for r in program.out_refs]


def _stage_dry(f, example_args, interp, derived=False):
    """Stage f on one example without letting its effects out: output and random draws are undone.
    `derived`: the arguments hold values being differentiated, which the example is stripped of.
    A loop staged as one step whose body went another way on a later iteration is written out,
    and f staged again (as jit does: dsl/transform/jit/jit.py)."""
    while True:
        held = S.Held(interp) if interp is not None else None
        try:
            program, _ = S.stage(f, example_args, staging=interp.staging if interp is not None else None,
                                 dry=True, derived=derived,
                                 keep=(interp.grad_options, f"the recording vmap staged of {fname(f)} on one "
                                                            f"example") if interp is not None else None)
        except LoopGuardFailed as failed:
            if interp is None or retry(failed, interp) is None:
                raise
            continue
        finally:
            if held is not None:
                held.discard()
        outputs_read(program)       # a batched loop keeps only the outputs the program reads
        return program


def _holds(value, expected, is_batched):
    """Whether a guard holds: for a batched value, in every example."""
    if not is_batched:
        return S.same(value, expected)
    v = peek(value)
    if type(v) is not np.ndarray:
        return False
    e = np.asarray(expected)
    if v.shape[1:] != e.shape:
        return False
    return bool(np.all(v == e) or (v.dtype.kind == "f" and np.all((v == e) | (np.isnan(v) & np.isnan(e)))))


def _with_batch(v, is_batched, size):
    """An output leaf with the batch axis in front (an unbatched one repeated for every example)."""
    return v if is_batched else spread(v, size)


# ---------------------------------------------------------------- once per example
def _per_example(f, spec, leaves, batched, size):
    """f run on each example in turn, the results stacked leaf by leaf."""
    results = []
    for i in range(size):
        example = [O.index(v, (i,)) if b else v for v, b in zip(leaves, batched)]
        results.append(f(*unflatten(spec, example)))
    leaf_lists = [flatten(r) for r in results]
    out_spec = leaf_lists[0][1]
    stacked = []
    for k in range(len(leaf_lists[0][0])):
        column = [ls[k] for ls, _ in leaf_lists]
        pv = peek(column[0])
        if type(pv) is np.ndarray or type(pv) in (float, int, bool) or isinstance(pv, np.generic):
            _check_one_shape(column)
            stacked.append(O.stack(tuple(column)))
        else:
            stacked.append(PerExample(tuple(column)))
    return unflatten(out_spec, stacked)


def _check_one_shape(column):
    """The examples' results for one output must share a shape for vmap to stack them: else an
    error that says which examples differ and why that usually happens."""
    shapes = [np.shape(peek(v)) for v in column]
    for i, s in enumerate(shapes):
        if s != shapes[0]:
            raise error("shape", f"vmap's function gave a result of shape {show(shapes[0])} for example 0 and "
                                 f"{show(s)} for example {i}: vmap stacks one result per example, so they need one "
                                 f"shape", hint="a shape that depends on the data (x[mask], arange(n)) differs from "
                                                "example to example; where(mask, x, 0.0) keeps a mask's shape")


# ---------------------------------------------------------------- results
def _out_axes(out, out_axes, size, who):
    """Move each output leaf's batch axis from the front to out_axes: an int or none for every
    leaf, a tree of them shaped like a prefix of the result (as JAX's), or a tuple with one entry
    per leaf of the result."""
    axes = _concrete_tree(out_axes)
    leaves, spec = flatten(out)
    flat = type(axes) is tuple and all(a is None or type(a) is int for a in axes)
    if flat and len(axes) == len(leaves):
        pass            # one per leaf (where the result is a tuple of leaves, the same as a prefix)
    elif flat and type(peek(out)) is not tuple:
        raise error("type", f"{who}: out_axes has {len(axes)} entries but the result has {len(leaves)} parts")
    elif is_container(axes):
        axes = _spread_axes(axes, out, who, "out_axes")
    else:
        axes = (axes,) * len(leaves)
    moved = []
    for v, a in zip(leaves, axes):
        if type(v) is PerExample:
            # none in every example is none (JAX's: an empty tree), so that per-example gradients
            # of parameters holding a name keep the parameters' tree; a string or a bool: a tuple
            # of every example's, or with none for its axis, the one value every example gave
            # (JAX's out_axes=None: the result does not vary over the batch)
            if all(x is None for x in v.v):
                moved.append(None)
                continue
            if a is None and not all(values_equal(x, v.v[0]) for x in v.v):
                raise _varies(who, f" ({', '.join(show(x, nested=True) for x in v.v[:3])}"
                                   f"{', ...' if len(v.v) > 3 else ''})")
            moved.append(v.v[0] if a is None and v.v else v.v)
            continue
        if a is None:
            pv = v if type(v) is np.ndarray else None     # (a value being recorded is not looked at)
            if pv is not None and pv.shape[0] > 1 and not np.array_equal(pv, np.broadcast_to(pv[:1], pv.shape),
                                                                          equal_nan=pv.dtype.kind == "f"):
                raise _varies(who)
            moved.append(O.index(v, (0,)))
            continue
        if type(a) is not int:
            raise error("type", f"{who}: out_axes must be an int, none, or a tuple of them, got {describe(a)}")
        nd = peek(v).ndim
        if not -nd <= a < nd:
            raise error("shape", f"{who}: out_axes={a} is out of range for a result with {nd} "
                                 f"ax{'is' if nd == 1 else 'es'}")
        a %= nd
        moved.append(v if a == 0 else O.transpose(v, tuple(range(1, a + 1)) + (0,) + tuple(range(a + 1, nd))))
    return unflatten(spec, moved)


def _varies(who, which=""):
    """The error for out_axes=none on a part of the result that differs between examples."""
    return error("value", f"{who}: out_axes=none says a part of the result does not vary over the batch, "
                          f"but it differs between examples{which}")


def _say(interp, text):
    """Tell the user (explain=true) on standard error."""
    print(text, file=sys.stderr)


__all__ = ["vmap", "replay_leaves"]
