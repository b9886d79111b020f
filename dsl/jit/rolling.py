"""Loops jit stages once: a `for` over a range, or a `while`, recorded as one Loop step
(dsl/primitives/loops.py).

Without this, staging a 1,000-step loop records 1,000 copies of its body (and,
under grad, of its reverse pass), and compiles all of them: staging and
compiling take 30 times as long as running the loop. A rolled loop is staged
from its second iteration:

1. The first iteration runs as written (it may turn ints into floats, or
   declare the body's variables: the state settles).
2. The second is run once *ahead*, on a fresh staging trace, with every number
   and tensor of the function's variables (the loop's state) replaced by an
   argument of that trace: the body as a program P from one state to the next.
   Nothing it does escapes: an effect (print, a random draw) or a value of an
   outer trace met by the body (a closure's captured value) abandons the look
   ahead, and so does anything that is not the same before and after (a
   function, a tensor whose shape grows, a `break`), except ints: where only ints
   changed (counters), it looks ahead again with them staged as state too.
3. Otherwise the loop's remaining iterations are one Loop step over the state,
   which runs P over the items (the loop compiled whole: Driver), and the state is
   written back.

An `if` whose condition is staged runs both ways in the look ahead where both
branches only compute (BothWays): its variables become `where`s of the
condition, not a guard. Where a later iteration fails one of P's guards while
jit stages, jit stages the function again with that loop written out
(dsl/jit/jit.py); a compiled call that fails one stages again.

A `while` loop is rolled the same way, P being one iteration: its condition,
then its body (which may hold a `break` or a `continue`, not taken on the
iteration looked ahead). Its Loop step has no items: it runs P until one of
P's guards fails (the condition turned false, a `break` is taken, a branch
went another way, a counter reached its bound), and the statement goes on as
written from the state that iteration started from, so that what follows (the
last test of the condition, the iteration that leaves) is recorded with its
own guards. One recording then serves every trip count; before, each trip
count was another path, staged again (`while err > tol`). A while loop whose
runs stopped early three times in one staging (within MIN_ITEMS iterations: a
while loop inside a loop written out) is written out for the rest of it: its
look ahead costs more than it saves.

Loops are rolled while jit stages and while vmap looks at a function (vmap
batches the Loop step by its rule: the loop of the batched body), under at most
one reverse-mode level and any number of forward-mode ones (a jvp of the loop
is the loop of its body's jvp: see dsl/primitives/loops.py); everything else
is written out as before, as is every loop whose state holds nothing being
staged. Outside jit and vmap, the interpreter rolls a loop under a derivative the same
way, keeping the staged body for its next runs (dsl/jit/eager_loops.py).
"""

import numpy as np

from ..ast import Block, Break, Continue, For, If, Return, While
from ..autodiff import stage as S
from ..autodiff.tape import FORWARD, REVERSE, STAGE, USER_CODE, Box, ForwardTrace, finite, peek
from ..autodiff.trees import flatten_open, unflatten, zero_of
from ..values import Cell
from ..primitives.loops import (LoopGuardFailed, pullback, split_tangents, stage_pullback, state_diff,
                                with_tangents)
from .codegen import compile_loop, compile_program, outputs_checked, run_code
from .jit import _key
from .optimize import plan
from .split import checks_can_wait, cotangents, hoisted, needed_only, split

MIN_ITEMS = 3       # a first iteration as written, the one looked ahead, and at least one more
VMAP_MIN_ITEMS = 32     # measured: below about 30 iterations, an eager vmap call writes a loop out faster


class NotRollable(Exception):
    """The loop body cannot be staged once for all iterations (see the module docstring)."""


class Lookahead(S.StageTrace):
    """The staging trace of one iteration run ahead: nothing may escape it."""

    __slots__ = ()

    def process(self, op, args, unboxed, parents, kw, span):
        """Record the primitive, unless it would reach a value of an outer trace."""
        for u in unboxed:
            if type(u) is Box:
                raise NotRollable(f"the body reads a value from outside the loop's variables ({op})")
        return super().process(op, args, unboxed, parents, kw, span)

    def effect(self, staging, fn, args, kw):
        """An effect in the body: it must happen on each iteration, so the loop is written out."""
        raise NotRollable("the body has an effect (print, a random draw, the clock)")


def exits(block):
    """Whether a loop body holds a break, continue or return of its own (not of a nested function)."""
    return any(type(s) in (Break, Continue, Return) for s in _statements(block.stmts))


def _statements(stmts):
    """These statements and those of the blocks nested in them (statements sit only in blocks of
    statements, and in functions, which are not searched)."""
    stack = list(stmts)
    while stack:
        s = stack.pop()
        yield s
        t = type(s)
        if t is If:
            stack += s.then.stmts
            if s.orelse is not None:
                stack += s.orelse.stmts if type(s.orelse) is Block else [s.orelse]
        elif t is While or t is For:
            stack += s.body.stmts


