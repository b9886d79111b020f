"""Staging: run a function once while recording every primitive it executes, for jit and vmap.

A `StageTrace` records each primitive applied to its boxes, as a reverse tape
does, but all of them, and two more kinds of step. What it records of a step is a
`Node` (the op, what it read, constants, the kind of its value), not the box the
program goes on with, so that no value outlives the program's use of it:

- a *guard*, wherever the program looked at a staged value itself rather than
  passing it to a primitive: a condition (`if x > 0`), an int taken from a
  tensor, an index, a map key. The program went one way because the value was
  what it was; the recording holds only while it still is. `tape.raw` adds the
  guard whenever it strips a staged box (`concretize`), so a value read by code
  that was never taught to stage it costs a re-trace, never a wrong answer.
  Checks that only read a type or a shape use `tape.peek`, which adds none.
- an *effect*: printing, random draws, the clock, reseeding. They happen again,
  in order, each time the recording runs (`effect`).

`stage(fn, args)` returns a `Program`: numbered slots for values, the inputs'
slots, the steps, and the output tree. `run(program, inputs)` replays it through
the primitives' kernels (which record on any outer trace: grad of jit, vmap of
grad); dsl/transform/vmap.py replays it on a batch, and dsl/jit compiles it.
"""

import contextlib
import io

import numpy as np

from ..base.cycles import gc_paused
from ..errors import DgError, error, located, write_output
from . import tape
from .row_log import LoggedRows
from .tape import Box, STAGE, Trace, peek
from .trees import children, flatten, flatten_open, hollow, is_container, unflatten


# What an int a jit trace stages as a value (or an int computed from one) may be read by as a value:
# arithmetic, comparisons (whose results guards check), math giving floats, output. Anything else
# (a loop's kernel, an index, an axis) reads it as a constant of the recording, guarded.
INT_READERS = frozenset({"Add", "Sub", "Mul", "Div", "FloorDiv", "Mod", "Pow", "Neg", "Abs", "ScalarMul",
                         "Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual",
                         "Exp", "Ln", "Log2", "Log1p", "Expm1", "Sqrt", "Sin", "Cos", "TanhAct", "Sigmoid",
                         "Maximum", "Minimum", "Where", "Nz", "NzKept", "FString", "Str", "Loop", "Scan"})


class GuardFailed(Exception):
    """A staged program met a value other than the one it was recorded with."""

    def __init__(self, step):
        super().__init__(step)
        self.step = step


class Node:
    """What a stage records of one step: its op, the nodes (or Arg boxes) it read, the constants
    it was given, its options, span and slot (`g`), and what its value was (`v`): its kind
    (kind_of), or a guard's expected value. No values of the steps themselves: the box the
    program holds carries its value, which goes when the program lets go of the box, as it
    would without the stage (a recording had kept every value until it was compiled: 661 MB
    against 404 eager for GradBench's largest gmm gradient)."""

    __slots__ = ("op", "parents", "args", "kw", "span", "g", "v")

    def __init__(self, op, parents, args, kw, span, g, v):
        self.op = op
        self.parents = parents
        self.args = args
        self.kw = kw
        self.span = span
        self.g = g
        self.v = v


