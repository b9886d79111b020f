"""Loops jit stages once: a `for` over a range, or a `while`, recorded as one Loop step
(dsl/core/primitives/loops.py).

Without this, staging a 1,000-step loop records 1,000 copies of its body (and,
under grad, of its reverse pass), and compiles all of them: staging and
compiling take 30 times as long as running the loop. A rolled loop is staged
from its second iteration:

1. The first iteration runs as written (it may turn ints into floats, or
   declare the body's variables: the state settles); where no derivative is
   taken of a `for` loop, its state is settled already and its body draws
   nothing without a key, the look ahead is at the first iteration and the
   Loop step runs them all (Roller._rolled_whole).
2. The second is run once *ahead*, on a fresh staging trace, with every number
   and tensor of the function's variables (the loop's state; not those the body
   declares, which each iteration sets before it reads them) replaced by an
   argument of that trace: the body as a program P from one state to the next
   (a Body: dsl/transform/jit/loop_body.py; the frame as leaves: dsl/transform/jit/frames.py).
   Nothing it does escapes: an effect (print, the clock) or a value of an
   outer trace met by the body (a closure's captured value) abandons the look
   ahead (a draw from the interpreter's generator is performed and the generator
   put back, outside a derivative: Lookahead.effect), and so does anything that is not the same before and after (a
   function, a tensor whose shape grows, a `break`), except ints: where only ints
   changed (counters), it looks ahead again with them staged as state too.
3. Otherwise the loop's remaining iterations are one Loop step over the state,
   which runs P over the items (the loop compiled whole: loop_body.Driver), and the state is
   written back.

An `if` whose condition is staged runs both ways in the look ahead where both
branches only compute (BothWays, dsl/transform/jit/both_ways.py): its variables become `where`s of the
condition, not a guard. Where a later iteration fails one of P's guards while
jit stages, jit stages the function again with that loop written out
(dsl/transform/jit/jit.py); a compiled call that fails one stages again.

A `while` loop is rolled the same way, P being one iteration: its condition,
then its body (which may hold a `break` or a `continue`, not taken on the
iteration looked ahead). Its Loop step has no items: it runs P until one of
P's guards fails (the condition turned false, a `break` is taken, a branch
went another way, a counter reached its bound), and the statement goes on as
written from the state that iteration started from, so that what follows (the
last test of the condition, the iteration that leaves) is recorded with its
own guards. One recording then serves every trip count; before, each trip
count was another path, staged again (`while err > tol`). A while loop whose
condition is false on the iteration looked ahead at (it ran once) is staged
from the state its run began with, where the condition held, and its Loop step
(not a Scan: under two reverse levels it is written out) runs no iterations from
here: an adaptive solver's loop per output time, one step long on some of them,
stays one step of the loop around it. A while loop
whose runs stopped early three times in one staging (within MIN_ITEMS
iterations: a while loop inside a loop written out) is written out for the rest
of it: its look ahead costs more than it saves.

Loops are rolled while jit stages and while vmap looks at a function (vmap
batches the Loop step by its rule: the loop of the batched body), under at most
one reverse-mode level and any number of forward-mode ones (a jvp of the loop
is the loop of its body's jvp: see dsl/core/primitives/loops.py), and, while jit
stages, a `for` loop under two reverse levels and no forward one (grad of grad:
dsl/core/primitives/loop_twice.py), or under more (three reverse levels, or two and a
forward one, or two in a while loop or where vmap looks; or a body with a custom rule under
forward over reverse), as one Scan step (dsl/core/primitives/scan.py, scan_body.py), whose
rules give Scans again at any depth. A loop in the body being looked ahead is rolled the same
way, a step of that body (`wanted`: a `for` of NESTED_MIN_ITEMS iterations, or of MIN_ITEMS in
a Scan's body; a `while` once its count went another way on a later iteration:
loop_modes.retry), so a nest of loops stages each body once. Everything else is written out,
as is every loop whose state holds nothing being staged. Outside jit and vmap,
the interpreter rolls a loop under a derivative the same way, keeping the staged body for its
next runs (dsl/transform/jit/eager_loops.py).
"""


from ...core import stage as S
from ...core.primitives.loops import LoopGuardFailed, _loop_kernel, state_diff
from ...core.tape import Box, peek
from .eager_loops import EagerLoops
from .lookahead import Lookahead, NotRollable
from .frames import changed_ints, foreign_slots, frame_leaves, restore, same_layout, set_slot, snapshot, write_frame
from .signatures import _key
from .loop_body import Body
from .loop_modes import mixes_custom_rules, modes, roll_inner, write_back
from .scan_body import scan_loop