class Roller:
    """Runs one loop statement while jit stages, rolled where it can be: a `for` over a range
    (`bind` sets its variable), or a `while` (`bind` is None: `body` runs one iteration, the
    condition and then the body, and gives BREAK where the condition is false)."""

    def __init__(self, body, bind, interp, where, scope, span=None, reads=()):
        self.body = body
        self.bind = bind
        self.interp = interp
        self.where = where
        self.scope = scope      # the function's frame layout (resolver.FunctionScope), for names
        self.span = span        # a while loop's condition: where its compiled iterations count steps
        # (id of a staging trace, how many of this while loop's runs in it stopped within
        # MIN_ITEMS iterations): a loop run again and again as written (in a loop jit writes
        # out) is rolled three times at most per staging
        self.short = (None, 0)
        # the loop outside jit, under a derivative (dsl/jit/eager_loops.py); `reads`: the
        # module-level Cells the enclosing function reads
        self.eager = _eager(self, reads)

    def _written_out(self, why):
        """Note why this loop is written out, for jit's explain (nothing: the caller returns it)."""
        notes = getattr(self.interp, "loop_notes", None)
        if notes is not None:
            notes.append((self.where, why))

    def wanted(self, items=None):
        """Whether to try: outside jit and vmap, as EagerLoops.wanted says; else jit or vmap is
        staging (not looking ahead), and the loop is long
        (a `for`'s items; a while loop, unless it was short three times in this staging: its
        look ahead and compiling cost more than its few iterations written out)."""
        staging = getattr(self.interp, "staging", None)
        if not staging:
            return self.eager.wanted(items)
        if self in self.interp.unrolled_loops:
            return False
        top = staging[-1]
        if type(top) is not S.StageTrace:
            return False
        if top.dry and not any(type(t) is S.StageTrace and not t.dry for t in staging):
            # vmap's look at a function, outside jit (once per signature: it keeps the program),
            # where a look ahead and its compilations pay only for a long loop
            return items is not None and len(items) >= VMAP_MIN_ITEMS
        if items is None:
            return self.short[0] != id(top) or self.short[1] < 3
        return len(items) >= MIN_ITEMS

    def __call__(self, f, items):
        """Run the whole loop."""
        bind, body = self.bind, self.body
        bind(f, items[0])
        body(f)
        if not self._rolled(f, items):
            for item in items[1:]:
                bind(f, item)
                body(f)

    def _rolled(self, f, items):
        """Run items[1:] as one Loop step, if the body stages once for all of them (else False),
        while jit or vmap stages, or outside them as EagerLoops does."""
        before = list(f)
        self.bind(f, items[1])
        skip = {j for j in range(len(f)) if f[j] is not before[j]}     # the loop variable's slot
        roll = self._roll if self.interp.staging else self.eager.roll
        if not roll(f, skip, items[1], items[1:]):
            return False
        self.bind(f, items[-1])
        return True

    def roll_while(self, f):
        """Run a while loop's iterations from here as one Loop step, until one goes another way
        than the one staged (its condition turns false, a `break` is taken): the statement then
        goes on as written from the state that iteration started from."""
        if not self.interp.staging:
            self.eager.roll(f, set(), 0, None)
            return
        top = id(self.interp.staging[-1])
        if (self._roll(f, set(), 0, None) or 0) < MIN_ITEMS:
            trace, count = self.short
            self.short = (top, count + 1 if trace == top else 1)

    def _roll(self, f, skip, item, items):
        """Run the loop from the frame's state as one Loop step over `items` (None: until a guard
        of the body fails); True, or the number of iterations run where `items` is None, or False
        where the body does not stage once for all of them."""
        top = self.interp.staging[-1]
        state, layout = frame_leaves(f, skip)
        modes = _modes(state, top)
        if modes is None:
            return self._written_out("its variables hold two reverse levels (grad of grad), a batched "
                                     "value, or nothing jit stages")
        forward, reverse = modes
        staged = self.stage_body(f, item, skip, state, layout, bool(forward or reverse))
        if staged is None:
            return False
        body, state, layout, _ = staged
        if mixes_custom_rules(body, forward, reverse):
            return self._written_out("its body calls a custom_vjp function, under reverse mode inside "
                                     "forward mode (jvp of grad, hessian)")
        from ..primitives.loops import _loop_kernel
        write_back(f, layout, skip, state, _loop_kernel(*state, body=body, items=items, history=False), body)
        return True if items is not None else body.ran

    def stage_body(self, f, item, skip, state, layout, differentiated):
        """The body staged by a look ahead from this frame, with the ints it changes (counters)
        staged as state too where it changes some: (Body, state, layout, counters), or None."""
        counters = frozenset()
        body = self._look_ahead(f, item, skip, state, layout, differentiated, counters)
        if type(body) is frozenset:     # ints the body changes (counters): look again with them staged
            counters = body
            state, layout = frame_leaves(f, skip, counters)
            body = self._look_ahead(f, item, skip, state, layout, differentiated, counters)
        return None if body is None else (body, state, layout, counters)

    def _look_ahead(self, f, item, skip, state, layout, differentiated, counters):
        """Stage the second iteration on its own trace: its Body, or None where it cannot be one,
        or the positions of the ints it changes (when `counters`, those staged already, is empty):
        a counter is then staged as part of the state, unless a `for` body decides something by
        it (a while loop's stops where such a decision goes another way)."""
        look = Lookahead(derived=differentiated)     # under grad, the loop's rule differentiates P
        saved = _snapshot(f)
        counter = self.interp.limits.steps
        item = look.box(item, "Arg", (), (), None, None)
        args = [look.box(peek(x), "Arg", (), (), None, None) for x in state]
        staging = self.interp.staging
        staging.append(look)
        try:
            write_frame(f, layout, skip, args, None)
            for j in skip:
                _set(f, j, item)
            try:
                if self.body(f) is not None:
                    return self._written_out("the body leaves the loop")
                after, layout_after = frame_leaves(f, skip, counters)
            except NotRollable as why:
                return self._written_out(str(why))
            except Exception:       # noqa: BLE001 (the loop runs as written, and raises it there)
                return self._written_out("the body raised an error when run ahead")
        finally:
            staging.pop()
            _restore(f, saved)
            self.interp.limits.steps = counter
        if not same_layout(layout, layout_after) or len(after) != len(state):
            changed = None if counters else _changed_ints(layout, layout_after)
            return changed or self._written_out(self._what_changed(layout, layout_after))
        for x, y in zip(state, after):
            if (type(y) is Box and y.trace is not look) or (
                    _key(x) != _key(y) and not (type(peek(x)) is int and type(peek(y)) is int)):
                return self._written_out("a tensor of its variables changes shape or type from one "
                                         "iteration to the next")
        program = S.program_of(look, [item, *args], tuple(after))
        counted = {a.g for a, x in zip(args, state) if type(peek(x)) is int}
        read = {r for s in program.steps if s[0] == "guard" for r in s[2]}
        if self.bind is not None and (item.g in read or read & counted):
            # the body decides something by the loop variable or a counter: each iteration differs
            return self._written_out("the body decides something by the value of the loop variable or of "
                                     "an int it changes")
        return Body(program, "loop_body", state_diff(state), self, self.where)

    def _what_changed(self, before, after):
        """Why two frame layouts differ, naming the variable: a function made in the body, a
        structure that changes shape."""
        for j, (x, y) in enumerate(zip(before, after)):
            if x is None or y is None or same_layout([x], [y]):
                continue
            return (f"`{self.scope.slot_name(j)}` holds something other than numbers and tensors that "
                    f"changes from one iteration to the next (a function, a string, a structure of "
                    f"another shape)")
        return "a variable changes from one iteration to the next"


