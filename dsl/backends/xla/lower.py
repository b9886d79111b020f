"""A staged program as a function over JAX values, for XLA to compile (see code.py).

Each step runs its primitive's lowering rule (rules.py) on the JAX values of its arguments,
and its result is checked against what the step gave when the program was staged: the same
kind of value (number, bool, int, tensor) and the same shape. A guard becomes a flag that
holds where the value is the one recorded; flags are gathered into one bool the call gives
beside its results, so that the check costs one read per call, not one per guard. A Scan
becomes `lax.scan` over its body's program, lowered the same way, its flags carried.

What cannot be lowered raises `NotLowerable` with the reason in words: the program then runs
on the numpy backend, and jit's explain says why.
"""

import functools
import math

import numpy as np

from ...core import stage as S
from ...core.primitives.registry import PRIMS
from ...core.primitives.scan import iterations
from ...core.stage import is_array_kind
from ..optimize import plan, resolve
from .errors import NotLowerable
from .liveness import ALL, body_outputs, live, scan_reads
from .row_adds import RowAdds, add as add_rows, grown_carries, swaps_front
from .rules import FALLBACK, LOWER, ON_HOST
from .swapped import RULES as SWAPPED_RULES, Swapped, add as add_swapped


# XLA's compile time grows faster than the straight-line code it compiles: a written-out chain
# of 2,000 steps took 12 s, of 4,000 73 s, of 8,000 7 minutes and gigabytes (where the numpy
# backend compiles it in well under a second). A loop body is a computation of its own, so a
# rolled loop adds its body once: dg's own programs stay far below this (GradBench's largest,
# gmm's gradient, has 1,104 steps; a third derivative through a rolled loop 1,176 in its
# largest body); a longer one is a loop jit wrote out.
MAX_STEPS = 2500


def _bodies(program):
    """The programs of the loops a program runs: each Scan's body, each while loop's."""
    for kind, op, refs, consts, kw, span, out in program.steps:
        if op == "Scan":
            yield kw["body"].program
        elif op == "Loop":
            yield kw["body"].forward


def longest_computation(program):
    """The steps of the longest straight-line computation XLA compiles for a program: the
    program's own, or one loop body's (its own loops apart)."""
    return max([len(program.steps)] + [longest_computation(body) for body in _bodies(program)])


def unlowerable(program):
    """Why a program cannot be lowered, found without tracing it (an effect, a primitive with no
    rule, a while loop, a size XLA compiles too slowly), or None: the steps of Scan bodies are
    looked at too."""
    size = longest_computation(program)
    if size > MAX_STEPS:
        return (f"{size:,} steps in one computation, more than XLA compiles in reasonable time ({MAX_STEPS:,}: "
                f"its compile time grows faster than the code); a loop written out step by step makes such a program")
    return _unlowerable_steps(program)


def _unlowerable_steps(program):
    """unlowerable's look at each step (see there)."""
    for kind, op, refs, consts, kw, span, out in program.steps:
        if kind == "guard":
            continue
        if op in ON_HOST:
            if not _host_kind(program.kinds[out]):
                return f"{op} gives a {program.kinds[out]} value"
            continue
        if op not in LOWER:
            return f"{op}: {FALLBACK.get(op, 'no XLA rule is written for it')}"
        if op == "Scan":
            if kw["items"] is None and not kw["body"].counts[0]:
                return "a while loop under a derivative: its number of iterations is found by running it"
            inner = _unlowerable_steps(kw["body"].program)
            if inner is not None:
                return inner
        if op == "Loop":
            if kw["items"] is not None or kw.get("history") or kw.get("nested"):
                return f"Loop: {FALLBACK['LoopBack']}"
            if _performs_effects(kw["body"].forward):
                return WHILE_EFFECTS
            inner = _unlowerable_steps(kw["body"].forward)
            if inner is not None:
                return inner
        if program.kinds[out] in ("str", "other"):
            return f"{op} gives a {program.kinds[out]} value"
    return None


# XLA runs every step of a while loop's last iteration, the one that fails a guard and ends it;
# numpy stops that iteration at the guard, and the program runs it again as written after the
# loop. An effect after the guard would happen once too often on XLA (a draw: the generator
# one number further on), and one before it twice.
WHILE_EFFECTS = ("a while loop whose body prints, draws without a key or reads the clock: XLA would "
                 "perform the effects of its last iteration, which ends the loop partway")