_PROBE = -(1 << 70)      # an int no variable holds (small ints are shared objects)

# what a while loop's iteration (statements.py) gives where its condition is false: the look ahead
# then has no iteration to stage from here, and stages the one its run began with (Roller.stage_body)
ENDED = object()

# from this many reverse levels a loop is a Scan step (scan_body.py); two levels keep their own walks
# (loop_twice.py), which read what the forward loop kept instead of computing it again: measured
# 1.4-1.7x faster on later calls than a Scan of the same loop
SCAN_FROM = 3
MIN_ITEMS = 3       # a first iteration as written, the one looked ahead, and at least one more
# a `for` inside a rolled body is rolled from this many iterations: measured on the numpy
# backend, a short one runs about 2x faster written out in the body (a `while` of a few
# iterations, 3-4x), and its copies stage in a tenth of a second below this; in a Scan's body
# (XLA's, which compiles copies slowly) from MIN_ITEMS. An inner `while` is rolled once its
# count differs from one iteration of the outer loop to the next (loop_modes.retry)
NESTED_MIN_ITEMS = 100
VMAP_MIN_ITEMS = 32     # measured: below about 30 iterations, an eager vmap call writes a loop out faster


def _other_kind(x, y):
    """Whether two values of one state leaf differ in shape or type (two ints never do: a counter)."""
    return _key(x) != _key(y) and not (type(peek(x)) is int and type(peek(y)) is int)