class BothWays:
    """An `if` whose condition is staged, met while a loop body is run ahead: both branches run
    and every variable they set is a `where` of the condition between the two, instead of a
    guard on the condition (and so is the value they return, where both return one). The body
    then stages once for iterations that go either way (a ball that bounces on some of them, a
    schedule by a counter, a piecewise function) and the loop is rolled, where a guard would
    write it out (its branch flips on a later iteration) and stage it again on every call whose
    flips fall elsewhere. Both branches must finish alike (both fall through, or both return;
    no break or continue), do nothing but compute (no effect, no guard of their own: a value
    they decide by), raise nothing when run ahead, use no primitive that can fail on a value on
    a later iteration (CAN_FAIL, INDEXED), and leave each variable the same kind of value either
    way (numbers and tensors of one shape; anything else the same). Otherwise the condition is
    guarded as before (what the branches recorded is cut). The results are the branches' own:
    a where selects, and the branch not taken receives a zero cotangent (reference 6.7)."""

    __slots__ = ("then", "orelse", "interp", "local", "signal", "running")

    def __init__(self, then, orelse, interp, local):
        self.then = then
        self.orelse = orelse
        self.interp = interp
        self.local = local      # the frame slots declared inside the branches (dead after the if)
        self.signal = None      # what the if gives after both ways ran: None, or both's return
        # whether this if is running both ways already: the same if met again inside one of its
        # branches (a recursive function) is guarded there, or the branch that recurses would go
        # on to the depth limit
        self.running = False

    def __call__(self, f, c):
        """Run both branches and select between what they set by c (the if then gives `signal`);
        False where not, f as it was."""
        look = looking_ahead(self.interp, c)
        if look is None or self.running:
            return False
        self.running = True
        try:
            return self._both(f, c, look)
        finally:
            self.running = False

    def _both(self, f, c, look):
        """See __call__ (look: the look ahead's trace)."""
        start = len(look.nodes)
        saved = _snapshot(f)
        then = self._branch(f, self.then, look, start)
        _restore(f, saved)
        orelse = self._branch(f, self.orelse, look, len(look.nodes)) if then is not None else None
        _restore(f, saved)
        merged = self._merged(c, saved[0], then, orelse) if orelse is not None else None
        if merged is None:
            look.cut(start)
            return False
        for j, v in merged.items():
            _set(f, j, v)
        return True

    def _branch(self, f, run, look, start):
        """(the frame's values after one branch, a Cell's contents for a Cell; what the branch
        gave: None or a return), or None where the branch cannot be selected."""
        signal = None
        if run is not None:
            try:
                signal = run(f)
            except Exception:       # noqa: BLE001 (an effect's NotRollable too: the branch runs as written)
                return None
            if signal is not None and type(signal) is not tuple:        # a break or continue
                return None
            if not computes_only(look, start):
                return None
        return [x.v if type(x) is Cell else x for x in f], signal

    def _merged(self, c, saved, then, orelse):
        """{slot: its value after the if} for the slots a branch changed (none where both
        returned: the frame goes), setting `signal`; or None."""
        (then, returned), (orelse, other) = then, orelse
        if (returned is None) != (other is None):
            return None
        if returned is not None:
            value = _select(c, returned[0], other[0])
            self.signal = None if value is _DIFFERENT else (value,)
            return None if value is _DIFFERENT else {}
        self.signal = None
        merged = {}
        for j, (before, a, b) in enumerate(zip(saved, then, orelse)):
            if j in self.local:
                continue
            before = before.v if type(before) is Cell else before
            if a is before and b is before:
                continue
            value = _select(c, a, b)
            if value is _DIFFERENT:
                return None
            merged[j] = value
        return merged


