"""jit(f): f compiled per argument signature into straight-line code (reference section 6).

The first call with a signature (the arguments' structure, tensor shapes and dtypes,
and the values of everything that is not a float or tensor) stages f
(dsl/core/stage.py): it runs f once, for real, while recording every primitive,
every guard (a value the program looked at: a condition, an int taken from a
tensor) and every effect (print, random draws, the clock). The recording is
compiled into a Python function over numpy arrays and floats (codegen.py). Later
calls with that signature run the compiled code, which checks the guards as it
goes: where one fails, the call is staged again for the new path (a few paths
are kept per signature, the one last taken tried first; past `MAX_PATHS` the
function runs in the interpreter, and after `MISSES` such calls in a row the
next `SKIPPED` go there without trying the recordings).

What the compiled code must not miss:
- Module-level names and captured variables f reads (directly or through the
  functions it calls) are checked on each call: the same objects (numbers: the
  same values) as when f was staged, else it is staged again.
- Effects happen on every call, in order. Output is held until the call has
  passed its guards (a failed attempt prints nothing), and the random generator
  is put back if a guard fails, so the re-staged call draws the same numbers.
- The numerics check is a guard too: a non-finite gradient makes the call run
  in the interpreter, which reports it with the operation and its line.
- Called with values other transformations are tracing (grad of jit, vmap of
  jit), the recording is replayed through the primitives, so they see every one.
- A result that holds a function cannot be compiled (the function would keep the
  staged values it closed over): such a signature always runs in the interpreter.

`jit(f, explain=true)` (or `dg run --explain-jit`) says on standard error each
time it stages f, and why it runs in the interpreter when it does.
"""

import sys
from collections import OrderedDict

import numpy as np

from ...backends.backoff import Backoff
from ...backends.codegen import compile_program, run_code
from ...backends.xla import XlaCode, load as xla_load
from ...base.cells import Cell
from ...base.limits import NEVER
from ...core import stage as S
from ...core.primitives.loops import LoopGuardFailed
from ...core.primitives.scan import outputs_read
from ...core.tape import Box, peek
from ...core.trees import children, flatten, flatten_open, is_container, unflatten
from ...core.values import Function, Module
from ...errors import DgError, error
from ..transformed import Transformed, fname
from .loop_modes import retry
from .signatures import _flat_call, _walked_call, changed_leaf, signature

MAX_PATHS = 8       # recordings kept per signature before f runs in the interpreter
MAX_SIGNATURES = 64     # signatures whose recordings are kept, the least recently called dropped first
RESTAGES = 10       # stagings for new signatures after which jit says, once, what makes them
MISSES = 3          # calls in a row past MAX_PATHS that no recording applied to: then the next
SKIPPED = 16        # this many run in the interpreter without trying the recordings first


class Entry:
    """One recording of f for one signature: its program, compiled code and what it read. With
    the XLA backend, `xla` is the program on XLA (its `why` says what keeps it on numpy, if
    anything), and the numpy backend's code is compiled only for the calls XLA leaves to it."""

    __slots__ = ("program", "_code", "cells", "untraceable", "xla")

    def __init__(self, program, cells, untraceable=None, backend="numpy"):
        self.program = program
        self.cells = cells
        self.untraceable = untraceable
        self._code = None
        self.xla = XlaCode(program) if backend == "xla" and not untraceable else None
        if not untraceable and (self.xla is None or self.xla.why):
            self._code = compile_program(program)

    @property
    def code(self):
        """The numpy backend's compiled code (compiled on first use where XLA runs the program)."""
        if self._code is None:
            self._code = compile_program(self.program)
        return self._code

    def cells_hold(self):
        """Whether every name f read still holds what it held when f was staged."""
        return cells_hold(self.cells)