class StageTrace(Trace):
    """A trace that records every primitive, every guard and every effect (see the module docstring)."""

    __slots__ = ("seen", "dry", "nslots", "derived", "slots", "ints", "scans")

    def __init__(self, dry=False, derived=False):
        super().__init__(False, STAGE)
        self.seen = set()       # slots of boxes already guarded
        self.dry = dry          # effects stay inside (vmap stages a function only to look at it)
        self.nslots = 0         # every box of the trace is numbered (in `g`) as it is made
        self.derived = derived  # a derivative will be taken through what it records (see keeps_rules)
        self.slots = []         # slot -> its Node, or its Arg box
        self.ints = False       # ints are staged values, read as such by arithmetic only (INT_READERS)
        self.scans = False      # its `for` loops roll as Scan steps at every level (the XLA backend's)

    def box(self, value, op, parents, args, kw, span):
        """A new numbered box; its step recorded in the node list (a Node) unless it is an argument."""
        g = self.nslots
        self.nslots = g + 1
        b = Box(value, self, op, (), (), None, span)
        b.g = g
        slots = self.slots
        if op == "Arg":
            slots.append(b)
            return b
        node = Node(op, tuple([None if p is None else slots[p.g] for p in parents]),
                    tuple([a if p is None else None for p, a in zip(parents, args)]), kw, span, g,
                    value if op == "Guard" else kind_of(value))
        slots.append(node)
        self.nodes.append(node)
        return b

    def process(self, op, args, unboxed, parents, kw, span):
        """Run the primitive on the values (recorded by outer traces too: jit of jit) and record it.

        An int this trace stages, read by anything but arithmetic (a loop's length, an axis), is
        a constant of the recording from here on, guarded: a call with another int stages again."""
        if self.ints and any(p is not None and type(p.v) is int for p in parents):
            if op not in INT_READERS:
                for p in parents:
                    if p is not None and type(p.v) is int:
                        self.concretize(p)
            # an int a guard has pinned is a constant of this recording: what is computed from it
            # alone (`arange(n) / (n - 1)`) is computed now, not on every call
            seen = self.seen
            parents = tuple(None if p is not None and type(p.v) is int and p.g in seen else p for p in parents)
            if all(p is None for p in parents):
                return tape.apply(op, unboxed, kw)
        return self.box(tape.apply(op, unboxed, kw), op, parents, unboxed, kw, span)

    def keeps_rules(self, leaves):
        """Whether a derivative may later be taken through what this trace records, so that a
        custom_vjp call must be recorded as itself, with its rule, and not as what its function
        does: a leaf holds a reverse- or forward-mode value under this trace's box (grad of jit), or
        the stager said so (vmap stages on an example stripped of them: grad of vmap)."""
        return self.derived or any(type(x) is Box and x.trace is self and differentiated(x.v) for x in leaves)

    def cut(self, n):
        """Forget what was recorded after the first n nodes (an attempt that did not apply), its
        guards included, so that a box it guarded is guarded again when read again."""
        for node in self.nodes[n:]:
            if node.op == "Guard":
                self.seen.discard(node.parents[0].g)
        del self.nodes[n:]

    def concretize(self, box):
        """The program read this box's value: record a guard that it stays the same."""
        if box.g in self.seen:
            return
        self.seen.add(box.g)
        self.box(peek(box.v), "Guard", (box,), (None,), None, tape.get_span())

    def effect(self, staging, fn, args, kw, inside=False):
        """Perform an effect now (through any outer stage too, unless `inside`: the effect stays in
        what this trace records) and record it, to happen on every run."""
        plain = [tape.strip_unstaged(a) for a in args]
        parents = tuple(a if type(a) is Box and a.trace is self else None for a in plain)
        unboxed = tuple(a.v if p is not None else a for a, p in zip(plain, parents))
        out = fn(*unboxed, **kw) if self.dry or inside else perform(staging, fn, unboxed, kw)
        # an effect kept inside (a loop's body) is performed by whatever runs the recording, never
        # recorded by a trace that stages that run: an empty staging list
        box = self.box(out, "Effect", parents, unboxed, {"fn": fn, "kw": kw, "staging": () if inside else staging},
                       tape.get_span())
        if is_staged_leaf(out):
            return box
        if out is None:
            return out
        return self._opened(box, out)

    def _opened(self, box, tree):
        """An effect's structured result (what `load` read): its layout guarded, each number and
        tensor in it a step of its own, so that a later run gives what the effect gives then."""
        span = tape.get_span()
        leaves, spec = flatten(tree)
        self.concretize(self.box(layout(tree), "EffectLayout", (box,), (None,), None, span))
        parts = [self.box(v, "EffectLeaf", (box, None), (None, i), None, span) if is_staged_leaf(v) else v
                 for i, v in enumerate(leaves)]
        return unflatten(spec, parts)