def computes_only(look, start):
    """Whether what the look ahead recorded from node `start` on may run on every iteration where
    the interpreter runs it on some: no step of CAN_FAIL, no INDEXED step by a staged index."""
    for node in look.nodes[start:]:
        op = node.op
        if op in CAN_FAIL or (op in INDEXED and node.parents[1] is not None):
            return False
    return True


def looking_ahead(interp, v):
    """The look ahead's trace, where one is running and v is a bool it staged; else None."""
    staging = getattr(interp, "staging", None)
    if not staging or type(staging[-1]) is not Lookahead or type(peek(v)) not in (bool, np.bool_):
        return None
    return staging[-1]


def both_operands(interp, op, left, right):
    """`left and right` / `left or right` in a look ahead, where left is a staged bool: right()
    computed too and the two combined by a staged LogicalAnd / LogicalOr, instead of a guard on
    left (an if on the result then runs both ways: BothWays). None where right may not run
    every time (it raises when run ahead, or does what computes_only refuses, or is no bool):
    the operator then short-circuits as written, and what right recorded is cut."""
    look = looking_ahead(interp, left)
    if look is None:
        return None
    from ..ops.compare import logical_and, logical_or
    start = len(look.nodes)
    try:
        r = right()
    except Exception:       # noqa: BLE001 (right runs as written where the interpreter runs it)
        r = None
    if r is None or type(peek(r)) not in (bool, np.bool_) or not computes_only(look, start):
        look.cut(start)
        return None
    return logical_and(left, r) if op == "and" else logical_or(left, r)


_DIFFERENT = object()       # two values no where can choose between


def _select(c, a, b):
    """a where c, else b, leaf by leaf, or _DIFFERENT where they differ other than in numbers and
    tensors of one kind."""
    if a is b:
        return a
    from ..ops.elementwise import where
    pa, sa = flatten_open(a)
    pb, sb = flatten_open(b)
    if len(pa) != len(pb) or not _same_spec(sa, sb):
        return _DIFFERENT
    parts = []
    for x, y in zip(pa, pb):
        if x is y or (not S.is_staged_leaf(x) and _same_static(x, y)):
            parts.append(x)
        elif S.is_staged_leaf(x) and S.is_staged_leaf(y) and _key(x) == _key(y):
            parts.append(where(c, x, y))
        else:
            return _DIFFERENT
    return unflatten(sa, parts)


def _snapshot(f):
    """A frame's slots and what the Cells among them hold, for _restore."""
    return list(f), [(c, c.v) for c in f if type(c) is Cell]


def _restore(f, snapshot):
    """Put a frame and the Cells it held back as a snapshot has them."""
    slots, cells = snapshot
    f[:] = slots
    for cell, v in cells:
        cell.v = v


def _set(f, j, value):
    """Give frame slot j a value (the Cell's contents, where the slot holds a Cell)."""
    if type(f[j]) is Cell:
        f[j].v = value
    else:
        f[j] = value