class Jitted:
    """The state of one jit(f): recordings by signature, and what it has had to say."""

    def __init__(self, f, interp, explain, backend="numpy"):
        self.f = f
        self.interp = interp
        self.explain = explain
        self.backend = backend
        # shard's: (args, kwargs) -> per staged leaf, the axis it is split along over the devices
        self.placement = None
        # signature -> [Entry], the one that last applied first; the signatures least recently
        # called first, at most MAX_SIGNATURES of them (a function called with a new int each time
        # would otherwise keep a recording per int for as long as it lives)
        self.entries = OrderedDict()
        self.backoffs = {}      # signature -> Backoff, once a call past MAX_PATHS ran in the interpreter
        # the arguments' ints are staged as values (a step counter does not make a new signature),
        # guarded where f decides something by them; off for good where staging them fails
        self.ints = True
        # the ints (their order among the arguments' ints) whose value a recording guards (a shape,
        # an index, a loop's length): part of the signature, so that each value keeps its own
        # recordings (llsq's n) rather than all of them crowding one signature's paths
        self.pinned = ()
        self.restages = 0       # stagings for a signature that was not the first

    def __call__(self, *args, **kwargs):
        key, values, boxed = self._signature(args, kwargs)
        entries = self.entries.get(key)
        before = None
        if entries is None:
            before = next(reversed(self.entries), None)     # the signature called last
            entries = self.entries[key] = []
            if len(self.entries) > MAX_SIGNATURES:
                old, _ = self.entries.popitem(last=False)
                self.backoffs.pop(old, None)
        elif len(self.entries) > 1:
            self.entries.move_to_end(key)
        backoff = self.backoffs.get(key)
        if backoff is not None and backoff.skipping():
            return self.f(*args, **kwargs)
        why = "a new signature" if not entries else "the names it reads changed"
        if not entries and before is not None:
            why = f"a new signature: {changed_leaf(before, key)}"
            self._restaged(why)
        for k, entry in enumerate(entries):
            if entry.untraceable:
                return self.f(*args, **kwargs)
            if not entry.cells_hold():
                continue
            try:
                out = self._run(entry, args, kwargs, boxed, values)
            except S.GuardFailed as failed:
                why = S.explain_failure(entry.program, failed)
                continue
            if k:       # the path taken last is tried first: most calls take the one before them
                entries.insert(0, entries.pop(k))
            if backoff is not None:
                backoff.hit()
            return out
        if len(entries) >= MAX_PATHS:
            return self._interpreted(key, why, args, kwargs)
        self._say(f"staging it: {why}")
        return self._stage(entries, args, kwargs)

    def _signature(self, args, kwargs):
        """(the call's signature, the staged leaves if the call is flat, whether a leaf is boxed)."""
        ints = self.ints
        flat = None if kwargs else _flat_call(args, ints)
        if flat is not None:        # numbers, strings and tensors only: one look at each
            key, values = flat
            boxed = False
        else:
            values = []
            key = _walked_call(args, kwargs, ints, values)
            boxed = any(type(v) is Box for v in values)
            if boxed:       # a transformation around the call: _run opens its boxes and finds the leaves
                values = None
        if self.pinned:
            if values is not None and ints and not kwargs:      # the leaves hold the ints, in order
                found = [v for v in values if type(v) is int]
            else:
                found = [peek(v) for v in flatten_open((tuple(args), dict(kwargs)))[0] if type(peek(v)) is int]
            key = key + (tuple(found[i] if i < len(found) else None for i in self.pinned),)
        return key, values, boxed

    def _interpreted(self, key, why, args, kwargs):
        """f in the interpreter, past the limit; after MISSES such calls in a row, the next
        SKIPPED go there without trying the recordings (each tried runs until a guard fails)."""
        skip = self.backoffs.setdefault(key, Backoff(MISSES, SKIPPED)).miss()
        self._say(f"runs in the interpreter: {MAX_PATHS} recordings for this signature and none applies ({why})"
                  + (f"; the next {skip} calls run there without trying them" if skip else ""))
        return self.f(*args, **kwargs)

    def _stage(self, entries, args, kwargs):
        """Run f while staging it; keep the recording for later calls.

        A loop staged as one step (dsl/transform/jit/rolling.py) whose body went another way on a later
        iteration makes the staging start again with that loop written out: what the attempt
        printed is dropped and the random generator put back, so the call happens once."""
        interp = self.interp
        if interp is None:
            return self._stage_once(entries, args, kwargs)
        while True:
            # an attempt given up is taken back from the traces staged around the call too (what
            # it recorded there, its effects among them, would happen on each of their runs)
            held = S.Held(interp, interp.staging)
            try:
                result = self._stage_once(entries, args, kwargs)
            except LoopGuardFailed as failed:
                change = retry(failed, interp)
                if change is None:
                    held.release()
                    raise
                held.discard()
                self._say(f"staging it again with {change}")
                continue
            except DgError as exc:
                if not exc.replayed or exc.kind == "limit":
                    held.release()
                    raise
                held.discard()
                return self._failed(args, kwargs)
            except (KeyboardInterrupt, S.GuardFailed):
                held.release()
                raise
            except Exception as exc:
                if not self.ints:
                    held.release()
                    raise
                # f passed an int being staged to something other than arithmetic, or code that
                # could not take it: ints are constants of the signature from now on, and this
                # call is staged again that way
                self._say(f"staging it again with its ints as constants: {exc}"
                          if type(exc) is IntsNotValues else "staging it again with its ints as constants")
                held.discard()
                self.ints = False
                self.entries.clear()
                self.backoffs.clear()
                entries = self.entries.setdefault(signature(args, kwargs, False), [])
                continue
            except BaseException:
                held.release()
                raise
            held.release()
            return result

    def _stage_once(self, entries, args, kwargs):
        """One attempt at staging f (saying, with explain, why each loop it wrote out was)."""
        interp = self.interp
        if interp is not None:
            outer_notes, interp.loop_notes = interp.loop_notes, []
        try:
            program, result = S.stage(self.f, args, kwargs, staging=interp.staging if interp else None,
                                      keep=(interp.grad_options, f"the recording jit staged of {fname(self.f)}")
                                      if interp else None, ints=self.ints, scans=self.backend == "xla")
        finally:
            if interp is not None:
                notes, interp.loop_notes = interp.loop_notes, outer_notes
                for where, what in dict.fromkeys(notes):
                    self._say(f"the loop at {where} {what}")
        if self.ints and not ints_only_in_arithmetic(program):
            raise IntsNotValues("an int argument reaches more than arithmetic")
        pinned = tuple(sorted(set(self.pinned) | pinned_ints(program))) if self.ints else ()
        if pinned != self.pinned:
            # from now on those ints' values are part of the signature: this recording is kept
            # under this call's new signature, the others (kept without them) are dropped
            self.pinned = pinned
            self.entries.clear()
            self.backoffs.clear()
            entries = self.entries.setdefault(self._signature(args, kwargs)[0], [])
        outputs_read(program)
        untraceable = _holds_function(result)
        if untraceable:
            self._say(f"runs in the interpreter for this signature: {untraceable}")
        entry = Entry(program, reads(self.f), untraceable, self.backend)
        if entry.xla is not None and entry.xla.why:
            self._say(f"runs on the numpy backend for this recording: {entry.xla.why}")
        entries.append(entry)
        return result

    def _run(self, entry, args, kwargs, boxed, values=None):
        """Run a recording: the compiled code on plain values, else a replay through the primitives
        (`values`: the staged leaves of the arguments, when the caller has them)."""
        if values is None:
            ints = self.ints
            values = [v for v in flatten_open((tuple(args), dict(kwargs)))[0]
                      if S.is_staged_leaf(v) or (ints and type(v) is int)]
        interp = self.interp
        # output waits for the guards
        held = S.Held(interp) if interp is not None and entry.program.effects else None
        # a replay records on the traces being staged around the call (vmap's, an outer jit's)
        marks = [(t, len(t.nodes)) for t in interp.staging] if boxed and interp is not None else ()
        try:
            if boxed:
                out = S.run(entry.program, values)
            else:
                split = self.placement(args, kwargs) if self.placement is not None else None
                out = self._compiled(entry, values, held, split)
        except S.GuardFailed:
            if held:        # as if this attempt had not run: nothing printed, nothing drawn,
                held.discard()
            for trace, n in marks:      # and nothing recorded (its effects would happen on each replay)
                trace.cut(n)
            raise
        except DgError as exc:
            if interp is None or not exc.replayed or exc.kind == "limit":
                if held:
                    held.release()
                raise
            if held:
                held.discard()
            for trace, n in marks:
                trace.cut(n)
            return self._failed(args, kwargs)
        if held:
            held.release()
        return out

    def _failed(self, args, kwargs):
        """f in the interpreter, where a recording (or a loop rolled while staging) met an error:
        the replay knows the failing step's line but not the calls that led to it, so f runs again,
        as if the recording had not run, and fails with the whole call stack."""
        self._say("runs in the interpreter for this call: its recording met an error")
        return self.f(*args, **kwargs)

    def _compiled(self, entry, values, held=None, split=None):
        """The compiled code's result (or the exact program's, where the code cannot vouch for it:
        then `held`, holding the call's effects, undoes those the code performed first). `split`:
        how XLA's call spreads the inputs over the devices (shard)."""
        xla, out = entry.xla, None
        if xla is not None and not xla.why:
            # a loop XLA would run past the limits' next look (a step budget, a timeout) runs on
            # numpy, which stops it at its line; else its iterations count as the interpreter's do
            n = xla.iterations      # math.inf for a while loop's
            limits = self.interp.limits if self.interp is not None and n else None
            if limits is None or limits.next_check == NEVER or limits.steps + n < limits.next_check:
                out = xla(values, split)
                if out is None and held is not None:
                    held.rewind()       # what XLA's run printed and drew, undone: numpy's run does it again
                if out is None and xla.why:
                    self._say(f"runs on the numpy backend for this recording: {xla.why}")
                elif out is not None and limits is not None and n < NEVER:
                    limits.steps += n
        if out is None:     # numpy's code: the numpy backend, or a program or call XLA left to it
            out = run_code(entry.program, entry.code, values, held.rewind if held is not None else None)
        spec = entry.program.out_spec
        return out[0] if spec is None else unflatten(spec, list(out))

    def _restaged(self, why):
        """Count stagings for new signatures: past RESTAGES, say once (explain or not) what to do."""
        self.restages += 1
        if self.restages == RESTAGES:
            print(f"dg: jit({fname(self.f)}) has been staged {RESTAGES} times for new signatures "
                  f"(the last: {why.split(': ', 1)[1]}): each string, bool, tensor shape or struct type it "
                  f"is called with makes a new one, and so does each value of an int it uses as a shape, "
                  f"an index or a loop's length; floats, tensors and ints used in arithmetic do not. Keep "
                  f"the others the same from call to call, or pass what changes as a float",
                  file=sys.stderr)

    def _say(self, text):
        """Explain (with explain=true or --explain-jit) on standard error."""
        if self.explain or (self.interp is not None and getattr(self.interp, "explain_jit", False)):
            print(f"jit({fname(self.f)}): {text}", file=sys.stderr)


