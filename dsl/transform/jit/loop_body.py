"""A loop body staged once (dsl/transform/jit/rolling.py): `Body`, its program P from one state to the next,
compiled, with its pullback, its jvp and its batched form staged once too; `Hoisted`, a program
run once per iteration with what is the same on every iteration moved out; `Driver`, a body's
loop compiled whole."""

import functools

from ...backends.codegen import compile_loop, compile_program, compile_unchecked, run_code
from ...base.limits import NEVER
from ...core import stage as S
from ...core.ops.finite import finite
from ...core.primitives.batching import spread_where
from ...core.primitives.loop_iteration import pullback
from ...core.primitives.loops import (History, LoopGuardFailed, StagedDraws, split_tangents, stage_pullback,
                                      with_tangents)
from ...core.tape import ForwardTrace, USER_CODE, peek
from ...core.trees import zero_of
from ..vmap import replay_leaves
from .checkpoints import Checkpointed, run_checkpointed, wants_checkpoints
from .loop_walks import Walks
from .split import checks_can_wait, cotangents, hoisted, needed_only, split


def _runs_user_rules(step):
    """Whether a step runs the user's code: a custom rule, a host function, or a loop step (a
    loop inside the body) whose own body does."""
    op = step[1]
    if op == "Loop":
        return step[4]["body"].user_rules
    if op == "Scan":
        return step[4]["body"].origin.user_rules
    return op in USER_CODE


class Body:
    """A loop body staged once: its program P (state -> next state), compiled code, and its pullback Q.

    The inputs of P are the loop variable, then the state leaves (then, in a Scan's body, the
    numbers it draws: `drawn`); its outputs, the state leaves.
    `diff[j]` says whether leaf j takes a cotangent (a float or float tensor). Under reverse mode
    the forward loop runs P' and the reverse loop B, Q split in two (dsl/transform/jit/split.py), where Q
    splits; else the reverse loop runs Q, which computes each iteration's forward again."""

    __slots__ = ("forward", "name", "diff", "changed", "key", "where", "user_rules", "draws", "drawn", "ran",
                 "stopped", "inner_whiles", "_code",
                 "_back", "_back_code", "_split", "_jvp", "_batched", "_driver", "_walks", "__weakref__")

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
        self.user_rules = any(_runs_user_rules(step) for step in program.steps)
        self.draws = draws_keylessly(program)
        # a Scan's body: its keyless draws, each an input after the state, (draw, args, kw) in
        # the order the body makes them (rolling.Lookahead; scan_body.scan_loop draws them)
        self.drawn = ()
        self.ran = 0            # the iterations a while loop's last run made (Roller.roll_while reads it)
        self.stopped = None     # (the guard its last run stopped at, the program it is a step of)
        # the while loops written out in P (Rollers): one whose count differs on a later iteration
        # is rolled in P when jit stages again (loop_modes.retry)
        self.inner_whiles = ()
        self._back = self._back_code = None
        self._split = None      # (P' as Hoisted, B, {wanted: Hoisted B for them}), False where Q does
        #                         not split, None: not tried
        self._jvp = None        # the Body of P's jvp (jvp_body), False where it does not stage
        self._batched = {}      # (which leaves are batched, batch size) -> the Body of vmap(P)
        self._driver = None     # P's loop over items compiled whole (Driver), once a loop runs without a history
        self._walks = None      # its reverse walks under two reverse levels (loop_walks.Walks)

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

    def generator(self):
        """The interpreter's random generator where the body draws from it, else None."""
        return self.key.interp.rng.bit_generator if self.draws else None

    def rewinder(self, kept):
        """rewind(k), which sets the generator to its state as iteration k of the history `kept`
        began (History.draws, noted by Driver.run), so that the iteration run again draws what it
        drew; None where the body does not draw or the history noted no states."""
        states = getattr(kept, "draws", None)
        if not self.draws or not states or len(states) != len(kept):
            return None
        generator = self.generator()

        def rewind(k):
            generator.state = states[k]
        return rewind

    def walks(self):
        """The walks of this loop rolled under two reverse levels (dsl/transform/jit/loop_walks.py)."""
        if self._walks is None:
            self._walks = Walks(self)
        return self._walks

    def history(self, items, state):
        """A new history for a loop over `items` from `state`: kept at checkpoints where keeping
        every iteration's state would hold a large tensor many times (checkpoints.py)."""
        return Checkpointed(self) if wants_checkpoints(items, state, self.forward) else History(self)

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
                if type(kept) is Checkpointed and not self.draws:
                    return run_checkpointed(self, forward, items, state, fixed, kept)
                return forward.driver().run(forward, items, state, fixed, kept, kept.residuals, self)
            return self.driver().run(self, items, state, (), kept, None, self)
        except S.GuardFailed as failed:
            raise LoopGuardFailed(self, failed, parts[0].program if parts is not None else None) from None

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

    def _restaging(self):
        """(a trace to stage a form of P on, derived from P: its jvp, its batch; the staging list
        to replay P with): where P draws keylessly, each draw is an effect of that form too,
        performed on each of its runs (staging performs it once: the caller puts the generator
        back), not one iteration's numbers held as constants."""
        if self.draws:
            trace = StagedDraws(derived=True)
            return trace, [trace]
        return S.StageTrace(derived=True), None

    def jvp_body(self, item, state, tangents):
        """The Body of P's jvp, staged once from these values: (item, state..., tangents of the
        float leaves...) -> (next state..., next tangents...); None where it does not stage."""
        if self._jvp is None:
            self._jvp = False
            trace, staging = self._restaging()
            forward = ForwardTrace()       # the higher level
            args = [trace.box(peek(v), "Arg", (), (), None, None) for v in (item, *state, *tangents)]
            n = len(state)
            inputs = [args[0], *with_tangents(args[1:n + 1], self.diff, args[n + 1:], forward, "Tangent")]
            try:
                with S.put_back(self.generator()):
                    outs = S.run(self.forward, inputs, staging)
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
            trace, staging = self._restaging()      # a draw is the same for every example
            args = [trace.box(peek(v), "Arg", (), (), None, None) for v in (item, *state)]
            with S.put_back(self.generator()):
                values, reached = replay_leaves(self.forward, args, (False, *batched), staging=staging)
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
            with S.put_back(self.generator()):     # staging draws: the loop about to run draws those numbers
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
        with S.put_back(self.generator()):     # the iterations run again draw again: the program goes on from here
            return self._back_from(items, kept, cts, wanted, self.rewinder(kept))

    def _back_from(self, items, kept, cts, wanted, rewind):
        """Body.back's work; `rewind`: Body.rewinder(kept), by which each iteration run again
        starts from the generator's state it began with."""
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
                if rewind is not None:
                    rewind(-1)
                self._back = stage_pullback(self, items[-1], kept[-1], cts)
                if self._back is not None:
                    self._back_code = compile_program(self._back, "loop_pullback")
            program, code = self._back, self._back_code
        ct = list(cts)
        for k in range(len(items) - 1, -1, -1):
            if rewind is not None:
                rewind(k)
            if program is not None:
                try:
                    inputs = [*residuals[k], *ct, *fixed] if residuals is not None else [items[k], *kept[k], *ct]
                    ct = run_code(program, code, inputs)
                    continue
                except S.GuardFailed:
                    pass        # the pullback read a value (a rule's branch): this iteration, exactly
                if rewind is not None:
                    rewind(k)
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
        if fast:
            m = len(program.out_refs)
            self.fast = compile_unchecked(self.program, len(program.inputs) - m, m, name + "_loop")

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