def _performs_effects(program):
    """Whether a program, or a loop body in it, performs an effect in the program's order."""
    return any(step[1] == "Effect" for step in program.steps) or any(map(_performs_effects, _bodies(program)))


def loop_iterations(program):
    """How many iterations of the program's own loops a run makes (a Scan of a loop's body, not
    of a body a rule derived, as numpy's Scan counts them; those of a Scan in a body once per
    outer iteration): the steps it takes of the run's limits."""
    total = 0
    for kind, op, refs, consts, kw, span, out in program.steps:
        if op == "Loop":
            return math.inf        # a while loop's: known once it has run
        if op == "Scan" and kw["items"] is not None:
            body = kw["body"]
            total += len(kw["items"]) * ((body.exact is None) + loop_iterations(body.program))
    return total


class Lowering:
    """What a rule sees (rules.py): JAX's modules, the precision asked for, and the flags the
    program's results depend on."""

    def __init__(self, jx):
        self.jx = jx
        self.jax, self.np, self.lax = jx.jax, jx.np, jx.lax
        self.nn, self.linalg, self.special = jx.nn, jx.linalg, jx.special
        self.highest = jx.lax.Precision.HIGHEST     # no TF32 on a GPU where numpy computes in full float32
        self.flags = []     # the guards: the path the program took (a while loop's condition)
        self.checks = []    # values numpy would refuse or compute otherwise (an index out of range)
        self.zeros = []

    def guard(self, ok):
        """A guard of the program: the path it was staged on holds."""
        self.flags.append(self.np.all(ok))

    def require(self, ok):
        """A condition on values the results depend on (numpy would refuse them, or compute them
        otherwise: an index out of range, an int past int64). Unlike a guard, it never ends a
        while loop: an iteration that breaks one leaves the whole call to numpy."""
        self.checks.append(self.np.all(ok))

    def finite(self, value):
        """A value the results depend on being finite (one the plan checks: lower_steps), kept as
        value * 0.0: 0.0 where it is, NaN where not. A loop adds its body's up elementwise, and
        the call sums them once, with the flags: a sum per iteration would be an all-reduce per
        iteration of a sharded loop."""
        self.zeros.append(value * 0.0)

    def guards(self):
        """Whether every guard holds: one bool."""
        return self._all(self.flags)

    def values_hold(self):
        """Whether every condition on values holds: one bool."""
        return self._all(self.checks)

    def holds(self):
        """Whether every guard and every condition on values holds: one bool."""
        return self._all(self.flags + self.checks)

    def _all(self, flags):
        """Whether every one of `flags` holds: one bool."""
        if not flags:
            return self.np.bool_(True)
        return self.np.all(self.np.stack(flags))

    def zero(self):
        """0.0 where every value `finite` was given is finite, else NaN."""
        return functools.reduce(lambda a, b: a + self.np.sum(b), self.zeros, self.np.float64(0.0))

    def ok(self):
        """Whether every flag holds and every value checked is finite: one bool."""
        if self.zeros:
            return self.np.logical_and(self.holds(), self.np.isfinite(self.zero()))
        return self.holds()

    def host(self, fn, args, arg_kinds, kind, ordered=False):
        """fn(*args) run by Python on the host while XLA runs the program: an effect (`ordered`:
        in the program's order, each time the program runs) or a kernel numpy computes (a keyed
        draw: the same numbers as numpy's). The arguments that are the program's values (a kind,
        not None, in `arg_kinds`) arrive as the numpy backend holds them (Python numbers, numpy
        arrays), the constants as the step holds them; the result is of `kind`."""
        jax = self.jax
        if kind == "other":
            shape = None
        elif is_array_kind(kind):
            shape = jax.ShapeDtypeStruct(tuple(kind[3]), np.dtype(kind[4]))
        else:
            shape = jax.ShapeDtypeStruct((), NUMBER_TYPES[kind])
        convert = [None if k is None else from_device(k) for k in arg_kinds]
        # 64-bit values travel both ways as pairs of 32-bit words: XLA may call back on a thread
        # of its own, where JAX's 64-bit mode (dg's, per thread) is off and JAX would narrow them
        # (a random key's words rounded to float32: other numbers than numpy's)
        wide = shape is not None and np.dtype(shape.dtype).itemsize == 8
        carried = jax.ShapeDtypeStruct((*shape.shape, 2), np.uint32) if wide else shape
        values = [self.np.asarray(a) for a, k in zip(args, arg_kinds) if k is not None]
        widths = [v.dtype if v.dtype.itemsize == 8 else None for v in values]
        values = [v if w is None else self.lax.bitcast_convert_type(v, np.uint32) for v, w in zip(values, widths)]

        # with a flag: a kernel that refuses its arguments (a key that is no key) fails the call,
        # which numpy's code then runs, raising the error in dg's words (`require`)
        flag = jax.ShapeDtypeStruct((), np.bool_)
        result = flag if shape is None else (carried, flag)

        def call(*values):
            try:
                it = iter(_words_back(v, w) for v, w in zip(values, widths))
                out = fn(*[a if c is None else c(next(it)) for a, c in zip(args, convert)])
                if shape is None:
                    return np.True_
                out = np.asarray(out, shape.dtype)
                return (np.ascontiguousarray(out).view(np.uint32).reshape(carried.shape) if wide else out), np.True_
            except Exception:
                return np.False_ if shape is None else (np.zeros(carried.shape, carried.dtype), np.False_)
        if ordered:
            got = jax.experimental.io_callback(call, result, *values, ordered=True)
        else:
            got = jax.pure_callback(call, result, *values)
        self.require(got if shape is None else got[1])
        if shape is None:
            return None
        return self.lax.bitcast_convert_type(got[0], shape.dtype) if wide else got[0]

    def is_int(self, x):
        """Whether a value is an int (a staged counter, an index)."""
        return self.np.issubdtype(self.np.result_type(x), self.np.integer)

    def field(self, s, i):
        """Field i of a tuple a step gave (a Scan's outputs)."""
        if type(s) is not tuple:
            raise NotLowerable("a field of a struct the program holds whole")
        return s[i]

    # ------------------------------------------------------------ Scan
    def scan(self, args, body=None, items=(), reverse=False, reads=None, check=False, culprit=None, log=None,
             live=ALL):
        """Scan (dsl/core/primitives/scan.py) as lax.scan: (final carry..., ys stacked..., history
        stacked...), the body's flags carried and gathered into this lowering's. `live`: the
        positions among those outputs that the program's results need (liveness.py); `log` (a
        history kept as a log on plain values) is the numpy run's: XLA keeps what its pass back
        reads (residuals.py)."""
        jnp, lax = self.np, self.lax
        nx, nc, nk, ny = body.counts
        xs, carry, consts = list(args[:nx]), list(args[nx:nx + nc]), list(args[nx + nc:])
        items = iterations(items, xs)
        if items is None:
            raise NotLowerable("a while loop: its number of iterations is found by running it")
        program = body.program
        item_kind = program.kinds[program.inputs[0]]
        column = jnp.asarray(np.asarray(list(items), np.int64 if item_kind == "int" else np.float64))
        start = [jnp.asarray(c) for c in carry]
        jx = self.jx

        prepared = prepare(program, body_outputs(program, body.counts, live), in_loop=True, counts=body.counts)
        # xs the body does not read (a history of a tensor the pass back only wrote rows of) are
        # not sliced, so that nothing keeps their stacked rows (liveness.scan_reads)
        read = scan_reads(program, nx)
        fed = [x for x, r in zip(xs, read) if r]

        def step(state, row):
            c, ok, zero, acc = state
            inner = Lowering(jx)
            rows = iter(row[1:])
            given = [next(rows) if r else None for r in read]
            outs = lower_steps(inner, program, [row[0], *given, *c, *consts], prepared=prepared)
            new = [_like(jnp, o, s) for o, s in zip(outs[:nc], start)]
            zero, acc = _accumulated(inner, zero, acc)
            return (new, jnp.logical_and(ok, inner.holds()), zero, acc), (*outs[nc:], *c)

        state = (start, jnp.bool_(True), jnp.float64(0.0), _accumulators(jnp, program, prepared))
        (final, ok, zero, acc), stacked = lax.scan(step, state, (column, *fed), length=len(items), reverse=reverse)
        self.checks.append(ok)      # a path the body did not take, or a value: numpy runs the call
        if len(items):
            for j in prepared[5].values():      # a carry the body checks by the rows it gains
                self.finite(start[j])
        self.zeros += [zero, *acc]
        return (*final, *stacked)

    def while_loop(self, state, body=None, items=(), history=False, nested=False, **_):
        """A while loop's Loop step (no derivative through it) as lax.while_loop: iterations until
        one fails a guard of the body (its condition turned false, a break), whose starting state
        is the final one, as the numpy backend's loop step gives it. A loop still running after
        WHILE_CAP iterations leaves the call to numpy, where the run's limits can stop it."""
        if items is not None or history or nested:
            raise NotLowerable(f"Loop: {FALLBACK['LoopBack']}")
        jnp, lax, jx = self.np, self.lax, self.jx
        program = body.forward
        start = [jnp.asarray(s) for s in state]

        def going(c):
            return jnp.logical_and(jnp.logical_and(c[2], c[3]), c[0] < WHILE_CAP)

        prepared = prepare(program, ALL, in_loop=True)

        def step(c):
            k, st, _, clean, zero, acc = c
            inner = Lowering(jx)
            outs = lower_steps(inner, program, [k, *st], prepared=prepared)
            ok = inner.guards()     # the iteration that fails one ends the loop: its values are dropped
            # a value numpy would refuse in an iteration that counts stops the loop, and the call
            # goes to numpy (it must not pass for the loop's end)
            clean = jnp.logical_and(clean, jnp.logical_or(jnp.logical_not(ok), inner.values_hold()))
            more, more_acc = _accumulated(inner, zero, acc)
            return (k + 1, [jnp.where(ok, _like(jnp, o, s), s) for o, s in zip(outs, st)], ok, clean,
                    jnp.where(ok, more, zero), [jnp.where(ok, m, a) for m, a in zip(more_acc, acc)])

        k, final, go, clean, zero, acc = lax.while_loop(
            going, step, (jnp.int64(0), start, jnp.bool_(True), jnp.bool_(True), jnp.float64(0.0),
                          _accumulators(jnp, program, prepared)))
        self.require(jnp.logical_and(clean, jnp.logical_not(go)))
        self.zeros += [zero, *acc]
        return (*final, None)