def declared(blocks):
    """The frame slots of the names declared in these blocks (an if's branches: a Block, an If
    for `else if`, or None) and in blocks nested in them: the branches' own variables, gone
    after the if."""
    stmts = [s for b in blocks if b is not None for s in (b.stmts if type(b) is Block else [b])]
    return {b.slot for s in _statements(stmts) for b in getattr(s, "bindings", None) or ()
            if getattr(b, "kind", None) == "local"}


# steps a branch not taken could fail at on a later iteration, raising in the compiled loop what
# the interpreter never runs: a guard (the branch decides by a value), an effect, a user's or
# Python's code, ints divided, class indices; and INDEXED steps whose index (their second
# argument) is a staged int, which may fall out of range. Other indexing keeps its key among
# its options, checked when it was staged and the same on every iteration.
CAN_FAIL = frozenset({"Guard", "Effect", "CustomVjp", "HostCall", "ClassIndices", "CrossEntropy", "FloorDiv",
                      "Mod"})
INDEXED = frozenset({"Row", "RowAdd"})


class Body:
    """A loop body staged once: its program P (state -> next state), compiled code, and its pullback Q.

    The inputs of P are the loop variable, then the state leaves; its outputs, the state leaves.
    `diff[j]` says whether leaf j takes a cotangent (a float or float tensor). Under reverse mode
    the forward loop runs P' and the reverse loop B, Q split in two (dsl/jit/split.py), where Q
    splits; else the reverse loop runs Q, which computes each iteration's forward again."""

    __slots__ = ("forward", "name", "diff", "changed", "key", "where", "user_rules", "ran", "_code", "_back",
                 "_back_code", "_split", "_jvp", "_batched", "_driver", "__weakref__")

    def __init__(self, program, name, diff, key, where):
        self.forward = program
        self.name = name        # of its compiled code
        self._code = None
        self.diff = diff
        # whether the body changes leaf j (else its output is its input, the same on every iteration)
        self.changed = tuple(r != s for r, s in zip(program.out_refs, program.inputs[1:]))
        self.key = key          # the loop statement (what an unrolled retry writes out)
        self.where = where      # its line, for messages
        # whether P runs a user's derivative rule (custom_vjp), under which the pullback of P's jvp
        # is not the jvp of P's pullback (mixed derivatives of a custom rule need not be symmetric)
        self.user_rules = any(step[1] in USER_CODE for step in program.steps)
        self.ran = 0            # the iterations a while loop's last run made (Roller.roll_while reads it)
        self._back = self._back_code = None
        self._split = None      # (P' as Hoisted, B, {wanted: Hoisted B for them}), False where Q does
        #                         not split, None: not tried
        self._jvp = None        # the Body of P's jvp (jvp_body), False where it does not stage
        self._batched = {}      # (which leaves are batched, batch size) -> the Body of vmap(P)
        self._driver = None     # P's loop over items compiled whole (Driver), once a loop runs without a history

    @property
    def code(self):
        """P's code for one iteration, compiled when first needed (the loop runs compiled whole:
        this runs an iteration that loop stops at)."""
        if self._code is None:
            self._code = compile_program(self.forward, self.name)
        return self._code

    def driver(self):
        """P's loop (see Driver): its inputs the item and the state."""
        if self._driver is None:
            self._driver = Driver(self.forward, len(self.forward.inputs) - 1, self.name)
        return self._driver

    def run(self, items, state, kept):
        """The iterations on plain values, by the compiled code (appending each starting state to
        `kept`, a History, unless it is None, and what the split pullback keeps of each); the final
        state. `items` None: a while loop's, until a guard fails."""
        if items is None:
            return self._run_while(state, kept)
        parts = self._split_at(items[0], state) if kept is not None and items else None
        try:
            if parts is not None:
                forward = parts[0]
                fixed = forward.prelude([items[0], *state])
                return forward.driver().run(forward, items, state, fixed, kept, kept.residuals)
            return self.driver().run(self, items, state, (), kept, None)
        except S.GuardFailed as failed:
            raise LoopGuardFailed(self, failed) from None

    def _run_while(self, state, kept):
        """Iterations until one goes another way than P was staged (a guard fails: the condition
        turned false, a `break` is taken): the state that iteration started from, which the
        statement, as written, goes on from. Each iteration is a step of the run's limits."""
        parts = self._split_at(0, state) if kept is not None else None
        if parts is not None:
            fixed = parts[0].prelude([0, *state])
            self.ran, state = parts[0].driver().run_while(parts[0], state, fixed, kept, kept.residuals, self)
            return state
        self.ran, state = self.driver().run_while(self, state, (), kept, None, self)
        return state

    def count_step(self):
        """One iteration of a while loop, a step of the run's limits (a budget, a timeout), as
        the interpreter counts it: a rolled loop that never ends is stopped too."""
        limits = self.key.interp.limits
        steps = limits.steps = limits.steps + 1
        if steps >= limits.next_check:
            limits.check(self.key.span)

    def jvp_body(self, item, state, tangents):
        """The Body of P's jvp, staged once from these values: (item, state..., tangents of the
        float leaves...) -> (next state..., next tangents...); None where it does not stage."""
        if self._jvp is None:
            self._jvp = False
            trace, forward = S.StageTrace(derived=True), ForwardTrace()    # forward: the higher level
            args = [trace.box(peek(v), "Arg", (), (), None, None) for v in (item, *state, *tangents)]
            n = len(state)
            inputs = [args[0], *with_tangents(args[1:n + 1], self.diff, args[n + 1:], forward, "Tangent")]
            try:
                outs = S.run(self.forward, inputs)
            except S.GuardFailed:
                return None
            values, ts = split_tangents(outs, self.diff, forward)
            program = S.program_of(trace, args, (*values, *ts))
            diff = self.diff + (True,) * len(ts)
            self._jvp = Body(program, "loop_body_jvp", diff, self.key, self.where)
        return self._jvp or None

    def batch_body(self, item, state, batched, size):
        """The Body of vmap(P) for a batch of `size`, staged once from these values: (item,
        state...) -> next state, the leaves `batched` marks (a fixed point of P: see loops.py)
        carrying the batch on axis 0. It raises Unbatchable (vmap runs per example) where the
        examples go different ways in P (a batched value decides its control flow)."""
        key = (batched, size)
        found = self._batched.get(key)
        if found is None:
            from ..autodiff.vmap import replay_leaves, spread_where
            trace = S.StageTrace(derived=True)
            args = [trace.box(peek(v), "Arg", (), (), None, None) for v in (item, *state)]
            values, reached = replay_leaves(self.forward, args, (False, *batched))
            # a leaf the body sets to the same value for every example (a constant) keeps its batch axis
            values = spread_where(values, batched, reached, size)
            program = S.program_of(trace, args, tuple(values))
            found = self._batched[key] = Body(program, "loop_body_batched", self.diff,
                                              self.key, self.where)
        return found

    def _split_at(self, item, state):
        """The split pullback (staged from this iteration with zero cotangents), or None."""
        if self._split is None:
            self._split = False
            cts = [zero_of(x) for x, d in zip(state, self.diff) if d]
            q = stage_pullback(self, item, list(state), cts)
            parts = split(self.forward, q) if q is not None else None
            if parts is not None:
                kept, back = parts
                fixed = [s for s, c in zip(self.forward.inputs[1:], self.changed) if not c]
                self._split = (Hoisted(kept, fixed, "loop_forward"), back, {})
        return self._split or None

    def _reverse(self, wanted):
        """B, compiled, computing only the cotangents wanted and those of the leaves the body
        changes (which carry the others' from one iteration to the one before)."""
        key = None if wanted is None else tuple(wanted)
        forward, back, compiled = self._split
        found = compiled.get(key)
        if found is None:
            if key is not None:
                back = needed_only(back, [w or c for w, c, d in zip(key, self.changed, self.diff) if d])
            # fixed on every iteration: the cotangents passed through, and what the forward kept
            # of its own fixed values
            kept_refs = forward.source.out_refs[len(self.forward.out_refs):]
            fixed = [c for r, c in zip(back.out_refs, cotangents(back)) if r == c]
            fixed += [b for b, r in zip(back.inputs, kept_refs) if r in forward.invariant]
            found = compiled[key] = Hoisted(back, fixed, "loop_reverse", checks_can_wait(back))
        return found

    def back(self, items, kept, cts, wanted=None):
        """The cotangents of the first iteration's starting state from those of the last one's result,
        through the pullback staged once (plain values; `kept`: each iteration's starting state;
        `wanted`: which state leaves' cotangents are read, None: all)."""
        if not items:
            return list(cts)
        residuals = getattr(kept, "residuals", ())
        fixed = ()
        if self._split and len(residuals) == len(items):
            reverse = self._reverse(wanted)
            fixed = reverse.prelude([*residuals[-1], *cts])
            if reverse.fast is not None:
                # the whole loop without checks; anything amiss (a result not finite, an iteration
                # the code cannot vouch for) runs it again below, each iteration checked
                done, ct, failed = reverse.fast(reversed(residuals), cts, fixed, None, None)
                if failed is None and all(finite(c) for c in ct):
                    return list(ct)
            program, code = reverse.program, reverse.code
        else:
            residuals = None
            if self._back is None:
                self._back = stage_pullback(self, items[-1], kept[-1], cts)
                if self._back is not None:
                    self._back_code = compile_program(self._back, "loop_pullback")
            program, code = self._back, self._back_code
        ct = list(cts)
        for k in range(len(items) - 1, -1, -1):
            if program is not None:
                try:
                    inputs = [*residuals[k], *ct, *fixed] if residuals is not None else [items[k], *kept[k], *ct]
                    ct = run_code(program, code, inputs)
                    continue
                except S.GuardFailed:
                    pass        # the pullback read a value (a rule's branch): this iteration, exactly
            ct = pullback(self, items[k], kept[k], ct)
        return ct