class Draw:
    """An effect that only pulls numbers from an interpreter's random generator (a keyless draw,
    rand, randn): a look ahead at a loop's body may perform it and then put the generator back
    (dsl/transform/jit/rolling.py), so that the rolled loop draws what the loop as written draws."""

    __slots__ = ("fn", "calls")

    def __init__(self, fn):
        self.fn = fn
        self.calls = 0      # how many draws it made (a compiled loop's driver counts its iterations' draws)

    def __call__(self, *args, **kw):
        self.calls += 1
        return self.fn(*args, **kw)


@contextlib.contextmanager
def put_back(generator):
    """Run a block that may draw from an interpreter's random generator (a staging, iterations run
    again), and put the generator back as it was before it; None: nothing to put back."""
    if generator is None:
        yield
        return
    state = generator.state
    try:
        yield
    finally:
        generator.state = state


def perform(staging, fn, args, kw=None):
    """Call an effectful builtin's implementation, recorded by the innermost trace being staged (if any).

    `staging` is the interpreter's list of traces being staged; while one records the effect it
    steps aside, so that an outer one records it as well."""
    if not staging:
        return fn(*args, **(kw or {}))
    trace = staging.pop()
    try:
        return trace.effect(staging, fn, args, kw or {})
    finally:
        staging.append(trace)


def layout(v):
    """What a guard on an effect's structured result compares: its containers (structs by name),
    the values of its parts that are not staged, and the kind, shape and dtype of those that are."""
    t = type(v)
    if t is float or t is np.float64:
        return "float"
    if t is np.ndarray:
        return ("tensor", v.shape, v.dtype.str)
    if t is tuple:
        return ("tuple", tuple(layout(c) for c in v))
    if t is dict:
        return ("map", tuple((type(k).__name__, k) for k in v), tuple(layout(c) for c in v.values()))
    if is_container(v):
        return ("struct", v.sdef.name, tuple(v.sdef.fields), tuple(layout(c) for c in children(v)))
    if v is None or t is int or t is str or t is bool:
        return (t.__name__, v)
    return ("object", id(v))        # an opaque result: a new one each time, so each run stages again


def _effect_kernel(*args, fn=None, kw=None, staging=None):
    """An effect, performed again."""
    return perform(staging, fn, args, kw)


def differentiated(v):
    """Whether a value holds a reverse- or forward-mode box, under any staging boxes."""
    while type(v) is Box:
        if v.trace.kind is not STAGE:
            return True
        v = v.v
    return False


def is_staged_leaf(v):
    """Whether a leaf is a value a stage traces (numbers, tensors, boxes), not a static one."""
    t = type(v)
    return t is float or t is np.ndarray or t is Box or t is np.float64


class Held:
    """An attempt at a call whose output waits, and whose random draws can be taken back (jit's
    calls that may fail a guard, vmap's batched replays that may give up for a run per example);
    with `traces` (those being staged around the call), what it records on them too."""

    __slots__ = ("interp", "rng", "saved", "marks")

    def __init__(self, interp, traces=()):
        self.interp = interp
        self.rng = interp.rng.bit_generator.state
        self.saved = interp._stdout
        self.marks = [(t, len(t.nodes)) for t in traces]
        interp._stdout = io.StringIO()

    def discard(self):
        """As if the attempt had not run: nothing printed, nothing drawn, nothing recorded."""
        self.interp.rng.bit_generator.state = self.rng
        self.interp._stdout = self.saved
        for trace, n in self.marks:
            trace.cut(n)

    def rewind(self):
        """Start the attempt again, still holding: the generator put back, what it printed dropped."""
        self.interp.rng.bit_generator.state = self.rng
        self.interp._stdout = io.StringIO()

    def release(self):
        """Put the interpreter's output back and write what the attempt printed."""
        interp = self.interp
        text = interp._stdout.getvalue()
        interp._stdout = self.saved
        if text:
            write_output(interp.stdout, text)