class Roller:
    """Runs one loop statement while jit stages, rolled where it can be: a `for` over a range
    (`bind` sets its variable), or a `while` (`bind` is None: `body` runs one iteration, the
    condition and then the body, and gives ENDED where the condition is false)."""

    def __init__(self, body, bind, interp, where, scope, span=None, reads=(), body_locals=frozenset(), parts=None):
        self.body = body
        self.parts = parts      # a while loop's (condition, body), for roll_untaken
        self.forcing = False    # the look ahead runs the body whatever the condition says (roll_untaken)
        self.bind = bind
        self.interp = interp
        self.where = where
        self.scope = scope      # the function's frame layout (resolver.FunctionScope), for names
        self.span = span        # a while loop's condition: where its compiled iterations count steps
        # the slots of the variables the body declares: each iteration sets them before it reads
        # them and nothing after the loop reads them, so they are not the loop's state (a loop
        # that carried them would carry, under grad, their always-zero cotangents back)
        self.body_locals = frozenset(body_locals)
        # (id of a staging trace, how many of this while loop's runs in it stopped within
        # MIN_ITEMS iterations): a loop run again and again as written (in a loop jit writes
        # out) is rolled three times at most per staging
        self.short = (None, 0)
        self.stopped = None     # where a while loop's last rolled run stopped (roll_while)
        # the loop outside jit, under a derivative (dsl/transform/jit/eager_loops.py); `reads`: the
        # module-level Cells the enclosing function reads
        self.eager = EagerLoops(self, reads)

    def _written_out(self, why):
        """Note why this loop is written out, for jit's explain (nothing: the caller returns it)."""
        self._note(f"is written out, one copy per iteration: {why}")

    def _note(self, what):
        """Say, with jit's explain, what became of this loop (`what` follows "the loop at LINE")."""
        notes = getattr(self.interp, "loop_notes", None)
        if notes is not None:
            notes.append((self.where, what))

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
        if type(top) is Lookahead:
            if top.flat:
                return False
            # a loop in the body of a loop being rolled: a step of that body, as it is outside
            # (NESTED_MIN_ITEMS); a `while` is written out there until its count goes another
            # way on a later iteration (loop_modes.retry), then rolled there however short its
            # runs: written out, its count would make that loop go another way again
            if items is None:
                if self in self.interp.nested_whiles:
                    return True
                top.whiles.append(self)
                return False
            return len(items) >= (MIN_ITEMS if _scans(staging) else NESTED_MIN_ITEMS)
        if type(top) is not S.StageTrace:
            return False
        if top.dry and not any(type(t) is S.StageTrace and not t.dry for t in staging):
            # vmap's look at a function, outside jit (once per signature: it keeps the program),
            # where a look ahead and its compilations pay only for a long loop
            return items is not None and len(items) >= VMAP_MIN_ITEMS
        if items is None:
            return self._few_short_runs(staging)
        return len(items) >= MIN_ITEMS

    def _few_short_runs(self, staging):
        """Whether this while loop stopped within MIN_ITEMS iterations fewer than three times in
        this staging (its runs in the look ahead of an outer loop count for that staging)."""
        return self.short[0] != _staging_id(staging) or self.short[1] < 3

    def __call__(self, f, items):
        """Run the whole loop, each iteration a step of the run's limits (a rolled loop's count
        them as they run: loop_body.Driver)."""
        bind, body = self.bind, self.body
        if self._rolled_whole(f, items):
            return
        self.count_step()
        bind(f, items[0])
        body(f)
        if not self._rolled(f, items):
            for item in items[1:]:
                self.count_step()
                bind(f, item)
                body(f)

    def count_step(self):
        """One iteration as the interpreter counts it (a budget, a timeout), at the loop's line."""
        limits = self.interp.limits
        steps = limits.steps = limits.steps + 1
        if steps >= limits.next_check:
            limits.check(self.span)

    def _bound(self, f, item):
        """Bind the loop's variable to item: the frame's slots that changed (the variable's)."""
        before = list(f)
        self.bind(f, item)
        return {j for j in range(len(f)) if f[j] is not before[j]}

    def _rolled_whole(self, f, items):
        """Run every item as one Loop step (a Scan on XLA), where jit stages (not a look ahead),
        no derivative is taken of the loop, its state is settled before its first iteration and
        its body draws nothing without a key: a first iteration written out holds guards of its
        own, which a later call that goes another way there fails (a sampler's accept step on a
        new key staged the function again on every other call). A keyless draw keeps the first
        iteration written out: staged from it, the numbers differed (found by the jit fuzzer)."""
        staging = self.interp.staging
        if not staging or type(staging[-1]) is not S.StageTrace or staging[-1].dry:
            return False
        notes = getattr(self.interp, "loop_notes", None)
        said = len(notes) if notes is not None else 0
        skip = self._bound(f, _PROBE)     # a fresh int: the loop variable's slot is the one that changes
        self.bind(f, items[0])
        found = modes(frame_leaves(f, skip | self.body_locals)[0], staging[-1])
        # under a derivative the first iteration stays written out: the Loop's rules would sum
        # the cotangents of what the loop reads in another order than the interpreter does
        if found is not None and not any(found) \
                and self._roll(f, skip | self.body_locals, items[0], items, keyless=False):
            self.bind(f, items[-1])
            return True
        if notes is not None:       # why it was not: the loop as usual says it if it applies
            del notes[said:]
        return False

    def _rolled(self, f, items):
        """Run items[1:] as one Loop step, if the body stages once for all of them (else False),
        while jit or vmap stages, or outside them as EagerLoops does."""
        skip = self._bound(f, items[1])
        roll = self._roll if self.interp.staging else self.eager.roll
        if not roll(f, skip | self.body_locals, items[1], items[1:]):
            return False
        self.bind(f, items[-1])
        return True

    def roll_while(self, f, start=None):
        """Run a while loop's iterations from here as one Loop step, until one goes another way
        than the one staged (its condition turns false, a `break` is taken): the statement then
        goes on as written from the state that iteration started from. `start`: the frame's
        snapshot before the first iteration (see stage_body). True where the run stopped at the
        condition of a while loop written out in the body (a line search that took no step on
        the iteration looked ahead at, and some on a later one): that loop is rolled in the body
        from now on, and the statement rolls again after its next iteration."""
        if not self.interp.staging:
            self.eager.roll(f, set(self.body_locals), 0, None)
            return False
        top = _staging_id(self.interp.staging)
        self.stopped = None
        if (self._roll(f, set(self.body_locals), 0, None, start) or 0) < MIN_ITEMS:
            trace, count = self.short
            self.short = (top, count + 1 if trace == top else 1)
        return self.stopped is not None and roll_inner(self.stopped, self.interp) is not None

    def mark(self):
        """Where a while loop's first test begins in the look ahead it runs in, when it is rolled
        in the body of a loop being rolled (interp.nested_whiles); else None (see roll_untaken)."""
        staging = self.interp.staging
        top = staging[-1] if staging else None
        if type(top) is not Lookahead or self not in self.interp.nested_whiles or self.parts is None:
            return None
        return len(top.nodes)

    def roll_untaken(self, f, mark):
        """Stage a while loop whose condition was false the first time it was tested (`mark`: the
        look ahead's length before that test), in the body of a loop being rolled, where it is
        rolled: a line search that took no step on the iteration looked ahead at. The test is
        cut, the body staged from this state as if the condition held, and its Loop step runs
        no iterations from here. True where the test was cut (the statement makes it again, on
        the Loop's state, or as written where the body did not stage)."""
        top = self.interp.staging[-1]
        if any(type(x) is Box and x.trace.level > top.level for x in frame_leaves(f, set())[0]):
            return False        # a derivative's value: what the test recorded on its trace stays
        if any(node.op in ("Effect", "Arg") for node in top.nodes[mark:]):
            return False        # the test drew a number: the look ahead holds it (Lookahead.drawn)
        top.cut(mark)
        self.forcing = True
        try:
            self._roll(f, set(self.body_locals), 0, None)
        finally:
            self.forcing = False
        return True

    def _forced(self, f):
        """One iteration whatever the condition says (roll_untaken's look ahead): the one guard
        its test recorded, false here, expects true (the body runs only where it holds)."""
        cond, body = self.parts
        look = self.interp.staging[-1]
        n = len(look.nodes)
        if cond(f) is not False:
            raise NotRollable("its condition holds on the iteration looked ahead at")
        guards = [x for x in look.nodes[n:] if x.op == "Guard"]
        if len(guards) != 1:
            raise NotRollable("its condition is not one test of a value the body computes")
        guard = guards[0]
        guard.v = type(guard.v)(True)
        look.seen.discard(guard.parents[0].g)      # read again, it is guarded again
        return body(f)

    def _roll(self, f, skip, item, items, start=None, keyless=True):
        """Run the loop from the frame's state as one Loop step over `items` (None: until a guard
        of the body fails); True, or the number of iterations run where `items` is None, or False
        where the body does not stage once for all of them. `start`: roll_while's; `keyless`:
        whether the body may draw without a key (_rolled_whole's may not)."""
        top = self.interp.staging[-1]
        if type(top) is Lookahead:      # a loop in the body of a loop being rolled
            skip = skip | foreign_slots(f, top)
        state, layout = frame_leaves(f, skip)
        found = modes(state, top)
        if found is None:
            return self._written_out("its variables hold a batched value, or nothing jit stages")
        forward, reverse = found
        nested = len(reverse) >= 2
        # three reverse levels or more (SCAN_FROM), or two and a forward one, or two in a while
        # loop or where vmap looks at the function: a Scan (scan_body.py)
        deep = len(reverse) >= SCAN_FROM or (nested and (bool(forward) or items is None or top.dry))
        # the XLA backend lowers Scan, not the numpy backend's loop walks: every `for` loop is one
        scans = items is not None and _scans(self.interp.staging)
        # a keyless draw rolls: in a Scan (a `for` loop under forward mode, two reverse levels or
        # more, or on XLA; a `while` loop under two reverse levels, or a forward and a reverse one,
        # for the count it makes from here), as an input of the body, each iteration's numbers drawn
        # before the loop; under one reverse level or none, or forward mode alone, in the body
        # (Lookahead.effect)
        in_body = keyless and not nested and not scans and not (forward and reverse)
        # in the body of a loop being rolled under a derivative (a look ahead that is derived) the
        # state holds no derivative's boxes, but the outer loop's rules differentiate this loop's
        # body: its custom rules are kept (a body staged without them gave their function's own
        # derivative)
        differentiated = bool(forward or reverse) or (type(top) is Lookahead and top.derived)
        as_data = (deep or scans or bool(forward) or nested) if items is not None else not in_body
        if deep:
            # a while loop as a Scan is not staged from its start: the Scan's rules gave other second
            # derivatives where it ran no iterations when staged and some on a later call (found by the
            # XLA fuzzer, jit(grad(grad(f))))
            start = None
        staged = self.stage_body(f, item, skip, state, layout, differentiated, draws=in_body, items=items,
                                 as_data=as_data, scans=deep or scans, start=start)
        if staged is not None and (staged[0].draws or staged[0].drawn) \
                and any(s[1] in ("Loop", "Scan") for s in staged[0].forward.steps):
            # a body that draws without a key around a loop step: its forward-mode loop (the
            # draws staged as effects of P') gave other numbers where the body also called a
            # custom rule (found by the fuzzer): its loops are written out in it, as they were
            staged = self.stage_body(f, item, skip, state, layout, differentiated, draws=in_body, items=items,
                                     as_data=as_data, scans=deep or scans, flat=True, start=start)
        if staged is None:
            return False
        body, state, layout, _ = staged
        if type(top) is Lookahead and (body.draws or body.drawn):
            # the outer loop's body would hold this loop's draws in a step of its own, which its
            # rules and its look ahead's generator do not replay in order: the numbers would differ
            return self._written_out("it draws from the interpreter's random stream without a key inside "
                                     "another loop's body (a draw with key= rolls)")
        if body.drawn:
            deep = True
        # Loop's forward-over-reverse loop takes a custom rule to be the derivative of the function it
        # stands for; a Scan differentiates the body's own steps, the rule's too
        if not nested and mixes_custom_rules(body, forward, reverse):
            deep = True
        if nested and body.user_rules:
            # a Scan's pullback runs the body again: an outer reverse level would split the cotangent
            # of a custom rule's result between the two runs, which a rule that is not linear in its
            # cotangent (rule 14 of reference 6 asks that it be) turns into another answer
            return self._written_out("its body calls a custom_vjp or custom_jvp function, under two or more "
                                     "reverse levels")
        if deep or scans:
            write_back(f, layout, skip, state, scan_loop(body, items, state), body)
            if items is None and body.drawn:
                self._note(f"is one step over the {body.ran} iterations after its first: it draws without a key "
                           f"under two derivatives, so a call whose loop runs another number of times stages again "
                           f"(a draw with key= serves every number)")
            return True if items is not None else body.ran
        write_back(f, layout, skip, state, _loop_kernel(*state, body=body, items=items, history=False,
                                                        nested=nested), body)
        self.stopped = None if body.stopped is None else LoopGuardFailed(body, *body.stopped)
        return True if items is not None else body.ran

    def stage_body(self, f, item, skip, state, layout, differentiated, draws=False, as_data=False, items=None,
                   scans=False, flat=False, start=None):
        """The body staged by a look ahead from this frame, with the ints it changes (counters)
        staged as state too where it changes some: (Body, state, layout, counters), or None.
        `draws`, `as_data`: what becomes of a keyless draw in the body (Lookahead); `items`: the
        range the body runs over (None: not known, or a while loop's); `scans`, `flat`: Lookahead's.

        A while loop whose condition is false here already (it ran once: an adaptive solver's
        step that reaches the next output time) is looked ahead at from `start`, the frame before
        its first iteration, where the condition held, and runs from here as a Loop step of no
        iterations: one staging then serves any count, also in the body of a loop around it,
        where a count of one written out would make that loop go another way on a later iteration."""
        counters = frozenset()
        options = (draws, as_data, items, scans, flat)
        body = self._look_ahead(f, item, skip, state, layout, differentiated, counters, *options)
        if body is ENDED and start is not None:
            return self._from_start(f, start, item, skip, differentiated, options)
        if type(body) is frozenset:     # ints the body changes (counters): look again with them staged
            counters = body
            state, layout = frame_leaves(f, skip, counters)
            body = self._look_ahead(f, item, skip, state, layout, differentiated, counters, *options)
        if body is ENDED:
            return self._written_out("its condition is false on the iteration looked ahead at")
        return None if body is None else (body, state, layout, counters)

    def _from_start(self, f, start, item, skip, differentiated, options):
        """stage_body's staging from the frame `start` (a snapshot), with this frame's state: the
        same structures, shapes and types, or None."""
        now = snapshot(f)
        restore(f, start)
        try:
            first, layout = frame_leaves(f, skip)
            staged = self.stage_body(f, item, skip, first, layout, differentiated, *options)
        finally:
            restore(f, now)
        if staged is None:
            return None
        body, first, layout, counters = staged
        state, here = frame_leaves(f, skip, counters)
        if not same_layout(layout, here) or len(first) != len(state) or any(map(_other_kind, first, state)):
            return self._written_out("its condition is false on the iteration looked ahead at, and its "
                                     "variables changed shape or type since its first")
        return body, state, here, counters

    def _look_ahead(self, f, item, skip, state, layout, differentiated, counters, draws=False, as_data=False,
                    items=None, scans=False, flat=False):
        """Stage the second iteration on its own trace: its Body, or None where it cannot be one,
        or the positions of the ints it changes (when `counters`, those staged already, is empty):
        a counter is then staged as part of the state, unless a `for` body decides something by
        it (a while loop's stops where such a decision goes another way)."""
        # under grad, the loop's rule differentiates P
        look = Lookahead(derived=differentiated, draws=draws, as_data=as_data, scans=scans, flat=flat)
        saved = snapshot(f)
        counter = self.interp.limits.steps
        drawn = self.interp.rng.bit_generator.state     # the draws run ahead are drawn again
        item = look.box(item, "Arg", (), (), None, None)
        if type(items) is range:        # a row at the loop's variable is there on every iteration (both_ways)
            look.walk = (item, items)
        args = [look.box(peek(x), "Arg", (), (), None, None) for x in state]
        staging = self.interp.staging
        staging.append(look)
        try:
            write_frame(f, layout, skip, args, None)
            for j in skip - self.body_locals:        # the loop variable
                set_slot(f, j, item)
            try:
                left = self._forced(f) if self.forcing else self.body(f)
                if left is ENDED:
                    return ENDED
                if left is not None:
                    return self._written_out("the body leaves the loop")
                after, layout_after = frame_leaves(f, skip, counters)
            except NotRollable as why:
                return self._written_out(str(why))
            except Exception:       # noqa: BLE001 (the loop runs as written, and raises it there)
                return self._written_out("the body raised an error when run ahead")
        finally:
            staging.pop()
            restore(f, saved)
            self.interp.limits.steps = counter
            self.interp.rng.bit_generator.state = drawn
        if not same_layout(layout, layout_after) or len(after) != len(state):
            changed = None if counters else changed_ints(layout, layout_after)
            return changed or self._written_out(self._what_changed(layout, layout_after))
        for x, y in zip(state, after):
            if (type(y) is Box and y.trace is not look) or _other_kind(x, y):
                return self._written_out("a tensor of its variables changes shape or type from one "
                                         "iteration to the next")
        # the numbers a Scan's body draws are its last inputs (Body.drawn)
        program = S.program_of(look, [item, *args, *[d[0] for d in look.drawn]], tuple(after))
        # ints the body changes; one it passes through untouched (a layer's count of heads among
        # the parameters an optimizer steps) is the same on every iteration, and so is a guard on it
        counted = {a.g for a, x, y in zip(args, state, after) if type(peek(x)) is int and y is not a}
        read = {r for s in program.steps if s[0] == "guard" for r in s[2]}
        if self.bind is not None and (item.g in read or read & counted):
            # the body decides something by the loop variable or a counter: each iteration differs
            return self._written_out("the body decides something by the value of the loop variable or of "
                                     "an int it changes")
        body = Body(program, "loop_body", state_diff(state), self, self.where)
        body.drawn = tuple(d[1:] for d in look.drawn)
        body.inner_whiles = tuple(look.whiles)
        return body

    def _what_changed(self, before, after):
        """Why two frame layouts differ, naming the variable: a function stored in it, a
        structure that changes shape."""
        for j, (x, y) in enumerate(zip(before, after)):
            if x is None or y is None or same_layout([x], [y]):
                continue
            if _grown_tuple(x[1], y[1]):
                return (f"`{self.scope.slot_name(j)}` is a tuple that grows on every iteration (t = t + (x,)): "
                        f"write the items into a tensor made before the loop (let t = zeros((n, ...)), then "
                        f"t[i] = x in the loop), which is staged once")
            return (f"`{self.scope.slot_name(j)}` holds something other than numbers and tensors that "
                    f"changes from one iteration to the next (a function, a string, a structure of "
                    f"another shape)")
        return "a variable changes from one iteration to the next"


def _scans(staging):
    """Whether a `for` loop met now becomes a Scan: on XLA (a staging trace that `scans`), or in
    the look ahead of a loop that becomes one, at any depth (a while loop's body included: the
    batching analysis takes a Scan's results field by field, stage.batched_outputs)."""
    return any(getattr(t, "scans", False) for t in staging)


def _staging_id(staging):
    """The id of the staging under way: its innermost trace that is not an outer loop's look ahead
    (None's outside jit and vmap, where an eager loop's look ahead is the only one)."""
    return id(next((t for t in reversed(staging) if type(t) is not Lookahead), None))


def _grown_tuple(before, after):
    """Whether two flatten descriptions (trees.flatten_open) are of a tuple that got longer."""
    return (before is not None and after is not None and type(before[0]) is tuple and type(after[0]) is tuple
            and len(after[1]) > len(before[1]))