def _words_back(value, dtype):
    """A host callback's argument as it was on the device: `value` itself, or (dtype given) the
    64-bit values its pairs of 32-bit words (Lowering.host) hold."""
    if dtype is None:
        return value
    return np.ascontiguousarray(value).view(dtype).reshape(np.shape(value)[:-1])


WHILE_CAP = 10 ** 7     # iterations of a while loop in one XLA call (see Lowering.while_loop)


def _like(jnp, value, like):
    """A new carry value in its starting value's type and shape (lax.scan asks for the same)."""
    value = jnp.asarray(value)
    if value.shape != like.shape:
        raise NotLowerable(f"a loop's variable changes shape, {like.shape} to {value.shape}")
    return value.astype(like.dtype)


def prepare(program, wanted=ALL, in_loop=False, counts=None):
    """What lower_steps lowers of a program: (the plan, the output slots, the live slots, the live
    fields of its loops, the values it checks, {checked slot: carry position} of a Scan body's
    carries that grow by rows only, where `counts` are its body's: row_adds.grown_carries).

    The plan is the numpy backend's (dsl/backends/optimize.py): repeated steps merged, and
    reference 6.7's zero rules (Nz) left out where a NaN they would have zeroed can only reach
    values the plan checks; the checks are flags too, so a call on which one fails runs on the
    numpy backend, which computes it exactly. The rules' masks had cost a pass back twice the
    elementwise operations of its arithmetic. Only values the results need are checked
    (liveness.py), `wanted` the positions among the outputs they read. A loop's body (`in_loop`)
    that would check a number keeps its masks: XLA runs a scalar loop whose body is a few fused
    operations without dispatching each iteration, and a check per iteration made grad(grad) of
    a 100-step scalar loop 4x slower than its masks do."""
    kinds = program.kinds
    planned = plan(program)
    if in_loop and any(kinds[r] == "float" for r in planned.checked):
        planned = plan(program, exact=True)     # see the docstring
    outs = [resolve(planned.alias, r) if r >= 0 else r for r in program.out_refs]
    slots, fields = live(planned.steps, outs, wanted)
    checks = [r for r in planned.checked if r in slots]
    grown = grown_carries(planned.steps, outs, program.inputs, counts, kinds, set(checks)) if counts else {}
    return planned, outs, slots, fields, checks, grown


