"""Loops rolled in eager gradients: a loop under a derivative, outside jit, runs as one Loop step.

Written out, each iteration of a loop under `grad` records its operations one by one
on the tape, a Box and a rule per operation: a 1,000-step scalar simulation spends 15
microseconds an iteration there, 40 times what the same arithmetic costs on floats.
jit already stages such a loop once (dsl/transform/jit/rolling.py: the body as a program P, run
compiled over the items, and its pullback compiled for the reverse pass); here the
interpreter does the same without jit, for a loop that

- is a `for` over a range of at least MIN_ITEMS items, or a `while` (run as jit runs one:
  the staged iterations until one goes another way, then the statement as written), from
  its first run (a while loop that stops within MIN_ITEMS rolled iterations three runs in
  a row is left written out for a while): a call then
  gives the same numbers as the next (rolled, the operations' order may differ from the
  loop written out in the last bits). The look ahead and compilations cost 2-5 ms once,
  which a long loop pays back in its first run (the 1,000-step simulation's first call
  takes 3 ms rolled, 15 written out) and a short one over the next few;
- runs under at most one reverse-mode level (grad, value_and_grad, vjp; not grad of
  grad) and any number of forward-mode ones (jvp, jvp of grad: a Hessian-vector product,
  hessian), at least one of them (a loop that nothing differentiates is left to
  dsl/runtime/fusion.py); vmap stages its loops already (rolling.py);
- in an interpreter that does not keep tapes (`dg run`, `Interpreter(keep_tape=False)`):
  a kept tape shows every operation of every iteration (reference 6.3), which one Loop
  node would hide; and with no step budget or timeout, which count and check each
  iteration as written.

The staged body is kept per loop statement, for the layout of the function's variables
it was staged from (their structures, and the values that are not numbers or tensors; a
function defined inside the function is a new closure on each call, alike when made by
the same definition over the Cells of the same slots),
and used again while the module-level names and captured variables it reads hold the
same values (as a jit recording is: dsl/transform/jit/jit.py). A later run whose body goes
another way (a guard of P fails) or raises runs its iterations as written from the
second one, as it would have without this: P has no effects, and nothing is recorded
until it has run to the end. A loop that keeps failing, or keeps being staged again (an
int of the function that changes from run to run, such as an outer loop's counter, is
part of what a body was staged for), is not tried for a while (Backoff).
"""

from ...backends.backoff import Backoff
from ...base.cells import Cell
from ...core.primitives.loops import _loop_kernel, LoopGuardFailed
from ...core.tape import peek
from ...core.values import Function
from ...errors import DgError
from .frames import LEAF, frame_leaves, same_layout, same_static
from .jit import cells_hold, reads_from
from .signatures import _key
from .loop_modes import mixes_custom_rules, modes, write_back

MIN_ITEMS = 16      # measured: a rolled run costs ~75 us, a scalar iteration written out 4-6 us
KEPT = 4            # staged bodies kept per loop statement, the last used first
MISSES, SKIPPED = 3, 32     # runs in a row that staged or failed, then runs written out without trying


class EagerLoops:
    """One loop statement's rolling outside jit: its staged bodies and how often it ran under a
    derivative."""

    __slots__ = ("roller", "reads", "bodies", "backoff")

    def __init__(self, roller, reads):
        self.roller = roller
        self.reads = reads      # the module-level Cells the enclosing function reads (filled as it compiles)
        # (layout, leaf keys, counters, (cell, value) read, Body, the frame's Cells by id: (slot,
        # Cell)), last used first
        self.bodies = []
        self.backoff = Backoff(MISSES, SKIPPED)

    def wanted(self, items):
        """Whether to try rolling this run (`items` None: a while loop's): a long loop, where
        nothing needs it written out."""
        interp = self.roller.interp
        limits = interp.limits
        if ((items is not None and len(items) < MIN_ITEMS) or interp.grad_options.keep_tape
                or limits.max_steps is not None or limits.timeout is not None):
            return False
        return not self.backoff.skipping()

    def roll(self, f, skip, item, items):
        """Run the loop from the frame's state as one Loop step, recorded by the traces that
        differentiate it: over `items`, the rest of a `for` (its first iteration has run as
        written, and its variable is bound to `item`, the next), or, `items` None, a while loop's
        iterations until one goes another way than staged (the statement goes on as written from
        the state that iteration started from). True where it ran; False where the body does not
        stage once for all of them, or where an iteration fails a guard or raises (nothing is
        done then: the loop goes on as written from here)."""
        state, layout = frame_leaves(f, skip)
        traces = modes(state)
        if traces is None:
            return False
        found = self._body(f, item, skip, state, layout)
        if found is None:
            self.backoff.miss()
            return False
        body, state, layout, staged = found
        if mixes_custom_rules(body, *traces):
            return False
        try:
            out = _loop_kernel(*state, body=body, items=items, history=False)
        except (LoopGuardFailed, DgError):
            self.backoff.miss()
            return False
        write_back(f, layout, skip, state, out, body)
        if staged or (items is None and body.ran < MIN_ITEMS):
            # staged again (the kept bodies do not serve this loop's runs), or a while loop's short
            # run: three in a row, and the next SKIPPED runs are written out
            self.backoff.miss()
        else:
            self.backoff.hit()
        return True

    def _body(self, f, item, skip, state, layout):
        """(Body, state, layout, whether it was staged now) for this frame: one kept, else staged by
        a look ahead; or None."""
        for k, (kept_layout, keys, counters, read, body, cells) in enumerate(self.bodies):
            s, l = frame_leaves(f, skip, counters) if counters else (state, layout)
            if _leaf_keys(s) == keys and _alike(kept_layout, cells, l, f) and cells_hold(read):
                if k:
                    self.bodies.insert(0, self.bodies.pop(k))
                return body, s, l, False
        staged = self.roller.stage_body(f, item, skip, state, layout, True)
        if staged is None:
            return None
        body, state, layout, counters = staged
        statics = [s for entry in layout if entry is not None for s in entry[2] if s is not LEAF]
        cells = {id(c): (j, c) for j, c in enumerate(f) if type(c) is Cell}     # (the Cells kept alive)
        self.bodies.insert(0, (layout, _leaf_keys(state), counters, reads_from([*self.reads, *statics]), body,
                               cells))
        del self.bodies[KEPT:]
        return body, state, layout, True


def _alike(kept, kept_cells, layout, f):
    """Whether frame f's layout is one a body staged from `kept` serves: the same, or alike but
    for functions made by the same definition over the Cells of the same slots of their frames
    (a helper defined in the function is a new closure on each call) or over the same Cells."""
    if same_layout(kept, layout):
        return True
    now = {id(c): j for j, c in enumerate(f) if type(c) is Cell}
    return same_layout(kept, layout, lambda s, t: _same_part(s, t, kept_cells, now))


def _same_part(s, t, kept_cells, now):
    """Whether two non-state parts agree, closures by their definition and Cells."""
    if same_static(s, t):
        return True
    if type(s) is not Function or type(t) is not Function or s.code is not t.code or len(s.cells) != len(t.cells):
        return False
    for a, b in zip(s.cells, t.cells):
        if a is not b and (id(a) not in kept_cells or kept_cells[id(a)][0] != now.get(id(b))):
            return False
    return True


def _leaf_keys(state):
    """The kinds of the state's leaves: floats, tensors by shape and dtype, and ints (counters)."""
    return tuple("i" if type(peek(x)) is int else _key(x) for x in state)


__all__ = ["EagerLoops", "MIN_ITEMS"]