class Hoisted:
    """A program run once per iteration, compiled, with what reads only its fixed inputs (the
    same on every iteration) moved to a prelude run once per loop (split.hoisted). With `fast`
    (a reverse loop B: inputs an iteration's residuals then the cotangents, outputs the
    cotangents), also the whole loop compiled without checks, where the caller may check its
    results instead (`fast`: see Body.back)."""

    __slots__ = ("source", "program", "name", "fast", "invariant", "_code", "_prelude", "_prelude_code", "_driver")

    def __init__(self, program, fixed, name, fast=False):
        self.source = program
        parts = hoisted(program, fixed)
        if parts is None:
            self.program, self._prelude, self.invariant = program, None, set(fixed)
        else:
            self._prelude, self.program, self.invariant = parts
            self._prelude_code = compile_program(self._prelude, name + "_prelude")
        self.name = name
        self._code = self.fast = self._driver = None
        planned = plan(self.program) if fast else None       # one plan for both compilations
        if fast and outputs_checked(self.program, planned):
            m = len(program.out_refs)
            self.fast = compile_loop(self.program, len(program.inputs) - m, m, name + "_loop", checks=False,
                                     planned=planned)

    @property
    def code(self):
        """The program's code for one iteration (compiled when first needed: a forward loop runs
        it only for an iteration its Driver stops at)."""
        if self._code is None:
            self._code = compile_program(self.program, self.name)
        return self._code

    def prelude(self, inputs):
        """The moved values, from one iteration's inputs."""
        if self._prelude is None:
            return ()
        return run_code(self._prelude, self._prelude_code, inputs)

    def driver(self):
        """The forward loop P' (see Driver): its inputs the item, the state and the moved values."""
        if self._driver is None:
            self._driver = Driver(self.program, len(self.source.inputs) - 1, self.name)
        return self._driver