def _stopped(body, owner, failed):
    """Keep where a while loop's run stopped (`owner` ran it: the body, or its forward part,
    whose steps number differently), for Roller.roll_while; kept as it is, since every compiled
    call's while loop stops this way and only a staging reads it."""
    body.stopped = (failed, None if owner is body else owner.program)


class Driver:
    """A body's loop compiled whole (codegen.compile_loop): one call for the loop instead of one
    per iteration (a third of a rolled loop's time went to the calls). An iteration the compiled
    loop stops at (a guard, a result it cannot vouch for) runs as run_code runs it, by the
    owner's code for one iteration (exactly, or raising what it raises), and the loop goes on."""

    __slots__ = ("program", "n", "name", "_loops", "draws", "draw_fns", "stopped")

    def __init__(self, program, carried, name):
        self.program = program      # inputs: the item, `carried` state leaves, fixed values
        self.n = carried
        self.name = name
        self._loops = {}            # (keeps a history, keeps extra outputs) -> compiled loop
        # the body draws from the interpreter's generator (a keyless draw): an iteration stopped
        # partway runs again as written from the generator's state as it began (_walk_draws)
        self.draws = draws_keylessly(program)
        # the draws as calls that can be made again (their arguments constants), or None: then
        # the loop runs one iteration per call, so that no iteration's draws need making again
        self.draw_fns = ([(step[4]["fn"], step[3]) for step in program.effects]
                         if all(r < 0 for step in program.effects for r in step[2]) else None)
        self.stopped = False    # whether the compiled loop has stopped at an iteration

    def _loop(self, kept, extra):
        """The compiled loop appending to `kept` and `extra` where they are not None."""
        key = (kept is not None, extra is not None)
        loop = self._loops.get(key)
        if loop is None:
            loop = self._loops[key] = compile_loop(self.program, None, self.n, self.name + "_loop", *key)
        return loop

    def _step(self, owner, item, state, fixed, kept, extra, drawn=None):
        """One iteration by the owner's code for one (Body or Hoisted): the state after it. Where
        the code cannot vouch for its results and the exact code runs the iteration again, that
        one draws what the first drew (`drawn`: the generator the body draws from, or None)."""
        values = [item, *state, *fixed]
        if not self.stopped and not self.program.effects:
            # the first stop is replayed, not compiled: most often a guard that no longer holds
            # (jit then stages again), which compiling the body (seconds, for one that holds a
            # derivative's loops written out) would only find again
            self.stopped = True
            out = S.output_leaves(self.program, values)
        else:
            rewind = None if drawn is None else functools.partial(setattr, drawn, "state", drawn.state)
            out = run_code(self.program, owner.code, values, rewind)
        if kept is not None:
            kept.append(state)
        if extra is not None:
            extra.append(out[self.n:])
        return out[:self.n]

    def run(self, owner, items, state, fixed, kept, extra, body):
        """The state after the body ran once per item (appending each iteration's starting state to
        `kept` and its outputs after the state to `extra`, where they are not None). Each iteration
        is a step of the run's limits, as the interpreter counts it: with a budget or a timeout, the
        compiled loop runs in pieces, each until the limits' next look, so that a loop of 10 ** 12
        iterations is stopped at its line like any other."""
        loop, limits, start, n = self._loop(kept, extra), body.key.interp.limits, 0, len(items)
        unlimited = limits.next_check == NEVER
        drawn = body.key.interp.rng.bit_generator if self.draws else None
        while True:
            end = n if unlimited else min(n, start + max(int(min(limits.next_check - limits.steps, n)), 1))
            if drawn is not None:
                before = drawn.state
                if self.draw_fns is None:
                    end = start + 1
            calls = None if drawn is None else self._draw_calls()
            done, state, failed = loop(items[start:end] if start or end < n else items, state, fixed, kept, extra)
            start += done
            limits.steps += done
            if drawn is not None:
                self._walk_draws(drawn, before, done, kept, failed is None,
                                 None if calls is None else self._draw_calls() - calls)
            if failed is not None:
                if isinstance(failed, S.GuardFailed) and not loop.inexact:
                    raise failed        # as run_code would raise it (the compiled loop checks what it checks)
                at = drawn.state if drawn is not None else None
                state = self._step(owner, items[start], state, fixed, kept, extra, drawn)
                if drawn is not None:
                    _drew(kept, at)
                start += 1
                limits.steps += 1
            if limits.steps >= limits.next_check:
                limits.check(body.key.span)
            if start >= n:
                return list(state)

    def run_while(self, owner, state, fixed, kept, extra, body):
        """A while loop's iterations (item k the k-th) until a guard fails: (how many ran, the state
        the failing one started from). Each is a step of the run's limits: the compiled loop runs
        at most until the limits' next look (Body.count_step)."""
        loop, limits, k = self._loop(kept, extra), body.key.interp.limits, 0
        drawn = body.key.interp.rng.bit_generator if self.draws else None
        while True:
            chunk = limits.next_check - limits.steps
            chunk = int(chunk) if chunk < 2 ** 62 else 2 ** 62
            if drawn is not None:
                before = drawn.state
                if self.draw_fns is None:
                    chunk = 1
            calls = None if drawn is None else self._draw_calls()
            done, state, failed = loop(range(k, k + max(chunk, 1)), state, fixed, kept, extra)
            k += done
            limits.steps += done
            if drawn is not None:
                self._walk_draws(drawn, before, done, kept, failed is None,
                                 None if calls is None else self._draw_calls() - calls)
            if failed is not None:
                if isinstance(failed, S.GuardFailed) and not loop.inexact:
                    _stopped(body, owner, failed)
                    return k, state     # the iteration that goes another way (run_code would raise it too)
                at = drawn.state if drawn is not None else None
                try:
                    state = self._step(owner, k, state, fixed, kept, extra, drawn)
                except S.GuardFailed as again:
                    if drawn is not None:
                        drawn.state = at    # the statement runs it again as written, and draws again
                    _stopped(body, owner, again)
                    return k, state
                if drawn is not None:
                    _drew(kept, at)
                k += 1
                limits.steps += 1
            if limits.steps >= limits.next_check:
                limits.check(body.key.span)

    def _draw_calls(self):
        """How many draws the body's keyless draws have made (None where they are not counted)."""
        return None if self.draw_fns is None else sum(draw.calls for draw, _ in self.draw_fns)

    def _walk_draws(self, generator, before, done, kept, finished, drew=None):
        """After the compiled loop ran `done` iterations from the generator state `before`, making
        `drew` draws: note each one's starting state in the history (`kept`, where kept) by
        drawing again what the body draws (its keyless draws, in order), which leaves the
        generator where the next iteration starts: where the loop stopped partway (not
        `finished`), that iteration runs again as written from there, and draws what it drew."""
        if kept is None and (finished or drew is not None and drew == done * len(self.draw_fns)):
            return      # nothing to note, and the generator is where the next iteration starts
        after = generator.state
        generator.state = before
        for k in range(done):
            if kept is not None:
                kept.draws.append(generator.state)
            if k < done - 1 or not finished:     # (draw_fns is None only where done <= 1)
                for draw, args in self.draw_fns:
                    draw(*args)
        if finished:
            generator.state = after


def _drew(kept, before):
    """Note the generator's state an iteration began from in the history being kept (History.draws)."""
    if kept is not None:
        kept.draws.append(before)


def draws_keylessly(program):
    """Whether a staged body draws from the interpreter's generator (a keyless draw: S.Draw)."""
    return any(type((step[4] or {}).get("fn")) is S.Draw for step in program.effects)
