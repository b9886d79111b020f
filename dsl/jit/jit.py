"""jit(f): f compiled per argument signature into straight-line code (reference section 6).

The first call with a signature (the arguments' structure, tensor shapes and dtypes,
and the values of everything that is not a float or tensor) stages f
(dsl/autodiff/stage.py): it runs f once, for real, while recording every primitive,
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

from ..autodiff import stage as S
from ..autodiff.tape import Box, peek
from ..autodiff.transforms import Transformed, _fname
from ..primitives.loops import LoopGuardFailed
from ..autodiff.trees import children, flatten, flatten_open, is_container, unflatten
from ..errors import DgError
from ..values import Cell, Function, Module, Struct
from .backoff import Backoff
from .codegen import compile_program, run_code

MAX_PATHS = 8       # recordings kept per signature before f runs in the interpreter
MAX_SIGNATURES = 64     # signatures whose recordings are kept, the least recently called dropped first
MISSES = 3          # calls in a row past MAX_PATHS that no recording applied to: then the next
SKIPPED = 16        # this many run in the interpreter without trying the recordings first


class Entry:
    """One recording of f for one signature: its program, compiled code and what it read."""

    __slots__ = ("program", "code", "cells", "untraceable")

    def __init__(self, program, cells, untraceable=None):
        self.program = program
        self.code = None if untraceable else compile_program(program)
        self.cells = cells
        self.untraceable = untraceable

    def cells_hold(self):
        """Whether every name f read still holds what it held when f was staged."""
        return cells_hold(self.cells)


class Jitted:
    """The state of one jit(f): recordings by signature, and what it has had to say."""

    def __init__(self, f, interp, explain):
        self.f = f
        self.interp = interp
        self.explain = explain
        # signature -> [Entry], the one that last applied first; the signatures least recently
        # called first, at most MAX_SIGNATURES of them (a function called with a new int each time
        # would otherwise keep a recording per int for as long as it lives)
        self.entries = OrderedDict()
        self.backoffs = {}      # signature -> Backoff, once a call past MAX_PATHS ran in the interpreter

    def __call__(self, *args, **kwargs):
        flat = None if kwargs else _flat_call(args)
        if flat is not None:        # numbers, strings and tensors only: one look at each
            key, values = flat
            boxed = False
        else:
            key, values = signature(args, kwargs), None
            boxed = any(type(v) is Box for v in flatten((args, kwargs))[0])
        entries = self.entries.get(key)
        if entries is None:
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

    def _interpreted(self, key, why, args, kwargs):
        """f in the interpreter, past the limit; after MISSES such calls in a row, the next
        SKIPPED go there without trying the recordings (each tried runs until a guard fails)."""
        skip = self.backoffs.setdefault(key, Backoff(MISSES, SKIPPED)).miss()
        self._say(f"runs in the interpreter: {MAX_PATHS} recordings for this signature and none applies ({why})"
                  + (f"; the next {skip} calls run there without trying them" if skip else ""))
        return self.f(*args, **kwargs)

    def _stage(self, entries, args, kwargs):
        """Run f while staging it; keep the recording for later calls.

        A loop staged as one step (dsl/jit/rolling.py) whose body went another way on a later
        iteration makes the staging start again with that loop written out: what the attempt
        printed is dropped and the random generator put back, so the call happens once."""
        interp = self.interp
        if interp is None:
            return self._stage_once(entries, args, kwargs)
        while True:
            held = S.Held(interp)
            try:
                result = self._stage_once(entries, args, kwargs)
            except LoopGuardFailed as failed:
                if failed.loop in interp.unrolled_loops:
                    held.release()
                    raise
                held.discard()
                interp.unrolled_loops.add(failed.loop)
                self._say(f"staging it again with a loop written out: {failed.why}")
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
                                      keep=(interp.grad_options, f"the recording jit staged of {_fname(self.f)}")
                                      if interp else None)
        finally:
            if interp is not None:
                notes, interp.loop_notes = interp.loop_notes, outer_notes
                for where, why in dict.fromkeys(notes):
                    self._say(f"the loop at {where} is written out, one copy per iteration: {why}")
        untraceable = _holds_function(result)
        if untraceable:
            self._say(f"runs in the interpreter for this signature: {untraceable}")
        entries.append(Entry(program, reads(self.f), untraceable))
        return result

    def _run(self, entry, args, kwargs, boxed, values=None):
        """Run a recording: the compiled code on plain values, else a replay through the primitives
        (`values`: the staged leaves of the arguments, when the caller has them)."""
        if values is None:
            values = [v for v in flatten_open((tuple(args), dict(kwargs)))[0] if S.is_staged_leaf(v)]
        interp = self.interp
        # output waits for the guards
        held = S.Held(interp) if interp is not None and entry.program.effects else None
        # a replay records on the traces being staged around the call (vmap's, an outer jit's)
        marks = [(t, len(t.nodes)) for t in interp.staging] if boxed and interp is not None else ()
        try:
            if boxed:
                out = S.run(entry.program, values)
            else:
                out = self._compiled(entry, values, held)
        except S.GuardFailed:
            if held:        # as if this attempt had not run: nothing printed, nothing drawn,
                held.discard()
            for trace, n in marks:      # and nothing recorded (its effects would happen on each replay)
                trace.cut(n)
            raise
        except DgError:
            if held:
                held.release()
            raise
        if held:
            held.release()
        return out

    def _compiled(self, entry, values, held=None):
        """The compiled code's result (or the exact program's, where the code cannot vouch for it:
        then `held`, holding the call's effects, undoes those the code performed first)."""
        rewind = held.rewind if held is not None else None
        out = run_code(entry.program, entry.code, values, rewind)
        spec = entry.program.out_spec
        return out[0] if spec is None else unflatten(spec, list(out))

    def _say(self, text):
        """Explain (with explain=true or --explain-jit) on standard error."""
        if self.explain or (self.interp is not None and getattr(self.interp, "explain_jit", False)):
            print(f"jit({_fname(self.f)}): {text}", file=sys.stderr)