class Driver:
    """A body's loop compiled whole (codegen.compile_loop): one call for the loop instead of one
    per iteration (a third of a rolled loop's time went to the calls). An iteration the compiled
    loop stops at (a guard, a result it cannot vouch for) runs as run_code runs it, by the
    owner's code for one iteration (exactly, or raising what it raises), and the loop goes on."""

    __slots__ = ("program", "n", "name", "_loops")

    def __init__(self, program, carried, name):
        self.program = program      # inputs: the item, `carried` state leaves, fixed values
        self.n = carried
        self.name = name
        self._loops = {}            # (keeps a history, keeps extra outputs) -> compiled loop

    def _loop(self, kept, extra):
        """The compiled loop appending to `kept` and `extra` where they are not None."""
        key = (kept is not None, extra is not None)
        loop = self._loops.get(key)
        if loop is None:
            loop = self._loops[key] = compile_loop(self.program, None, self.n, self.name + "_loop", *key)
        return loop

    def _step(self, owner, item, state, fixed, kept, extra):
        """One iteration by the owner's code for one (Body or Hoisted): the state after it."""
        out = run_code(self.program, owner.code, [item, *state, *fixed])
        if kept is not None:
            kept.append(state)
        if extra is not None:
            extra.append(out[self.n:])
        return out[:self.n]

    def run(self, owner, items, state, fixed, kept, extra):
        """The state after the body ran once per item (appending each iteration's starting state to
        `kept` and its outputs after the state to `extra`, where they are not None)."""
        loop, start = self._loop(kept, extra), 0
        while True:
            done, state, failed = loop(items[start:] if start else items, state, fixed, kept, extra)
            if failed is None:
                return list(state)
            start += done
            if isinstance(failed, S.GuardFailed) and not loop.inexact:
                raise failed        # as run_code would raise it (the compiled loop checks what it checks)
            state = self._step(owner, items[start], state, fixed, kept, extra)
            start += 1

    def run_while(self, owner, state, fixed, kept, extra, body):
        """A while loop's iterations (item k the k-th) until a guard fails: (how many ran, the state
        the failing one started from). Each is a step of the run's limits: the compiled loop runs
        at most until the limits' next look (Body.count_step)."""
        loop, limits, k = self._loop(kept, extra), body.key.interp.limits, 0
        while True:
            chunk = limits.next_check - limits.steps
            chunk = int(chunk) if chunk < 2 ** 62 else 2 ** 62
            done, state, failed = loop(range(k, k + max(chunk, 1)), state, fixed, kept, extra)
            k += done
            limits.steps += done
            if failed is not None:
                if isinstance(failed, S.GuardFailed) and not loop.inexact:
                    return k, state     # the iteration that goes another way (run_code would raise it too)
                try:
                    state = self._step(owner, k, state, fixed, kept, extra)
                except S.GuardFailed:
                    return k, state
                k += 1
                limits.steps += 1
            if limits.steps >= limits.next_check:
                limits.check(body.key.span)