def _accumulators(jnp, program, prepared):
    """Zeros shaped as the values a loop's body checks (prepare), which the loop adds them to."""
    return [jnp.zeros(tuple(program.kinds[r][3]) if is_array_kind(program.kinds[r]) and r not in prepared[5] else (),
                      np.float64) for r in prepared[4]]


def _accumulated(inner, zero, acc):
    """A loop's (number, accumulators) after an iteration whose lowering is `inner`: its own
    checks (the last `finite` values it gave, one per accumulator) added elementwise, those of
    loops inside it (already added up) summed into the number."""
    n = len(acc)
    own, nested = inner.zeros[len(inner.zeros) - n:], inner.zeros[:len(inner.zeros) - n]
    for z in nested:
        zero = zero + inner.np.sum(z)
    return zero, [a + z for a, z in zip(acc, own)]


def lower_steps(L, program, values, prepared=None):
    """The program's output leaves as JAX values, computed from `values` (its inputs'), the
    guards' flags and the finite checks added to L: the steps of `prepared` (prepare; a whole
    program's where None)."""
    jnp = L.np
    kinds = program.kinds
    planned, outs, slots, fields, checks, grown = prepared or prepare(program)
    gained = {}     # the rows a carry of `grown` gained: its check reads those
    env = [None] * program.nslots
    for s, v in zip(program.inputs, values):
        number = NUMBER_TYPES.get(kinds[s])
        env[s] = v if number is None or v is None else L.jx.weak(jnp.asarray(v), number)     # as numpy takes them
    for kind, op, refs, consts, kw, span, out in planned.steps:
        args = [env[r] if r >= 0 else _constant(jnp, c) for r, c in zip(refs, consts)]
        if op == "TransposeOp" and swaps_front(kw.get("axes")):
            a = args[0]      # kept as it was (swapped.py)
            env[out] = a.x if type(a) is Swapped else Swapped(a)
            continue
        if args and type(args[0]) is Swapped and op in SWAPPED_RULES and type(args[0].x) is not RowAdds \
                and not any(type(a) in (Swapped, RowAdds) for a in args[1:]):
            env[out] = SWAPPED_RULES[op](L, *args, **(kw or {}))
            continue
        if op == "Add" and any(type(a) is Swapped for a in args):
            summed = add_swapped(jnp, *args, kinds[out])
            if summed is not None:
                gained[out] = next(a for a in args if type(a) is Swapped)
                env[out] = summed
                continue
        if any(type(a) is Swapped for a in args):
            args = [a.made(jnp) if type(a) is Swapped else a for a in args]
        if op == "RowAdd" and is_array_kind(kinds[out]):     # made where it is read (row_adds.py)
            env[out] = RowAdds(kinds[out][3], kinds[out][4], ((args[1], args[0]),))
            continue
        if any(type(a) is RowAdds for a in args):
            summed = add_rows(jnp, *args, kinds[out]) if op == "Add" else None
            if summed is not None:
                if type(summed) is not RowAdds:
                    gained[out] = next(a for a in args if type(a) is RowAdds)
                env[out] = summed
                continue
            args = [_made(jnp, a) for a in args]
        if kind == "guard":
            L.guard(_same(jnp, args[0], consts[0]))
            continue
        if op in ON_HOST:     # an effect in the program's order, or numpy's kernel of a keyed draw
            kernel = functools.partial(S._effect_kernel if op == "Effect" else PRIMS[op].plain or PRIMS[op].impl,
                                       **(kw or {}))
            raw = [_made(jnp, env[r]) if r >= 0 else c for r, c in zip(refs, consts)]
            env[out] = L.host(kernel, raw, [kinds[r] if r >= 0 else None for r in refs], kinds[out],
                              ordered=op == "Effect")
            continue
        rule = LOWER.get(op)
        if rule is None:
            raise NotLowerable(f"{op}: {FALLBACK.get(op, 'no XLA rule is written for it')}")
        if op == "Scan":
            kw = {**kw, "live": fields.get(out, ALL if out in slots else set())}
        try:
            value = rule(L, *args, **(kw or {}))
        except NotLowerable:
            raise
        except Exception as exc:        # a rule that does not fit this step: the numpy backend runs it
            raise NotLowerable(f"{op}: {type(exc).__name__}: {exc}") from None
        env[out] = as_kind(L, value, kinds[out], op)
    for r in checks:       # live ones only: nothing the results need reads the others
        if r in grown:      # its rows (the loop checks its first value): a number, as its accumulator
            rows = gained.get(r)
            v = _made(jnp, env[r])
            if rows is not None:
                v = jnp.stack(rows.rows(v) if type(rows) is Swapped else [v[i] for i, _ in rows.rows])
            L.finite(jnp.sum(v * 0.0))
        else:
            L.finite(_made(jnp, env[r]))
    return [_constant(jnp, c) if r < 0 else _constant(jnp, planned.known[r]) if r in planned.known
            else _made(jnp, env[r]) for r, c in zip(outs, program.out_consts)]