def jit(f, explain=False, interp=None):
    """jit(f): f, compiled per argument signature; the same results, output and random draws."""
    state = Jitted(f, interp, explain)
    return Transformed(f"jit({_fname(f)})", state, (f,))


# ---------------------------------------------------------------- signatures
def signature(args, kwargs):
    """What a recording depends on besides the float and tensor values: a hashable key."""
    return (_key(args), tuple(sorted((k, _key(v)) for k, v in kwargs.items())))


def _flat_call(args):
    """(signature(args, {}), the staged leaves) for positional arguments that are all numbers,
    strings or tensors (the common call: nothing to flatten), else None. The key is built here
    as _key builds it, one look at each argument: this is most of a small jitted call's cost."""
    keys, leaves = ["tuple"], []
    for v in args:
        t = type(v)
        if t is float or t is np.float64:
            keys.append("f")
            leaves.append(v)
        elif t is np.ndarray:
            keys.append(("t", v.shape, v.dtype.str))
            leaves.append(v)
        elif t is int or t is bool or t is str:
            keys.append((t.__name__, v))
        else:
            return None
    return (tuple(keys), ()), leaves


def _key(v):
    """The signature of one value."""
    v = peek(v)
    t = type(v)
    if t is float or t is np.float64:
        return "f"
    if t is np.ndarray:
        return ("t", v.shape, v.dtype.str)
    if t in (int, bool, str) or v is None:
        return (t.__name__, v)
    if t is tuple:
        return ("tuple",) + tuple(_key(x) for x in v)
    if t is dict:
        return ("map",) + tuple((type(k).__name__, k, _key(x)) for k, x in v.items())
    if t is Struct:
        return ("struct", id(v.sdef), v.sdef) + tuple(_key(x) for x in v.vals)
    return ("object", id(v), v)        # functions, modules, struct types: by identity


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


__all__ = ["jit", "signature", "reads", "reads_from", "cells_hold", "MAX_PATHS"]