# ---------------------------------------------------------------- the frame as leaves
_LEAF = object()        # where a state leaf goes in a slot's description


def frame_leaves(f, skip, counters=frozenset()):
    """The numbers and tensors held by a frame's variables (boxed structures opened), and how to
    put new ones back: per slot, None (skipped) or (is a Cell, flatten description, statics).
    `counters`: the positions (slot, part) of ints the loop changes, which are state leaves too."""
    leaves, layout = [], []
    for j, v in enumerate(f):
        if j in skip:
            layout.append(None)
            continue
        cell = type(v) is Cell
        parts, spec = flatten_open(v.v if cell else v)
        statics = []
        for k, x in enumerate(parts):
            if S.is_staged_leaf(x) or (j, k) in counters:
                leaves.append(x)
                statics.append(_LEAF)
            else:
                statics.append(x)
        layout.append((cell, spec, statics))
    return leaves, layout


def write_frame(f, layout, skip, leaves, changed):
    """Put state leaves back into a frame's variables (only the slots with a changed leaf, if given)."""
    it = iter(zip(leaves, changed or [True] * len(leaves)))
    for j, entry in enumerate(layout):
        if entry is None:
            continue
        _, spec, statics = entry
        parts, touched = [], False
        for s in statics:
            if s is _LEAF:
                x, c = next(it)
                parts.append(x)
                touched = touched or c
            else:
                parts.append(s)
        if not touched:
            continue
        _set(f, j, unflatten(spec, parts))


def _changed_ints(before, after):
    """The positions (slot, part) of the ints that differ between two frame layouts, where
    nothing else does (the same structures, strings and bools), else None."""
    if len(before) != len(after):
        return None
    changed = set()
    for j, (x, y) in enumerate(zip(before, after)):
        if x is None or y is None:
            if x is not y:
                return None
            continue
        if not _same_slot(x, y):
            return None
        for k, (s, t) in enumerate(zip(x[2], y[2])):
            if not _same_static(s, t):
                if type(s) is not int or type(t) is not int:
                    return None
                changed.add((j, k))
    return frozenset(changed) or None


def same_layout(a, b):
    """Whether two frames' descriptions agree: the same structures and the same non-state values."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x is None or y is None:
            if x is not y:
                return False
            continue
        if not _same_slot(x, y) or not all(map(_same_static, x[2], y[2])):
            return False
    return True


def _same_slot(x, y):
    """Whether two slots' descriptions hold the same structure (both a Cell or not, the same
    flatten description, as many parts)."""
    return x[0] == y[0] and _same_spec(x[1], y[1]) and len(x[2]) == len(y[2])


def _same_static(s, t):
    """Whether two parts of a slot agree: both state leaves, or the same non-state value."""
    if (s is _LEAF) != (t is _LEAF):
        return False
    return s is t or (type(s) is type(t) and type(s) in (int, str, bool) and s == t)


def _same_spec(a, b):
    """Whether two flatten descriptions describe the same structure."""
    if a is None or b is None:
        return a is b
    (ta, ka), (tb, kb) = a, b
    if type(ta) is not type(tb) or len(ka) != len(kb):
        return False
    if type(ta) is dict and list(ta) != list(tb):
        return False
    if hasattr(ta, "sdef") and ta.sdef is not tb.sdef:
        return False
    return all(_same_spec(x, y) for x, y in zip(ka, kb))


def mixes_custom_rules(body, forward, reverse):
    """Whether the body runs a custom_vjp under reverse mode inside forward mode: the reverse pass
    would read the forward loop's history (see primitives/loops.py, _loop_jvp), so it is written out."""
    return body.user_rules and any(r.level > t.level for r in reverse for t in forward)


def write_back(f, layout, skip, state, out, body):
    """Put the final state of a Loop step over the body (`out`) into the frame's variables."""
    from ..ops.structs import unpack
    final = unpack(out) if type(out) is Box else out
    changed = body.changed
    write_frame(f, layout, skip, [x if c else old for x, old, c in zip(final, state, changed)], changed)


def _eager(roller, reads):
    """The roller's EagerLoops (imported here: that module builds on this one)."""
    from .eager_loops import EagerLoops
    return EagerLoops(roller, reads)


def _modes(state, top):
    """The forward and the reverse traces of the state's values, or None where the loop is not
    rolled: a state not staged by `top`, two reverse levels, or a batched value."""
    reverse, forward, staged = set(), set(), False
    for x in state:
        while type(x) is Box:
            trace = x.trace
            if trace is top:
                staged = True
            elif trace.kind is FORWARD:
                forward.add(trace)
            elif trace.kind is REVERSE:
                reverse.add(trace)
            elif trace.kind is not STAGE:
                return None
            x = x.v
    if not staged or len(reverse) > 1:
        return None
    return forward, reverse


__all__ = ["Roller", "BothWays", "both_operands", "looking_ahead", "declared", "exits", "MIN_ITEMS"]