# ---------------------------------------------------------------- programs
class Program:
    """A staged function: inputs, steps and outputs over numbered slots.

    `steps` holds (kind, op, refs, consts, kw, span, slot): kind is "op", "guard"
    or "effect"; refs[i] is the slot of argument i, or -1 with consts[i] its
    constant value; span is the index of the step's source span in `spans` (-1:
    none); slot is where the step's result goes (a guard's `consts[0]` is the
    value it expects). Steps hold numbers, names and constants only, so that
    Python's cycle collector stops tracking them: a kept program of 40,000 steps
    would otherwise be scanned by every full collection.
    """

    __slots__ = ("nslots", "inputs", "steps", "out_spec", "out_refs", "out_consts", "effects", "guards", "kinds",
                 "spans")

    def __init__(self, nslots, inputs, steps, out_spec, out_refs, out_consts, kinds, spans):
        self.nslots = nslots
        self.spans = spans
        self.kinds = kinds      # per slot, what its value was when staged (see `kind_of`)
        self.inputs = inputs
        self.steps = steps
        self.out_spec = out_spec
        self.out_refs = out_refs
        self.out_consts = out_consts
        self.effects = [s for s in steps if s[0] == "effect"]
        self.guards = [s for s in steps if s[0] == "guard"]

    def span(self, where):
        """The source span a step's number for it stands for (None for -1)."""
        return self.spans[where] if where >= 0 else None


def stage(fn, args, kwargs=None, staging=None, dry=False, keep=None, derived=False, ints=False, scans=False):
    """Run fn(*args) on a new StageTrace; return (Program, the call's own result).

    `staging` is the interpreter's list of traces being staged, so that effects
    know where to record themselves; with `dry`, they are not passed to outer traces.
    `keep` is (Options, label): the recording is kept there for :tape. `derived`: a
    derivative will be taken through the recording (StageTrace.keeps_rules). With `ints`,
    the arguments' ints are staged too (jit: a step counter is a value, guarded where the
    program decides something by it). With `scans`, its `for` loops roll as Scan steps (what
    the XLA backend lowers: dsl/transform/jit/rolling.py)."""
    trace = StageTrace(dry, derived)
    trace.ints = ints
    trace.scans = scans
    leaves, spec = flatten_open((tuple(args), dict(kwargs or {})))
    inputs, boxed = [], []
    for v in leaves:
        if is_staged_leaf(v) or (ints and type(v) is int):
            b = trace.box(v, "Arg", (), (), None, tape.get_span())
            inputs.append(b)
            boxed.append(b)
        else:
            boxed.append(v)
    if staging is not None:
        staging.append(trace)
    try:
        with gc_paused():       # the recording has no cycles for the collector to look for
            staged_args, staged_kwargs = unflatten(spec, boxed)
            out = fn(*staged_args, **staged_kwargs)
            program = program_of(trace, inputs, out)
    finally:
        if staging is not None:
            staging.pop()
    out_leaves, out_spec = flatten(out)
    result = unflatten(out_spec, [v.v if type(v) is Box and v.trace is trace else v for v in out_leaves])
    if keep is not None:
        keep[0].keep(inputs + trace.nodes, keep[1])
    trace.nodes = []
    return program, result


def kind_of(v):
    """What a staged value is, for generated code: "float", "bool", "int", "str", ("array", ndim,
    dtype kind, shape, dtype), "tuple" or "other" (a program runs only with its signature's shapes).
    The dtype (numpy's `dtype.str`) tells float32 from float64, which a rewrite that drops a
    product with ones must (float32 times float64 ones is float64)."""
    v = peek(v)
    t = type(v)
    if t is float:
        return "float"
    if t is bool:
        return "bool"
    if t is int:
        return "int"
    if t is str:
        return "str"
    if t is np.ndarray or t is LoggedRows:     # a Scan's history kept as a log is a tensor
        return ("array", v.ndim, v.dtype.kind, v.shape, v.dtype.str)
    if t is tuple:
        return "tuple"
    return "other"


def is_array_kind(kind):
    """Whether a `kind_of` is a tensor's."""
    return type(kind) is tuple and kind[0] == "array"