BACKENDS = ("numpy", "xla")


def backend_of(backend, interp):
    """The backend a jit compiles for: the one asked for, else the interpreter's (numpy by
    default); XLA's needs JAX (a dg error naming the extra where it is missing)."""
    if backend is None:
        backend = getattr(interp, "backend", None) or "numpy"
    if backend not in BACKENDS:
        raise error("value", f"jit's backend is \"numpy\" or \"xla\", got {backend!r}")
    if backend == "xla":
        xla_load()
    return backend


def jit(f, explain=False, interp=None, backend=None):
    """jit(f): f, compiled per argument signature; the same results, output and random draws."""
    state = Jitted(f, interp, explain, backend_of(backend, interp))
    return Transformed(f"jit({fname(f)})", state, (f,))


class IntsNotValues(Exception):
    """A recording with the arguments' ints staged does not hold for other ints."""


def ints_only_in_arithmetic(program):
    """Whether every int input of a program, and every int computed from one, is read only by
    stage.INT_READERS, effects and guards: then the recording holds for any value of those ints
    that passes its guards (StageTrace.process guards the others where it meets them)."""
    kinds = program.kinds
    ints = {s for s in program.inputs if kinds[s] == "int"}
    if not ints:
        return True
    for kind, op, refs, _, _, _, out in program.steps:
        if kind == "guard" or not any(r in ints for r in refs):
            continue
        if op not in S.INT_READERS and kind != "effect":
            return False
        if out >= 0 and kinds[out] == "int":
            ints.add(out)
    return True