def _made(jnp, v):
    """v as a JAX value: one kept unmade (RowAdds, Swapped) made, anything else as it is."""
    return v.made(jnp) if type(v) is RowAdds or type(v) is Swapped else v


def _host_kind(kind):
    """Whether a value of this kind can come back from Python on the host (a callback's result):
    a number, a tensor, or nothing ("other": an effect's None)."""
    return kind in ("float", "int", "bool", "other") or is_array_kind(kind)


def _constant(jnp, c):
    """A constant of a step as a rule takes it: numbers stay Python numbers (weakly typed, as
    numpy takes them), tensors become JAX's."""
    return jnp.asarray(c) if type(c) is np.ndarray else c


NUMBER_TYPES = {"float": np.float64, "int": np.int64, "bool": np.bool_}


def from_device(kind):
    """How a value of this kind reaches Python from XLA: as the numpy backend holds it (a Python
    number; a tensor as a numpy array of its own, which dg may write into: numpy's view of a JAX
    array is read-only)."""
    if kind in NUMBER_TYPES:
        return {"float": float, "int": int, "bool": bool}[kind]
    if is_array_kind(kind):
        return np.array
    return lambda v: v


def as_kind(L, value, kind, op):
    """A rule's result as the step's kind (stage.kind_of): a number as a weakly typed 0-d value of
    its type (numpy's Python numbers take a tensor's type: a float32 tensor over a float stays
    float32), a tensor of the staged shape and dtype; anything else is NotLowerable."""
    jnp = L.np
    if kind == "tuple":
        if type(value) is not tuple:
            raise NotLowerable(f"{op} gives a tuple on the numpy backend")
        return value
    value = jnp.asarray(value)
    number = NUMBER_TYPES.get(kind)
    if number is not None:
        if value.ndim:
            raise NotLowerable(f"{op} gives a {kind} on the numpy backend, a tensor of shape {value.shape} here")
        return L.jx.weak(value, number)
    if not is_array_kind(kind):
        raise NotLowerable(f"{op} gives a {kind} value")
    if tuple(value.shape) != tuple(kind[3]):
        raise NotLowerable(f"{op} gives shape {tuple(kind[3])} on the numpy backend, {tuple(value.shape)} here")
    have = value.dtype.kind
    if have != kind[2] and not (kind[2] == "f" or kind[2] == "i" and have == "b"):
        raise NotLowerable(f"{op} gives a tensor of type kind {kind[2]!r} on the numpy backend, {have!r} here")
    return value if value.dtype == kind[4] else value.astype(kind[4])


def _same(jnp, value, expected):
    """The flag of a guard: whether the value is the one recorded (NaN equal to NaN)."""
    if type(expected) is np.ndarray:
        if tuple(jnp.shape(value)) != expected.shape:
            return jnp.bool_(False)
        expected = jnp.asarray(expected)
    elif type(expected) not in (bool, int, float, np.bool_, np.float64, np.int64):
        raise NotLowerable(f"a guard on a {type(expected).__name__}")
    same = jnp.equal(value, expected)
    if jnp.issubdtype(jnp.result_type(value), jnp.floating):
        same = jnp.logical_or(same, jnp.logical_and(jnp.isnan(value), jnp.isnan(expected)))
    return jnp.all(same)