def program_of(trace, inputs, out):
    """Write the trace's steps (only those the outputs, guards or effects need) over its numbered slots.

    A step whose kernel checks guards of its own (a rolled loop, tape.GUARDED) is a guard too: the
    path a later call takes through it must be checked even where nothing reads its result.

    `inputs` are its Arg boxes: those `stage` made, or a loop body's (dsl/transform/jit/rolling.py)."""
    out_leaves, out_spec = flatten(out)
    nodes = trace.nodes
    guarded = tape.GUARDED
    live = bytearray(trace.nslots)
    for v in out_leaves:
        if type(v) is Box and v.trace is trace:
            live[v.g] = 1
    for node in reversed(nodes):        # parents come before their nodes: one sweep finds what is needed
        op = node.op
        if live[node.g] or op == "Guard" or op == "Effect" or op in guarded:
            live[node.g] = 1
            for p in node.parents:
                if p is not None:
                    live[p.g] = 1
    kinds = [None] * trace.nslots
    for b in inputs:
        kinds[b.g] = kind_of(b.v)
    steps = []
    spans, numbered = [], {}
    for node in nodes:
        if not live[node.g]:
            continue
        refs = tuple([-1 if p is None else p.g for p in node.parents])
        span = node.span
        where = -1 if span is None else numbered.get(id(span))
        if where is None:
            where = numbered[id(span)] = len(spans)
            spans.append(span)
        if node.op == "Guard":
            steps.append(("guard", "Guard", refs, (node.v,), None, where, -1))
            continue
        kinds[node.g] = node.v
        steps.append(("effect" if node.op == "Effect" else "op", node.op, refs, node.args, node.kw, where, node.g))
    out_refs = tuple(v.g if type(v) is Box and v.trace is trace else -1 for v in out_leaves)
    out_consts = tuple(None if type(v) is Box and v.trace is trace else v for v in out_leaves)
    # the description keeps empty containers: the ones flatten saw hold the recording's boxes, whose
    # parents would keep every node of it alive for as long as the program is kept
    return Program(trace.nslots, tuple(b.g for b in inputs), steps, hollow(out_spec), out_refs, out_consts, kinds,
                   spans)


def same(value, expected):
    """Whether a value is the one a guard recorded (same type, shape and entries; nan equals nan)."""
    v = peek(value)
    if type(v) is not type(expected):
        if isinstance(v, (bool, np.bool_)) and isinstance(expected, (bool, np.bool_)):
            return bool(v) == bool(expected)
        return False
    if type(v) is np.ndarray:
        return v.shape == expected.shape and v.dtype == expected.dtype and bool(
            np.array_equal(v, expected, equal_nan=v.dtype.kind == "f"))
    if type(v) is float:
        return v == expected or (v != v and expected != expected)
    return v == expected


def run(program, values, staging=None):
    """Replay a program on input values (through the kernels, so outer traces record it).
    `staging`: a list of traces being staged, which then perform and record its effects (a loop
    iteration's pullback staged with its draws: dsl/core/primitives/loops.py)."""
    return output(program, _replay(program, values, staging))


def output_leaves(program, values):
    """`run`, giving the output's leaves (what compiled code gives)."""
    env = _replay(program, values)
    return tuple([env[r] if r >= 0 else c for r, c in zip(program.out_refs, program.out_consts)])


def _replay(program, values, staging=None):
    """The slots of a program replayed on input values (its effects performed through `staging`,
    where given)."""
    env = [None] * program.nslots
    for s, v in zip(program.inputs, values):
        env[s] = v
    apply = tape.apply
    for i, (kind, op, refs, consts, kw, span, out) in enumerate(program.steps):
        args = [env[r] if r >= 0 else c for r, c in zip(refs, consts)]
        if kind == "guard":     # raw: a stage this replay runs on (jit of jit) keeps the guard too
            if not same(tape.raw(args[0]), consts[0]):
                raise GuardFailed(i)
            continue
        saved = tape.get_span()
        tape.set_span(program.span(span))
        try:
            if kind == "effect" and staging is not None:
                env[out] = perform(staging, kw["fn"], args, kw["kw"])
                continue
            env[out] = apply(op, args, kw)
        except DgError as exc:      # a kernel's error (an index out of range) at the step's line
            exc.replayed = True
            raise located(exc, program.span(span)) from None
        finally:
            tape.set_span(saved)
    return env