def pinned_ints(program):
    """The ints among a program's inputs (by their order among its int inputs) whose value a
    guard reads, directly or through int arithmetic (`zeros((n + 1,))`): the recording holds for
    that value only. A guard on a comparison (`if step > 0`) pins nothing: it holds for many."""
    kinds = program.kinds
    origin = {}
    for k, s in enumerate([s for s in program.inputs if kinds[s] == "int"]):
        origin[s] = {k}
    pinned = set()
    for kind, _, refs, _, _, _, out in program.steps:
        if kind == "guard":
            for r in refs:
                pinned |= origin.get(r, set())
        elif out >= 0 and kinds[out] == "int":
            found = set().union(*(origin.get(r, set()) for r in refs))
            if found:
                origin[out] = found
    return pinned


def _holds_function(result):
    """Why a result cannot come from compiled code, or None."""
    for leaf in flatten(result)[0]:
        if callable(peek(leaf)) and not isinstance(peek(leaf), (np.ndarray,)):
            return "its result holds a function, which would keep the values it was staged with"
    return None


# ---------------------------------------------------------------- what f reads
def reads(f):
    """(cell, value) for every module-level name and captured variable f (and what it calls) reads."""
    return reads_from([f])


def reads_from(roots):
    """(cell, value) for each Cell among `roots`, and for every module-level name and captured
    variable read by the functions among them and in what those hold (and what they call)."""
    seen, pairs = set(), []
    stack = list(roots)
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        t = type(v)
        if t is Cell:
            pairs.append((v, v.v))
            stack.append(v.v)
        elif t is Function:
            for cell in tuple(v.code.global_cells) + tuple(v.cells):
                if id(cell) not in seen:
                    seen.add(id(cell))
                    pairs.append((cell, cell.v))
                    stack.append(cell.v)
        elif t is Transformed:
            stack.extend(v.wraps)
            state = v.call
            if type(state) is Jitted:
                stack.append(state.f)
        elif is_container(v) and t is not Module:
            stack.extend(children(v))
    return pairs


def cells_hold(pairs):
    """Whether each (cell, value) pair's cell still holds that value (numbers: an equal one)."""
    for cell, value in pairs:
        now = cell.v
        if now is not value and not (type(now) in (int, float, str, bool) and type(now) is type(value)
                                     and now == value):
            return False
    return True


__all__ = ["jit", "reads", "reads_from", "cells_hold", "MAX_PATHS"]