def output(program, env):
    """The program's output tree from its slots."""
    return unflatten(program.out_spec, [env[r] if r >= 0 else c
                                        for r, c in zip(program.out_refs, program.out_consts)])


def explain_failure(program, failed):
    """Why a recording did not apply, in words, from the GuardFailed it raised."""
    why = getattr(failed, "why", None)
    return why if why is not None else explain_step(program, failed.step)


def explain_step(program, step):
    """Where a guard or an effect came from, in words."""
    kind, op, refs, consts, kw, span, _ = program.steps[step]
    span = program.span(span)
    where = f" at {span.where()}" if span is not None else ""
    if kind != "guard":
        return f"{op}{where}"
    expected = consts[0]
    if isinstance(expected, (bool, np.bool_)):
        return f"the condition{where} went the other way (it was {str(bool(expected)).lower()} when staged)"
    return f"a value read{where} changed (it was {_brief(expected)} when staged)"


def _brief(v):
    """A short description of a guarded value."""
    if type(v) is np.ndarray:
        return f"a tensor of shape {tuple(v.shape)}"
    return repr(v)


def batched_outputs(program, batched):
    """Which of the program's outputs depend on its batched inputs (a step's result does where
    any of its arguments does; a field of a loop step's results where its fixed point says:
    `_loop_fields`), without running it."""
    flags = [False] * program.nslots
    fields = {}     # slot of a loop step's results -> which of them depend on the batch
    for slot, b in zip(program.inputs, batched):
        flags[slot] = b
    for kind, op, refs, consts, kw, span, out in program.steps:
        if kind == "guard" or out is None or out < 0:
            continue
        if op == "StructField" and refs[0] in fields:
            flags[out] = fields[refs[0]][kw["field_index"]]
            continue
        given = [r >= 0 and flags[r] for r in refs]
        flags[out] = any(given)
        if op in ("Loop", "Scan") and flags[out] and not kw.get("history"):
            # field by field, as the loop's batching rule finds them: taken as all batched, the
            # primal leaves of a forward-mode loop nested in another came out batched under
            # jacfwd, and vmap ran the program once per example (a print in it, once each)
            fields[out] = _loop_fields(op, kw["body"], given)
    return [r >= 0 and flags[r] for r in program.out_refs]


def _loop_fields(op, body, given):
    """Which fields of a loop step's results depend on the batch, given which of its arguments
    do: a Loop's are its final carry; a Scan's (xs, carry, consts in) its final carry, its ys
    and its history of carries, as its batching rule lays them out."""
    if op == "Loop":
        return batched_carry(body.forward, given)
    carry, ys = scan_batched(body, given)
    return (*carry, *ys, *carry)


def scan_batched(body, batched):
    """Which of a Scan's final carry leaves and ys depend on the batch, given which of its
    arguments (xs, carry, consts) do: the carry's by batched_carry's fixed point. Scan's
    batching rule lays out its results by this, and batched_outputs reads them by it."""
    nx, nc, _, _ = body.counts
    bx, bk = tuple(batched[:nx]), tuple(batched[nx + nc:])
    carry = batched_carry(body.program, batched[nx:nx + nc], (False, *bx), bk)
    return carry, tuple(batched_outputs(body.program, (False, *bx, *carry, *bk))[nc:])


def batched_carry(program, carry, before=(False,), after=()):
    """Which carry leaves of a loop over `program` depend on the batch, given which starting ones
    do (`carry`) and which of the body's inputs before and after them do (the item's, unbatched,
    first): a leaf the body updates from a batched one is batched from the start, the fixed
    point JAX's rule for scan finds. The program's first outputs are the next carry."""
    flags = tuple(carry)
    while True:
        more = tuple(f or o for f, o in zip(flags, batched_outputs(program, (*before, *flags, *after))))
        if more == flags:
            return flags
        flags = more


__all__ = ["StageTrace", "Program", "GuardFailed", "stage", "run", "output_leaves", "program_of", "explain_failure", "is_array_kind", "kind_of", "same", "is_staged_leaf", "perform", "error", "Held", "differentiated", "batched_outputs", "batched_carry", "scan_batched"]
